"""Press a download button in an AppTest and get its bytes.

AppTest does not serve files: each run makes a fresh ``MediaFileManager`` behind a mock runtime.
:class:`Downloads` records those managers (monkeypatching the class AppTest builds) so that a test
can run a button's deferred callable, or read its stored file, exactly as a browser's click would.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import app_test

from dpcore import confidential

#: The first line of a CSV computed from the confidential table (confidential.csv_marked).
PRIVATE_CSV_LINE = confidential.CSV_LINE


def private_csv(content: bytes) -> bytes:
    """The CSV under a download's "NOT FOR PUBLICATION" first line (asserted to be there)."""
    assert content.startswith(PRIVATE_CSV_LINE), content[:120]
    return content[len(PRIVATE_CSV_LINE):]


def read_private_csv(path, **options) -> pd.DataFrame:
    """A table the command line wrote with the true counts in it (release, sweep, heavy-hitters,
    plan): its first line asserted to be the not-for-publication line, the rest read."""
    return pd.read_csv(io.BytesIO(private_csv(Path(path).read_bytes())), **options)


class Downloads:
    def __init__(self, monkeypatch):
        self.managers: list[MediaFileManager] = []
        recorder = self

        class Recording(MediaFileManager):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                recorder.managers.append(self)

        monkeypatch.setattr(app_test, "MediaFileManager", Recording)

    def data(self, button) -> bytes:
        """The bytes the download button of the latest run gives."""
        manager = self.managers[-1]
        url = (manager.execute_deferred(button.proto.deferred_file_id)
               if button.proto.deferred_file_id else button.proto.url)
        return manager._storage.get_file(url.rsplit("/", 1)[1]).content

    def by_key(self, at, key: str) -> bytes:
        (button,) = [b for b in at.get("download_button") if b.proto.id.endswith(f"-{key}")]
        return self.data(button)
