"""Privacy amplification: the central privacy shuffling or subsampling buys.

Shuffle model: n people each send one ε₀-LDP report; a shuffler hides who sent which, so the
server's view is only the multiset of reports. That view is (ε, δ)-DP (substitution) for an ε far
below ε₀.
Four upper bounds on that ε, each named by its key in :data:`BOUNDS`:

* ``fmt21`` — closed form of Feldman, McMillan, Talwar, "Hiding among the clones" [FMT21] (theorem
  form as reproduced in third-party code), valid only for ε₀ ≤ ln(n / (16 ln(2/δ)));
* ``fmt21_official`` — the slightly more conservative expression of the authors' code (validity
  checked with ln(4/δ));
* ``clone`` — FMT21's numerical bound for any ε₀-LDP randomiser (clone probability e^{−ε₀});
* ``clone_grr`` — the same computation with the clone probability 2/(e^{ε₀}+1) that k-ary randomised
  response admits: the randomiser-specific clone analysis of Feldman, McMillan, Talwar,
  "Stronger privacy amplification by shuffling for Rényi and approximate differential privacy",
  SODA 2023, arXiv 2208.04591 [FMT23] (see :func:`clone_probability`);
* ``blanket`` — the privacy blanket's numeric (Hoeffding) bound for k-RR of Balle, Bell, Gascón,
  Nissim [BBGN19] (:func:`blanket_delta`).

Each bound is increasing in ε₀, so the inverse problem (the largest ε₀ each phone may use for a
target central (ε, δ)) is solved by root finding on ε₀. A bound that does not apply raises
:class:`NotCertified` (high-level functions) or gives NaN (vectorised closed forms), never a number
that looks like a guarantee.

Poisson subsampling: a γ-subsample fed to an (ε, δ)-DP mechanism is (ln(1 + γ(e^ε − 1)), γδ)-DP
[BBG18], and the inverse.

References: [FMT21] Feldman, McMillan, Talwar, "Hiding among the clones: a simple and nearly
optimal analysis of privacy amplification by shuffling", FOCS 2021, arXiv 2012.12803 (official code:
apple/ml-shuffling-amplification). [BBGN19] Balle, Bell, Gascón, Nissim, "The privacy blanket of
the shuffle model", CRYPTO 2019, arXiv 1903.02837. [FMT23] Feldman, McMillan, Talwar, "Stronger
privacy amplification by shuffling for Rényi and approximate differential privacy", SODA 2023,
arXiv 2208.04591. [BBG18] Balle, Barthe, Gaboardi, "Privacy
amplification by subsampling: tight analyses via couplings and divergences", NeurIPS 2018.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from dpcore.theory.privacy_theory import checked_array, unwrap, whole_number

BOUNDS: dict[str, str] = {
    "fmt21": "FMT21 closed form (theorem)",
    "fmt21_official": "FMT21 closed form (authors' code)",
    "clone": "FMT21 numerical clone bound (any ε₀-LDP randomiser)",
    "clone_grr": "Numerical clone bound with the GRR clone probability 2/(e^ε₀+1) (FMT23)",
    "blanket": "Privacy blanket, numeric Hoeffding bound for k-RR (BBGN19)",
}

#: Half-width of the summed window of clone counts, in standard deviations of Bin(n−1, p_c).
WINDOW_SDS = 12.0
#: Clone counts are summed in blocks of ⌊this × mean count⌋ (at least 1), each bounded by its first
#: count (and of a quarter s.d.); δ's relative overestimate is then about ln(1/δ) × this. At most
#: ~900 blocks are evaluated.
BLOCK_FRACTION = 1e-3
#: Absolute tolerance (in ε or ε₀) of the root searches; results are rounded to the safe side.
SEARCH_TOL = 1e-6


class NotCertified(ValueError):
    """The requested bound does not apply to these parameters, so it certifies nothing."""


@dataclass(frozen=True)
class ShuffleGuarantee:
    """A central (ε, δ) guarantee for n shuffled ε₀-LDP reports, and how it was obtained."""

    bound: str       # key into BOUNDS
    n: int
    epsilon0: float  # local ε of each report
    epsilon: float   # central ε of the shuffled view (substitution)
    delta: float
    note: str        # validity condition or computation detail, for display

    @property
    def name(self) -> str:
        return BOUNDS[self.bound]


def _people(n) -> int:
    return whole_number("n", n, 1, " (number of people)")


def _delta(delta) -> float:
    return float(checked_array("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True))


# ------------------------------------------------------------------------- FMT21 closed forms
def fmt21_validity_limit(n: int, delta: float, variant: str = "theorem") -> float:
    """Largest ε₀ for which the FMT21 closed form holds: ln(n / (16 ln(c/δ))), c = 2 (theorem) or 4
    (authors' code). Negative when n is too small for the closed form to say anything."""
    n, delta = _people(n), _delta(delta)
    c = {"theorem": 2.0, "official": 4.0}[_variant(variant)]
    return math.log(n / (16.0 * math.log(c / delta)))


def _variant(variant: str) -> str:
    if variant not in ("theorem", "official"):
        raise ValueError(f"'variant' must be 'theorem' or 'official'; got {variant!r}.")
    return variant


def fmt21_epsilon(n: int, epsilon0, delta: float, variant: str = "theorem"):
    """Central ε from the FMT21 closed form (the theorem as reproduced in third-party code, paper
    text unchecked); NaN where its validity condition fails.

    Theorem: ``ε = ln(1 + (e^{ε₀}−1)/(e^{ε₀}+1) · (8√(e^{ε₀} ln(4/δ))/√n + 8e^{ε₀}/n))``.
    Official code: ``ε = ln(1 + (b/d)(a + c))`` with ``a = 8√(e^{ε₀} ln(4/δ)/n)``,
    ``c = 8e^{ε₀}/n``, ``b = 1 − e^{−ε₀}``, ``d = 1 + e^{−ε₀}/(1 + a + c)`` (slightly larger).
    Vectorised over ε₀.
    """
    n, delta = _people(n), _delta(delta)
    eps0 = checked_array("epsilon0", epsilon0, low=0.0)
    limit = fmt21_validity_limit(n, delta, variant)
    e0 = np.exp(eps0)
    a = 8.0 * np.sqrt(e0 * math.log(4.0 / delta) / n)
    c = 8.0 * e0 / n
    if variant == "theorem":
        factor = np.tanh(eps0 / 2.0)  # (e^ε₀ − 1)/(e^ε₀ + 1)
    else:
        factor = -np.expm1(-eps0) / (1.0 + np.exp(-eps0) / (1.0 + a + c))
    eps = np.log1p(factor * (a + c))
    return unwrap(np.where(eps0 <= limit, eps, np.nan))


def fmt21_max_epsilon0(n: int, epsilon: float, delta: float, variant: str = "theorem") -> tuple:
    """Largest ε₀ the FMT21 closed form certifies for a target central (ε, δ): the bound increases
    in ε₀, so a root search on ε₀ solves it.

    Returns ``(ε₀, capped)``: ``capped`` is True when the validity condition, not the target, is the
    binding constraint (a numeric bound may then allow more). Raises NotCertified when n is too
    small.
    """
    n, delta = _people(n), _delta(delta)
    target = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    limit = fmt21_validity_limit(n, delta, variant)
    if limit <= 0:
        c = 2 if variant == "theorem" else 4
        raise NotCertified(f"The FMT21 closed form needs ε₀ ≤ ln(n/(16 ln({c}/δ))), which is "
                           f"{limit:.3g} ≤ 0 for n = {n:,}: it certifies nothing at this "
                           "population size. Use the numerical clone bound.")
    if fmt21_epsilon(n, limit, delta, variant) <= target:
        return limit, True
    root = optimize.brentq(lambda e0: fmt21_epsilon(n, e0, delta, variant) - target, 0.0, limit,
                           xtol=SEARCH_TOL)
    while fmt21_epsilon(n, root, delta, variant) > target:
        root -= SEARCH_TOL
    return max(root, 0.0), False


# ------------------------------------------------------------------------ numerical clone bound
def clone_probability(epsilon0, grr: bool = False):
    """p_c: each other report is a 'clone' of user 1's with this probability [FMT21].

    Any ε₀-LDP randomiser: ``e^{−ε₀}`` [FMT21]. k-ary randomised response: ``2/(e^{ε₀}+1)``
    [FMT23]: the decomposition ``R(x) ≥ (p_c/2)(R(x¹⁰) + R(x¹¹))`` holds pointwise for every x
    with this p_c (the binding output is y = x¹⁰ for x ∉ {x¹⁰, x¹¹}; tests/test_amplification.py
    checks it).
    """
    eps0 = checked_array("epsilon0", epsilon0, low=0.0)
    return unwrap(1.0 / (0.5 + 0.5 * np.exp(eps0)) if grr else np.exp(-eps0))


class _CloneSum:
    """The blocks of clone counts c for fixed (n, ε₀, p_c), reused across values of ε.

    δ(ε) = Σ_c Bin(c; n−1, p_c) f_c(ε), where f_c is the hockey-stick divergence of the pair given c
    clones. f_c is non-increasing in c (one more clone is the same Markov kernel applied to both
    distributions, and divergences shrink under post-processing), so over a block of counts
    f(first) bounds every term from above and f(last) from below. Counts outside ±12 s.d. of the
    mean are bounded by 1 each: their mass is added to the upper bound.
    """

    def __init__(self, n: int, epsilon0: float, p_clone: float,
                 block_fraction: float = BLOCK_FRACTION):
        m = n - 1
        self.alpha = 1.0 / (1.0 + math.exp(-epsilon0))     # e^ε₀/(e^ε₀+1)
        self.epsilon0 = epsilon0
        mean, sd = m * p_clone, math.sqrt(m * p_clone * (1.0 - p_clone))
        half = WINDOW_SDS * sd + 40.0
        lo, hi = max(0, math.floor(mean - half)), min(m, math.ceil(mean + half))
        step = max(1, math.floor(min(mean * block_fraction, sd / 4)))
        self.first = np.arange(lo, hi + 1, step, dtype=np.int64)
        self.last = np.minimum(self.first + step - 1, hi)
        before_first = special.bdtr(np.maximum(self.first - 1, 0), m, p_clone)
        below = np.where(self.first > 0, before_first, 0.0)
        self.mass = special.bdtr(self.last, m, p_clone) - below
        self.outside = ((special.bdtr(lo - 1, m, p_clone) if lo > 0 else 0.0)
                        + (special.bdtrc(hi, m, p_clone) if hi < m else 0.0))

    def _divergence(self, c: np.ndarray, epsilon: float) -> np.ndarray:
        """f_c(ε) = [P_c(A′ ≥ a₀) − e^ε Q_c(A′ ≥ a₀)]₊, with the optimal threshold a₀(c): the
        likelihood ratio grows with a/(c − a + 1), so the worst event is {A′ ≥ a₀}."""
        a, e = self.alpha, math.exp(epsilon)
        if a - e * (1.0 - a) <= 0.0:        # e^ε ≥ e^ε₀: no output has a larger likelihood ratio
            return np.zeros(c.shape)
        t = (e * a - (1.0 - a)) / (a - e * (1.0 - a))
        a0 = np.floor(t * (c + 1.0) / (1.0 + t)).astype(np.int64) + 1

        def tail(k):  # P[Bin(c, ½) ≥ k] for integer arrays k, c
            inside = special.bdtrc(np.clip(k - 1, 0, None), np.maximum(c, 1), 0.5)
            return np.where(k <= 0, 1.0, np.where(k > c, 0.0, inside))

        s_prev, s_at = tail(a0 - 1), tail(a0)
        p = a * s_prev + (1.0 - a) * s_at
        q = (1.0 - a) * s_prev + a * s_at
        return np.maximum(p - e * q, 0.0)

    def upper(self, epsilon: float) -> float:
        """Upper bound on δ(ε): every block bounded by its first count, plus the mass outside."""
        if epsilon >= self.epsilon0:
            return 0.0
        return min(float(self.mass @ self._divergence(self.first, epsilon)) + self.outside, 1.0)

    def lower(self, epsilon: float) -> float:
        """Lower bound on δ(ε): every block bounded by its last count, nothing outside."""
        if epsilon >= self.epsilon0:
            return 0.0
        return float(self.mass @ self._divergence(self.last, epsilon))


def clone_delta_interval(n: int, epsilon0: float, epsilon: float, grr: bool = False,
                         block_fraction: float = BLOCK_FRACTION) -> tuple[float, float]:
    """(lower, upper) bounds on the clone bound's δ(ε) for n shuffled ε₀-LDP reports [FMT21].

    The upper value is what every guarantee here uses; the lower one shows how tight the block
    summation is. ``block_fraction`` trades speed for tightness (0 sums every count exactly).
    """
    n = _people(n)
    eps0 = float(checked_array("epsilon0", epsilon0, low=0.0))
    eps = float(checked_array("epsilon", epsilon, low=0.0))
    fraction = float(checked_array("block_fraction", block_fraction, low=0.0))
    terms = _CloneSum(n, eps0, clone_probability(eps0, grr), fraction)
    return terms.lower(eps), terms.upper(eps)


def clone_delta(n: int, epsilon0: float, epsilon: float, grr: bool = False) -> float:
    """Upper bound on δ at central ε from FMT21's numerical clone analysis."""
    return clone_delta_interval(n, epsilon0, epsilon, grr)[1]


def _log_ratio(value: float, delta: float) -> float:
    """ln(value/δ): positive iff value > δ, and far more linear in ε than value − δ, so the root
    searches below need about half the evaluations."""
    return math.log(max(value, 1e-300)) - math.log(delta)


def clone_epsilon(n: int, epsilon0: float, delta: float, grr: bool = False) -> float:
    """Smallest central ε whose clone-bound δ(ε) is ≤ ``delta`` (root search on ε). At most ε₀."""
    n, delta = _people(n), _delta(delta)
    eps0 = float(checked_array("epsilon0", epsilon0, low=0.0))
    terms = _CloneSum(n, eps0, clone_probability(eps0, grr))
    excess = lambda eps: _log_ratio(terms.upper(eps), delta)
    if eps0 == 0.0 or excess(0.0) <= 0:
        return 0.0
    root = optimize.brentq(excess, 0.0, eps0, xtol=SEARCH_TOL)
    while excess(root) > 0:
        root = min(root + SEARCH_TOL, eps0)
    return root


def clone_max_epsilon0(n: int, epsilon: float, delta: float, grr: bool = False) -> float:
    """Largest ε₀ whose clone-bound δ at the target central ε is ≤ ``delta`` (root search on ε₀,
    as δ increases with ε₀). At least ε."""
    n, delta = _people(n), _delta(delta)
    target = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))

    def excess(eps0):
        return _log_ratio(_CloneSum(n, eps0, clone_probability(eps0, grr)).upper(target), delta)

    hi = target + 1.0
    while excess(hi) <= 0:
        hi += 2.0 * (hi - target)
        if hi > 700:
            raise NotCertified("the clone bound allows any local ε₀ here; check n, ε and δ.")
    root = optimize.brentq(excess, target, hi, xtol=SEARCH_TOL)
    while excess(root) > 0:
        root -= SEARCH_TOL
    return max(root, target)


