"""The shared statistical checks must be able to fail: feed them known-wrong inputs."""

import numpy as np
import pytest

from tests.mechanisms.stat_checks import (
    assert_exact_ldp,
    assert_same_distribution,
    assert_unbiased,
    assert_variance,
)


def grr_matrix(d, epsilon):
    e = np.exp(epsilon)
    P = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(P, e / (e + d - 1))
    return P


def test_exact_ldp_accepts_grr_and_rejects_wrong_epsilon():
    assert_exact_ldp(grr_matrix(4, 1.0), 1.0)
    with pytest.raises(AssertionError, match="exceeds"):
        assert_exact_ldp(grr_matrix(4, 1.2), 1.0)
    with pytest.raises(AssertionError, match="waste"):
        assert_exact_ldp(grr_matrix(4, 0.8), 1.0)


def test_unbiased_and_variance_detect_errors(rng):
    truth = np.array([0.0, 5.0, 50.0])
    var = np.array([4.0, 4.0, 9.0])
    good = truth + rng.normal(size=(4000, 3)) * np.sqrt(var)
    assert_unbiased(good, truth, var)
    assert_variance(good, var)
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(good + 0.5, truth, var)
    with pytest.raises(AssertionError, match="variance ratios"):
        assert_variance(good, var * 1.3)


def test_same_distribution_detects_scale_change(rng):
    a = rng.normal(size=(3000, 4))
    assert_same_distribution(a, rng.normal(size=(3000, 4)))
    with pytest.raises(AssertionError, match="variances differ"):
        assert_same_distribution(a, 1.2 * rng.normal(size=(3000, 4)))


def test_zero_variance_cells_must_equal_truth(rng):
    samples = np.column_stack([np.zeros(100), rng.normal(size=100)])
    assert_unbiased(samples, np.array([0.0, 0.0]), np.array([0.0, 1.0]))
    with pytest.raises(AssertionError, match="zero-variance"):
        assert_unbiased(samples + [1.0, 0.0], np.array([0.0, 0.0]), np.array([0.0, 1.0]))


def test_variance_with_kurtosis_accepts_laplace_and_rejects_wrong_scale(rng):
    samples = rng.laplace(scale=1.0, size=(20000, 3))
    assert_variance(samples, np.full(3, 2.0), excess_kurtosis=3.0)
    with pytest.raises(AssertionError, match="variance ratios"):
        assert_variance(samples, np.full(3, 2.3), excess_kurtosis=3.0)
