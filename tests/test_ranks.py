"""Unit tests of dpcore.scoring.ranks: ordinal ranks, top cells, rank pairs and tables, top flows."""


import numpy as np
import pytest

from dpcore.data import ordinal
from dpcore.scoring import ranks


def reference_ranks(values):
    """Rank by a stable descending sort: the definition ordinal_ranks must match."""
    ranks = np.empty(len(values), dtype=np.int64)
    order = np.argsort(-np.asarray(values, dtype=float), kind="stable")
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


# ---------------------------------------------------------------------------------------- ranks
def test_ordinal_ranks_match_a_stable_sort_with_ties(rng):
    for _ in range(300):
        d = int(rng.integers(1, 60))
        values = rng.integers(-3, 4, size=d).astype(float)  # many ties
        values[rng.random(d) < 0.3] += rng.random()          # and some distinct values
        cells = rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False)
        assert np.array_equal(ranks.ordinal_ranks(values, cells), reference_ranks(values)[cells])


def test_ordinal_ranks_of_nothing_and_of_integers(rng):
    assert ranks.ordinal_ranks(np.arange(5.0), []).size == 0
    counts = rng.integers(0, 5, size=1000)
    assert np.array_equal(ranks.ordinal_ranks(counts, np.arange(1000)), reference_ranks(counts))


def test_ordinal_ranks_of_a_few_cells_in_a_large_release(rng):
    """The page's case: the true top cells queried in a large release clipped at 0 (most values
    tied at 0 or at small whole numbers), some of them released as 0, one deep in the noise."""
    for clip in (True, False):
        values = np.round(rng.laplace(0, 2, size=200_000))
        values = np.maximum(values, 0) if clip else values
        top = rng.choice(values.size, size=100, replace=False)
        values[top[:90]] = rng.integers(20, 60, size=90)   # ties among the top, too
        values[top[90:95]] = 0
        cells = np.append(top, np.argmin(values))
        assert np.array_equal(ranks.ordinal_ranks(values, cells), reference_ranks(values)[cells])
        single = np.full(cells.size, values[cells[0]])      # every queried cell at one level
        values[cells] = single
        assert np.array_equal(ranks.ordinal_ranks(values, cells), reference_ranks(values)[cells])


def test_top_cells_order_and_ties():
    values = np.array([3, 7, 7, 0, 5, 7])
    assert list(ranks.top_cells(values, 4)) == [1, 2, 5, 4]
    assert list(ranks.top_cells(values, 99)) == [1, 2, 5, 4, 0, 3]
    assert ranks.top_cells(values, 0).size == 0


def test_rank_pairs_of_the_truth_lie_on_the_diagonal(county):
    truth = county.to_dense()
    pairs = ranks.rank_pairs(truth, truth.astype(float), 50)
    assert list(pairs["true_rank"]) == list(range(1, 51))
    assert (pairs["released_rank"] == pairs["true_rank"]).all()
    assert not pairs["released_zero"].any()
    assert len(ranks.rank_pairs(truth, truth, None)) == county.domain_size


def test_rank_pairs_flag_cells_released_as_zero():
    truth = np.array([10, 8, 6, 4, 0])
    released = np.array([9.0, 0.2, 7.0, -1.0, 3.0])
    pairs = ranks.rank_pairs(truth, released)
    assert list(pairs["cell"]) == [0, 1, 2, 3, 4]
    assert list(pairs["released_rank"]) == [1, 4, 2, 5, 3]
    assert list(pairs["released_zero"]) == [False, True, False, True, False]


