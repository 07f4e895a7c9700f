"""A 95 % interval for the true count behind each released count, from the mechanism's law.

Explore draws one on every released bar. Each interval [low, high] is a confidence set: over the
noise, it holds the cell's true count t with probability at least 95 % (``CONFIDENCE``). With the
error Z = raw − t of the mechanism's raw estimate and a margin a with P[|Z| ≤ a] ≥ 95 %:

* **Laplace** (scale b): a = b·ln(1/α) exactly (P[|Z| > a] = e^{−a/b}), α = 5 %.
* **Discrete Laplace** (ratio r): the smallest whole a with 2r^{a+1}/(1 + r) ≤ α.
* **Gaussian** (σ): a = z_{1−α/2}·σ exactly.
* **Local mechanisms** (GRR, unary encoding, local hashing, Hadamard, sketches…): the estimate is
  an affine map of a sum of n independent reports, so a normal approximation with the exact
  variance at the cell's count (the mechanism's ``variance``): a = z_{1−α/2}·√Var(t). Exact in the
  limit of many reports; the Classroom (a handful of reports) uses exact binomial laws instead.
* **Stability histogram** (Laplace b, threshold τ): a published value r gives [r − a, r + a], an
  unpublished cell [0, τ + a]: whenever |Z| ≤ a the truth is inside either way.
* **Top-k**: a selected cell's count carries Laplace noise of scale b_cnt (same as Laplace); a
  cell not selected is published as 0 and the release says nothing more about it (no interval).
* **Baselines (not DP)**: the set of true counts that could have given the release, which holds
  with certainty: suppression [0, threshold − 1] for a 0; rounding to base B ±B/2; random rounding
  ±(B − 1); cell key every count that some cell key maps to the published one.

Since every true count is ≥ 0, each interval is cut at 0 (a confidence set intersected with the
possible values keeps its coverage). Post-processing: Base-Pos and Post-Pos clip at 0, a monotone
map of each cell alone, so [max(0, r − a), r + a] still holds the truth whenever |Z| ≤ a (a clipped
0 means raw ≤ 0, hence t ≤ a). Other post-processings move a count by an amount that depends on
the other cells; for them no interval is given (``PER_CELL`` lists the ones that act cell by cell).

The width uses the cell's true count where the law depends on it (local mechanisms, cell key):
Explore shows the truth beside the release anyway. A publisher's margin, which must not read the
rows, is :mod:`dpcore.interfaces.publish`'s business.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.mechanisms.base import LOCAL, Mechanism

CONFIDENCE = 0.95
#: Post-processings that map each cell on its own, monotonically: the interval carries over.
PER_CELL = frozenset({"base", "base_pos", "post_pos"})


@dataclass(frozen=True)
class Intervals:
    """Per cell: ``low`` and ``high`` (NaN where there is none) and how they were obtained."""

    low: np.ndarray
    high: np.ndarray
    how: str

    @property
    def present(self) -> np.ndarray:
        """Where a cell has an interval."""
        return np.isfinite(self.low) & np.isfinite(self.high)


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


def _symmetric(released: np.ndarray, margin, how: str) -> Intervals:
    margin = np.broadcast_to(np.asarray(margin, dtype=float), released.shape)
    return Intervals(released - margin, released + margin, how)


def _laplace_margin(scale: float, confidence: float) -> float:
    return scale * math.log(1 / (1 - confidence))


def _discrete_laplace_margin(ratio: float, confidence: float) -> float:
    """Smallest whole a with P[|Z| > a] = 2r^{a+1}/(1 + r) ≤ 1 − confidence."""
    target = (1 - confidence) * (1 + ratio) / 2
    return float(max(math.ceil(math.log(target) / math.log(ratio) - 1 - 1e-12), 0))


def _cell_key_bounds(mechanism: Mechanism, released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every true count that some cell key maps to the published count (certain bounds)."""
    from dpcore.mechanisms.baselines import KEY_RANGE, ptable

    reach = int(np.abs(ptable(mechanism.ptable)).max()) + int(mechanism.threshold)
    keys = np.arange(KEY_RANGE)
    low, high = np.full(released.shape, np.nan), np.full(released.shape, np.nan)
    for i, value in enumerate(released):
        if not np.isfinite(value):
            continue
        candidates = np.arange(max(0, int(value) - reach), int(value) + reach + 1)
        published = mechanism.perturb(np.repeat(candidates, KEY_RANGE),
                                      np.tile(keys, candidates.size))
        published[np.repeat(candidates, KEY_RANGE) == 0] = 0.0   # an empty cell stays 0
        possible = np.unique(np.repeat(candidates, KEY_RANGE)[published == value])
        if possible.size:
            low[i], high[i] = possible.min(), possible.max()
    return low, high


