"""The 95 % interval of an answer on an OnTheMap release: debiased from the synthesizer's known law.

OnTheMap's synthesizer (:mod:`dpcore.mechanisms.onthemap`) adds no noise: per workplace d it
draws m synthetic homes from a Dirichlet–multinomial with parameters n(d) + α(d) over its k
candidate origins. Its answers are **biased towards uniform**: E[s_i] = m(n_i + α)/A with
A = n + kα, so a released sum s_S has no interval around itself (its bias depends on the
confidential n_S, and at ε = 1 the prior outweighs the data). The law is known exactly, so the
bias can be removed:

* **Per unit** — a workplace, or with candidates 'parent' each of its two candidate groups (the
  origins in its own parent area, the others), synthesized apart with its own size. By the
  Dirichlet's aggregation property s_S ~ Beta-binomial(m; n_S + |S|α, A − n_S − |S|α), units
  independent. So n̂_S = s_S·A/m − |S|α is unbiased for n_S, with variance
  (A/m)²·m·Q(1 − Q)·(A + m)/(A + 1), Q = (n_S + |S|α)/A, taken at n̂_S clipped to [0, m]
  (plug-in) and, as a guard for low synthetic counts, at that estimate ± 1.96 sd too (the
  largest of the three). A set covering a whole unit (a workplace's jobs) has Q = 1: exact.
* **The answer**: Σ over units of n̂_S ± 1.96 sd (variance summed), low at least 0. m is each
  unit's released total and α the mechanism's own function of m and k
  (:meth:`~dpcore.mechanisms.onthemap.OnTheMapSynthesizer.prior_for`): public.
* **Small workplaces** (m < :data:`SMALL_WORKPLACE`): a worker moves the estimate by A/m (40 and
  more at ε = 1), so the normal law fails there (measured: ``test_shortfall_without_the_guards``).
  Their part of a set (not the whole unit) is bounded instead: it lies in [0, m], which widens
  the interval's upper end by m (the estimate shows it clipped to [0, m]).
* **Noisy totals** (``total='noisy'``): m = n + Z (discrete Laplace, public scale), so A is
  estimated by m + kα and n̂_S gains Q·(m − n) to first order: Var(Z)·Q² is added per unit. A
  workplace with m below :data:`NOISY_SDS` noise sds is beyond that first order: an answer
  drawing on one gets no interval (its total may be far from n, or 0).

Each answer's unit sums come from evaluating the query on the vector restricted to one unit at
a time (queries are linear): units × queries evaluations, up to :data:`MOST_UNIT_CELLS`
(units × cells), beyond which no interval is given and the method says why — as for a sparse
release and for post-processing other than 'base'. Coverage: ``tests/test_analyses_synthesized.py``.

The same law at the true table gives the planner's half-widths (:func:`plan`) and the error of
the raw synthetic answer against ε (:func:`raw_rmse`: bias² + variance, for Tradeoffs).
"""

from __future__ import annotations

import math

import numpy as np

from dpcore import release
from dpcore.analyses.intervals import Z_NORMAL
from dpcore.mechanisms import onthemap as otm
from dpcore.mechanisms.central import l1_sensitivity
from dpcore.mechanisms.sparse_vector import SparseVector

KEY = "onthemap"
#: Units × cells up to which the per-unit evaluation runs (the county: 35 × 1,085; two ED
#: counties with candidates 'parent': 290 × 21,025); the ED table (3,130 × 9.8 M) is far beyond.
MOST_UNIT_CELLS = 20_000_000
#: Workplaces (units) drawn with fewer workers get the bound [0, m] instead of the normal law.
SMALL_WORKPLACE = 20
#: With noisy totals, the noise sds below which a workplace is too small for the first-order
#: correction of its estimated A.
NOISY_SDS = 10.0
#: Relative slack added to every half-width for floating-point rounding of A/m and α.
ROUNDING = 1e-9

