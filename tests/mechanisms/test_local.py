"""Local frequency oracles: exact ε-LDP from the definitions with the support probabilities the
estimators use, the real clients against those definitions, the published variance formulas, GRR's
joint (multinomial) law. What every mechanism must do (release, variance by simulation, release vs
per-user protocol, the ε-LDP audit) is checked for the whole registry in ``test_contract``.

Every exact distribution (``output_distributions``) is enumerated from the mechanism's *definition*,
written out independently of the implementation; the implementation is then held to it by a
chi-square goodness-of-fit test of its real client and by comparing its (p*, q*) with the support
probabilities computed from the enumeration. Statistical tolerances come from ``stat_checks`` with
the fixed family-wise false-failure rate ALPHA; nothing is tuned. Domains and sample sizes are chosen
so that every support count has a mean of at least ~40, which keeps the excess kurtosis of the
estimates below ~0.03 and the normal-theory chi-square/F intervals accurate.
"""

from itertools import product
from math import exp

import numpy as np
import pytest

from dpcore.mechanisms import build, get, local, names
from dpcore.mechanisms.base import LOCAL
from tests.mechanisms.output_distributions import (
    dbitflip_distribution,
    grr_distribution,
    hash_range,
    lh_distribution,
    ss_distribution,
    ss_subset_size,
    ue_bit_probabilities,
    ue_distribution,
)
from tests.mechanisms.stat_checks import assert_exact_ldp, assert_fits, assert_variance

EPSILONS = [0.5, 1.0, 2.0, 4.0]
D_B = 3  # dBitFlip's d_b in the variance formula checks

#: Recipe C's histogram: zeros, ties, a heavy cell and singletons (n = 3,000).
COUNTS = np.array([0, 0, 40, 40, 5, 1200, 300, 0, 1, 77, 77, 900, 0, 258, 100])
#: A smaller one for the per-user comparison (n = 400).
SMALL = np.array([0, 150, 3, 3, 0, 80, 1, 163])
#: The mechanisms built on this module's shared client and server checks.
ORACLES = [k for k in names(model=LOCAL) if issubclass(get(k), local.LocalOracle)]


def support_probabilities(P, supports):
    """(p*, q*) of a pure protocol from its exact distribution; ``supports[y, v]`` = v ∈ Supp(y).
    Asserts that q* is the same for every pair x ≠ v, as the estimator requires."""
    hit = P @ supports.astype(float)                              # hit[x, v] = P[v ∈ Supp(Y) | x]
    d = len(P)
    own, other = np.diag(hit), hit[~np.eye(d, dtype=bool)]
    np.testing.assert_allclose(own, own[0], rtol=1e-12)
    np.testing.assert_allclose(other, other[0], rtol=1e-12)
    return own[0], other[0]


def pure_variance(p, q, n, c):
    """Eq. (1) of [WBLJ17]: n q*(1−q*)/(p*−q*)² + c_v (1−p*−q*)/(p*−q*)."""
    return n * q * (1 - q) / (p - q) ** 2 + c * (1 - p - q) / (p - q)


def ss_variance(eps, n, c):
    d, e = len(c), exp(eps)
    k = ss_subset_size(eps, d)
    p = k * e / (k * e + d - k)
    q = (k * (k - 1) * e + k * (d - k)) / ((d - 1) * (k * e + d - k))
    return pure_variance(p, q, n, c)


def lh_variance(key, eps, n, c):
    e, g = exp(eps), hash_range(key, eps)
    return (n * (e + g - 1) ** 2 / ((e - 1) ** 2 * (g - 1))
            + c * ((g - 1) ** 2 - e) / ((e - 1) * (g - 1)))


