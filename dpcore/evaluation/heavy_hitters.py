"""Heavy hitters under ε-LDP for domains too large for a frequency oracle over every cell: PEM
and TreeHist.

Prefix extending method (PEM) [WLJ+19]: write each commuter's cell (its flat index) in
``L = ⌈log₂ d⌉`` bits. Commuters are split uniformly at random into ``g`` groups; group j reports
the first ``s_j = min(L, s₀ + (j + 1)η)`` bits of its cell through optimised local hashing (OLH)
with the whole ε (each person reports once, so the release is ε-LDP). The server estimates, with
group 0, every prefix of ``s₀ + η`` bits and keeps the k most frequent; it extends each by every
η-bit suffix and estimates those ``k·2^η`` candidates with the next group; and so on until full
cells. Estimates are scaled by g (each group is a 1/g sample of the commuters). The server only
ever evaluates ``O(g·k·2^η)`` candidates, never the ``d`` cells; it knows d, so it skips prefixes
that only indices ≥ d (padding up to 2^L) start with.

Simulation (why it is exact here): the group sizes per cell are a sequential binomial split of
each non-zero cell's count (exactly the multinomial of independent uniform group choices), and
each candidate's OLH support count in group j is ``Bin(c, p) + Bin(n_j − c, 1/g_h)`` with c the
group's true count of that prefix — exactly the law of OLH under an idealised, fully random hash
family (one report's support indicators are then independent across cells, as for the app's OLH
fast release; with a real hash family this is the same idealisation). Cost O(nnz·g + g·k·2^η),
independent of n and d.

TreeHist [BNST17] (:func:`treehist`) walks the same prefix tree (η = 1 bit by default) with every
commuter's prefix report in one oracle and a second, whole-cell report for the final estimates.

Each result keeps the server's walk (:class:`Level`: the candidates it estimated and the k it kept
per level) for the Learn page; :func:`find` runs either protocol by the seeding rule of
:mod:`dpcore.release`, and :func:`scores`/:func:`compare` measure what it found against the true
top k.

[BNST17] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta. Practical locally private heavy hitters.
NeurIPS 2017.
[WLJ+19] T. Wang, N. Li, S. Jha et al. Locally differentially private heavy hitter
identification. IEEE TDSC 2019 (arXiv:1708.06674).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore import seeding
from dpcore.data.od import ODMatrix
from dpcore.mechanisms import build
from dpcore.scoring.ranks import top_cells

#: The protocols by key: display name and a one-line description.
PROTOCOLS = {
    "pem": ("PEM", "prefix extending method [WLJ+19]: each group reports a longer prefix"),
    "treehist": ("TreeHist", ("TreeHist [BNST17]: a one-bit-per-level prefix tree, then a "
                              "whole-cell report")),
}


@dataclass(frozen=True)
class Level:
    """One level of the server's walk down the prefix tree: the prefixes of ``length`` bits it
    estimated (``candidates``), the k it kept (most frequent first) and how many reports it
    estimated them from."""

    length: int
    candidates: np.ndarray
    kept: np.ndarray
    reports: int


@dataclass(frozen=True)
class HeavyHitters:
    """The cells a protocol reports as the top k (most frequent first), their estimated counts,
    the number of levels (PEM: groups), the bit length of a cell and the server's walk."""

    cells: np.ndarray
    estimates: np.ndarray
    groups: int
    bits: int
    levels: tuple[Level, ...] = ()

    def recall(self, od: ODMatrix, k: int | None = None) -> float:
        """Share of the true top-k cells (ties by flat index) among those reported."""
        k = k or self.cells.size
        true_top = od.flat_index[top_cells(od.counts, k)]
        return np.intersect1d(true_top, self.cells[:k]).size / max(1, true_top.size)


def true_counts(od: ODMatrix, cells: np.ndarray) -> np.ndarray:
    """The true count of each flat cell index (0 for cells nobody commutes between)."""
    cells = np.asarray(cells, dtype=np.int64)
    if not od.nonzero:
        return np.zeros(cells.size, dtype=np.int64)
    position = np.minimum(np.searchsorted(od.flat_index, cells), od.nonzero - 1)
    return np.where(od.flat_index[position] == cells, od.counts[position], 0)


def _prefix_counts(prefixes: np.ndarray, weights_cumsum: np.ndarray, candidates: np.ndarray
                   ) -> np.ndarray:
    """True counts of each candidate prefix, from the sorted prefixes of the non-zero cells."""
    low = np.searchsorted(prefixes, candidates, side="left")
    high = np.searchsorted(prefixes, candidates, side="right")
    return weights_cumsum[high] - weights_cumsum[low]