# ---------------------------------------------------------------------- privacy blanket (k-RR)
def blanket_delta(n: int, epsilon0: float, epsilon: float, k: int) -> float:
    """δ(ε) of n shuffled k-RR reports by the privacy blanket's numeric Hoeffding bound [BBGN19].

    k-RR as a blanket: report the truth with probability 1 − γ, a uniform category with
    probability γ = k/(e^{ε₀} + k − 1). Then ``δ(ε) ≤ (1/(γn)) · r²/(4a) ·
    (1 − γ(1 − e^{−2a²/r²}))ⁿ`` with ``a = e^ε − 1`` and ``r = (1 − γ)k(e^ε + 1)``, the form of the
    authors' numeric bound (reproducing their figures: ε = 0.019 / 0.064 / 0.151 at ε₀ = 1 / 2 / 3
    for n = 10⁵, δ = 10⁻⁶, k = 10). It replaces the closed form with the constants 14 and 27,
    whose range of validity was not checked against the paper.
    """
    gamma = k / (math.exp(epsilon0) + k - 1.0)
    a = math.expm1(epsilon)
    if a <= 0.0:
        return 1.0
    r = (1.0 - gamma) * k * (math.exp(epsilon) + 1.0)
    log_delta = (-math.log(gamma * n) + math.log(r * r / (4.0 * a))
                 + n * math.log1p(gamma * math.expm1(-2.0 * a * a / (r * r))))
    return min(math.exp(log_delta), 1.0)


