"""The 95 % intervals on Explore's bars (dpcore.evaluation.intervals) hold the truth at their
stated rate, and the bars' value axis follows the truth (dpcore.evaluation.value_axis).

Coverage is checked by seeded simulation: over N independent draws the share of intervals holding
the true count is Binomial(N, p)/N, so it is compared with 95 % within 4 standard deviations
√(0.95·0.05/N) (a false failure about once in 15,000 runs)."""

import math

import numpy as np
import pytest

from dpcore import mechanisms
from dpcore.evaluation import intervals, value_axis
from dpcore.mechanisms import postprocess

TARGET = intervals.CONFIDENCE


def spread(draws: int) -> float:
    return 4 * math.sqrt(TARGET * (1 - TARGET) / draws)


def coverage(key: str, counts: np.ndarray, releases: int, post: str = "base_pos", seed=0,
             **params) -> np.ndarray:
    """Per cell, the share of ``releases`` independent releases whose interval holds it."""
    mechanism = mechanisms.build(key, epsilon=1.0, **params)
    rng = np.random.default_rng(seed)
    n, d = int(counts.sum()), counts.size
    held = np.zeros(d)
    for _ in range(releases):
        released = postprocess.apply(post, mechanism.release(counts, rng), n)
        found = intervals.release_intervals(mechanism, counts, released, n, d, post)
        held += (found.low <= counts) & (counts <= found.high)
    return held / releases


@pytest.mark.parametrize("key", ["laplace", "gaussian"])
def test_central_intervals_are_exact(key):
    """One release of 40,000 cells gives 40,000 independent draws of the noise."""
    counts = np.full(40_000, 50)
    rate = coverage(key, counts, 1, post="base").mean()
    assert abs(rate - TARGET) <= spread(counts.size), rate


def test_discrete_laplace_margin_is_the_smallest_whole_number_reaching_95_percent():
    mechanism = mechanisms.build("discrete_laplace", epsilon=1.0)
    found = intervals.release_intervals(mechanism, [100], [100.0], 100, 2, "base")
    margin = found.high[0] - 100
    r = mechanism.alpha
    outside = lambda m: 2 * r ** (m + 1) / (1 + r)     # P[|Z| > m] of the two-sided geometric
    assert outside(margin) <= 1 - TARGET < outside(margin - 1)
    rate = coverage("discrete_laplace", np.full(40_000, 50), 1, post="base").mean()
    assert rate >= TARGET - spread(40_000) and rate <= 1 - outside(margin) + spread(40_000)


def test_grr_normal_intervals_cover_at_their_rate_for_empty_small_and_large_cells():
    """GRR's estimate is a sum of n reports; at n = 20,000 over 50 cells the normal
    approximation with the exact variance covers each cell 95 % of the time on the raw release;
    after Base-Pos (a clipped 0 reads "between 0 and the margin") at least 95 %."""
    counts = np.zeros(50, dtype=np.int64)
    counts[:3] = [12_000, 300, 40]
    counts[3:] = np.random.default_rng(1).multinomial(20_000 - counts[:3].sum(),
                                                      np.full(47, 1 / 47))
    counts[49] = 0
    draws = 2_000
    rate = coverage("grr", counts, draws, post="base", seed=7)
    for cell in (0, 1, 2):
        assert abs(rate[cell] - TARGET) <= spread(draws), (cell, rate[cell])
    # An empty cell's interval, cut at 0, misses only on the upper side: 97.5 %.
    assert abs(rate[49] - (1 + TARGET) / 2) <= spread(draws), rate[49]
    clipped = coverage("grr", counts, draws, seed=8)
    assert (clipped[[0, 1, 2, 49]] >= TARGET - spread(draws)).all(), clipped


def test_stability_histogram_covers_published_and_suppressed_cells():
    """Cells near τ are published about half the time; both outcomes' intervals hold."""
    mechanism = mechanisms.build("stability_histogram", epsilon=1.0)
    counts = np.full(40_000, int(mechanism.tau))
    rate = coverage("stability_histogram", counts, 1).mean()
    assert rate >= TARGET - spread(counts.size), rate


def test_top_k_has_intervals_only_for_the_selected_cells():
    mechanism = mechanisms.build("topk", epsilon=1.0, k=2)
    counts = np.array([500, 400, 300, 0])
    released = mechanism.release(counts, np.random.default_rng(3))
    found = intervals.release_intervals(mechanism, counts, released, counts.sum(), 4, "base")
    assert np.array_equal(found.present, released != 0)


@pytest.mark.parametrize("key", ["suppression", "rounding", "random_rounding", "cell_key"])
def test_baseline_intervals_hold_every_time(key):
    """The not-DP baselines' intervals are the true counts that could give the release."""
    counts = np.arange(0, 400)
    assert coverage(key, counts, 30).min() == 1.0


def test_post_processings_that_mix_cells_get_no_interval():
    mechanism = mechanisms.build("laplace", epsilon=1.0)
    found = intervals.release_intervals(mechanism, [5, 6], [5.0, 6.0], 11, 2, "norm_sub")
    assert not found.present.any() and "norm_sub" in found.how


def test_the_linear_axis_follows_the_truth_and_marks_what_is_beyond():
    """The ED data's case: true counts below 6,000, GRR's releases near ±10 M."""
    truth = np.array([5_900.0, 3_000.0, 2_100.0])
    grr = np.array([9.8e6, -4.1e6, 2_500.0])
    laplace = truth + 3
    axis = value_axis.for_bars(truth, np.r_[grr, laplace])
    assert axis.high <= value_axis.REACH * truth.max() * value_axis.HEADROOM
    assert axis.high >= truth.max() and axis.low == 0.0
    drawn, side = value_axis.place(grr, axis)
    assert list(side) == [1, -1, 0] and drawn[0] == axis.high and drawn[1] == axis.low
    assert not value_axis.place(laplace, axis)[1].any()


def test_the_log_axis_drops_zero_and_negative_releases():
    truth = np.array([500.0, 50.0])
    released = np.array([0.0, -3.0, 20.0, 4e6])
    axis = value_axis.for_bars(truth, released, log=True)
    drawn, side = value_axis.place(released, axis)
    assert np.isnan(drawn[:2]).all() and value_axis.dropped(released, axis) == 2
    assert axis.low < 20 and axis.high > 4e6 and not side.any()
