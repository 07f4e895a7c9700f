"""What ε and δ mean, and how budgets add up: the Learn page's formulas.

* Bayesian reading: how far an adversary's belief can move after one release [KS14].
* Hypothesis-testing reading: the (FPR, TPR) pairs any test of "D or D′?" can reach [WZ10, KOV15].
* Privacy profiles δ(ε) of randomised response, k-ary GRR, Laplace and Gaussian mechanisms: one
  mechanism satisfies a whole curve of (ε, δ) guarantees, not a single pair.
* Group privacy, sequential / parallel / advanced composition, and a budget-splitting helper.

Every function accepts NumPy arrays (broadcast) so a page can draw a curve in one call; scalar
inputs give Python floats. Bad arguments raise ValueError naming the parameter, its range and the
value.

References: [KS14] Kasiviswanathan, Smith, On the 'semantics' of differential privacy, JPC 2014.
[WZ10] Wasserman, Zhou, A statistical framework for differential privacy, JASA 2010.
[KOV15] Kairouz, Oh, Viswanath, The composition theorem for differential privacy, ICML 2015.
[BW18] Balle, Wang, Improving the Gaussian mechanism, ICML 2018. [DRV10] Dwork, Rothblum, Vadhan,
Boosting and differential privacy, FOCS 2010. [DR14] Dwork, Roth, The algorithmic foundations of DP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from scipy import optimize, special


# ------------------------------------------------------------------------------------ helpers
def checked_array(name: str, value, *, low=None, high=None, low_open=False,
                  high_open=False) -> np.ndarray:
    """``value`` as a float array, or a ValueError naming the parameter, its range and the value."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"'{name}' must be a number (or an array of numbers); "
                         f"got {value!r}.") from None
    bad = ~np.isfinite(arr)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if bad.any():
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        interval = (f"{left}{'-inf' if low is None else f'{low:g}'}, "
                    f"{'inf' if high is None else f'{high:g}'}{right}")
        offending = arr[bad].flat[0] if arr.ndim else arr
        raise ValueError(f"'{name}' must be finite and in {interval}; got {offending!r}.")
    return arr


def unwrap(arr: np.ndarray):
    """A Python float for 0-d results, the array otherwise."""
    return float(arr) if np.ndim(arr) == 0 else arr


def whole_number(name: str, value, low: int = 1, what: str = "") -> int:
    """``value`` as an int ≥ ``low``, or a ValueError naming the parameter (``what`` explains it)."""
    try:
        ok = not isinstance(value, bool) and float(value).is_integer() and value >= low
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"'{name}'{what} must be a whole number ≥ {low}; got {value!r}.")
    return int(value)


# ------------------------------------------------------------------------------ Bayesian bound
def posterior_bound(prior, epsilon, delta=0.0, *, failure=None):
    """Highest belief an adversary can reach that a person's commute is ``a`` (rather than ``b``).

    Posterior odds are the prior odds times the privacy loss ``e^L`` of the observed output, and
    ε-DP caps ``L ≤ ε`` [KS14], so ``posterior ≤ e^ε p / (1 + (e^ε − 1) p)``
    (p = 0.5, ε = 1 → 0.731).

    With δ > 0 the loss is not capped everywhere: from ``δ ≥ E[(1 − e^{ε−L})₊]`` one gets
    ``P[L > ε′] ≤ δ / (1 − e^{ε−ε′})``. The returned bound then uses ``ε′ = ε − ln(1 − δ/failure)``
    and holds except with probability at most ``failure`` (default ``10·δ``).

    Parameters
    ----------
    prior : float or array in [0, 1] — the adversary's belief before the release.
    epsilon : float or array in [0, ∞).
    delta : float in [0, 1).
    failure : float in (δ, 1], optional — allowed probability that the bound fails (δ > 0 only).

    Returns
    -------
    float or array in [0, 1] — the largest possible posterior probability.
    """
    p = checked_array("prior", prior, low=0.0, high=1.0)
    eps = checked_array("epsilon", epsilon, low=0.0)
    d = float(checked_array("delta", delta, low=0.0, high=1.0, high_open=True))
    if d > 0:
        beta = (10 * d if failure is None
                else float(checked_array("failure", failure, low=0.0, high=1.0)))
        if beta <= d:
            raise ValueError(f"'failure' must exceed delta = {d:g} (the bound certifies nothing "
                             f"with failure probability ≤ δ); got {beta:g}.")
        eps = eps - np.log1p(-d / beta)
    elif failure is not None:
        raise ValueError("'failure' only applies when delta > 0: with δ = 0 the bound always "
                         "holds.")
    odds_factor = np.exp(eps)
    return unwrap(odds_factor * p / (1.0 + (odds_factor - 1.0) * p))


