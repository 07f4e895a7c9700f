"""The planner's targets on shares: "the share within 10 km of every zone within ±2 percentage
points at 95 %", and the smallest ε per mechanism and for a flat publish at which every share's
interval meets it (:mod:`.planning` does the same for sums).

A target names a family of shares (:data:`FAMILIES`, each zone's on the work side: the share of
its workers' commutes shorter than ``km``, commutes with a zone without position left out; or
the share of its jobs held by its residents) and an allowed 95 % half-width in percentage
points. At an ε each share's half-width is the delta method's, z·sd from
:func:`.shares.sd` at the true A and C (:mod:`.shares`, the interval the Analyses give it), and
the share is given at all only while Fieller's g = z²·Var B/B² stays below
:data:`.shares.FIELLER_G`: an answer's ratio to what it is allowed is the larger of
half-width/allowed and g/FIELLER_G, and the worst answer decides. Both fall as ε grows (every
variance does), so bisection on log ε (:func:`.planning.smallest_epsilon`) finds the smallest ε.

Planned only where the share interval is offered (:data:`.shares.OFFERED`: the central noises,
raw releases); for a flat publish, OpenDP's discrete Laplace or Gaussian at the calibrated scale
(:func:`dpcore.interfaces.publish_targets.plan_shares`). Shares whose true total B is 0 are left
out (no share). The shares are computed from the true table: like the ε planner, the answer is
computed from confidential data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore import mechanisms
from dpcore.analyses import planning, selection as sel, shares
from dpcore.analyses.answers import block_ends
from dpcore.analyses.intervals import PUBLISHED_ONLY, Interval
from dpcore.data.od import DENSE_CELL_LIMIT, ODMatrix
from dpcore.mechanisms.sparse_vector import SparseVector

FAMILIES = {"share_within": "share of every zone's workers' commutes under {km:g} km",
            "share_live_and_work": "share of every zone's jobs held by its residents"}
CLOSED = ("delta method: the worst share's 95 % half-width (and Fieller's g, for the share to "
          "be given at all) at the true A and C, bisection on ε")
#: Distances computed at once (origins × a chunk of destinations).
CHUNK_CELLS = 2_000_000
NOT_OFFERED = ("no share interval for {key}: the delta method is offered for the central "
               "noises only (docs/ANALYSES.md, Shares)")


@dataclass(frozen=True)
class ShareTarget:
    """Every share of ``family`` within ± ``within`` (a fraction: 0.02 = ±2 percentage points)
    at 95 %; ``km`` the distance of ``share_within``."""

    family: str
    within: float
    km: float = 10.0
    relative = False   # read by planning.Plan.row: the margin is in points, not relative

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family of shares {self.family!r}; valid: "
                             f"{', '.join(FAMILIES)}")
        if not (math.isfinite(self.within) and 0 < self.within < 1):
            raise ValueError("a share's margin must be between 0 and 100 percentage points; got "
                             f"{self.within * 100:g}")
        if not (math.isfinite(self.km) and self.km > 0):
            raise ValueError(f"the distance of a share must be a positive number of km; got "
                             f"{self.km!r}")

    def describe(self) -> str:
        return (f"{FAMILIES[self.family].format(km=self.km)} within ±{self.within * 100:g} "
                "percentage points at 95 %")


def parse_target(family: str, within: str, km: float = 10.0) -> ShareTarget:
    """A target from text: ``within`` in percentage points ("2" = ±2 points)."""
    text = str(within).strip()
    if text.endswith("%"):
        raise ValueError(f"a share's margin is in percentage points: write {text[:-1]} for "
                         f"±{text[:-1]} points (got {within!r})")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"the margin must be a number of percentage points (2); got "
                         f"{within!r}") from None
    return ShareTarget(family, value / 100, km)


@dataclass(frozen=True)
class ShareAnswers:
    """The family's shares at the truth: names, A and C, and their cells."""

    names: np.ndarray
    a: np.ndarray
    c: np.ndarray
    a_cells: np.ndarray
    c_cells: np.ndarray


