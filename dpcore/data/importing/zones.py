"""The optional zones file (zone, lat, lon, optional parent and label) that completes the zones.

It adds positions (and names) to the zones of an imported matrix, at its level and at its parent
level, and — for formats without a parent level — nests zones in the parents it names, so that
``ODMatrix.aggregate()`` rolls the data up to them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from dpcore.data.importing.building import with_parents
from dpcore.data.importing.columns import (
    recognise,
    report_mapping,
    resolve,
    words,
    zone_role,
)
from dpcore.data.importing.names import clean_names
from dpcore.data.importing.notices import Report, plural, quoted, rows_phrase
from dpcore.data.importing.reading import read_table
from dpcore.data.importing.values import parse_coordinates, require_present
from dpcore.data.od import ODMatrix, ZoneSet


def apply_zones(matrix: ODMatrix, data: bytes, filename: str, report: Report) -> ODMatrix:
    """``matrix`` with the zones file's positions, labels and (if it has none yet) parents."""
    report = report.for_file(filename)
    table = read_table(data, filename, report)
    mapping = resolve(table.header, ("zone",), ("lat", "lon", "parent", "label"),
                      _preset_roles(table.header),
                      zone_role, report, "a zones file",
                      how="Rename the columns, e.g. “zone,lat,lon,parent”", mappable=False)
    if ("lat" in mapping) != ("lon" in mapping):
        kind = "lat" if "lat" in mapping else "lon"
        report.warning("coordinates_incomplete",
                       f"Only a {'latitude' if kind == 'lat' else 'longitude'} column "
                       f"(“{mapping[kind]}”) was found, so no positions were taken.", row=1,
                       column=mapping.pop(kind), fix="Add both “lat” and “lon” columns.")
    if not set(mapping) & {"lat", "lon", "parent", "label"}:
        report.fail("zones_nothing_to_add",
                    f"The zones file has no latitude/longitude, parent or name column, so it "
                    f"adds nothing. Its columns are {quoted(table.header, len(table.header))}.",
                    row=1, fix="Use a header such as “zone,lat,lon,parent”.")
    report_mapping(mapping, table.header, report)
    frame, rows = table.take(list(mapping.values()), report)
    for role in ("zone", "label", "parent"):
        if role in mapping:
            frame[mapping[role]] = clean_names(frame[mapping[role]], rows, mapping[role], report)
    zones = frame[mapping["zone"]]
    require_present(zones, rows, mapping["zone"], "zone id", report)
    repeated = zones.duplicated(keep=False).to_numpy() & (zones != "").to_numpy()
    if repeated.any():
        first = zones[repeated].iloc[0]
        report.error("duplicate_zone",
                     f"Zone “{first}” is listed more than once (rows "
                     f"{', '.join(map(str, rows[(zones == first).to_numpy()][:5]))}), so its "
                     f"position is ambiguous.", row=rows[repeated][0], column=mapping["zone"],
                     fix="Keep one row per zone.")
    lookup = pd.DataFrame(index=pd.Index(zones, name="zone"))
    if "lat" in mapping:
        lat = parse_coordinates(frame[mapping["lat"]], rows, mapping["lat"], "lat", report)
        lon = parse_coordinates(frame[mapping["lon"]], rows, mapping["lon"], "lon", report)
        half = np.isnan(lat) != np.isnan(lon)
        half &= ((frame[mapping["lat"]] == "") != (frame[mapping["lon"]] == "")).to_numpy()
        if half.any():
            report.error("missing_value", f"Only one of latitude and longitude is given on "
                         f"{rows_phrase(rows[half])}.", row=rows[half][0],
                         column=mapping["lat"],
                         fix="Give both coordinates, or leave both empty for a zone without a "
                             "position.")
        lookup["lat"], lookup["lon"] = lat, lon
    for role in ("label", "parent"):
        if role in mapping:
            lookup[role] = frame[mapping[role]].to_numpy(dtype=object)
    report.stop_if_errors()
    _check_known(matrix, lookup.index, rows, mapping["zone"], report)

    if matrix.has_parent_level:
        if "parent" in mapping:
            report.warning("zones_parent_ignored",
                           f"This data already has a parent level, so the zones file's "
                           f"“{mapping['parent']}” column was not used.", row=1,
                           column=mapping["parent"],
                           fix="Nothing to do; leave the column out to avoid this message.")
        origins = _update(matrix.origins, lookup, report,
                          _update(matrix.origins.parent_zones, lookup, report))
        destinations = _update(matrix.destinations, lookup, report,
                               _update(matrix.destinations.parent_zones, lookup, report))
    else:
        origins = _update(matrix.origins, lookup, report)
        destinations = _update(matrix.destinations, lookup, report)
        if "parent" in mapping:
            origins = _nest(origins, lookup, "origin", report)
            destinations = _nest(destinations, lookup, "destination", report)
            report.info("parents_added",
                        f"Zones were nested in the parent zones named by the zones file "
                        f"({len(origins.parent_zones):,} for origins, "
                        f"{len(destinations.parent_zones):,} for destinations), so the data can "
                        f"be rolled up to them. Parents that the zones file does not place sit "
                        f"at the mean position of their zones.")
    return dataclasses.replace(matrix, origins=origins, destinations=destinations)