def blanket_epsilon(n: int, epsilon0: float, delta: float, k: int) -> float:
    """Smallest central ε whose blanket δ(ε) (:func:`blanket_delta`) is ≤ ``delta``: a scan of
    ε on a grid below ε₀, then a root search in the first interval that reaches δ, rounded up.
    Raises NotCertified when no ε < ε₀ is certified (the shuffled view is still ε₀-DP)."""
    n, delta = _people(n), _delta(delta)
    k = _categories(k)
    eps0 = float(checked_array("epsilon0", epsilon0, low=0.0, low_open=True))
    excess = lambda eps: _log_ratio(blanket_delta(n, eps0, eps, k), delta)
    grid = np.geomspace(1e-6, eps0, 400)
    met = [eps for eps in grid if excess(eps) <= 0]
    if not met:
        raise NotCertified(f"{BOUNDS['blanket']} certifies no ε below ε₀ = {eps0:g} for k = {k}, "
                           f"n = {n:,}, δ = {delta:g}: it certifies nothing here (the shuffled "
                           "view is still ε₀-DP).")
    high = met[0]
    low = grid[max(int(np.searchsorted(grid, high)) - 1, 0)]
    if low >= high or excess(low) <= 0:
        return float(high)
    root = optimize.brentq(excess, low, high, xtol=SEARCH_TOL)
    while excess(root) > 0:
        root = min(root + SEARCH_TOL, high)
    return float(root)


