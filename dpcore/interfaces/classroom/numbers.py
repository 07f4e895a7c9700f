"""A number question ("how many minutes is your commute?"): local mean estimation with Duchi,
Jordan and Wainwright's one-bit mechanism on [0, B].

The phone clamps its value v to [0, B], maps it to x = 2v/B − 1 ∈ [−1, 1] and sends one bit,
1 with probability

    P(1 | v) = 1/2 + x·(e^ε − 1) / (2(e^ε + 1)),

so the two outputs' probabilities differ by at most a factor e^ε (ε-LDP) [DJW13, §4; DJW18,
§4.2.3: the output ±C, C = (e^ε + 1)/(e^ε − 1), sent here as its sign]. Writing
k = (e^ε − 1)/(2(e^ε + 1)) and p̂ the share of ones among n phones, the class's mean is estimated
without bias by

    v̂ = B/2 · (1 + (p̂ − 1/2)/k)        (E[p̂] = 1/2 + k·x̄),

with variance ≤ B²·C²/(4n) ≈ B²/(ε²n) for small ε — against (B/(εn))²·2 for the central Laplace
mechanism. The interval: the count of ones is a sum of independent Bernoulli bits with mean
n·(1/2 + k·x̄) (a Poisson binomial); the equal-tailed Clopper–Pearson interval for a binomial
probability keeps its coverage for it [Hoe56: a Poisson binomial's tails are no heavier than the
binomial's of the same mean beyond one unit of it], mapped through the increasing map above and
clipped to [0, B]. The phone's randomiser is ``number`` in ``ui/classroom/js/randomisers.js``.

References: [DJW13] J. C. Duchi, M. I. Jordan, M. J. Wainwright, "Local privacy and statistical
minimax rates", FOCS 2013; [DJW18] the same, "Minimax optimal procedures for locally private
estimation", JASA 113 (2018); [Hoe56] W. Hoeffding, "On the distribution of the number of
successes in independent trials", Ann. Math. Statist. 27 (1956).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.interfaces.classroom import ClassroomError
from dpcore.interfaces.classroom.coins import clopper_pearson

#: The round's key in the rounds table (where a mechanism's name goes).
NUMBER = "number"
#: Largest upper end B a teacher may set (minutes in a day).
MAX_BOUND = 1440.0


def slope(epsilon: float) -> float:
    """k = (e^ε − 1) / (2(e^ε + 1)): how much P(1) moves per unit of x = 2v/B − 1."""
    return math.expm1(epsilon) / (2 * (math.exp(epsilon) + 1))


def one_probability(value: float, bound: float, epsilon: float) -> float:
    """P(the phone sends 1) for the value ``value`` (clamped to [0, bound])."""
    x = 2 * min(max(float(value), 0.0), bound) / bound - 1
    return 0.5 + x * slope(epsilon)


def mean_from_share(share: float, bound: float, epsilon: float) -> float:
    """The unbiased mean estimate B/2·(1 + (share − 1/2)/k) for a share of ones."""
    return bound / 2 * (1 + (share - 0.5) / slope(epsilon))


def check_bound(bound) -> float:
    """The upper end B as stored, or ClassroomError."""
    try:
        value = float(bound)
    except (TypeError, ValueError):
        raise ClassroomError(f"The largest answer must be a number; got {bound!r:.40}.") from None
    if not 1 <= value <= MAX_BOUND:
        raise ClassroomError(f"The largest answer must be between 1 and {MAX_BOUND:g}.")
    return value


@dataclass(frozen=True)
class NumberEstimate:
    """The class's mean on [0, B] from ``ones`` of ``n`` bits, with its exact 95 % interval."""

    n: int
    ones: int
    mean: float                    # unbiased; may fall outside [0, B]
    low: float                     # within [0, B]
    high: float
    bound: float

    @property
    def shown(self) -> float:
        return min(max(self.mean, 0.0), self.bound)


def estimate(ones: int, n: int, bound: float, epsilon: float,
             confidence: float = 0.95) -> NumberEstimate:
    """The class's mean from its bits (see the module docstring)."""
    p_low, p_high = clopper_pearson(ones, n, confidence)
    clip = lambda v: min(max(v, 0.0), bound)     # noqa: E731
    return NumberEstimate(n, ones, mean_from_share(ones / n, bound, epsilon),
                          clip(mean_from_share(p_low, bound, epsilon)),
                          clip(mean_from_share(p_high, bound, epsilon)), bound)
