"""Background geography and approximate zone areas, offline.

**Background.** Land (each country's polygons) and land borders from Natural Earth's 1:10m
admin-0 countries (public domain), converted once by ``scripts/convert_natural_earth.py`` into
``data/geography/natural_earth_10m.json.gz`` (simplified to 0.005°, about 500 m). A map asks for
the part inside its bounds (:func:`background`), simplified further to about a pixel of the view,
so that a county map sends a few kilobytes and a world map well under a megabyte.

**Zone areas.** Commuting data usually gives each zone a point (a centroid or town), not a
boundary. To colour zones on a map, each zone gets its Voronoi cell — the places nearer to its
point than to any other zone's point (the classic "Thiessen polygons" of proximal areas) — clipped
to the land. These are *approximate areas*, not the official boundaries, and are labelled so.

* Cells are computed in an equirectangular projection around the data's mean latitude, so that
  "nearer" means nearer on the ground rather than in degrees of longitude.
* Clipped to the land of the countries the zones are in (an Irish county's cell stops at the
  coast and at the border); a point that lies off that land (e.g. just off the simplified coast)
  keeps a disc around it (radius half the distance to the nearest other point), so that every
  zone's area contains its point.
* Zones sharing one position share one cell.
* Parents (e.g. counties of EDs) have no polygons in the data. A parent's area is the union of its
  zones' cells, so every zone lies inside its parent's area by construction, and a map rolled up
  to the parents colours these unions.

The computation runs once per dataset (about a second for Ireland's 3,130 EDs); callers cache it.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import shapely
from scipy.spatial import cKDTree

from dpcore.data.od import ODMatrix

GEOGRAPHY_FILE = Path(__file__).resolve().parents[2] / "data" / "geography" / \
    "natural_earth_10m.json.gz"
#: Share of the view's extent added around it before clipping (so panning shows a margin).
MARGIN = 0.5
#: The background is simplified to about this share of the view's extent (≈ a pixel).
PIXEL_SHARE = 1 / 1500
#: Decimal places of zone-area vertices sent to a map (4 ≈ 10 m).
AREA_DECIMALS = 4
#: How far around the points the Voronoi diagram extends (share of their extent, at least 0.1°).
EXTEND = 0.25


@dataclass(frozen=True)
class World:
    """The bundled background: each country's land (array of (Multi)Polygons, with a spatial
    index), the land borders (MultiLineString), and the source's description."""

    countries: np.ndarray
    codes: tuple[str, ...]
    tree: shapely.STRtree
    borders: shapely.Geometry
    source: dict

    def land_in(self, box) -> shapely.Geometry:
        """All land inside ``box`` (west, south, east, north), countries kept apart (no union:
        it only fills)."""
        hits = self.tree.query(shapely.box(*box))
        parts = shapely.get_parts(shapely.clip_by_rect(self.countries[hits], *box))
        polygons = parts[shapely.get_type_id(parts) == shapely.GeometryType.POLYGON]
        return shapely.multipolygons(polygons) if len(polygons) else shapely.Polygon()

    def countries_of(self, lon, lat) -> list[int]:
        """Positions of the countries containing at least one of the points."""
        points = shapely.points(np.column_stack([lon, lat]))
        _, hits = self.tree.query(points, predicate="within")
        return sorted(set(hits.tolist()))