def blanket_max_epsilon0(n: int, epsilon: float, delta: float, k: int) -> float:
    """Largest ε₀ for k-RR whose blanket δ at the target central ε is ≤ ``delta`` (root search
    on ε₀: a larger ε₀ thins the blanket, so δ grows). At least ε: ε₀ = ε needs no
    amplification (the shuffled view is ε₀-DP)."""
    n, delta = _people(n), _delta(delta)
    k = _categories(k)
    target = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    excess = lambda eps0: _log_ratio(blanket_delta(n, eps0, target, k), delta)
    if excess(target) > 0:
        return target
    high = target + 1.0
    while excess(high) <= 0:
        high += 2.0 * (high - target)
        if high > 700:
            raise NotCertified("the blanket bound allows any local ε₀ here; check n, ε and δ.")
    root = optimize.brentq(excess, max(target, 1e-9), high, xtol=SEARCH_TOL)
    while excess(root) > 0:
        root -= SEARCH_TOL
    return max(root, target)


def _categories(k) -> int:
    return whole_number("k", k, 2, " (number of categories of k-RR, the domain size)")


# --------------------------------------------------------------------------------- dispatchers
def _check_bound(bound: str) -> str:
    if bound not in BOUNDS:
        raise ValueError(f"unknown amplification bound {bound!r}; valid: {', '.join(BOUNDS)}.")
    return bound