#: Per-mechanism closed forms of Var[ĉ_v] (the papers' formulas, written out here): key →
#: (ε, n, c) ↦ variance per cell. dBitFlip with d_b = D_B.
VARIANCE_FORMULAS = {
    "grr": lambda eps, n, c: n * (exp(eps) + len(c) - 2) / (exp(eps) - 1) ** 2
                             + c * (len(c) - 2) / (exp(eps) - 1),
    "sue": lambda eps, n, c: np.full(len(c), n * exp(eps / 2) / (exp(eps / 2) - 1) ** 2),
    "oue": lambda eps, n, c: 4 * n * exp(eps) / (exp(eps) - 1) ** 2 + c,
    "blh": lambda eps, n, c: lh_variance("blh", eps, n, c),
    "olh": lambda eps, n, c: lh_variance("olh", eps, n, c),
    "ss": ss_variance,
    "dbitflip": lambda eps, n, c: (n * (len(c) / D_B) * exp(eps / 2) / (exp(eps / 2) - 1) ** 2
                                   + c * (len(c) / D_B - 1)),
}


def mechanism(key, epsilon=1.0):
    return build(key, epsilon=epsilon, **({"d_b": D_B} if key == "dbitflip" else {}))


# ------------------------------------------------------------------------------------- registry
@pytest.mark.parametrize("key, exact", [("grr", True), ("sue", True), ("oue", True), ("blh", True),
                                        ("olh", True), ("ss", False), ("dbitflip", False)])
def test_which_fast_releases_are_exact(key, exact):
    approximation = get(key).approximation
    assert (approximation is None) == exact
    assert exact or "not reproduced" in approximation


def test_dbitflip_declares_d_b_with_a_default_and_range():
    (param,) = [p for p in get("dbitflip").params if p.name == "d_b"]
    assert param.kind is int and param.low == 1 and param.high >= 9_796_900
    assert build("dbitflip").d_b == param.default == 1


# ------------------------------------------------------------------------ (a) exact ε-LDP
@pytest.mark.parametrize("eps", EPSILONS)
def test_grr_is_exactly_epsilon_ldp_with_matching_support_probabilities(eps):
    d = 5
    P = grr_distribution(eps, d)
    assert_exact_ldp(P, eps)
    p, q = support_probabilities(P, np.eye(d, dtype=bool))
    np.testing.assert_allclose(get("grr")(epsilon=eps).support_probabilities(d), (p, q), rtol=1e-12)


@pytest.mark.parametrize("key", ["sue", "oue"])
@pytest.mark.parametrize("eps", EPSILONS)
def test_unary_encoding_is_exactly_epsilon_ldp(key, eps):
    d = 5
    P = ue_distribution(key, eps, d)
    assert_exact_ldp(P, eps)
    supports = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(bool)
    p, q = support_probabilities(P, supports)
    np.testing.assert_allclose(build(key, epsilon=eps).support_probabilities(d), (p, q), rtol=1e-12)


def test_unary_encoding_enumeration_catches_the_or_bug():
    """The check has teeth: pure-LDP's pre-fc622e3 OUE (true bit = p + (1−p)q) loses ln(e^ε + 2)."""
    eps, d = 1.0, 4
    p, q = ue_bit_probabilities("oue", eps)
    bits = (np.arange(2**d)[:, None] >> np.arange(d)) & 1
    buggy_p = p + (1 - p) * q
    other = np.prod(np.where(bits == 1, q, 1 - q), axis=1)
    P = other[None, :] * (np.where(bits == 1, buggy_p, 1 - buggy_p)
                          / np.where(bits == 1, q, 1 - q)).T
    with pytest.raises(AssertionError, match="exceeds"):
        assert_exact_ldp(P, eps)


@pytest.mark.parametrize("key", ["blh", "olh"])
@pytest.mark.parametrize("eps", EPSILONS)
def test_local_hashing_is_exactly_epsilon_ldp_over_a_fully_random_family(key, eps):
    g = hash_range(key, eps)
    d = 4 if g**5 <= 200_000 else 2   # OLH at ε = 4 has g = 56: two cells keep it enumerable
    P, functions = lh_distribution(key, eps, d)
    assert_exact_ldp(P, eps)
    supports = (functions[:, None, :] == np.arange(g)[None, :, None]).reshape(-1, d)
    p, q = support_probabilities(P, supports)
    np.testing.assert_allclose(build(key, epsilon=eps).support_probabilities(d), (p, q), rtol=1e-12)
    assert build(key, epsilon=eps).hash_range == g


