"""From validated columns to an :class:`~dpcore.data.od.ODMatrix`: zone sets, duplicates, domain size."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpcore.data.importing.names import clean_names
from dpcore.data.importing.notices import Report, plural, quoted, rows_phrase
from dpcore.data.od import (
    ARROW,
    DENSE_CELL_LIMIT,
    NONZERO_LIMIT,
    ZONE_LIMIT,
    ODMatrix,
    ZoneSet,
    text_array,
)

_TOTAL = re.compile(r"^(grand\s*)?(totals?|sum|all( zones)?)$", re.IGNORECASE)


def zone_set(ids: pd.Series, rows: np.ndarray, column: str, report: Report, *,
             labels: pd.Series | None = None, lat: np.ndarray | None = None,
             lon: np.ndarray | None = None, label_column: str | None = None,
             coordinate_columns: tuple[str, str] | None = None, sort: bool = True
             ) -> tuple[np.ndarray, ZoneSet]:
    """The zones named in one column (sorted by id, or in order of appearance) and each row's
    position among them.

    Labels and coordinates, when given per row, must agree between rows naming the same zone.
    Ids and labels are respelled in one standard form and their length is checked
    (:func:`~dpcore.data.importing.names.clean_names`).
    """
    ids = clean_names(ids, rows, column, report)
    if labels is not None:
        labels = clean_names(labels, rows, label_column, report)
    codes, uniques = pd.factorize(ids, sort=sort)
    uniques = text_array(uniques)
    _check_zone_names(uniques, codes, rows, column, report)
    zone_labels = uniques
    if labels is not None:
        zone_labels = _per_zone(labels, codes, uniques, rows, label_column, report)
    zone_lat = zone_lon = np.full(len(uniques), np.nan)
    if lat is not None and lon is not None:
        zone_lat, zone_lon = _zone_coordinates(lat, lon, codes, uniques, rows,
                                               coordinate_columns, report)
    return codes, ZoneSet(ids=uniques, labels=zone_labels, lat=zone_lat, lon=zone_lon)


def build_matrix(name: str, description: str, origins: ZoneSet, destinations: ZoneSet,
                 o_codes: np.ndarray, d_codes: np.ndarray, counts: np.ndarray, rows: np.ndarray,
                 report: Report, *, duplicates_expected: bool = False,
                 origin_column: str | None = None) -> ODMatrix:
    """Sum repeated cells (with a warning unless expected), drop zero counts (reported), build."""
    report.stop_if_errors()
    check_domain(len(origins), len(destinations), report)
    flat = o_codes.astype(np.int64) * len(destinations) + d_codes
    if not duplicates_expected:
        warn_duplicates(flat, lambda cell: (f"{origins.labels[cell // len(destinations)]}{ARROW}"
                                            f"{destinations.labels[cell % len(destinations)]}"),
                        rows, report, origin_column)
    zero = counts == 0
    if zero.any():
        report.info("zero_counts_dropped",
                    f"{plural(int(zero.sum()), 'row has', 'rows have')} a count of 0 "
                    f"({rows_phrase(rows[zero])}); they add nobody (every pair of zones is in "
                    f"the domain anyway), so they are not stored.", row=rows[zero][0])
    if counts.sum() == 0:
        report.fail("no_commuters", "Every count is 0, so there is nobody to protect or study.",
                    fix="Check that the count column is the right one.")
    matrix = ODMatrix.from_pairs(name, origins, destinations, o_codes, d_codes, counts,
                                 description=description)
    check_nonzero(matrix.nonzero, report)
    return matrix


def warn_duplicates(keys: np.ndarray, describe, rows: np.ndarray, report: Report,
                    column: str | None) -> None:
    """Warning ``duplicate_rows`` when the same origin–destination key is on several rows.

    ``describe(key)`` gives the pair's "Origin → Destination" text for the message.
    """
    repeated = pd.Series(keys).duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    first = keys[repeated][0]
    example_rows = rows[keys == first]
    n_pairs = pd.Series(keys[repeated]).nunique()
    report.warning("duplicate_rows",
                   f"{plural(n_pairs, 'origin–destination pair')} "
                   f"{'appears' if n_pairs == 1 else 'appear'} on more than one row "
                   f"({plural(int(repeated.sum()), 'row')}); their counts were added up. For "
                   f"example “{describe(first)}” is on {rows_phrase(example_rows)}.",
                   row=example_rows[0], column=column,
                   fix="Nothing to do if the rows are parts of one flow (e.g. by mode or age). "
                       "If they are accidental copies, delete the extra rows and upload again.")


def pair_keys(a: pd.Series, b: pd.Series):
    """An integer per distinct (a, b) pair of row values, and a function naming a pair "a → b"."""
    a_codes, a_uniques = pd.factorize(a)
    b_codes, b_uniques = pd.factorize(b)
    n_b = max(len(b_uniques), 1)

    def describe(key):
        return f"{a_uniques[key // n_b]}{ARROW}{b_uniques[key % n_b]}"

    return a_codes.astype(np.int64) * n_b + b_codes, describe


def ordered_zones(ids_in_order, row_ids: pd.Series) -> np.ndarray:
    """Each row's position in a zone list given in a chosen order (all row ids must be listed)."""
    codes, uniques = pd.factorize(row_ids)
    return pd.Index(ids_in_order).get_indexer(uniques)[codes]


