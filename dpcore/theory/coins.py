"""Coin-flip randomised response (Warner 1965, in the two-coin form of the seeds' textbook).

Each person flips a coin: heads, they answer truthfully; tails, they flip again and answer
"yes" on heads, "no" on tails. So P[yes | truth yes] = 3/4, P[yes | truth no] = 1/4 and the answer
is ε-DP with ε = ln((3/4)/(1/4)) = ln 3. If a share q of people would truly say yes, the
expected share of "yes" answers is E[p] = 1/4 + q/2, so q̂ = 2p − 1/2 (003 l.715–741; 000 §2.1).

The interval is exact: Clopper–Pearson on the count of "yes" answers (a binomial with success
probability 1/4 + q/2), mapped through q = 2p − 1/2 and clipped to [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpcore.theory.privacy_theory import checked_array

EPSILON = math.log(3.0)
P_YES_IF_YES, P_YES_IF_NO = 0.75, 0.25


def expected_yes(q):
    """E[p] = 1/4 + q/2."""
    return P_YES_IF_NO + checked_array("q", q, low=0.0, high=1.0) / 2


def estimate(p):
    """q̂ = 2p − 1/2 (unbiased; may fall outside [0, 1])."""
    return 2 * checked_array("p", p, low=0.0, high=1.0) - 0.5


def clopper_pearson(yes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact equal-tailed interval for a binomial proportion from ``yes`` of ``n``."""
    if not (0 <= yes <= n and n >= 1):
        raise ValueError(f"need 0 ≤ yes ≤ n and n ≥ 1; got yes={yes}, n={n}.")
    alpha = 1 - level
    low = 0.0 if yes == 0 else stats.beta.ppf(alpha / 2, yes, n - yes + 1)
    high = 1.0 if yes == n else stats.beta.ppf(1 - alpha / 2, yes + 1, n - yes)
    return float(low), float(high)


@dataclass(frozen=True)
class Survey:
    """One run of the two-coin survey on ``n`` people of whom ``truth_yes`` would say yes."""

    n: int
    truth_yes: int
    yes: int                      # "yes" answers received
    level: float = 0.95

    @property
    def truth(self) -> float:
        return self.truth_yes / self.n

    @property
    def share_yes(self) -> float:
        return self.yes / self.n

    @property
    def estimate(self) -> float:
        return float(estimate(self.share_yes))

    @property
    def interval(self) -> tuple[float, float]:
        """Clopper–Pearson on p, mapped by q = 2p − 1/2 and clipped to [0, 1]."""
        low, high = clopper_pearson(self.yes, self.n, self.level)
        return max(0.0, 2 * low - 0.5), min(1.0, 2 * high - 0.5)


def survey(n: int, truth_yes: int, rng: np.random.Generator) -> Survey:
    """Everyone flips the coins: ``Binomial(truth_yes, 3/4) + Binomial(n − truth_yes, 1/4)``
    "yes" answers (the sum of the individual answers, drawn per group)."""
    if not (0 <= truth_yes <= n and n >= 1):
        raise ValueError(f"need 0 ≤ truth_yes ≤ n and n ≥ 1; got {truth_yes}, {n}.")
    yes = rng.binomial(truth_yes, P_YES_IF_YES) + rng.binomial(n - truth_yes, P_YES_IF_NO)
    return Survey(int(n), int(truth_yes), int(yes))


def crowd_surveys(n: int, truth_yes: int, sizes, rng: np.random.Generator) -> list[Survey]:
    """The survey run on random crowds of each size (people drawn without replacement from the
    ``n``, so the crowd's own truth is hypergeometric)."""
    out = []
    for size in sizes:
        size = int(min(size, n))
        crowd_yes = int(rng.hypergeometric(truth_yes, n - truth_yes, size))
        out.append(survey(size, crowd_yes, rng))
    return out
