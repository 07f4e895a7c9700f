"""Consistency post-processing: each method's defining properties (totals, signs, idempotence,
projection optimality, unbiasedness of Norm, the thesis's Base-Cut rule, the significance cut's
false-positive rate)."""

import numpy as np
import pytest
from scipy import stats

from dpcore.mechanisms import postprocess as pp
from dpcore.mechanisms.central import Gaussian, Laplace, StabilityHistogram, TopK
from tests.mechanisms.stat_checks import ALPHA, assert_unbiased, assert_variance

KEYS = ["base", "base_pos", "post_pos", "base_cut", "significance_cut", "norm", "norm_mul",
        "norm_sub", "norm_cut", "round"]
TOTAL_N = ["norm", "norm_mul", "norm_sub", "norm_cut", "round"]
NON_NEGATIVE = ["base_pos", "post_pos", "base_cut", "significance_cut", "norm_mul", "norm_sub",
                "norm_cut", "round"]
VAR_STAR = 4.0  # Var* passed to every call (only the significance cut reads it)


def scenarios(rng):
    """Raw estimates of the shapes DP releases produce, each with its public total n."""
    counts = rng.multinomial(5000, rng.dirichlet(np.full(300, 0.2)))
    return [
        ("laplace-like", counts + rng.laplace(0, 20, counts.size), 5000),
        ("local-like (heavy noise)", counts + rng.normal(0, 300, counts.size), 5000),
        ("sum far below n", rng.normal(0, 5, 200), 1000),
        ("sum far above n", rng.exponential(50, 200), 100),
        ("all negative", -rng.exponential(3, 50), 40),
        ("small", np.array([2.5, -1.0, 0.3, 7.0]), 6),
    ]


@pytest.fixture
def cases(rng):
    return scenarios(rng)


def test_methods_registry():
    assert list(pp.METHODS) == KEYS
    for key, method in pp.METHODS.items():
        assert method.name and callable(method.function) and method.definition.endswith(".")
    assert pp.NEEDS_VARIANCE == {"significance_cut"}
    help_text = pp.definitions(["base_cut", "significance_cut"]).split("\n\n")
    assert help_text[0].startswith("**Base-Cut") and "running sum first exceeds n" in help_text[0]
    assert help_text[1].startswith("**Significance cut (Wang et al.'s Base-Cut)**")


def test_unknown_key_and_bad_input_get_clear_errors():
    with pytest.raises(ValueError, match="valid keys: base, base_pos"):
        pp.apply("norm_subb", np.zeros(3), 1)
    with pytest.raises(ValueError, match="one-dimensional"):
        pp.apply("norm", np.zeros((2, 2)), 1)
    with pytest.raises(ValueError, match="finite"):
        pp.apply("norm", np.array([1.0, np.inf]), 1)
    for bad_n in (-1, float("nan"), True, "7"):
        with pytest.raises(ValueError, match="n "):
            pp.apply("norm_sub", np.ones(3), bad_n)
    with pytest.raises(ValueError, match="empty domain"):
        pp.apply("norm", np.zeros(0), 5)


@pytest.mark.parametrize("key", KEYS)
def test_input_is_never_modified_and_output_is_new(key, cases):
    for _, x, n in cases:
        before = x.copy()
        out = pp.apply(key, x, n, variance=VAR_STAR)
        np.testing.assert_array_equal(x, before)
        assert out is not x and out.dtype == np.float64 and out.shape == x.shape


@pytest.mark.parametrize("key", KEYS)
def test_overwrite_writes_the_cell_by_cell_methods_over_a_float_vector_only(key, cases):
    """``overwrite=True``: the same numbers; in the estimates' own memory for the methods of
    IN_PLACE when they are a writeable float64 vector, else a new array as without it."""
    for _, x, n in cases:
        expected = pp.apply(key, x, n, variance=VAR_STAR)
        own = np.array(x, dtype=float)
        out = pp.apply(key, own, n, variance=VAR_STAR, overwrite=True)
        np.testing.assert_array_equal(out, expected)
        assert (out is own) == (key in pp.IN_PLACE)
        frozen = np.array(x, dtype=float)
        frozen.flags.writeable = False
        out = pp.apply(key, frozen, n, variance=VAR_STAR, overwrite=True)
        assert out is not frozen
        np.testing.assert_array_equal(out, expected)
        as_list = list(np.asarray(x, dtype=float))
        np.testing.assert_array_equal(pp.apply(key, as_list, n, variance=VAR_STAR,
                                               overwrite=True), expected)