@pytest.mark.parametrize("eps", EPSILONS)
def test_subset_selection_is_exactly_epsilon_ldp(eps):
    d = 6
    P = ss_distribution(eps, d)
    assert_exact_ldp(P, eps)
    supports = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(bool)
    p, q = support_probabilities(P, supports)
    mech = get("ss")(epsilon=eps)
    assert mech.subset_size(d) == ss_subset_size(eps, d)
    np.testing.assert_allclose(mech.support_probabilities(d), (p, q), rtol=1e-12)


@pytest.mark.parametrize("d_b", [1, 2, 5])
@pytest.mark.parametrize("eps", EPSILONS)
def test_dbitflip_is_epsilon_ldp_and_exactly_half_of_it_with_one_bit(eps, d_b):
    P = dbitflip_distribution(eps, 5, d_b)
    if d_b == 1:   # only one bit can depend on the commute: the loss is ε/2
        assert_exact_ldp(P, eps, attained=False)
        assert_exact_ldp(P, eps / 2)
    else:
        assert_exact_ldp(P, eps)


# ----------------------------------------------------- (a) real clients fit the exact distributions
SAMPLES = 40_000


@pytest.mark.parametrize("key", ["blh", "olh"])
def test_local_hashing_client_fits_its_definition_pairwise(key, seed):
    """The real family is only pairwise independent, so test what it promises: the joint law of
    (H(x), H(v), y) for the sender's x and another cell v — uniform (H(x), H(v)) over [g]², y by
    randomised response on H(x) — with H recomputed here from the family's definition."""
    eps, d, x, v = 1.0, 5, 2, 4
    g, e = hash_range(key, eps), exp(eps)
    reports = build(key, epsilon=eps).perturb(np.full(SAMPLES, x), d, np.random.default_rng(seed))
    a, b, y = reports["a"], reports["b"], reports["y"]
    assert (a >= 1).all() and (a < 2**31 - 1).all() and (b >= 0).all() and (b < 2**31 - 1).all()
    hx, hv = (a * x + b) % (2**31 - 1) % g, (a * v + b) % (2**31 - 1) % g
    hx_, hv_, y_ = np.meshgrid(np.arange(g), np.arange(g), np.arange(g), indexing="ij")
    expected = np.where(y_ == hx_, e / (e + g - 1), 1 / (e + g - 1)) / g**2
    assert_fits(((hx * g) + hv) * g + y, expected.ravel())


def test_subset_selection_client_fits_its_definition(seed):
    eps, d, x = 1.0, 6, 4
    subset = get("ss")(epsilon=eps).perturb(np.full(SAMPLES, x), d, np.random.default_rng(seed))["subset"]
    k = ss_subset_size(eps, d)
    assert subset.shape == (SAMPLES, k)
    assert (np.diff(np.sort(subset, axis=1), axis=1) > 0).all(), "cells in a subset must differ"
    assert_fits((1 << subset).sum(axis=1), ss_distribution(eps, d)[x])


@pytest.mark.parametrize("eps", [0.2, 4.0])   # k = 3 (Fisher–Yates branch of the sampler), k = 1
def test_subset_selection_client_fits_at_other_subset_sizes(eps, seed):
    d, x = 6, 0
    subset = get("ss")(epsilon=eps).perturb(np.full(SAMPLES, x), d, np.random.default_rng(seed))["subset"]
    assert_fits((1 << subset).sum(axis=1), ss_distribution(eps, d)[x])


