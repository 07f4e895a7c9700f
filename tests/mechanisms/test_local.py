"""Local frequency oracles: exact ε-LDP from the definitions, the real clients against those
definitions, unbiasedness and exact variances of the fast release, fast release vs per-user protocol.

Every exact distribution below is enumerated from the mechanism's *definition* (MECHANISMS.md §3),
written out here independently of the implementation; the implementation is then held to it by a
chi-square goodness-of-fit test of its real client and by comparing its (p*, q*) with the support
probabilities computed from the enumeration. Statistical tolerances come from ``stat_checks`` with
the fixed family-wise false-failure rate ALPHA; nothing is tuned. Domains and sample sizes are chosen
so that every support count has a mean of at least ~40, which keeps the excess kurtosis of the
estimates below ~0.03 and the normal-theory chi-square/F intervals accurate.
"""

from itertools import combinations, product
from math import comb, exp

import numpy as np
import pytest
from scipy import stats

from dpcore.mechanisms import build, get, names
from dpcore.mechanisms import local
from dpcore.mechanisms.base import LOCAL
from tests.mechanisms.stat_checks import (ALPHA, assert_exact_ldp, assert_same_distribution,
                                          assert_unbiased, assert_variance)

LOCAL_KEYS = ["grr", "sue", "oue", "blh", "olh", "ss", "dbitflip"]
EPSILONS = [0.5, 1.0, 2.0, 4.0]
D_B = 3  # dBitFlip's d_b in the statistical tests

#: Recipe C's histogram: zeros, ties, a heavy cell and singletons (n = 3,000).
COUNTS = np.array([0, 0, 40, 40, 5, 1200, 300, 0, 1, 77, 77, 900, 0, 258, 100])
#: A smaller one for the per-user comparison (n = 400).
SMALL = np.array([0, 150, 3, 3, 0, 80, 1, 163])


def mechanism(key, epsilon=1.0):
    return build(key, epsilon=epsilon, d_b=D_B)


# ------------------------------------------------------------------- definitions (test-side copies)
def grr_distribution(eps, d):
    """Codes: the reported cell."""
    e = exp(eps)
    return np.where(np.eye(d, dtype=bool), e / (e + d - 1), 1 / (e + d - 1))


def ue_bit_probabilities(key, eps):
    if key == "sue":
        a = exp(eps / 2)
        return a / (a + 1), 1 / (a + 1)
    return 0.5, 1 / (exp(eps) + 1)


def ue_distribution(key, eps, d):
    """Codes: the bit vector as an integer (bit j = cell j), probabilities as per-bit products."""
    p, q = ue_bit_probabilities(key, eps)
    bits = (np.arange(2**d)[:, None] >> np.arange(d)) & 1        # (codes, cells)
    other = np.prod(np.where(bits == 1, q, 1 - q), axis=1)
    own = np.where(bits == 1, p, 1 - p) / np.where(bits == 1, q, 1 - q)
    return other[None, :] * own.T                                 # (x, code)


def hash_range(key, eps):
    return 2 if key == "blh" else int(round(exp(eps))) + 1


def lh_distribution(key, eps, d):
    """Fully random hash family: codes = (every function H: [d] → [g], reported bucket y)."""
    e, g = exp(eps), hash_range(key, eps)
    functions = np.array(list(product(range(g), repeat=d)))       # (g^d, d)
    y = np.arange(g)
    keep = functions[:, :, None] == y[None, None, :]              # (H, x, y): y == H(x)
    grr = np.where(keep, e / (e + g - 1), 1 / (e + g - 1)) / g**d
    return grr.transpose(1, 0, 2).reshape(d, -1), functions


def ss_subset_size(eps, d):
    return max(1, round(d / (exp(eps) + 1)))


def ss_distribution(eps, d):
    """Codes: the reported subset as a bit mask; P[S | x] ∝ e^ε if x ∈ S, 1 otherwise."""
    e, k = exp(eps), ss_subset_size(eps, d)
    P = np.zeros((d, 2**d))
    for subset in combinations(range(d), k):
        mask = sum(1 << j for j in subset)
        for x in range(d):
            P[x, mask] = e if x in subset else 1.0
    return P / P.sum(axis=1, keepdims=True)


def dbitflip_distribution(eps, d, d_b):
    """Codes: (sampled cells J as a mask) · 2^d + (mask of the cells of J whose bit is 1)."""
    a = exp(eps / 2)
    P = np.zeros((d, 4**d))
    for sampled in combinations(range(d), d_b):
        jmask = sum(1 << j for j in sampled)
        for ones in product((0, 1), repeat=d_b):
            bmask = sum(1 << j for j, b in zip(sampled, ones) if b)
            for x in range(d):
                prob = 1 / comb(d, d_b)
                for j, b in zip(sampled, ones):
                    one = a / (a + 1) if j == x else 1 / (a + 1)
                    prob *= one if b else 1 - one
                P[x, jmask * 2**d + bmask] = prob
    return P


