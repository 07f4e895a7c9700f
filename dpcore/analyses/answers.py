"""OnTheMap's analyses as sums of OD cells: each answer true vs released, with its interval.

A :class:`Query` names an analysis, its selection, the parts it answers (one per group: a band,
a zone, …) and how to sum a count vector into them; :func:`evaluate` runs queries on the true
table and a release and returns one row per answer. The *side* says which end of the commute the
selection is: ``"work"`` (where the commuters work: destinations) or ``"home"`` (origins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpcore.analyses import selection as sel
from dpcore.analyses.intervals import Interval
from dpcore.analyses.sums import group_sums
from dpcore.data.od import ODMatrix

SIDES = ("work", "home")
#: Distance bands (km), OnTheMap-like: the last is open-ended.
BANDS_KM = (0.0, 10.0, 25.0, 50.0)
COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
SAME_PLACE = "same place (no direction)"
NO_POSITION = "position unknown"
COLUMNS = ["analysis", "selection", "part", "rank", "true", "released", "low", "high", "cells",
           "method"]


@dataclass(frozen=True)
class Query:
    """One analysis on one selection: ``compute(values)`` → (sum per part, cells per part)."""

    analysis: str
    selection: str
    parts: tuple[str, ...]
    compute: Callable
    ranked: bool = False


def _where(mask) -> np.ndarray:
    return np.flatnonzero(mask)


def _check_side(side: str) -> None:
    if side not in SIDES:
        raise ValueError(f"the side must be one of {', '.join(SIDES)}; got {side!r}")


def flows(od: ODMatrix, chosen: sel.Selection) -> list[Query]:
    """Inflow (work in the selection, live outside), outflow (live in it, work outside),
    live-and-work (both), and the totals: jobs in it and employed residents."""
    inside_o, inside_d = _where(chosen.origins), _where(chosen.destinations)
    outside_o, outside_d = _where(~chosen.origins), _where(~chosen.destinations)
    every_o, every_d = np.arange(od.n_origins), np.arange(od.n_destinations)
    blocks = (("inflow", outside_o, inside_d), ("outflow", inside_o, outside_d),
              ("live_and_work", inside_o, inside_d), ("jobs", every_o, inside_d),
              ("employed_residents", inside_o, every_d))
    return [Query(name, chosen.name, ("",),
                  lambda values, r=rows, c=cols: group_sums(values, od, r, c))
            for name, rows, cols in blocks]


def destinations(od: ODMatrix, chosen: sel.Selection, side: str = "work") -> list[Query]:
    """Ranked: where the selection's workers live (work side) or where its residents work (home
    side), one part per zone."""
    _check_side(side)
    if side == "work":
        rows, cols, by, ids = np.arange(od.n_origins), _where(chosen.destinations), "row", \
            od.origins.ids
    else:
        rows, cols, by, ids = _where(chosen.origins), np.arange(od.n_destinations), "col", \
            od.destinations.ids
    return [Query(f"destination_{side}", chosen.name, tuple(ids),
                  lambda values: group_sums(values, od, rows, cols, by), ranked=True)]


#: Most cells whose distances one distance or direction analysis computes (8 bytes each, a few
#: arrays at once): a selection of 588 zones out of 85,000 national tracts.
GEOMETRY_CELL_LIMIT = 50_000_000


def _block(od: ODMatrix, chosen: sel.Selection, side: str):
    """The selection's commutes: all homes × its workplaces, or its homes × all workplaces."""
    _check_side(side)
    sel.require_positions(od)
    if side == "work":
        rows, cols = np.arange(od.n_origins), _where(chosen.destinations)
    else:
        rows, cols = _where(chosen.origins), np.arange(od.n_destinations)
    if rows.size * cols.size > GEOMETRY_CELL_LIMIT:
        raise ValueError(f"the selection {chosen.name!r} spans {rows.size * cols.size:,} commutes, "
                         f"more than the {GEOMETRY_CELL_LIMIT:,} whose distances one analysis "
                         "computes: select a smaller area for distance and direction")
    return rows, cols


def _ends(od: ODMatrix, rows, cols) -> tuple:
    """Home and work positions of the block's cells, broadcast as (rows, 1) and (1, cols)."""
    o, d = od.origins, od.destinations
    return o.lat[rows][:, None], o.lon[rows][:, None], d.lat[cols][None, :], d.lon[cols][None, :]


def distance(od: ODMatrix, chosen: sel.Selection, side: str = "work",
             bands=BANDS_KM) -> list[Query]:
    """Commutes of the selection by distance band (km, home to work); commutes with a zone
    without position in their own part."""
    rows, cols = _block(od, chosen, side)
    edges = np.asarray(bands, dtype=float)
    if edges.size == 0 or edges[0] != 0 or np.any(np.diff(edges) <= 0):
        raise ValueError("distance bands must start at 0 km and increase")
    km = sel.distance_km(*_ends(od, rows, cols))
    labels = np.where(np.isnan(km), edges.size, np.searchsorted(edges, km, side="right") - 1)
    parts = tuple(f"{a:g}–{b:g} km" for a, b in zip(edges[:-1], edges[1:])) \
        + (f"{edges[-1]:g}+ km", NO_POSITION)
    return [Query(f"distance_{side}", chosen.name, parts,
                  lambda values: group_sums(values, od, rows, cols, labels, len(parts)))]