@pytest.mark.parametrize("d_b", [2, 4])   # the two branches of the subset sampler
def test_dbitflip_client_fits_its_definition(d_b, seed):
    eps, d, x = 1.0, 5, 2
    reports = build("dbitflip", epsilon=eps, d_b=d_b).perturb(np.full(SAMPLES, x), d,
                                                             np.random.default_rng(seed))
    j, bits = reports["j"], reports["bits"]
    assert j.shape == bits.shape == (SAMPLES, d_b) and bits.dtype == bool
    jmask = (1 << j).sum(axis=1)
    bmask = ((1 << j) * bits).sum(axis=1)
    assert_fits(jmask * 2**d + bmask, dbitflip_distribution(eps, d, d_b)[x])


@pytest.mark.parametrize("universe, k", [(5, 2), (3, 2), (9, 3), (6, 3)])
def test_random_subsets_are_uniform_ordered_samples_without_replacement(universe, k, seed):
    """Both branches (k² ≤ universe: rejection; otherwise partial Fisher–Yates) give every ordered
    k-tuple of distinct values the same probability, so any set of columns is a uniform subset."""
    draws = local.random_subsets(20_000, universe, k, np.random.default_rng(seed))
    tuples = list(product(range(universe), repeat=k))
    distinct = np.array([len(set(t)) == k for t in tuples])
    codes = (draws * universe ** np.arange(k)[::-1]).sum(axis=1)
    assert_fits(codes, distinct / distinct.sum())


# ------------------------------------------------------------------------ server on real reports
@pytest.mark.parametrize("key", ["blh", "olh"])
def test_local_hashing_server_counts_exactly_the_supporting_reports(key, seed, monkeypatch):
    """Block-wise aggregation (blocks forced tiny) equals the definition C_v = #{i: H_i(v) = y_i}."""
    monkeypatch.setattr(local, "BLOCK_ELEMENTS", 7)
    mech, d = build(key, epsilon=2.0), 11
    reports = mech.perturb(np.random.default_rng(seed).integers(0, d, 50), d,
                           np.random.default_rng(seed + 1))
    g = mech.hash_range
    expected = [sum(int((int(a) * v + int(b)) % (2**31 - 1) % g == int(y))
                    for a, b, y in zip(reports["a"], reports["b"], reports["y"])) for v in range(d)]
    np.testing.assert_array_equal(mech.accumulate(reports, d), expected)


@pytest.mark.parametrize("key", ["sue", "oue"])
def test_unary_encoding_client_in_tiny_blocks_is_still_a_valid_report(key, seed, monkeypatch):
    monkeypatch.setattr(local, "BLOCK_ELEMENTS", 3)
    bits = build(key, epsilon=1.0).perturb(np.arange(7), 7, np.random.default_rng(seed))["bits"]
    assert bits.shape == (7, 7)
    assert build(key).accumulate({"bits": bits}, 7).tolist() == bits.sum(axis=0).tolist()


# ----------------------------------------------------------------------- (b) exact variance
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("key", VARIANCE_FORMULAS)
def test_variance_is_the_published_formula(key, eps):
    """``variance`` against the paper's formula (the contract tests hold releases to ``variance``)."""
    expected = VARIANCE_FORMULAS[key](eps, COUNTS.sum(), COUNTS.astype(float))
    np.testing.assert_allclose(mechanism(key, eps).variance(COUNTS), expected, rtol=1e-12)


# ------------------------------------------------------------ (c) fast release vs per-user protocol
SIM_RUNS = 2000


def releases_and_simulations(mech, counts, seed, runs=SIM_RUNS):
    rng = np.random.default_rng(seed)
    fast = np.stack([mech.release(counts, rng) for _ in range(runs)])
    items = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    slow = np.stack([mech.simulate(items, len(counts), rng) for _ in range(runs)])
    return fast, slow


