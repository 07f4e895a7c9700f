"""Heavy hitters under ε-LDP for domains too large for a frequency oracle over every cell: PEM.

Prefix extending method (PEM) [WLJ+19]: write each commuter's cell (its flat index) in
``L = ⌈log₂ d⌉`` bits. Commuters are split uniformly at random into ``g`` groups; group j reports
the first ``s_j = min(L, s₀ + (j + 1)η)`` bits of its cell through optimised local hashing (OLH)
with the whole ε (each person reports once, so the release is ε-LDP). The server estimates, with
group 0, every prefix of ``s₀ + η`` bits and keeps the k most frequent; it extends each by every
η-bit suffix and estimates those ``k·2^η`` candidates with the next group; and so on until full
cells. Estimates are scaled by g (each group is a 1/g sample of the commuters). The server only
ever evaluates ``O(g·k·2^η)`` candidates, never the ``d`` cells.

Simulation (why it is exact here): the group sizes per cell are a sequential binomial split of
each non-zero cell's count (exactly the multinomial of independent uniform group choices), and
each candidate's OLH support count in group j is ``Bin(c, p) + Bin(n_j − c, 1/g_h)`` with c the
group's true count of that prefix — exactly the law of OLH under an idealised, fully random hash
family (one report's support indicators are then independent across cells, as for the app's OLH
fast release; with a real hash family this is the same idealisation). Cost O(nnz·g + g·k·2^η),
independent of n and d.

[WLJ+19] T. Wang, N. Li, S. Jha et al. Locally differentially private heavy hitter
identification. IEEE TDSC 2019 (arXiv:1708.06674).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.mechanisms import build
from dpcore.od import ODMatrix
from dpcore.ranks import top_cells


@dataclass(frozen=True)
class HeavyHitters:
    """The cells PEM reports as the top k (most frequent first) and their estimated counts."""

    cells: np.ndarray
    estimates: np.ndarray
    groups: int
    bits: int

    def recall(self, od: ODMatrix, k: int | None = None) -> float:
        """Share of the true top-k cells (ties by flat index) among those reported."""
        k = k or self.cells.size
        true_top = od.flat_index[top_cells(od.counts, k)]
        return np.intersect1d(true_top, self.cells[:k]).size / max(1, true_top.size)


def _prefix_counts(prefixes: np.ndarray, weights_cumsum: np.ndarray, candidates: np.ndarray
                   ) -> np.ndarray:
    """True counts of each candidate prefix, from the sorted prefixes of the non-zero cells."""
    low = np.searchsorted(prefixes, candidates, side="left")
    high = np.searchsorted(prefixes, candidates, side="right")
    return weights_cumsum[high] - weights_cumsum[low]


def pem(od: ODMatrix, epsilon: float, k: int, rng: np.random.Generator,
        start_bits: int | None = None, step_bits: int = 4) -> HeavyHitters:
    """Find the top-k cells of ``od`` with PEM at ε (see the module docstring)."""
    if k < 1 or step_bits < 1:
        raise ValueError(f"k and step_bits must be at least 1; got k={k}, step_bits={step_bits}")
    p, q = build("olh", epsilon=epsilon).support_probabilities(od.domain_size)
    bits = max(1, math.ceil(math.log2(od.domain_size)))
    start = min(bits - 1, math.ceil(math.log2(k))) if start_bits is None else start_bits
    if not 0 <= start < bits:
        raise ValueError(f"start_bits must be in [0, {bits}); got {start}")
    groups = math.ceil((bits - start) / step_bits)
    flat, remaining = od.flat_index, od.counts.copy()
    candidates = np.arange(2 ** min(bits, start + step_bits), dtype=np.int64)
    for group in range(groups):
        taken = rng.binomial(remaining, 1.0 / (groups - group))
        remaining -= taken
        length = min(bits, start + (group + 1) * step_bits)
        if group:
            width = length - (start + group * step_bits)
            candidates = (candidates[:, None] << width | np.arange(2 ** width)).reshape(-1)
        prefixes = flat >> (bits - length)
        cumulative = np.concatenate([[0], np.cumsum(taken)])
        true = _prefix_counts(prefixes, cumulative, candidates)
        n_group = int(cumulative[-1])
        support = rng.binomial(true, p) + rng.binomial(n_group - true, q)
        estimates = groups * (support - n_group * q) / (p - q)
        keep = top_cells(estimates, k)
        candidates, kept = candidates[keep], estimates[keep]
    return HeavyHitters(candidates, kept, groups, bits)
