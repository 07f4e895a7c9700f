"""What the importer tells the user: notices, the failure exception and the per-file collector.

Every message names the file, the row as a spreadsheet shows it (the header is row 1, so the first
data row is row 2), the column, what is wrong and how to fix it. The importer never corrects data
silently: each automatic correction is an ``info`` or ``warning`` notice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NoReturn

import numpy as np

from dpcore.data.od import MEMORY_BUDGET_BYTES

NoticeLevel = Literal["error", "warning", "info"]
_LEVEL_WORD = {"error": "Error", "warning": "Warning", "info": "Note"}

#: How many example rows or values a message lists before saying "and N more".
EXAMPLES_SHOWN = 5


#: Every code an import can stop with (a notice of level "error"), and what it means. Whatever
#: bytes are uploaded, the import either succeeds or fails with codes from this list (the
#: property-based tests in tests/test_import_fuzz.py check it).
PROBLEMS = {
    "file_too_large": "over the upload limit, compressed or decompressed",
    "empty_file": "no bytes, or no header and no data",
    "not_text": "binary data: a known binary format, a zero byte, or many control codes",
    "bad_gzip": "looks gzip-compressed but cannot be decompressed",
    "bad_encoding": "announces UTF-8/UTF-16 by its byte-order mark but is not valid in it",
    "unsupported_encoding": "UTF-32 text",
    "unsupported_separator": "Excel's “sep=” line names an unsupported separator",
    "line_too_long": "a value longer than the CSV field limit in the first rows",
    "too_many_columns": "more columns than the limit",
    "too_much_memory": "its header and line count say the import would exceed the memory budget",
    "one_column": "the header has a single column",
    "too_many_fields": "a row has more values than the header",
    "unclosed_quote": "a double quote is never closed",
    "malformed_csv": "the CSV parser refused the file for another reason",
    "no_data_rows": "a header but no data",
    "unknown_format": "the format asked for does not exist",
    "bad_level": "the level asked for is not a level of the format",
    "bad_column_mapping": "the user's column mapping names unknown roles or columns",
    "duplicate_column_names": "a column used by the import is named twice",
    "ambiguous_columns": "several columns could play a required role",
    "unmapped_columns": "a required role was not recognised",
    "missing_columns": "a POWSCAR or LODES column is missing",
    "missing_value": "an empty zone, count or coordinate",
    "name_too_long": "a zone name longer than the limit",
    "count_not_numeric": "a count that is not a number",
    "count_ambiguous": "a count such as “2.000”: decimal point or thousands separator",
    "count_negative": "a negative count",
    "count_fractional": "a count that is not whole",
    "count_too_large": "a count too large to be people (a code column?)",
    "coordinate_not_numeric": "a latitude or longitude that is not a number",
    "coordinate_out_of_range": "a latitude or longitude outside its range",
    "coordinates_conflict": "one zone at two positions",
    "total_row": "a zone named like a total",
    "inconsistent_zone": "a POWSCAR ED in two counties",
    "bad_geocode": "a LODES code that is not 15 ASCII digits",
    "domain_too_large": "more origin × destination cells than the limit",
    "too_many_zones": "sparse import: more zones per side than the sparse limit",
    "too_many_flows": "sparse import: more non-zero cells than the sparse limit",
    "no_commuters": "every count is 0",
    "duplicate_zone": "a zone listed twice in the zones file",
    "zones_unknown": "none of the zones file's zones is in the data",
    "zones_nothing_to_add": "the zones file has nothing but zone ids",
}

#: The code of a failure the importer did not anticipate: a bug, never expected.
UNEXPECTED = "unexpected_error"


@dataclass(frozen=True)
class Notice:
    """One message about an uploaded file.

    Parameters
    ----------
    level : "error" | "warning" | "info"
        ``error`` stops the import; ``warning`` is an automatic correction the user should check
        (e.g. duplicate rows summed); ``info`` reports a harmless correction or choice (BOM
        stripped, encoding detected, zero rows dropped).
    code : str
        Stable machine-readable identifier (e.g. ``"count_negative"``), for tests and the UI.
    message : str
        What is wrong, in plain words, with the offending value where there is one.
    file : str
        The uploaded file's name.
    row : int or None
        Row number as a spreadsheet shows it: 1-based, the header is row 1 (equal to the line
        number in a text editor). The first offending row when several are.
    column : str or None
        The column's name as written in the file's header.
    fix : str
        How to correct the file (or that nothing needs doing).
    """

    level: NoticeLevel
    code: str
    message: str
    file: str
    row: int | None = None
    column: str | None = None
    fix: str = ""

    @property
    def location(self) -> str:
        """"flows.csv, row 5 (header = row 1), column “count”", as much as is known."""
        where = self.file
        if self.row is not None:
            where += f", row {self.row} (header = row 1)"
        if self.column is not None:
            where += f", column “{self.column}”"
        return where

    def __str__(self) -> str:
        text = f"{_LEVEL_WORD[self.level]} in {self.location}: {self.message}"
        return f"{text} How to fix: {self.fix}" if self.fix else text


class ImportFailed(Exception):
    """The file cannot be imported; ``notices`` says why (errors) and what was noticed before.

    ``columns`` is the file's header when the columns' roles could not be recognised
    (code ``"unmapped_columns"`` or ``"ambiguous_columns"``), so the UI can let the user map them
    and call :func:`dpcore.data.importers.import_od` again with ``columns=``; ``suggested`` holds the
    roles that were recognised, to pre-fill that mapping.
    """

    def __init__(self, notices: list[Notice], columns: list[str] | None = None,
                 suggested: dict[str, str] | None = None):
        self.notices = list(notices)
        self.columns = columns
        self.suggested = dict(suggested or {})
        super().__init__("\n".join(str(n) for n in self.errors) or "import failed")

    @property
    def errors(self) -> list[Notice]:
        return [n for n in self.notices if n.level == "error"]

    @property
    def code(self) -> str:
        """Code of the first error."""
        return self.errors[0].code if self.errors else "import_failed"


@dataclass
class Report:
    """Collects the notices about one file; several files of one import share one list."""

    file: str
    notices: list[Notice] = field(default_factory=list)
    #: Whether this import may produce a domain beyond the dense limit (limits then apply to
    #: zones and non-zero cells: the sparse path); None: only when the dense one cannot hold it
    #: (an automatic level is then chosen for the dense limit).
    sparse: bool | None = False
    #: Memory the import may take (:func:`dpcore.data.importing.reading.parse_memory`).
    memory_budget: int = MEMORY_BUDGET_BYTES

    def for_file(self, file: str) -> Report:
        """A collector for another file (e.g. the zones file) writing to the same list."""
        return Report(file, self.notices, self.sparse, self.memory_budget)

    def add(self, level: NoticeLevel, code: str, message: str, *, row=None, column=None,
            fix: str = "") -> None:
        self.notices.append(Notice(level, code, message, self.file,
                                   None if row is None else int(row), column, fix))

    def error(self, code: str, message: str, **where) -> None:
        self.add("error", code, message, **where)

    def warning(self, code: str, message: str, **where) -> None:
        self.add("warning", code, message, **where)

    def info(self, code: str, message: str, **where) -> None:
        self.add("info", code, message, **where)

    def fail(self, code: str, message: str, *, columns=None, suggested=None, **where) -> NoReturn:
        """Record an error and stop the import now."""
        self.error(code, message, **where)
        raise ImportFailed(self.notices, columns=columns, suggested=suggested)

    @property
    def has_errors(self) -> bool:
        return any(n.level == "error" for n in self.notices)

    def stop_if_errors(self) -> None:
        """Raise once with every error found so far, so the user can fix them all in one go."""
        if self.has_errors:
            raise ImportFailed(self.notices)


def list_some(items, total: int | None = None, limit: int = EXAMPLES_SHOWN) -> str:
    """"5, 9 and 12" or "5, 9, 12, 18, 20 and 37 more": a short list for a message."""
    items = [str(i) for i in items]
    total = len(items) if total is None else total
    shown = items[:limit]
    if total > len(shown):
        return f"{', '.join(shown)} and {total - len(shown):,} more"
    if len(shown) == 1:
        return shown[0]
    return f"{', '.join(shown[:-1])} and {shown[-1]}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """"1 zone", "2 zones", "1,204 rows"."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def rows_phrase(rows: np.ndarray) -> str:
    """"row 5" or "rows 5, 9, 12, 18, 20 and 37 more" for an array of spreadsheet row numbers."""
    rows = np.asarray(rows)
    prefix = "row " if len(rows) == 1 else f"{plural(len(rows), 'row')}: "
    return prefix + list_some(rows[:EXAMPLES_SHOWN], len(rows))


#: Longest value quoted in a message; longer ones are cut with "…".
QUOTE_CHARS = 60


def quoted(values, total: int | None = None) -> str:
    """Values in quotes for a message, e.g. “Cork”, “cork” (long values cut short)."""
    values = list(values)
    return list_some([f"“{shorten(v)}”" for v in values[:EXAMPLES_SHOWN]],
                     len(values) if total is None else total)


def shorten(value) -> str:
    """A value as text, at most :data:`QUOTE_CHARS` characters (cut with "…")."""
    text = str(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 1] + "…"