def direction(od: ODMatrix, chosen: sel.Selection, side: str = "work") -> list[Query]:
    """Commutes of the selection by 8 compass sectors: the direction of the other end as seen
    from the selection (work side: where the workers come from; home side: where residents go)."""
    rows, cols = _block(od, chosen, side)
    ends = _ends(od, rows, cols)
    bearing = sel.bearing_degrees(*ends)
    same = (ends[0] == ends[2]) & (ends[1] == ends[3])
    if side == "work":   # bearing from the workplace towards the home
        bearing = (bearing + 180.0) % 360.0
    sector = np.floor(np.nan_to_num((bearing + 22.5) % 360.0) / 45.0).astype(np.int64)
    labels = np.where(np.isnan(bearing), 9, np.where(same, 8, sector))
    parts = COMPASS + (SAME_PLACE, NO_POSITION)
    return [Query(f"direction_{side}", chosen.name, parts,
                  lambda values: group_sums(values, od, rows, cols, labels, len(parts)))]


def paired(od: ODMatrix, home: sel.Selection, work: sel.Selection) -> list[Query]:
    """Commuters living in ``home`` and working in ``work`` (A → B)."""
    rows, cols = _where(home.origins), _where(work.destinations)
    return [Query("paired", f"{home.name} → {work.name}", ("",),
                  lambda values: group_sums(values, od, rows, cols))]


def comparison(od: ODMatrix, level: str = "zones") -> list[Query]:
    """Inflow, outflow and live-and-work for every zone (``"zones"``) or every parent area
    (``"parents"``)."""
    if level == "parents":
        if od.origins.parent is None:
            raise ValueError("this data has no parent level: compare its zones instead")
        return [query for parent in dict.fromkeys(od.origins.parent)
                for query in flows(od, sel.parent(od, parent))[:3]]
    if level != "zones":
        raise ValueError(f"compare 'zones' or 'parents'; got {level!r}")
    ids = np.union1d(od.origins.ids, od.destinations.ids)
    o_at = {z: i for i, z in enumerate(od.origins.ids)}
    d_at = {z: i for i, z in enumerate(od.destinations.ids)}
    both = [z for z in ids if z in o_at and z in d_at]
    pair_o = np.array([o_at[z] for z in both], dtype=np.int64)
    pair_d = np.array([d_at[z] for z in both], dtype=np.int64)
    every_o, every_d = np.arange(od.n_origins), np.arange(od.n_destinations)

    has = np.array([z in o_at and z in d_at for z in ids], dtype=bool)

    def per_zone(kind):
        def compute(values):
            within = np.zeros(ids.size)
            within[has] = group_sums(values, od, pair_o, pair_d, "pairs")[0]
            if kind == "live_and_work":
                return within, has.astype(np.int64)
            if kind == "outflow":
                line, count = group_sums(values, od, every_o, every_d, "row")
                at = {z: i for i, z in enumerate(od.origins.ids)}
            else:
                line, count = group_sums(values, od, every_o, every_d, "col")
                at = {z: i for i, z in enumerate(od.destinations.ids)}
            sums, cells = np.zeros(ids.size), np.zeros(ids.size, dtype=np.int64)
            for k, z in enumerate(ids):
                if z in at:
                    sums[k], cells[k] = line[at[z]] - within[k], count[at[z]] - has[k]
            return sums, cells
        return compute

    return [Query(kind, "every zone", tuple(ids), per_zone(kind))
            for kind in ("inflow", "outflow", "live_and_work")]


def evaluate(queries: list[Query], truth, released=None, interval=None,
             limit: int | None = None) -> pd.DataFrame:
    """One row per answer: the true value (NaN when ``truth`` is None: a published folder), the
    released one (the true one when no release is given), its 95 % interval and how it was
    obtained (``interval``: a rule with ``bounds(answers, cells)`` such as :class:`Interval`,
    or with ``all_bounds(queries, answers, cells)``: :mod:`dpcore.analyses.simulated`). Ranked queries are sorted by the released (else true)
    value, the first ``limit`` kept."""
    rule = interval or Interval(None)
    answered = []
    for query in queries:
        true, cells = query.compute(truth) if truth is not None else (None, None)
        answer, cells = query.compute(released) if released is not None else (true, cells)
        answered.append((true, answer, cells))
    if hasattr(rule, "all_bounds"):   # a simulated rule: every query on each of its draws
        bounds = rule.all_bounds(queries, [a for _, a, _ in answered],
                                 [c for _, _, c in answered])
    else:                              # a law: each answer's interval from (answer, cells)
        bounds = [rule.bounds(answer, cells) for _, answer, cells in answered]
    frames = []
    for query, (true, answer, cells), (low, high) in zip(queries, answered, bounds):
        frame = pd.DataFrame({
            "analysis": query.analysis, "selection": query.selection, "part": list(query.parts),
            "rank": np.nan, "true": np.nan if true is None else true, "released": answer,
            "low": low, "high": high, "cells": cells, "method": rule.method})
        if query.ranked:
            frame = frame.sort_values("released", ascending=False, kind="stable").head(limit)
            frame["rank"] = np.arange(1, len(frame) + 1)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(
        columns=COLUMNS)
