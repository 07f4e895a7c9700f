"""What the Explore and Tradeoffs pages compute about one release or a sweep, apart from metrics.

* :func:`view` — the level (as loaded, or rolled up to parent zones) and area subset of a matrix
  the user chose; :func:`view_areas` lists the areas one can choose;
* :func:`top_flows` — the true top-k commutes with each mechanism's released count and error
  (the bars of thesis figures 5.1, 5.5, 5.6, 5.12);
* :func:`released_ranks` / :func:`rank_table` — the rank each release gives the true top flows
  (thesis figures 5.4, 5.9, 5.11, 5.15 and tables 5.1–5.4);
* :func:`summary_sentence` — what happened, in one plain sentence;
* :func:`theoretical_rmse` — the RMSE a mechanism is expected to have, from its closed-form
  variance (and exact mean, where it is biased);
* :func:`pass_rates` — the share of repeated draws that pass each planner check.

Pure NumPy/pandas; the pages only draw what these return.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd

from dpcore.metrics import PRESENT_AT, PlannerCheck
from dpcore.od import ODMatrix, ZoneSet


# ----------------------------------------------------------------------------- level and subset
def roll_up_possible(od: ODMatrix) -> bool:
    """Whether the matrix has a coarser level to roll up to (e.g. EDs within counties)."""
    return (od.has_parent_level and od.origins.parent_zones is not None
            and od.destinations.parent_zones is not None)


def _union(first: ZoneSet, second: ZoneSet) -> dict[str, str]:
    out = {str(i): str(label) for i, label in zip(first.ids, first.labels)}
    for zone_id, label in zip(second.ids, second.labels):
        out.setdefault(str(zone_id), str(label))
    return out


def view_areas(od: ODMatrix, rolled_up: bool = False) -> dict[str, str]:
    """Area id → label that :func:`view` can restrict to, in zone order.

    The parent zones (e.g. counties) when the viewed level has a parent level, else the zones of
    that level themselves (origins, then destination-only zones).
    """
    if roll_up_possible(od) and not rolled_up:
        return _union(od.origins.parent_zones, od.destinations.parent_zones)
    if rolled_up:
        if not roll_up_possible(od):
            raise ValueError(f"{od.name} has no parent level to roll up to.")
        return _union(od.origins.parent_zones, od.destinations.parent_zones)
    return _union(od.origins, od.destinations)


def view(od: ODMatrix, rolled_up: bool = False, areas=()) -> ODMatrix:
    """The matrix at the chosen level, restricted to commutes within the chosen areas.

    With a parent level, ``areas`` are parent ids (``subset_by_parent``: the thesis's Dublin City
    and Cavan + Leitrim ED subsets); otherwise they are zone ids, kept as origins and as
    destinations. Raises ValueError when nothing would be left to release.
    """
    matrix = od.aggregate() if rolled_up else od
    areas = tuple(map(str, areas))
    if areas:
        known = view_areas(od, rolled_up)
        unknown = [a for a in areas if a not in known]
        if unknown:
            raise ValueError(f"unknown area(s) {unknown[:3]} in {od.name}.")
        if matrix.has_parent_level:
            matrix = matrix.subset_by_parent(areas)
        else:
            wanted = set(areas)
            matrix = matrix.subset([z for z in matrix.origins.ids if z in wanted],
                                   [z for z in matrix.destinations.ids if z in wanted])
    if matrix.domain_size < 2 or matrix.n == 0:
        raise ValueError(f"The chosen areas leave {matrix.domain_size} possible commute(s) and "
                         f"{matrix.n} commuter(s): choose more areas (or none, for everything).")
    return matrix


def rng_for(seed: int, key: str) -> np.random.Generator:
    """The generator of mechanism ``key`` for draw ``seed``: its own stream, so a mechanism's
    release depends on the seed alone, not on which other mechanisms are run beside it."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(key.encode())]))
