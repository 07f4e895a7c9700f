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

from dpcore.importing.building import (build_matrix, ordered_zones, warn_duplicates,
                                      with_parents, zone_set)
from dpcore.importing.notices import Report, plural, quoted
from dpcore.importing.reading import Table
from dpcore.importing.values import parse_counts, require_present
from dpcore.od import ARROW, ODMatrix, ZoneSet

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

    res_county, pow_county = frame["RESIDENCE_COUNTY_LABEL"], frame["POWSC_COUNTY_LABEL"]
    require_present(res_county, rows, by_name["RESIDENCE_COUNTY_LABEL"], "residence county",
                    report)
    counts = parse_counts(frame["COUNT"], rows, by_name["COUNT"], report)
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
    keys = (frame["RESIDENCE_ED_GUID"] + "|" + dest_ed) if has_ed else (
        res_county + "|" + dest_county)
    _warn_duplicate_rows(keys, rows, report, by_name)

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


def _warn_duplicate_rows(keys: pd.Series, rows, report, by_name) -> None:
    codes, uniques = pd.factorize(keys)

    def describe(code):
        return uniques[code].replace("|", ARROW)

    warn_duplicates(codes, rows, report, by_name["RESIDENCE_COUNTY_LABEL"], describe)


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
    known = {name.casefold() for name in SPECIAL_DESTINATIONS}
    county_known = pow_county.str.casefold().isin(known).to_numpy()
    label_known = ed_label.str.casefold().isin(known).to_numpy()
    special = county_known | label_known
    if has_ed:
        special |= ((frame["POWSC_ED_GUID"] == "") & ~pow_county.isin(counties)).to_numpy()
    name = np.select([county_known, label_known, (pow_county != "").to_numpy()],
                     [pow_county, ed_label, pow_county], ed_label)
    return special, pd.Series(name, index=frame.index, dtype=str)


def _nested(ids: pd.Series, labels: pd.Series, parents: pd.Series, parent_zones: ZoneSet,
            rows: np.ndarray, by_name: dict, side: str, report: Report):
    """EDs with their county as parent, ordered by county then name; one county per ED."""
    id_column = by_name[f"{side}_ED_GUID"]
    pairs = pd.DataFrame({"id": ids, "parent": parents, "row": rows}).drop_duplicates(
        ["id", "parent"])
    clash = pairs["id"].duplicated(keep=False).to_numpy()
    if clash.any():
        first = pairs[clash].iloc[0]["id"]
        both = pairs[pairs["id"] == first]
        report.fail("inconsistent_zone",
                    f"ED “{first}” is in county “{both['parent'].iloc[0]}” on row "
                    f"{both['row'].iloc[0]} but in “{both['parent'].iloc[1]}” on row "
                    f"{both['row'].iloc[1]}; an ED belongs to exactly one county.",
                    row=both["row"].iloc[1], column=by_name[f"{side}_COUNTY_LABEL"],
                    fix="Correct the county (or the ED code) on one of those rows.")
    codes, zones = zone_set(ids, rows, id_column, report, labels=labels,
                            label_column=by_name[f"{side}_CSOED_LABEL"])
    parent_of = pairs.drop_duplicates("id").set_index("id")["parent"]
    zone_parent = parent_of.reindex(zones.ids).to_numpy(dtype=object).astype(str)
    order = np.lexsort((zones.ids, zones.labels, ordered_zones(parent_zones.ids, zone_parent)))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    return position[codes], with_parents(zones.take(order), zone_parent[order], parent_zones)
