"""OnTheMap's synthesizer: residences drawn per workplace from a Dirichlet–multinomial model.

Machanavajjhala, Kifer, Abowd, Gehrke, Vilhuber, "Privacy: Theory meets Practice on the Map",
ICDE 2008, pp. 277–286 — the model the US Census Bureau's OnTheMap / LODES uses to synthesize
where workers live. For each destination (workplace) d, with n(d) the histogram of its workers'
origins over k candidate origins and α(d) a prior, the release draws
``p ~ Dirichlet(n(d) + α(d))`` and ``m`` synthetic origins ``~ Multinomial(m, p)``; as deployed
``m = n(d)``, so every workplace's total is published exactly (OnTheMap protects those totals
separately, by noise infusion; not modelled here).

**Where the facts come from.** The paper itself could not be read here (no copy in the stored
pages). The model above and "m = n(d) as deployed" are confirmed from an independent
reimplementation's algorithm comment; the shape of the probabilistic test (per cell, a
Beta-binomial tail above ``(e^ε − 1)(α + max(x − 1, 0))``, union over the k cells, smallest α by
bisection) from that reimplementation's code (both as quoted in docs/ONTHEMAP.md, "Where each fact comes from").
The bounds below are derived here, from the Dirichlet–multinomial pmf, and checked against brute
force on small domains (tests/mechanisms/test_onthemap.py), not copied from the paper's theorem:

* **Neighbours**: two tables that differ in one worker's residence (origin), the workplace fixed
  (so ``m`` is unchanged). Moving a worker from origin j to l multiplies the probability of a
  synthetic histogram s by ``(1 + s_j/(n'_j + α)) · (n_l + α)/(n_l + α + s_l)``, with n' the table
  without the worker at j.
* **ε-DP** (:func:`max_ratio`, :func:`pure_alpha`): the worst ratio over all tables, outputs and
  neighbours is exactly ``1 + m/α`` (s_j = m, n'_j = 0), so the synthesis is ε-DP iff
  ``α ≥ m/(e^ε − 1)`` — the prior must outweigh the whole workplace (unconfirmed in the team's
  reference notes; confirmed here by brute force). Adding or removing one worker (m fixed) changes it by
  at most max((1 + m/α)·A/(A + m), (A + m)/A), A = n + kα: less (brute force too). So with DP
  totals (``total="noisy"``) the whole release is ε-DP: under add/remove the totals get ε·share
  and the one histogram that changes the rest; under substitution (a worker's home and
  workplace replaced) two totals and two histograms change, so each gets half of its share.
  With exact totals the relation has no effect: the guarantee covers a home changing within a
  workplace.
* **(ε, δ)-probabilistic DP** (:func:`pdp_delta`, :func:`smallest_alpha`): the release is
  (ε, δ)-pDP if, for every table, the outputs whose likelihood ratio against some neighbour
  exceeds e^ε have probability ≤ δ. Such an output has some cell i with
  ``s_i > (e^ε − 1)(α + max(n_i − 1, 0))``; the marginal of s_i is
  Beta-binomial(m; n_i + α, n − n_i + (k − 1)α), so k times the largest such tail over
  n_i = 0…n bounds δ for every table. This is an upper bound (a union bound), sound but not
  tight: the brute force checks that the exact δ never exceeds it. Summed term by term
  (:func:`cell_tail`) it costs O(m²) per destination size: :func:`pdp_delta` does that up to
  :data:`TEST_MAX_WORKERS` workers, for reference.
* **The bounded test** (:func:`pdp_delta_bound`, :func:`smallest_alphas`; every prior uses it,
  so prior 'test' runs for any size — Dublin City's 432,557 workers included): the same
  quantity, bounded from above in O(log m) terms per tail, derived here:

  1. *One tail* (:func:`tail_bound`). The Beta-binomial pmf ratio is
     r(s) = P[s + 1]/P[s] = (m − s)(s + a)/((s + 1)(m − s − 1 + b)); over u ≥ s its factor
     (m − u)/(m − u − 1 + b) is at most its value at s if b ≥ 1 (it falls with u), else 1/b, and
     (u + a)/(u + 1) at most its value at s if a ≥ 1, else 1. So with R(s) their product,
     P[s] + … + P[s + L − 1] ≤ P[s](1 + R + … + R^(L−1)), and everything after s is at most
     P[s]·R/(1 − R) when R < 1. The first terms above the threshold are summed exactly; the rest
     is covered by blocks 1/32 longer each time, each bounded from its first term.
  2. *Every count x at once* (:func:`_worst_tail`). s_x ~ Beta-binomial(m; x + α,
     n − x + (k − 1)α) grows stochastically with x (the Beta in likelihood-ratio order, the
     Binomial(m, p) with p) and the threshold grows with x, so for x in [lo, hi]
     P[s_x > ⌊threshold(x)⌋] ≤ P[s_hi > ⌊threshold(lo)⌋]: one tail bounds a whole range of
     counts. Ranges start at 0…16 one by one, then doubling, and are halved only where their
     bound is too high (branch and bound).
  3. *The smallest α*: bisection on log α for all sizes at once, each step deciding "≤ δ/k?"
     (ranges refined only while they straddle δ/k); the α found is re-checked against the
     reported bound.

  Never below the exact sum (with a 1e-6 relative margin for rounding in log space), and
  within 1 % of it (tests, on m ≤ 1,000 and at 10,000 and 100,000 workers where the exact sum is
  affordable; measured within 0.02 %); the α it picks is at most 0.06 % above the exact test's
  (m = 100, 1,000; k = 31, 3,126; ε = 0.5–8.6).
  The simpler bound P[s > t] ≤ P[p > u] + P[Binomial(m, u) > t] (p ~ Beta(a, b), best u) is
  sound too but counts all of p's mass above u as a failure: its α is 1.4–1.9 times ours at
  m = 100–1,000 (ε = 1–8.6, δ = 1e-5).

Probabilistic DP is not DP: with probability up to δ the output reveals more than e^ε, without
limit (an output can even rule a neighbour out).

**Sampling** (exact in distribution, no per-person loop): a Dirichlet–multinomial splits into
Beta-binomials over halves of the origins (aggregation and neutrality of the Dirichlet), so each
destination's m workers are split recursively, level by level over all destinations at once; a
range holding no synthetic worker stops. Work is O(non-empty output cells × log k), not O(cells).
A table too large for a dense vector (the national one) is released without a vector over its
domain by :meth:`OnTheMapSynthesizer.sparse_release` (its docstring and
:func:`symmetric_profile` say why it is exact), with the same α and m.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
from scipy import special, stats

from dpcore.mechanisms import register
from dpcore.mechanisms.base import (
    DELTA,
    EPSILON,
    NEIGHBOURS,
    SUBSTITUTION,
    CentralMechanism,
    Param,
)
from dpcore.mechanisms.central import _as_counts, l1_sensitivity

EPSILON_DP, TEST = "epsilon_dp", "test"
EXACT, NOISY = "exact", "noisy"
ALL, PARENT = "all", "parent"
#: Up to this destination size :func:`pdp_delta` sums every term of every tail (O(m²), 0.15 s
#: at this size); beyond it reports :func:`pdp_delta_bound`. The prior always uses the bound.
TEST_MAX_WORKERS = 1000
#: The bounded test stops summing a tail once its remainder's bound is at most this share of it.
TAIL_SLACK = 1e-3
#: :func:`pdp_delta_bound` splits its ranges of cell counts until none is bounded more than this
#: share above the worst single count.
BOUND_SLACK = 0.01
#: Relative margin on every bounded tail, for rounding in the log-space sums (≈ 1e-10 at m = 10⁶).
ROUNDING = 1e-6
#: Tail terms per vectorised block (bounds memory: 32 MB of float64).
TAIL_CHUNK = 1 << 22

PRIOR = Param("prior", "Prior α", EPSILON_DP, str, choices=(EPSILON_DP, TEST),
              help="epsilon_dp: α = m/(e^ε − 1) per destination, the smallest prior giving ε-DP "
                   "residences. test: the smallest α passing the (ε, δ)-probabilistic-DP test "
                   "(a bound on δ that is never below the true one, at most about 1 % above "
                   "the exact sum; any destination size).")
TOTAL = Param("total", "Workers per destination (m)", EXACT, str, choices=(EXACT, NOISY),
              help="exact: m = n(d), as OnTheMap deploys it (totals published exactly). noisy: m "
                   "from a discrete-Laplace count, so the whole release is ε-DP.")
TOTAL_SHARE = Param("total_share", "Share of ε for the noisy totals", 0.1, float, low=0.01,
                    high=0.99, help="Used only with noisy totals: ε·share for the totals, the "
                                    "rest for the residences.")
CANDIDATES = Param("candidates", "Candidate origins", ALL, str, choices=(ALL, PARENT),
                   help="all: every origin. parent: a workplace's homes are drawn among the "
                        "origins in its own parent area (e.g. county), and those of its workers "
                        "from elsewhere among the other origins; the split is published exactly. "
                        "Needs a table with a parent level and exact totals.")

PDP = "(ε, δ)-probabilistic DP"
CAVEAT = ("With prior 'test' its guarantee is (ε, δ)-probabilistic DP, which is not DP: with "
          "probability up to δ the synthetic table can reveal a worker's residence with no bound "
          "at all. With m = n(d) (totals 'exact', as deployed) every workplace's number of "
          "workers is published exactly, which OnTheMap protects separately by noise infusion "
          "(not modelled here); totals 'noisy' with prior 'epsilon_dp' make the whole release "
          "ε-DP.")
PLAIN_PDP = ("Probabilistic DP is not DP: with probability up to δ the synthetic table can reveal "
             "a worker's residence with no bound at all.")
PLAIN_TOTALS = ("With m = n(d) every workplace's number of workers is published exactly; OnTheMap "
                "protects those totals separately (noise infusion), which is not modelled here.")
PLAIN_SHRUNK = ("With candidates 'parent' the number of a workplace's workers who live in its own "
                "parent area is published exactly too, and the guarantee covers a home moving "
                "within that area or within the rest, not between them.")


# ---------------------------------------------------------------------------- privacy analysis
def pure_alpha(m: float, epsilon: float) -> float:
    """The smallest uniform prior for which m synthetic residences are ε-DP: m/(e^ε − 1)."""
    return float(m) / math.expm1(epsilon)


def max_ratio(alpha: float, m: float) -> float:
    """The worst likelihood ratio between neighbouring tables over every table and output:
    1 + m/α (a worker moved from an origin then empty, all m synthetic workers drawn there)."""
    return 1.0 + float(m) / float(alpha)


def _threshold(x: np.ndarray, alpha: float, epsilon: float) -> np.ndarray:
    """The synthetic count above which a cell holding x real workers breaks the e^ε bound."""
    return math.expm1(epsilon) * (alpha + np.maximum(x - 1, 0))


def cell_tail(x: np.ndarray, alpha: float, m: int, n: int, k: int, epsilon: float) -> np.ndarray:
    """P[s_i > threshold] for a cell holding x of the n workers: s_i ~ Beta-binomial(m; x + α,
    n − x + (k − 1)α), the marginal of the Dirichlet–multinomial. Summed term by term in log
    space (SciPy's ``sf`` is 1 − cdf, whose cancellation hides tails below about 1e-10)."""
    x = np.asarray(x, dtype=float)[:, None]
    s = np.arange(m + 1, dtype=float)[None, :]
    a, b = x + alpha, n - x + (k - 1) * alpha
    log_pmf = (special.gammaln(m + 1) - special.gammaln(s + 1) - special.gammaln(m - s + 1)
               + special.betaln(s + a, m - s + b) - special.betaln(a, b))
    above = s > np.floor(_threshold(x, alpha, epsilon))
    return np.exp(special.logsumexp(np.where(above, log_pmf, -np.inf), axis=1))


def pdp_delta(alpha: float, m: int, k: int, epsilon: float, n: int | None = None) -> float:
    """An upper bound on the δ of (ε, δ)-probabilistic DP for a destination of n workers (default
    m) over k origins with uniform prior α: k · max over x = 0…n of :func:`cell_tail`, summed
    exactly up to :data:`TEST_MAX_WORKERS` workers (the reference the bound is tested against),
    :func:`pdp_delta_bound` beyond."""
    n = m if n is None else n
    if m > TEST_MAX_WORKERS:
        return pdp_delta_bound(alpha, m, k, epsilon, n)
    x = np.arange(n + 1)
    x = x[_threshold(x, alpha, epsilon) < m]          # beyond: the tail is empty
    return float(min(1.0, k * cell_tail(x, alpha, m, n, k, epsilon).max())) if x.size else 0.0


def pdp_delta_bound(alpha: float, m: int, k: int, epsilon: float, n: int | None = None) -> float:
    """:func:`pdp_delta` in O(terms that matter) instead of O(m²), for any m: never below the
    exact sum, at most ≈ 1 % above it (:data:`BOUND_SLACK`, :data:`TAIL_SLACK`)."""
    n = m if n is None else n
    worst = _worst_tail(np.array([float(alpha)]), np.array([m]), np.array([n]), k, epsilon)
    return float(min(1.0, k * worst[0]))


def _log_pmf(s, m, a, b):
    """log P[s] of the Beta-binomial(m; a, b)."""
    return (special.gammaln(m + 1) - special.gammaln(s + 1) - special.gammaln(m - s + 1)
            + special.betaln(s + a, m - s + b) - special.betaln(a, b))


def _ratio_bound(m, a, b, s):
    """R ≥ every pmf ratio r(u) = P[u + 1]/P[u] = (m − u)(u + a)/((u + 1)(m − u − 1 + b)) of the
    Beta-binomial(m; a, b) over u ≥ s: its factor (m − u)/(m − u − 1 + b) falls with u if
    b ≥ 1 (else it is at most 1/b) and (u + a)/(u + 1) falls if a ≥ 1 (else it is below 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(b >= 1, (m - s) / (m - s - 1 + b), 1 / b)
                * np.where(a >= 1, (s + a) / (s + 1), 1.0))


def _geometric(ratio, length):
    """Σ ratio^i over i = 0…length − 1, for any ratio ≥ 0 (0 when length is 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.expm1(length * np.log(ratio)) / (ratio - 1)
    return np.where(np.isclose(ratio, 1.0, rtol=1e-12, atol=0), length, out)


#: The bounded tail's blocks start at offsets 0, 1, …, 32, then grow by 1/32 of the offset.
BLOCK_GROWTH = 32


def _block_offsets(span: int) -> np.ndarray:
    """Block starts 0, 1, … (length max(1, offset // :data:`BLOCK_GROWTH`)) until past span."""
    offsets = [0]
    while offsets[-1] <= span:
        offsets.append(offsets[-1] + max(1, offsets[-1] // BLOCK_GROWTH))
    return np.asarray(offsets, dtype=float)


def tail_bound(m, a, b, t, goal=None) -> np.ndarray:
    """Upper bounds on P[s > t], s ~ Beta-binomial(m; a, b), elementwise over arrays of one
    shape (t whole numbers), within about 1 % of the exact tail.

    Every pmf ratio from s on is at most R(s) (:func:`_ratio_bound`), so the terms s…s + L − 1
    add up to at most P[s]·(1 + R + … + R^(L−1)), and those after s to P[s]·R/(1 − R) if
    R < 1. First the terms t + 1 … t + 8 are summed (log space) and the rest bounded by the
    geometric series; an element stops there if that rest is at most :data:`TAIL_SLACK` of the
    sum, or, with a ``goal`` (same shape), if the bound is at most the goal or the sum already
    exceeds it (then only "above the goal" is meant). The others are covered up to m by blocks
    starting at offsets 0, 1, …, 32 and then 1/32 longer each time (:func:`_block_offsets`:
    ≈ 360 blocks at m = 432,557), each bounded from its first term: O(log m) terms, not O(m).
    Loose (up to 3×, capped at 1) only for tails above 0.9, where t is below the mode and the
    blocks are long beside the spread; those make δ = 1 whenever k ≥ 2."""
    m, a, b, t = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (m, a, b, t)))
    goal = None if goal is None else np.broadcast_to(np.asarray(goal, dtype=float), m.shape)
    out = np.zeros(m.shape)
    live = np.flatnonzero(t < m)
    for terms in (1, 8):
        mm, aa, bb, first = m.flat[live], a.flat[live], b.flat[live], t.flat[live] + 1
        s = first[:, None] + np.arange(terms)
        log_pmf = np.where(s <= mm[:, None], _log_pmf(np.minimum(s, mm[:, None]), mm[:, None],
                                                      aa[:, None], bb[:, None]), -np.inf)
        head = np.exp(special.logsumexp(log_pmf, axis=1))
        last = first + terms - 1
        complete = last >= mm
        ratio = _ratio_bound(mm, aa, bb, last)
        with np.errstate(divide="ignore", invalid="ignore"):
            rest = np.where(complete, 0.0, np.where(
                ratio < 1, np.exp(log_pmf[:, -1]) * ratio / (1 - ratio), np.inf))
        bound = (head + rest) * (1 + ROUNDING)
        done = complete | (rest <= TAIL_SLACK * head)
        if goal is not None:
            done |= (bound <= goal.flat[live]) | (head > goal.flat[live])
        out.flat[live[done]] = bound[done]
        live = live[~done]
    if live.size:
        offsets = _block_offsets(int((m.flat[live] - t.flat[live]).max()))
        for part in np.array_split(live, -(-live.size * offsets.size // TAIL_CHUNK)):
            mm, aa, bb = (v.flat[part][:, None] for v in (m, a, b))
            start = t.flat[part][:, None] + 1 + offsets[:-1]
            length = np.clip(np.minimum(offsets[1:] - offsets[:-1], mm - start + 1), 0, None)
            with np.errstate(divide="ignore"):
                log_block = (_log_pmf(np.minimum(start, mm), mm, aa, bb)
                             + np.log(_geometric(_ratio_bound(mm, aa, bb, start), length)))
            log_block = np.where(length > 0, log_block, -np.inf)
            out.flat[part] = np.exp(special.logsumexp(log_block, axis=1)) * (1 + ROUNDING)
    return np.minimum(out, 1.0)


#: Cell counts 0…16 are tested one by one, then ranges doubling in length (split where needed).
_SINGLE = 16


def _worst_tail(alpha, m, n, k, epsilon, goal=None) -> np.ndarray:
    """Per destination (arrays α, m, n): an upper bound on max over x = 0…n of
    P[s_x > ⌊threshold(x)⌋], s_x ~ Beta-binomial(m; x + α, n − x + (k − 1)α).

    Over a range of counts x ∈ [lo, hi] each term is at most P[s_hi > ⌊threshold(lo)⌋]: s_x
    grows stochastically with x (Beta(x + α, ·) does, and Binomial(m, p) with p) and the
    threshold with it. So ranges are bounded by one tail each and split in halves only where
    that bound is too high: above the worst single count × (1 + :data:`BOUND_SLACK`), or with a
    ``goal`` (per destination) above the goal; a destination whose single count exceeds its
    goal stops there (its value is then only "above the goal")."""
    alpha, m, n = (np.asarray(v, dtype=float) for v in (alpha, m, n))
    top = max(5, int(n.max()).bit_length()) if n.size else 5
    edges = np.minimum(np.concatenate([np.arange(_SINGLE + 1), 2.0 ** np.arange(5, top + 1)]),
                       n[:, None] + 1)
    lo, hi = edges[:, :-1], edges[:, 1:] - 1
    keep = hi >= lo
    which, lo, hi = np.nonzero(keep)[0], lo[keep], hi[keep]
    best, worst = np.zeros(alpha.size), np.zeros(alpha.size)
    c = math.expm1(epsilon)
    while which.size:
        a = alpha[which]
        bound = tail_bound(m[which], hi + a, n[which] - hi + (k - 1) * a,
                           np.floor(c * (a + np.maximum(lo - 1, 0))),
                           None if goal is None else goal[which])
        single = lo == hi
        np.maximum.at(best, which[single], bound[single])
        limit = best[which] * (1 + BOUND_SLACK) if goal is None else goal[which]
        split = ~single & (bound > limit)
        np.maximum.at(worst, which[~split], bound[~split])
        if goal is not None:
            split &= worst[which] <= goal[which]      # a destination already failed stops
        middle = np.floor((lo + hi) / 2)
        which, lo, hi = (np.concatenate(pair) for pair in (
            (which[split], which[split]), (lo[split], middle[split] + 1),
            (middle[split], hi[split])))
    return worst


#: Smallest α per (m, k, ε, δ, tol), shared by :func:`smallest_alpha` and
#: :meth:`OnTheMapSynthesizer.prior_for`; emptied when it reaches this many entries.
_ALPHAS: dict = {}
ALPHAS_KEPT = 1 << 16


def smallest_alphas(m, k: int, epsilon: float, delta: float, tol: float = 1e-3) -> np.ndarray:
    """Per destination size m (an array, n = m): the smallest uniform α (to relative ``tol``, by
    bisection on log α, all sizes at once) whose :func:`pdp_delta_bound` is at most δ; never
    above :func:`pure_alpha`, where δ = 0. Each returned α passes the bound, so the exact test
    too. Bisection takes the test as monotone in α: the exact test is on grids of 60 values for
    40–1,000 workers and the bound on 30 values for 2,000–432,557 workers (tests), but the
    exact test is not for tiny destinations (6 workers over 3 origins:
    between jumps of the integer threshold δ rises with α, 0.547 at α = 1.2 to 0.593 at 1.7),
    where a smaller passing α may exist. Cached per size."""
    sizes, where = np.unique(np.asarray(m, dtype=np.int64), return_inverse=True)
    key = (int(k), float(epsilon), float(delta), float(tol))
    missing = np.array([size for size in sizes if (int(size),) + key not in _ALPHAS],
                       dtype=np.int64)
    if missing.size:
        if len(_ALPHAS) + missing.size > ALPHAS_KEPT:
            _ALPHAS.clear()
        for size, alpha in zip(missing, _bisect(missing, k, epsilon, delta, tol)):
            _ALPHAS[(int(size),) + key] = float(alpha)
    return np.array([_ALPHAS[(int(size),) + key] for size in sizes])[where].reshape(np.shape(m))


def _bisect(m: np.ndarray, k: int, epsilon: float, delta: float, tol: float) -> np.ndarray:
    """:func:`smallest_alphas` uncached."""
    high = m / math.expm1(epsilon)
    goal = np.full(m.size, delta / k)

    def passes(alpha, which):
        return _worst_tail(alpha, m[which], m[which], k, epsilon, goal[which]) <= goal[which]

    alive = np.flatnonzero(m > 0)
    low = high * 1e-9
    small = passes(low[alive], alive)
    high[alive[small]] = low[alive[small]]
    alive = alive[~small]
    while alive.size:
        middle = np.sqrt(low[alive] * high[alive])
        ok = passes(middle, alive)
        high[alive[ok]], low[alive[~ok]] = middle[ok], middle[~ok]
        alive = alive[high[alive] / low[alive] > 1 + tol]
    # the decision above may stop on a tighter bound than :func:`pdp_delta_bound` reports: step
    # up until the reported bound passes too (rarely needed), so "α passes" means one thing
    alive = np.flatnonzero(m > 0)
    while alive.size:
        bound = k * _worst_tail(high[alive], m[alive], m[alive], k, epsilon)
        alive = alive[(bound > delta) & (high[alive] < m[alive] / math.expm1(epsilon))]
        high[alive] = np.minimum(high[alive] * (1 + tol), m[alive] / math.expm1(epsilon))
    return high


def forget_alphas() -> None:
    """Empty :func:`smallest_alphas`' cache (benchmarks time the test uncached)."""
    _ALPHAS.clear()


def smallest_alpha(m: int, k: int, epsilon: float, delta: float, tol: float = 1e-3) -> float:
    """:func:`smallest_alphas` for one destination size m."""
    return float(smallest_alphas(np.array([m]), k, epsilon, delta, tol)[0])


def destination_mean(counts: np.ndarray, alpha: float, m: float) -> np.ndarray:
    """E[s_i] = m (n_i + α)/(n + kα) for one destination of counts n over k origins."""
    counts = np.asarray(counts, dtype=float)
    return m * (counts + alpha) / (counts.sum() + counts.size * alpha)


def destination_variance(counts: np.ndarray, alpha: float, m: float) -> np.ndarray:
    """The Dirichlet–multinomial variance m q(1 − q)(A + m)/(A + 1), q = (n_i + α)/A,
    A = n + kα, for one destination."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum() + counts.size * alpha
    share = (counts + alpha) / total
    return m * share * (1 - share) * (total + m) / (total + 1)


# ----------------------------------------------------------------------------------- sampling
def dirichlet_multinomial(counts: np.ndarray, alpha: np.ndarray, m: np.ndarray,
                          rng: np.random.Generator) -> np.ndarray:
    """One Dirichlet–multinomial draw per row: row r gets m[r] workers over its k cells with
    probabilities ~ Dirichlet(counts[r] + alpha[r]). ``counts`` is (rows, k) integers."""
    rows, k = counts.shape
    return ragged_dirichlet_multinomial(counts.ravel(), np.arange(rows, dtype=np.int64) * k,
                                        np.full(rows, k, dtype=np.int64), alpha, m,
                                        rng).reshape(rows, k)


def ragged_dirichlet_multinomial(counts: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                                 alpha: np.ndarray, m: np.ndarray,
                                 rng: np.random.Generator) -> np.ndarray:
    """:func:`dirichlet_multinomial` over rows of different lengths: row r is the cells
    ``counts[starts[r]:starts[r] + lengths[r]]``. The range sums are exact (an integer prefix
    sum plus α × the range's length), so no rounding builds up over millions of cells."""
    out = np.zeros(counts.size, dtype=np.int64)
    prefix = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=prefix[1:])
    row = np.flatnonzero((m > 0) & (lengths > 0))
    _, cell, size = _halving(row, starts[row], starts[row] + lengths[row], m[row], alpha,
                             prefix, rng)
    out[cell] = size
    return out


def _halving(row, lo, hi, size, alpha, prefix, rng):
    """The Dirichlet–multinomial draws of ``size`` workers over cells [lo, hi) of each row
    (prior α[row] per cell, true counts from ``prefix``, or none if it is None), split over
    halves of the range (a Beta-binomial) until one cell or no worker is left: the leaves
    (row, cell, workers). O(occupied cells × log cells), no per-cell array."""
    leaves = []
    while row.size:
        leaf = hi - lo == 1
        leaves.append((row[leaf], lo[leaf], size[leaf]))
        row, lo, hi, size = row[~leaf], lo[~leaf], hi[~leaf], size[~leaf]
        middle = (lo + hi) // 2
        left_shape = alpha[row] * (middle - lo)
        right_shape = alpha[row] * (hi - middle)
        if prefix is not None:
            left_shape = left_shape + (prefix[middle] - prefix[lo])
            right_shape = right_shape + (prefix[hi] - prefix[middle])
        share = rng.beta(np.maximum(left_shape, 1e-300), np.maximum(right_shape, 1e-300))
        left = rng.binomial(size, share)
        row, lo, hi, size = (np.concatenate(part) for part in (
            (row, row), (lo, middle), (middle, hi), (left, size - left)))
        busy = size > 0
        row, lo, hi, size = row[busy], lo[busy], hi[busy], size[busy]
    if not leaves:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    return tuple(np.concatenate(part) for part in zip(*leaves))


#: Window of the empty cells' law drawn as a histogram: the mean ± this many standard
#: deviations (plus 5); the rare values outside it are drawn from their exact conditional tails.
WINDOW_SDS = 8.0
#: Rows × window values per histogram chunk (bounds memory: 32 MB of float64).
PROFILE_CHUNK = 1 << 22
#: z of the Poissonised total above the workers to place: the draw is redone when it falls short.
SURPLUS_SDS = 4.0


def symmetric_profile(m: np.ndarray, alpha: np.ndarray, cells: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The histogram of a symmetric Dirichlet–multinomial draw per row: m[r] workers over
    cells[r] exchangeable cells, each with prior α[r]. Returns (row, value, cells holding it)
    for every value ≥ 1 that occurs; the row's other cells hold 0. No per-cell work: the cost
    grows with the values that occur, not with the cells (the empty origins of the national
    table's workplaces, ≈ 85,000 each).

    A row whose prior weight is at most its workers (cells·α ≤ m: few cells take most of them)
    is split over halves (:func:`_halving`, exact; O(occupied cells × log cells)). The others
    (the prior outweighs the workers: mostly cells of one worker, as on the national table)
    are drawn by Poissonisation, then uniform thinning, exact because:

    1. With G_i ~ Gamma(α) i.i.d. and S = Σ G_i, p = G/S ~ Dirichlet(α, …, α) and p is
       independent of S (Lukacs). Given G, let X_i ~ Poisson(λ G_i) independently: given G and
       N = Σ X_i, X ~ Multinomial(N, p).
    2. Marginally the X_i are i.i.d. negative binomial (shape α, mean λα), so the row's
       histogram is Multinomial(cells; that law's pmf) over a window of values, plus two tail
       categories whose members are drawn by inverse CDF conditioned on the tail.
    3. If N < m the draw is redone. The event depends on G only through S (given G, N is
       Poisson(λS)), and p is independent of S, so given acceptance p is still Dirichlet.
    4. Keeping a uniformly random m of the N balls turns Multinomial(N, p) into
       Multinomial(m, p) given p (each kept ball is still a draw from p). So the result is
       Dirichlet–multinomial(m; α·1). The kept balls per value group are a multivariate
       hypergeometric (sequential hypergeometrics over the groups); within a group of c cells
       holding v ≥ 2 each, the dropped balls are split over halves of the group the same way.

    λ makes the expected N exceed m by :data:`SURPLUS_SDS` standard deviations (few redraws,
    O(√m) balls to drop)."""
    m, alpha = np.asarray(m, dtype=np.int64), np.asarray(alpha, dtype=float)
    cells = np.asarray(cells, dtype=np.int64)
    todo = np.flatnonzero(m > 0)
    if np.any(cells[todo] == 0):
        raise ValueError("workers to place on a row without cells")
    halved = todo[cells[todo] * alpha[todo] <= m[todo]]
    rows, _, values = _halving(halved, np.zeros(halved.size, np.int64), cells[halved],
                               m[halved], alpha, None, rng)
    found = [(rows, values, np.ones(rows.size, dtype=np.int64))]
    todo = todo[cells[todo] * alpha[todo] > m[todo]]
    while todo.size:
        rows, values, numbers, balls = _negbin_histogram(m[todo], alpha[todo], cells[todo], rng)
        enough = balls >= m[todo]
        kept = enough[rows]
        found.append(_keep_uniform(todo[rows[kept]], values[kept], numbers[kept],
                                   todo[enough], balls[enough], m[todo[enough]], rng))
        todo = todo[~enough]
    rows, values, numbers = (np.concatenate(part) for part in zip(*found))
    top = int(values.max()) + 1 if values.size else 1
    key, where = np.unique(rows * top + values, return_inverse=True)
    return key // top, key % top, np.bincount(where, weights=numbers).astype(np.int64)


def _negbin_histogram(m, alpha, cells, rng):
    """Step 2 of :func:`symmetric_profile` for each row (index into the arguments): (row, value,
    cells) with value ≥ 1, and each row's total N."""
    lam = m / (cells * alpha)
    for _ in range(2):      # E[N] = m + SURPLUS_SDS·sd(N), sd² = cells·αλ(1 + λ)
        lam = (m + SURPLUS_SDS * np.sqrt(m * (1 + lam)) + 1) / (cells * alpha)
    success = 1 / (1 + lam)
    mean, sd = alpha * lam, np.sqrt(alpha * lam * (1 + lam))
    half = (np.sqrt(2 * np.log(np.maximum(cells, 2))) + WINDOW_SDS) * sd + 5
    lo = np.maximum(0, np.floor(mean - half)).astype(np.int64)
    hi = np.maximum(np.ceil(mean + half).astype(np.int64), lo)
    below = np.where(lo > 0, special.betainc(alpha, np.maximum(lo, 1), success), 0.0)
    above = special.betainc(hi + 1, alpha, 1 - success)       # P[X > hi]
    rows, values, numbers = [], [], []
    width = hi - lo + 1
    step = max(1, PROFILE_CHUNK // int(width.max()))
    for start in range(0, m.size, step):
        part = slice(start, start + step)
        x = lo[part, None] + np.arange(int(width[part].max()))[None, :]
        a, p = alpha[part, None], success[part, None]
        pmf = np.exp(special.gammaln(x + a) - special.gammaln(a) - special.gammaln(x + 1)
                     + a * np.log(p) + x * np.log1p(-p))
        pmf[x > hi[part, None]] = 0.0
        probs = np.column_stack([below[part], pmf, above[part]])
        drawn = rng.multinomial(cells[part], probs / probs.sum(axis=1, keepdims=True))
        r, c = np.nonzero(drawn[:, 1:-1])
        rows.append(r + start)
        values.append(x[r, c])
        numbers.append(drawn[r, c + 1])
        for column, upper in ((0, False), (-1, True)):
            row = np.repeat(np.arange(drawn.shape[0]), drawn[:, column]) + start
            if row.size:
                rows.append(row)
                values.append(_tail(row, upper, alpha, success, lo, hi, below, above, rng))
                numbers.append(np.ones(row.size, dtype=np.int64))
    rows, values, numbers = (np.concatenate(part) for part in (rows, values, numbers))
    real = values > 0
    rows, values, numbers = rows[real], values[real].astype(np.int64), numbers[real]
    balls = np.bincount(rows, weights=values * numbers, minlength=m.size).astype(np.int64)
    order = np.argsort(rows, kind="stable")
    return rows[order], values[order], numbers[order], balls


def _tail(row, upper: bool, alpha, success, lo, hi, below, above, rng):
    """Values beyond the window, by the inverse of the law conditioned on that tail:
    X | X > hi (inverse survival function) or X | X < lo (inverse CDF)."""
    u = rng.random(row.size)
    if upper:
        drawn = stats.nbinom.isf(u * above[row], alpha[row], success[row])
        return np.maximum(drawn, hi[row] + 1).astype(np.int64)
    drawn = stats.nbinom.ppf(u * below[row], alpha[row], success[row])
    return np.minimum(drawn, lo[row] - 1).astype(np.int64)


def _keep_uniform(rows, values, numbers, which, balls, keep, rng):
    """Step 4 of :func:`symmetric_profile`: rows ``which`` hold ``balls`` balls in groups
    (row, value, cells holding it), sorted by row; keep ``keep`` of them uniformly at random.
    Returns the kept histogram as (row, value ≥ 1, cells)."""
    left_balls = np.zeros(rows.max() + 1 if rows.size else 0, dtype=np.int64)
    left_keep = np.zeros_like(left_balls)
    left_balls[which], left_keep[which] = balls, keep
    starts = np.searchsorted(rows, rows, side="left")
    rank = np.arange(rows.size) - starts
    kept = np.zeros(rows.size, dtype=np.int64)
    by_rank = np.argsort(rank, kind="stable")
    for g in np.split(by_rank, np.flatnonzero(np.diff(rank[by_rank])) + 1):
        row, good = rows[g], values[g] * numbers[g]
        kept[g] = rng.hypergeometric(good, left_balls[row] - good, left_keep[row])
        left_balls[row] -= good
        left_keep[row] -= kept[g]
    dropped = values * numbers - kept
    whole = (dropped == 0) | (values == 1)
    out_rows = [rows[whole]]
    out_values = [values[whole]]
    out_numbers = [np.where(values[whole] == 1, kept[whole], numbers[whole])]
    # the other groups' c cells of v balls lose ``dropped`` balls: split over halves of the
    # group (hypergeometric); a range losing none keeps v in every cell. O(dropped · log c).
    group = np.flatnonzero(~whole)
    lo, hi, size = np.zeros(group.size, np.int64), numbers[group], dropped[group]
    while group.size:
        v = values[group]
        done = (size == 0) | (hi - lo == 1)
        out_rows.append(rows[group[done]])
        out_values.append((v - size)[done])
        out_numbers.append((hi - lo)[done])
        group, lo, hi, size, v = group[~done], lo[~done], hi[~done], size[~done], v[~done]
        middle = (lo + hi) // 2
        left = rng.hypergeometric(v * (middle - lo), v * (hi - middle), size)
        group, lo, hi, size = (np.concatenate(part) for part in (
            (group, group), (lo, middle), (middle, hi), (left, size - left)))
    rows, values, numbers = (np.concatenate(part) for part in (out_rows, out_values,
                                                               out_numbers))
    real = (values > 0) & (numbers > 0)
    return rows[real], values[real], numbers[real]


#: The table :func:`by_destination` grouped last (a weak reference) and its answer: a sweep
#: releases one table many times, and grouping the national table's 8 M cells is a 1 s sort.
_GROUPED: tuple = (lambda: None, None)


def by_destination(od) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The order that groups ``od``'s non-empty cells by destination (origins ascending within
    one), each destination's number of them and where its group starts."""
    global _GROUPED
    source, answer = _GROUPED
    if source() is od:
        return answer
    cols = od.cols.astype(np.int32) if od.n_destinations < 2 ** 31 else od.cols
    order = np.argsort(cols, kind="stable")       # cells come sorted by origin
    filled = np.bincount(od.cols, minlength=od.n_destinations)
    answer = (order, filled, np.concatenate([[0], np.cumsum(filled)[:-1]]).astype(np.int64))
    for array in answer:
        array.flags.writeable = False
    _GROUPED = (weakref.ref(od), answer)
    return answer


@register
class OnTheMapSynthesizer(CentralMechanism):
    """OnTheMap's residence synthesizer (module docstring): a Dirichlet–multinomial per
    destination. Unbound, the whole vector is one destination; :meth:`for_destinations` binds it
    to an OD table whose flat cell is ``origin × destinations + destination``.

    No ``variance``/``expected`` over a table: both depend on each destination's total, not only
    on a cell's count and the table's n and d (the contract the planner relies on); the
    per-destination laws are :func:`destination_mean` and :func:`destination_variance`."""

    key = "onthemap"
    name = "OnTheMap synthesizer"
    uses_delta = True
    params = (EPSILON, DELTA, NEIGHBOURS, PRIOR, TOTAL, TOTAL_SHARE, CANDIDATES)
    caveat = CAVEAT
    references = ("Machanavajjhala, Kifer, Abowd, Gehrke, Vilhuber. Privacy: theory meets "
                  "practice on the map. ICDE 2008, pp. 277–286.",)
    destinations = 1
    #: Each origin's and each destination's parent area (public geography), for candidates
    #: 'parent'; None: unknown.
    areas: tuple[np.ndarray, np.ndarray] | None = None

    def __init__(self, **values):
        super().__init__(**values)
        if self.prior == TEST and self.total == NOISY:
            raise ValueError("The 'prior' parameter of OnTheMapSynthesizer cannot be 'test' with "
                             "noisy totals: the probabilistic test needs each destination's true "
                             "size; use prior 'epsilon_dp' (the whole release is then ε-DP).")
        if self.candidates == PARENT and self.total == NOISY:
            raise ValueError("The 'candidates' parameter of OnTheMapSynthesizer cannot be "
                             "'parent' with noisy totals: the number of workers from each "
                             "workplace's own area would be published exactly, so the release "
                             "would not be ε-DP; use candidates 'all'.")

    def for_destinations(self, destinations: int, origin_areas=None,
                         destination_areas=None) -> OnTheMapSynthesizer:
        """This synthesizer for a table with ``destinations`` destinations (columns), and the
        parent area of each origin and destination where the table has them."""
        bound = type(self)(**self.settings)
        bound.destinations = int(destinations)
        if origin_areas is not None and destination_areas is not None:
            bound.areas = (np.asarray(origin_areas), np.asarray(destination_areas))
        return bound

    @property
    def synthesis_epsilon(self) -> float:
        """The ε of each destination's synthesis: all of ε with exact totals (one worker's home
        moves within a workplace); with noisy totals what the totals leave, halved under
        substitution, where a worker leaves one workplace's histogram and joins another's."""
        if self.total == EXACT:
            return self.epsilon
        return self.epsilon * (1 - self.total_share) / l1_sensitivity(self.neighbours)

    @property
    def guarantee(self) -> str:
        if self.total == NOISY:
            return "ε-DP"
        totals = "exact totals" if self.candidates == ALL else "exact totals and in-area counts"
        return (f"ε-DP residences, {totals}" if self.prior == EPSILON_DP
                else f"{PDP}, {totals}")

    def prior_for(self, m: np.ndarray, k: int) -> np.ndarray:
        """α(d) for destinations of m workers over k origins (one test per distinct size,
        cached)."""
        m = np.asarray(m, dtype=np.int64)
        if self.prior == EPSILON_DP:
            return np.maximum(m, 1) / math.expm1(self.synthesis_epsilon)
        alphas = smallest_alphas(m, k, self.epsilon, self.delta)
        return np.where(m > 0, alphas, 1.0)

    def _table(self, counts) -> np.ndarray:
        """Counts as a (destinations, origins) integer array, or a ValueError."""
        counts = _as_counts(counts)
        whole = np.rint(counts)
        if counts.dtype.kind == "f" and not np.array_equal(whole, counts):
            raise ValueError("counts must be whole numbers of workers.")
        if counts.size % self.destinations:
            raise ValueError(f"{counts.size} cells do not split into {self.destinations} "
                             f"destinations.")
        return whole.astype(np.int64).reshape(-1, self.destinations).T

    def sizes(self, totals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """m per destination: the true totals, or (``total='noisy'``) discrete-Laplace counts,
        clipped at 0."""
        if self.total == EXACT:
            return totals
        # one total moves by 1 (add/remove) or two do (substitution)
        rate = self.epsilon * self.total_share / l1_sensitivity(self.neighbours)
        noise = (np.floor(rng.standard_exponential(totals.size) / rate)
                 - np.floor(rng.standard_exponential(totals.size) / rate))
        return np.maximum(totals + noise, 0).astype(np.int64)

    def release(self, counts, rng):
        table = self._table(counts)
        m = self.sizes(table.sum(axis=1), rng)
        if self.candidates == PARENT:
            return self._shrunk(table, rng).T.ravel().astype(np.float64)
        alpha = self.prior_for(m, table.shape[1])
        drawn = dirichlet_multinomial(table, alpha, m, rng)
        return drawn.T.ravel().astype(np.float64)

    def sparse_release(self, od, rng: np.random.Generator):
        """The release of an OD matrix without building a vector over its domain (the national
        table: 85,000 origins per workplace, a few dozen of them non-empty). Returns the
        synthetic counts of the table's non-empty cells (``od.flat_index`` order), the
        histogram of the empty cells as (destination, value ≥ 1, cells holding it), and each
        destination's number of empty cells.

        Exact in distribution, with the dense release's α and m: relabelling the origins does
        not change a Dirichlet–multinomial (its parameters move with them), and by the
        Dirichlet's aggregation and neutrality the workers going to a destination's empty
        origins number Beta-binomial(m; n + sα, eα) (s non-empty, e empty origins), and given
        that number the two blocks are independent Dirichlet–multinomials: the non-empty one
        drawn by :func:`ragged_dirichlet_multinomial`, the empty one — all its cells alike,
        prior α each — as a histogram by :func:`symmetric_profile`. So the same privacy
        analysis holds: same neighbours, same α (:meth:`prior_for`, whose refusals apply).
        """
        if self.candidates == PARENT:
            raise ValueError("The 'candidates' parameter of OnTheMapSynthesizer is 'parent', "
                             "which has no sparse release (each workplace's candidate origins "
                             "are then an area, not the whole table); choose candidates 'all'.")
        k = od.n_origins
        order, filled, starts = by_destination(od)
        counts = od.counts[order]
        totals = np.bincount(od.cols, weights=od.counts, minlength=filled.size).astype(np.int64)
        m = self.sizes(totals, rng)
        alpha = self.prior_for(m, k)
        empty = k - filled
        inside, outside = totals + filled * alpha, empty * alpha
        share = rng.beta(np.maximum(inside, 1e-300), np.maximum(outside, 1e-300))
        share = np.where(empty == 0, 1.0, np.where(filled == 0, 0.0, share))
        to_filled = rng.binomial(m, share)
        drawn = ragged_dirichlet_multinomial(counts, starts, filled, alpha, to_filled, rng)
        nonzero = np.empty(od.nonzero, dtype=np.float64)
        nonzero[order] = drawn
        return nonzero, symmetric_profile(m - to_filled, alpha, empty, rng), empty

    def _shrunk(self, table: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Domain shrinking by the parent area: per group of workplaces in one area, the workers
        from inside the area are synthesized over its origins only (the prior spread over
        fewer cells), those from outside over the other origins; each part keeps its size."""
        if self.areas is None or self.areas[0].size != table.shape[1] \
                or self.areas[1].size != table.shape[0]:
            raise ValueError("The 'candidates' parameter of OnTheMapSynthesizer is 'parent', "
                             "which needs a table whose zones name their parent area (e.g. EDs "
                             "in counties); choose candidates 'all' for this table.")
        origin_areas, destination_areas = self.areas
        out = np.zeros_like(table)
        for area in np.unique(destination_areas):
            rows = np.flatnonzero(destination_areas == area)
            inside = origin_areas == area
            for cols in (np.flatnonzero(inside), np.flatnonzero(~inside)):
                if cols.size:
                    part = table[np.ix_(rows, cols)]
                    m = part.sum(axis=1)
                    out[np.ix_(rows, cols)] = dirichlet_multinomial(
                        part, self.prior_for(m, cols.size), m, rng)
        return out

    def explain(self):
        eps = self.synthesis_epsilon
        if self.prior == EPSILON_DP:
            prior = (f"The prior is $\\alpha(d) = m/(e^{{\\varepsilon}} - 1)$ with "
                     f"ε = {eps:g}: the smallest that makes the residences ε-DP (the worst "
                     f"likelihood ratio between neighbouring tables is $1 + m/\\alpha$). At "
                     f"small ε it outweighs the data, so the synthetic residences are spread "
                     f"over every origin.")
        else:
            prior = (f"The prior is the smallest α passing the privacy test for {PDP} at "
                     f"ε = {self.epsilon:g}, δ = {self.delta:g}. " + PLAIN_PDP)
        relation = ("one worker is added or removed" if self.neighbours != SUBSTITUTION
                    else "one worker's commute (home and workplace) is replaced")
        totals = (f"The number of workers per workplace is a discrete-Laplace count with "
                  f"ε·{self.total_share:g}, so the whole release is ε-DP with ε = "
                  f"{self.epsilon:g} when {relation}."
                  if self.total == NOISY else
                  PLAIN_TOTALS + " So the guarantee covers a worker's home changing while the "
                  "workplace stays the same, whichever neighbouring relation is chosen.")
        if self.candidates == PARENT:
            totals += (" Each workplace's candidate origins are those of its own parent area "
                       "(domain shrinking: the prior spreads over fewer cells). " + PLAIN_SHRUNK)
        return (
            "**OnTheMap synthesizer (US Census Bureau, LODES).** For each workplace d, the "
            "origins of its workers are replaced by m synthetic ones:\n\n"
            "$$p \\sim \\mathrm{Dirichlet}(n(d) + \\alpha(d)),\\qquad "
            "s(d) \\sim \\mathrm{Multinomial}(m, p)$$\n\n"
            f"{prior} {totals}\n\n"
            f"Guarantee: {self.guarantee}.\n\n"
            "In plain words: each workplace keeps its number of workers, and their homes are "
            "redrawn from a blend of the real homes and a spread-out guess; the bigger the "
            "guess's weight α, the more private and the less like the real table.")