def support_probabilities(P, supports):
    """(p*, q*) of a pure protocol from its exact distribution; ``supports[y, v]`` = v ∈ Supp(y).
    Asserts that q* is the same for every pair x ≠ v, as the estimator requires."""
    hit = P @ supports.astype(float)                              # hit[x, v] = P[v ∈ Supp(Y) | x]
    d = len(P)
    own, other = np.diag(hit), hit[~np.eye(d, dtype=bool)]
    np.testing.assert_allclose(own, own[0], rtol=1e-12)
    np.testing.assert_allclose(other, other[0], rtol=1e-12)
    return own[0], other[0]


def exact_variance(key, eps, counts, d_b=D_B):
    """§3.10 of MECHANISMS.md, written out per mechanism."""
    c = np.asarray(counts, dtype=float)
    n, d, e = c.sum(), len(c), exp(eps)
    if key == "grr":
        return n * (e + d - 2) / (e - 1) ** 2 + c * (d - 2) / (e - 1)
    if key == "sue":
        a = exp(eps / 2)
        return np.full(d, n * a / (a - 1) ** 2)
    if key == "oue":
        return 4 * n * e / (e - 1) ** 2 + c
    if key in ("blh", "olh"):
        g = hash_range(key, eps)
        return (n * (e + g - 1) ** 2 / ((e - 1) ** 2 * (g - 1))
                + c * ((g - 1) ** 2 - e) / ((e - 1) * (g - 1)))
    if key == "ss":
        k = ss_subset_size(eps, d)
        p = k * e / (k * e + d - k)
        q = (k * (k - 1) * e + k * (d - k)) / ((d - 1) * (k * e + d - k))
        return n * q * (1 - q) / (p - q) ** 2 + c * (1 - p - q) / (p - q)
    a = exp(eps / 2)
    return n * (d / d_b) * a / (a - 1) ** 2 + c * (d / d_b - 1)


# ------------------------------------------------------------------------------------- registry
def test_local_mechanisms_are_registered_with_their_metadata():
    assert set(LOCAL_KEYS) <= set(names(model=LOCAL))
    for key in LOCAL_KEYS:
        cls = get(key)
        assert cls.model == LOCAL and cls.references and cls.name
        assert build(key).guarantee == "ε-LDP"
    exact = {"grr", "sue", "oue", "blh", "olh"}
    for key in LOCAL_KEYS:
        assert (get(key).approximation is None) == (key in exact), key
    assert "not reproduced" in get("ss").approximation
    assert "not reproduced" in get("dbitflip").approximation


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


def assert_fits(codes, probabilities):
    """Chi-square goodness of fit of observed output codes to exact probabilities, pooling every
    output whose expected count is below 5 into one cell (recipe A.6); impossible outputs fail."""
    codes = np.asarray(codes)
    observed = np.bincount(codes, minlength=len(probabilities))
    assert len(observed) == len(probabilities), "an output code outside the enumeration"
    assert observed[probabilities == 0].sum() == 0, "the client produced an impossible output"
    expected = probabilities * len(codes)
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp_ = np.append(expected[~small], expected[small].sum())
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    p = stats.chisquare(obs, exp_).pvalue
    assert p > ALPHA, f"chi-square p = {p:.2e} over {len(obs)} cells"


def bits_to_codes(bits, cells):
    return (np.asarray(bits, dtype=np.int64) << cells).sum(axis=-1)


def test_grr_client_fits_its_definition(seed):
    d, x = 5, 3
    reports = get("grr")(epsilon=1.0).perturb(np.full(SAMPLES, x), d, np.random.default_rng(seed))
    assert_fits(reports["y"], grr_distribution(1.0, d)[x])


@pytest.mark.parametrize("key", ["sue", "oue"])
def test_unary_encoding_client_fits_its_definition(key, seed):
    d, x = 5, 1
    bits = build(key, epsilon=1.0).perturb(np.full(SAMPLES, x), d, np.random.default_rng(seed))["bits"]
    assert bits.dtype == bool and bits.shape == (SAMPLES, d)
    assert_fits(bits_to_codes(bits, np.arange(d)), ue_distribution(key, 1.0, d)[x])


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


# -------------------------------------------------------------- (b) unbiasedness and exact variance
RUNS = 3000


@pytest.mark.parametrize("eps", [1.0, 4.0])
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_release_is_unbiased_with_the_exact_variance(key, eps, seed):
    mech = mechanism(key, eps)
    variance = exact_variance(key, eps, COUNTS)
    np.testing.assert_allclose(mech.variance(COUNTS), variance, rtol=1e-12)
    rng = np.random.default_rng(seed)
    samples = np.stack([mech.release(COUNTS, rng) for _ in range(RUNS)])
    assert_unbiased(samples, COUNTS, variance)
    assert_variance(samples, variance)


# ------------------------------------------------------------ (c) fast release vs per-user protocol
SIM_RUNS = 2000


def releases_and_simulations(mech, counts, seed, runs=SIM_RUNS):
    rng = np.random.default_rng(seed)
    fast = np.stack([mech.release(counts, rng) for _ in range(runs)])
    items = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    slow = np.stack([mech.simulate(items, len(counts), rng) for _ in range(runs)])
    return fast, slow