# -------------------------------------------------------------------- hypothesis-testing region
def tpr_bound(fpr, epsilon, delta=0.0):
    """Highest true-positive rate of any test of D vs D′ at false-positive rate ``fpr``.

    ``TPR ≤ min(e^ε·FPR + δ, 1 − e^{−ε}(1 − δ − FPR))``, clipped to [0, 1] [WZ10, KOV15]:
    (ε, δ)-DP holds iff every test stays under this curve. With ε = 0, δ = 0 no test beats
    guessing (TPR ≤ FPR).
    """
    f = checked_array("fpr", fpr, low=0.0, high=1.0)
    eps = checked_array("epsilon", epsilon, low=0.0)
    d = checked_array("delta", delta, low=0.0, high=1.0)
    bound = np.minimum(np.exp(eps) * f + d, 1.0 - np.exp(-eps) * (1.0 - d - f))
    return unwrap(np.clip(bound, 0.0, 1.0))


class HypothesisTestRegion(NamedTuple):
    """Boundary of the reachable (FPR, TPR) region, exact as polylines through these vertices."""

    fpr: np.ndarray
    tpr_max: np.ndarray  # upper boundary: tpr_bound(fpr)
    tpr_min: np.ndarray  # lower boundary: 1 − tpr_bound(1 − fpr) (complement of a test)


def hypothesis_test_region(epsilon: float, delta: float = 0.0) -> HypothesisTestRegion:
    """Vertices of the (ε, δ)-DP hypothesis-testing region, for plotting.

    Both boundaries are piecewise linear; the upper one bends at
    ``FPR* = (1 − δ)/(e^ε + 1)`` (where the two constraints meet) and reaches 1 at ``FPR = 1 − δ``;
    the lower one is its mirror image. Evaluating both at the union of these corners gives the
    region exactly (a plot joins them by straight lines).
    """
    eps = float(checked_array("epsilon", epsilon, low=0.0))
    d = float(checked_array("delta", delta, low=0.0, high=1.0))
    kink = (1.0 - d) / (np.exp(eps) + 1.0)
    corners = np.array([0.0, kink, 1.0 - d, 1.0])
    fpr = np.unique(np.clip(np.concatenate([corners, 1.0 - corners]), 0.0, 1.0))
    upper = np.asarray(tpr_bound(fpr, eps, d))
    lower = 1.0 - np.asarray(tpr_bound(1.0 - fpr, eps, d))
    return HypothesisTestRegion(fpr, upper, lower)


# ---------------------------------------------------------------------------- privacy profiles
def rr_profile(epsilon, epsilon0):
    """δ(ε) of binary randomised response with P[truth] = e^{ε₀}/(1 + e^{ε₀}).

    ``δ(ε) = [e^{ε₀} − e^ε]₊ / (1 + e^{ε₀})``, the hockey-stick divergence between the output laws
    of the two inputs: ε₀-DP, and (ε, δ(ε))-DP for every smaller ε.
    """
    return grr_profile(epsilon, epsilon0, 2)


def grr_profile(epsilon, epsilon0, k):
    """δ(ε) of k-ary randomised response at local ε₀: ``[e^{ε₀} − e^ε]₊/(e^{ε₀} + k − 1)``.

    The worst output is the true value of one neighbour, so larger domains (k) mean smaller δ.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    eps0 = checked_array("epsilon0", epsilon0, low=0.0)
    k = whole_number("k", k, low=2)
    return unwrap(np.maximum(np.exp(eps0) - np.exp(eps), 0.0) / (np.exp(eps0) + k - 1))


def laplace_profile(epsilon, epsilon0):
    """δ(ε) of the Laplace mechanism with ε₀ = Δ/b (sensitivity over scale).

    ``δ(ε) = 1 − e^{(ε − ε₀)/2}`` for 0 ≤ ε ≤ ε₀, and 0 beyond. At ε = 0 this is the total-variation
    distance between the two noisy answers.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    eps0 = checked_array("epsilon0", epsilon0, low=0.0)
    return unwrap(np.maximum(-np.expm1((eps - eps0) / 2.0), 0.0))


