"""Targets on analyses for a flat publish (:func:`dpcore.interfaces.publish.publish`): the smallest
ε at which OpenDP's calibrated noise gives every answer of a family a 95 % interval within the
target (:mod:`dpcore.analyses.planning`).

A flat publish's intervals are those a published folder gets (:mod:`.published_analyses`:
discrete Laplace or discrete Gaussian noise of the calibrated scale, Base), so they depend on ε
only through the scale OpenDP calibrates. Calibrating takes OpenDP a binary search (about half a
second), so the search runs in two steps: the largest scale that meets the target, by bisection
on the closed forms (instant); then the smallest ε whose calibrated scale is at most that,
by bisection on ε around the guess scale ∝ 1/ε, to a relative precision of :data:`PRECISION`.
Targets on shares (:mod:`dpcore.analyses.share_targets`) are planned the same way, with the
delta method's half-widths of the share at the calibrated scale.
"""

from __future__ import annotations

import math

from dpcore.analyses import planning, share_targets
from dpcore.analyses.intervals import Interval
from dpcore.data.od import ODMatrix
from dpcore.evaluation.planner import EPSILON_RANGE
from dpcore.interfaces import publish
from dpcore.interfaces.published_analyses import PublishedNoise

PRECISION = 1e-3
#: The scales searched (commuters): far beyond any ε of the range at either end.
SCALE_RANGE = (1e-3, 1e6)
METHOD = ("closed form of the published folder's intervals (OpenDP's {noise}, Base): the worst "
          "95 % half-width over the answers, bisection on the scale, then on ε")

NO_SCALE = f"not met at any noise scale ≥ {SCALE_RANGE[0]:g} (the whole-number step of the noise)"


def rule(mechanism: str, scale: float, n: float, d: int) -> Interval:
    """The 95 % interval rule of a flat publish's noise at ``scale``."""
    variance = publish.Noise(mechanism, math.nan, 0.0, publish.SUBSTITUTION, scale, None,
                             None).variance
    key = "discrete_gaussian" if mechanism == publish.GAUSSIAN else "discrete_laplace"
    return Interval(key, PublishedNoise(key, scale, variance), "base", n=n, d=d)


def plan(od: ODMatrix, truth, mechanism: str, target, delta: float = 0.0,
         neighbours: str = publish.SUBSTITUTION) -> planning.Plan:
    """The smallest ε of a flat publish with ``mechanism`` meeting ``target``: a target on sums
    (:class:`planning.Target`) or on shares (:class:`share_targets.ShareTarget`, the delta
    method's half-widths and Fieller's g)."""
    if isinstance(target, share_targets.ShareTarget):
        found = share_targets.share_answers(od, truth, target)
        plan_rule, count = share_targets.plan_rule, lambda: int(found.names.size)
    else:
        found = planning.family_answers(od, truth, target.family)
        plan_rule = planning.plan_rule
        count = lambda: int(planning.usable(target, found).totals.size)
    name = f"publish: {publish.MECHANISMS[mechanism]}"
    # largest scale meeting the target: the smallest 1/scale
    by_precision = plan_rule(name, target, found,
                             lambda inverse: rule(mechanism, 1 / inverse, od.n, od.domain_size),
                             1 / SCALE_RANGE[1], 1 / SCALE_RANGE[0])
    if not math.isfinite(by_precision.epsilon):   # not even at scale 0.001: a row, so that the
        # mechanisms planned beside it are still reported
        return planning.Plan(name, target, math.inf, NO_SCALE)
    epsilon = _epsilon_for_scale(mechanism, 1 / by_precision.epsilon, delta, neighbours)
    if not math.isfinite(epsilon):
        return planning.Plan(name, target, math.inf, planning.UNREACHABLE)
    calibrated = rule(mechanism, publish.calibrate(mechanism, epsilon, delta, neighbours).scale,
                      od.n, od.domain_size)
    at = plan_rule(name, target, found, lambda _: calibrated, epsilon, epsilon)   # the decider
    noise = "discrete Gaussian" if mechanism == publish.GAUSSIAN else "discrete Laplace"
    return planning.Plan(name, target, epsilon, METHOD.format(noise=noise), at.worst_answer,
                         at.worst_half_width, count())


def _epsilon_for_scale(mechanism: str, largest: float, delta: float, neighbours: str) -> float:
    """The smallest ε of the range whose calibrated scale is at most ``largest`` (inf: none),
    by bisection around the guess scale ∝ 1/ε, to :data:`PRECISION`."""

    def scale(epsilon: float) -> float:
        return publish.calibrate(mechanism, epsilon, delta, neighbours).scale

    low, high = EPSILON_RANGE
    if scale(high) > largest:
        return math.inf
    guess = min(max(scale(1.0) / largest, low), high)
    lo, hi = max(guess / 1.25, low), min(guess * 1.25, high)
    while lo > low and scale(lo) <= largest:
        lo = max(lo / 1.25, low)
    while scale(hi) > largest:
        hi = min(hi * 1.25, high)
    if scale(lo) <= largest:   # met already at the range's lowest ε
        hi = lo
    while hi / lo > 1 + PRECISION:
        middle = math.sqrt(lo * hi)
        if scale(middle) <= largest:
            hi = middle
        else:
            lo = middle
    return hi