@pytest.mark.parametrize("eps, counts", [
    pytest.param(1.0, SMALL, id="eps1-n400"),
    pytest.param(4.0, 10 * SMALL, id="eps4-n4000", marks=pytest.mark.slow)])
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_release_matches_the_per_user_protocol(key, eps, counts, seed):
    fast, slow = releases_and_simulations(mechanism(key, eps), counts, seed)
    assert_same_distribution(fast, slow)
    variance = exact_variance(key, eps, counts)
    assert_unbiased(slow, counts, variance)
    assert_variance(slow, variance)


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
    variance = exact_variance("grr", eps, SMALL)
    query_variance = variance[query].sum() + sum(cov.values())
    assert_variance(fast[:, query].sum(axis=1, keepdims=True), [query_variance])
    assert_variance(slow[:, query].sum(axis=1, keepdims=True), [query_variance])

    rng = np.random.default_rng(seed + 1)
    independent = np.stack([(rng.binomial(SMALL, p) + rng.binomial(n - SMALL, q) - n * q) / (p - q)
                            for _ in range(SIM_RUNS)])
    assert independent.sum(axis=1).std() > 1, "independent binomials do not keep the total"
    with pytest.raises(AssertionError, match="variance ratios"):
        assert_variance(independent[:, query].sum(axis=1, keepdims=True), [query_variance])


# -------------------------------------------------------------------------- seeds, inputs, errors
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_same_seed_same_output_different_seed_different_output(key, seed):
    mech = mechanism(key, 1.0)
    first = mech.release(COUNTS, np.random.default_rng(seed))
    np.testing.assert_array_equal(first, mech.release(COUNTS, np.random.default_rng(seed)))
    assert not np.array_equal(first, mech.release(COUNTS, np.random.default_rng(seed + 1)))
    items = np.repeat(np.arange(len(COUNTS)), COUNTS)
    sim = mech.simulate(items, len(COUNTS), np.random.default_rng(seed))
    np.testing.assert_array_equal(sim, mech.simulate(items, len(COUNTS), np.random.default_rng(seed)))
    assert not np.array_equal(sim, mech.simulate(items, len(COUNTS), np.random.default_rng(seed + 1)))


@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_release_shape_type_input_untouched_and_no_global_state(key, seed):
    counts = COUNTS.copy()
    np.random.seed(0)
    out = mechanism(key).release(counts, np.random.default_rng(seed))
    np.random.seed(1)
    again = mechanism(key).release(counts, np.random.default_rng(seed))
    assert out.shape == counts.shape and out.dtype == np.float64
    np.testing.assert_array_equal(out, again)
    np.testing.assert_array_equal(counts, COUNTS)
    as_float = mechanism(key).release(counts.astype(float), np.random.default_rng(seed))
    np.testing.assert_array_equal(as_float, out)


@pytest.mark.parametrize("key", LOCAL_KEYS)
@pytest.mark.parametrize("bad, error", [(0.0, ValueError), (-1.0, ValueError), (25.0, ValueError),
                                        (float("nan"), ValueError), ("1", TypeError)])
def test_invalid_epsilon_is_rejected_naming_the_parameter(key, bad, error):
    with pytest.raises(error, match="'epsilon'"):
        get(key)(epsilon=bad)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (2.5, ValueError), ("3", TypeError)])
def test_invalid_d_b_is_rejected_naming_the_parameter(bad, error):
    with pytest.raises(error, match="'d_b'"):
        get("dbitflip")(d_b=bad)


def test_d_b_larger_than_the_domain_is_rejected_at_run_time(rng):
    mech = get("dbitflip")(d_b=6)
    for call in (lambda: mech.release(np.ones(5, int), rng), lambda: mech.variance(np.ones(5, int)),
                 lambda: mech.perturb(np.zeros(3, int), 5, rng), lambda: mech.bits_per_user(5)):
        with pytest.raises(ValueError, match=r"'d_b'.*\(6\).*d = 5.*between 1 and 5"):
            call()
    assert mech.release(np.ones(6, int), rng).shape == (6,)


@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_bad_counts_items_and_domains_get_clear_messages(key, rng):
    mech = mechanism(key)
    with pytest.raises(ValueError, match="cell 2"):
        mech.release(np.array([3, 1, -1, 4]), rng)
    with pytest.raises(ValueError, match="cell 1"):
        mech.release(np.array([3.0, 1.5, 2.0, 4.0]), rng)
    with pytest.raises(ValueError, match="one-dimensional"):
        mech.release(np.ones((2, 3), int), rng)
    with pytest.raises(ValueError, match="item 7 of person 1"):
        mech.perturb(np.array([0, 7]), 5, rng)
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


@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_explain_states_formulas_and_plain_words(key):
    text = mechanism(key, 0.7).explain()
    assert "0.7" in text and "$" in text and "In plain words" in text
    assert "Var" in text