@pytest.mark.parametrize("key", TOTAL_N)
def test_totals_equal_n(key, cases):
    for name, x, n in cases:
        assert pp.apply(key, x, n).sum() == pytest.approx(n, rel=1e-9), name


@pytest.mark.parametrize("key", NON_NEGATIVE)
def test_non_negative(key, cases):
    for name, x, n in cases:
        assert (pp.apply(key, x, n, variance=VAR_STAR) >= 0).all(), name


@pytest.mark.parametrize("key", KEYS)
def test_idempotent(key, cases):
    for name, x, n in cases:
        once = pp.apply(key, x, n, variance=VAR_STAR)
        twice = pp.apply(key, once, n, variance=VAR_STAR)
        np.testing.assert_allclose(twice, once, rtol=1e-9, atol=1e-9 * max(n, 1), err_msg=name)


# ------------------------------------------------------------------------------------ Norm-Sub
def projection_by_bisection(x, n):
    """Independent reference: θ with Σ max(x + θ, 0) = n by bisection (the sum increases in θ)."""
    lo, hi = -x.max(), n / x.size - x.min()  # sums: 0 at lo, ≥ n at hi
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(x + mid, 0).sum() < n else (lo, mid)
    return np.maximum(x + (lo + hi) / 2, 0)


def test_norm_sub_is_the_euclidean_projection(cases, rng):
    for name, x, n in cases:
        p = pp.norm_sub(x, n)
        np.testing.assert_allclose(p, projection_by_bisection(x, n), atol=1e-7 * max(n, 1),
                                   err_msg=name)
        # optimality (variational inequality): <x − p, y − p> ≤ 0 for every feasible y
        for _ in range(20):
            y = rng.dirichlet(np.full(x.size, 0.5)) * n
            assert np.dot(x - p, y - p) <= 1e-6 * n * n, name


def test_norm_sub_leaves_feasible_vectors_alone(rng):
    y = rng.dirichlet(np.ones(100)) * 750
    np.testing.assert_allclose(pp.norm_sub(y, 750), y, rtol=1e-12, atol=1e-9)
    whole = rng.multinomial(750, np.full(100, 0.01)).astype(float)
    np.testing.assert_array_equal(pp.norm_sub(whole, 750), whole)


def test_norm_sub_zero_total():
    np.testing.assert_array_equal(pp.norm_sub(np.array([3.0, -1.0]), 0), [0.0, 0.0])


# ---------------------------------------------------------------------------------------- Norm
def test_norm_is_a_no_op_when_the_total_is_already_n(rng):
    x = rng.normal(10, 10, 50)  # total ≈ 500, with some negative cells
    np.testing.assert_allclose(pp.norm(x, x.sum()), x, atol=1e-12)


def test_norm_keeps_unbiasedness_and_has_the_projected_variance(rng):
    """Gaussian estimates: Norm subtracts the mean error, so each cell stays unbiased and its
    variance is exactly σ²(1 − 1/d) (the output is still normal: the chi-square check is exact)."""
    counts = np.array([0, 0, 1, 4, 9, 30, 2, 0, 150, 7, 7, 3])
    mechanism = Gaussian(epsilon=1.0, delta=1e-5)
    samples = np.stack([pp.apply("norm", mechanism.release(counts, rng), counts.sum())
                        for _ in range(4000)])
    variance = np.full(counts.size, mechanism.sigma ** 2 * (1 - 1 / counts.size))
    assert_unbiased(samples, counts, variance)
    assert_variance(samples, variance)


# ------------------------------------------------------------------------- Norm-Mul, Norm-Cut
def test_norm_mul_scales_the_positive_parts():
    out = pp.norm_mul(np.array([3.0, -2.0, 1.0, 0.0]), 8)
    np.testing.assert_allclose(out, [6.0, 0.0, 2.0, 0.0])
    np.testing.assert_allclose(pp.norm_mul(np.array([-1.0, -3.0, 0.0, -2.0]), 8), 2.0)


def test_norm_cut_keeps_the_largest_until_n_is_exceeded():
    # descending 5, 4, 3: running sums 5, 9 > 8 → keep {5, 4} (the crossing cell too), scale 8/9
    np.testing.assert_allclose(pp.norm_cut(np.array([4.0, -1.0, 5.0, 3.0]), 8),
                               [32 / 9, 0, 40 / 9, 0])
    # ties at the cut are kept in order of position
    np.testing.assert_allclose(pp.norm_cut(np.array([3.0, 3.0, 3.0, 3.0]), 7), [7 / 3] * 3 + [0])
    # if the positive mass never exceeds n, negatives are zeroed and positives scaled (Norm-Mul)
    x = np.array([1.0, -2.0, 2.0, 0.5])
    np.testing.assert_allclose(pp.norm_cut(x, 10), pp.norm_mul(x, 10))


