"""Central mechanisms: calibration, exact noise distributions, selection probabilities, thresholds.

Tolerances come from theory: every statistical check uses the shared family-wise false-failure rate
ALPHA (1e-4) with Bonferroni corrections; nothing is tuned. Variance checks use ``assert_variance``,
whose chi-square interval assumes normal samples. Laplace-type noise is heavy-tailed (excess
kurtosis 3), so for those the check runs on *block sums* of m i.i.d. cells: a block's excess
kurtosis is κ/m and the sampling s.d. of s²/σ² is √(2/(R−1) + κ_block/R), i.e. the chi-square
interval is too narrow by a factor √(1 + κ/(2m)) — below 1.002 at m = 1,000, κ ≤ 3. Summing
cells also checks independence (Var of the sum = sum of the variances, recipe D of §10 of
MECHANISMS.md).
"""

import math
from itertools import permutations

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore.mechanisms import build, get, names
from dpcore.mechanisms.base import ADD_REMOVE, CENTRAL, SUBSTITUTION
from dpcore.mechanisms.central import (
    DiscreteLaplace,
    Gaussian,
    Laplace,
    StabilityHistogram,
    TopK,
    NOISE_CHUNK,
    analytic_gaussian_sigma,
    laplace_noise,
)
from tests.mechanisms.stat_checks import ALPHA, assert_unbiased, assert_variance

#: A small histogram with zeros, ties, a heavy cell and singletons (recipe C).
SMALL = np.array([0, 0, 1, 1, 2, 5, 5, 17, 40, 0, 3, 250, 1, 8, 0, 12, 12, 1, 0, 90])

BLOCK = 1000  # cells per block sum (see the module docstring)


def runs(mechanism, counts, rng, r):
    return np.stack([mechanism.release(counts, rng) for _ in range(r)])