def _preset_roles(header: list[str]) -> dict[str, str] | None:
    """Roles that recognition alone gets wrong: a name column as the only id ("name,lat,lon"),
    or a zone column next to a county-like one ("ED,County,lat,lon": the county is the parent)."""
    found, ambiguous = recognise(header, zone_role)
    if "zone" not in found and "zone" not in ambiguous and "label" in found:
        return {"zone": found["label"]}
    if "zone" in ambiguous and "parent" not in found and "parent" not in ambiguous:
        coarse = [name for name in ambiguous["zone"] if words(name) & _COARSE]
        fine = [name for name in ambiguous["zone"] if name not in coarse]
        if len(fine) == 1 and len(coarse) == 1:
            return {"zone": fine[0], "parent": coarse[0]}
    return None


_COARSE = {"county", "district", "state", "region", "province"}


def _check_known(matrix: ODMatrix, listed: pd.Index, rows, column, report: Report) -> None:
    """Zones of the file that the data does not have: a warning, or an error if none match."""
    sets = [matrix.origins, matrix.destinations]
    sets += [z.parent_zones for z in sets if z.parent_zones is not None]
    known = set().union(*(set(z.ids) for z in sets))
    unknown = ~listed.isin(known)
    if unknown.all():
        stripped = {zone_id.lstrip("0") for zone_id in known}
        zeros = listed.isin(stripped).any()
        report.fail("zones_unknown",
                    f"None of the {len(listed):,} zones in the zones file is in the data (the "
                    f"file lists {quoted(listed[:3], len(listed))}; the data has "
                    f"{quoted(sorted(known)[:3], len(known))}).", row=rows[0], column=column,
                    fix="Use the same zone ids as the origin–destination file"
                        + ("; the zones file seems to have lost leading zeros (open it as text, "
                           "not numbers)" if zeros else "") + ".")
    if unknown.any():
        report.warning("zones_unknown",
                       f"{plural(int(unknown.sum()), 'zone', 'zones')} of the zones file "
                       f"{'is' if unknown.sum() == 1 else 'are'} not in the data and "
                       f"{'was' if unknown.sum() == 1 else 'were'} ignored: "
                       f"{quoted(listed[unknown], int(unknown.sum()))}.",
                       row=rows[unknown][0], column=column,
                       fix="Nothing to do if the zones file covers a larger area; otherwise "
                           "check the spelling of those ids.")
    missing = sorted((set(matrix.origins.ids) | set(matrix.destinations.ids)) - set(listed))
    if missing:
        report.info("zones_not_listed",
                    f"Zones of the data that are not in the zones file keep their previous "
                    f"position (or none): {quoted(missing, len(missing))}.",
                    fix="Add them to the zones file if they should appear on the map.")


def _update(zones: ZoneSet, lookup: pd.DataFrame, report: Report,
            parent_zones: ZoneSet | None = None) -> ZoneSet:
    """Positions and labels from the zones file where it has them."""
    at = lookup.index.get_indexer(zones.ids)
    listed = at >= 0
    lat, lon, labels = zones.lat.copy(), zones.lon.copy(), zones.labels.copy()
    if "lat" in lookup:
        new_lat = np.where(listed, lookup["lat"].to_numpy()[at], np.nan)
        new_lon = np.where(listed, lookup["lon"].to_numpy()[at], np.nan)
        placed = np.isfinite(new_lat) & np.isfinite(new_lon)
        moved = placed & np.isfinite(lat) & ((lat != new_lat) | (lon != new_lon))
        if moved.any():
            report.info("coordinates_replaced",
                        f"The zones file moved {plural(int(moved.sum()), 'zone')} whose data "
                        f"already had coordinates ({quoted(zones.ids[moved])}).",
                        fix="Nothing to do if the zones file is the better source.")
        lat[placed], lon[placed] = new_lat[placed], new_lon[placed]
    if "label" in lookup:
        new_labels = np.where(listed, lookup["label"].to_numpy(dtype=object)[at], "")
        named = new_labels != ""
        labels[named] = new_labels[named]
    return ZoneSet(ids=zones.ids, labels=labels, lat=lat, lon=lon, parent=zones.parent,
                   parent_zones=parent_zones if parent_zones is not None else zones.parent_zones)


