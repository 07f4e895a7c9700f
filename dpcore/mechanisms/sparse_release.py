"""Releases over huge domains in O(nnz + k): the empty cells as an empirical distribution.

A national tract-level OD matrix has ≈ 7·10⁹ cells but only a few million non-zero ones. A dense
release draws every cell; this one draws the ``nnz`` non-zero cells individually (with the
mechanism's own per-cell law) and represents the ``M = d − nnz`` empty cells by their *empirical
distribution*: how many empty cells take each released value, and which of them are largest.

Why this is exact. For the mechanisms handled here the released values of the empty cells are
i.i.d. given the data (central noise; unary encoding, whose bits are independent across cells;
local hashing under an idealised, fully random hash family, where one report's support
indicators are independent), or exchangeable (GRR: see below). The metrics below are symmetric
functions of the empty cells' values, except the top-k, which also needs the cells' identities;
for an exchangeable vector the identities of the cells holding given values form a uniformly
random arrangement, drawn for the few cells that matter.

* **Discrete outcomes** (discrete Laplace; SUE/OUE/BLH/OLH, whose empty cell's support count is
  ``Bin(n, q*)`` [WBLJ17]; the app's subset-selection fast release, and that of Apple's CMS and
  HCMS [Apple17], which draw the same binomial — the sketches with q* = q + (p − q)/m, their
  per-cell law under an idealised hash; the coupling through a fixed hash family, which the
  dense fast release leaves out too, is stated by the mechanism's ``approximation``): the profile ``(N_x)`` over the support is ``Multinomial(M; P[X = x])`` — the
  histogram of M i.i.d. draws. Drawn over a window that holds all but a negligible mass, with two
  extra categories for the tails whose members are drawn from the conditional tail law (discrete
  Laplace: memoryless geometric; binomial: inverse CDF). Every statistic is exact.
* **GRR**: its support counts are exchangeable but coupled through the total. With the "keep or
  uniform" form (keep the true cell with probability p − q, else report a uniform cell of all d)
  the empty cells receive ``R₀ ~ Bin(R, M/d)`` of the ``R`` uniform reports, placed uniformly:
  balls into M bins, thrown one by one (O(n), exact; the non-empty cells get the rest as a
  multinomial over them). This is exact, but O(nnz + n) rather than O(nnz + k).
* **Continuous noise** (Laplace, Gaussian): the number of empty cells with ``|Z| ≥ T`` is
  ``Bin(M, P[|Z| ≥ T])`` and those values are drawn from the conditional tail (inverse survival
  function); T is chosen so that about 4k + 64 cells exceed it, and lowered by exact sequential
  conditioning (``Bin`` of the rest in the next band) until at least ``keep`` positive values are
  known or T reaches the presence threshold 0.5. The rest are split by an exact multinomial into
  the bands cut at −T, 0, 0.5, 12.5 (the GEH limit for an empty cell) and T, so every count the
  metrics need (invented flows, positive cells, GEH passes) is exact. Within a band with more than
  :data:`EXPLICIT_LIMIT` cells the sum and the sum of squares (RMSE, MAE, the total) are drawn
  from their joint normal law with the exact conditional mean and covariance: the *one
  approximation*, by the central limit theorem; its Kolmogorov error is O(skewness/√m) for m ≥
  65,536 cells (Berry–Esseen), on a sum whose own spread is O(1/√m) relative. Smaller bands, and
  the whole domain when M ≤ :data:`EXPLICIT_LIMIT`, are drawn value by value (exact).
* **Stability histogram**: empty cells are never published (exact: all zero).
* **OnTheMap's synthesizer**: not noise but a Dirichlet–multinomial per destination, whose
  empty cells are exchangeable within a destination only. Its
  :meth:`~dpcore.mechanisms.onthemap.OnTheMapSynthesizer.sparse_release` draws the non-empty
  cells and each destination's histogram of empty-cell values (exact, whole numbers); the
  released top places a destination's named empty cells among its own empty origins
  (:class:`PerDestination`).

Not handled (an error says so; use the dense release up to 50 M cells): mechanisms that couple
the empty cells beyond exchangeability or need a transform over the whole domain — Hadamard
response and the Hadamard mechanism (the estimate is an inverse transform of all cells),
dBitFlip (an empty cell's estimate depends on two coupled counts), private top-k (selection over
all cells).

Metrics (:func:`dpcore.scoring.sparse_metrics.score`) are those of :func:`dpcore.scoring.metrics.compute` that depend only on the
non-zero cells and this empirical distribution: RMSE, MAE, max error, %RMSE, top-k precision and
recall (invented flows included, ties broken by flat index as in :func:`dpcore.scoring.ranks.top_cells`),
rank correlations, false zeros and invented flows, GEH, the cell regression and the total, and so
the planner checks on them. Metrics that need every cell's position (trip ends, trip lengths,
sectors, self-containment, the histogram W1) are NaN. Post-processing: Base, Base-Pos and Post-Pos.

[Apple17] Apple Differential Privacy Team. Learning with privacy at scale. Apple Machine Learning
Journal 1(8), 2017.
[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for frequency
estimation. USENIX Security 2017.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special, stats

from dpcore.data.od import ODMatrix
from dpcore.mechanisms import CENTRAL, local, onthemap
from dpcore.mechanisms.sparse_vector import PRESENT_AT, Band, ZeroCells

#: Cells drawn one by one when the empty cells (or one band of them) are at most this many.
EXPLICIT_LIMIT = 1 << 16
#: Empty cells with the largest released values whose identities are drawn (the released top).
KEEP = 100
#: An empty cell passes the GEH < 5 check of :mod:`dpcore.scoring.metrics` iff 0 < r < 12.5
#: (2r² < 25r): the empty cells' band counts are kept exact at this cut.
GEH_EMPTY_LIMIT = 12.5
#: GRR's balls into M empty cells: their occupancy is tallied by a bincount over the M cells (O(M),
#: 8 bytes a cell) when M is at most this many times the balls, else by sorting the balls
#: (O(b log b)). At ED level (2.7 M balls, 9.5 M cells) the bincount took 46 ms, the sort 195.
OCCUPANCY_BINCOUNT_RATIO = 4
#: …thrown a range of this many empty cells at a time (:func:`thrown_profile`: 512 KB tallies).
THROW_RANGE = 1 << 16
#: Post-processings the sparse path supports (they act on each cell alone, or on the total).
METHODS = ("base", "base_pos", "post_pos")
#: Mechanisms the sparse path releases, and those it refuses with the reason.
SUPPORTED = ("laplace", "discrete_laplace", "gaussian", "stability_histogram", "grr", "sue", "oue",
             "blh", "olh", "ss", "cms", "hcms", "onthemap")
#: Mechanisms whose sparse release has the dense release's distribution with no approximation of
#: its own at any size: all but the continuous noises, whose empty cells' sums are drawn by the
#: central limit theorem once a band holds more than :data:`EXPLICIT_LIMIT` cells. (Subset
#: selection and the sketches draw the same per-cell law as their dense fast release, so their
#: stated approximation is the dense one too.)
#: (OnTheMap's sparse release is exact too but not listed, so a table that fits is released
#: densely: its dense release is fast, and LODES records and per-workplace views need every cell.)
EXACT = tuple(key for key in SUPPORTED if key not in ("laplace", "gaussian", "onthemap"))
UNSUPPORTED = {
    "hr": "Hadamard response estimates every cell through a transform of the whole domain",
    "hm": "the Hadamard mechanism estimates every cell through a transform of the whole domain",
    "dbitflip": "dBitFlip's empty-cell estimate depends on two coupled counts per cell",
    "topk": "private top-k selects among all cells at once",
}
#: Mechanisms whose sparse release still places reports one by one: GRR's reports that land on
#: empty cells are thrown into them like balls into urns (their occupancy is exact only from
#: the balls themselves), O(n) draws and a sort: ~25 s for 150 M commuters.
PER_REPORT = {
    "grr": "its sparse release places each report that lands on an empty commute one by one",
}
CLT_NOTE = ("The RMSE, MAE and total of the empty cells below the tail threshold are drawn from "
            "the normal law of their sums (exact mean and covariance; central limit theorem over "
            f"more than {EXPLICIT_LIMIT:,} cells per band); every count, the maximum and the top-k "
            "are exact.")


# ------------------------------------------------------------------------------- samplers
def _discrete_profile(m: int, lo: int, pmf: np.ndarray, below: float, above: float,
                      draw_below, draw_above, rng) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of m i.i.d. draws of an integer law: ``pmf`` on lo, lo+1, …, plus the masses
    below and above that window, whose members are drawn from the conditional tails."""
    probs = np.concatenate([[below], pmf, [above]])
    counts = rng.multinomial(m, probs / probs.sum())
    values = np.concatenate([np.arange(lo, lo + pmf.size, dtype=float),
                             draw_below(int(counts[0])), draw_above(int(counts[-1]))])
    mult = np.concatenate([counts[1:-1], np.ones(counts[0] + counts[-1], dtype=np.int64)])
    return values, mult


