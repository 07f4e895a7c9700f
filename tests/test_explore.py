"""Unit tests of dpcore.explore: views, ranks, tables, sentences, theory, pass rates, helpers."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import datasets, experiment, explore, mechanisms, metrics


@pytest.fixture(scope="module")
def county():
    return datasets.load("ireland_county")


@pytest.fixture(scope="module")
def ed():
    return datasets.load("ireland_ed")


@pytest.fixture(scope="module")
def toy():
    return datasets.load("toy_town")


def reference_ranks(values):
    """Rank by a stable descending sort: the definition ordinal_ranks must match."""
    ranks = np.empty(len(values), dtype=np.int64)
    order = np.argsort(-np.asarray(values, dtype=float), kind="stable")
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


# ----------------------------------------------------------------------------- level and subset
def test_roll_up_equals_the_county_dataset(ed, county):
    rolled = explore.view(ed, rolled_up=True)
    assert np.array_equal(rolled.to_dense(), county.to_dense())
    assert explore.roll_up_possible(ed) and not explore.roll_up_possible(county)


def test_thesis_subsets_have_the_thesis_domain(ed):
    dublin = explore.view(ed, areas=["Dublin City"])
    rural = explore.view(ed, areas=["Cavan", "Leitrim"])
    assert dublin.domain_size == rural.domain_size == 26_244  # thesis §5.5: 162 × 162
    assert dublin.n == ed.subset_by_parent(["Dublin City"]).n
    assert rural.n < dublin.n


def test_areas_are_parents_when_there_is_a_parent_level(ed, toy):
    areas = explore.view_areas(ed)
    assert "Dublin City" in areas and "Overseas" in areas and len(areas) == 35
    assert explore.view_areas(ed, rolled_up=True) == areas
    assert list(explore.view_areas(toy)) == [str(z) for z in toy.destinations.ids]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in areas.items())


def test_zone_subset_without_parent_level(toy):
    small = explore.view(toy, areas=["Harbour", "Station"])
    assert small.domain_size == 4
    expected = toy.subset(["Harbour", "Station"], ["Harbour", "Station"])
    assert np.array_equal(small.to_dense(), expected.to_dense())


def test_view_without_areas_is_the_matrix_itself(toy):
    assert explore.view(toy) is toy


@pytest.mark.parametrize("areas, message", [(["Nowhere"], "unknown area"),
                                            (["Work from home"], "choose more areas")])
def test_bad_subsets_say_what_is_wrong(toy, areas, message):
    with pytest.raises(ValueError, match=message):
        explore.view(toy, areas=areas)


def test_roll_up_of_a_matrix_without_parents_is_refused(toy):
    with pytest.raises(ValueError, match="no parent level"):
        explore.view_areas(toy, rolled_up=True)


# ---------------------------------------------------------------------------------------- ranks
def test_ordinal_ranks_match_a_stable_sort_with_ties(rng):
    for _ in range(300):
        d = int(rng.integers(1, 60))
        values = rng.integers(-3, 4, size=d).astype(float)  # many ties
        values[rng.random(d) < 0.3] += rng.random()          # and some distinct values
        cells = rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False)
        assert np.array_equal(explore.ordinal_ranks(values, cells), reference_ranks(values)[cells])


def test_ordinal_ranks_of_nothing_and_of_integers(rng):
    assert explore.ordinal_ranks(np.arange(5.0), []).size == 0
    counts = rng.integers(0, 5, size=1000)
    assert np.array_equal(explore.ordinal_ranks(counts, np.arange(1000)), reference_ranks(counts))


def test_top_cells_order_and_ties():
    values = np.array([3, 7, 7, 0, 5, 7])
    assert list(explore.top_cells(values, 4)) == [1, 2, 5, 4]
    assert list(explore.top_cells(values, 99)) == [1, 2, 5, 4, 0, 3]
    assert explore.top_cells(values, 0).size == 0


def test_rank_pairs_of_the_truth_lie_on_the_diagonal(county):
    truth = county.to_dense()
    pairs = explore.rank_pairs(truth, truth.astype(float), 50)
    assert list(pairs["true_rank"]) == list(range(1, 51))
    assert (pairs["released_rank"] == pairs["true_rank"]).all()
    assert not pairs["released_zero"].any()
    assert len(explore.rank_pairs(truth, truth, None)) == county.domain_size


def test_rank_pairs_flag_cells_released_as_zero():
    truth = np.array([10, 8, 6, 4, 0])
    released = np.array([9.0, 0.2, 7.0, -1.0, 3.0])
    pairs = explore.rank_pairs(truth, released)
    assert list(pairs["cell"]) == [0, 1, 2, 3, 4]
    assert list(pairs["released_rank"]) == [1, 4, 2, 5, 3]
    assert list(pairs["released_zero"]) == [False, True, False, True, False]


def test_rank_table_has_the_thesis_form(county):
    truth = county.to_dense()
    swapped = truth.astype(float)
    first, second = explore.top_cells(truth, 2)
    swapped[[first, second]] = swapped[[second, first]]
    pairs = {key: explore.rank_pairs(truth, values, 50)
             for key, values in (("laplace", truth), ("grr", swapped))}
    table = explore.rank_table(county, pairs, 10, {"laplace": "Lap", "grr": "RR"})
    assert list(table.columns) == ["Commute", "True count", "True rank", "Lap", "RR"]
    assert list(table["True rank"]) == list(range(1, 11)) == list(table["Lap"])
    assert list(table["RR"][:3]) == [2, 1, 3]
    assert table["Commute"][0] == county.top(1)["commute"][0]
    assert list(table["True count"]) == list(county.top(10)["count"])
    assert list(explore.rank_table(county, {}).columns) == ["Commute", "True count", "True rank"]


def test_top_flows_errors_are_released_minus_true(county, rng):
    truth = county.to_dense()
    noisy = truth + rng.normal(0, 100, truth.size)
    frame = explore.top_flows(county, truth, {"a": noisy, "b": truth}, 30)
    assert len(frame) == 60 and list(frame["rank"][:30]) == list(range(1, 31))
    assert np.allclose(frame["error"], frame["released"] - frame["true"])
    assert (frame[frame["mechanism"] == "b"]["error"] == 0).all()
    assert list(frame["commute"][:10]) == list(county.top(10)["commute"])
    assert explore.top_flows(county, truth, {}, 5).empty


def test_long_pairs_name_the_commutes(county):
    truth = county.to_dense()
    pairs = {"a": explore.rank_pairs(truth, truth, 5)}
    long = explore.long_pairs(county, pairs)
    assert list(long["commute"]) == list(county.top(5)["commute"])
    assert set(long["mechanism"]) == {"a"}


# ------------------------------------------------------------------------------ plain language
def test_summary_sentence_counts_what_happened():
    pairs = pd.DataFrame({"true_rank": range(1, 11),
                          "released_rank": [1, 2, 3, 4, 5, 6, 7, 9, 8, 412]})
    values = {"false_positive_cells": 412.0, "false_zero_cells": 1.0, "rmse": 3.14159}
    sentence = explore.summary_sentence("Laplace", pairs, values)
    assert sentence.startswith("Laplace: 7 of the 10 busiest commutes kept their rank and 9 "
                               "stayed in the top 10;")
    assert "412 empty commutes were reported as non-empty and 1 real commute as empty" in sentence
    assert "3.14 commuters" in sentence and sentence.endswith(".")
    assert "off by 24,213 commuters" in explore.summary_sentence("GRR", pairs, {"rmse": 24213.4})


# ---------------------------------------------------------------------------------------- theory
def test_laplace_theory_is_its_closed_form(county):
    laplace = mechanisms.build("laplace", epsilon=0.5)
    assert explore.theoretical_rmse(laplace, county.to_dense()) == pytest.approx(
        math.sqrt(2) * 2 / 0.5)
    assert explore.theoretical_rmse(mechanisms.build("topk", epsilon=1), county.to_dense()) is None


@pytest.mark.parametrize("key, epsilon", [("laplace", 1.0), ("stability_histogram", 0.5),
                                          ("oue", 2.0), ("grr", 4.0)])
def test_theory_matches_repeated_releases(county, key, epsilon, seed):
    """Mean squared error over releases against the theory, within 5 standard errors."""
    truth = county.to_dense()
    mechanism = mechanisms.build(key, epsilon=epsilon)
    rng = np.random.default_rng(seed)
    mse = np.array([np.mean((mechanism.release(truth, rng) - truth) ** 2) for _ in range(40)])
    expected = explore.theoretical_rmse(mechanism, truth) ** 2
    assert abs(mse.mean() - expected) < 5 * mse.std(ddof=1) / math.sqrt(mse.size)


# ------------------------------------------------------------------------------ repeated draws
def check(key, passed):
    return metrics.PlannerCheck(key, key.title(), 0.0, "rule", passed, "source")


def test_pass_rates_count_only_draws_where_a_check_applies():
    draws = [[check("a", True), check("b", None)], [check("a", False), check("b", None)],
             [check("a", True), check("b", None)]]
    table = explore.pass_rates(draws).set_index("key")
    assert table.loc["a", "pass_rate"] == pytest.approx(2 / 3) and table.loc["a", "draws"] == 3
    assert math.isnan(table.loc["b", "pass_rate"]) and table.loc["b", "draws"] == 0


def test_checks_by_draw_groups_an_experiment_by_trial(toy):
    table = experiment.run(toy, ["laplace", "grr"], [1.0], trials=3, seed=1)
    grouped = explore.checks_by_draw(table)
    assert set(grouped) == {"laplace", "grr"} and all(len(v) == 3 for v in grouped.values())
    first = table[(table["mechanism"] == "grr") & (table["trial"] == 0)]
    expected = metrics.planner_checks(dict(zip(first["metric"], first["value"])))
    assert [(c.key, c.passed) for c in grouped["grr"][0]] == [(c.key, c.passed) for c in expected]
    assert np.allclose([c.value for c in grouped["grr"][0]], [c.value for c in expected],
                       equal_nan=True)


# ---------------------------------------------------------------------------------- subsampling
def test_subsample_keeps_zones_and_draws_without_replacement(county, rng):
    small = explore.subsample(county, 10_000, rng)
    assert small.n == 10_000 and small.domain_size == county.domain_size
    assert np.all(small.to_dense() <= county.to_dense())


def test_subsample_keeps_each_commuter_with_equal_chance(toy, seed):
    """Mean kept count per cell is c·m/n; tolerance from the hypergeometric variance."""
    rng = np.random.default_rng(seed)
    m, draws = 100, 2000
    truth = toy.to_dense()
    kept = np.mean([explore.subsample(toy, m, rng).to_dense() for _ in range(draws)], axis=0)
    n = toy.n
    p = truth / n
    variance = m * p * (1 - p) * (n - m) / (n - 1)
    assert np.all(np.abs(kept - truth * m / n) <= 5 * np.sqrt(variance / draws) + 1e-12)


@pytest.mark.parametrize("n", [0, 10**9])
def test_subsample_size_must_fit(toy, rng, n):
    with pytest.raises(ValueError, match="between 1 and n"):
        explore.subsample(toy, n, rng)


# ----------------------------------------------------------------------------------- summaries
def test_summarise_gives_the_student_t_interval():
    table = pd.DataFrame({"mechanism": "a", "epsilon": 1.0, "metric": "rmse",
                          "value": [1.0, 2.0, 4.0]})
    row = explore.summarise(table, "rmse").iloc[0]
    half = stats.t.ppf(0.975, 2) * np.std([1, 2, 4], ddof=1) / math.sqrt(3)
    assert row["mean"] == pytest.approx(7 / 3) and row["trials"] == 3
    assert row["low"] == pytest.approx(7 / 3 - half) and row["high"] == pytest.approx(7 / 3 + half)
    single = explore.summarise(table.head(1), "rmse").iloc[0]
    assert single["low"] == single["high"] == single["mean"] == 1.0


def test_release_times_count_each_release_once(toy):
    table = experiment.run(toy, ["laplace"], [1.0, 2.0], postprocess=("base", "norm_sub"),
                           trials=2, seed=0).assign(scenario="s", n=toy.n)
    times = explore.release_times(table)
    assert list(times["releases"]) == [4]
    unique = table.drop_duplicates(["epsilon", "trial"])["seconds"]
    assert times["seconds"][0] == pytest.approx(unique.mean())


# ---------------------------------------------------------------------------------------- input
def test_parse_grid_accepts_commas_spaces_and_sorts():
    assert explore.parse_grid("5, 0.5;1 1") == (0.5, 1.0, 5.0)
    assert explore.parse_grid("1000 100", "n", 0, 5000, whole=True) == (100, 1000)
    assert explore.parse_grid(explore.format_grid(explore.THESIS_EPSILONS)) == \
        explore.THESIS_EPSILONS
    assert explore.format_grid((2700, 2_748_530)) == "2700, 2748530"


@pytest.mark.parametrize("text, message", [("", "at least one"), ("1, x", "“x” is not a number"),
                                           ("0", "outside"), ("25", "outside"),
                                           ("nan", "outside"),
                                           ("1, 1e-17", r"ε = 1e-17 is outside \[1e-06, 20\]\. "
                                                        "Below 1e-06, e\\^ε − 1 cannot")])
def test_parse_grid_says_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        explore.parse_grid(text)


def test_parse_grid_whole_numbers():
    with pytest.raises(ValueError, match="whole number"):
        explore.parse_grid("1.5", "n", 0, 10, whole=True)


def test_population_grid_is_increasing_and_ends_at_n():
    grid = explore.population_grid(2_748_530)
    assert grid[-1] == 2_748_530 and list(grid) == sorted(set(grid)) and grid[0] >= 1000
    assert explore.population_grid(318) == (318,)


def test_rng_for_depends_on_seed_and_mechanism_only():
    first = explore.rng_for(3, "laplace").random(4)
    assert np.array_equal(first, explore.rng_for(3, "laplace").random(4))
    assert not np.array_equal(first, explore.rng_for(3, "grr").random(4))
    assert not np.array_equal(first, explore.rng_for(4, "laplace").random(4))
