"""The declared ε range holds for every registered mechanism: finite releases and variances at both
ends, for the bundled data and for a population of 10⁹; anything below the range is refused with
the reason."""

import functools
import warnings

import numpy as np
import pytest

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.mechanisms.base import EPSILON, EPSILON_MIN

ENDS = (EPSILON.low, EPSILON.high)
BILLION = 10 ** 9


@functools.cache
def counts_of(name: str) -> np.ndarray:
    """A bundled dataset's dense counts, or ``county_1e9``: the county shape scaled to n = 10⁹."""
    if name == "county_1e9":
        county = datasets.load("ireland_county").to_dense().astype(np.int64)
        scaled = np.floor(county * (BILLION / county.sum())).astype(np.int64)
        scaled[np.argmax(scaled)] += BILLION - scaled.sum()
        return scaled
    return datasets.load(name).to_dense()


def assert_finite(key: str, epsilon: float, name: str, release: bool, rng) -> None:
    counts = counts_of(name)
    mechanism = mechanisms.build(key, epsilon=epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow or a division by zero is a failure too
        variance = mechanism.variance(counts)
        estimate = mechanism.release(counts, rng) if release else None
    if variance is not None:
        assert np.all(np.isfinite(variance)), f"{key} variance at ε = {epsilon:g} on {name}"
    if release:
        assert estimate.shape == counts.shape
        assert np.all(np.isfinite(estimate)), f"{key} release at ε = {epsilon:g} on {name}"


def test_the_declared_range_starts_at_the_supported_minimum():
    assert EPSILON.low == EPSILON_MIN and not EPSILON.low_open
    assert EPSILON.contains(EPSILON_MIN) and not EPSILON.contains(EPSILON_MIN / 2)


@pytest.mark.parametrize("key", mechanisms.names())
@pytest.mark.parametrize("epsilon", [1e-17, 1e-9, EPSILON_MIN * 0.999, 20.5])
def test_outside_the_range_is_refused_with_the_reason(key, epsilon):
    with pytest.raises(ValueError) as refused:
        mechanisms.build(key, epsilon=epsilon)
    message = str(refused.value)
    assert EPSILON.interval() in message and f"Got {epsilon!r}" in message
    if epsilon < EPSILON_MIN:
        assert "cannot be computed accurately" in message


@pytest.mark.parametrize("key", mechanisms.names())
@pytest.mark.parametrize("epsilon", ENDS)
def test_small_data_releases_and_variances_are_finite_at_both_ends(key, epsilon, rng):
    for name in ("toy_town", "ireland_county"):
        assert_finite(key, epsilon, name, release=True, rng=rng)
    assert_finite(key, epsilon, "county_1e9", release=False, rng=rng)  # a quick variance at n = 10⁹


@pytest.mark.slow
@pytest.mark.parametrize("key", mechanisms.names())
@pytest.mark.parametrize("name, epsilon", [("ireland_ed", EPSILON.low),
                                           ("ireland_ed", EPSILON.high),
                                           ("county_1e9", EPSILON.low)])
def test_large_releases_are_finite(key, name, epsilon, rng):
    """n = 10⁹ at ε = 20 is left to the variance check: the Hadamard releases take minutes."""
    assert_finite(key, epsilon, name, release=True, rng=rng)
