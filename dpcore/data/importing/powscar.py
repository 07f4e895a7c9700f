"""The Irish CSO POWSCAR file (Census 2016 place of work, school or college), county or ED level.

At ED level, origin and destination EDs are nested in their counties (``parent`` = county id,
``parent_zones`` = the county-level zone set), so ``ODMatrix.aggregate()`` gives the county level
exactly. Destinations that are not places ("Work/school from home", "Overseas", …) become
destination-only zones without coordinates, their own parents at ED level.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpcore.data.importing.building import (
    build_matrix,
    ordered_zones,
    pair_keys,
    warn_duplicates,
    with_parents,
    zone_set,
)
from dpcore.data.importing.names import clean_names
from dpcore.data.importing.notices import Report, plural, quoted
from dpcore.data.importing.reading import Table
from dpcore.data.importing.values import parse_counts, require_present
from dpcore.data.od import ODMatrix, ZoneSet

COLUMNS = ("RESIDENCE_ED_GUID", "RESIDENCE_CSOED", "RESIDENCE_CSOED_LABEL", "RESIDENCE_COUNTY",
           "RESIDENCE_COUNTY_LABEL", "POWSC_ED_GUID", "POWSC_CSOED", "POWSC_CSOED_LABEL",
           "POWSC_COUNTY", "POWSC_COUNTY_LABEL", "COUNT")
LEVELS = ("county", "ed")
_COUNTY_COLUMNS = ("RESIDENCE_COUNTY_LABEL", "POWSC_COUNTY_LABEL", "COUNT")
_ED_COLUMNS = ("RESIDENCE_ED_GUID", "RESIDENCE_CSOED_LABEL", "POWSC_ED_GUID", "POWSC_CSOED_LABEL")


def _normalised(name: str) -> str:
    """"Residence County Label" and "RESIDENCE_COUNTY_LABEL" are the same column."""
    return re.sub(r"[\s_]+", "_", name.strip()).upper()


def looks_like_powscar(header: list[str]) -> bool:
    return len({_normalised(h) for h in header} & set(COLUMNS)) >= 3


def import_powscar(table: Table, report: Report, level: str | None = None
                   ) -> tuple[ODMatrix, str]:
    """Read a POWSCAR file at ``level`` ("county" or "ed"; default ED if its columns exist)."""
    by_name = {_normalised(h): h for h in table.header}
    has_ed = all(c in by_name for c in _ED_COLUMNS)
    if level is None:
        level = "ed" if has_ed else "county"
        report.info("level_chosen", f"Imported at {_LEVEL_NAMES[level]} level"
                    + (", with counties as parents." if has_ed else
                       " (the file has no ED columns)."),
                    fix="Choose the county level for a smaller domain." if has_ed else "")
    missing = [c for c in _COUNTY_COLUMNS + (_ED_COLUMNS if level == "ed" else ())
               if c not in by_name]
    if missing:
        report.fail("missing_columns",
                    f"The POWSCAR {_LEVEL_NAMES[level]}-level import needs the column"
                    f"{'s' if len(missing) > 1 else ''} {quoted(missing, len(missing))}, which "
                    f"{'are' if len(missing) > 1 else 'is'} not in the file.", row=1,
                    fix="Upload the CSO file with its original header"
                        + (", or import at county level" if level == "ed" else "")
                        + "; for other data choose the long format.")
    # ED columns, when present, are read at county level too: they identify duplicate rows.
    used = _COUNTY_COLUMNS + (_ED_COLUMNS if has_ed else ())
    ignored = [h for h in table.header if _normalised(h) not in used]
    if ignored:
        report.info("columns_used", f"Columns not needed were ignored: {quoted(ignored)}.",
                    row=1)
    frame, rows = table.take([by_name[c] for c in used], report)
    frame.columns = list(used)
    for name in (c for c in used if c != "COUNT"):  # zone names and codes
        frame[name] = clean_names(frame[name], rows, by_name[name], report)

    res_county, pow_county = frame["RESIDENCE_COUNTY_LABEL"], frame["POWSC_COUNTY_LABEL"]
    require_present(res_county, rows, by_name["RESIDENCE_COUNTY_LABEL"], "residence county",
                    report)
    counts = parse_counts(frame["COUNT"], rows, by_name["COUNT"], report,
                          decimal_comma=table.delimiter != ",")
    counties = sorted(set(pd.unique(res_county)) - {""})
    special, special_id = _special_destinations(frame, counties, has_ed)
    dest_county = pow_county.where(~special, special_id)
    require_present(dest_county, rows, by_name["POWSC_COUNTY_LABEL"], "destination county",
                    report)
    if has_ed:
        require_present(frame["RESIDENCE_ED_GUID"], rows, by_name["RESIDENCE_ED_GUID"],
                        "residence ED code", report)
        require_present(frame["POWSC_ED_GUID"][~special], rows[~special],
                        by_name["POWSC_ED_GUID"], "destination ED code", report)
    report.stop_if_errors()
    specials = sorted(set(pd.unique(dest_county[special])))
    if specials:
        report.info("special_destinations",
                    f"Destinations that are not places of residence become destination-only "
                    f"zones without coordinates: {quoted(specials, len(specials))}.")
    dest_ed = frame["POWSC_ED_GUID"].where(~special, special_id) if has_ed else None
    keys, describe = (pair_keys(frame["RESIDENCE_ED_GUID"], dest_ed) if has_ed
                      else pair_keys(res_county, dest_county))
    warn_duplicates(keys, describe, rows, report, by_name["RESIDENCE_COUNTY_LABEL"])

    county_origins = ZoneSet.from_ids(counties)
    places = sorted(set(pd.unique(dest_county[~special])))
    county_destinations = ZoneSet.from_ids(places + specials)
    if level == "county":
        o_codes = ordered_zones(county_origins.ids, res_county)
        d_codes = ordered_zones(county_destinations.ids, dest_county)
        origins, destinations = county_origins, county_destinations
    else:
        o_codes, origins = _nested(frame["RESIDENCE_ED_GUID"], frame["RESIDENCE_CSOED_LABEL"],
                                   res_county, county_origins, rows, by_name, "RESIDENCE", report)
        d_codes, destinations = _nested(
            dest_ed, frame["POWSC_CSOED_LABEL"].where(~special, special_id),
            dest_county, county_destinations, rows, by_name, "POWSC", report)
    matrix = build_matrix(
        table.file, f"Uploaded file {table.file} (CSO POWSCAR, {_LEVEL_NAMES[level]} level).",
        origins, destinations, o_codes, d_codes, counts, rows, report, duplicates_expected=True)
    if level == "county" and has_ed:
        report.info("rolled_up", f"{plural(len(frame), 'ED-to-ED row')} "
                    f"{'was' if len(frame) == 1 else 'were'} rolled up into "
                    f"{plural(matrix.nonzero, 'county-to-county pair')}.")
    return matrix, level


_LEVEL_NAMES = {"county": "county", "ed": "electoral-division (ED)"}

#: Destinations of the published file that are not places (compared ignoring case).
SPECIAL_DESTINATIONS = ("No fixed place of work", "Work/school from home", "Northern Ireland",
                        "Overseas")


def _special_destinations(frame: pd.DataFrame, counties: list[str], has_ed: bool):
    """Which rows go to a destination that is not a place, and that destination's name.

    A destination is special when its county or ED label is one of SPECIAL_DESTINATIONS, or
    (files with ED columns) when it has no ED code and its county is not a county of residence.
    The rule does not depend on the level, so the ED level rolls up to the county level exactly.
    """
    pow_county = frame["POWSC_COUNTY_LABEL"]
    ed_label = frame["POWSC_CSOED_LABEL"] if has_ed else pow_county
    county_known, label_known = _is_special(pow_county), _is_special(ed_label)
    special = county_known | label_known
    if has_ed:
        special |= ((frame["POWSC_ED_GUID"] == "") & ~pow_county.isin(counties)).to_numpy()
    use_label = ~county_known & (label_known | (pow_county == "").to_numpy())
    return special, pow_county.where(~use_label, ed_label)


def _is_special(names: pd.Series) -> np.ndarray:
    codes, uniques = pd.factorize(names)
    known = {name.casefold() for name in SPECIAL_DESTINATIONS}
    return np.array([name.casefold() in known for name in uniques], dtype=bool)[codes]


def _nested(ids: pd.Series, labels: pd.Series, parents: pd.Series, parent_zones: ZoneSet,
            rows: np.ndarray, by_name: dict, side: str, report: Report):
    """EDs with their county as parent, ordered by county then name; one county per ED."""
    codes, zones = zone_set(ids, rows, by_name[f"{side}_ED_GUID"], report, labels=labels,
                            label_column=by_name[f"{side}_CSOED_LABEL"])
    n_parents = len(parent_zones)
    keys, first = np.unique(codes.astype(np.int64) * n_parents
                            + ordered_zones(parent_zones.ids, parents), return_index=True)
    zone_of_key, parent_of_key = keys // n_parents, keys % n_parents
    clash = np.flatnonzero(np.diff(zone_of_key) == 0)
    if clash.size:
        k = clash[0]
        (row_a, parent_a), (row_b, parent_b) = sorted(
            (rows[first[j]], parent_zones.ids[parent_of_key[j]]) for j in (k, k + 1))
        report.fail("inconsistent_zone",
                    f"ED “{zones.ids[zone_of_key[k]]}” is in county “{parent_a}” on row {row_a} "
                    f"but in “{parent_b}” on row {row_b}; an ED belongs to exactly one county.",
                    row=row_b, column=by_name[f"{side}_COUNTY_LABEL"],
                    fix="Correct the county (or the ED code) on one of those rows.")
    zone_parent = np.empty(len(zones), dtype=np.int64)
    zone_parent[zone_of_key] = parent_of_key
    order = np.lexsort((zones.ids, zones.labels, zone_parent))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    return position[codes], with_parents(zones.take(order), parent_zones.ids[zone_parent[order]],
                                         parent_zones)
