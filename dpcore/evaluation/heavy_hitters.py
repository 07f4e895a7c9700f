"""Heavy hitters under ε-LDP for domains too large for a frequency oracle over every cell: PEM
and TreeHist.

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

TreeHist [BNST17] (:func:`treehist`) walks the same prefix tree (η = 1 bit by default) with every
commuter's prefix report in one oracle and a second, whole-cell report for the final estimates.

[BNST17] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta. Practical locally private heavy hitters.
NeurIPS 2017.
[WLJ+19] T. Wang, N. Li, S. Jha et al. Locally differentially private heavy hitter
identification. IEEE TDSC 2019 (arXiv:1708.06674).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.evaluation.ranks import top_cells
from dpcore.mechanisms import build


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


def _prefix_search(od: ODMatrix, epsilon: float, k: int, rng, start: int, step: int,
                   whole_population: bool) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Level-by-level top-k over prefixes; each commuter reports at one uniformly chosen level.

    ``whole_population``: one OLH oracle takes every level's reports (TreeHist, where a padded
    prefix is its own item, so reports of other levels support it with probability q only);
    otherwise each level has its own oracle over its group (PEM). Returns the candidates, their
    scaled estimates, the number of levels and the bit length.
    """
    if k < 1 or step < 1:
        raise ValueError(f"k and step_bits must be at least 1; got k={k}, step_bits={step}")
    bits = max(1, math.ceil(math.log2(od.domain_size)))
    if not 0 <= start < bits:
        raise ValueError(f"start_bits must be in [0, {bits}); got {start}")
    p, q = build("olh", epsilon=epsilon).support_probabilities(od.domain_size)
    levels = math.ceil((bits - start) / step)
    flat, remaining = od.flat_index, od.counts.copy()
    candidates = np.arange(2 ** min(bits, start + step), dtype=np.int64)
    for level in range(levels):
        taken = rng.binomial(remaining, 1.0 / (levels - level))
        remaining -= taken
        length = min(bits, start + (level + 1) * step)
        if level:
            width = length - (start + level * step)
            candidates = (candidates[:, None] << width | np.arange(2 ** width)).reshape(-1)
        cumulative = np.concatenate([[0], np.cumsum(taken)])
        true = _prefix_counts(flat >> (bits - length), cumulative, candidates)
        reports = od.n if whole_population else int(cumulative[-1])
        support = rng.binomial(true, p) + rng.binomial(reports - true, q)
        estimates = levels * (support - reports * q) / (p - q)
        keep = top_cells(estimates, k)
        candidates, kept = candidates[keep], estimates[keep]
    return candidates, kept, levels, bits


def pem(od: ODMatrix, epsilon: float, k: int, rng: np.random.Generator,
        start_bits: int | None = None, step_bits: int = 4) -> HeavyHitters:
    """Find the top-k cells of ``od`` with PEM at ε (see the module docstring)."""
    bits = max(1, math.ceil(math.log2(od.domain_size)))
    start = min(bits - 1, math.ceil(math.log2(max(k, 1)))) if start_bits is None else start_bits
    cells, estimates, groups, bits = _prefix_search(od, epsilon, k, rng, start, step_bits,
                                                    whole_population=False)
    return HeavyHitters(cells, estimates, groups, bits)


def treehist(od: ODMatrix, epsilon: float, k: int, rng: np.random.Generator,
             step_bits: int = 1) -> HeavyHitters:
    """Find the top-k cells with TreeHist at ε [BNST17], in its top-k form (as pure-LDP's
    TreeHistServer): each commuter sends, with ε/2 each, one prefix of a uniformly chosen level
    and the whole cell, both through OLH; the server walks the prefix tree keeping the k best
    prefixes per level, then estimates the final k cells from the whole-cell reports."""
    cells, _, levels, bits = _prefix_search(od, epsilon / 2, k, rng, 0, step_bits,
                                            whole_population=True)
    p, q = build("olh", epsilon=epsilon / 2).support_probabilities(od.domain_size)
    position = np.searchsorted(od.flat_index, cells)
    present = (position < od.nonzero) & (od.flat_index[np.minimum(position, od.nonzero - 1)]
                                         == cells)
    true = np.where(present, od.counts[np.minimum(position, od.nonzero - 1)], 0)
    support = rng.binomial(true, p) + rng.binomial(od.n - true, q)
    estimates = (support - od.n * q) / (p - q)
    order = np.lexsort((cells, -estimates))
    return HeavyHitters(cells[order], estimates[order], levels, bits)
