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
from dpcore.analyses.sums import group_sums, once_per_table, parent_labels, within_parent_sums
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


def commute_block(od: ODMatrix, chosen: sel.Selection, side: str):
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


def block_ends(od: ODMatrix, rows, cols) -> tuple:
    """Home and work positions of the block's cells, broadcast as (rows, 1) and (1, cols)."""
    o, d = od.origins, od.destinations
    return o.lat[rows][:, None], o.lon[rows][:, None], d.lat[cols][None, :], d.lon[cols][None, :]


def distance(od: ODMatrix, chosen: sel.Selection, side: str = "work",
             bands=BANDS_KM) -> list[Query]:
    """Commutes of the selection by distance band (km, home to work); commutes with a zone
    without position in their own part."""
    rows, cols = commute_block(od, chosen, side)
    edges = np.asarray(bands, dtype=float)
    if edges.size == 0 or edges[0] != 0 or np.any(np.diff(edges) <= 0):
        raise ValueError("distance bands must start at 0 km and increase")
    km = sel.distance_km(*block_ends(od, rows, cols))
    labels = np.where(np.isnan(km), edges.size, np.searchsorted(edges, km, side="right") - 1)
    parts = tuple(f"{a:g}–{b:g} km" for a, b in zip(edges[:-1], edges[1:])) \
        + (f"{edges[-1]:g}+ km", NO_POSITION)
    return [Query(f"distance_{side}", chosen.name, parts,
                  lambda values: group_sums(values, od, rows, cols, labels, len(parts)))]


def direction(od: ODMatrix, chosen: sel.Selection, side: str = "work") -> list[Query]:
    """Commutes of the selection by 8 compass sectors: the direction of the other end as seen
    from the selection (work side: where the workers come from; home side: where residents go)."""
    rows, cols = commute_block(od, chosen, side)
    ends = block_ends(od, rows, cols)
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


def _once_per_vector(compute: Callable) -> Callable:
    """``compute(values)`` once per vector for queries that each read a part of it: the last two
    vectors are kept, by identity (:func:`evaluate` sums the truth and a release in turn; a
    released vector is never changed in place)."""
    memo: list = []

    def once(values):
        for held, result in memo:
            if held is values:
                return result
        result = compute(values)
        memo[:] = [(values, result)] + memo[:1]
        return result
    return once


COMPARED = ("inflow", "outflow", "live_and_work")


def comparison(od: ODMatrix, level: str = "zones") -> list[Query]:
    """Inflow, outflow and live-and-work for every zone (``"zones"``) or every parent area
    (``"parents"``), as OnTheMap's area comparison. Each area's answers are the row and column
    sums of the whole table (one pass per vector) less the commutes within it."""
    every_o, every_d = np.arange(od.n_origins), np.arange(od.n_destinations)
    if level == "parents":
        if od.origins.parent is None:
            raise ValueError("this data has no parent level: compare its zones instead")
        parents, o_label, d_label = parent_labels(od)
        inside = d_label >= 0
        n_in_o = np.bincount(o_label, minlength=len(parents))
        n_in_d = np.bincount(d_label[inside], minlength=len(parents))

        def areas(values) -> dict:
            line = group_sums(values, od, every_o, every_d, "row")[0]
            column = group_sums(values, od, every_o, every_d, "col")[0]
            within, cells = within_parent_sums(values, od)
            residents = np.bincount(o_label, weights=line, minlength=len(parents))
            jobs = np.bincount(d_label[inside], weights=column[inside], minlength=len(parents))
            return {"inflow": (jobs - within, (od.n_origins - n_in_o) * n_in_d),
                    "outflow": (residents - within, n_in_o * (od.n_destinations - n_in_d)),
                    "live_and_work": (within, cells)}

        shared = _once_per_vector(areas)
        return [Query(kind, parent, ("",),
                      lambda values, k=kind, i=i: tuple(x[i:i + 1] for x in shared(values)[k]))
                for i, parent in enumerate(parents) for kind in COMPARED]
    if level != "zones":
        raise ValueError(f"compare 'zones' or 'parents'; got {level!r}")
    def positions():   # public structure of the table, made once (sums.once_per_table)
        ids = np.union1d(od.origins.ids, od.destinations.ids)
        index = pd.Index(ids)                              # hashed: string compares are slow
        o_in_ids = index.get_indexer(od.origins.ids)       # each origin's place among ids
        d_in_ids = index.get_indexer(od.destinations.ids)
        has = np.zeros(ids.size, dtype=bool)
        has[o_in_ids[np.isin(o_in_ids, d_in_ids)]] = True  # zones on both sides
        d_of = np.full(ids.size, -1, dtype=np.int64)
        d_of[d_in_ids] = np.arange(od.n_destinations)
        pair_o = np.flatnonzero(has[o_in_ids])             # origins that are destinations too,
        pair_o = pair_o[np.argsort(o_in_ids[pair_o])]      # in the order of ids
        return tuple(ids), o_in_ids, d_in_ids, has, pair_o, d_of[o_in_ids[pair_o]]

    ids, o_in_ids, d_in_ids, has, pair_o, pair_d = once_per_table(od, "zone_positions",
                                                                  positions)

    def zones(values) -> dict:
        within = np.zeros(len(ids))
        within[has] = group_sums(values, od, pair_o, pair_d, "pairs")[0]
        found = {"live_and_work": (within, has.astype(np.int64))}
        for kind, by, at in (("outflow", "row", o_in_ids), ("inflow", "col", d_in_ids)):
            line, count = group_sums(values, od, every_o, every_d, by)
            sums, cells = np.zeros(len(ids)), np.zeros(len(ids), dtype=np.int64)
            sums[at], cells[at] = line - within[at], count - has[at]
            found[kind] = (sums, cells)
        return found

    shared = _once_per_vector(zones)
    return [Query(kind, "every zone", ids, lambda values, k=kind: shared(values)[k])
            for kind in COMPARED]


