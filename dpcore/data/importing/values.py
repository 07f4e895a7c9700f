"""Vectorised checks of cell values: present, whole non-negative counts, coordinates in range.

Each check records one notice per kind of problem and column, naming the first offending row and
how many others there are, and returns clean NumPy arrays. Callers run them all, then call
``report.stop_if_errors()`` so the user sees every problem at once.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpcore.data.importing.notices import Report, plural, quoted, rows_phrase, shorten

#: A count above this is certainly not a number of commuters (the world has ~8 billion people);
#: it usually means a code column was taken for the count.
MAX_COUNT = 10**10

_THOUSANDS = re.compile(r"^\d{1,3}([,. ]\d{3})+$")


def require_present(values: pd.Series, rows: np.ndarray, column: str, what: str,
                    report: Report) -> None:
    """Error ``missing_value`` on empty cells (what: e.g. "origin zone")."""
    empty = (values == "").to_numpy()
    if empty.any():
        report.error("missing_value",
                     f"The {what} is empty on {rows_phrase(rows[empty])}.",
                     row=rows[empty][0], column=column,
                     fix=f"Fill in the {what} on those rows, or delete the rows.")


def parse_counts(values: pd.Series, rows: np.ndarray, column: str | None, report: Report,
                 blank_means_zero: bool = False, cell_columns: np.ndarray | None = None,
                 decimal_comma: bool = False) -> np.ndarray:
    """Whole, non-negative numbers of people; "12", "12.0" and "1e3" are accepted as written.

    ``cell_columns`` names each value's column when the values come from several (a matrix).
    ``decimal_comma``: the file is not comma-separated (semicolons, tabs), as spreadsheets write
    it where the comma is the decimal mark, so “1,0” is read as 1 (reported); counts such as
    “2,000” are ambiguous there, by the rule of :func:`_thousands_like`.
    Returns int64 counts (0 where a value was rejected, so later checks can run on).
    """

    def where(mask):
        return {"row": rows[mask][0],
                "column": column if cell_columns is None else str(cell_columns[mask][0])}

    blank = (values == "").to_numpy()
    if blank.any():
        if blank_means_zero:
            report.info("blank_cells_zero",
                        f"{plural(int(blank.sum()), 'empty cell was', 'empty cells were')} read as "
                        f"0 commuters.",
                        fix="Nothing to do if empty means nobody.", **where(blank))
        else:
            require_present(values, rows, column, "count", report)
    numbers = parse_numbers(values.where(~blank, "0") if blank.any() else values)
    mark = "."
    if decimal_comma:
        comma = decimal_commas(values)
        if comma.any():
            mark = ","
            numbers[comma] = parse_numbers(values[comma].str.replace(",", ".", regex=False))
            report.info("decimal_comma",
                        f"Counts with a decimal comma were read as decimals (e.g. "
                        f"{_first(values, comma)} as {numbers[comma][0]:g}).",
                        fix="Nothing to do if the comma is the decimal mark in your file.",
                        **where(comma))
    bad = ~np.isfinite(numbers)
    if bad.any():
        examples = values.to_numpy()[bad]
        hint = (" It looks like it uses a thousands separator." if any(
            _THOUSANDS.match(str(v)) for v in examples[:20]) else "")
        report.error("count_not_numeric",
                     f"The count is not a number on {rows_phrase(rows[bad])} "
                     f"(found {quoted(pd.unique(examples))}).{hint}",
                     fix="Write counts as plain whole numbers such as 12, without thousands "
                         "separators, units or text.", **where(bad))
    numbers[bad] = 0
    ambiguous = _thousands_like(values, mark)
    if ambiguous.any():
        example = values.to_numpy()[ambiguous][0]
        whole, _, thousands = example.lstrip("+").partition(mark)
        decimal = float(f"{whole}.{thousands}")
        mark_name, other = (("point", "dot") if mark == "." else ("comma", "comma"))
        report.error("count_ambiguous",
                     f"The count “{shorten(example)}” on {rows_phrase(rows[ambiguous])} can be "
                     f"read two ways: as {decimal:g} (a decimal {mark_name}) or as "
                     f"{int(whole + thousands):,} (a {other} separating thousands"
                     + (", as in many European countries)." if mark == "." else ")."),
                     fix="Write counts as plain whole numbers without separators, e.g. "
                         f"{int(whole + thousands)} or {decimal:g}.", **where(ambiguous))
        numbers[ambiguous] = 0
    negative = numbers < 0
    if negative.any():
        report.error("count_negative",
                     f"The count is negative on {rows_phrase(rows[negative])} "
                     f"(e.g. {_first(values, negative)}).", **where(negative),
                     fix="A count is a number of people, so it must be 0 or more: correct it or "
                         "delete the row.")
    fractional = np.isfinite(numbers) & (numbers != np.floor(numbers))
    if fractional.any():
        report.error("count_fractional",
                     f"The count is not a whole number on {rows_phrase(rows[fractional])} "
                     f"(e.g. {_first(values, fractional)}).", **where(fractional),
                     fix="Counts are numbers of people: use whole numbers. If these are "
                         "weighted or modelled estimates, round them before uploading.")
    huge = numbers > MAX_COUNT
    if huge.any():
        report.error("count_too_large",
                     f"The count is implausibly large on {rows_phrase(rows[huge])} "
                     f"(e.g. {_first(values, huge)}).", **where(huge),
                     fix="Check that this column really holds numbers of people, not zone "
                         "codes; map the columns yourself if it does not.")
    numbers[negative | fractional | huge] = 0
    return numbers.astype(np.int64)


def decimal_commas(values: pd.Series) -> np.ndarray:
    """Which values are numbers written with a decimal comma (“1,0”, “-6,26”, “,5”)."""
    return values.str.fullmatch(r"[+-]?\d*,\d+").to_numpy(dtype=bool)


def _thousands_like(values: pd.Series, mark: str = ".") -> np.ndarray:
    """Counts such as “2.000” or “12.500” (``mark`` "."), or “2,000” where the comma is the
    decimal mark (``mark`` ","), ambiguous between a decimal mark and a thousands separator.

    The rule: one mark, one to three digits before it and exactly three after it, in a column
    where no count has the mark followed by some other number of digits (“2.5”, “3.0”,
    “1234.000” show that it is a decimal mark, so “2.000” then means 2).
    """
    marked = values.str.contains(mark, regex=False).to_numpy(dtype=bool)
    ambiguous = np.zeros(len(values), dtype=bool)
    if marked.any():
        text = values[marked]
        escaped = re.escape(mark)
        grouped = text.str.fullmatch(rf"\+?\d{{1,3}}{escaped}\d{{3}}").to_numpy(dtype=bool)
        decimal = text.str.fullmatch(rf"[+-]?\d*{escaped}\d*").to_numpy(dtype=bool) & ~grouped
        if not decimal.any():
            ambiguous[marked] = grouped
    return ambiguous


def parse_coordinates(values: pd.Series, rows: np.ndarray, column: str, kind: str,
                      report: Report) -> np.ndarray:
    """Latitudes (kind "lat", −90…90) or longitudes ("lon", −180…180) in WGS84 degrees.

    Empty cells give NaN (the zone has no position). A decimal comma (52,35) is accepted and
    reported.
    """
    blank = (values == "").to_numpy()
    numbers = parse_numbers(values.where(~blank) if blank.any() else values)
    failed = np.isnan(numbers) & ~blank
    if failed.any():
        comma = values[failed].str.fullmatch(r"-?\d+,\d+").to_numpy(dtype=bool)
        if comma.all():
            numbers[failed] = pd.to_numeric(values[failed].str.replace(",", ".", regex=False)
                                             ).to_numpy(dtype=float)
            report.info("decimal_comma",
                        f"Coordinates with a decimal comma were read as decimals "
                        f"(e.g. {_first(values, failed)}).", row=rows[failed][0], column=column)
        else:
            report.error("coordinate_not_numeric",
                         f"The {_NAMES[kind]} is not a number on {rows_phrase(rows[failed])} "
                         f"(e.g. {_first(values, failed)}).", row=rows[failed][0], column=column,
                         fix="Write coordinates as decimal degrees, e.g. 53.3498 and -6.2603; "
                             "not degrees-minutes-seconds.")
            numbers[failed] = np.nan
    limit = 90 if kind == "lat" else 180
    outside = np.abs(numbers) > limit
    if outside.any():
        report.error("coordinate_out_of_range",
                     f"The {_NAMES[kind]} is outside −{limit}…{limit} on "
                     f"{rows_phrase(rows[outside])} (e.g. {_first(values, outside)}).",
                     row=rows[outside][0], column=column,
                     fix="Use WGS84 decimal degrees (latitude −90…90, longitude −180…180). "
                         "Check that latitude and longitude are not swapped and that the "
                         "coordinates are not projected (metres).")
        numbers[outside] = np.nan
    return numbers


_NAMES = {"lat": "latitude", "lon": "longitude"}


def parse_numbers(values: pd.Series) -> np.ndarray:
    """Text to float64, NaN where not a number (or empty).

    Arrow's strict parser handles clean columns ten times faster than ``pd.to_numeric``, which
    is the fallback for anything it refuses (so "+4" or " 1e3" are still read as numbers).
    """
    try:
        parsed = values.astype("float64[pyarrow]").to_numpy(dtype=float, na_value=np.nan)
    except Exception:  # noqa: BLE001 — any refusal (or no pyarrow) means: use the lenient parser
        parsed = pd.to_numeric(values, errors="coerce")
    return np.array(parsed, dtype=float)


def _first(values: pd.Series, mask: np.ndarray) -> str:
    return f"“{shorten(values.to_numpy()[mask][0])}”"