def gaussian_profile(epsilon, sigma, l2_sensitivity=1.0):
    """δ(ε) of ``f(D) + N(0, σ²I)`` with L2 sensitivity Δ: the exact profile of [BW18, Thm 8].

    ``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``, positive for every ε: the Gaussian
    mechanism is never pure ε-DP. Valid for any real ε (computed with log Φ so that large ε does
    not overflow).
    """
    eps = checked_array("epsilon", epsilon)
    s = checked_array("sigma", sigma, low=0.0, low_open=True)
    l2 = checked_array("l2_sensitivity", l2_sensitivity, low=0.0, low_open=True)
    mu = l2 / s
    first = special.ndtr(mu / 2 - eps / mu)
    second = np.exp(eps + special.log_ndtr(-mu / 2 - eps / mu))
    return unwrap(np.maximum(first - second, 0.0))


def gaussian_loss_exceeds(epsilon, sigma, l2_sensitivity=1.0):
    """P[L > ε] for the privacy loss L of ``f(D) + N(0, σ²I)`` at the worst neighbours.

    L ~ N(μ, 2μ) with μ = Δ²/(2σ²) [BW18, Lemma 3], so ``P[L > ε] = Φ(Δ/(2σ) − εσ/Δ)``: the first
    term of :func:`gaussian_profile`. δ subtracts ``e^ε Φ(−Δ/(2σ) − εσ/Δ)`` from it, so δ is
    *not* the probability that the loss exceeds ε: it is the profile's slack, the most any
    event's probability may exceed e^ε times its probability on the neighbour.
    """
    eps = checked_array("epsilon", epsilon)
    s = checked_array("sigma", sigma, low=0.0, low_open=True)
    l2 = checked_array("l2_sensitivity", l2_sensitivity, low=0.0, low_open=True)
    mu = l2 / s
    return unwrap(special.ndtr(mu / 2 - eps / mu))


