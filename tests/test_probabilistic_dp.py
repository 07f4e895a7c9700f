"""The Learn page's worked example of OnTheMap's probabilistic DP
(``dpcore.theory.probabilistic_dp``): its numbers are :mod:`dpcore.mechanisms.onthemap`'s own, recomputed here from the table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.mechanisms import onthemap as otm
from dpcore.theory import probabilistic_dp as pdp


@pytest.fixture(scope="module")
def county():
    return datasets.load("ireland_county")


def column(od: ODMatrix, destination: int) -> np.ndarray:
    return od.to_dense().reshape(od.n_origins, od.n_destinations)[:, destination]


def test_the_county_example_is_onthemaps_numbers_on_a_scaled_workplace(county):
    d = pdp.smallest_workplace(county)
    totals = county.destination_totals()
    assert totals[d] == totals[totals > 0].min() > otm.TEST_MAX_WORKERS   # so it is scaled
    ex = pdp.worked_example(county, d, 1.0, 1e-5)
    real = column(county, d)
    assert ex.workers == real.sum() and ex.origins == county.n_origins and ex.scaled
    assert ex.pure_alpha == otm.pure_alpha(real.sum(), 1.0)
    assert ex.prior_weight == pytest.approx(ex.origins * ex.pure_alpha / ex.workers)
    assert ex.test_workers == ex.counts.sum() == otm.TEST_MAX_WORKERS
    # the scaled histogram keeps the shape: each count within 1 of the proportional one
    assert np.abs(ex.counts - real * ex.test_workers / real.sum()).max() < 1
    assert ex.test_alpha == otm.smallest_alpha(1000, county.n_origins, 1.0, 1e-5)
    assert ex.test_delta == otm.pdp_delta(ex.test_alpha, 1000, county.n_origins, 1.0) <= 1e-5
    assert ex.test_alpha < ex.test_pure_alpha == otm.pure_alpha(1000, 1.0)
    assert otm.pdp_delta(ex.test_alpha * 0.99, 1000, county.n_origins, 1.0) > 1e-5  # smallest
    assert ex.worst_epsilon == pytest.approx(math.log(1 + 1000 / ex.test_alpha))
    assert ex.worst_epsilon > 1.0      # the loss δ excuses exceeds ε
    shares = ex.shares.set_index("origin")
    for prior, alpha in (("epsilon_dp", ex.test_pure_alpha), ("test", ex.test_alpha)):
        want = otm.destination_mean(ex.counts, alpha, 1000) / 1000
        np.testing.assert_allclose(shares.loc[county.origins.labels, prior], want)
        assert shares[prior].sum() == pytest.approx(1.0)
    # the ε-DP prior pulls further from the truth than the smaller probabilistic one
    assert ex.distance("epsilon_dp") > ex.distance("test") > 0


def test_a_small_workplace_is_not_scaled():
    od = ODMatrix.from_dense("t", ZoneSet.from_ids(["a", "b", "c"]), ZoneSet.from_ids(["x", "y"]),
                             np.array([[5, 0], [3, 0], [0, 0]]))
    ex = pdp.worked_example(od, 0, 2.0, 1e-3)
    assert not ex.scaled and ex.test_workers == ex.workers == 8
    np.testing.assert_array_equal(ex.counts, [5, 3, 0])
    assert ex.test_alpha == otm.smallest_alpha(8, 3, 2.0, 1e-3)
    with pytest.raises(ValueError, match="no workers"):
        pdp.worked_example(od, 1, 2.0, 1e-3)
    assert pdp.smallest_workplace(od) == 0


def test_scaled_histogram_sums_to_the_size_by_largest_remainders():
    np.testing.assert_array_equal(pdp.scaled_histogram(np.array([5, 3, 2]), 5), [3, 1, 1])
    np.testing.assert_array_equal(pdp.scaled_histogram(np.array([1, 1, 1]), 10), [1, 1, 1])
    counts = np.random.default_rng(3).integers(0, 500, size=40)
    assert pdp.scaled_histogram(counts, 1000).sum() == 1000