def _window_half_width(m: int) -> float:
    """Standard deviations either side of the mean holding all but ~e^{-32}/m of the mass."""
    return math.sqrt(2 * math.log(max(m, 2))) + 8.0


def binomial_zeros(m: int, trials: int, q: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Profile of m i.i.d. ``Bin(trials, q)`` support counts (exact)."""
    law = stats.binom(trials, q)
    sd = math.sqrt(trials * q * (1 - q))
    half = _window_half_width(m) * sd + 5
    lo = max(0, int(math.floor(trials * q - half)))
    hi = min(trials, int(math.ceil(trials * q + half)))
    support = np.arange(lo, hi + 1)
    below, above = float(law.cdf(lo - 1)), float(law.sf(hi))

    def tail(size, start, width):
        return law.ppf(start + rng.random(size) * width).astype(float)

    return _discrete_profile(m, lo, law.pmf(support), below, above,
                             lambda s: tail(s, 0.0, below),
                             lambda s: tail(s, 1.0 - above, above), rng)


def discrete_laplace_zeros(m: int, alpha: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Profile of m i.i.d. two-sided geometric values, P[Z = z] ∝ α^{|z|} (exact)."""
    rate = -math.log(alpha)
    h = int(math.ceil((math.log(max(m, 2)) + 32) / rate))
    z = np.arange(-h, h + 1)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(z)
    tail = alpha ** (h + 1) / (1 + alpha)   # P[Z > h] = P[Z < −h]

    def beyond(size):   # Z − h − 1 | Z > h is geometric on 0, 1, … (memoryless)
        return h + 1 + np.floor(rng.standard_exponential(size) / rate)

    return _discrete_profile(m, -h, pmf, tail, tail, lambda s: -beyond(s), beyond, rng)


def continuous_zeros(m: int, law, keep: int, rng, explicit_limit: int = EXPLICIT_LIMIT
                     ) -> ZeroCells:
    """m i.i.d. draws of a continuous law symmetric about 0 (a frozen scipy distribution)."""
    if m <= explicit_limit:
        return ZeroCells(m, law.rvs(size=m, random_state=rng), np.ones(m, dtype=np.int64))

    def band(size, low, high):   # |Z| conditional on [low, high), with a random sign
        sf_high, sf_low = law.sf(high), law.sf(low)
        magnitude = law.isf(sf_high + rng.random(size) * (sf_low - sf_high))
        return np.where(rng.random(size) < 0.5, -magnitude, magnitude)

    threshold = float(law.isf((4 * keep + 64) / (2 * m)))
    found = rng.binomial(m, 2 * law.sf(threshold))
    values = band(found, threshold, np.inf)
    while ((np.count_nonzero(values > 0) < keep and threshold > PRESENT_AT)
           or (values.size == 0 and threshold > 0)):
        lower = float(law.isf(min(0.5, 4 * law.sf(threshold))))
        if np.count_nonzero(values > 0) < keep:
            lower = max(lower, PRESENT_AT) if threshold > PRESENT_AT else lower
        inside = 2 * (law.sf(lower) - law.sf(threshold)) / (1 - 2 * law.sf(threshold))
        extra = rng.binomial(m - values.size, min(1.0, inside))
        values = np.concatenate([values, band(extra, lower, threshold)])
        threshold = lower
    rest = m - values.size
    cuts = sorted({-threshold, threshold, *(c for c in (0.0, PRESENT_AT, GEH_EMPTY_LIMIT)
                                           if -threshold < c < threshold)})
    edges = list(zip(cuts[:-1], cuts[1:]))
    probs = np.array([law.cdf(high) - law.cdf(low) for low, high in edges])
    counts = rng.multinomial(rest, probs / probs.sum()) if rest else np.zeros(len(edges), int)
    bands, atoms = [], [values]
    for (low, high), count in zip(edges, counts):
        if count <= explicit_limit:
            atoms.append(law.ppf(law.cdf(low) + rng.random(count) * (law.cdf(high) - law.cdf(low))))
            continue
        mass = law.cdf(high) - law.cdf(low)
        mu = [integrate.quad(lambda z, j=j: z ** j * law.pdf(z), low, high)[0] / mass
              for j in range(1, 5)]
        cov = np.array([[mu[1] - mu[0] ** 2, mu[2] - mu[0] * mu[1]],
                        [mu[2] - mu[0] * mu[1], mu[3] - mu[1] ** 2]])
        total, total_sq = rng.multivariate_normal(count * np.array(mu[:2]), count * cov)
        total = min(max(total, count * low), count * high)   # keep the sums feasible
        total_sq = max(total_sq, total * total / count)
        bands.append(Band(low, high, int(count), float(total), float(total_sq)))
    explicit = np.concatenate(atoms)
    return ZeroCells(m, explicit, np.ones(explicit.size, dtype=np.int64), tuple(bands))


# ------------------------------------------------------------------------------ identities
def _distinct(universe: int, size: int, rng) -> np.ndarray:
    """``size`` distinct uniform values of [0, universe), in random order."""
    if size == 0:
        return np.empty(0, dtype=np.int64)
    out = np.unique(rng.integers(0, universe, size=size))
    while out.size < size:
        out = np.unique(np.concatenate([out, rng.integers(0, universe, size=size - out.size)]))
    return rng.permutation(out)


def _skip(excluded_sorted: np.ndarray, ranks, gaps: np.ndarray | None = None) -> np.ndarray:
    """Map ranks among [0, L) minus ``excluded_sorted`` back to positions in [0, L) (``gaps``:
    ``excluded_sorted − arange``, when the caller maps several times)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if gaps is None:
        gaps = excluded_sorted - np.arange(excluded_sorted.size)
    return ranks + np.searchsorted(gaps, ranks, side="right")


def _smallest_of_subset(universe: int, size: int, j: int, rng) -> np.ndarray:
    """The j smallest elements of a uniform random ``size``-subset of [0, universe)."""
    if size <= 4096:
        return np.sort(_distinct(universe, size, rng))[:j]
    out, low, left = [], 0, size
    for _ in range(min(j, size)):
        low += int(subset_minimum(np.array([universe - low]), np.array([left]), rng)[0])
        out.append(low)
        low, left = low + 1, left - 1
    return np.array(out, dtype=np.int64)


def subset_minimum(universe: np.ndarray, size: np.ndarray, rng) -> np.ndarray:
    """The smallest element of a uniform random size[i]-subset of [0, universe[i]), for each i
    (size ≥ 1): inverse CDF, P[min ≥ x] = C(universe − x, size)/C(universe, size), by
    bisection on x."""
    universe, size = np.asarray(universe, np.int64), np.asarray(size, np.int64)
    base = special.gammaln(universe + 1) - special.gammaln(universe - size + 1)
    target = np.log(1.0 - rng.random(universe.size))
    lo, hi = np.zeros(universe.size, np.int64), universe - size   # largest x: log P ≥ target
    while np.any(lo < hi):
        mid = (lo + hi + 1) // 2
        log_s = (special.gammaln(universe - mid + 1) - special.gammaln(universe - mid - size + 1)
                 - base)
        lo, hi = np.where(log_s >= target, mid, lo), np.where(log_s >= target, hi, mid - 1)
    return lo


class _Exchangeable:
    """Where a release's empty cells holding given values are: a uniformly random arrangement
    over all the empty cells (every mechanism but OnTheMap's: their empty cells are
    exchangeable), so only the identities that matter are drawn."""

    def __init__(self, nonzero_flat, zeros: ZeroCells):
        self.nonzero_flat, self.count = nonzero_flat, zeros.count
        self.gaps = nonzero_flat - np.arange(nonzero_flat.size)
        self.taken = np.empty(0, dtype=np.int64)

    def flat(self, ranks):   # the empty cells in flat order: rank i ↦ its flat index
        return _skip(self.nonzero_flat, ranks, self.gaps)

    def above(self, levels, numbers, rng) -> np.ndarray:
        """Flat indices of ``numbers[i]`` empty cells at each of ``levels`` (in that order)."""
        self.taken = _distinct(self.count, int(numbers.sum()), rng)
        return self.flat(self.taken)

    def smallest(self, level, number: int, slots: int, rng) -> np.ndarray:
        """The ``slots`` smallest flat indices of the ``number`` other empty cells at ``level``."""
        ranks = _smallest_of_subset(self.count - self.taken.size, number, slots, rng)
        return self.flat(_skip(np.sort(self.taken), ranks))


class PerDestination:
    """Where the OnTheMap synthesizer's empty cells holding given values are: each
    destination's are a uniformly random set of its own empty origins (its empty cells are
    exchangeable, those of different destinations are not). ``groups`` is the release's
    (destination, value, cells) histogram of its empty cells."""

    def __init__(self, od: ODMatrix, groups):
        self.od, (self.dest, self.value, self.number) = od, groups
        self.order, self.filled, self.starts = onthemap.by_destination(od)
        self.taken: dict[int, np.ndarray] = {}
        self._key = None

    def empty(self, w: int) -> int:
        return self.od.n_origins - int(self.filled[w])

    def flat(self, w: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """Flat index of the empty cell of rank ``ranks`` among destination ``w``'s."""
        k = self.od.n_origins + 1
        if self._key is None:      # per destination, origin − its position: ascending
            origins = self.od.rows[self.order]
            dest = np.repeat(np.arange(self.filled.size), self.filled)
            self._key = dest * k + origins - (np.arange(origins.size) - self.starts[dest])
        origin = ranks + np.searchsorted(self._key, w * k + ranks, side="right") - self.starts[w]
        return origin * self.od.n_destinations + w

    def above(self, levels, numbers, rng) -> np.ndarray:
        levels = levels[numbers > 0]
        needed = {}
        for level in levels:
            for w, c in zip(self.dest[self.value == level], self.number[self.value == level]):
                needed[int(w)] = needed.get(int(w), 0) + int(c)
        pools = {w: _distinct(self.empty(w), c, rng) for w, c in needed.items()}
        self.taken = {w: np.sort(pool) for w, pool in pools.items()}
        used = dict.fromkeys(pools, 0)
        flats = []
        for level in levels:
            for w, c in zip(self.dest[self.value == level], self.number[self.value == level]):
                w, c = int(w), int(c)
                ranks = pools[w][used[w]:used[w] + c]
                used[w] += c
                flats.append(self.flat(np.full(c, w), ranks))
        return np.concatenate(flats) if flats else np.empty(0, dtype=np.int64)

    def smallest(self, level, number: int, slots: int, rng) -> np.ndarray:
        at = self.value == level
        dest, size = self.dest[at].astype(np.int64), self.number[at].astype(np.int64)
        if number == 0:
            return np.empty(0, dtype=np.int64)
        free = np.array([self.empty(int(w)) - len(self.taken.get(int(w), ())) for w in dest],
                        dtype=np.int64)
        first = subset_minimum(free, size, rng)
        flats = self._flat_free(dest, first)
        out = []
        while len(out) < slots and dest.size:   # the next smallest of a set is drawn when taken
            i = int(np.argmin(flats))
            out.append(int(flats[i]))
            if size[i] == 1:
                keep = np.arange(dest.size) != i
                dest, size, free, first, flats = (a[keep] for a in (dest, size, free, first,
                                                                     flats))
                continue
            after = int(first[i]) + 1     # the rest: a uniform (size − 1)-subset above it
            first[i] = after + int(subset_minimum(np.array([free[i] - after]),
                                                  np.array([size[i] - 1]), rng)[0])
            size[i] -= 1
            flats[i] = self._flat_free(dest[i:i + 1], first[i:i + 1])[0]
        return np.array(out, dtype=np.int64)

    def _flat_free(self, dest, ranks):
        """Flat indices of ranks among each destination's empty cells not taken ``above``."""
        ranks = np.array([_skip(self.taken[int(w)], r) if int(w) in self.taken else r
                          for w, r in zip(dest, ranks)], dtype=np.int64) if self.taken else ranks
        return self.flat(dest, ranks)