def classic_gaussian_limit(delta: float) -> float:
    """The largest ε at which the classic σ = Δ√(2 ln(1.25/δ))/ε still meets the exact (ε, δ)
    condition of [BW18, Thm 8] (its proof [DR14, Thm A.1] covers ε < 1 only; beyond, it is
    unproven, not "not private", up to this ε, where it falls below the analytic σ)."""
    d = float(checked_array("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True))

    def excess(eps):  # δ(ε) of the classic σ minus δ: ≤ 0 while the classic σ is private
        sigma = math.sqrt(2 * math.log(1.25 / d)) / eps
        return math.log(max(float(gaussian_profile(eps, sigma)), 1e-300)) - math.log(d)
    return float(optimize.brentq(excess, 1.0, 100.0, xtol=1e-10))


# ------------------------------------------------------------------------------ group privacy
def group_privacy(epsilon, k, delta=0.0) -> tuple:
    """Guarantee for a group of ``k`` people (e.g. a household commuting together) [DR14, Thm 2.2].

    Chaining k neighbour steps: ``(kε, k e^{(k−1)ε} δ)``. The δ part grows fast, which is why
    (ε, δ) guarantees protect groups much less well than pure ε-DP.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    k = whole_number("k", k)
    d = checked_array("delta", delta, low=0.0, high=1.0)
    return unwrap(k * eps), unwrap(k * np.exp((k - 1) * eps) * d)


# -------------------------------------------------------------------------------- composition
def _budget_lists(epsilons, deltas):
    eps = checked_array("epsilons", epsilons, low=0.0).reshape(-1)
    if eps.size == 0:
        raise ValueError("'epsilons' must list at least one release.")
    if deltas is None:
        return eps, np.zeros_like(eps)
    dl = checked_array("deltas", deltas, low=0.0, high=1.0).reshape(-1)
    if dl.size != eps.size:
        raise ValueError(f"'deltas' must have one entry per release ({eps.size}); got {dl.size}.")
    return eps, dl


def sequential_composition(epsilons: Sequence[float],
                           deltas: Sequence[float] | None = None) -> tuple:
    """Several releases about the same people: budgets add, ``(Σεᵢ, Σδᵢ)`` (basic composition)."""
    eps, dl = _budget_lists(epsilons, deltas)
    return float(eps.sum()), float(min(dl.sum(), 1.0))


def parallel_composition(epsilons: Sequence[float],
                         deltas: Sequence[float] | None = None) -> tuple:
    """Releases about disjoint groups of people: each person is in one, so ``(max εᵢ, max δᵢ)``."""
    eps, dl = _budget_lists(epsilons, deltas)
    return float(eps.max()), float(dl.max())


def advanced_composition(epsilon, k, delta=0.0, delta_slack=1e-6) -> tuple:
    """k-fold adaptive composition of (ε, δ)-DP releases [DRV10; DR14 Thm 3.20].

    ``(ε√(2k ln(1/δ′)) + kε(e^ε − 1), kδ + δ′)`` for any slack δ′ > 0. It beats the basic ``kε``
    only when k is large and ε small; take the smaller of the two in practice.
    """
    eps = checked_array("epsilon", epsilon, low=0.0)
    k = whole_number("k", k)
    d = checked_array("delta", delta, low=0.0, high=1.0)
    slack = checked_array("delta_slack", delta_slack, low=0.0, high=1.0, low_open=True,
                          high_open=True)
    total = eps * np.sqrt(2 * k * np.log(1 / slack)) + k * eps * np.expm1(eps)
    return unwrap(total), unwrap(k * d + slack)


def per_query_epsilon(total_epsilon: float, k: int, delta_slack: float | None = None) -> float:
    """Largest ε each of ``k`` equal releases may use so that together they stay within the total.

    Without ``delta_slack``: basic composition, ``total/k`` (the k releases together are
    ε-DP). With it: the ε the advanced composition theorem alone allows (its ε′ increases with ε,
    so the root is unique); the k releases together are then (total, δ′)-DP, not pure — and for
    few releases this is *smaller* than ``total/k``: the theorem helps only for many releases
    (:func:`advanced_helps_from`).
    """
    total = float(checked_array("total_epsilon", total_epsilon, low=0.0, low_open=True))
    k = whole_number("k", k)
    basic = total / k
    if delta_slack is None:
        return basic
    excess = lambda e: advanced_composition(e, k, 0.0, delta_slack)[0] - total
    return float(optimize.brentq(excess, 0.0, total, xtol=1e-14, rtol=1e-12))


def advanced_helps_from(total_epsilon: float, delta_slack: float) -> int:
    """The smallest number of equal releases k for which advanced composition lets each use more
    than basic composition's ``total/k`` (within the same total ε, at slack δ′)."""
    k = 1
    while per_query_epsilon(total_epsilon, k, delta_slack) <= total_epsilon / k:
        k *= 2
    low, high = k // 2, k    # advanced loses at low (or low = 0), wins at high
    while high - low > 1:
        middle = (low + high) // 2
        if per_query_epsilon(total_epsilon, middle, delta_slack) > total_epsilon / middle:
            high = middle
        else:
            low = middle
    return high


def split_budget(total_epsilon: float, weights: Mapping[str, float]) -> dict[str, float]:
    """Split a total ε over named releases in proportion to ``weights`` (sequential composition).

    Worked example: 1.0 split {"origin totals": 1, "destination totals": 1, "OD matrix": 2} gives
    0.25, 0.25 and 0.5; together they are 1.0-DP. A release that gets more budget is less noisy.
    """
    total = float(checked_array("total_epsilon", total_epsilon, low=0.0, low_open=True))
    if not weights:
        raise ValueError("'weights' must name at least one release.")
    w = checked_array("weights", list(weights.values()), low=0.0)
    if w.sum() <= 0:
        raise ValueError("'weights' must not all be zero.")
    return {name: total * float(share) / float(w.sum()) for name, share in zip(weights, w)}