def _prefix_search(od: ODMatrix, epsilon: float, k: int, rng, start: int, step: int,
                   whole_population: bool) -> tuple[np.ndarray, np.ndarray, int, tuple[Level, ...]]:
    """Level-by-level top-k over prefixes; each commuter reports at one uniformly chosen level.

    ``whole_population``: one OLH oracle takes every level's reports (TreeHist, where a padded
    prefix is its own item, so reports of other levels support it with probability q only);
    otherwise each level has its own oracle over its group (PEM). Returns the candidates, their
    scaled estimates, the bit length and the walk.
    """
    if k < 1 or step < 1:
        raise ValueError(f"k and step_bits must be at least 1; got k={k}, step_bits={step}")
    bits = cell_bits(od.domain_size)
    if not 0 <= start < bits:
        raise ValueError(f"start_bits must be in [0, {bits}); got {start}")
    p, q = build("olh", epsilon=epsilon).support_probabilities(od.domain_size)
    levels = math.ceil((bits - start) / step)
    flat, remaining = od.flat_index, od.counts.copy()
    candidates = np.arange(2 ** min(bits, start + step), dtype=np.int64)
    walk = []
    for level in range(levels):
        taken = rng.binomial(remaining, 1.0 / (levels - level))
        remaining -= taken
        length = min(bits, start + (level + 1) * step)
        if level:
            width = length - (start + level * step)
            candidates = (candidates[:, None] << width | np.arange(2 ** width)).reshape(-1)
        # The domain is public: prefixes of indices ≥ d (2^L > d) name no cell, so the server
        # never estimates them.
        candidates = candidates[candidates << (bits - length) < od.domain_size]
        cumulative = np.concatenate([[0], np.cumsum(taken)])
        true = _prefix_counts(flat >> (bits - length), cumulative, candidates)
        reports = od.n if whole_population else int(cumulative[-1])
        support = rng.binomial(true, p) + rng.binomial(reports - true, q)
        estimates = levels * (support - reports * q) / (p - q)
        keep = top_cells(estimates, k)
        walk.append(Level(length, candidates, candidates[keep], reports))
        candidates, kept = candidates[keep], estimates[keep]
    return candidates, kept, bits, tuple(walk)


#: Bits each level adds to the prefixes, by default: PEM's η (the paper's experiments use 4 or
#: 5), and TreeHist's one bit per level.
PEM_STEP_BITS, TREEHIST_STEP_BITS = 4, 1


def cell_bits(domain_size: int) -> int:
    """L = ⌈log₂ d⌉, the bits that write any cell index."""
    return max(1, math.ceil(math.log2(domain_size)))


def _pem_start(bits: int, k: int) -> int:
    """PEM's first prefix before extension, s₀ = ⌈log₂ k⌉: the first group already estimates
    k·2^η prefixes, as each later group does."""
    return min(bits - 1, math.ceil(math.log2(max(k, 1))))


def prefix_lengths(protocol: str, domain_size: int, k: int) -> list[int]:
    """Bits of the prefix reported at each level, with the protocol's default parameters."""
    bits = cell_bits(domain_size)
    start, step = ((_pem_start(bits, k), PEM_STEP_BITS) if protocol == "pem"
                   else (0, TREEHIST_STEP_BITS))
    return [min(bits, start + (level + 1) * step)
            for level in range(math.ceil((bits - start) / step))]


def pem(od: ODMatrix, epsilon: float, k: int, rng: np.random.Generator,
        start_bits: int | None = None, step_bits: int = PEM_STEP_BITS) -> HeavyHitters:
    """Find the top-k cells of ``od`` with PEM at ε (see the module docstring)."""
    bits = cell_bits(od.domain_size)
    start = _pem_start(bits, k) if start_bits is None else start_bits
    cells, estimates, bits, walk = _prefix_search(od, epsilon, k, rng, start, step_bits,
                                                  whole_population=False)
    return HeavyHitters(cells, estimates, len(walk), bits, walk)


def treehist(od: ODMatrix, epsilon: float, k: int, rng: np.random.Generator,
             step_bits: int = TREEHIST_STEP_BITS) -> HeavyHitters:
    """Find the top-k cells with TreeHist at ε [BNST17], in its top-k form (as pure-LDP's
    TreeHistServer): each commuter sends, with ε/2 each, one prefix of a uniformly chosen level
    and the whole cell, both through OLH; the server walks the prefix tree keeping the k best
    prefixes per level, then estimates the final k cells from the whole-cell reports."""
    cells, _, bits, walk = _prefix_search(od, epsilon / 2, k, rng, 0, step_bits,
                                          whole_population=True)
    p, q = build("olh", epsilon=epsilon / 2).support_probabilities(od.domain_size)
    true = true_counts(od, cells)
    support = rng.binomial(true, p) + rng.binomial(od.n - true, q)
    estimates = (support - od.n * q) / (p - q)
    order = np.lexsort((cells, -estimates))
    return HeavyHitters(cells[order], estimates[order], len(walk), bits, walk)