def released_top(nonzero_flat, nonzero_values, zeros: ZeroCells, keep: int, rng, places=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices and values of the ``keep`` largest present cells (value ≥ 0.5), largest
    first, ties by flat index. Only the empty cells' identities that matter are drawn (by
    ``places``, default :class:`_Exchangeable`): those above the boundary value, and the
    lowest-indexed of those tied at it."""
    places = _Exchangeable(nonzero_flat, zeros) if places is None else places
    # Only the top ``keep`` of each kind (with their ties) can be in the top ``keep`` of all.
    present = np.flatnonzero(nonzero_values >= PRESENT_AT)
    if present.size > keep:
        kth = np.partition(nonzero_values[present], present.size - keep)[present.size - keep]
        present = present[nonzero_values[present] >= kth]
    nz_values, nz_flat = nonzero_values[present], nonzero_flat[present]
    atoms = zeros.values >= PRESENT_AT          # ascending: the largest atoms are last
    from_top = np.cumsum(zeros.multiplicity[::-1])[::-1]
    atoms &= from_top - zeros.multiplicity < keep
    z_values, z_mult = zeros.values[atoms], zeros.multiplicity[atoms]
    levels = np.unique(np.concatenate([nz_values, z_values]))[::-1]
    if levels.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    nz_at = np.bincount(np.searchsorted(-levels, -nz_values), minlength=levels.size)
    z_at = np.zeros(levels.size, dtype=np.int64)
    z_at[np.searchsorted(-levels, -z_values)] = z_mult
    cumulative = np.cumsum(nz_at + z_at)
    boundary = min(int(np.searchsorted(cumulative, keep)), levels.size - 1)
    flats = [nz_flat[nz_values > levels[boundary]],
             places.above(levels[:boundary], z_at[:boundary], rng)]
    values = [nz_values[nz_values > levels[boundary]],
              np.repeat(levels[:boundary], z_at[:boundary])]
    slots = keep - (int(cumulative[boundary - 1]) if boundary else 0)
    tied_nz = nz_flat[nz_values == levels[boundary]]
    tied_zero = places.smallest(levels[boundary], int(z_at[boundary]), slots, rng)
    tied = np.sort(np.concatenate([tied_nz, tied_zero]))
    tied = tied[:slots]
    flats.append(tied)
    values.append(np.full(tied.size, levels[boundary]))
    flat, value = np.concatenate(flats), np.concatenate(values)
    order = np.lexsort((flat, -value))
    return flat[order], value[order]


# -------------------------------------------------------------------------------- release
@dataclass(frozen=True)
class SparseRelease:
    """One release of ``od``: the non-zero cells' raw estimates, in ``od.flat_index`` order, the
    empty cells' empirical distribution, and the released top ``keep`` present cells."""

    od: ODMatrix
    mechanism: str
    nonzero: np.ndarray
    zeros: ZeroCells
    top_flat: np.ndarray
    top_values: np.ndarray
    seconds: float
    keep: int = KEEP
    mechanism_approximation: str | None = None
    #: :attr:`dpcore.mechanisms.sparse_vector.SparseVector.by_column` (OnTheMap), else None.
    by_column: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def approximation(self) -> str | None:
        """None when the release and its metrics are exact in distribution."""
        parts = [self.mechanism_approximation] + ([CLT_NOTE] if not self.zeros.exact else [])
        parts = [p for p in parts if p]
        return " ".join(parts) if parts else None