def _nest(zones: ZoneSet, lookup: pd.DataFrame, side: str, report: Report) -> ZoneSet:
    """Nest zones in the parents the zones file names; unnamed ones are their own parent."""
    at = lookup.index.get_indexer(zones.ids)
    parent = np.where(at >= 0, lookup["parent"].to_numpy(dtype=object)[at], "").astype(object)
    own = parent == ""
    parent[own] = zones.ids[own]
    if own.any():
        report.info("own_parent",
                    f"{side.capitalize()} zones without a parent in the zones file are their own "
                    f"parent ({quoted(zones.ids[own], int(own.sum()))}).",
                    fix="Add a parent for them if they belong to a larger zone.")
    # A parent is placed where the zones file puts it, else at the mean position of its zones.
    centres = (pd.DataFrame({"parent": parent, "lat": zones.lat, "lon": zones.lon})
               .groupby("parent", sort=True)[["lat", "lon"]].mean())
    parents = _update(ZoneSet.from_ids(centres.index.to_numpy(dtype=object)), lookup, report)
    unplaced = ~parents.has_coordinates
    lat, lon = parents.lat.copy(), parents.lon.copy()
    lat[unplaced] = centres["lat"].to_numpy()[unplaced]
    lon[unplaced] = centres["lon"].to_numpy()[unplaced]
    parents = ZoneSet(ids=parents.ids, labels=parents.labels, lat=lat, lon=lon)
    return with_parents(zones, parent, parents)


def read_zone_list(data: bytes, filename: str) -> tuple[ZoneSet, list]:
    """The zones a zones file lists (zone[, parent]; other columns ignored), in file order,
    nested in their parents when it names them: a *public* list of zones, e.g. the published
    domain of a release (:mod:`dpcore.interfaces.published_domain`), and the notices saying
    what was done with rows that do not fit two levels: a zone without a parent is its own
    parent; a listed zone that is another's parent (a third level, or the parents listed among
    the zones) is left out, so the domain is the finest level. Raises ImportFailed."""
    report = Report(filename)
    table = read_table(data, filename, report, one_column=True)
    mapping = resolve(table.header, ("zone",), ("parent", "label", "lat", "lon"),
                      _preset_roles(table.header), zone_role, report, "a zones file",
                      how="Rename the columns, e.g. “zone,parent”", mappable=False)
    mapping = {role: mapping[role] for role in ("zone", "parent") if role in mapping}
    frame, rows = table.take(list(mapping.values()), report)
    for column in mapping.values():
        frame[column] = clean_names(frame[column], rows, column, report)
    zones = frame[mapping["zone"]]
    require_present(zones, rows, mapping["zone"], "zone id", report)
    repeated = zones.duplicated(keep=False).to_numpy() & (zones != "").to_numpy()
    if repeated.any():
        report.error("duplicate_zone", f"Zone “{zones[repeated].iloc[0]}” is listed more than "
                     "once.", row=rows[repeated][0], column=mapping["zone"],
                     fix="Keep one row per zone.")
    report.stop_if_errors()
    ids = zones.to_numpy(dtype=object)
    if "parent" not in mapping:
        return ZoneSet.from_ids(ids), report.notices
    parent = frame[mapping["parent"]].to_numpy(dtype=object)
    upper = np.isin(ids, parent[(parent != "") & (parent != ids)])
    if upper.any() and not upper.all():
        count = int(upper.sum())
        report.warning("zones_third_level",
                       f"{count:,} listed zone{'s are' if count > 1 else ' is'} also the parent "
                       f"of other listed zones ({quoted(ids[upper], count)}): the file has more "
                       f"than the two levels a domain has (zones and their parents). The domain "
                       f"was made of the {int((~upper).sum()):,} zones that are no zone's "
                       f"parent, nested in the parents they name; the rows of the upper "
                       f"zones (and the parents those rows name) were not used.",
                       row=int(rows[upper][0]), column=mapping["parent"],
                       fix="List the zones of the level you publish, one row each with its "
                           "parent; leave the upper levels out.")
        ids, parent = ids[~upper], parent[~upper]
    own = parent == ""
    if own.any():
        count = int(own.sum())
        report.info("own_parent",
                    f"{count:,} zone{'s have' if count > 1 else ' has'} no parent in the zones "
                    f"file ({quoted(ids[own], count)}): each was made its own parent, so it "
                    f"stands as it is at the parent level too.",
                    column=mapping["parent"],
                    fix="Give their parent if they belong to a larger zone.")
    parent[own] = ids[own]
    return (with_parents(ZoneSet.from_ids(ids), parent,
                         ZoneSet.from_ids(pd.unique(parent).astype(object))), report.notices)