def test_norm_cut_output_is_a_prefix_of_the_descending_order(cases):
    for name, x, n in cases:
        out = pp.norm_cut(x, n)
        kept = out > 0
        if kept.any() and (~kept).any():
            assert x[kept].min() >= x[~kept].max(), name
            assert np.ptp(out[kept] / x[kept]) < 1e-12, f"{name}: one common scale factor"


# ----------------------------------------------------------------- Base-Cut (the thesis's rule)
def test_base_cut_keeps_the_largest_until_the_running_sum_exceeds_n_and_does_not_rescale():
    # descending 5, 4, 3, 1: running sums 5, 9 > 8 → keep 5 and 4 (the crossing cell too),
    # zero 3, 1 and the negative; the kept cells keep their values (total 9, not rescaled to 8)
    x = np.array([4.0, -1.0, 5.0, 3.0, 1.0])
    out = pp.base_cut(x, 8)
    np.testing.assert_array_equal(out, [4.0, 0.0, 5.0, 0.0, 0.0])
    assert out.sum() == 9.0
    # the cut follows the running sum, not a threshold on values: n = 4 keeps only the 5
    np.testing.assert_array_equal(pp.base_cut(x, 4), [0.0, 0.0, 5.0, 0.0, 0.0])
    # a running sum equal to n has not exceeded it yet: the next cell is kept (5 + 4 + 3 > 9)
    np.testing.assert_array_equal(pp.base_cut(x, 9), [4.0, 0.0, 5.0, 3.0, 0.0])
    # ties at the cut are kept in order of position
    np.testing.assert_array_equal(pp.base_cut(np.full(4, 3.0), 7), [3.0, 3.0, 3.0, 0.0])
    # positives never exceeding n: all kept, only the negatives become 0
    np.testing.assert_array_equal(pp.base_cut(np.array([1.0, -2.0, 2.0]), 10), [1.0, 0.0, 2.0])


def test_base_cut_is_a_descending_prefix_whose_sum_just_exceeds_n(cases):
    for name, x, n in cases:
        out = pp.base_cut(x, n)
        kept = out > 0
        np.testing.assert_array_equal(out[kept], x[kept], err_msg=f"{name}: no rescaling")
        if kept.any() and (~kept).any():
            assert x[kept].min() >= x[~kept].max(), name
        if np.maximum(x, 0).sum() > n:  # the cut happened: over n, but not without its last cell
            assert out.sum() > n and out.sum() - x[kept].min() <= n, name


def test_base_cut_is_not_the_significance_cut():
    """A large noisy vector: the significance threshold keeps every clearly positive cell, the
    thesis's rule keeps only as many of the largest as add up to n."""
    x = np.array([50.0, 40.0, 30.0, 20.0, 10.0])
    np.testing.assert_array_equal(pp.base_cut(x, 60), [50.0, 40.0, 0, 0, 0])
    np.testing.assert_array_equal(pp.significance_cut(x, 60, 1.0), x)