METHOD = ("debiased from the synthesizer's known law, ±1.96 sd: the synthetic answer itself is "
          "biased towards uniform by the prior α and has no interval (its bias depends on the "
          "confidential counts), so the interval is around the unbiased estimate "
          "n̂ = Σ_d (s_S(d)·A/m − |S|α), A = m + kα per workplace d, variance "
          "Σ_d (A/m)²·Var s_S(d) (Beta-binomial, at n̂ clipped to [0, m]); a workplace of fewer "
          f"than {SMALL_WORKPLACE} workers adds its part's bound [0, m] instead")
NOISY_NOTE = ("; noisy totals: + Var(noise)·Q² per workplace for the estimated A, and no interval "
              f"for answers on a workplace under {NOISY_SDS:g} noise sds ({{small:,.0f}} workers)")
PARENT_NOTE = "; candidates 'parent': each workplace's two candidate groups apart"
NO_SHARE = ("the synthetic share is a ratio of two sums biased towards uniform; only the sums get "
            "a debiased interval here (the table above), not their ratio")
NOT_BASE = ("no interval: the synthetic table after '{post}' no longer follows the synthesizer's "
            "law; choose the post-processing 'base'")
SPARSE = ("no interval: not computed for a sparse release (the per-workplace variance needs one "
          "pass per workplace over a dense table)")
TOO_LARGE = ("no interval: not computed: {units:,} workplaces × {cells:,} cells is beyond the "
             f"{MOST_UNIT_CELLS:,} the per-workplace variance is evaluated on")


def noise_variance(mechanism) -> float:
    """Var of the discrete-Laplace noise of a noisy total (0 with exact totals)."""
    if mechanism.total != otm.NOISY:
        return 0.0
    rate = mechanism.epsilon * mechanism.total_share / l1_sensitivity(mechanism.neighbours)
    a = math.exp(-rate)
    return 2 * a / (1 - a) ** 2


def small_size(mechanism) -> float:
    """The size below which a workplace does not get the normal law (module docstring)."""
    if mechanism.total == otm.NOISY:
        return NOISY_SDS * math.sqrt(noise_variance(mechanism))
    return SMALL_WORKPLACE


def groups(od, mechanism) -> list[tuple[int, np.ndarray]]:
    """Each unit's destination and candidate origins (a mask over the origins), as released."""
    every = np.ones(od.n_origins, dtype=bool)
    if mechanism.candidates != otm.PARENT:
        return [(d, every) for d in range(od.n_destinations)]
    origin_areas, destination_areas = mechanism.areas
    found = []
    for d in range(od.n_destinations):
        inside = origin_areas == destination_areas[d]
        found += [(d, group) for group in (inside, ~inside) if group.any()]
    return found


def too_large(od, mechanism) -> str | None:
    """Why the per-unit evaluation is not run on ``od``, or None."""
    units = od.n_destinations * (2 if mechanism.candidates == otm.PARENT else 1)
    if units * od.domain_size > MOST_UNIT_CELLS:
        return TOO_LARGE.format(units=units, cells=od.domain_size)
    return None


