"""Unit tests of dpcore.evaluation.ranks: ordinal ranks, top cells, rank pairs and tables, top flows."""


import numpy as np

from dpcore.evaluation import ranks


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
