"""Files computed from the confidential table, for the publisher's eyes only: the audit record,
the side-by-side comparison of publishing methods, accuracy measured against the truth.

A publication folder holds the release and its manifest and nothing else (issue 29): anything
measured against the true table is a deterministic function of the confidential rows (a
comparison with seeded noise changed 18–20 of its 48 rows between tables one commuter apart, so an
adversary who knows every record but one matched it against each candidate for the last). So
such a file goes to a path the user names outside the publication folder (:func:`check_place`
refuses one inside it) and its first line says what it is (:data:`FIRST_LINE`), in the file
itself, where a person opening it will read it: a ``#`` comment line above a CSV
(``pandas.read_csv(path, skiprows=1)`` reads the rest; ``comment="#"`` too, unless a cell holds a
``#``), the first key of a JSON object, kept on the object's first line, an HTML comment and a
visible banner in a web page, and each CSV and web page of a zip marked so.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from pathlib import Path

import pandas as pd

from dpcore import export

#: What the first line of every such file says.
FIRST_LINE = ("NOT FOR PUBLICATION: computed from the confidential table (the true counts), "
              "for the publisher's own records; never put it beside a release")


#: The first line of such a CSV, as bytes (a ``#`` comment line).
CSV_LINE = f"# {FIRST_LINE}\r\n".encode()


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The frame as formula-safe CSV (:func:`dpcore.export.safe_csv`) under a
    ``# NOT FOR PUBLICATION …`` line."""
    return csv_marked(export.safe_csv(frame))


def csv_marked(data: bytes) -> bytes:
    """CSV bytes (already formula-safe) under a ``# NOT FOR PUBLICATION …`` line."""
    return CSV_LINE + data


def write_csv(frame: pd.DataFrame, path) -> Path:
    """The frame as formula-safe CSV at ``path`` under the ``# NOT FOR PUBLICATION …`` line,
    streamed (a release table over 9.8 M cells is never held as one string): the command line's
    tables measured against or showing the true counts."""
    path = Path(path)
    with path.open("wb") as handle:
        handle.write(CSV_LINE)
        export.write_safe_csv(frame, handle)
    return path


def html_text(page: str) -> str:
    """A web page (a figure, a map) under an HTML comment and with a visible red banner at the
    top of its body, both saying it is not for publication."""
    banner = (f"<p style=\"font:bold 16px sans-serif;color:#b00020\">"
              f"{html.escape(FIRST_LINE)}</p>")
    return f"<!-- {FIRST_LINE} -->\n" + page.replace("<body>", "<body>" + banner, 1)


def zip_marked(data: bytes) -> bytes:
    """A zip whose CSV files and web pages are each marked (:func:`csv_marked`,
    :func:`html_text`), with a ``NOT-FOR-PUBLICATION.txt`` first, for its other files."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(
            out, "w", zipfile.ZIP_DEFLATED) as target:
        target.writestr("NOT-FOR-PUBLICATION.txt", FIRST_LINE + "\n")
        for info in source.infolist():
            content = source.read(info)
            if info.filename.endswith(".csv"):
                content = csv_marked(content)
            elif info.filename.endswith(".html"):
                content = html_text(content.decode("utf-8")).encode("utf-8")
            target.writestr(info.filename, content)
    return out.getvalue()


def json_text(record: dict) -> str:
    """The record as indented JSON whose first line carries ``"private": FIRST_LINE``."""
    body = json.dumps({"private": FIRST_LINE, **record}, indent=2, ensure_ascii=False)
    return "{" + body[len("{\n  "):] + "\n"  # the object's first line holds "private"


def check_place(path, published_dir, what: str) -> Path:
    """``path`` resolved, or ValueError when it lies inside the publication folder."""
    path, published = Path(path).resolve(), Path(published_dir).resolve()
    if path == published or published in path.parents:
        raise ValueError(f"{what} must not go into the publication folder {published_dir}: it is "
                         "computed from the confidential table. Name a path outside it.")
    return path


def write(path, content: bytes | str, published_dir, what: str) -> Path:
    """Write ``content`` (made by :func:`csv_bytes` or :func:`json_text`) to ``path``, refusing
    a place inside the publication folder."""
    path = check_place(path, published_dir, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path
