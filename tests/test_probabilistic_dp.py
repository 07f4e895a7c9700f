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


def test_the_county_example_is_onthemaps_numbers_on_the_real_workplace(county):
    """The lesson runs the test on the workplace's own workers (bounded beyond 1,000)."""
    d = pdp.smallest_workplace(county)
    totals = county.destination_totals()
    assert totals[d] == totals[totals > 0].min() > otm.TEST_MAX_WORKERS   # so δ is bounded
    ex = pdp.worked_example(county, d, 1.0, 1e-5)
    real = column(county, d)
    m, k = int(real.sum()), county.n_origins
    assert ex.workers == m and ex.origins == k
    np.testing.assert_array_equal(ex.counts, real)
    assert ex.pure_alpha == otm.pure_alpha(m, 1.0)
    assert ex.prior_weight == pytest.approx(ex.origins * ex.pure_alpha / ex.workers)
    assert ex.test_alpha == otm.smallest_alpha(m, k, 1.0, 1e-5)
    assert ex.test_delta == otm.pdp_delta_bound(ex.test_alpha, m, k, 1.0) <= 1e-5
    assert ex.test_alpha < ex.pure_alpha
    # about the smallest: 5 % less fails (not 1 %: between jumps of the integer threshold δ is
    # not monotone in α, 9.8e-6 at 0.99α but 1.08e-5 at 0.999α; bisection assumes it is)
    assert otm.pdp_delta_bound(ex.test_alpha * 0.95, m, k, 1.0) > 1e-5
    assert ex.worst_epsilon == pytest.approx(math.log(1 + m / ex.test_alpha))
    assert ex.worst_epsilon > 1.0      # the loss δ excuses exceeds ε
    shares = ex.shares.set_index("origin")
    for prior, alpha in (("epsilon_dp", ex.pure_alpha), ("test", ex.test_alpha)):
        want = otm.destination_mean(real, alpha, m) / m
        np.testing.assert_allclose(shares.loc[county.origins.labels, prior], want)
        assert shares[prior].sum() == pytest.approx(1.0)
    # the ε-DP prior pulls further from the truth than the smaller probabilistic one
    assert ex.distance("epsilon_dp") > ex.distance("test") > 0


def test_a_small_workplace_is_tested_exactly():
    od = ODMatrix.from_dense("t", ZoneSet.from_ids(["a", "b", "c"]), ZoneSet.from_ids(["x", "y"]),
                             np.array([[5, 0], [3, 0], [0, 0]]))
    ex = pdp.worked_example(od, 0, 2.0, 1e-3)
    assert ex.workers == 8
    np.testing.assert_array_equal(ex.counts, [5, 3, 0])
    assert ex.test_alpha == otm.smallest_alpha(8, 3, 2.0, 1e-3)
    with pytest.raises(ValueError, match="no workers"):
        pdp.worked_example(od, 1, 2.0, 1e-3)
    assert pdp.smallest_workplace(od) == 0
