"""The ε planner: closed forms against theory and against releases, the search, the CLI."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from statsmodels.stats.proportion import proportion_confint

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.evaluation import experiment, planner, summaries
from dpcore.interfaces import cli
from dpcore.mechanisms.count_profile import CountProfile
from tests.downloads import read_private_csv

COUNTY = datasets.load("ireland_county")
TRUTH = CountProfile.of_matrix(COUNTY)


CLOSED_FORM_KEYS = [k for k in mechanisms.names()
                    if mechanisms.build(k, epsilon=1.0).variance(np.array([1, 0])) is not None]
RURAL_EDS = datasets.load("ireland_ed").subset_by_parent(["Cavan", "Leitrim"])


def dense_error(key: str, epsilon: float, metric: str, dense: np.ndarray) -> float:
    """The expected RMSE/MAE straight from the variance over every cell of the dense domain (the
    definition the count profile must reproduce)."""
    mechanism = mechanisms.build(key, epsilon=epsilon)
    variance = mechanism.variance(dense)
    if metric == "mae":
        return float(np.mean(np.sqrt(variance)) * math.sqrt(2 / math.pi))
    expected = getattr(mechanism, "expected", None)
    bias = 0.0 if expected is None else (expected(dense) - dense) ** 2
    return float(np.sqrt(np.mean(variance + bias)))


@pytest.mark.parametrize("od", [COUNTY, RURAL_EDS], ids=["county", "cavan_leitrim_eds"])
@pytest.mark.parametrize("key", CLOSED_FORM_KEYS)
def test_profiled_answer_equals_the_dense_one(key, od):
    """The planner's expected error over the distinct counts equals the mean over every cell to
    1e-9 (relative) at ε across the range, and so does the ε it answers. (The exact MAE of
    Laplace, discrete Laplace and Gaussian does not depend on the counts at all.)"""
    dense, profile = od.to_dense(), CountProfile.of_matrix(od)
    for metric in ("rmse", "mae"):
        def error(epsilon):
            return planner.expected_error(mechanisms.build(key, epsilon=epsilon), metric, profile)
        if error(1.0) is None or (metric == "mae" and error(1.0)[1] != planner.CLOSED_NORMAL):
            continue
        for epsilon in (1e-3, 0.05, 0.9, 1.7, 6.0, 20.0):
            assert error(epsilon)[0] == pytest.approx(dense_error(key, epsilon, metric, dense),
                                                      rel=1e-9)
        if not mechanisms.get(key).uses_epsilon:
            continue
        goal = dense_error(key, 2.0, metric, dense)
        answer = planner.closed_form(key, {}, profile, planner.Target(metric, goal))
        root = optimize.brentq(lambda x: dense_error(key, math.exp(x), metric, dense) - goal,
                               *np.log(planner.EPSILON_RANGE), xtol=1e-12, rtol=1e-12)
        assert answer.epsilon == pytest.approx(math.exp(root), rel=1e-9)


def test_count_profile_from_the_sparse_matrix():
    """Built from the non-zero cells alone, the profile is the dense vector's histogram."""
    profile = CountProfile.of_matrix(RURAL_EDS)
    values, cells = np.unique(RURAL_EDS.to_dense(), return_counts=True)
    for built in (profile, CountProfile.of_counts(RURAL_EDS.to_dense())):
        np.testing.assert_array_equal(built.values, values)
        np.testing.assert_array_equal(built.cells, cells)
    assert (profile.n, profile.d) == (RURAL_EDS.n, RURAL_EDS.domain_size)
    assert profile.mean(profile.values) == pytest.approx(RURAL_EDS.n / RURAL_EDS.domain_size)
    with pytest.raises(ValueError, match="whole-number"):
        CountProfile.of_nonzero([3, 0], 10)
    with pytest.raises(ValueError, match="whole-number"):
        CountProfile.of_counts([1.5, 0.0])


def test_laplace_rmse_is_the_textbook_formula():
    """RMSE of Laplace = √2·b = √2·Δ₁/ε, so ε = 2√2/target under substitution."""
    answer = planner.closed_form("laplace", {}, TRUTH, planner.Target("rmse", 5.0))
    assert answer.method == planner.CLOSED
    assert answer.epsilon == pytest.approx(2 * math.sqrt(2) / 5, rel=1e-9)