def _raw_intervals(mechanism: Mechanism, true_counts: np.ndarray, released: np.ndarray,
                   n: int, d: int, confidence: float) -> Intervals:
    key = mechanism.key
    if key == "laplace":
        return _symmetric(released, _laplace_margin(mechanism.scale, confidence),
                          "exact (Laplace law)")
    if key == "discrete_laplace":
        return _symmetric(released, _discrete_laplace_margin(mechanism.alpha, confidence),
                          "exact (discrete Laplace law)")
    if key == "gaussian":
        return _symmetric(released, _z(confidence) * mechanism.sigma, "exact (normal law)")
    if key == "stability_histogram":
        margin = _laplace_margin(mechanism.scale, confidence)
        found = _symmetric(released, margin, "exact (Laplace law and the threshold τ)")
        hidden = released == 0
        found.low[hidden], found.high[hidden] = 0.0, mechanism.tau + margin
        return found
    if key == "topk":
        found = _symmetric(released, _laplace_margin(mechanism.count_scale, confidence),
                           "exact for selected commutes (Laplace law); none for the others")
        found.low[released == 0] = found.high[released == 0] = np.nan
        return found
    if key == "suppression":
        hidden = released == 0
        return Intervals(np.where(hidden, 0.0, released),
                         np.where(hidden, mechanism.threshold - 1.0, released),
                         "certain (counts below the threshold are hidden; not DP)")
    if key == "rounding":
        base = mechanism.base
        return Intervals(released - base // 2, released + (base - 1) // 2,
                         "certain (rounding; not DP)")
    if key == "random_rounding":
        return _symmetric(released, mechanism.base - 1.0, "certain (random rounding; not DP)")
    if key == "cell_key":
        return Intervals(*_cell_key_bounds(mechanism, released),
                         "certain (every count a cell key could perturb to it; not DP)")
    variance = (mechanism.variance(np.asarray(true_counts, dtype=np.int64), n=n, d=d)
                if mechanism.model == LOCAL else None)
    if variance is None:
        nothing = np.full(released.shape, np.nan)
        return Intervals(nothing, nothing.copy(), "none (no closed form for this mechanism)")
    return _symmetric(released, _z(confidence) * np.sqrt(np.asarray(variance, dtype=float)),
                      "normal approximation with the exact variance")


def release_intervals(mechanism: Mechanism, true_counts, released, n: int, d: int,
                      postprocess: str, confidence: float = CONFIDENCE) -> Intervals:
    """The interval of each listed cell: its true count, its released count (after
    ``postprocess``), in a table of n commuters over d cells."""
    true_counts = np.asarray(true_counts, dtype=float)
    released = np.asarray(released, dtype=float)
    if postprocess not in PER_CELL:
        nothing = np.full(released.shape, np.nan)
        return Intervals(nothing, nothing.copy(),
                         f"none after {postprocess} (it moves each count by an amount that "
                         "depends on the other cells)")
    found = _raw_intervals(mechanism, true_counts, released, n, d, confidence)
    low = np.where(np.isfinite(released), np.maximum(found.low, 0.0), np.nan)
    high = np.where(np.isfinite(released), np.maximum(found.high, low), np.nan)
    return Intervals(low, high, found.how)


#: Short words for a legend: how each mechanism's interval was obtained.
SHORT_HOW = (("exact", "exact"), ("normal", "normal approx."), ("certain", "certain"),
             ("none", "none"))


def short_how(how: str) -> str:
    """The first word of :attr:`Intervals.how` a legend has room for."""
    return next((short for start, short in SHORT_HOW if how.startswith(start)), how)


def of_top_flows(frame: pd.DataFrame, built: dict[str, Mechanism], n: int, d: int,
                 postprocess: str, confidence: float = CONFIDENCE
                 ) -> tuple[pd.DataFrame, dict[str, str]]:
    """:func:`dpcore.scoring.ranks.top_flows` with each row's ``low`` and ``high``, and how
    each mechanism's intervals were obtained (``built``: the mechanisms by key)."""
    out = frame.assign(low=np.nan, high=np.nan)
    how = {}
    for key, rows in frame.groupby("mechanism", sort=False):
        found = release_intervals(built[key], rows["true"].to_numpy(),
                                  rows["released"].to_numpy(), n, d, postprocess, confidence)
        out.loc[rows.index, "low"], out.loc[rows.index, "high"] = found.low, found.high
        how[key] = found.how
    return out, how