def _estimator(n: int, p: float, q: float):
    """The pure-protocol estimate ĉ = (C − n q*)/(p* − q*) of support counts C [WBLJ17]."""
    return lambda support: (np.asarray(support, dtype=float) - n * q) / (p - q)


def _pure_protocol(mechanism, od: ODMatrix, rng):
    d, n = od.domain_size, od.n
    p, q = mechanism.support_probabilities(d)
    c = od.counts
    support = rng.binomial(n - c, q) + rng.binomial(c, p)
    values, mult = binomial_zeros(d - od.nonzero, n, q, rng)
    estimate = _estimator(n, p, q)
    return estimate(support), ZeroCells(d - od.nonzero, estimate(values), mult)


def _grr(mechanism, od: ODMatrix, rng):
    d, n, m = od.domain_size, od.n, od.domain_size - od.nonzero
    p, q = mechanism.support_probabilities(d)
    support = rng.binomial(od.counts, p - q)
    uniform = n - int(support.sum())
    to_empty = rng.binomial(uniform, m / d)
    support += rng.multinomial(uniform - to_empty, np.full(od.nonzero, 1.0 / od.nonzero))
    levels, cells = thrown_profile(to_empty, m, rng)
    estimate = _estimator(n, p, q)
    zeros = ZeroCells(m, estimate(np.append(levels, 0)), np.append(cells, m - int(cells.sum())))
    return estimate(support), zeros


