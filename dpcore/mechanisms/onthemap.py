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
  tight: the brute force checks that the exact δ never exceeds it.

Probabilistic DP is not DP: with probability up to δ the output reveals more than e^ε, without
limit (an output can even rule a neighbour out). The exact test costs O(m²) per destination size,
so the smallest-α prior is offered for destinations of at most :data:`TEST_MAX_WORKERS` workers.

**Sampling** (exact in distribution, no per-person loop): a Dirichlet–multinomial splits into
Beta-binomials over halves of the origins (aggregation and neutrality of the Dirichlet), so each
destination's m workers are split recursively, level by level over all destinations at once; a
range holding no synthetic worker stops. Work is O(non-empty output cells × log k), not O(cells).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

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
#: The exact probabilistic test sums Beta-binomial tails for every cell count up to m: O(m²) per
#: distinct destination size, about a second at this size.
TEST_MAX_WORKERS = 1000

PRIOR = Param("prior", "Prior α", EPSILON_DP, str, choices=(EPSILON_DP, TEST),
              help="epsilon_dp: α = m/(e^ε − 1) per destination, the smallest prior giving ε-DP "
                   "residences. test: the smallest α passing the (ε, δ)-probabilistic-DP test "
                   f"(destinations of at most {TEST_MAX_WORKERS:,} workers).")
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
    m) over k origins with uniform prior α: k · max over x = 0…n of :func:`cell_tail`."""
    n = m if n is None else n
    x = np.arange(n + 1)
    x = x[_threshold(x, alpha, epsilon) < m]          # beyond: the tail is empty
    return float(min(1.0, k * cell_tail(x, alpha, m, n, k, epsilon).max())) if x.size else 0.0


@functools.lru_cache(maxsize=4096)
def smallest_alpha(m: int, k: int, epsilon: float, delta: float, tol: float = 1e-3) -> float:
    """The smallest uniform α (to relative ``tol``, by bisection on log α) whose
    :func:`pdp_delta` is at most δ; never above :func:`pure_alpha`, where δ = 0. The returned α
    passes the test. Bisection takes the test as monotone in α: it is on grids of 60 values for
    destinations of 40–1,000 workers (tests), not for tiny ones (6 workers over 3 origins: between
    jumps of the integer threshold δ rises with α, 0.547 at α = 1.2 to 0.593 at 1.7), where a
    smaller passing α may exist."""
    high = pure_alpha(m, epsilon)
    if m == 0 or pdp_delta(high, m, k, epsilon) > delta:
        return high
    low = high * 1e-9
    if pdp_delta(low, m, k, epsilon) <= delta:
        return low
    while high / low > 1 + tol:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if pdp_delta(middle, m, k, epsilon) <= delta else (middle, high)
    return high


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
    out = np.zeros((rows, k), dtype=np.int64)
    prefix = np.zeros((rows, k + 1), dtype=np.int64)
    np.cumsum(counts, axis=1, out=prefix[:, 1:])
    row = np.flatnonzero(m > 0)
    lo, hi, size = np.zeros(row.size, np.int64), np.full(row.size, k, np.int64), m[row]
    while row.size:
        leaf = hi - lo == 1
        out[row[leaf], lo[leaf]] = size[leaf]
        row, lo, hi, size = row[~leaf], lo[~leaf], hi[~leaf], size[~leaf]
        middle = (lo + hi) // 2
        left_shape = prefix[row, middle] - prefix[row, lo] + alpha[row] * (middle - lo)
        right_shape = prefix[row, hi] - prefix[row, middle] + alpha[row] * (hi - middle)
        share = rng.beta(np.maximum(left_shape, 1e-300), np.maximum(right_shape, 1e-300))
        left = rng.binomial(size, share)
        row, lo, hi, size = (np.concatenate(part) for part in (
            (row, row), (lo, middle), (middle, hi), (left, size - left)))
        busy = size > 0
        row, lo, hi, size = row[busy], lo[busy], hi[busy], size[busy]
    return out


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
        """α(d) for destinations of m workers over k origins (one test per distinct size)."""
        m = np.asarray(m, dtype=np.int64)
        if self.prior == EPSILON_DP:
            return np.maximum(m, 1) / math.expm1(self.synthesis_epsilon)
        if m.size and m.max() > TEST_MAX_WORKERS:
            raise ValueError(f"The 'prior' parameter of {type(self).__name__} is 'test', which "
                             f"is computed exactly for destinations of at most "
                             f"{TEST_MAX_WORKERS:,} workers; the largest here has "
                             f"{int(m.max()):,}. Choose prior 'epsilon_dp'.")
        sizes, where = np.unique(m, return_inverse=True)
        alphas = [smallest_alpha(int(size), k, self.epsilon, self.delta) if size else 1.0
                  for size in sizes]
        return np.asarray(alphas)[where]

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

    def release(self, counts, rng):
        table = self._table(counts)
        totals = table.sum(axis=1)
        if self.total == NOISY:
            # one total moves by 1 (add/remove) or two do (substitution)
            rate = self.epsilon * self.total_share / l1_sensitivity(self.neighbours)
            noise = (np.floor(rng.standard_exponential(totals.size) / rate)
                     - np.floor(rng.standard_exponential(totals.size) / rate))
            m = np.maximum(totals + noise, 0).astype(np.int64)
        else:
            m = totals
        if self.candidates == PARENT:
            return self._shrunk(table, rng).T.ravel().astype(np.float64)
        alpha = self.prior_for(m, table.shape[1])
        drawn = dirichlet_multinomial(table, alpha, m, rng)
        return drawn.T.ravel().astype(np.float64)

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