def unit_sums(od, units, queries, vector) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: its total in ``vector`` (m), and per answer (every query's parts, concatenated)
    the cells of the set in the unit (|S_u|) and the vector's sum over them (s_S(u))."""
    vector = np.asarray(vector, dtype=float)
    grid = vector.reshape(od.n_origins, od.n_destinations)
    inside, sums = [], []
    for d, mask in units:
        ones = np.zeros_like(grid)
        ones[mask, d] = 1.0
        ones = ones.ravel()
        part = vector * ones
        inside.append(np.concatenate([np.asarray(q.compute(ones)[0], float) for q in queries]))
        sums.append(np.concatenate([np.asarray(q.compute(part)[0], float) for q in queries]))
    return unit_totals(od, units, vector), np.array(inside), np.array(sums)


def unit_totals(od, units, vector) -> np.ndarray:
    """Each unit's total in ``vector`` (its m in a release)."""
    grid = np.asarray(vector, dtype=float).reshape(od.n_origins, od.n_destinations)
    return np.array([grid[mask, d].sum() for d, mask in units])


def priors(mechanism, units, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's candidates k and prior α (the mechanism's, from its size m)."""
    k = np.array([int(mask.sum()) for _, mask in units])
    alpha = np.zeros(m.size)
    for size in np.unique(k):   # one prior per number of candidates (its own test)
        alpha[k == size] = mechanism.prior_for(np.rint(m[k == size]).astype(np.int64), int(size))
    return k, alpha


def _variance(scale, value, inside, alpha, total, m):
    """The Beta-binomial variance of the estimate (A/m)²·Var s_S at n_S = value, and Q."""
    share = (np.clip(value, 0.0, m) + inside * alpha) / total
    return scale * share * (1 - share), share


def bounds(mechanism, m, k, alpha, inside, s) -> tuple[np.ndarray, ...]:
    """(low, high, estimate) per answer from the unit sums of a release (module docstring)."""
    noise, small = noise_variance(mechanism), small_size(mechanism)
    m, k, alpha = m[:, None], k[:, None], alpha[:, None]
    total = m + k * alpha
    used = inside > 0
    big = m >= small
    partial = used & (inside < k)
    safe_m = np.where(m > 0, m, 1.0)
    guess = np.where(used, s * total / safe_m - inside * alpha, 0.0)
    scale = total ** 2 * (total + m) / (safe_m * (total + 1))
    plug, share = _variance(scale, guess, inside, alpha, total, m)
    spread = Z_NORMAL * np.sqrt(plug)
    var = np.maximum(plug, np.maximum(_variance(scale, guess - spread, inside, alpha, total, m)[0],
                                      _variance(scale, guess + spread, inside, alpha, total, m)[0]))
    var = var + noise * share ** 2
    normal = used & big & (m > 0)
    bounded = used & ~big & (m > 0)   # exact totals: a whole unit is exact, a part in [0, m]
    shown = np.where(partial, np.clip(guess, 0.0, m), s)
    estimate = (np.where(normal, guess, 0.0) + np.where(bounded, shown, 0.0)).sum(axis=0)
    centre = (np.where(normal, guess, 0.0) + np.where(bounded & ~partial, s, 0.0)).sum(axis=0)
    wide = np.where(bounded & partial, m, 0.0).sum(axis=0)
    sd = np.sqrt(np.where(normal, var, 0.0).sum(axis=0))
    # + floating rounding, so that an exact answer (a workplace's jobs) covers itself
    half = Z_NORMAL * sd + ROUNDING * (np.abs(estimate) + 1.0)
    low, high = np.maximum(centre - half, 0.0), centre + half + wide
    if noise:   # small workplaces with noisy totals: beyond the first-order correction
        refused = (used & ~big).any(axis=0)
        low, high, estimate = (np.where(refused, np.nan, x) for x in (low, high, estimate))
    return low, high, estimate


class Synthesized:
    """The interval rule of one OnTheMap release (module docstring): ``method``, ``covered``,
    and ``all_bounds`` → per query (low, high, estimate), for
    :func:`dpcore.analyses.answers.evaluate`."""

    def __init__(self, od, mechanism, released, postprocess: str = "base"):
        self.od, self.mechanism, self.released = od, mechanism, released
        self.units = groups(od, mechanism)
        if postprocess != "base":
            self.method = NOT_BASE.format(post=postprocess)
        elif isinstance(released, SparseVector):
            self.method = SPARSE
        else:
            self.method = too_large(od, mechanism) or METHOD + (
                NOISY_NOTE.format(small=small_size(mechanism))
                if mechanism.total == otm.NOISY else "") + (
                PARENT_NOTE if mechanism.candidates == otm.PARENT else "")
        self.covered = self.method.startswith(METHOD)

    def all_bounds(self, queries, answers, cells) -> list[tuple]:
        """(low, high, estimate) of every query's answers."""
        if not self.covered:
            return [(np.full(np.shape(a), np.nan),) * 3 for a in answers]
        m, inside, s = unit_sums(self.od, self.units, queries, self.released)
        k, alpha = priors(self.mechanism, self.units, m)
        low, high, estimate = bounds(self.mechanism, m, k, alpha, inside, s)
        split = np.cumsum([len(q.parts) for q in queries])[:-1]
        return list(zip(*(np.split(x, split) for x in (low, high, estimate))))


def rule(od, mechanism, released, postprocess: str = "base") -> Synthesized:
    """The interval rule of an OnTheMap release ``released`` of ``od`` by ``mechanism`` (bound
    to the table: :func:`dpcore.release.check`)."""
    return Synthesized(od, mechanism, released, postprocess)


# ------------------------------------------------------------------- the law at the true table
def bound(od, params: dict, epsilon: float):
    """The mechanism with ``params`` at ε, bound to ``od`` as the release pipeline binds it."""
    return release.check(release.ReleaseSpec(KEY, float(epsilon), tuple(dict(params).items())),
                         od)


class Theory:
    """OnTheMap's law at the true table for a set of answers, at any ε: the 95 % half-width of
    the debiased interval (the planner's targets) and the expected RMSE of the raw synthetic
    answer (Tradeoffs). The unit sums are made once; each ε only recomputes α. With noisy
    totals m is taken at its mean n (α and A at n), the noise entering through Var(Z)·Q²."""

    def __init__(self, od, truth, params: dict, queries):
        self.od, self.params = od, dict(params)
        self.bind = lambda epsilon: bound(od, self.params, epsilon)
        mechanism = self.bind(1.0)
        self.method = too_large(od, mechanism)
        if self.method is None:
            self.units = groups(od, mechanism)
            self.m, self.inside, self.true = unit_sums(od, self.units, queries, truth)
            self.answers = self.true.sum(axis=0)

    def law(self, epsilon: float) -> tuple[np.ndarray, ...]:
        """At ε: the bound mechanism, and per unit × answer m, k, A, Q and the estimate's
        variance (A/m)²·Var s_S at the true n_S."""
        mechanism = self.bind(epsilon)
        k, alpha = priors(mechanism, self.units, self.m)
        m, k, alpha = self.m[:, None], k[:, None], alpha[:, None]
        total = m + k * alpha
        share = (self.true + self.inside * alpha) / total
        safe_m = np.where(m > 0, m, 1.0)
        var = total ** 2 * (total + m) / (safe_m * (total + 1)) * share * (1 - share)
        return mechanism, m, k, total, share, var

    def half_widths(self, epsilon: float) -> np.ndarray:
        """The debiased interval's half-width per answer at its true value (inf: no interval)."""
        mechanism, m, k, _, share, var = self.law(epsilon)
        noise, small = noise_variance(mechanism), small_size(mechanism)
        used = self.inside > 0
        big = (m >= small) & (m > 0)
        sd = np.sqrt(np.where(used & big, var + noise * share ** 2, 0.0).sum(axis=0))
        wide = np.where(used & ~big & (self.inside < k), m, 0.0).sum(axis=0)
        half = Z_NORMAL * sd + wide
        if noise:
            half = np.where((used & ~big).any(axis=0), np.inf, half)
        return half

    def raw_rmse(self, epsilon: float) -> np.ndarray:
        """√(bias² + variance) of the raw synthetic answer Σ s_S per answer: E s_S = mQ,
        Var s_S = mQ(1 − Q)(A + m)/(A + 1) per unit (with noisy totals + Var(Z)·Q²)."""
        mechanism, m, _, total, share, _ = self.law(epsilon)
        used = self.inside > 0
        bias = np.where(used, m * share - self.true, 0.0).sum(axis=0)
        var = np.where(used, m * share * (1 - share) * (total + m) / (total + 1)
                       + noise_variance(mechanism) * share ** 2, 0.0).sum(axis=0)
        return np.sqrt(bias ** 2 + var)