@lru_cache(maxsize=1)
def world() -> World:
    """The bundled Natural Earth background (static data, read once per process)."""
    with gzip.open(GEOGRAPHY_FILE, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    countries = shapely.make_valid(np.array([
        shapely.from_geojson(json.dumps(c["geometry"])) for c in document["countries"]]))
    borders = shapely.from_geojson(json.dumps(document["borders"]))
    return World(countries, tuple(c["code"] for c in document["countries"]),
                 shapely.STRtree(countries), borders, document["source"])


def _padded(bounds, margin: float) -> tuple[float, float, float, float]:
    (south, west), (north, east) = bounds
    pad = max(north - south, east - west, 0.05) * margin
    return (max(west - pad, -180.0), max(south - pad, -90.0), min(east + pad, 180.0),
            min(north + pad, 90.0))


@lru_cache(maxsize=64)
def _background(box: tuple[float, float, float, float]) -> dict:
    west, south, east, north = box
    tolerance = max(east - west, north - south) * PIXEL_SHARE
    found = world()
    land = shapely.simplify(found.land_in(box), tolerance, preserve_topology=True)
    borders = shapely.simplify(shapely.clip_by_rect(found.borders, *box), tolerance)
    return {"land": _geojson(land, 4), "borders": _geojson(borders, 4)}


def background(bounds) -> dict:
    """Land and land borders around ``bounds`` ([[south, west], [north, east]]), as GeoJSON
    geometries (``{"land": ..., "borders": ...}``, None where there is none), simplified to about a
    pixel of a view of those bounds. Results are cached per (rounded) bounds."""
    box = tuple(round(v, 3) for v in _padded(bounds, MARGIN))
    return _background(box)


def _geojson(geometry, decimals: int) -> dict | None:
    if geometry.is_empty:
        return None
    return json.loads(shapely.to_geojson(
        shapely.transform(geometry, lambda xy: np.round(xy, decimals))))


# ---------------------------------------------------------------------------------- zone areas
@dataclass(frozen=True)
class ZoneAreas:
    """Approximate area of every placed zone (and of every parent) of a dataset.

    ``areas`` maps a zone id to its polygon (shapely, lon/lat degrees); ``parent_areas`` a parent
    id to the union of its zones' areas. Zones without a position have no area.
    """

    areas: dict
    parent_areas: dict

    def polygon(self, zone_id: str):
        """The area of a zone or, failing that, of a parent with this id (None if neither)."""
        found = self.areas.get(zone_id)
        return found if found is not None else self.parent_areas.get(zone_id)

    def features(self, zone_ids) -> list[dict | None]:
        """GeoJSON geometries of the given zones (None where a zone has no area)."""
        return [_feature_geometry(self.polygon(str(z))) for z in zone_ids]


@lru_cache(maxsize=8192)
def _cached_geojson(wkb: bytes) -> dict:
    return _geojson(shapely.from_wkb(wkb), AREA_DECIMALS)


def _feature_geometry(polygon) -> dict | None:
    return None if polygon is None or polygon.is_empty else _cached_geojson(polygon.wkb)


def _dataset_zones(od: ODMatrix) -> pd.DataFrame:
    """Every zone once (origins first), with its position and parent id (None without one)."""
    frames = []
    for zones in (od.origins, od.destinations):
        frames.append(pd.DataFrame({
            "id": zones.ids, "lat": zones.lat, "lon": zones.lon,
            "parent": zones.parent if zones.parent is not None else None}))
    frame = pd.concat(frames, ignore_index=True).drop_duplicates("id")
    return frame[np.isfinite(frame["lat"]) & np.isfinite(frame["lon"])].reset_index(drop=True)


def home_land(lat, lon) -> shapely.Geometry:
    """The land of the countries containing the points (all land around them when none does)."""
    found = world()
    inside = found.countries_of(lon, lat)
    if inside:
        return shapely.union_all(found.countries[inside])
    return found.land_in(_padded([[np.min(lat), np.min(lon)], [np.max(lat), np.max(lon)]], 1.0))


def voronoi_cells(lat, lon, land=None) -> np.ndarray:
    """Voronoi cell of each point, clipped to ``land`` (default: :func:`home_land`), as shapely
    polygons in lon/lat degrees, one per input point (points at one position share a cell).

    Every cell contains its point: points off the land keep a disc of half the distance to their
    nearest neighbour. An empty input gives an empty array.
    """
    lat, lon = np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)
    if lat.size == 0:
        return np.array([], dtype=object)
    scale = float(np.cos(np.radians(lat.mean())))
    xy = np.column_stack([lon * scale, lat])
    unique, inverse = np.unique(xy, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    points = shapely.points(unique)
    (x0, y0), (x1, y1) = unique.min(axis=0), unique.max(axis=0)
    pad = max(x1 - x0, y1 - y0, 0.4) * EXTEND
    frame = shapely.box(x0 - pad, y0 - pad, x1 + pad, y1 + pad)
    if len(unique) == 1:
        cells = np.array([frame])
    else:
        diagram = shapely.voronoi_polygons(shapely.multipoints(points), extend_to=frame,
                                           ordered=True)
        cells = shapely.intersection(np.asarray(shapely.get_parts(diagram)), frame)
    land = home_land(lat, lon) if land is None else land
    west, south, east, north = (x0 - pad) / scale, y0 - pad, (x1 + pad) / scale, y1 + pad
    local_land = shapely.clip_by_rect(land, west, south, east, north)
    local_land = shapely.transform(local_land, lambda c: c * np.array([scale, 1.0]))
    shapely.prepare(local_land)
    allowed = np.full(len(unique), local_land, dtype=object)
    off_land = ~shapely.contains_xy(local_land, unique[:, 0], unique[:, 1])
    if off_land.any():
        if len(unique) > 1:
            gaps, _ = cKDTree(unique).query(unique[off_land], k=2)
            radius = gaps[:, 1] / 2
        else:
            radius = np.array([pad])
        discs = shapely.buffer(points[off_land], radius, quad_segs=8)
        allowed[off_land] = shapely.union(local_land, discs)
    clipped = shapely.intersection(cells, allowed)
    clipped = shapely.transform(clipped, lambda c: c / np.array([scale, 1.0]))
    return clipped[inverse]


def zone_areas(od: ODMatrix) -> ZoneAreas:
    """Approximate areas of a dataset's zones and parents (compute once per dataset: ~1 s at
    3,130 zones; the app caches it per bundled dataset, or in the session for an upload)."""
    zones = _dataset_zones(od)
    cells = voronoi_cells(zones["lat"], zones["lon"])
    areas = dict(zip(zones["id"], cells))
    parent_areas = {}
    if zones["parent"].notna().any():
        for parent, members in zones.groupby("parent").groups.items():
            parent_areas[str(parent)] = shapely.union_all(cells[np.asarray(members)])
    return ZoneAreas(areas, parent_areas)