def check_domain(n_origins: int, n_destinations: int, report: Report, fix: str | None = None
                 ) -> None:
    """Error ``domain_too_large`` when |O|·|D| exceeds what the mechanisms can hold densely, or,
    for a sparse import (``report.sparse``), when a side has more than :data:`ZONE_LIMIT` zones
    (larger domains are then reported with ``sparse_domain``)."""
    cells = n_origins * n_destinations
    if report.sparse or (report.sparse is None and cells > DENSE_CELL_LIMIT):
        if max(n_origins, n_destinations) > ZONE_LIMIT:
            report.fail("too_many_zones",
                        f"{n_origins:,} origins × {n_destinations:,} destinations: at most "
                        f"{ZONE_LIMIT:,} zones on each side can be held.",
                        fix=fix or "Roll the zones up to a coarser level, or keep only the region "
                                   "you need.")
        if cells > DENSE_CELL_LIMIT:
            report.info("sparse_domain",
                        f"{n_origins:,} origins × {n_destinations:,} destinations make "
                        f"{cells:,} possible commutes, more than the {DENSE_CELL_LIMIT:,} a dense "
                        f"release holds: releases keep the non-zero cells and summarise the "
                        f"empty ones (the sparse release).")
        return
    if cells > DENSE_CELL_LIMIT:
        report.fail("domain_too_large",
                    f"{n_origins:,} origins × {n_destinations:,} destinations make "
                    f"{cells:,} possible commutes, more than the {DENSE_CELL_LIMIT:,} a dense "
                    f"release holds. Larger domains are released sparsely, with at most "
                    f"{ZONE_LIMIT:,} zones on each side and {NONZERO_LIMIT:,} non-zero "
                    f"commutes.",
                    fix=fix or "Roll the zones up to a coarser level (e.g. add a parent column "
                               "and aggregate before uploading), or keep only the region you "
                               "need.")


def check_nonzero(nonzero: int, report: Report) -> None:
    """Error ``too_many_flows`` above :data:`NONZERO_LIMIT` non-zero cells."""
    if nonzero > NONZERO_LIMIT:
        report.fail("too_many_flows",
                    f"The file has {nonzero:,} distinct origin–destination pairs with commuters; "
                    f"at most {NONZERO_LIMIT:,} can be held.",
                    fix="Roll the zones up to a coarser level, or keep only the region you need.")


def with_parents(zones: ZoneSet, parent: np.ndarray, parent_zones: ZoneSet) -> ZoneSet:
    """The same zones, nested in ``parent_zones`` (``parent`` holds each zone's parent id)."""
    return ZoneSet(ids=zones.ids, labels=zones.labels, lat=zones.lat, lon=zones.lon,
                   parent=parent, parent_zones=parent_zones)