def test_rank_table_has_the_thesis_form(county):
    truth = county.to_dense()
    swapped = truth.astype(float)
    first, second = ranks.top_cells(truth, 2)
    swapped[[first, second]] = swapped[[second, first]]
    pairs = {key: ranks.rank_pairs(truth, values, 50)
             for key, values in (("laplace", truth), ("grr", swapped))}
    table = ranks.rank_table(county, pairs, 10, {"laplace": "Lap", "grr": "RR"})
    assert list(table.columns) == ["Commute", "True count", "True rank", "Lap", "RR"]
    assert list(table["True rank"]) == list(range(1, 11)) == list(table["Lap"])
    assert list(table["RR"][:3]) == [2, 1, 3]
    assert table["Commute"][0] == county.top(1)["commute"][0]
    assert list(table["True count"]) == list(county.top(10)["count"])
    assert list(ranks.rank_table(county, {}).columns) == ["Commute", "True count", "True rank"]


def test_top_flows_errors_are_released_minus_true(county, rng):
    truth = county.to_dense()
    noisy = truth + rng.normal(0, 100, truth.size)
    frame = ranks.top_flows(county, truth, {"a": noisy, "b": truth}, 30)
    assert len(frame) == 60 and list(frame["rank"][:30]) == list(range(1, 31))
    assert np.allclose(frame["error"], frame["released"] - frame["true"])
    assert (frame[frame["mechanism"] == "b"]["error"] == 0).all()
    assert list(frame["commute"][:10]) == list(county.top(10)["commute"])
    assert ranks.top_flows(county, truth, {}, 5).empty


def test_long_pairs_name_the_commutes(county):
    truth = county.to_dense()
    pairs = {"a": ranks.rank_pairs(truth, truth, 5)}
    long = ranks.long_pairs(county, pairs)
    assert list(long["commute"]) == list(county.top(5)["commute"])
    assert set(long["mechanism"]) == {"a"}


# ------------------------------------------- ranks by buckets (dpcore.data.ordinal, issue 32)
def brute_above_and_before(values, queried, before):
    """The definition: values strictly above each queried value; equal ones at a smaller index."""
    values = np.asarray(values, dtype=float)
    index = np.arange(values.size)
    above = np.array([np.count_nonzero(values > q) for q in queried], dtype=np.int64)
    tied = np.array([np.count_nonzero((values == q) & (index < b))
                     for q, b in zip(queried, before)], dtype=np.int64)
    return above, tied


def check_above_and_before(values, queried, before):
    found = ordinal.above_and_before(values, queried, before)
    expected = brute_above_and_before(values, queried, before)
    assert np.array_equal(found[0], expected[0]) and np.array_equal(found[1], expected[1])


def test_ranks_of_levels_spread_through_a_noisy_release(rng):
    """The Hadamard mechanism at ED level: multiples of a step, spread over the whole noise range,
    the true top flows' values anywhere in it — every level's bucket is sorted."""
    values = np.round(rng.normal(0, 3600, size=300_000) / 2.16) * 2.16
    cells = rng.choice(values.size, size=100, replace=False)
    assert np.array_equal(ranks.ordinal_ranks(values, cells), reference_ranks(values)[cells])


def test_ranks_at_levels_absent_from_the_values_and_outside_their_range(rng):
    """A sparse release queries values of cells it does not name: levels need not be present."""
    values = np.round(rng.laplace(0, 5, size=50_000))
    queried = np.concatenate([rng.uniform(-40, 40, 30), [values.min() - 1, values.max() + 1,
                                                          0.5, values.max(), values.min()]])
    before = rng.integers(0, values.size, queried.size)
    check_above_and_before(values, queried, before)


def test_ranks_when_many_levels_share_one_crowded_bucket(rng):
    """One far outlier puts every other value in the lowest bucket: more heavy levels than are
    counted one by one, so the bucket is sorted whole."""
    values = rng.integers(0, 20, size=20_000).astype(float)
    values[7] = 1e12
    cells = rng.choice(values.size, size=60, replace=False)
    assert np.array_equal(ranks.ordinal_ranks(values, cells), reference_ranks(values)[cells])


