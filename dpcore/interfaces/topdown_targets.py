"""Targets on analyses for a TopDown publish (:func:`dpcore.interfaces.publish.publish_topdown`):
the level shares of ρ, from a small grid, that meet a target (:mod:`dpcore.analyses.planning`) at
the smallest ε, and that ε.

The answers are those a TopDown folder gives (:mod:`.published_analyses`, the same rule): at the
level they are asked (the fine zones, or a parent level), a sum of k cells is within ±k·M, M that
level's published margin (:func:`dpcore.evaluation.margins.topdown_margins`). M is a
*simultaneous* bound — it holds for every cell of every level at once with probability ≥ 95 %
(union bound, the fit's worst case) — so the ε planned is what this conservative bound needs;
the errors actually drawn are mostly far smaller, and a per-answer 95 % interval would need less.

M depends on ε only through ρ and the shares (level l's discrete Gaussian has σ = Δ₂/√(2ρ·share),
and M falls as every σ does), so the search needs OpenDP only at the end: per grid point, the
smallest ρ meeting the target by bisection on the closed form (instant); the shares needing the
least ρ need the least ε (ε grows with ρ, whatever the shares); that ρ becomes an ε by OpenDP's own
zCDP → (ε, δ) conversion, checked with :func:`publish.topdown_budget` (as the publish spends it) and
raised by the relative :data:`PRECISION` until the check passes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dpcore.analyses import planning
from dpcore.data.od import ODMatrix
from dpcore.evaluation import margins
from dpcore.evaluation.planner import EPSILON_RANGE
from dpcore.interfaces import publish
from dpcore.interfaces.ledger import role_names
from dpcore.interfaces.published_analyses import topdown_rule
from dpcore.mechanisms import topdown
from dpcore.mechanisms.central import l2_sensitivity

#: Shares are multiples of 1/STEPS, each at least one step (so at least :data:`publish.MIN_SHARE`).
STEPS = 10
PRECISION = 1e-3
#: The ρ searched: far beyond any ε of the range at either end.
RHO_RANGE = (1e-12, 1e4)
METHOD = ("bound of a TopDown folder's answers: a sum of k cells of the {level} within ±k·M, M "
          "the level's margin (holds for every cell of every level at once with ≥ 95 %: "
          "simultaneous and conservative); shares {shares} of ρ ({how}); smallest ρ by "
          "bisection, ε by OpenDP's zCDP conversion")


def share_grid(levels: int) -> list[tuple[float, ...]]:
    """Every split of ρ over ``levels`` levels (top first) in multiples of 1/STEPS, none 0."""
    if levels == 1:
        return [(1.0,)]
    return [tuple(k / STEPS for k in (*cuts, STEPS - sum(cuts)))
            for cuts in itertools.product(range(1, STEPS), repeat=levels - 1)
            if sum(cuts) < STEPS]


def level_margins(rho: float, shares, cells: list[int], neighbours: str) -> list[int]:
    """Each level's published margin (top first) when ρ is split by ``shares``."""
    scales = [l2_sensitivity(neighbours) / math.sqrt(2 * rho * share) for share in shares]
    return margins.topdown_margins(scales, cells)


def level_index(count: int, level: str) -> int:
    """The position (top first) of the role ``level`` ("fine level", "parent level", …) among
    ``count`` levels; ValueError naming the levels there are."""
    roles = role_names(count, top_first=True)
    if level not in roles:
        raise ValueError(f"the data has {count} level(s) ({', '.join(roles)}): no {level!r} to "
                         "answer at")
    return roles.index(level)


def _epsilon_of(rho: float, delta: float, neighbours: str) -> float:
    """ε at ``delta`` of a discrete Gaussian spending ρ, by OpenDP's own conversion."""
    dp = publish._dp()
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T=float)
    d_in = l2_sensitivity(neighbours)
    measurement = space >> dp.m.then_gaussian(scale=d_in / math.sqrt(2 * rho))
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measurement), float(delta))
    return float(approx.map(d_in)[0])


@dataclass
class Proposal:
    """The best shares' plan, and the even split's for comparison (the same plan when the data
    has one level)."""

    shares: tuple
    best: planning.Plan
    even_shares: tuple
    even: planning.Plan

    def plans(self) -> list[planning.Plan]:
        return [self.best] if self.shares == self.even_shares else [self.best, self.even]


def plan(od: ODMatrix, target: planning.Target, *, level: str = "fine level",
         delta: float = publish.DEFAULT_DELTA,
         neighbours: str = publish.SUBSTITUTION) -> Proposal:
    """The shares (top level first) and smallest ε of a TopDown publish of ``od`` meeting
    ``target`` at ``level``, and the even split's ε."""
    levels = topdown.hierarchy(od)
    asked = level_index(len(levels), level)
    at = levels[asked].od
    found = planning.usable(target, planning.family_answers(at, at.to_dense(), target.family))
    limit = planning.allowed(target, found)
    cells = [lv.od.domain_size for lv in levels]
    names = [lv.name for lv in levels]

    def worst(margin: int) -> float:
        return float(np.max(planning.half_widths(topdown_rule(margin), found) / limit))

    def least_rho(shares) -> float:
        return planning.smallest_epsilon(
            lambda rho: worst(level_margins(rho, shares, cells, neighbours)[asked]),
            *RHO_RANGE)

    def plan_for(shares, how: str) -> planning.Plan:
        rho = least_rho(shares)
        name = f"publish: TopDown, shares {', '.join(f'{s:g}' for s in shares)}"
        text = METHOD.format(level=level, shares=", ".join(f"{s:g}" for s in shares), how=how)
        epsilon = _epsilon_of(rho, delta, neighbours) if math.isfinite(rho) else math.inf
        epsilon = max(epsilon, EPSILON_RANGE[0])
        while epsilon <= EPSILON_RANGE[1]:   # as the publish spends it: OpenDP's ρ, scales raised
            _, budget = publish.topdown_budget(epsilon, delta, shares, names, neighbours)
            margin = margins.topdown_margins([b.scale for b in budget], cells)[asked]
            if worst(margin) <= 1:
                break
            epsilon *= 1 + PRECISION
        else:
            return planning.Plan(name, target, math.inf, planning.UNREACHABLE)
        answer, width = planning.decisive(target, found, topdown_rule(margin))
        return planning.Plan(name, target, epsilon, text, answer, width, int(found.totals.size))

    grid = share_grid(len(levels))
    needs = [least_rho(shares) for shares in grid]
    best = grid[int(np.argmin(needs))]
    even = tuple(publish.even_shares(len(levels)))
    best_plan = plan_for(best, "the grid's best: least ε")
    return Proposal(best, best_plan, even,
                    best_plan if best == even else plan_for(even, "even split"))
