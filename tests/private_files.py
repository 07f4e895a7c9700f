"""Reading the command line's private tables: each starts with the not-for-publication line
(:func:`dpcore.interfaces.confidential.write_csv`), checked here on every read."""

from pathlib import Path

import pandas as pd

from dpcore.interfaces import confidential


def read_private_csv(path, **options) -> pd.DataFrame:
    """The table at ``path`` after asserting its first line is the not-for-publication line."""
    with Path(path).open(encoding="utf-8") as handle:
        assert handle.readline().rstrip("\r\n") == f"# {confidential.FIRST_LINE}"
    return pd.read_csv(path, skiprows=1, **options)