def share_answers(od: ODMatrix, truth, target: ShareTarget) -> ShareAnswers:
    """Every zone's share (work side: each destination zone) with a positive true total, all at
    once — the sums :func:`.shares.within` and :func:`.shares.live_and_work` give one zone at a
    time (the tests check they agree). ValueError when no zone has one, when (distance) the zones
    have no positions, or on a sparse (beyond dense) table."""
    if isinstance(truth, SparseVector):
        raise ValueError(f"targets on shares are planned on tables of up to "
                         f"{DENSE_CELL_LIMIT:,} cells (this one is sparse): plan a subset of "
                         "areas, or a target on sums")
    grid = np.asarray(truth, dtype=float).reshape(od.n_origins, od.n_destinations)
    if target.family == "share_within":
        sel.require_positions(od)
        every = np.arange(od.n_origins)
        a, c, m_a, m_c = (np.zeros(od.n_destinations) for _ in range(4))
        step = max(1, CHUNK_CELLS // od.n_origins)
        for start in range(0, od.n_destinations, step):
            cols = slice(start, min(start + step, od.n_destinations))
            distance = sel.distance_km(*block_ends(od, every, cols))
            near, far = distance < target.km, distance >= target.km   # NaN: neither
            block = grid[:, cols]
            a[cols] = block.sum(axis=0, where=near)
            c[cols] = block.sum(axis=0, where=far)
            m_a[cols], m_c[cols] = near.sum(axis=0), far.sum(axis=0)
    else:   # A: the zone's own cell (when it is an origin too); C: the rest of its column
        origin = {zone: i for i, zone in enumerate(od.origins.ids)}
        row = np.array([origin.get(zone, -1) for zone in od.destinations.ids])
        own = row >= 0
        a = np.where(own, grid[np.maximum(row, 0), np.arange(od.n_destinations)], 0.0)
        c = grid.sum(axis=0) - a
        m_a = own.astype(float)
        m_c = od.n_origins - m_a
    keep = a + c > 0
    if not keep.any():
        raise ValueError(f"no share to plan for: no zone has commuters in the "
                         f"{FAMILIES[target.family].format(km=target.km)}")
    return ShareAnswers(np.asarray(od.destinations.ids, dtype=str)[keep], a[keep], c[keep],
                        m_a[keep], m_c[keep])


def half_widths(rule: Interval, found: ShareAnswers) -> np.ndarray:
    """Each share's 95 % half-width (a fraction) at its true A and C."""
    return rule.z * shares.sd(rule, found.a, found.a_cells, found.c, found.c_cells)


def ratios(rule: Interval, target: ShareTarget, found: ShareAnswers) -> np.ndarray:
    """Each share's distance from meeting the target: ≤ 1 when its half-width is within the
    margin and the share is given (Fieller's g below its limit)."""
    total = found.a + found.c
    fieller = rule.z ** 2 * rule.variance(found.a_cells + found.c_cells, total) / total ** 2
    return np.maximum(half_widths(rule, found) / target.within, fieller / shares.FIELLER_G)


def plan_rule(name: str, target: ShareTarget, found: ShareAnswers, rule_at,
              low: float = planning.EPSILON_RANGE[0],
              high: float = planning.EPSILON_RANGE[1]) -> planning.Plan:
    """The smallest value in [low, high] at which ``rule_at(value)`` meets the target on every
    share (ε, or the inverse of a noise scale), the deciding share and its half-width."""
    epsilon = planning.smallest_epsilon(lambda e: float(ratios(rule_at(e), target, found).max()),
                                        low, high)
    rule = rule_at(epsilon if math.isfinite(epsilon) else high)
    i = int(np.argmax(ratios(rule, target, found)))
    return planning.Plan(name, target, epsilon,
                         CLOSED if math.isfinite(epsilon) else planning.UNREACHABLE,
                         str(found.names[i]), float(half_widths(rule, found)[i]),
                         int(found.names.size))


def plan(od: ODMatrix, truth, mechanism_specs, target: ShareTarget) -> list[planning.Plan]:
    """Each mechanism's smallest ε for the target (raw release; the offered laws only)."""
    found = share_answers(od, truth, target)
    plans = []
    for spec in mechanism_specs:
        key, params = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))
        if key not in shares.OFFERED or key in PUBLISHED_ONLY:
            plans.append(planning.Plan(key, target, float("nan"), NOT_OFFERED.format(key=key)))
            continue
        plans.append(plan_rule(key, target, found, lambda e, k=key, p=params: Interval(
            k, mechanisms.build(k, epsilon=e, **p), n=od.n, d=od.domain_size)))
    return plans
