"""Which part of a matrix a release is made of: the level, an area subset, a population size.

A planner rarely releases a whole national table at its finest level: the thesis compares counties
with electoral divisions, Dublin City with Cavan + Leitrim (its figure 5.17), and low-population
experiments with Microsoft's dBitFlip (Ding, Kulkarni, Yekhanin, "Collecting telemetry data
privately", NeurIPS 2017) shrink the population while keeping the domain. A :class:`View` names such a choice as
plain data, so that it can key caches, travel in URLs and be replayed on the command line;
:func:`select` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix, ZoneSet

LEVEL_AS_LOADED, LEVEL_PARENT = "as_loaded", "parent"
LEVELS = (LEVEL_AS_LOADED, LEVEL_PARENT)
#: The thesis's ED subsets (figure 5.17): Dublin City, and the rural Cavan + Leitrim.
THESIS_SUBSETS = (("Dublin City",), ("Cavan", "Leitrim"))


@dataclass(frozen=True)
class View:
    """A level (as loaded, or rolled up to parent zones), an area subset (empty: everything) and
    optionally a population size ``n`` (commuters drawn at random without replacement)."""

    level: str = LEVEL_AS_LOADED
    areas: tuple[str, ...] = ()
    n: int | None = None

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"unknown level {self.level!r}; valid: {', '.join(LEVELS)}")
        object.__setattr__(self, "areas", tuple(map(str, self.areas)))

    @property
    def rolled_up(self) -> bool:
        return self.level == LEVEL_PARENT

    @property
    def whole(self) -> View:
        """The same level and areas with every commuter (the view before any subsampling)."""
        return View(self.level, self.areas)


def _union(first: ZoneSet, second: ZoneSet) -> dict[str, str]:
    out = {str(i): str(label) for i, label in zip(first.ids, first.labels)}
    for zone_id, label in zip(second.ids, second.labels):
        out.setdefault(str(zone_id), str(label))
    return out


def areas(od: ODMatrix, rolled_up: bool = False) -> dict[str, str]:
    """Area id → label that a :class:`View` can restrict to, in zone order.

    The parent zones (e.g. counties) when the matrix has a parent level, else the zones
    themselves (origins, then destination-only zones).
    """
    if rolled_up and not od.has_parent_level:
        raise ValueError(f"{od.name} has no parent level to roll up to.")
    if od.has_parent_level:
        return _union(od.origins.parent_zones, od.destinations.parent_zones)
    return _union(od.origins, od.destinations)


def select(od: ODMatrix, view: View) -> ODMatrix:
    """The matrix at the view's level, restricted to commutes within its areas (not subsampled:
    see :func:`subsample`, whose randomness comes from the release's seed).

    With a parent level, areas are parent ids (``subset_by_parent``: the thesis's Dublin City and
    Cavan + Leitrim ED subsets); otherwise zone ids, kept as origins and as destinations. Raises
    ValueError when nothing would be left to release.
    """
    matrix = od.aggregate() if view.rolled_up else od
    if view.areas:
        known = areas(od, view.rolled_up)
        unknown = [a for a in view.areas if a not in known]
        if unknown:
            raise ValueError(f"unknown area(s) {unknown[:3]} in {od.name}.")
        if matrix.has_parent_level:
            matrix = matrix.subset_by_parent(view.areas)
        else:
            wanted = set(view.areas)
            matrix = matrix.subset([z for z in matrix.origins.ids if z in wanted],
                                   [z for z in matrix.destinations.ids if z in wanted])
    if matrix.domain_size < 2 or matrix.n == 0:
        raise ValueError(f"The chosen areas leave {matrix.domain_size} possible commute(s) and "
                         f"{matrix.n} commuter(s): choose more areas (or none, for everything).")
    return matrix


def subsample(od: ODMatrix, n: int, rng: np.random.Generator) -> ODMatrix:
    """``n`` commuters drawn without replacement from the matrix (same zones and domain).

    The population-size experiment of a thesis draft that tested Microsoft's dBitFlip (Ding,
    Kulkarni, Yekhanin, NeurIPS 2017) below the paper's populations: fewer people, same map.
    Multivariate hypergeometric over the non-zero cells, so every commuter is equally likely to be
    kept.
    """
    n = int(n)
    if not 0 < n <= od.n:
        raise ValueError(f"the subsample size must be between 1 and n = {od.n:,}; got {n:,}.")
    kept = rng.multivariate_hypergeometric(od.counts, n, method="marginals")
    return ODMatrix.from_pairs(f"{od.name} ({n:,} commuters)", od.origins, od.destinations,
                               od.rows, od.cols, kept, od.description)


def comparisons(od: ODMatrix, chosen: View) -> list[tuple[str, View]]:
    """Versions of a dataset worth comparing (thesis figures 5.13 and 5.17): rolled up, the
    thesis's subsets where the data has those areas, the areas chosen now, and everything."""
    out = []
    if od.has_parent_level:
        out.append(("Rolled up to parent zones", View(LEVEL_PARENT)))
        known = areas(od)
        out += [(" + ".join(group), View(LEVEL_AS_LOADED, group)) for group in THESIS_SUBSETS
                if all(a in known for a in group)]
    if chosen.areas:
        out.append(("Chosen areas", chosen.whole))
    out.append(("Everything as loaded", View()))
    return out