@pytest.mark.parametrize("key", ["laplace", "gaussian", "grr", "oue", "olh", "hr"])
def test_closed_form_meets_the_target_exactly(key):
    target = planner.Target("rmse", 100.0)
    answer = planner.closed_form(key, {}, TRUTH, target)
    expected = summaries.theoretical_rmse(mechanisms.build(key, epsilon=answer.epsilon), TRUTH)
    assert expected == pytest.approx(100.0, rel=1e-8)
    assert answer.expected == pytest.approx(100.0, rel=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("key,target", [("laplace", 5.0), ("grr", 5.0), ("oue", 100.0),
                                        ("olh", 100.0)])
def test_planned_rmse_agrees_with_releases_within_1_percent(key, target):
    """Releases at the planned ε through the pipeline (Base): the root of the mean squared error
    over 400 releases is within 1 % of the target. The standard error of that estimate, from the
    releases' own spread (delta method: s.d.(MSE)/(2·mean·√R)), is checked to be below 0.3 %, so
    1 % is beyond 3.3 standard errors (GRR at ε ≈ 12 is the widest: its error is dominated by the
    few largest flows)."""
    trials = 400
    answer = planner.plan(COUNTY, [key], planner.Target("rmse", target))[0]
    assert answer.method == planner.CLOSED
    table = experiment.run(COUNTY, [key], [answer.epsilon], trials=trials, seed=12)
    squares = table.loc[table["metric"] == "rmse", "value"].to_numpy() ** 2
    assert len(squares) == trials
    standard_error = squares.std(ddof=1) / squares.mean() / math.sqrt(trials) / 2
    assert standard_error < 0.003
    assert math.sqrt(squares.mean()) == pytest.approx(target, rel=0.01)


def test_mae_exact_and_normal_approximation():
    target = planner.Target("mae", 4.0)
    laplace = planner.closed_form("laplace", {}, TRUTH, target)
    assert laplace.method == planner.CLOSED and laplace.epsilon == pytest.approx(2 / 4.0)
    grr = planner.closed_form("grr", {}, TRUTH, target)
    assert grr.method == planner.CLOSED_NORMAL
    table = experiment.run(COUNTY, ["grr"], [grr.epsilon], trials=50, seed=3)
    mae = table.loc[table["metric"] == "mae", "value"].mean()
    assert mae == pytest.approx(4.0, rel=0.03)
    # A biased mechanism has no closed-form MAE: it is searched.
    assert not planner.has_closed_form("stability_histogram", {}, "mae", "base", TRUTH)
    assert not planner.has_closed_form("laplace", {}, "rmse", "base_pos", TRUTH)


def test_search_lands_next_to_the_closed_form():
    """A forced search for Laplace's RMSE at pass probability 1/2 (the median release) is within
    two grid steps of the closed form (the RMSE's spread is ~3 % of it, a step 13 %)."""
    target = planner.Target("rmse", 5.0, probability=0.5)
    closed = planner.closed_form("laplace", {}, TRUTH, target)
    searched = planner.plan(COUNTY, ["laplace"], target, trials=10,
                            force_search=True)[0]
    assert searched.method == planner.SEARCH
    step = planner.SEARCH_GRID[1] / planner.SEARCH_GRID[0]
    assert closed.epsilon / step ** 2 <= searched.epsilon <= closed.epsilon * step ** 2
    assert len(searched.tried) <= math.ceil(math.log2(len(planner.SEARCH_GRID) + 1))
    assert searched.pass_low <= searched.pass_probability <= searched.pass_high


def test_baselines_answer_without_epsilon():
    answers = planner.plan(COUNTY, ["suppression", "rounding"], planner.Target("rmse", 5.0))
    assert all(math.isnan(a.epsilon) for a in answers)
    assert {a.method for a in answers} == {planner.NOT_DP_ANY}
    never = planner.plan(COUNTY, ["suppression"], planner.Target("rmse", 0.5))[0]
    assert never.method == planner.NOT_DP_NEVER


def test_unreachable_and_stopped():
    answer = planner.closed_form("oue", {}, TRUTH, planner.Target("rmse", 5.0))
    assert math.isinf(answer.epsilon) and answer.method == planner.UNREACHABLE
    answers = planner.plan(COUNTY, ["laplace", "grr"], planner.Target("topk_recall", 0.9),
                           trials=3, progress=lambda done, total: done < 2)
    assert [a.method for a in answers] == [planner.STOPPED, planner.STOPPED]


@pytest.mark.parametrize("passed,trials", [(0, 10), (3, 10), (10, 10), (17, 20)])
def test_wilson_interval(passed, trials):
    low, high = planner.wilson(passed, trials)
    ref = proportion_confint(passed, trials, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-12)


def test_target_checks_and_sentence():
    with pytest.raises(ValueError, match="unknown metric"):
        planner.Target("nope", 1)
    with pytest.raises(ValueError, match="give a target"):
        planner.Target("rmse")
    assert planner.Target("kendall_tau", 0.9).met({"kendall_tau": 0.95})
    assert not planner.Target("rmse", 5).met({"rmse": 5.1})
    assert planner.Target("total_error_pct", 5).met({"total_error_pct": -4})
    answers = [planner.Answer("olh", planner.Target("geh_pass_share", 0.85), 4.6,
                              planner.SEARCH),
               planner.Answer("laplace", planner.Target("geh_pass_share", 0.85), 0.02,
                              planner.SEARCH)]
    assert planner.sentence(answers, str.upper) == (
        "OLH needs ε ≈ 4.6 for GEH < 5 on ≥ 85% of cells in 90% of releases; LAPLACE needs "
        "0.02.")


def test_cli_plan(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    code = cli.main(["plan", "--dataset", "ireland_county", "--mechanisms",
                     "laplace,grr,suppression", "--metric", "rmse", "--target", "5",
                     "--postprocess", "base", "--out", str(out)])
    assert code == 0
    frame = read_private_csv(out)
    assert list(frame.columns[:7]) == ["mechanism", "metric", "target", "epsilon", "method",
                                       "expected", "pass_probability"]
    laplace = frame.set_index("mechanism").loc["laplace"]
    assert laplace["epsilon"] == pytest.approx(2 * math.sqrt(2) / 5)
    assert "Laplace needs ε ≈ 0.566" in capsys.readouterr().out
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                     "--metric", "rmse", "--out", str(out)]) == cli.EXIT_USAGE


