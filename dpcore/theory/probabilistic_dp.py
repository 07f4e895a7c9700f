"""A worked example of OnTheMap's privacy analysis on one workplace of the current table.

For the Learn page's lesson on (ε, δ)-probabilistic DP (issue 37). Everything is computed with
:mod:`dpcore.mechanisms.onthemap`'s own functions, so the lesson shows what the mechanism does:

* the ε-DP prior α = m/(e^ε − 1) (:func:`~dpcore.mechanisms.onthemap.pure_alpha`) against the
  workplace's own size: the prior's total weight kα is k/(e^ε − 1) times the m real workers,
  whatever m is;
* the smaller α the probabilistic test allows at the chosen δ
  (:func:`~dpcore.mechanisms.onthemap.smallest_alpha`), its δ bound, and the worst privacy loss
  that α leaves on the outputs the δ excuses, ln(1 + m/α)
  (:func:`~dpcore.mechanisms.onthemap.max_ratio`);
* the synthetic distribution of the workplace's origins under each prior, E[s_i]/m =
  (n_i + α)/(n + kα) (:func:`~dpcore.mechanisms.onthemap.destination_mean`), beside the truth.

The test runs on the workplace's own m workers whatever its size: the δ bound is the exact sum
up to :data:`~dpcore.mechanisms.onthemap.TEST_MAX_WORKERS` workers and, beyond, the bounded sum
of :func:`~dpcore.mechanisms.onthemap.pdp_delta_bound` (never below the exact one, at most about
1 % above it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix
from dpcore.mechanisms import onthemap as otm


@dataclass(frozen=True)
class WorkedExample:
    destination: int          # the workplace's index in the table's destinations
    workers: int              # n(d): published exactly, as m, when m = n(d)
    origins: int              # k, the candidate origins
    epsilon: float
    delta: float
    pure_alpha: float         # m/(e^ε − 1) for the real workplace
    prior_weight: float       # kα/m for the ε-DP prior: k/(e^ε − 1)
    counts: np.ndarray        # the workplace's histogram over the origins
    test_alpha: float         # the smallest α passing the (ε, δ)-probabilistic test
    test_delta: float         # the test's δ bound at test_alpha (≤ delta)
    worst_epsilon: float      # ln(1 + m/α) at test_alpha: the loss the δ may leave
    shares: pd.DataFrame      # per origin: truth, epsilon_dp, test (expected synthetic shares)

    def distance(self, prior: str) -> float:
        """Total-variation distance between the real shares and the expected synthetic
        shares under ``prior`` (``"epsilon_dp"`` or ``"test"``)."""
        return float(np.abs(self.shares[prior] - self.shares["truth"]).sum() / 2)


def smallest_workplace(od: ODMatrix) -> int:
    """The index of the non-empty workplace with the fewest workers (the lesson's default)."""
    totals = od.destination_totals().astype(float)
    totals[totals == 0] = np.inf
    return int(np.argmin(totals))


def worked_example(od: ODMatrix, destination: int, epsilon: float,
                   delta: float) -> WorkedExample:
    """The example for workplace ``destination`` of ``od`` at (ε, δ); a ValueError for an
    empty workplace."""
    here = od.cols == destination
    real = np.bincount(od.rows[here], weights=od.counts[here],
                       minlength=od.n_origins).astype(np.int64)
    workers, k = int(real.sum()), real.size
    if workers == 0:
        raise ValueError("This workplace has no workers: choose another.")
    test_alpha = otm.smallest_alpha(workers, k, float(epsilon), float(delta))
    pure = otm.pure_alpha(workers, epsilon)
    shares = pd.DataFrame({
        "origin": od.origins.labels,
        "truth": real / workers,
        "epsilon_dp": otm.destination_mean(real, pure, workers) / workers,
        "test": otm.destination_mean(real, test_alpha, workers) / workers})
    return WorkedExample(
        destination=int(destination), workers=workers, origins=k, epsilon=float(epsilon),
        delta=float(delta), pure_alpha=pure, prior_weight=k / math.expm1(epsilon),
        counts=real, test_alpha=test_alpha,
        test_delta=otm.pdp_delta(test_alpha, workers, k, epsilon),
        worst_epsilon=math.log(otm.max_ratio(test_alpha, workers)),
        shares=shares.sort_values("truth", ascending=False, kind="stable")
        .reset_index(drop=True))
