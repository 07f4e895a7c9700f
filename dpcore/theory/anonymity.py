"""k-anonymity beside DP, and local vs global sensitivity, on the commuting table.

* k-anonymity (Samarati 1998, Sweeney 2002; the seeds' textbook chapter 003 l.439–469): with
  (origin, destination) as the quasi-identifiers, a published table is k-anonymous when every
  published cell holds at least k commuters; the usual way there is to suppress the smaller
  cells. It is a property of the output, not of the process, so it promises nothing about what
  two releases together reveal (the differencing attack of the first lesson).
* Local vs global sensitivity (003 l.1743): the local sensitivity of f at x is the most one
  neighbour changes f(x); the global sensitivity is its maximum over every x. Noise scaled to
  the local sensitivity is not DP: the noise level itself depends on the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.theory.privacy_theory import whole_number


@dataclass(frozen=True)
class KAnonymity:
    """What suppressing the cells below k does to the table."""

    k: int
    cells: int              # nonzero cells
    cells_suppressed: int
    people: int
    people_suppressed: int


def k_anonymise(od: ODMatrix, k: int) -> KAnonymity:
    """Suppress every nonzero cell with fewer than ``k`` commuters."""
    k = whole_number("k", k)
    small = od.counts < k
    return KAnonymity(k, int(od.nonzero), int(small.sum()), int(od.n),
                      int(od.counts[small].sum()))


@dataclass(frozen=True)
class MedianSensitivity:
    """The median of values in [0, B] held one per person (substitution neighbours)."""

    median: float
    local: float            # how far one person's change can move the median here
    global_: float          # B: how far it can move on the worst table
    changes_to_move: int    # people who must change before the median itself moves


def median_sensitivity(values: np.ndarray, counts: np.ndarray, bound: float) -> MedianSensitivity:
    """Lower median of ``values`` repeated ``counts`` times, its local sensitivity (one person
    replaced by any value in [0, B]) and how many replacements it takes to move it.

    With the sorted values x₁ ≤ … ≤ x_n and the lower median at m = ⌈n/2⌉, replacing one value
    moves the median to x_{m−1} or x_{m+1} at most, so the local sensitivity is
    max(x_{m+1} − x_m, x_m − x_{m−1}). When x_m's run of equal values spans positions
    first…last, min(m − first, last − m) + 1 replacements are needed to move it (so the local
    sensitivity is 0 here, yet positive on a table that many − 1 replacements away).
    """
    # One entry per distinct value (several cells share a distance, e.g. 0 within a zone).
    x, inverse = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    c = np.bincount(inverse, weights=np.asarray(counts, dtype=np.int64)).astype(np.int64)
    keep = c > 0
    x, c = x[keep], c[keep]
    n = int(c.sum())
    if n < 3:
        raise ValueError("The median's sensitivity needs at least 3 people.")
    ends = np.cumsum(c)               # position (1-based) of the last copy of each value
    m = (n + 1) // 2

    def at(position: int) -> float:   # the value at a 1-based sorted position
        return float(x[np.searchsorted(ends, position)])

    median = at(m)
    local = max(at(m + 1) - median, median - at(m - 1))
    group = int(np.searchsorted(ends, m))
    first, last = int(ends[group] - c[group] + 1), int(ends[group])
    changes = min(m - first, last - m) + 1
    return MedianSensitivity(median, local, float(bound), changes)
