"""Unit tests of dpcore.evaluation.summaries: sentences, theory, pass rates, summaries over trials."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import mechanisms
from dpcore.evaluation import experiment, summaries
from dpcore.scoring import metrics


# ------------------------------------------------------------------------------ plain language
def test_summary_sentence_counts_what_happened():
    pairs = pd.DataFrame({"true_rank": range(1, 11),
                          "released_rank": [1, 2, 3, 4, 5, 6, 7, 9, 8, 412]})
    values = {"false_positive_cells": 412.0, "false_zero_cells": 1.0, "rmse": 3.14159,
              "rmse_real": 27.5, "erased_share": 0.01, "invented_share": 0.412}
    sentence = summaries.summary_sentence("Laplace", pairs, values)
    assert sentence.startswith("Laplace: 7 of the 10 busiest commutes kept their rank and 9 "
                               "stayed in the top 10;")
    assert ("412 empty commutes were reported as non-empty (41 % of the commutes it shows) and "
            "1 real commute (1 % of the real ones) as empty") in sentence
    assert ("a real commute is off by 27.5 commuters (RMSE over the real commutes), a cell by "
            "3.14 over all cells") in sentence
    assert sentence.endswith(".") and "erased most" not in sentence
    assert "off by 24,213 commuters" in summaries.summary_sentence("GRR", pairs, {"rmse": 24213.4})


def test_summary_sentence_warns_when_most_real_commutes_are_erased():
    pairs = pd.DataFrame({"true_rank": range(1, 11), "released_rank": range(1, 11)})
    values = {"false_positive_cells": 0.0, "false_zero_cells": 7_797_487.0, "rmse": 0.335,
              "rmse_real": 61.0, "erased_share": 0.9626, "invented_share": 0.0}
    sentence = summaries.summary_sentence("Stability histogram", pairs, values)
    assert "7,797,487 real commutes (96 % of the real ones) as empty" in sentence
    assert "It erased most real commutes (96 %)" in sentence
    assert "a cell by 0.335 over all cells" in sentence
    assert ("its error over all cells (0.335) is below its error on the real commutes (61)"
            in sentence) and values["rmse"] < values["rmse_real"]
    # at exactly half, not "most"
    half = summaries.summary_sentence("x", pairs, values | {"erased_share": 0.5})
    assert "erased most" not in half and "(50 % of the real ones)" in half


def test_summary_sentence_compares_errors_only_as_they_are():
    """Issue 42: GRR on the ED table erased most real commutes with an all-cells error of
    2,678,270 commuters, and was told its "small error over all cells comes from the empty
    cells". "Small" and "large" are said only as a stated comparison, in the order the numbers
    have."""
    pairs = pd.DataFrame({"true_rank": range(1, 11), "released_rank": range(1, 11)})
    grr = {"false_positive_cells": 3.0e6, "false_zero_cells": 40_000.0, "rmse": 2_678_270.0,
           "rmse_real": 2_100_000.0, "erased_share": 0.8, "invented_share": 0.99}
    sentence = summaries.summary_sentence("GRR", pairs, grr)
    assert "It erased most real commutes (80 %)." in sentence
    assert "below" not in sentence and "nearer exact" not in sentence
    for values in (grr, grr | {"rmse": 0.335, "rmse_real": 61.0},
                   grr | {"rmse": 61.0, "rmse_real": 61.0}, grr | {"erased_share": 0.1}):
        sentence = summaries.summary_sentence("GRR", pairs, values)
        assert "small" not in sentence and "large" not in sentence
        assert ("is below its error on the real commutes" in sentence) == (
            values["erased_share"] > summaries.MOSTLY_ERASED
            and values["rmse"] < values["rmse_real"])


@pytest.mark.parametrize("share, text", [(0.0, "0 %"), (1.0, "100 %"), (0.9996, "99.9 %"),
                                         (0.00034, "0.034 %"), (0.05, "5 %"), (0.123, "12 %")])
def test_percent_never_rounds_a_part_to_the_whole_or_nothing(share, text):
    assert summaries._percent(share) == text


def test_stability_histogram_sentence_on_the_huge_sparse_path_states_the_erased_share():
    """National-scale path (tests/huge.py: 6.4·10⁷ cells, sparse release): the sentence's erased
    share is the share of the true non-empty cells whose released value rounds to 0."""
    from dpcore import release
    from dpcore.mechanisms.sparse_vector import SparseVector
    from dpcore.scoring import ranks
    from tests.huge import huge_matrix

    od = huge_matrix()
    result = release.run(od, release.ReleaseSpec("stability_histogram", 0.1, seed=3),
                         only=summaries.SENTENCE_METRICS)
    assert result.sparse
    released = result.released.values             # the released values of the true commutes
    erased = np.count_nonzero(released < 0.5) / od.nonzero
    assert 0.5 < erased < 1                        # ε = 0.1: its threshold erases most of them
    assert result.metrics["erased_share"] == pytest.approx(erased)
    pairs = ranks.rank_pairs(SparseVector.counts(od), result.released, 100)
    sentence = summaries.summary_sentence("Stability histogram", pairs, result.metrics)
    assert f"{np.count_nonzero(released < 0.5):,} real commutes ({summaries._percent(erased)} of " \
           "the real ones) as empty" in sentence
    assert f"It erased most real commutes ({summaries._percent(erased)})" in sentence
    rmse_real = math.sqrt(np.mean((released - od.counts) ** 2))
    assert result.metrics["rmse_real"] == pytest.approx(rmse_real)
    assert result.metrics["rmse_real"] > 10 * result.metrics["rmse"]


# ---------------------------------------------------------------------------------------- theory
def test_laplace_theory_is_its_closed_form(county):
    laplace = mechanisms.build("laplace", epsilon=0.5)
    assert summaries.theoretical_rmse(laplace, county.to_dense()) == pytest.approx(
        math.sqrt(2) * 2 / 0.5)
    assert summaries.theoretical_rmse(mechanisms.build("topk", epsilon=1), county.to_dense()) is None


@pytest.mark.parametrize("key, epsilon", [("laplace", 1.0), ("stability_histogram", 0.5),
                                          ("oue", 2.0), ("grr", 4.0)])
def test_theory_matches_repeated_releases(county, key, epsilon, seed):
    """Mean squared error over releases against the theory, within 5 standard errors."""
    truth = county.to_dense()
    mechanism = mechanisms.build(key, epsilon=epsilon)
    rng = np.random.default_rng(seed)
    mse = np.array([np.mean((mechanism.release(truth, rng) - truth) ** 2) for _ in range(40)])
    expected = summaries.theoretical_rmse(mechanism, truth) ** 2
    assert abs(mse.mean() - expected) < 5 * mse.std(ddof=1) / math.sqrt(mse.size)


# ------------------------------------------------------------------------------ repeated draws
def check(key, passed):
    return metrics.PlannerCheck(key, key.title(), 0.0, "rule", passed, "source")


def test_pass_rates_count_only_draws_where_a_check_applies():
    draws = [[check("a", True), check("b", None)], [check("a", False), check("b", None)],
             [check("a", True), check("b", None)]]
    table = summaries.pass_rates(draws).set_index("key")
    assert table.loc["a", "pass_rate"] == pytest.approx(2 / 3) and table.loc["a", "draws"] == 3
    assert math.isnan(table.loc["b", "pass_rate"]) and table.loc["b", "draws"] == 0


def test_checks_by_draw_groups_an_experiment_by_trial(toy):
    table = experiment.run(toy, ["laplace", "grr"], [1.0], trials=3, seed=1)
    grouped = summaries.checks_by_draw(table)
    assert set(grouped) == {"laplace", "grr"} and all(len(v) == 3 for v in grouped.values())
    first = table[(table["mechanism"] == "grr") & (table["trial"] == 0)]
    expected = metrics.planner_checks(dict(zip(first["metric"], first["value"])))
    assert [(c.key, c.passed) for c in grouped["grr"][0]] == [(c.key, c.passed) for c in expected]
    assert np.allclose([c.value for c in grouped["grr"][0]], [c.value for c in expected],
                       equal_nan=True)


# ----------------------------------------------------------------------------------- summaries
def test_summarise_gives_the_student_t_interval():
    table = pd.DataFrame({"mechanism": "a", "epsilon": 1.0, "metric": "rmse",
                          "value": [1.0, 2.0, 4.0]})
    row = summaries.summarise(table, "rmse").iloc[0]
    half = stats.t.ppf(0.975, 2) * np.std([1, 2, 4], ddof=1) / math.sqrt(3)
    assert row["mean"] == pytest.approx(7 / 3) and row["trials"] == 3
    assert row["low"] == pytest.approx(7 / 3 - half) and row["high"] == pytest.approx(7 / 3 + half)
    single = summaries.summarise(table.head(1), "rmse").iloc[0]
    assert single["low"] == single["high"] == single["mean"] == 1.0


def test_release_times_count_each_release_once(toy):
    table = experiment.run(toy, ["laplace"], [1.0, 2.0], postprocess=("base", "norm_sub"),
                           trials=2, seed=0).assign(scenario="s", n=toy.n)
    times = summaries.release_times(table)
    assert list(times["releases"]) == [4]
    unique = table.drop_duplicates(["epsilon", "trial"])["seconds"]
    assert times["seconds"][0] == pytest.approx(unique.mean())
