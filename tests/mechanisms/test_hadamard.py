"""Hadamard response (both forms) and the Hadamard mechanism, checked against their definitions.

Every output distribution (``output_distributions``) is enumerated from the definition with
``scipy.linalg.hadamard`` — never from the module's sampling code. Deterministic checks (exact LDP
ratio, exact mean and variance of the decoder over that distribution) come first; statistical ones
(chi-square fit of the real client, unbiasedness/variance of ``release``, ``release`` vs
``simulate``) use the shared family-wise false-failure rate ALPHA with fixed seeds.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import hadamard

import dpcore.mechanisms.hadamard as had
from dpcore.mechanisms import build, get, names
from dpcore.mechanisms.hadamard import (
    HadamardMechanism,
    HadamardResponse,
    force_parity,
    fwht,
    hm_probabilities,
    optimal_coefficients,
    uniform_permutation,
)
from tests.mechanisms.output_distributions import (
    hm_index,
    hm_matrix,
    hm_outputs,
    hr_block_matrix,
    hr_blocks,
    hr_small_matrix,
    pow2_at_least,
)
from tests.mechanisms.stat_checks import (
    ALPHA,
    assert_exact_ldp,
    assert_fits,
    assert_same_distribution,
    assert_unbiased,
    assert_variance,
)

#: A small histogram with zeros, ties, a heavy cell and singletons (recipe C of MECHANISMS.md §10).
SMALL = np.array([0, 0, 1, 1, 2, 5, 5, 17, 40, 0, 3, 250, 1, 8, 0, 12, 12, 1, 0, 90])
RUNS = 3000


def decoder_rows(mechanism, d, outputs, **kwargs):
    """G[o, v]: the estimate of cell v produced by the real server from the single report o."""
    return np.stack([mechanism.estimate(mechanism.accumulate(report, d), 1, d, **kwargs)
                     for report in outputs])


def exact_moments(P, G, counts):
    """Mean and variance of ĉ when counts[x] people draw from P[x, ·] through the linear server G."""
    mean_x = P @ G                       # E[g(Y) | x]
    second_x = P @ (G * G)
    return counts @ mean_x, counts @ (second_x - mean_x**2)


def release_runs(mechanism, counts, seed, runs=RUNS, **kwargs):
    rng = np.random.default_rng(seed)
    return np.stack([mechanism.release(counts, rng, **kwargs) for _ in range(runs)])


# ------------------------------------------------------------------------------------------ FWHT
@pytest.mark.parametrize("cache", [1, 4, had.FWHT_CACHE_ELEMENTS])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_fwht_matches_scipy_hadamard(monkeypatch, cache, dtype):
    """Both code paths (cache-sized pieces and streaming passes) for every size up to 2^10."""
    monkeypatch.setattr(had, "FWHT_CACHE_ELEMENTS", cache)
    rng = np.random.default_rng(7)
    for k in range(11):
        for shape in [(2**k,), (3, 2**k)]:
            x = rng.integers(-50, 50, size=shape).astype(dtype)
            before = x.copy()
            np.testing.assert_array_equal(fwht(x), x @ hadamard(2**k).T)
            np.testing.assert_array_equal(x, before)           # input untouched without overwrite


@pytest.mark.parametrize("cache", [1, 4, had.FWHT_CACHE_ELEMENTS])
def test_fwht_first_outputs_are_the_full_transforms_to_the_bit(monkeypatch, cache):
    """``first=m`` prunes the halves nobody reads: every m, one row and several, both paths."""
    monkeypatch.setattr(had, "FWHT_CACHE_ELEMENTS", cache)
    rng = np.random.default_rng(11)
    for k in range(9):
        for shape in [(2**k,), (3, 2**k)]:
            x = rng.integers(-50, 50, size=shape).astype(np.int32)
            full = x @ hadamard(2**k).T
            for m in range(1, 2**k + 1):
                before = x.copy()
                got = fwht(x, first=m)
                assert got.shape == shape[:-1] + (m,)
                np.testing.assert_array_equal(got, full[..., :m])
                np.testing.assert_array_equal(x, before)       # input untouched without overwrite
                np.testing.assert_array_equal(fwht(x.copy(), overwrite=True, first=m),
                                              full[..., :m])
    with pytest.raises(ValueError, match="between 1 and the length 8"):
        fwht(np.ones(8), first=9)


def test_fwht_int32_exact_up_to_its_bound():
    """Partial sums never exceed Σ|x|: a histogram totalling 2^31 − 1 is exact in int32."""
    x = np.zeros(1 << 12, dtype=np.int32)
    x[[0, 5, 77, 4095]] = [2**31 - 1 - 3, 1, 1, 1]
    np.testing.assert_array_equal(fwht(x).astype(np.int64), fwht(x.astype(np.int64)))


def test_fwht_rejects_lengths_that_are_not_powers_of_two():
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(np.ones(12))


def test_report_tally_through_a_small_buffer(monkeypatch):
    """Batches smaller than the histogram are buffered, flushed when full; larger ones go direct."""
    monkeypatch.setattr(had, "TALLY_BUFFER", 7)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 20, size=k) for k in (3, 5, 2, 9, 1, 30, 4)]
    np.testing.assert_array_equal(had._histogram(iter(parts), 20),
                                  np.bincount(np.concatenate(parts), minlength=20))
    np.testing.assert_array_equal(had._histogram(iter([]), 5), np.zeros(5))


# ----------------------------------------------------------------------------- uniform parity fix
@pytest.mark.parametrize("parity", [0, 1])
def test_force_parity_maps_uniform_outputs_uniformly_onto_a_parity_class(parity):
    """Flipping a bit that is set in the row is a 2-to-1 map of [K] onto the wanted class."""
    K = 32
    y = np.arange(K)
    H = hadamard(K)
    for row in range(1, K):
        for bit in (1 << i for i in range(5) if row >> i & 1):
            out = force_parity(y, np.full(K, row), np.full(K, bit), parity)
            hits = np.bincount(out, minlength=K)
            wanted = H[row] == (1 if parity == 0 else -1)
            np.testing.assert_array_equal(hits, np.where(wanted, 2, 0))


# --------------------------------------------------------------------------- public permutation
def test_bucketed_shuffle_is_uniform(monkeypatch, seed):
    """All 24 arrangements of 4 indices equally likely (chi-square), with the bucketed path forced
    (3 buckets, so buckets both collide and stay empty)."""
    monkeypatch.setattr(had, "SHUFFLE_BUCKETED_FROM", 0)
    rng = np.random.default_rng(seed)
    big = uniform_permutation(100_000, rng)
    np.testing.assert_array_equal(np.sort(big), np.arange(100_000))
    monkeypatch.setattr(had, "SHUFFLE_BUCKETS", 3)
    arrangements = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    draws = [arrangements[tuple(uniform_permutation(4, rng))] for _ in range(12_000)]
    assert stats.chisquare(np.bincount(draws, minlength=24)).pvalue > ALPHA


# ---------------------------------------------------------------------------------- HR layout
def test_hr_layout_matches_the_definition():
    for d in range(1, 80):
        for epsilon in (0.3, 1.0, 1.01, 2.0, 3.3, 4.0, 7.0, 12.0):
            lay = HadamardResponse(epsilon=epsilon).layout(d)
            if epsilon <= 1:
                assert (lay.blocked, lay.blocks, lay.block_size) == (False, 1, pow2_at_least(d + 1))
            else:
                assert (lay.blocked, lay.blocks, lay.block_size) == (True, *hr_blocks(d, epsilon))
                assert lay.items_per_block * lay.blocks >= d


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("d", [1, 5, 11])
def test_hr_supports_is_the_set_of_likelier_outputs(epsilon, d):
    """C_s by the definition: the outputs symbol s sends e^ε times as often as the others."""
    mech = HadamardResponse(epsilon=epsilon)
    P = (hr_block_matrix(d, epsilon, np.arange(d)) if mech.blocked
         else hr_small_matrix(d, epsilon))
    lay = mech.layout(d)
    found = np.array([[lay.supports(x, y) for y in range(lay.outputs)] for x in range(d)])
    np.testing.assert_array_equal(found, P == P.max())


def test_hr_describe_and_explain_name_the_form():
    assert "ε ≤ 1 form" in HadamardResponse(epsilon=1.0).describe()
    assert "blocked form" in HadamardResponse(epsilon=1.5).describe()
    assert "blocked form" in HadamardResponse(epsilon=3.0).explain()
    assert "uses the ε ≤ 1 form" in HadamardResponse(epsilon=0.5).explain()


# -------------------------------------------------------------------------- (a) exact LDP, HR
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("d", [5, 11])
def test_hr_exact_ldp(epsilon, d):
    if epsilon <= 1:
        P = hr_small_matrix(d, epsilon)
    else:
        P = hr_block_matrix(d, epsilon, np.random.default_rng(d).permutation(d))
    assert_exact_ldp(P, epsilon)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_hr_decoder_is_exactly_unbiased_with_the_exact_variance(epsilon):
    """Mean and variance of the real server's estimate over the enumerated report distribution."""
    d = 11
    mech = HadamardResponse(epsilon=epsilon)
    kwargs, P = {}, hr_small_matrix(d, epsilon)
    if mech.blocked:
        kwargs = {"permutation": np.random.default_rng(3).permutation(d)}
        P = hr_block_matrix(d, epsilon, kwargs["permutation"])
    G = decoder_rows(mech, d, [{"y": np.array([y])} for y in range(P.shape[1])], **kwargs)
    counts = SMALL[:d]
    mean, var = exact_moments(P, G, counts)
    np.testing.assert_allclose(mean, counts, atol=1e-9)
    np.testing.assert_allclose(var, mech.variance(counts, **kwargs), rtol=1e-10)