# ------------------------------------------------------------------------- runs and their scores
def find(protocol: str, od: ODMatrix, epsilon: float, k: int, seed: int,
         trial: int = 0) -> HeavyHitters:
    """The top k by ``protocol`` (a key of :data:`PROTOCOLS`) with its default parameters, drawn
    by the seeding rule of :mod:`dpcore.release` at (seed, protocol, ε, k, trial): the Explore
    page, trial 0 of a Tradeoffs sweep and ``python3 -m dpcore heavy-hitters`` find the same
    cells. ValueError with a message for an unknown protocol or a k the data cannot fill."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown heavy-hitter protocol {protocol!r}; choose one of "
                         f"{', '.join(PROTOCOLS)}.")
    if not 1 <= k <= od.nonzero:
        raise ValueError(f"k must be between 1 and the number of non-empty commutes "
                         f"({od.nonzero:,}); got {k}.")
    rng = seeding.generator(seed, "heavy-hitters", protocol, epsilon, k, trial)
    return (pem if protocol == "pem" else treehist)(od, epsilon, k, rng)


def _kth_count(od: ODMatrix, k: int) -> int:
    """The k-th largest true count (the bar a cell must reach to be a true top-k commute)."""
    top = top_cells(od.counts, k)
    return int(od.counts[top[-1]]) if top.size else 0


def scores(od: ODMatrix, found: HeavyHitters, k: int) -> dict[str, float]:
    """Recall (share of the true top k, ties by flat index, among the cells found) and precision
    (share of the cells found as busy as the k-th busiest true commute: a found cell that ties
    with it counts, whichever of the tied cells the tie-break put in the true top k)."""
    bar = max(1, _kth_count(od, k))
    found_counts = true_counts(od, found.cells[:k])
    return {"recall": found.recall(od, k),
            "precision": float(np.mean(found_counts >= bar)) if found_counts.size else 0.0}


def trial_rows(protocol: str, od: ODMatrix, epsilon: float, k: int, seed: int,
               trial: int) -> pd.DataFrame:
    """One run's recall, precision and CPU seconds as tidy rows (``mechanism`` is the protocol's
    name), the shape :func:`dpcore.evaluation.summaries.summarise` averages over trials."""
    start = time.process_time()
    found = find(protocol, od, epsilon, k, seed, trial)
    seconds = time.process_time() - start
    measured = {**scores(od, found, k), "cpu_seconds": seconds}
    return pd.DataFrame({"mechanism": PROTOCOLS[protocol][0], "epsilon": float(epsilon),
                         "k": k, "trial": trial, "metric": list(measured),
                         "value": list(measured.values())})


def _true_ranks(od: ODMatrix, cells: np.ndarray) -> np.ndarray:
    """Rank (1 = busiest, ties by flat index) of each cell among the non-empty cells; NaN for
    empty cells."""
    order = np.lexsort((od.flat_index, -od.counts))
    rank_of = np.empty(od.nonzero, dtype=np.float64)
    rank_of[order] = np.arange(1, od.nonzero + 1)
    position = np.minimum(np.searchsorted(od.flat_index, cells), od.nonzero - 1)
    return np.where(od.flat_index[position] == cells, rank_of[position], np.nan)


def compare(od: ODMatrix, found: HeavyHitters, k: int) -> pd.DataFrame:
    """The true top k and the cells found, one row each: zone ids, the commute's name
    (untrusted text: escape it for any markup), true count and rank, rank found and estimate,
    and whether it was found, missed or found but not a true top-k commute."""
    true_top = od.flat_index[top_cells(od.counts, k)]
    reported = found.cells[:k]
    cells = np.concatenate([true_top, np.setdiff1d(reported, true_top)])
    position = {int(cell): i for i, cell in enumerate(reported)}
    found_rank = np.array([position.get(int(c), -1) + 1 for c in cells], dtype=np.float64)
    found_rank[found_rank == 0] = np.nan
    estimate = np.array([found.estimates[position[int(c)]] if int(c) in position else np.nan
                         for c in cells])
    in_top = np.isin(cells, true_top)
    status = np.where(in_top & ~np.isnan(found_rank), "found",
                      np.where(in_top, "missed", "found, not a true top-k commute"))
    origin, destination = np.divmod(cells, od.n_destinations)
    return pd.DataFrame({"origin": od.origins.ids[origin],
                         "destination": od.destinations.ids[destination],
                         "commute": od.cell_labels(cells), "true_count": true_counts(od, cells),
                         "true_rank": _true_ranks(od, cells), "found_rank": found_rank,
                         "estimated_count": estimate, "status": status})


def walk(od: ODMatrix, found: HeavyHitters, k: int) -> pd.DataFrame:
    """The server's walk level by level: prefix length, reports used, candidates estimated and
    kept, and how many of the true top-k cells still have their prefix among those kept (once a
    prefix is dropped, no later level can find the cells under it)."""
    true_top = od.flat_index[top_cells(od.counts, k)]
    return pd.DataFrame([{
        "level": i, "prefix_bits": level.length, "reports": level.reports,
        "candidates": level.candidates.size, "kept": level.kept.size,
        "true_top_k_in_reach": int(np.isin(true_top >> (found.bits - level.length),
                                           level.kept).sum())}
        for i, level in enumerate(found.levels, 1)])