def test_grr_release_keeps_the_multinomial_structure(seed):
    """Σ ĉ = n in every run of both samplers, and a set query's variance includes the negative
    covariance of §3.1 — which independent binomials (the shortcut that is *not* exact for GRR) miss."""
    eps, n, d = 1.0, SMALL.sum(), len(SMALL)
    mech = get("grr")(epsilon=eps)
    fast, slow = releases_and_simulations(mech, SMALL, seed)
    np.testing.assert_allclose(fast.sum(axis=1), n, rtol=1e-12)
    np.testing.assert_allclose(slow.sum(axis=1), n, rtol=1e-12)

    e = exp(eps)
    p, q = e / (e + d - 1), 1 / (e + d - 1)
    query = [0, 1, 2, 3]
    cov = {(u, v): -(SMALL[u] * p * q + SMALL[v] * p * q + (n - SMALL[u] - SMALL[v]) * q * q)
           / (p - q) ** 2 for u in query for v in query if u != v}
    assert mech.covariance(SMALL, 1, 5) == pytest.approx(
        -(SMALL[1] * p * q + SMALL[5] * p * q + (n - SMALL[1] - SMALL[5]) * q * q) / (p - q) ** 2,
        rel=1e-12)
    variance = VARIANCE_FORMULAS["grr"](eps, n, SMALL.astype(float))
    query_variance = variance[query].sum() + sum(cov.values())
    assert_variance(fast[:, query].sum(axis=1, keepdims=True), [query_variance])
    assert_variance(slow[:, query].sum(axis=1, keepdims=True), [query_variance])

    rng = np.random.default_rng(seed + 1)
    independent = np.stack([(rng.binomial(SMALL, p) + rng.binomial(n - SMALL, q) - n * q) / (p - q)
                            for _ in range(SIM_RUNS)])
    assert independent.sum(axis=1).std() > 1, "independent binomials do not keep the total"
    with pytest.raises(AssertionError, match="variance ratios"):
        assert_variance(independent[:, query].sum(axis=1, keepdims=True), [query_variance])


# ------------------------------------------------------------------------------ inputs, errors
def test_d_b_larger_than_the_domain_is_rejected_at_run_time(rng):
    mech = get("dbitflip")(d_b=6)
    for call in (lambda: mech.release(np.ones(5, int), rng), lambda: mech.variance(np.ones(5, int)),
                 lambda: mech.perturb(np.zeros(3, int), 5, rng), lambda: mech.bits_per_user(5)):
        with pytest.raises(ValueError, match=r"'d_b'.*\(6\).*d = 5.*between 1 and 5"):
            call()
    assert mech.release(np.ones(6, int), rng).shape == (6,)


@pytest.mark.parametrize("key", ORACLES)
def test_fractional_counts_and_one_cell_domains_get_clear_messages(key, rng):
    mech = mechanism(key)
    with pytest.raises(ValueError, match="cell 1"):
        mech.release(np.array([3.0, 1.5, 2.0, 4.0]), rng)
    with pytest.raises(ValueError, match="at least 2 cells"):
        mech.release(np.array([5]), rng)


# ------------------------------------------------------------------------ description and costs
def test_bits_per_user():
    assert get("grr")().bits_per_user(1085) == 11
    assert get("sue")().bits_per_user(1085) == get("oue")().bits_per_user(1085) == 1085
    assert get("blh")().bits_per_user(1085) == 1 + 62
    assert get("olh")(epsilon=1.0).bits_per_user(1085) == 2 + 62          # g = 4
    assert get("ss")(epsilon=1.0).bits_per_user(6) == 4                   # k = 2: ⌈log₂ 15⌉
    assert get("dbitflip")(d_b=2).bits_per_user(1085) == 2 * (1 + 11)


@pytest.mark.parametrize("eps, g", [(0.5, 3), (1.0, 4), (2.0, 8), (5.0, 149)])
def test_olh_hash_range(eps, g):
    assert get("olh")(epsilon=eps).hash_range == g


@pytest.mark.parametrize("key", names(model=LOCAL))
def test_local_explanations_state_the_variance(key):
    assert "Var" in mechanism(key, 0.7).explain()