def test_hr_unconditional_variance_is_the_average_over_all_permutations():
    d, epsilon = 5, 2.0           # B = 4 blocks of 3 items: blocks of sizes 3 and 2 are used
    mech = HadamardResponse(epsilon=epsilon)
    assert mech.layout(d).same_block_pairs() == 3 * 2 + 2 * 1
    counts = np.array([7, 0, 3, 12, 1])
    conditional = [mech.variance(counts, permutation=np.array(p))
                   for p in itertools.permutations(range(d))]
    np.testing.assert_allclose(mech.variance(counts), np.mean(conditional, axis=0), rtol=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_hr_client_fits_its_exact_distribution(epsilon, seed):
    d, x, draws = 11, 6, 40_000
    mech = HadamardResponse(epsilon=epsilon)
    rng = np.random.default_rng(seed)
    kwargs, P = {}, hr_small_matrix(d, epsilon)
    if mech.blocked:
        kwargs = {"permutation": rng.permutation(d)}
        P = hr_block_matrix(d, epsilon, kwargs["permutation"])
    assert_fits(mech.perturb(np.full(draws, x), d, rng, **kwargs)["y"], P[x])


# -------------------------------------------------------------------------- (a) exact LDP, HM
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("t", [1, 2, 3])
def test_hm_exact_ldp(epsilon, t):
    assert_exact_ldp(hm_matrix(5, epsilon, t), epsilon)


@pytest.mark.parametrize("epsilon,t", [(0.5, 1), (2.0, 2), (4.0, 3), (1.0, 3)])
def test_hm_decoder_is_exactly_unbiased_with_the_exact_variance(epsilon, t):
    d = 5
    mech = HadamardMechanism(epsilon=epsilon, t=t)
    P = hm_matrix(d, epsilon, t)
    j, s = hm_outputs(mech.padded(d), t)
    G = decoder_rows(mech, d, [{"j": j[i:i + 1], "s": s[i:i + 1]} for i in range(len(j))])
    counts = np.array([7, 0, 3, 12, 1])
    mean, var = exact_moments(P, G, counts)
    np.testing.assert_allclose(mean, counts, atol=1e-9)
    np.testing.assert_allclose(var, mech.variance(counts), rtol=1e-10)


@pytest.mark.parametrize("epsilon,t", [(0.5, 1), (2.0, 2), (4.0, 3)])
def test_hm_client_fits_its_exact_distribution(epsilon, t, seed):
    d, x, draws = 3, 2, 60_000
    mech = HadamardMechanism(epsilon=epsilon, t=t)
    reports = mech.perturb(np.full(draws, x), d, np.random.default_rng(seed))
    assert reports["j"].shape == reports["s"].shape == (draws, t)
    P = hm_matrix(d, epsilon, t)
    assert_fits(hm_index(reports["j"], reports["s"], mech.padded(d)), P[x])


# ------------------------------------------------------------- (b) unbiasedness and variance
@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_hr_small_form_release_unbiased_with_exact_variance(epsilon, seed):
    mech = HadamardResponse(epsilon=epsilon)
    samples = release_runs(mech, SMALL, seed)
    assert_unbiased(samples, SMALL, mech.variance(SMALL))
    assert_variance(samples, mech.variance(SMALL))


@pytest.mark.parametrize("epsilon", [2.0, 4.0])
def test_hr_blocked_release_given_the_permutation(epsilon, seed):
    """ε = 2: blocks of 7 cells; ε = 4: one cell per block. Conditional variance for a fixed π."""
    mech = HadamardResponse(epsilon=epsilon)
    permutation = np.random.default_rng(seed + 1).permutation(len(SMALL))
    variance = mech.variance(SMALL, permutation=permutation)
    samples = release_runs(mech, SMALL, seed, permutation=permutation)
    assert_unbiased(samples, SMALL, variance)
    assert_variance(samples, variance)


def test_hr_blocked_release_with_a_fresh_permutation_per_run(seed):
    """Each run draws its own π: the variance is the permutation average (``variance(counts)``)."""
    mech = HadamardResponse(epsilon=2.0)
    samples = release_runs(mech, SMALL, seed)
    assert_unbiased(samples, SMALL, mech.variance(SMALL))
    assert_variance(samples, mech.variance(SMALL))


@pytest.mark.parametrize("epsilon,t", [(1.0, 1), (2.0, 2), (3.0, 3), (4.0, "auto")])
def test_hm_release_unbiased_with_exact_variance(epsilon, t, seed):
    mech = HadamardMechanism(epsilon=epsilon, t=t)
    samples = release_runs(mech, SMALL, seed)
    assert_unbiased(samples, SMALL, mech.variance(SMALL))
    assert_variance(samples, mech.variance(SMALL))


@pytest.mark.parametrize("key,params", [("hr", {"epsilon": 0.5}), ("hr", {"epsilon": 2.0}),
                                        ("hm", {"epsilon": 3.0, "t": 3})])
def test_wider_integers_on_a_larger_domain(key, params, seed):
    """d = 20,000: K (or D) = 32,768 just exceeds int16, so reports and keys switch to int32."""
    mech = build(key, **params)
    d = 20_000
    counts = np.zeros(d, dtype=int)
    counts[[0, 7, 10_000, d - 1]] = [300, 1, 120, 80]
    watched = [0, 1, 7, 10_000, 15_000, d - 1]
    rng = np.random.default_rng(seed)
    samples = np.stack([mech.release(counts, rng)[watched] for _ in range(400)])
    variance = mech.variance(counts)[watched]
    assert_unbiased(samples, counts[watched], variance)
    assert_variance(samples, variance)


# ---------------------------------------------------------------- (c) release vs simulate
def with_pair_sums(a):
    """Each cell, the total and two pair sums of each run: the joint law, not only the marginals."""
    return np.column_stack([a, a.sum(axis=1), a[:, 11] + a[:, 19], a[:, 0] + a[:, 1]])


@pytest.mark.parametrize("key,params", [("hr", {"epsilon": 0.5}), ("hr", {"epsilon": 2.0}),
                                        ("hm", {"epsilon": 2.0, "t": 2})])
def test_release_matches_per_user_simulation(key, params, seed):
    """Small simulate batches (50 people) also check that batches share the public permutation.
    The total of all cells and two pair sums compare the joint law, not only the marginals."""
    mech = build(key, **params)
    items = np.repeat(np.arange(len(SMALL)), SMALL)
    rng = np.random.default_rng(seed)
    fast = np.stack([mech.release(SMALL, rng) for _ in range(1500)])
    slow = np.stack([mech.simulate(items, len(SMALL), rng, chunk=50) for _ in range(1500)])
    assert_same_distribution(with_pair_sums(fast), with_pair_sums(slow))


def assert_release_follows_the_protocol(mech: HadamardMechanism, seed: int) -> None:
    """1,500 fast releases of SMALL against 1,500 runs of the per-user protocol: the same law
    (cells, total, two pair sums), unbiased, with the exact variance."""
    items = np.repeat(np.arange(len(SMALL)), SMALL)
    rng = np.random.default_rng(seed)
    fast = np.stack([mech.release(SMALL, rng) for _ in range(1500)])
    slow = np.stack([mech.simulate(items, len(SMALL), rng) for _ in range(1500)])
    assert_same_distribution(with_pair_sums(fast), with_pair_sums(slow))
    assert_unbiased(fast, SMALL, mech.variance(SMALL))
    assert_variance(fast, mech.variance(SMALL))


@pytest.mark.parametrize("cost", [0, 1, 10**18], ids=["multinomial", "mixed", "report_by_report"])
@pytest.mark.parametrize("epsilon,t", [(1.0, 1), (3.0, 3)])
def test_hm_release_both_ways_matches_per_user_simulation(monkeypatch, cost, epsilon, t, seed):
    """The fast release draws its histograms as multinomial counts or report by report by cost
    (per cell: with cost 1 the large cells of SMALL are counted, the small ones drawn report
    by report); forced either way or mixed, it has the per-user protocol's law (cells, total and two pair sums) and the
    exact variance."""
    monkeypatch.setattr(had, "MULTINOMIAL_COST", cost)
    mech = HadamardMechanism(epsilon=epsilon, t=t)
    assert_release_follows_the_protocol(mech, seed)


def test_uniform_reports_drawn_block_by_block_cover_every_bin_uniformly(monkeypatch):
    """Above FAIR_BLOCK columns the uniform reports are drawn a block at a time: each block's
    keys stay in its columns (both signs), and together they are uniform over all 2D bins."""
    monkeypatch.setattr(had, "FAIR_BLOCK", 4)
    size, reports = 32, 64_000
    parts = list(HadamardMechanism._fair_keys(reports, size, np.random.default_rng(3)))
    assert len(parts) == size // 4 and sum(len(part) for part in parts) == reports
    for block, part in enumerate(parts):
        assert set(np.unique(part % size)) <= set(range(4 * block, 4 * block + 4))
    keys = np.concatenate(parts)
    assert keys.min() >= 0 and keys.max() < 2 * size
    assert stats.chisquare(np.bincount(keys, minlength=2 * size)).pvalue > ALPHA


@pytest.mark.parametrize("epsilon,t", [(1.0, 1), (3.0, 3)])
def test_hm_release_with_uniform_reports_by_block_matches_per_user_simulation(
        monkeypatch, epsilon, t, seed):
    """The same law as the protocol with the uniform reports drawn in blocks of 4 columns."""
    monkeypatch.setattr(had, "FAIR_BLOCK", 4)
    monkeypatch.setattr(had, "MULTINOMIAL_COST", 10**18)        # report by report
    mech = HadamardMechanism(epsilon=epsilon, t=t)
    assert_release_follows_the_protocol(mech, seed)


# ---------------------------------------------------------------------------------- choice of t
def test_auto_t_is_the_brute_force_argmin_of_the_exact_variance():
    counts = np.zeros(1085, dtype=int)
    counts[[3, 100, 1000]] = [20_000, 5_000, 1]
    for epsilon in (0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 8.0, 12.0, 20.0):
        totals = [HadamardMechanism(epsilon=epsilon, t=t).variance(counts).sum()
                  for t in range(1, had.MAX_COEFFICIENTS + 1)]
        best = int(np.argmin(totals)) + 1
        assert HadamardMechanism(epsilon=epsilon).coefficients(len(counts)) == best
        assert best < had.MAX_COEFFICIENTS            # interior: the search range is wide enough


@pytest.mark.parametrize("epsilon,expected", [(0.5, 1), (1.0, 1), (2.0, 2), (3.0, 3), (4.0, 4)])
def test_auto_t_table_of_mechanisms_reference(epsilon, expected):
    for d in (1085, 9_780_000):
        assert optimal_coefficients(epsilon, d) == expected


def test_pure_ldp_rule_for_t_costs_more_variance():
    """At ε = 3 pure-LDP's ⌈log₂(e^ε+1)⌉ = 5 gives 1.43n per empty cell; the exact argmin 0.67n."""
    def empty_cell(t):
        return 1 / (t * hm_probabilities(3.0, t)[1] ** 2)
    assert math.ceil(math.log2(math.exp(3.0) + 1)) == 5
    assert empty_cell(5) == pytest.approx(1.43, abs=0.005)
    assert empty_cell(optimal_coefficients(3.0, 1085)) == pytest.approx(0.671, abs=0.001)


# ------------------------------------------------------------------------------ contract & input
def test_registered_with_parameters_and_communication():
    assert {"hr", "hm"} <= set(names(model="local"))
    assert get("hr") is HadamardResponse and get("hm") is HadamardMechanism
    assert HadamardResponse(epsilon=0.5).bits_per_user(1085) == 11          # K = 2048
    assert HadamardMechanism(epsilon=1.0, t=2).bits_per_user(1085) == 2 * (11 + 1)
    assert HadamardMechanism(epsilon=2.0).coefficients(1085) == 2
    assert "t=auto" in HadamardMechanism(epsilon=2.0).describe()
    for mech in (HadamardResponse(epsilon=1.0), HadamardMechanism(epsilon=1.0)):
        assert mech.approximation is None
    assert HadamardMechanism(epsilon=1.0, t=np.int64(3)).t == 3      # a NumPy integer is a choice


def test_bad_input_gets_a_clear_message():
    hr, rng = HadamardResponse(epsilon=2.0), np.random.default_rng(0)
    with pytest.raises(ValueError, match="cell 1 holds"):
        hr.release(np.array([3, -1, 2]), rng)
    with pytest.raises(ValueError, match="cell 0 holds"):
        hr.release(np.array([0.5, 1.0]), rng)
    with pytest.raises(ValueError, match="outside the domain"):
        hr.perturb(np.array([0, 7]), 5, rng)
    with pytest.raises(ValueError, match="needs the public permutation"):
        hr.estimate(np.zeros(hr.layout(5).outputs, dtype=int), 0, 5)
    with pytest.raises(ValueError, match="permutation of range"):
        hr.release(np.ones(5, dtype=int), rng, permutation=np.array([0, 0, 1, 2, 3]))
    with pytest.raises(ValueError, match="uses no permutation"):
        HadamardResponse(epsilon=1.0).release(np.ones(5, dtype=int), rng, permutation=np.arange(5))


@pytest.mark.parametrize("key,params", [("hr", {"epsilon": 0.5}), ("hr", {"epsilon": 3.0}),
                                        ("hm", {"epsilon": 1.0})])
def test_empty_population_releases_zeros(key, params):
    np.testing.assert_array_equal(build(key, **params).release(np.zeros(9, dtype=int),
                                                                np.random.default_rng(0)), 0)