def _check_zone_names(uniques, codes, rows, column, report) -> None:
    totals = [zone for zone in uniques if _TOTAL.match(zone)]
    if totals:
        position = int(np.flatnonzero(uniques == totals[0])[0])
        report.error("total_row",
                     f"“{totals[0]}” looks like a total, not a zone; keeping it would count "
                     f"people twice.", row=rows[codes == position][0], column=column,
                     fix="Delete total rows and columns; the app computes totals itself.")
    folded = pd.Series(uniques).str.casefold()
    clash = folded.duplicated(keep=False).to_numpy()
    if clash.any():
        first = folded[clash].iloc[0]
        names = uniques[clash & (folded == first).to_numpy()]
        report.warning("zone_ids_differ_in_case",
                       f"Zones {quoted(names)} differ only in capital letters; they are kept "
                       f"as different zones.", column=column,
                       fix="If they are the same zone, spell them identically.")


def _per_zone(values: pd.Series, codes, uniques, rows, column, report) -> np.ndarray:
    """One value per zone (the first row's) from per-row values; a warning when rows disagree."""
    value_codes, value_uniques = pd.factorize(values)
    n_values = max(len(value_uniques), 1)
    keys = np.unique(codes.astype(np.int64) * n_values + value_codes)
    zone_of_key = keys // n_values
    clash = np.flatnonzero(np.diff(zone_of_key) == 0)
    if clash.size:
        zone = zone_of_key[clash[0]]
        names = value_uniques[keys[zone_of_key == zone] % n_values]
        report.warning("label_conflict",
                       f"Zone “{uniques[zone]}” has different names on different rows: "
                       f"{quoted(names)}; the first one is used.",
                       row=rows[codes == zone][0], column=column,
                       fix="Give each zone the same name on every row.")
    first_row = np.unique(codes, return_index=True)[1]
    first = values.iloc[first_row].to_numpy(dtype=object)
    return np.where(first != "", first, uniques).astype(object)


def _zone_coordinates(lat, lon, codes, uniques, rows, columns, report):
    """Per-zone coordinates from per-row ones: error on conflicts, warning on gaps."""
    n = len(uniques)
    placed = np.isfinite(lat) & np.isfinite(lon)
    frame = pd.DataFrame({"zone": codes[placed], "lat": np.round(lat[placed], 6),
                          "lon": np.round(lon[placed], 6), "row": rows[placed]})
    distinct = frame.drop_duplicates(["zone", "lat", "lon"])
    clash = distinct["zone"].duplicated(keep=False).to_numpy()
    if clash.any():
        zone = distinct["zone"].to_numpy()[clash][0]
        both = distinct[distinct["zone"] == zone]
        report.error("coordinates_conflict",
                     f"Zone “{uniques[zone]}” has different coordinates on different rows: "
                     + " and ".join(f"({a}, {b}) on row {int(r)}" for a, b, r in
                                    both[["lat", "lon", "row"]].to_numpy()[:2]) + ".",
                     row=int(both["row"].iloc[1]), column=columns[0] if columns else None,
                     fix="Give each zone one position, or leave the coordinates out and add a "
                         "zones file.")
    zone_lat = np.full(n, np.nan)
    zone_lon = np.full(n, np.nan)
    zone_lat[distinct["zone"].to_numpy()] = distinct["lat"].to_numpy()
    zone_lon[distinct["zone"].to_numpy()] = distinct["lon"].to_numpy()
    unplaced = ~np.isfinite(zone_lat)
    if unplaced.any() and not unplaced.all():
        report.warning("coordinates_missing",
                       f"{int(unplaced.sum()):,} of {plural(n, 'zone has', 'zones have')} no "
                       f"coordinates ({quoted(uniques[unplaced], int(unplaced.sum()))}); they "
                       f"are left off the map.", column=columns[0] if columns else None,
                       fix="Fill in their latitude and longitude, or add a zones file.")
    return zone_lat, zone_lon