def thrown_profile(balls: int, bins: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """:func:`occupancy_profile` of ``balls`` balls thrown uniformly at random into ``bins``
    bins, drawn a range of :data:`THROW_RANGE` bins at a time: the balls per range are
    multinomial and each range's balls uniform within it, which is the law of throwing them all
    at once, so each range is tallied in a cache-sized array instead of one count per bin over
    all the bins (GRR at ED level, 2.7 M balls into 9.5 M empty cells: a 76 MB tally and
    0.06 s of CPU before, 0.03 s now)."""
    if balls == 0 or bins == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    starts = np.arange(0, bins, THROW_RANGE)
    sizes = np.minimum(THROW_RANGE, bins - starts)
    profile = np.zeros(2, dtype=np.int64)              # bins per occupancy, occupancy ≥ 1
    for size, count in zip(sizes.tolist(), rng.multinomial(balls, sizes / bins).tolist()):
        if count:
            levels, cells = occupancy_profile(rng.integers(0, size, size=count), size)
            if levels[-1] >= profile.size:
                profile = np.pad(profile, (0, int(levels[-1]) + 1 - profile.size))
            profile[levels] += cells
    levels = np.flatnonzero(profile)
    return levels, profile[levels]


def occupancy_profile(balls: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(levels, cells): each occupancy k ≥ 1 that occurs, ascending, and how many of the ``bins``
    hold exactly k of the ``balls`` (bin indices). A tally of the tally when the bins are few
    beside the balls (:data:`OCCUPANCY_BINCOUNT_RATIO`), else by sorting; the same answer."""
    if balls.size and bins <= OCCUPANCY_BINCOUNT_RATIO * balls.size:
        profile = np.bincount(np.bincount(balls))
        levels = np.flatnonzero(profile[1:]) + 1
        return levels, profile[levels]
    _, occupancy = np.unique(balls, return_counts=True)
    return np.unique(occupancy, return_counts=True)


def _onthemap(mechanism, od: ODMatrix, rng):
    """OnTheMap's synthesizer (:meth:`~dpcore.mechanisms.onthemap.OnTheMapSynthesizer.
    sparse_release`): its empty cells' histogram is exact (whole numbers), and their places are
    per destination (:class:`PerDestination`), as are their sums (``by_column``)."""
    nonzero, groups, empty = mechanism.sparse_release(od, rng)
    (dest, value, number), count = groups, int(empty.sum())
    zeros = ZeroCells(count, np.append(value, 0).astype(float),
                      np.append(number, count - int(number.sum())))
    mass = np.bincount(dest, weights=value * number, minlength=od.n_destinations)
    return nonzero, zeros, PerDestination(od, groups), (empty, mass)


def _central(mechanism, od: ODMatrix, rng, keep, explicit_limit):
    m = od.domain_size - od.nonzero
    nonzero = mechanism.release(od.counts, rng).astype(float)
    key = mechanism.key
    if key == "stability_histogram":
        return nonzero, ZeroCells(m, [0.0], [m])
    if key == "discrete_laplace":
        return nonzero, ZeroCells(m, *discrete_laplace_zeros(m, mechanism.alpha, rng))
    return nonzero, continuous_zeros(m, noise_law(mechanism), keep, rng, explicit_limit)


def noise_law(mechanism):
    """The continuous noise law of a central mechanism's cells (Laplace, Gaussian), else None."""
    if mechanism.key == "laplace":
        return stats.laplace(scale=mechanism.scale)
    return stats.norm(scale=mechanism.sigma) if mechanism.key == "gaussian" else None


def draw(od: ODMatrix, mechanism, rng: np.random.Generator, keep: int = KEEP,
         explicit_limit: int = EXPLICIT_LIMIT) -> SparseRelease:
    """Release ``od`` with a built mechanism (see the module docstring for what is exact)."""
    if mechanism.key in UNSUPPORTED:
        raise ValueError(f"{mechanism.name} [{mechanism.key}] has no sparse release: "
                         f"{UNSUPPORTED[mechanism.key]}. Use the dense release (domains up to "
                         f"50,000,000 cells) or another mechanism.")
    if mechanism.key not in SUPPORTED:
        raise ValueError(f"{mechanism.key!r} has no sparse release; supported: "
                         f"{', '.join(SUPPORTED)}")
    if od.nonzero == 0:
        raise ValueError(f"{od.name} has no commuters to release.")
    local._check_domain(od.domain_size, mechanism.name)
    started = time.perf_counter()
    places = by_column = None
    if mechanism.key == "onthemap":
        nonzero, zeros, places, by_column = _onthemap(mechanism, od, rng)
    elif mechanism.model == CENTRAL:
        nonzero, zeros = _central(mechanism, od, rng, keep, explicit_limit)
    elif mechanism.key == "grr":
        nonzero, zeros = _grr(mechanism, od, rng)
    else:
        nonzero, zeros = _pure_protocol(mechanism, od, rng)
    top_flat, top_values = released_top(od.flat_index, nonzero, zeros, keep, rng, places)
    return SparseRelease(od, mechanism.key, nonzero, zeros, top_flat, top_values,
                         time.perf_counter() - started, keep, mechanism.approximation, by_column)


def run(od: ODMatrix, spec, keep: int = KEEP) -> SparseRelease:
    """The sparse release of a :class:`dpcore.release.ReleaseSpec`: its mechanism and parameters,
    and its random stream (the one seeding rule, the same stream a dense release would use)."""
    unknown = [method for method in spec.postprocess if method not in METHODS]
    if unknown:
        raise ValueError(f"the sparse release supports the post-processings {', '.join(METHODS)}, "
                         f"which act on each cell alone; got {', '.join(unknown)}, which needs "
                         f"every cell's value at once (e.g. Base-Cut sorts the whole domain)")
    return draw(od, spec.build(), spec.generator(), keep)
