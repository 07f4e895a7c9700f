"""US Census LEHD LODES origin–destination files (``w_geocode, h_geocode, S000, SA01, …``).

Home block (``h_geocode``) is the origin, work block (``w_geocode``) the destination, ``S000`` the
count of jobs. Geocodes are census-block GEOIDs: state (2 digits) + county (3) + tract (6) +
block (4). Rolling up is taking a prefix: block 15 → tract 11 → county 5 digits; each level's
parent is the next prefix (block → tract → county → state).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.importing.building import (
    build_matrix,
    check_domain,
    pair_keys,
    warn_duplicates,
    with_parents,
    zone_set,
)
from dpcore.data.importing.names import visible
from dpcore.data.importing.notices import Report, plural, quoted, rows_phrase
from dpcore.data.importing.reading import Table
from dpcore.data.importing.values import parse_counts, require_present
from dpcore.data.od import DENSE_CELL_LIMIT, ZONE_LIMIT, ODMatrix, ZoneSet

#: GEOID prefix length of each level, finest first.
LEVELS = {"block": 15, "tract": 11, "county": 5}
_PARENT_DIGITS = {"block": 11, "tract": 5, "county": 2}
REQUIRED = ("w_geocode", "h_geocode", "S000")


def looks_like_lodes(header: list[str]) -> bool:
    return {"w_geocode", "h_geocode"} <= {h.lower() for h in header}


def import_lodes(table: Table, report: Report, level: str | None = None
                 ) -> tuple[ODMatrix, str]:
    """Read a LODES OD file at ``level`` (default: the finest level whose domain fits)."""
    by_name = {h.lower(): h for h in table.header}
    missing = [c for c in REQUIRED if c.lower() not in by_name]
    if missing:
        report.fail("missing_columns",
                    f"A LODES origin–destination file needs the columns {quoted(REQUIRED)}; "
                    f"{quoted(missing)} {'is' if len(missing) == 1 else 'are'} missing.", row=1,
                    fix="Upload the “od” file of LODES with its original header (not the RAC or "
                        "WAC file); for other data choose the long format.")
    work, home, jobs = (by_name[c.lower()] for c in REQUIRED)
    ignored = [h for h in table.header if h not in (work, home, jobs)]
    if ignored:
        report.info("columns_used", f"Counts are taken from “{jobs}” (all jobs); the other "
                    f"columns were ignored: {quoted(ignored)}.", row=1)
    frame, rows = table.take([home, work, jobs], report)
    h = _geocodes(frame[home], rows, home, report)
    w = _geocodes(frame[work], rows, work, report)
    counts = parse_counts(frame[jobs], rows, jobs, report)
    report.stop_if_errors()
    warn_duplicates(*pair_keys(h, w), rows, report, home)

    sizes = {name: (h.str[:digits].nunique(), w.str[:digits].nunique())
             for name, digits in LEVELS.items()}
    if level is None:
        fits = ((lambda o, d: max(o, d) <= ZONE_LIMIT) if report.sparse
                else (lambda o, d: o * d <= DENSE_CELL_LIMIT))
        level = next((name for name, (o, d) in sizes.items() if fits(o, d)), "county")
        report.info("level_chosen",
                    f"Imported at {level} level ({sizes[level][0]:,} × {sizes[level][1]:,} "
                    f"zones), the finest level whose domain fits in memory.",
                    fix="Choose a coarser level for a smaller domain and faster mechanisms.")
    check_domain(*sizes[level], report, fix=_coarser_levels(level, sizes))
    digits = LEVELS[level]
    o_codes, origins = _level_zones(h.str[:digits], rows, home, level, report)
    d_codes, destinations = _level_zones(w.str[:digits], rows, work, level, report)
    matrix = build_matrix(table.file, f"Uploaded file {table.file} (LODES, {level} level).",
                          origins, destinations, o_codes, d_codes, counts, rows, report,
                          duplicates_expected=True)
    if level != "block":
        report.info("rolled_up", f"{plural(len(frame), 'block-to-block row')} "
                    f"{'was' if len(frame) == 1 else 'were'} rolled up into "
                    f"{plural(matrix.nonzero, f'{level}-to-{level} pair')}.")
    return matrix, level


def _geocodes(values: pd.Series, rows: np.ndarray, column: str, report: Report) -> pd.Series:
    """15-digit block GEOIDs as text; 14 digits means a lost leading zero, restored (reported)."""
    require_present(values, rows, column, "census block code", report)
    present = (values != "").to_numpy()
    digits = values.str.fullmatch(r"[0-9]+").to_numpy(dtype=bool)  # ASCII only, unlike \d
    bad = present & ~digits
    if bad.any():
        example = values.to_numpy()[bad][0]
        spreadsheet = "e+" in example.lower() or "." in example
        foreign = any(ch.isdigit() and not ch.isascii() for ch in example[:100])
        report.error("bad_geocode",
                     f"The census block code is not a string of digits 0–9 on "
                     f"{rows_phrase(rows[bad])} (e.g. “{visible(example[:40])}”)."
                     + (" A spreadsheet has turned the codes into numbers." if spreadsheet
                        else "")
                     + (" It has digits of another script; GEOIDs use the digits 0–9 only."
                        if foreign else ""), row=rows[bad][0], column=column,
                     fix="Use the file as downloaded from LODES, or import the column as text "
                         "so every code keeps its 15 digits.")
    length = values.str.len().to_numpy()
    short = digits & (length == 14)
    if short.any():
        values = values.where(~short, "0" + values)
        report.warning("leading_zeros_restored",
                       f"{plural(int(short.sum()), 'block code', 'block codes')} had 14 digits; a "
                       f"leading zero (lost "
                       f"by a spreadsheet) was put back (first on row {rows[short][0]}).",
                       row=rows[short][0], column=column,
                       fix="Nothing to do if the state code starts with 0 (e.g. 06 California).")
    wrong = digits & (length != 15) & ~short
    if wrong.any():
        report.error("bad_geocode",
                     f"Census block codes have 15 digits, but {rows_phrase(rows[wrong])} "
                     f"{'has' if wrong.sum() == 1 else 'have'} codes of another length "
                     f"(e.g. “{values.to_numpy()[wrong][0]}”).", row=rows[wrong][0],
                     column=column, fix="Use the file as downloaded from LODES.")
    return values


def _level_zones(codes_at_level: pd.Series, rows, column, level, report):
    codes, zones = zone_set(codes_at_level, rows, column, report)
    parent = np.array([zone_id[:_PARENT_DIGITS[level]] for zone_id in zones.ids], dtype=object)
    return codes, with_parents(zones, parent, ZoneSet.from_ids(np.unique(parent)))


def _coarser_levels(level: str, sizes: dict) -> str:
    names = list(LEVELS)
    options = [f"at {name} level it would be {o:,} × {d:,} = {o * d:,} cells"
               for name, (o, d) in list(sizes.items())[names.index(level) + 1:]]
    if not options:
        return "Keep only the area you need (e.g. one state or metro area)."
    return "Choose a coarser level: " + "; ".join(options) + "."