# ------------------------------------------------------- significance cut (Wang et al.'s Base-Cut)
def test_significance_cut_threshold_and_variance_rules():
    d, alpha = 4, pp.BASE_CUT_ALPHA
    theta = stats.norm.isf(alpha / d) * np.sqrt(VAR_STAR)
    x = np.array([theta, np.nextafter(theta, 0), -5.0, 100.0])
    np.testing.assert_array_equal(pp.significance_cut(x, 10, VAR_STAR), [theta, 0, 0, 100])
    np.testing.assert_array_equal(pp.significance_cut(x, 10, np.full(4, VAR_STAR)),
                                  pp.significance_cut(x, 10, VAR_STAR))
    np.testing.assert_array_equal(pp.significance_cut(x, 10, 0.0), pp.base_pos(x, 10))
    with pytest.raises(ValueError, match="needs the mechanism's noise variance"):
        pp.apply("significance_cut", x, 10)
    with pytest.raises(ValueError, match="zero_cell_variance"):
        pp.apply("significance_cut", x, 10, variance=np.array([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match="alpha"):
        pp.significance_cut(x, 10, VAR_STAR, alpha=1.5)


def test_significance_cut_false_positive_rate_is_alpha(rng):
    """With only noise (all true counts 0), some cell survives with probability 1 − (1 − α/d)^d."""
    d, runs = 100, 4000
    noise = rng.normal(0, np.sqrt(VAR_STAR), (runs, d))
    survived = sum(bool(pp.significance_cut(row, 0, VAR_STAR).any()) for row in noise)
    rate = 1 - (1 - pp.BASE_CUT_ALPHA / d) ** d
    p = stats.binomtest(survived, runs, rate).pvalue
    assert p > ALPHA, f"{survived}/{runs} runs had a false positive; expected rate {rate:.4f}"


class FakeLocal:
    """A pure-protocol local mechanism's variance: n q(1−q)/(p−q)² + c (1−p−q)/(p−q)."""

    p, q = 0.5, 0.2

    def variance(self, counts, n=None, d=None):
        counts = np.asarray(counts, dtype=float)
        p, q, n = self.p, self.q, counts.sum() if n is None else n
        return n * q * (1 - q) / (p - q) ** 2 + counts * (1 - p - q) / (p - q)


def test_zero_cell_variance_is_data_independent():
    assert pp.zero_cell_variance(FakeLocal(), 1000, 50) == pytest.approx(1000 * 0.16 / 0.09)
    assert pp.zero_cell_variance(Laplace(epsilon=0.5), 1000, 50) == pytest.approx(2 * 16)
    assert pp.zero_cell_variance(StabilityHistogram(), 1000, 50) == 0  # zeros are never released
    assert pp.zero_cell_variance(TopK(), 1000, 50) is None
    with pytest.raises(ValueError, match="at least 2 cells"):
        pp.zero_cell_variance(FakeLocal(), 10, 1)


# ----------------------------------------------------------------------------- Post-Pos, round
def test_post_pos_clips_query_answers_not_cells():
    raw = np.array([5.0, -3.0, -4.0, 1.0])
    np.testing.assert_array_equal(pp.apply("post_pos", raw, 0), pp.base_pos(raw, 0))
    assert pp.clip_query(raw[1:3].sum()) == 0  # the query answer −7 is clipped once
    assert pp.clip_query(raw[[0, 1]].sum()) == 2  # while summing clipped cells would give 5
    np.testing.assert_array_equal(pp.clip_query(np.array([-1.0, 2.0])), [0.0, 2.0])


def test_round_gives_whole_numbers_with_total_exactly_n(cases):
    for name, x, n in cases:
        out = pp.apply("round", x, n)
        assert np.array_equal(out, np.round(out)) and (out >= 0).all(), name
        assert int(out.sum()) == n, name
        projected = pp.norm_sub(x, n)
        assert np.abs(out - projected).max() < 1, name
        # largest remainder: no cell rounded down has a larger fractional part than one rounded up
        fraction = projected - np.floor(projected)
        up = out > np.floor(projected)
        if up.any() and (~up).any():
            assert fraction[up].min() >= fraction[~up].max() - 1e-12, name


def test_round_leaves_integer_tables_alone_and_needs_whole_n(rng):
    table = rng.multinomial(900, np.full(60, 1 / 60)).astype(float)
    np.testing.assert_array_equal(pp.apply("round", table, 900), table)
    np.testing.assert_array_equal(pp.apply("round", np.array([1.5, -2.0]), 0), [0.0, 0.0])
    with pytest.raises(ValueError, match="whole number"):
        pp.apply("round", np.array([1.0, 2.0]), 2.5)


# ------------------------------------------------------------- never worse than the raw release
def _errors(key, x, truth, n):
    """(raw, post-processed) Euclidean error of one release against a possible true table."""
    return (np.linalg.norm(x - truth),
            np.linalg.norm(pp.apply(key, x, n, variance=VAR_STAR) - truth))


@pytest.mark.parametrize("key", sorted(pp.NEVER_WORSE_THAN_RAW))
def test_projections_never_increase_the_error(key, cases, rng):
    """What lets Tradeoffs draw the raw theory curve as an upper bound for these methods."""
    for name, x, n in cases:
        for _ in range(50):
            truth = rng.multinomial(n, rng.dirichlet(np.full(x.size, 0.3))).astype(float)
            raw, post = _errors(key, x, truth, n)
            assert post <= raw * (1 + 1e-12) + 1e-9, name


@pytest.mark.parametrize("key", sorted(set(KEYS) - pp.NEVER_WORSE_THAN_RAW))
def test_other_methods_can_increase_the_error(key, rng):
    """The set is exact: each method outside it makes some release worse than raw."""
    worse = 0
    for _ in range(500):
        n = int(rng.integers(1, 30))
        truth = rng.multinomial(n, rng.dirichlet(np.full(6, 0.5))).astype(float)
        x = truth + rng.normal(0, 2, truth.size)
        raw, post = _errors(key, x, truth, n)
        worse += post > raw * (1 + 1e-9)
    assert worse > 0