@pytest.fixture(params=["pairwise", "buckets"])
def small_path(request, monkeypatch):
    """Small arrays are compared pair by pair (ordinal.PAIRWISE_CELLS); forced to 0, the same
    small cases exercise the bucket and near-level paths too."""
    if request.param == "buckets":
        monkeypatch.setattr(ordinal, "PAIRWISE_CELLS", 0)
    return request.param


def test_ranks_of_constant_integer_and_non_finite_values(rng, small_path):
    constant = np.full(1000, 4)
    cells = rng.choice(1000, size=10, replace=False)
    assert np.array_equal(ranks.ordinal_ranks(constant, cells), cells + 1)
    counts = rng.integers(0, 1000, size=5000)
    check_above_and_before(counts, counts[:50].astype(float), np.arange(50))
    with_nan = rng.normal(size=2000)
    with_nan[::7] = np.nan
    with_nan[3] = np.inf
    check_above_and_before(with_nan, with_nan[[1, 2, 3, 4, 7]], [1, 2, 3, 4, 7])


def test_ranks_with_few_buckets_and_small_chunks_match_the_definition(rng, monkeypatch,
                                                                     small_path):
    """Many levels per bucket, buckets split across chunks, heavy and light ones mixed (and the
    same small cases compared pair by pair)."""
    monkeypatch.setattr(ordinal, "BUCKETS", 8)
    monkeypatch.setattr(ordinal, "CHUNK", 37)
    for _ in range(200):
        d = int(rng.integers(1, 400))
        values = rng.integers(-5, 6, size=d).astype(float)
        values[rng.random(d) < 0.4] += rng.normal(size=d)[rng.random(d) < 0.4][:1] if d else 0
        values[rng.random(d) < 0.2] = rng.normal(0, 50)
        queried = np.concatenate([values[rng.integers(0, d, int(rng.integers(1, 30)))],
                                  rng.normal(0, 10, 3)])
        check_above_and_before(values, queried, rng.integers(0, d + 1, queried.size))


def test_ranks_of_levels_above_the_noise_take_the_values_near_them_alone(rng, monkeypatch):
    """Laplace at large ε: the top flows stand above the noise, so the values at or above the
    lowest of them are ranked alone, with their ties (no buckets made), NaN and ∞ included."""
    def no_buckets(*args):
        raise AssertionError("the buckets were made")

    values = rng.laplace(0, 2, size=200_000)
    top = rng.choice(values.size, size=100, replace=False)
    values[top] = rng.integers(500, 520, size=top.size)          # ties among the top flows
    values[rng.choice(values.size, size=50, replace=False)] = np.nan
    values[[3, 11]] = np.inf
    queried = np.concatenate([top, [3, 11]])
    monkeypatch.setattr(ordinal, "_bucket_all", no_buckets)
    check_above_and_before(values, values[queried], queried)
    check_above_and_before(values, np.append(values[queried], np.nan), np.append(queried, 9))
    beyond = np.concatenate([values[top[:5]], values[top[:5]]])
    check_above_and_before(values, beyond, [values.size + 3] * 5 + [-2] * 5)
    monkeypatch.undo()
    values[rng.random(values.size) < 0.1] = 600                  # now too many near them
    check_above_and_before(values, values[top], top)


def test_ties_at_a_crowded_level_are_counted_between_the_queried_indices(rng):
    """A clamped release: half its values are 0 (a heavy bucket, counted by comparison). Many
    queries at 0, their indices in any order, repeated, and beyond the end; a NaN query."""
    values = np.maximum(rng.normal(0, 3000, size=100_000), 0)
    zeros = np.flatnonzero(values == 0)
    queried_cells = np.concatenate([rng.choice(zeros, 40), rng.choice(values.size, 40)])
    before = np.concatenate([queried_cells, [values.size + 5, 0]])
    queried = np.concatenate([values[queried_cells], [0.0, np.nan]])
    check_above_and_before(values, queried, before)
    assert ordinal._at_or_above(values, 0.0) is None             # the buckets did the rest
