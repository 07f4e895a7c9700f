"""The OD matrix as a grid for a heat map: which zones, in which order.

Statistics offices publish commuting as a table with origins down and destinations across; a heat
map of it shows the structure at a glance when the zones are in a meaningful order: grouped by
parent (e.g. county) with the largest parents first, and within a parent by size, so that each
county's block sits on the diagonal and its big towns at the block's top left.

A matrix is readable up to a few dozen zones a side. A larger one (3,126 × 3,130 EDs) is shown
either as its busiest block (the origins with the most residents × the destinations with the most
jobs) or rolled up to the parent level (every commuter counted, coarser).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import flows

#: Largest side drawn cell by cell; a larger matrix is cut to a block or rolled up.
MAX_SIDE = 60
BUSIEST, PARENT = "busiest", "parent"
CHOICES = {
    BUSIEST: "The busiest block: the origins with the most residents × the destinations with "
             "the most jobs (zone-level detail, but only part of the commuters)",
    PARENT: "Rolled up to the parent zones (every commuter counted, coarser zones; the "
            "released values are summed too, so their noise adds up)",
}


@dataclass(frozen=True)
class Grid:
    """What a heat map shows: zones in display order and the counts, rows = origins."""

    origin_ids: np.ndarray
    origin_labels: np.ndarray
    destination_ids: np.ndarray
    destination_labels: np.ndarray
    true: np.ndarray
    released: np.ndarray | None
    note: str

    @property
    def difference(self) -> np.ndarray | None:
        return None if self.released is None else self.released - self.true

    def to_frame(self) -> pd.DataFrame:
        """One row per cell shown, in display order (origin, destination, true, released,
        difference): the CSV download of the figure."""
        rows, cols = np.indices(self.true.shape)
        frame = pd.DataFrame({
            "origin_id": self.origin_ids[rows.ravel()],
            "origin": self.origin_labels[rows.ravel()],
            "destination_id": self.destination_ids[cols.ravel()],
            "destination": self.destination_labels[cols.ravel()],
            "true": self.true.ravel()})
        if self.released is not None:
            frame["released"] = self.released.ravel()
            frame["difference"] = self.difference.ravel()
        return frame


def zone_order(zones: ZoneSet, totals) -> np.ndarray:
    """Positions of ``zones`` in display order: parents by their total (largest first), then
    zones within a parent by their own total; without parents, by total alone. Ties keep the
    data's order."""
    totals = np.asarray(totals, dtype=float)
    frame = pd.DataFrame({"total": totals, "position": np.arange(len(totals))})
    if zones.parent is not None:
        frame["parent"] = zones.parent
        frame["parent_total"] = frame.groupby("parent")["total"].transform("sum")
        frame["parent_first"] = frame.groupby("parent")["position"].transform("min")
        keys = ["parent_total", "parent_first", "total", "position"]
        ascending = [False, True, False, True]
    else:
        keys, ascending = ["total", "position"], [False, True]
    return frame.sort_values(keys, ascending=ascending, kind="stable")["position"].to_numpy()


def needs_choice(od: ODMatrix, max_side: int = MAX_SIDE) -> bool:
    """Whether the matrix is too large to draw whole (more than ``max_side`` zones a side)."""
    return max(od.n_origins, od.n_destinations) > max_side


def grid(od: ODMatrix, true_counts, released=None, *, choice: str = BUSIEST,
         size: int = 40, max_side: int = MAX_SIDE) -> Grid:
    """The grid to draw: the whole matrix when it is small enough, otherwise the busiest
    ``size`` × ``size`` block or the parent-level matrix (``choice``), zones in
    :func:`zone_order`."""
    true_counts = np.asarray(true_counts, dtype=float).reshape(-1)
    original = od
    note = f"All {od.n_origins:,} origins × {od.n_destinations:,} destinations."
    if needs_choice(od, max_side):
        if choice == PARENT and od.has_parent_level:
            od, true_counts, released = flows.roll_up(od, true_counts, released)
            true_counts = true_counts.astype(float)
            note = "Rolled up to the parent zones, every commuter counted."
        elif choice in CHOICES:
            return _busiest(od, true_counts, released, min(size, max_side))
        else:
            raise ValueError(f"choice must be one of {', '.join(CHOICES)}; got {choice!r}")
    shape = (od.n_origins, od.n_destinations)
    true = true_counts.reshape(shape)
    rel = None if released is None else np.asarray(released, dtype=float).reshape(shape)
    rows = zone_order(od.origins, true.sum(axis=1))
    cols = zone_order(od.destinations, true.sum(axis=0))
    if choice == PARENT and needs_choice(original, max_side):
        # A subset rolled up keeps every parent zone; those outside it are empty in both.
        used = (true != 0) | (rel != 0) if rel is not None else true != 0
        rows, cols = rows[used.any(axis=1)[rows]], cols[used.any(axis=0)[cols]]
    return _take(od, true, rel, rows, cols, note)


def _busiest(od: ODMatrix, true_counts, released, size: int) -> Grid:
    true = true_counts.reshape(od.n_origins, od.n_destinations)
    residents, jobs = true.sum(axis=1), true.sum(axis=0)
    top_rows = np.sort(np.argsort(-residents, kind="stable")[:size])
    top_cols = np.sort(np.argsort(-jobs, kind="stable")[:size])
    rows = top_rows[zone_order(od.origins.take(top_rows), residents[top_rows])]
    cols = top_cols[zone_order(od.destinations.take(top_cols), jobs[top_cols])]
    shown = true[np.ix_(rows, cols)].sum()
    note = (f"The busiest {len(rows):,} origins (most residents) × {len(cols):,} destinations "
            f"(most jobs) of {od.n_origins:,} × {od.n_destinations:,}: "
            f"{shown:,.0f} of {true.sum():,.0f} commuters ({shown / max(true.sum(), 1):.0%}).")
    rel = None if released is None else np.asarray(released, dtype=float).reshape(true.shape)
    return _take(od, true, rel, rows, cols, note)


def _take(od: ODMatrix, true, released, rows, cols, note: str) -> Grid:
    block = np.ix_(rows, cols)
    return Grid(od.origins.ids[rows], od.origins.labels[rows], od.destinations.ids[cols],
                od.destinations.labels[cols], np.asarray(true[block], dtype=float),
                None if released is None else np.asarray(released[block], dtype=float), note)
