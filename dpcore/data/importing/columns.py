"""Which column plays which role: recognising common header names, or applying the user's mapping.

Names are split into lower-case words ("originLat", "ORIGIN_LAT" and "Origin lat" all give
``origin``, ``lat``), so variants are recognised without listing every spelling. When a role is
missing or claimed by two columns, the import stops with the file's columns so the UI can ask the
user, who then passes ``columns={"origin": "From zone", ...}``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from dpcore.data.importing.notices import Report, quoted

#: Roles of columns in long and one-row-per-person files, with what each means.
OD_ROLES = {
    "origin": "origin zone (where people live)",
    "destination": "destination zone (where they work or study)",
    "count": "number of people making that commute",
    "origin_label": "display name of the origin zone (optional)",
    "destination_label": "display name of the destination zone (optional)",
    "origin_lat": "origin latitude, WGS84 degrees (optional)",
    "origin_lon": "origin longitude, WGS84 degrees (optional)",
    "destination_lat": "destination latitude, WGS84 degrees (optional)",
    "destination_lon": "destination longitude, WGS84 degrees (optional)",
}

#: Roles of columns in a zones file.
ZONE_ROLES = {
    "zone": "zone id, as used in the origin–destination file",
    "lat": "latitude, WGS84 degrees",
    "lon": "longitude, WGS84 degrees",
    "parent": "the zone's parent at a coarser level, e.g. its county (optional)",
    "label": "display name (optional)",
}

_ORIGIN = {"origin", "orig", "o", "from", "home", "residence", "res", "source", "src", "start"}
_DESTINATION = {"destination", "dest", "dst", "d", "to", "work", "workplace", "pow", "powsc",
                "target", "end", "job"}
_LAT = {"lat", "latitude", "y"}
_LON = {"lon", "lng", "long", "longitude", "x"}
_LABEL = {"name", "label", "title"}
_COUNT = {"count", "counts", "n", "flow", "flows", "value", "trips", "trip", "commuters",
          "commuter", "commutes", "persons", "people", "number", "total", "weight", "volume",
          "freq", "frequency", "workers", "journeys", "num", "cnt", "amount", "s000"}
_ID = {"id", "code", "zone", "geoid", "geocode", "area", "guid", "key"}
_PARENT = {"parent", "region", "group", "upper"}


def words(name: str) -> set[str]:
    """Lower-case words of a column name, plus the whole name squashed ("S000" → "s000")."""
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    squashed = re.sub(r"[^0-9a-z]", "", name.lower())
    return {p.lower() for p in parts} | {squashed}


def od_role(name: str) -> str | None:
    """The role a long-format column name suggests, or None."""
    w = words(name)
    sides = [side for side, vocab in (("origin", _ORIGIN), ("destination", _DESTINATION))
             if w & vocab]
    if len(sides) == 1:
        kinds = [kind for kind, vocab in (("lat", _LAT), ("lon", _LON), ("label", _LABEL))
                 if w & vocab]
        if len(kinds) > 1:
            return None
        return f"{sides[0]}_{kinds[0]}" if kinds else sides[0]
    if not sides and w & _COUNT and not w & (_ID | _LAT | _LON):
        return "count"
    return None


def zone_role(name: str) -> str | None:
    """The role a zones-file column name suggests, or None."""
    w = words(name)
    for role, vocab in (("lat", _LAT), ("lon", _LON), ("parent", _PARENT), ("label", _LABEL)):
        if w & vocab:
            return role
    return "zone" if w & (_ID | {"county", "ed", "tract", "block", "district", "zones"}) else None


def recognise(header: list[str], classify: Callable[[str], str | None]):
    """Map roles to header names; returns (unique matches, ambiguous role → candidate names)."""
    candidates: dict[str, list[str]] = {}
    for name in header:
        role = classify(name)
        if role is not None:
            candidates.setdefault(role, []).append(name)
    found = {role: names[0] for role, names in candidates.items() if len(names) == 1}
    ambiguous = {role: names for role, names in candidates.items() if len(names) > 1}
    return found, ambiguous


def resolve(header: list[str], required: tuple[str, ...], optional: tuple[str, ...],
            columns: dict[str, str] | None, classify, report: Report, what: str,
            how: str = "Map the columns to their roles, or rename them",
            mappable: bool = True) -> dict[str, str]:
    """Decide each role's column: the user's mapping first, then recognition of the rest.

    Raises ImportFailed when a required role is missing or ambiguous, with ``columns=header``
    if the caller can take a mapping (``mappable``); ``how`` starts the suggested fix.
    """
    offer = header if mappable else None
    roles = required + optional
    mapping = _check_user_mapping(header, columns or {}, roles, report)
    free = [name for name in header if name not in mapping.values()]
    found, ambiguous = recognise(free, classify)
    for role in roles:
        if role not in mapping and role in found:
            mapping[role] = found[role]
    duplicated = sorted(name for name, times in Counter(header).items() if times > 1)
    used_twice = [name for name in mapping.values() if name in duplicated]
    if used_twice:
        report.fail("duplicate_column_names",
                    f"The header names the column “{used_twice[0]}” more than once, so it is "
                    f"unclear which one to use.", row=1, column=used_twice[0],
                    fix="Rename or delete the extra column so every column name is unique.")
    unsure = {role: names for role, names in ambiguous.items()
              if role in required and role not in mapping}
    if unsure:
        role, names = next(iter(unsure.items()))
        report.fail("ambiguous_columns",
                    f"Several columns could be the {OD_ROLES.get(role, ZONE_ROLES.get(role, role))}"
                    f": {quoted(names)}.", row=1,
                    fix=f"{how}: say which column is “{role}”, or rename the others.",
                    columns=offer, suggested=mapping)
    missing = [role for role in required if role not in mapping]
    if missing:
        report.fail("unmapped_columns",
                    f"Could not tell which column is the {_describe_roles(missing)} for {what}. "
                    f"The columns are {quoted(header, len(header))}.", row=1,
                    fix=f"{how}, e.g. a header “{','.join(required)}”.", columns=offer,
                    suggested=mapping)
    for role, names in ambiguous.items():
        if role in optional and role not in mapping:
            report.warning("ambiguous_columns",
                           f"Several columns could be the {role.replace('_', ' ')}: "
                           f"{quoted(names)}; none of them was used.", row=1,
                           fix=f"Map one of them to “{role}” if you need it.")
    return mapping


def report_mapping(mapping: dict[str, str], header: list[str], report: Report) -> None:
    """Say which column was used for what, and which were ignored: nothing is dropped silently."""
    used = ", ".join(f"{role} = “{name}”" for role, name in mapping.items())
    ignored = [name for name in header if name not in mapping.values()]
    message = f"Columns used: {used}."
    if ignored:
        message += f" Ignored: {quoted(ignored)}."
    report.info("columns_used", message, row=1,
                fix="If a column was misread, map the columns yourself." if ignored or mapping
                else "")


def _check_user_mapping(header, columns, roles, report) -> dict[str, str]:
    unknown = [role for role in columns if role not in roles]
    if unknown:
        report.fail("bad_column_mapping",
                    f"Unknown column role {quoted(unknown)}; the roles are {quoted(roles)}.",
                    fix="Use only the listed roles in the mapping.", columns=header)
    mapping = {role: name for role, name in columns.items() if name}
    for role, name in mapping.items():
        if name not in header:
            report.fail("bad_column_mapping",
                        f"The mapping names a column “{name}” (as {role}) that is not in the "
                        f"file; its columns are {quoted(header, len(header))}.", row=1,
                        fix="Choose one of the file's columns.", columns=header)
    names = list(mapping.values())
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        report.fail("bad_column_mapping",
                    f"The column “{twice[0]}” is mapped to more than one role.", row=1,
                    fix="Give each role its own column.", columns=header)
    return mapping


def _describe_roles(roles) -> str:
    parts = [f"{OD_ROLES.get(r, ZONE_ROLES.get(r, r))} (“{r}”)" for r in roles]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
