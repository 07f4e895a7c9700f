"""Import commuting data from uploaded files, with specific messages instead of tracebacks.

Public interface (used by the Data page and ``python -m dpcore datasets --file``):

- :func:`import_od` reads one file (and optionally a zones file) into an
  :class:`~dpcore.data.od.ODMatrix`, returning an :class:`ImportResult` whose ``notices`` report every
  automatic correction, or raising :class:`ImportFailed` whose ``notices`` say what is wrong, where
  (file, spreadsheet row with the header as row 1, column) and how to fix it.
- :data:`FORMATS`, :data:`LEVELS`, :data:`OD_ROLES` describe the choices the UI offers;
  :func:`describe_formats` is the help text with an example of each format.
- :data:`MAX_UPLOAD_BYTES` is the size limit (100 MB); the domain limit is
  :data:`dpcore.data.od.DENSE_CELL_LIMIT`, or with ``sparse=True`` (for the sparse release)
  :data:`dpcore.data.od.ZONE_LIMIT` zones per side and :data:`dpcore.data.od.NONZERO_LIMIT` non-zero cells;
  the memory limit (estimated from the header and line count before parsing) is
  :data:`dpcore.data.od.MEMORY_BUDGET_BYTES`, the app's per-session budget.

The work is done in :mod:`dpcore.data.importing` (one module per format and per concern).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.importing.columns import OD_ROLES, ZONE_ROLES, od_role, recognise
from dpcore.data.importing.formats import EXAMPLES, FORMATS, LEVELS, describe_formats
from dpcore.data.importing.lodes import import_lodes, looks_like_lodes
from dpcore.data.importing.long import import_long
from dpcore.data.importing.matrix import import_matrix
from dpcore.data.importing.notices import (
    UNEXPECTED,
    ImportFailed,
    Notice,
    Report,
    quoted,
)
from dpcore.data.importing.powscar import import_powscar, looks_like_powscar
from dpcore.data.importing.reading import MAX_UPLOAD_BYTES, Table, read_table
from dpcore.data.importing.values import decimal_commas, parse_numbers
from dpcore.data.importing.zones import apply_zones
from dpcore.data.od import MEMORY_BUDGET_BYTES, ODMatrix

__all__ = ["EXAMPLES", "FORMATS", "LEVELS", "MAX_UPLOAD_BYTES", "OD_ROLES", "ZONE_ROLES",
           "ImportFailed", "ImportResult", "Notice", "describe_formats", "import_dense_or_sparse",
           "import_od"]


@dataclass
class ImportResult:
    """A successful import: the matrix, everything noticed on the way, and how it was read.

    ``format`` is the format actually used (never "auto"); ``level`` the level for POWSCAR and
    LODES (else None); ``columns`` the role → column mapping for long and persons files.
    """

    matrix: ODMatrix
    notices: list[Notice]
    format: str
    level: str | None = None
    columns: dict[str, str] | None = None

    @property
    def warnings(self) -> list[Notice]:
        return [n for n in self.notices if n.level == "warning"]


def import_od(data: bytes, filename: str, *, format: str = "auto", level: str | None = None,
              columns: dict[str, str] | None = None,
              zones: tuple[bytes, str] | None = None, sparse: bool | None = False,
              memory_budget: int = MEMORY_BUDGET_BYTES) -> ImportResult:
    """Read an uploaded origin–destination file.

    Parameters
    ----------
    data, filename : the file's bytes and its name (used in messages and as the matrix name).
    format : a key of :data:`FORMATS`; "auto" detects it from the header.
    level : for "powscar" "ed" or "county"; for "lodes" "block", "tract" or "county". None picks
        the finest level whose domain fits in memory (reported).
    columns : role → column name (roles in :data:`OD_ROLES`) for long and persons files, e.g.
        after an ``ImportFailed`` with code "unmapped_columns"; unmapped roles are recognised.
    zones : optional (bytes, filename) of a zones file (zone, lat, lon[, parent][, label]).
    sparse : allow domains beyond :data:`~dpcore.data.od.DENSE_CELL_LIMIT` cells, for the sparse
        release (:mod:`dpcore.mechanisms.sparse_release`); the limits are then
        :data:`~dpcore.data.od.ZONE_LIMIT` zones per side and :data:`~dpcore.data.od.NONZERO_LIMIT`
        non-zero cells. None: the dense import when the domain fits, else the sparse one, in one
        pass (:func:`import_dense_or_sparse`).
    memory_budget : bytes the import may hold; a file whose header and line count say it would
        take more is refused before it is parsed (code "too_much_memory").

    Raises
    ------
    ImportFailed
        With every error found, never another exception: unexpected failures are wrapped.
    """
    report = Report(filename, sparse=sparse, memory_budget=memory_budget)
    try:
        return _import(data, filename, format, level, columns, zones, report)
    except ImportFailed:
        raise
    except Exception as err:  # noqa: BLE001 — the user must get a message, not a traceback
        report.error(UNEXPECTED,
                     f"The file could not be read because of an unexpected problem "
                     f"({type(err).__name__}: {str(err)[:300]}).",
                     fix="Check that it is a CSV file in one of the accepted formats. If it is, "
                         "please report this message together with the file.")
        raise ImportFailed(report.notices) from err


def import_dense_or_sparse(data: bytes, filename: str, **options) -> ImportResult:
    """What the Data page and the command line import, in one pass over the file: the dense
    import when the domain fits; a domain beyond the dense limit (e.g. a whole state's LODES
    tracts, a national tract file) for the sparse release, under its limits (zones per side,
    non-zero cells). An automatic level is the finest that fits densely. ``options`` as
    :func:`import_od` (without ``sparse``)."""
    return import_od(data, filename, sparse=None, **options)


def _import(data, filename, format, level, columns, zones, report: Report) -> ImportResult:
    if format not in FORMATS:
        report.fail("unknown_format", f"Unknown format “{format}”; the formats are "
                    f"{quoted(FORMATS, len(FORMATS))}.", fix="Choose one of the listed formats.")
    if format in LEVELS and level is not None and level not in LEVELS[format]:
        _fail_level(format, level, report)
    table = read_table(data, filename, report)
    if format == "auto":
        format = _detect_format(table, columns, report)
    if level is not None and format not in LEVELS:
        report.info("level_ignored", f"Levels apply to POWSCAR and LODES files only, so "
                    f"level “{level}” was ignored.")
        level = None
    if level is not None and level not in LEVELS[format]:
        _fail_level(format, level, report)
    if columns and format not in ("long", "persons"):
        report.info("columns_ignored", "The column mapping applies to the long and "
                    "one-row-per-person formats only; it was not used.")
    mapping = None
    if format in ("long", "persons"):
        matrix, mapping = import_long(table, report, columns, persons=format == "persons")
    elif format == "matrix":
        matrix = import_matrix(table, report)
    elif format == "powscar":
        matrix, level = import_powscar(table, report, level)
    else:
        matrix, level = import_lodes(table, report, level)
    if zones is not None:
        matrix = apply_zones(matrix, zones[0], zones[1], report)
    return ImportResult(matrix, report.notices, format, level, mapping)


def _fail_level(format, level, report):
    report.fail("bad_level", f"“{level}” is not a level of the {format} format; its levels are "
                f"{quoted(LEVELS[format])}.", fix="Choose one of the listed levels.")


def _detect_format(table: Table, columns: dict[str, str] | None, report: Report) -> str:
    """Guess the format from the header (and a sample of values); the guess is reported."""
    header = table.header
    if not columns and looks_like_powscar(header):
        format = "powscar"
    elif not columns and looks_like_lodes(header):
        format = "lodes"
    else:
        found, ambiguous = recognise(header, od_role)
        roles = set(found) | set(ambiguous) | set(columns or {})
        claimed = set((columns or {}).values()) | set(found.values())
        claimed |= {name for names in ambiguous.values() for name in names}
        if {"origin", "destination"} <= roles:
            unclaimed_counts = _numeric(table, [name for name in header if name not in claimed],
                                        whole=True).any()
            format = "long" if "count" in roles or unclaimed_counts else "persons"
        elif _looks_like_matrix(table):
            format = "matrix"
        else:
            format = "long"  # fails with "unmapped_columns", which lets the user map them
    report.info("format_detected", f"Read as: {FORMATS[format]}.",
                fix="If that is wrong, choose the format yourself.")
    return format


def _looks_like_matrix(table: Table) -> bool:
    """Numbers under every header name but the first, and those names are zones: they recur
    among the first column's values, or there are many of them (a long file with unrecognised
    names has only a few columns, so it is not mistaken for a matrix)."""
    header = table.header
    if len(header) < 3 or {od_role(name) for name in header[1:]} - {None}:
        return False
    if not _numeric(table, header[1:], whole=False).all():
        return False
    origins = set(table.data[0].str.strip().iloc[:5000])
    return bool(origins & set(header[1:])) or len(header) > 5


def _numeric(table: Table, names: list[str], whole: bool, sample: int = 500) -> np.ndarray:
    """Per named column, whether its first values are all numbers (whole ones if asked), blanks
    aside; one parse of the whole sample, so wide files cost no more per cell than narrow ones."""
    if not names:
        return np.zeros(0, dtype=bool)
    sample = max(20, min(sample, 50_000 // len(names)))  # fewer rows of wide files
    positions = [table.position(name) for name in names]
    text = pd.Series(table.data.iloc[:sample, positions].to_numpy(dtype=object).ravel()).str.strip()
    if table.delimiter != ",":   # “1,0” is a number where the comma is the decimal mark
        comma = decimal_commas(text)
        text = text.where(~comma, text.str.replace(",", ".", regex=False))
    numbers = parse_numbers(text).reshape(-1, len(names))
    blank = (text == "").to_numpy().reshape(-1, len(names))
    good = np.isfinite(numbers) & ((not whole) | (numbers == np.floor(numbers)))
    return (good | blank).all(axis=0) & ~blank.all(axis=0)