def shuffle_guarantee(bound: str, n: int, epsilon0: float, delta: float,
                      k: int | None = None) -> ShuffleGuarantee:
    """Central (ε, δ) of n shuffled ε₀-LDP reports by the named bound; NotCertified if it fails.

    ``k`` (the domain size) is needed by ``blanket`` only. The shuffled view is always at least
    ε₀-DP by post-processing, so a bound that certifies nothing better is reported as such.
    """
    _check_bound(bound)
    n, delta = _people(n), _delta(delta)
    eps0 = float(checked_array("epsilon0", epsilon0, low=0.0))
    if bound in ("fmt21", "fmt21_official"):
        variant = "theorem" if bound == "fmt21" else "official"
        limit = fmt21_validity_limit(n, delta, variant)
        eps = fmt21_epsilon(n, eps0, delta, variant)
        if math.isnan(eps):
            raise NotCertified(f"{BOUNDS[bound]} holds only for ε₀ ≤ {limit:.3g} at n = {n:,}, "
                               f"δ = {delta:g}; ε₀ = {eps0:g} is above it, so it certifies nothing "
                               "(the shuffled view is still ε₀-DP). Use the numerical clone bound.")
        note = (f"this closed form holds only for ε₀ ≤ {limit:.3g} (n = {n:,}, δ = {delta:g}); "
                "the numerical bounds have no such limit")
    elif bound in ("clone", "clone_grr"):
        eps = clone_epsilon(n, eps0, delta, grr=bound == "clone_grr")
        note = (f"numerical: δ(ε) summed over clone counts within ±{WINDOW_SDS:g} s.d. (outside "
                f"mass added to δ), ε found by root search to {SEARCH_TOL:g}, rounded up")
    else:
        k = _categories(k)
        eps = blanket_epsilon(n, eps0, delta, k)
        note = f"k = {k} categories; numeric Hoeffding bound, ε found by root search, rounded up"
    return ShuffleGuarantee(bound, n, eps0, float(eps), delta, note)


