"""Interpreting ε and composing budgets: every formula against known values, limiting cases and an
independent computation (numerical integration, enumeration of output distributions)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore.mechanisms.central import analytic_gaussian_sigma
from dpcore.theory.privacy_theory import (
    advanced_composition,
    advanced_helps_from,
    classic_gaussian_limit,
    gaussian_loss_exceeds,
    gaussian_profile,
    group_privacy,
    grr_profile,
    hypothesis_test_region,
    laplace_profile,
    parallel_composition,
    per_query_epsilon,
    posterior_bound,
    rr_profile,
    sequential_composition,
    split_budget,
    tpr_bound,
)

EPS_GRID = np.linspace(0.0, 4.0, 81)


# ------------------------------------------------------------------------------ Bayesian bound
def test_posterior_bound_known_value():
    assert posterior_bound(0.5, 1.0) == pytest.approx(0.731, abs=5e-4)
    assert posterior_bound(0.5, 1.0) == pytest.approx(math.e / (1 + math.e), rel=1e-12)


def test_posterior_bound_is_prior_at_zero_epsilon_and_tends_to_it():
    priors = np.linspace(0, 1, 11)
    np.testing.assert_allclose(posterior_bound(priors, 0.0), priors, atol=1e-15)
    np.testing.assert_allclose(posterior_bound(priors, 1e-9), priors, atol=1e-9)


def test_posterior_bound_odds_rise_by_exactly_e_epsilon():
    prior, eps = 0.1, 2.0
    post = posterior_bound(prior, eps)
    assert (post / (1 - post)) / (prior / (1 - prior)) == pytest.approx(math.exp(eps), rel=1e-12)


def test_posterior_bound_monotone_and_limits():
    bounds = posterior_bound(0.2, EPS_GRID)
    assert (np.diff(bounds) > 0).all() and (bounds >= 0.2).all()
    assert posterior_bound(0.2, 40.0) == pytest.approx(1.0, abs=1e-12)
    assert posterior_bound(0.0, 5.0) == 0.0 and posterior_bound(1.0, 5.0) == 1.0


def test_posterior_bound_with_delta_uses_inflated_epsilon():
    # failure = 2δ means P[L > ε'] ≤ δ/(1 − e^{ε−ε'}) = 2δ at ε' = ε + ln 2.
    assert posterior_bound(0.3, 1.0, 0.01, failure=0.02) == pytest.approx(
        posterior_bound(0.3, 1.0 + math.log(2)), rel=1e-12)
    assert posterior_bound(0.3, 1.0, 1e-6) > posterior_bound(0.3, 1.0)


def test_posterior_bound_failure_probability_holds_for_gaussian_mechanism():
    # Gaussian mechanism, Δ/σ = μ: the privacy loss is N(μ²/2, μ²). The bound's tail claim
    # P[L > ε'] ≤ failure must hold for its exact δ(ε).
    mu, eps = 0.5, 1.0
    delta = gaussian_profile(eps, 1 / mu)
    for failure in (1.5 * delta, 10 * delta, 0.5):
        eps_prime = eps - math.log1p(-delta / failure)
        tail = stats.norm.sf(eps_prime, loc=mu * mu / 2, scale=mu)
        assert tail <= failure
        bound = posterior_bound(0.5, eps, delta, failure=failure)
        assert bound == pytest.approx(posterior_bound(0.5, eps_prime), rel=1e-12)


@pytest.mark.parametrize("kwargs, word", [
    ({"prior": 1.5, "epsilon": 1.0}, "prior"),
    ({"prior": 0.5, "epsilon": -1.0}, "epsilon"),
    ({"prior": 0.5, "epsilon": 1.0, "delta": 1e-3, "failure": 1e-3}, "failure"),
    ({"prior": 0.5, "epsilon": 1.0, "failure": 0.1}, "failure"),
    ({"prior": "x", "epsilon": 1.0}, "prior"),
])
def test_posterior_bound_rejects_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        posterior_bound(**kwargs)


# -------------------------------------------------------------------- hypothesis-testing region
def test_tpr_bound_zero_privacy_loss_is_guessing():
    fpr = np.linspace(0, 1, 21)
    np.testing.assert_allclose(tpr_bound(fpr, 0.0, 0.0), fpr, atol=1e-15)


def test_tpr_bound_formula_and_clipping():
    e = math.exp(1.0)
    assert tpr_bound(0.1, 1.0, 0.01) == pytest.approx(min(e * 0.1 + 0.01, 1 - (1 - 0.01 - 0.1) / e))
    assert tpr_bound(0.0, 1.0, 0.0) == 0.0
    assert tpr_bound(1.0, 1.0, 0.2) == 1.0
    values = tpr_bound(np.linspace(0, 1, 101), 3.0, 0.1)
    assert (values <= 1).all() and (values >= 0).all() and (np.diff(values) >= 0).all()


def test_randomised_response_test_sits_on_the_kink():
    # "Guess x = 1 when the report is 1" on binary RR with ε₀:
    # FPR = 1/(e^ε₀+1), TPR = e^ε₀/(e^ε₀+1).
    eps0 = 1.3
    fpr, tpr = 1 / (math.exp(eps0) + 1), math.exp(eps0) / (math.exp(eps0) + 1)
    assert tpr == pytest.approx(tpr_bound(fpr, eps0, 0.0), rel=1e-12)
    assert tpr > tpr_bound(fpr, eps0 - 0.01, 0.0)  # so RR is not (ε₀ − 0.01)-DP


def test_laplace_threshold_tests_obey_the_region():
    # Every threshold test on Laplace noise of scale 1/ε (sensitivity 1) stays inside the region.
    eps = 0.8
    t = np.linspace(-10, 10, 2001)
    fpr = stats.laplace.sf(t, loc=0, scale=1 / eps)
    tpr = stats.laplace.sf(t, loc=1, scale=1 / eps)
    assert (tpr <= tpr_bound(fpr, eps, 0.0) + 1e-12).all()


def test_gaussian_tests_attain_delta_of_the_profile():
    # Gaussian mechanism: threshold tests are likelihood-ratio tests, so the best one attains
    # TPR − e^ε FPR = δ(ε) and none exceeds the (ε, δ(ε)) region.
    sigma, eps = 1.3, 0.7
    delta = gaussian_profile(eps, sigma)
    t = np.linspace(-8, 9, 20001)
    fpr, tpr = stats.norm.sf(t, 0, sigma), stats.norm.sf(t, 1, sigma)
    assert (tpr <= tpr_bound(fpr, eps, delta) + 1e-12).all()
    assert (tpr - math.exp(eps) * fpr).max() == pytest.approx(delta, rel=1e-6)


@pytest.mark.parametrize("eps, delta",
                         [(0.0, 0.0), (1.0, 0.0), (1.0, 0.1), (3.0, 1e-3), (0.2, 0.5)])
def test_hypothesis_test_region_polylines_are_exact(eps, delta):
    region = hypothesis_test_region(eps, delta)
    assert region.fpr[0] == 0 and region.fpr[-1] == 1 and (np.diff(region.fpr) > 0).all()
    np.testing.assert_allclose(region.tpr_max, tpr_bound(region.fpr, eps, delta))
    np.testing.assert_allclose(region.tpr_min, 1 - tpr_bound(1 - region.fpr, eps, delta))
    probe = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(np.interp(probe, region.fpr, region.tpr_max),
                               tpr_bound(probe, eps, delta), atol=1e-12)
    assert (region.tpr_min <= region.tpr_max + 1e-15).all()
    kink = (1 - delta) / (math.exp(eps) + 1)
    assert np.isclose(region.fpr, kink).any()


# ---------------------------------------------------------------------------- privacy profiles
def _hockey_stick(P, Q, eps):
    return np.maximum(P - math.exp(eps) * Q, 0).sum()


def test_rr_profile_matches_textbook_formula_and_enumeration():
    # A textbook chapter's form: δ(ε) = [p − e^ε(1 − p)]₊ for RR keeping the truth w.p. p
    # (its figure draws p = 0.8).
    p = 0.8
    eps0 = math.log(p / (1 - p))
    np.testing.assert_allclose(rr_profile(EPS_GRID, eps0),
                               np.maximum(p - np.exp(EPS_GRID) * (1 - p), 0), atol=1e-15)
    P, Q = np.array([p, 1 - p]), np.array([1 - p, p])
    for eps in EPS_GRID:
        assert rr_profile(eps, eps0) == pytest.approx(_hockey_stick(P, Q, eps), abs=1e-15)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_grr_profile_matches_enumeration(k):
    eps0 = 1.7
    e = math.exp(eps0)
    P = np.full(k, 1 / (e + k - 1))
    Q = P.copy()
    P[0], Q[1] = e / (e + k - 1), e / (e + k - 1)
    for eps in EPS_GRID:
        assert grr_profile(eps, eps0, k) == pytest.approx(_hockey_stick(P, Q, eps), abs=1e-15)


@pytest.mark.parametrize("profile", [
    lambda e, e0: rr_profile(e, e0), lambda e, e0: grr_profile(e, e0, 5),
    lambda e, e0: laplace_profile(e, e0)])
def test_profiles_vanish_from_epsilon0_and_decrease(profile):
    eps0 = 1.5
    values = profile(EPS_GRID, eps0)
    assert (values[EPS_GRID >= eps0] == 0).all()
    assert (values[EPS_GRID < eps0] > 0).all()
    assert (np.diff(values) <= 0).all()


@pytest.mark.parametrize("scale, sensitivity", [(1.0, 1.0), (0.5, 2.0), (3.0, 1.0)])
def test_laplace_profile_matches_numerical_integration(scale, sensitivity):
    eps0 = sensitivity / scale
    for eps in (0.0, 0.3 * eps0, 0.7 * eps0, 0.99 * eps0):
        def integrand(z, eps=eps):
            return max(math.exp(-abs(z) / scale)
                       - math.exp(eps - abs(z - sensitivity) / scale), 0.0) / (2 * scale)
        numeric, _ = integrate.quad(integrand, -50 * scale, 50 * scale,
                                    points=[0.0, sensitivity], limit=200, epsabs=1e-13)
        assert laplace_profile(eps, eps0) == pytest.approx(numeric, abs=1e-9)


@pytest.mark.parametrize("sigma, l2", [(1.0, 1.0), (0.4, 1.0), (3.0, math.sqrt(2))])
def test_gaussian_profile_matches_numerical_integration(sigma, l2):
    for eps in (0.0, 0.5, 2.0, 5.0):
        def integrand(z, eps=eps):
            return max(math.exp(-((z - l2) / sigma) ** 2 / 2)
                       - math.exp(eps - (z / sigma) ** 2 / 2), 0.0) / math.sqrt(2 * math.pi) / sigma
        numeric, _ = integrate.quad(integrand, -40 * sigma, 40 * sigma + l2, points=[l2 / 2],
                                    limit=200, epsabs=1e-14)
        assert gaussian_profile(eps, sigma, l2) == pytest.approx(numeric, abs=1e-9)


def test_gaussian_profile_identities():
    sigma = 0.8
    mu = 1 / sigma
    # ε = 0: total variation distance 2Φ(μ/2) − 1.
    assert gaussian_profile(0.0, sigma) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-12)
    # Symmetric pair: δ(ε) = 1 − e^ε + e^ε δ(−ε) for every real ε.
    for eps in (0.1, 0.9, 2.5):
        assert gaussian_profile(eps, sigma) == pytest.approx(
            1 - math.exp(eps) + math.exp(eps) * gaussian_profile(-eps, sigma), abs=1e-12)
    # Only the ratio Δ/σ matters.
    assert gaussian_profile(1.0, 2.0, 3.0) == pytest.approx(gaussian_profile(1.0, 2 / 3), rel=1e-12)
    values = gaussian_profile(EPS_GRID, sigma)
    assert (values > 0).all() and (np.diff(values) < 0).all()
    assert 0 <= gaussian_profile(60.0, sigma) < 1e-300 or gaussian_profile(60.0, sigma) == 0


def test_gaussian_profile_agrees_with_analytic_calibration():
    for eps, delta in ((0.5, 1e-5), (1.0, 1e-6), (5.0, 0.3)):
        sigma = analytic_gaussian_sigma(eps, delta, l2=math.sqrt(2))
        assert gaussian_profile(eps, sigma, math.sqrt(2)) == pytest.approx(delta, rel=1e-8)
        assert gaussian_profile(eps, sigma, math.sqrt(2)) <= delta


# ------------------------------------------------------------------------- group and composition
def test_group_privacy():
    assert group_privacy(0.5, 1, 1e-6) == (0.5, 1e-6)
    eps, delta = group_privacy(0.5, 3, 1e-6)
    assert eps == pytest.approx(1.5) and delta == pytest.approx(3 * math.exp(1.0) * 1e-6)
    assert group_privacy(1.0, 4) == (4.0, 0.0)
    with pytest.raises(ValueError, match="'k'"):
        group_privacy(1.0, 0)


def test_sequential_and_parallel_composition():
    assert sequential_composition([0.1, 0.2, 0.7]) == (pytest.approx(1.0), 0.0)
    assert sequential_composition([1, 1], [1e-6, 2e-6]) == (2.0, pytest.approx(3e-6))
    assert parallel_composition([0.1, 0.2, 0.7], [1e-6, 0, 0]) == (0.7, 1e-6)
    with pytest.raises(ValueError, match="deltas"):
        sequential_composition([1, 1], [1e-6])
    with pytest.raises(ValueError, match="at least one"):
        parallel_composition([])


def test_advanced_composition_example_values():
    # 100 releases at ε = 0.1 with δ' = 1e-6: 0.1·√(200 ln 10⁶) + 100·0.1·(e^0.1 − 1).
    eps, delta = advanced_composition(0.1, 100, 0.0, 1e-6)
    assert eps == pytest.approx(6.3082, abs=5e-4) and delta == pytest.approx(1e-6)
    assert advanced_composition(0.1, 100, 1e-7, 1e-6)[1] == pytest.approx(1.1e-5)
    # It beats basic composition (100·0.1 = 10) here, and loses for a single release.
    assert eps < 10
    assert advanced_composition(0.1, 1, 0.0, 1e-6)[0] > 0.1
    # 10,000 releases at ε = 0.01: ≈ 6.26 instead of 100.
    assert advanced_composition(0.01, 10_000, 0, 1e-6)[0] == pytest.approx(6.2615, abs=5e-4)


def test_per_query_epsilon_round_trips():
    assert per_query_epsilon(1.0, 4) == 0.25
    eps = per_query_epsilon(1.0, 10_000, 1e-6)
    assert advanced_composition(eps, 10_000, 0, 1e-6)[0] == pytest.approx(1.0, rel=1e-9)
    assert eps > 1.0 / 10_000
    # With few releases the theorem alone allows less than basic composition's total/k: it is
    # reported as it is (issue 30: 0.0833 for 12 releases at ε = 1 is the basic figure).
    assert per_query_epsilon(1.0, 2, 1e-6) < 0.5
    assert per_query_epsilon(1.0, 12, 1e-6) == pytest.approx(0.0530, abs=5e-5)
    assert advanced_composition(per_query_epsilon(1.0, 12, 1e-6), 12, 0, 1e-6)[0] == \
        pytest.approx(1.0, rel=1e-9)


def test_advanced_composition_helps_from_the_first_k_where_it_beats_basic():
    k = advanced_helps_from(1.0, 1e-6)
    assert per_query_epsilon(1.0, k, 1e-6) > 1.0 / k
    assert all(per_query_epsilon(1.0, j, 1e-6) <= 1.0 / j for j in range(1, k))
    assert k == 30


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-6), (1.0, 1e-5), (3.0, 1e-9),
                                            (10.0, 1e-6)])
def test_delta_is_not_the_probability_that_the_gaussian_loss_exceeds_epsilon(epsilon, delta):
    """For the exactly calibrated Gaussian the loss L ~ N(μ, 2μ), μ = Δ²/2σ², exceeds ε with
    probability Φ(Δ/2σ − εσ/Δ) — more than δ (20× at ε = 1, δ = 10⁻⁶); checked by simulating L."""
    sigma = analytic_gaussian_sigma(epsilon, delta, 1.0)
    exceeds = gaussian_loss_exceeds(epsilon, sigma)
    assert exceeds > delta
    mu = 1 / (2 * sigma ** 2)
    assert exceeds == pytest.approx(stats.norm.sf(epsilon, loc=mu, scale=math.sqrt(2 * mu)),
                                    rel=1e-9)
    if (epsilon, delta) == (1.0, 1e-6):
        assert exceeds / delta == pytest.approx(20.1, abs=0.05)
    # the loss by simulation, L = (Δ/σ²)(x − Δ/2) for x ~ N(Δ, σ²), where P[L > ε] is large
    rng = np.random.default_rng(7)
    sigma = analytic_gaussian_sigma(0.5, 0.05, 1.0)
    x = rng.normal(1.0, sigma, 400_000)
    loss = (x - 0.5) / sigma ** 2
    p = gaussian_loss_exceeds(0.5, sigma)
    assert abs(np.mean(loss > 0.5) - p) < 5 * math.sqrt(p * (1 - p) / x.size)
    assert np.mean(loss > 0.5) > 0.05


def test_classic_gaussian_is_private_up_to_about_8_4_at_delta_1e5():
    """Its proof covers ε < 1; against the exact condition it holds up to ε ≈ 8.42 (δ = 10⁻⁵)."""
    limit = classic_gaussian_limit(1e-5)
    assert limit == pytest.approx(8.42, abs=0.01)
    for epsilon, private in ((1.5, True), (limit - 0.01, True), (limit + 0.01, False)):
        classic = math.sqrt(2 * math.log(1.25 / 1e-5)) / epsilon
        assert (classic >= analytic_gaussian_sigma(epsilon, 1e-5, 1.0)) == private


def test_split_budget():
    shares = split_budget(1.0, {"origin totals": 1, "destination totals": 1, "OD matrix": 2})
    assert shares == {"origin totals": 0.25, "destination totals": 0.25, "OD matrix": 0.5}
    assert sequential_composition(list(shares.values()))[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="weights"):
        split_budget(1.0, {"a": 0, "b": 0})
    with pytest.raises(ValueError, match="total_epsilon"):
        split_budget(0.0, {"a": 1})


def test_the_delta_help_text_holds_over_the_whole_parameter_range():
    """DELTA_MEANING says the Gaussian's privacy loss exceeds ε more often than δ: for the
    product's calibration that is Φ(Δ/2σ − εσ/Δ) > δ at every allowed (ε, δ)."""
    from dpcore.mechanisms.base import DELTA, DELTA_MEANING, EPSILON
    assert "more often than δ" in DELTA_MEANING
    for epsilon in np.geomspace(1e-3, EPSILON.high, 12):
        for delta in np.geomspace(DELTA.low, DELTA.high, 8):
            sigma = analytic_gaussian_sigma(float(epsilon), float(delta), 1.0)
            assert gaussian_loss_exceeds(float(epsilon), sigma) > delta, (epsilon, delta)