def evaluate(queries: list[Query], truth, released=None, interval=None,
             limit: int | None = None) -> pd.DataFrame:
    """One row per answer: the true value (NaN when ``truth`` is None: a published folder), the
    released one (the true one when no release is given), its 95 % interval and how it was
    obtained (``interval``: a rule with ``bounds(answers, cells)`` such as :class:`Interval`,
    or with ``all_bounds(queries, answers, cells)``: :mod:`dpcore.analyses.simulated`, or a
    rule that needs each query's cells, not only their number:
    :class:`dpcore.interfaces.published_analyses.ParentBound`; a rule
    whose interval is around a debiased estimate, :mod:`dpcore.analyses.synthesized`, adds an
    ``estimate`` column after ``released``). Ranked
    queries are sorted by the released (else true) value, the first ``limit`` kept."""
    rule = interval or Interval(None)
    if not queries:
        return pd.DataFrame(columns=COLUMNS)
    answered = []
    for query in queries:
        true, cells = query.compute(truth) if truth is not None else (None, None)
        answer, cells = query.compute(released) if released is not None else (true, cells)
        answered.append((true, np.asarray(answer, dtype=float), np.asarray(cells)))
    if hasattr(rule, "all_bounds"):   # simulated (every query on each draw) or per-query cells
        bounds = rule.all_bounds(queries, [a for _, a, _ in answered],
                                 [c for _, _, c in answered])
    else:   # a law, elementwise: one call for every query's answers (not a call per query)
        low, high = rule.bounds(np.concatenate([a for _, a, _ in answered]),
                                np.concatenate([c for _, _, c in answered]))
        split = np.cumsum([a.size for _, a, _ in answered])[:-1]
        bounds = list(zip(np.split(low, split), np.split(high, split)))
    # a rule whose interval is not around the released answer (OnTheMap's, debiased) gives
    # (low, high, estimate): the estimate gets its own column
    debiased = any(len(bound) == 3 for bound in bounds)
    extra = ["estimate"] if debiased else []
    names, columns = [], {name: [] for name in COLUMNS[2:-1] + extra}
    for query, (true, answer, cells), bound in zip(queries, answered, bounds):
        low, high = bound[:2]
        estimate = bound[2] if len(bound) == 3 else np.full(len(query.parts), np.nan)
        size = len(query.parts)
        true = np.full(size, np.nan) if true is None else np.asarray(true, dtype=float)
        parts, rank = np.asarray(query.parts, dtype=object), np.full(size, np.nan)
        if query.ranked:   # largest first, ties in part order, NaN last (as a stable pandas sort)
            keep = np.argsort(-answer, kind="stable")[:limit]
            parts, true, answer, low, high, cells, estimate = (
                np.asarray(x)[keep] for x in (parts, true, answer, low, high, cells, estimate))
            rank, size = np.arange(1.0, keep.size + 1), keep.size
        names.append((query.analysis, query.selection, size))
        for name, value in zip(columns, (parts, rank, true, answer, low, high, cells, estimate)):
            columns[name].append(np.asarray(value))
    # one frame for every query: a frame per query costs a millisecond, seconds over the 9,300
    # queries of the national counties' comparison
    found = {name: np.concatenate(value) for name, value in columns.items()}
    sizes = [size for _, _, size in names]
    for at, name in enumerate(COLUMNS[:2]):   # analysis, selection
        found[name] = np.repeat(np.array([n[at] for n in names], dtype=object), sizes)
    found["method"] = rule.method
    shown = COLUMNS[:6] + ["estimate"] + COLUMNS[6:] if debiased else COLUMNS
    return pd.DataFrame({name: found[name] for name in shown})
