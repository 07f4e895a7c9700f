"""Which zones an analysis is about: a list of zones, a parent area, or a radius (OnTheMap's
selection by layer or buffer).

An OD table's origins and destinations are separate zone sets (destinations such as "Overseas"
are never homes), so a selection is a mask on each: the same zone ids on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix

EARTH_RADIUS_KM = 6371.0088
NO_POSITIONS = ("this analysis needs the zones' positions (latitude and longitude), and {what} "
                "has none: import the data with a zones file that gives them")


@dataclass(frozen=True, eq=False)
class Selection:
    """``name`` (as written in answers) and the boolean masks of the selected origins (homes)
    and destinations (workplaces)."""

    name: str
    origins: np.ndarray
    destinations: np.ndarray

    def __post_init__(self):
        if not (self.origins.any() or self.destinations.any()):
            raise ValueError(f"the selection {self.name!r} holds no zone")


def zones(od: ODMatrix, ids, name: str | None = None) -> Selection:
    """The zones with these ids (on whichever sides they exist); an unknown id is an error."""
    ids = [str(zone) for zone in ids]
    known = set(od.origins.ids) | set(od.destinations.ids)
    unknown = [zone for zone in ids if zone not in known]
    if unknown or not ids:
        raise ValueError(f"unknown zone id {unknown[0]!r}" if unknown
                         else "name at least one zone")
    return Selection(name or " + ".join(ids), np.isin(od.origins.ids, ids),
                     np.isin(od.destinations.ids, ids))


def parent(od: ODMatrix, parent_id: str) -> Selection:
    """Every zone whose parent area is ``parent_id`` (e.g. the EDs of a county)."""
    if od.origins.parent is None:
        raise ValueError("this data has no parent level: select zones or a radius instead")
    parent_id = str(parent_id)
    destinations = (np.zeros(od.n_destinations, bool) if od.destinations.parent is None
                    else od.destinations.parent == parent_id)
    origins = od.origins.parent == parent_id
    if not origins.any() and not destinations.any():
        raise ValueError(f"unknown parent area {parent_id!r}")
    return Selection(parent_id, origins, destinations)


def distance_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    """Great-circle distance (haversine) in km; NaN where a position is missing."""
    la1, lo1, la2, lo2 = (np.radians(np.asarray(x, dtype=float)) for x in (lat1, lon1, lat2, lon2))
    h = (np.sin((la2 - la1) / 2) ** 2
         + np.cos(la1) * np.cos(la2) * np.sin((lo2 - lo1) / 2) ** 2)
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def bearing_degrees(lat1, lon1, lat2, lon2) -> np.ndarray:
    """Initial compass bearing from point 1 to point 2 (0 = north, clockwise)."""
    la1, lo1, la2, lo2 = (np.radians(np.asarray(x, dtype=float)) for x in (lat1, lon1, lat2, lon2))
    y = np.sin(lo2 - lo1) * np.cos(la2)
    x = np.cos(la1) * np.sin(la2) - np.sin(la1) * np.cos(la2) * np.cos(lo2 - lo1)
    return np.degrees(np.arctan2(y, x)) % 360.0


def require_positions(od: ODMatrix) -> None:
    """A clear error when no zone has a position."""
    if not (od.origins.has_coordinates.any() and od.destinations.has_coordinates.any()):
        raise ValueError(NO_POSITIONS.format(what=f"'{od.name}'"))


def radius(od: ODMatrix, km: float, zone: str | None = None, lat: float | None = None,
           lon: float | None = None) -> Selection:
    """The zones whose position lies within ``km`` of a zone's position or of a point."""
    require_positions(od)
    if not (np.isfinite(km) and km >= 0):
        raise ValueError(f"the radius must be a distance of 0 km or more; got {km!r}")
    if zone is not None:
        zone = str(zone)
        for zoneset in (od.origins, od.destinations):
            if zone in zoneset.ids:
                i = int(zoneset.index_of([zone])[0])
                lat, lon = zoneset.lat[i], zoneset.lon[i]
                break
        else:
            raise ValueError(f"unknown zone id {zone!r}")
        if not (np.isfinite(lat) and np.isfinite(lon)):
            raise ValueError(NO_POSITIONS.format(what=f"the zone {zone!r}"))
        name = f"within {km:g} km of {zone}"
    else:
        if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise ValueError("give a zone, or a point as latitude (−90…90) and longitude "
                             "(−180…180)")
        name = f"within {km:g} km of ({lat:g}, {lon:g})"

    def inside(zoneset):
        return distance_km(lat, lon, zoneset.lat, zoneset.lon) <= km   # NaN → outside

    return Selection(name, inside(od.origins), inside(od.destinations))
