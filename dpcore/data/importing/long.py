"""Long format (one row per origin–destination pair with a count) and one row per person."""

from __future__ import annotations

import numpy as np

from dpcore.data.importing.building import build_matrix, zone_set
from dpcore.data.importing.columns import od_role, report_mapping, resolve
from dpcore.data.importing.notices import Report, plural
from dpcore.data.importing.reading import Table
from dpcore.data.importing.values import (
    parse_coordinates,
    parse_counts,
    require_present,
)
from dpcore.data.od import ODMatrix

_OPTIONAL = ("origin_label", "destination_label", "origin_lat", "origin_lon",
             "destination_lat", "destination_lon")


def import_long(table: Table, report: Report, columns: dict[str, str] | None = None, *,
                persons: bool = False) -> tuple[ODMatrix, dict[str, str]]:
    """Read a long-format file (``persons=False``) or a one-row-per-person file.

    Returns the matrix and the column mapping used.
    """
    required = ("origin", "destination") if persons else ("origin", "destination", "count")
    what = "a one-row-per-person file" if persons else "a long-format file"
    how = ("Map the columns to their roles, or rename them" if persons else
           "Map the columns to their roles (or choose “one row per person” if the file has no "
           "counts), or rename them")
    mapping = resolve(table.header, required, _OPTIONAL, columns, od_role, report, what, how)
    for side in ("origin", "destination"):
        lat, lon = mapping.get(f"{side}_lat"), mapping.get(f"{side}_lon")
        if (lat is None) != (lon is None):
            report.warning("coordinates_incomplete",
                           f"Only the {side} {'latitude' if lat else 'longitude'} column "
                           f"(“{lat or lon}”) was found, so {side} coordinates were not used.",
                           row=1, column=lat or lon,
                           fix=f"Add or map the {side} {'longitude' if lat else 'latitude'} "
                               f"column too.")
            mapping.pop(f"{side}_lat", None)
            mapping.pop(f"{side}_lon", None)
    report_mapping(mapping, table.header, report)
    frame, rows = table.take(list(mapping.values()), report)

    sides = {}
    for side in ("origin", "destination"):
        column = mapping[side]
        require_present(frame[column], rows, column, f"{side} zone", report)
        coordinates = {}
        if f"{side}_lat" in mapping:
            for kind in ("lat", "lon"):
                name = mapping[f"{side}_{kind}"]
                coordinates[kind] = parse_coordinates(frame[name], rows, name, kind, report)
        label_column = mapping.get(f"{side}_label")
        sides[side] = zone_set(
            frame[column], rows, column, report,
            labels=frame[label_column] if label_column else None, label_column=label_column,
            lat=coordinates.get("lat"), lon=coordinates.get("lon"),
            coordinate_columns=(mapping.get(f"{side}_lat"), mapping.get(f"{side}_lon")))
    if persons:
        counts = np.ones(len(frame), dtype=np.int64)
    else:
        counts = parse_counts(frame[mapping["count"]], rows, mapping["count"], report,
                              decimal_comma=table.delimiter != ",")
    (o_codes, origins), (d_codes, destinations) = sides["origin"], sides["destination"]
    title = "one row per person" if persons else "long format"
    matrix = build_matrix(table.file, f"Uploaded file {table.file} ({title}).", origins,
                          destinations, o_codes, d_codes, counts, rows, report,
                          duplicates_expected=persons, origin_column=mapping["origin"])
    if persons:
        report.info("persons_counted",
                    f"{plural(len(frame), 'row')}, one per person, were counted into "
                    f"{plural(matrix.nonzero, 'origin–destination pair')}.",
                    fix="If the file has a column of counts, choose the long format instead.")
    return matrix, mapping
