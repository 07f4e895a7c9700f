"""A schematic layout for zones without coordinates, so that a flow map can still draw the flows.

A POWSCAR or LODES file uploaded alone names its zones but gives no positions; the Flow map then
places them here. The positions are **not geographic**: they only say which zones belong together
(same parent, e.g. the EDs of one county or the blocks of one tract) and which are large, the two
things a reader of a flow map looks for first.

* Zones are grouped by parent (when the data has a parent level), the groups ordered by size
  (commuters living or working there), largest first, clockwise from the top of one circle.
* Within a group, zones sit on a "sunflower" disc (Vogel's spiral, points at radius √i and angle
  i × the golden angle, which spreads any number of points evenly), the largest at the centre.
  A group's disc has an area proportional to its number of zones, so density is even.
* Without a parent level: up to :data:`CIRCLE_MAX` zones on one circle (largest at the top,
  clockwise; flows become chords, easy to follow), more on one sunflower disc.

The layout is returned in degrees around (0°, 0°) within ±:data:`SPAN`, where a web map's
projection barely distorts it; the map that draws it must not draw any real geography under it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix, ZoneSet

#: Half the extent of the layout, in degrees (Mercator stretches ±20° by at most 6 %).
SPAN = 20.0
#: Zones drawn on one circle at most when there is no parent level; more go on a disc.
CIRCLE_MAX = 60
GOLDEN_ANGLE = math.pi * (3 - math.sqrt(5))
#: Space between group discs on the circle, as a share of their radius.
GAP = 0.35


def needed(od: ODMatrix) -> bool:
    """True when no zone of ``od`` has a position (a map would have nothing to draw)."""
    return not (od.origins.has_coordinates.any() or od.destinations.has_coordinates.any())


def _circle(k: int) -> np.ndarray:
    """k points on the unit circle, clockwise from the top: (x, y)."""
    angle = math.pi / 2 - 2 * math.pi * np.arange(k) / max(k, 1)
    return np.column_stack([np.cos(angle), np.sin(angle)])


def _sunflower(k: int) -> np.ndarray:
    """k points evenly spread over the unit disc, the first at the centre: (x, y)."""
    i = np.arange(k)
    radius = np.sqrt(i / max(k - 1, 1)) if k > 1 else np.zeros(k)
    angle = i * GOLDEN_ANGLE
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])


def _zone_table(od: ODMatrix) -> pd.DataFrame:
    """Every distinct zone id of ``od`` (origins, then destinations not also origins), its
    size (residents + jobs) and its parent ('' without a parent level)."""
    residents = np.bincount(od.rows, weights=od.counts, minlength=od.n_origins)
    jobs = np.bincount(od.cols, weights=od.counts, minlength=od.n_destinations)
    frames = []
    for zones, size in ((od.origins, residents), (od.destinations, jobs)):
        parent = zones.parent if od.has_parent_level else np.full(len(zones), "", dtype=object)
        frames.append(pd.DataFrame({"id": zones.ids, "size": size, "parent": parent}))
    table = pd.concat(frames, ignore_index=True)
    return table.groupby("id", sort=False).agg(size=("size", "sum"), parent=("parent", "first"))


def positions(od: ODMatrix) -> pd.DataFrame:
    """The layout: indexed by zone id, columns ``size``, ``parent``, ``x`` and ``y`` (degrees);
    ``attrs["centres"]`` holds each parent's point (the centre of its disc)."""
    table = _zone_table(od)
    table["x"], table["y"] = 0.0, 0.0
    groups = (table.groupby("parent", sort=False)["size"].sum().sort_values(ascending=False,
                                                                             kind="stable"))
    if len(groups) == 1 and len(table) <= CIRCLE_MAX:
        order = table.sort_values("size", ascending=False, kind="stable").index
        table.loc[order, ["x", "y"]] = _circle(len(order))
        table["x"], table["y"] = table["x"] * SPAN, table["y"] * SPAN
        table.attrs["centres"] = {groups.index[0]: (0.0, 0.0)}
        return table
    counts = table.groupby("parent", sort=False).size()[groups.index]
    radii = np.sqrt(counts.to_numpy(dtype=float))                # disc area ∝ zones in it
    if len(groups) == 1:
        centres = np.zeros((1, 2))
    else:   # discs around one circle, each taking an arc in proportion to its diameter
        widths = 2 * radii * (1 + GAP)
        ring = widths.sum() / (2 * math.pi)
        ring = max(ring, radii.max() * (1 + GAP))                # two big discs do not overlap
        middle = (np.cumsum(widths) - widths / 2) / widths.sum()
        angle = math.pi / 2 - 2 * math.pi * middle
        centres = ring * np.column_stack([np.cos(angle), np.sin(angle)])
    for (parent, centre), radius in zip(zip(groups.index, centres), radii):
        members = table.index[table["parent"] == parent]
        order = table.loc[members, "size"].sort_values(ascending=False, kind="stable").index
        table.loc[order, ["x", "y"]] = centre + radius * _sunflower(len(order))
    extent = max(float(np.abs(table[["x", "y"]].to_numpy()).max()), 1e-9)
    scale = SPAN / extent
    table["x"], table["y"] = table["x"] * scale, table["y"] * scale
    table.attrs["centres"] = {parent: (float(c[0] * scale), float(c[1] * scale))
                              for parent, c in zip(groups.index, centres)}
    return table


def _placed(zones: ZoneSet, table: pd.DataFrame, parents: ZoneSet | None) -> ZoneSet:
    at = table.loc[zones.ids]
    return replace(zones, lat=at["y"].to_numpy(float), lon=at["x"].to_numpy(float),
                   parent_zones=parents)


def _placed_parents(parents: ZoneSet | None, centres: dict) -> ZoneSet | None:
    if parents is None:
        return None
    xy = np.array([centres.get(str(p), (np.nan, np.nan)) for p in parents.ids], dtype=float)
    return replace(parents, lat=xy[:, 1], lon=xy[:, 0])


def place(od: ODMatrix) -> ODMatrix:
    """``od`` with every zone (and parent zone) at its schematic position (see the module
    docstring); the counts and everything else unchanged."""
    table = positions(od)
    centres = table.attrs["centres"]
    origins = _placed(od.origins, table,
                      _placed_parents(od.origins.parent_zones, centres)
                      if od.has_parent_level else od.origins.parent_zones)
    destinations = _placed(od.destinations, table,
                           _placed_parents(od.destinations.parent_zones, centres)
                           if od.has_parent_level else od.destinations.parent_zones)
    return replace(od, origins=origins, destinations=destinations)