def test_olh_has_its_closed_form_on_a_national_domain_and_only_its_per_user_hash_is_limited():
    """OLH on 85,000² cells: the protocol as analysed (the fast and sparse releases, the
    variance) has no domain limit, so the planner answers at once with Wang et al.'s variance
    n·4e^ε/(e^ε − 1)² per cell; only the deployable per-user hash (indices below 2³¹ − 1)
    refuses such a domain. (The planner used to search here for a minute on the national data.)"""
    profile = CountProfile.of_nonzero(np.arange(1, 1_001), 85_000 ** 2)
    assert planner.has_closed_form("olh", {"epsilon": 1.0}, "rmse", "base", profile)
    assert planner.has_closed_form("laplace", {"epsilon": 1.0}, "rmse", "base", profile)
    olh = mechanisms.build("olh", epsilon=1.0)
    e = math.exp(1.0)
    per_cell = profile.n * 4 * e / (e - 1) ** 2
    expected, _ = planner.expected_error(olh, "rmse", profile)
    assert expected == pytest.approx(math.sqrt(per_cell), rel=0.01)   # + O(1/n) terms
    with pytest.raises(ValueError, match="per-user protocol"):
        olh.perturb(np.array([0]), 85_000 ** 2, np.random.default_rng(0))


# --------------------------------------------- draws stopped once the verdict is certain (issue 32)
def test_a_verdict_is_decided_exactly_when_the_remaining_draws_cannot_change_it():
    for trials in (1, 5, 20):
        for probability in (0.05, 0.5, 0.9, 1.0):
            for drawn in range(trials + 1):
                for passed in range(drawn + 1):
                    outcomes = {(passed + more) / trials >= probability
                                for more in range(trials - drawn + 1)}
                    verdict = planner.decided(passed, drawn, trials, probability)
                    assert verdict == (outcomes.pop() if len(outcomes) == 1 else None)


def _fake_runner(pass_share_at, calls):
    """Draw ``trial`` at ε passes (RMSE 1, else 9) with probability ``pass_share_at(ε)``, its
    outcome fixed by (ε, trial) as the real pipeline's draws are; records the trials asked."""
    def run(key, params, epsilon, trials, progress):
        calls.append((epsilon, trials))
        rows = []
        for trial in trials:
            rng = np.random.default_rng([int(epsilon * 1e6), trial])
            value = 1.0 if rng.random() < pass_share_at(epsilon) else 9.0
            rows.append({"trial": trial, "metric": "rmse", "value": value})
            if progress is not None:
                progress(trial - trials.start + 1, len(trials))
        return pd.DataFrame(rows)
    return run


def _full_search(pass_share_at, trials, probability):
    """The bisection with every ε drawn ``trials`` times: the answer early stopping must give."""
    runner = _fake_runner(pass_share_at, [])
    grid, lo, hi = planner.SEARCH_GRID, -1, len(planner.SEARCH_GRID)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        table = runner("laplace", {}, grid[mid], range(trials), None)
        if (table["value"] <= 5).mean() >= probability:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize("probability", [0.5, 0.9, 1.0])
@pytest.mark.parametrize("trials", [5, 20])
def test_early_stopping_gives_the_answer_of_all_draws_with_fewer_releases(trials, probability):
    target = planner.Target("rmse", 5.0, probability)
    drawn_in_all, full_in_all = 0, 0
    for middle in (0.01, 0.3, 2.0, 50.0):   # where the pass rate crosses 1/2 (50: never)
        def share(epsilon, middle=middle):
            return 1 / (1 + (middle / epsilon) ** 3)
        calls = []
        answer = planner.search("laplace", {}, target, _fake_runner(share, calls), trials)
        hi = _full_search(share, trials, probability)
        drawn = sum(len(asked) for _, asked in calls)
        assert drawn <= trials * len(answer.tried)
        drawn_in_all, full_in_all = drawn_in_all + drawn, full_in_all + trials * len(answer.tried)
        if hi == len(planner.SEARCH_GRID):
            assert answer.method == planner.UNREACHABLE
            continue
        assert answer.epsilon == planner.SEARCH_GRID[hi]
        row = answer.tried.set_index("epsilon").loc[answer.epsilon]
        assert row["trials"] == trials                      # the answer's ε drawn in full
        full = _fake_runner(share, [])("laplace", {}, answer.epsilon, range(trials), None)
        assert answer.pass_probability == (full["value"] <= 5).mean()
        for epsilon, asked in calls:                        # every draw asked once, in order
            assert asked.start == sum(len(a) for e, a in calls[:calls.index((epsilon, asked))]
                                      if e == epsilon)
    assert drawn_in_all < full_in_all    # the point: fewer releases for the same answers