def local_budget(bound: str, n: int, epsilon: float, delta: float,
                 k: int | None = None) -> ShuffleGuarantee:
    """Inverse problem: the largest ε₀ each phone may use so that shuffling n reports is
    (ε, δ)-DP by the named bound. The answer is the ``epsilon0`` of the returned guarantee."""
    _check_bound(bound)
    n, delta = _people(n), _delta(delta)
    target = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    if bound in ("fmt21", "fmt21_official"):
        eps0, capped = fmt21_max_epsilon0(n, target, delta,
                                          "theorem" if bound == "fmt21" else "official")
        note = ("capped by the closed form's validity condition ε₀ ≤ ln(n/(16 ln(c/δ))); the "
                "target alone would allow more — a numeric bound may certify a larger ε₀" if capped
                else "solves the closed form for ε₀ (within its validity condition)")
    elif bound in ("clone", "clone_grr"):
        eps0 = clone_max_epsilon0(n, target, delta, grr=bound == "clone_grr")
        note = "numerical clone bound, ε₀ found by root search and rounded down"
    else:
        k = _categories(k)
        eps0 = blanket_max_epsilon0(n, target, delta, k)
        note = f"k = {k} categories; numeric Hoeffding bound, ε₀ found by root search, rounded down"
    return ShuffleGuarantee(bound, n, float(eps0), target, delta, note)


# ------------------------------------------------------------------------- Poisson subsampling
#: The subsampling theorem's conditions, as the Learn page states them beside the formula.
SUBSAMPLING_CONDITIONS = (
    "The theorem (Balle, Barthe, Gaboardi, NeurIPS 2018) needs Poisson sampling — each commuter "
    "included independently with probability γ — and add/remove neighbours: the mechanism is "
    "(ε, δ)-DP when one person joins or leaves, and then the sample's release is (ε′, γδ)-DP "
    "for a person joining or leaving. This product's default is substitution neighbours (one "
    "person's commute replaced); for those the same paper proves the same ε′ and δ′ = γδ for a "
    "sample of fixed size m = γn drawn without replacement — not for Poisson sampling, whose "
    "samples with and without the person are add/remove neighbours, which a substitution-DP "
    "mechanism does not protect.")


def subsampling_amplification(epsilon, delta, rate) -> tuple:
    """(ε′, δ′) of an (ε, δ)-DP mechanism run on a Poisson subsample with inclusion rate γ [BBG18],
    under add/remove neighbours (:data:`SUBSAMPLING_CONDITIONS`).

    ``ε′ = ln(1 + γ(e^ε − 1))`` (≈ γε for small ε) and ``δ′ = γδ``; tight for the worst mechanism.
    Also holds for sampling m of n without replacement under substitution, with γ = m/n.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    d = checked_array("delta", delta, low=0.0, high=1.0)
    g = checked_array("rate", rate, low=0.0, high=1.0, low_open=True)
    return unwrap(np.log1p(g * np.expm1(eps))), unwrap(g * d)


def subsampling_inverse(epsilon, delta, rate) -> tuple:
    """The (ε, δ) a mechanism may spend on a γ-subsample so the whole is (ε′, δ′)-DP.

    ``ε = ln(1 + (e^{ε′} − 1)/γ)`` and ``δ = min(δ′/γ, 1)``: the inverse of
    :func:`subsampling_amplification`.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    d = checked_array("delta", delta, low=0.0, high=1.0)
    g = checked_array("rate", rate, low=0.0, high=1.0, low_open=True)
    return unwrap(np.log1p(np.expm1(eps) / g)), unwrap(np.minimum(d / g, 1.0))