def block_sums(samples, block=BLOCK):
    r, d = samples.shape
    return samples.reshape(r, d // block, block).sum(axis=2)


def assert_same_law(sample, cdf_or_name, args=()):
    p = stats.kstest(sample, cdf_or_name, args=args).pvalue
    assert p > ALPHA, f"Kolmogorov–Smirnov p = {p:.2e} against {cdf_or_name}{args}"


# ------------------------------------------------------------------------------------ registry
@pytest.mark.parametrize("key, guarantee", [
    ("laplace", "ε-DP"), ("discrete_laplace", "ε-DP"), ("gaussian", "(ε, δ)-DP"),
    ("stability_histogram", "(ε, δ)-DP"), ("topk", "ε-DP")])
def test_guarantees(key, guarantee):
    assert build(key).guarantee == guarantee


@pytest.mark.parametrize("key", names(model=CENTRAL))
def test_central_mechanisms_declare_the_neighbouring_relation_substitution_first(key):
    assert "neighbours" in {p.name for p in get(key).params}
    assert build(key).neighbours == SUBSTITUTION  # the thesis's setting is the default


@pytest.mark.parametrize("key", names(model=CENTRAL))
def test_simulate_counts_people_then_releases(key, seed):
    """Per-person input gives exactly the release of its histogram under the same seed."""
    mechanism = build(key, epsilon=2.0)
    items = np.repeat(np.arange(SMALL.size), SMALL)
    simulated = mechanism.simulate(np.random.default_rng(seed).permutation(items), SMALL.size,
                                   np.random.default_rng(seed + 1))
    released = mechanism.release(SMALL, np.random.default_rng(seed + 1))
    np.testing.assert_array_equal(simulated, released)


def test_tight_threshold_needs_delta_below_a_half():
    with pytest.raises(ValueError, match="'delta'"):
        build("stability_histogram", threshold="tight", delta=0.6)


def test_topk_larger_than_domain_names_k(rng):
    with pytest.raises(ValueError, match="'k'"):
        TopK(k=5).release(np.array([1, 2, 3]), rng)


# ------------------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("neighbours, scale", [(SUBSTITUTION, 2 / 0.8), (ADD_REMOVE, 1 / 0.8)])
def test_laplace_noise_is_exactly_laplace_of_the_calibrated_scale(neighbours, scale, rng):
    mechanism = Laplace(epsilon=0.8, neighbours=neighbours)
    assert mechanism.scale == pytest.approx(scale)
    counts = np.tile(SMALL, 500)  # 10,000 cells
    samples = runs(mechanism, counts, rng, 400)
    noise = samples - counts
    assert_same_law(noise.ravel()[:200_000], "laplace", (0, scale))
    variance = mechanism.variance(counts)
    np.testing.assert_allclose(variance, 2 * scale ** 2)
    assert_variance(block_sums(noise), BLOCK * 2 * scale ** 2)


def test_laplace_noise_over_several_chunks_is_laplace_and_independent(rng):
    # Drawn a chunk at a time (exponential × sign): over a length that is not a multiple of the
    # chunk, every position — the last, partial chunk included — has the law, and the draws of
    # one chunk are independent of the next (block sums across chunk boundaries: Var = Σ 2b²).
    scale, size = 2.5, 3 * NOISE_CHUNK + 12_345
    counts = np.arange(size) % 7
    noise = laplace_noise(rng, scale, size, add_to=counts) - counts
    assert_same_law(noise, "laplace", (0, scale))
    assert_same_law(noise[-12_345:], "laplace", (0, scale))
    # signs: a fair coin per cell, also at the same offset in every chunk (no reused bits)
    positive = int(np.count_nonzero(noise > 0))
    z = (positive - size / 2) / math.sqrt(size / 4)
    assert abs(z) < stats.norm.isf(ALPHA / 2), f"{positive} positive of {size}: z = {z:.2f}"
    starts = noise[:3 * NOISE_CHUNK].reshape(3, NOISE_CHUNK)
    assert not np.array_equal(np.sign(starts[0]), np.sign(starts[1]))
    blocks = noise[:size - size % BLOCK].reshape(-1, BLOCK).sum(axis=1)
    # block sums straddle chunk boundaries (NOISE_CHUNK is not a multiple of BLOCK)
    assert NOISE_CHUNK % BLOCK
    assert_variance(blocks[:, None], np.full(1, BLOCK * 2 * scale ** 2),
                    excess_kurtosis=3 / BLOCK)


def test_laplace_is_unbiased_with_variance_two_b_squared(rng):
    mechanism = Laplace(epsilon=0.5)
    samples = runs(mechanism, SMALL, rng, 4000)
    assert_unbiased(samples, SMALL, mechanism.variance(SMALL))


# ---------------------------------------------------------------------------- discrete Laplace
def discrete_laplace_pmf(z, alpha):
    return (1 - alpha) / (1 + alpha) * alpha ** np.abs(z)


@pytest.mark.parametrize("epsilon, neighbours", [(0.5, SUBSTITUTION), (1.0, ADD_REMOVE),
                                                 (3.0, SUBSTITUTION)])
def test_discrete_laplace_matches_its_pmf(epsilon, neighbours, rng):
    mechanism = DiscreteLaplace(epsilon=epsilon, neighbours=neighbours)
    alpha = np.exp(-epsilon / (2 if neighbours == SUBSTITUTION else 1))
    assert mechanism.alpha == pytest.approx(alpha)
    counts = np.tile(SMALL, 2000)
    noise = (mechanism.release(counts, rng) - counts)
    assert np.array_equal(noise, np.round(noise)), "outputs must be whole numbers"
    # Chi-square goodness of fit on the support, pooling both tails where expected counts < 5.
    top = int(np.max(np.flatnonzero(discrete_laplace_pmf(np.arange(200), alpha) * noise.size >= 5)))
    support = np.arange(-top, top + 1)
    observed = np.array([np.sum(noise < -top)] + [np.sum(noise == z) for z in support]
                        + [np.sum(noise > top)])
    tail = alpha ** (top + 1) / (1 + alpha)  # P[Z > t] = α^{t+1}/(1+α)
    expected = np.concatenate([[tail], discrete_laplace_pmf(support, alpha), [tail]]) * noise.size
    assert expected.sum() == pytest.approx(noise.size)
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    p = stats.chisquare(observed, expected).pvalue
    assert p > ALPHA, f"chi-square p = {p:.2e}"


def test_discrete_laplace_unbiased_and_variance(rng):
    mechanism = DiscreteLaplace(epsilon=0.7)
    a = mechanism.alpha
    np.testing.assert_allclose(mechanism.variance(SMALL), 2 * a / (1 - a) ** 2)
    assert_unbiased(runs(mechanism, SMALL, rng, 4000), SMALL, mechanism.variance(SMALL))
    counts = np.tile(SMALL, 500)
    noise = runs(mechanism, counts, rng, 400) - counts
    assert_variance(block_sums(noise), BLOCK * 2 * a / (1 - a) ** 2)


# ------------------------------------------------------------------------------------ Gaussian
def exact_profile(sigma, epsilon, l2):
    """Left side of eq. (2), MECHANISMS.md §2.3, written directly with scipy.stats.norm."""
    a, b = l2 / (2 * sigma), epsilon * sigma / l2
    return stats.norm.cdf(a - b) - np.exp(epsilon) * stats.norm.cdf(-a - b)


def bisect_sigma(epsilon, delta, l2):
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if exact_profile(mid, epsilon, l2) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("epsilon, delta", [(5.0, 0.3), (0.1, 1e-5), (1.0, 1e-6), (3.0, 1e-9),
                                            (0.5, 0.01)])
@pytest.mark.parametrize("neighbours, l2", [(ADD_REMOVE, 1.0), (SUBSTITUTION, np.sqrt(2))])
def test_gaussian_sigma_is_the_smallest_satisfying_the_exact_profile(epsilon, delta, neighbours,
                                                                     l2):
    sigma = Gaussian(epsilon=epsilon, delta=delta, neighbours=neighbours).sigma
    assert sigma == pytest.approx(bisect_sigma(epsilon, delta, l2), rel=1e-7)
    assert exact_profile(sigma, epsilon, l2) <= delta * (1 + 1e-9)  # private
    assert exact_profile(sigma * (1 - 1e-6), epsilon, l2) > delta  # and not wasteful


def test_gaussian_reference_numbers():
    # MECHANISMS.md §2.3: at ε=5, δ=0.3 the classic σ 0.3379 is below the exact 0.3389 (not private)
    strong = Gaussian(epsilon=5.0, delta=0.3, neighbours=ADD_REMOVE)
    assert strong.sigma == pytest.approx(0.3389, abs=5e-5)
    assert strong.classic_sigma == pytest.approx(0.3379, abs=5e-5)
    assert exact_profile(strong.classic_sigma, 5.0, 1.0) > 0.3
    assert "NOT private" in strong.explain()
    # at ε=0.1, δ=1e-5 the classic 48.4 is loose against the exact 30.7
    weak = Gaussian(epsilon=0.1, delta=1e-5, neighbours=ADD_REMOVE)
    assert weak.sigma == pytest.approx(30.7, abs=0.05)
    assert weak.classic_sigma == pytest.approx(48.4, abs=0.05)
    # σ scales with Δ₂ = √2 under substitution
    sub = Gaussian(epsilon=0.1, delta=1e-5, neighbours=SUBSTITUTION)
    assert sub.sigma == pytest.approx(np.sqrt(2) * weak.sigma, rel=1e-9)
    assert analytic_gaussian_sigma(0.1, 1e-5, 3.0) == pytest.approx(3 * weak.sigma, rel=1e-9)


def test_gaussian_noise_is_normal_with_the_calibrated_variance(rng):
    mechanism = Gaussian(epsilon=1.0, delta=1e-6)
    samples = runs(mechanism, SMALL, rng, 4000)
    variance = mechanism.variance(SMALL)
    np.testing.assert_allclose(variance, mechanism.sigma ** 2)
    assert_unbiased(samples, SMALL, variance)
    assert_variance(samples, variance)  # exact: normal samples
    assert_same_law((samples - SMALL).ravel(), "norm", (0, mechanism.sigma))


# --------------------------------------------------------------------------- stability histogram
@pytest.mark.parametrize("neighbours, rule, tau", [
    (SUBSTITUTION, "textbook", lambda e, d: 2 * np.log(2 / d) / e + 1),
    (SUBSTITUTION, "tight", lambda e, d: 1 + 2 / e * np.log(1 / (2 * d))),
    (ADD_REMOVE, "textbook", lambda e, d: 1 + np.log(2 / d) / e),
    (ADD_REMOVE, "tight", lambda e, d: 1 + np.log(1 / (2 * d)) / e),
])
def test_stability_thresholds_and_the_delta_they_spend(neighbours, rule, tau):
    for epsilon, delta in [(0.5, 1e-6), (1.0, 1 / (2 * 2_750_000)), (4.0, 0.1)]:
        m = StabilityHistogram(epsilon=epsilon, delta=delta, neighbours=neighbours, threshold=rule)
        assert m.scale == pytest.approx((2 if neighbours == SUBSTITUTION else 1) / epsilon)
        assert m.tau == pytest.approx(tau(epsilon, delta))
        # exact tail of the one cell a single person creates: δ/4 (textbook) or δ (tight)
        assert m.exact_delta == pytest.approx(delta / 4 if rule == "textbook" else delta)


def test_thesis_delta_is_one_over_two_n():
    assert StabilityHistogram.thesis_delta(2_750_000) == pytest.approx(1 / 5_500_000)


@pytest.mark.parametrize("rule, delta", [("textbook", 0.4), ("tight", 0.49)])
def test_stability_histogram_never_releases_a_true_zero(rule, delta, rng):
    """Even at a huge δ, where the threshold is barely above 1, empty cells stay 0."""
    m = StabilityHistogram(epsilon=5.0, delta=delta, threshold=rule)
    counts = np.tile(SMALL, 200)
    zeros = counts == 0
    released = runs(m, counts, rng, 200)
    assert (released[:, zeros] == 0).all()
    assert (released[:, ~zeros] != 0).any()
    assert ((released == 0) | (released >= m.tau)).all(), "a value below τ was published"


@pytest.mark.parametrize("neighbours", [SUBSTITUTION, ADD_REMOVE])
@pytest.mark.parametrize("rule, delta, spent", [("textbook", 0.4, 0.1), ("tight", 0.2, 0.2)])
def test_release_probability_of_a_single_person_cell_is_the_spent_delta(neighbours, rule, delta,
                                                                        spent, rng):
    m = StabilityHistogram(epsilon=1.0, delta=delta, neighbours=neighbours, threshold=rule)
    counts = np.ones(5000, dtype=np.int64)
    released = runs(m, counts, rng, 40)
    hits = int((released != 0).sum())
    p = stats.binomtest(hits, released.size, spent).pvalue
    assert p > ALPHA, f"{hits}/{released.size} released, expected rate {spent} (p = {p:.2e})"
    # given release, a count-1 cell shows 1 + Z with Z ≥ τ − 1: that is τ + Exp(b)
    assert_same_law(released[released != 0], "expon", (m.tau, m.scale))


def test_stability_release_probability_per_count(rng):
    m = StabilityHistogram(epsilon=1.0, delta=0.05, threshold="tight")  # τ ≈ 5.6
    levels = np.array([1, 2, 3, 4, 5, 6, 7, 9, 12])
    counts = np.repeat(levels, 2000)
    released = runs(m, counts, rng, 20) != 0
    probability = m.release_probability(levels)
    np.testing.assert_allclose(probability, stats.laplace.sf(m.tau - levels, scale=m.scale))
    for level, p_theory in zip(levels, probability):
        hits = released[:, counts == level]
        p = stats.binomtest(int(hits.sum()), hits.size, p_theory).pvalue
        assert p > ALPHA / len(levels), f"count {level}: rate {hits.mean():.4f} vs {p_theory:.4f}"


def test_stability_exact_mean_and_variance_match_numerical_integration():
    m = StabilityHistogram(epsilon=0.8, delta=1e-3, neighbours=ADD_REMOVE)
    levels = np.array([0, 1, 2, 5, 9, 10, 15, 40, 200])
    b, tau = m.scale, m.tau
    for c, mean, var in zip(levels, m.expected(levels), m.variance(levels)):
        if c == 0:
            assert mean == 0 and var == 0
            continue
        density = stats.laplace(loc=c, scale=b).pdf

        def moment(j):  # E[Y^j] = ∫_τ^∞ y^j f(y) dy, split at the density's kink y = c
            kink = max(tau, c)
            return (integrate.quad(lambda y: y ** j * density(y), tau, kink)[0]
                    + integrate.quad(lambda y: y ** j * density(y), kink, np.inf)[0])

        first, second = moment(1), moment(2)
        assert mean == pytest.approx(first, rel=1e-7, abs=1e-10)
        assert var == pytest.approx(second - first ** 2, rel=1e-6, abs=1e-9)
    # far above τ the estimate is plain Laplace: unbiased with variance 2b²
    assert m.expected([10_000])[0] == pytest.approx(10_000)
    assert m.variance([10_000])[0] == pytest.approx(2 * b * b)


def test_stability_histogram_mean_and_variance_by_simulation(rng):
    m = StabilityHistogram(epsilon=1.0, delta=0.05, threshold="tight")
    live = SMALL > 0  # true zeros are exactly 0 (variance 0), tested above
    samples = runs(m, SMALL, rng, 4000)[:, live]
    assert_unbiased(samples, m.expected(SMALL)[live], m.variance(SMALL)[live])
    # block sums of cells near and far above τ (release probability ≥ 0.06, so the per-cell
    # excess kurtosis is below ~20 and the block's below 0.02: see the module docstring)
    counts = np.tile(np.array([3, 4, 6, 8, 30]), 200)
    samples = runs(m, counts, rng, 2000)
    assert_variance(block_sums(samples), m.variance(counts).sum())


class LaplaceSpy:
    """Wraps a Generator and records how many Laplace variates a release draws."""

    def __init__(self, rng):
        self.rng, self.drawn = rng, 0

    def laplace(self, loc, scale, size):
        self.drawn += size
        return self.rng.laplace(loc, scale, size)


def test_stability_histogram_draws_noise_only_for_non_zero_cells(rng):
    counts = np.zeros(1_000_000, dtype=np.int64)
    counts[rng.choice(counts.size, 300, replace=False)] = rng.integers(1, 50, 300)
    spy = LaplaceSpy(rng)
    StabilityHistogram(epsilon=1.0).release(counts, spy)
    assert spy.drawn == 300


# --------------------------------------------------------------------------------------- top-k
def peeling_probabilities(u, b, k):
    """Exact law of k rounds of the exponential mechanism P[i] ∝ exp(u_i/b), removing winners."""
    weights = np.exp((u - u.max()) / b)
    law = {}
    for order in permutations(range(len(u)), k):
        p, left = 1.0, weights.sum()
        for i in order:
            p *= weights[i] / left
            left -= weights[i]
        law[order] = p
    return law


@pytest.mark.parametrize("k, epsilon, neighbours", [(1, 2.0, SUBSTITUTION), (1, 1.0, ADD_REMOVE),
                                                    (2, 4.0, SUBSTITUTION), (2, 2.0, ADD_REMOVE)])
def test_gumbel_topk_has_the_law_of_peeling_exponential_mechanism(k, epsilon, neighbours, rng):
    counts = np.array([0, 3, 5, 6, 4])
    m = TopK(epsilon=epsilon, neighbours=neighbours, k=k)
    d_range = 2 if neighbours == SUBSTITUTION else 1
    assert m.selection_scale == pytest.approx(d_range / (epsilon / (2 * k)))
    law = peeling_probabilities(counts.astype(float), m.selection_scale, k)
    if k == 1:  # softmax
        soft = np.exp(counts / m.selection_scale) / np.exp(counts / m.selection_scale).sum()
        np.testing.assert_allclose([law[(i,)] for i in range(counts.size)], soft)
    draws = 20_000
    tally = dict.fromkeys(law, 0)
    for _ in range(draws):
        tally[tuple(m.select(counts, rng))] += 1
    observed = np.array([tally[o] for o in law])
    expected = np.array([law[o] for o in law]) * draws
    assert expected.min() >= 5
    p = stats.chisquare(observed, expected).pvalue
    assert p > ALPHA, f"selection frequencies differ from peeling EM (p = {p:.2e})"


@pytest.mark.parametrize("neighbours", [SUBSTITUTION, ADD_REMOVE])
def test_topk_counts_use_half_the_budget_and_others_are_zero(neighbours, rng):
    m = TopK(epsilon=1.0, neighbours=neighbours, k=4)
    assert m.count_scale == pytest.approx((2 if neighbours == SUBSTITUTION else 1) * 2 / 1.0)
    assert m.variance(SMALL) is None
    noise = []
    for _ in range(3000):
        out = m.release(SMALL, rng)
        chosen = np.flatnonzero(out)
        assert chosen.size == 4
        noise.append(out[chosen] - SMALL[chosen])
    assert_same_law(np.concatenate(noise), "laplace", (0, m.count_scale))


def test_topk_explain_states_the_budget_split():
    text = TopK(epsilon=2.0, k=5).explain()
    assert "ε/2" in text and "ε/(2k)" in text and "Top-5" in text


@pytest.mark.parametrize("neighbours", ["substitution", "add_remove"])
@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-6), (1.0, 1e-6), (5.0, 1e-6),
                                            (0.1, 1e-3), (1.0, 1e-10)])
def test_the_gaussians_plain_words_state_its_spread_against_laplace(epsilon, delta, neighbours):
    """Issue 42: "a little more spread out than Laplace" for a σ 2.0–2.5× Laplace's standard
    deviation at δ = 10⁻⁶. The sentence states the ratio, recomputed here from Laplace's own
    scale (sd = √2·b); at substitution and δ = 10⁻⁶ it lies in [2.0, 2.5] for ε in [0.5, 5]."""
    gaussian = build("gaussian", epsilon=epsilon, delta=delta, neighbours=neighbours)
    laplace = build("laplace", epsilon=epsilon, neighbours=neighbours)
    ratio = gaussian.sigma / (math.sqrt(2) * laplace.scale)
    said = gaussian.explain()
    assert f"standard deviation is {ratio:.2g}× Laplace's" in said
    assert "a little" not in said
    if delta == 1e-6 and neighbours == "substitution":
        assert 2.0 <= ratio <= 2.5
