"""AppTest of the Tradeoffs page: sweeps run behind buttons, are cached per release, and the curves
show dpcore's numbers (empirical means and closed-form theory)."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.evaluation import summaries
from tests.plotly_spec import figure, figures, traces, values
from ui.components.controls import option_widget

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "3_Tradeoffs.py")
GRID, TRIALS = "kept_widget_tradeoffs_grid", "kept_widget_tradeoffs_trials"


def tradeoffs_page(grid="1, 5", trials=2, **query) -> AppTest:
    """The page with a small grid, so each sweep is quick."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    query.setdefault("mech", ["laplace", "grr"])
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    at.text_input(key=GRID).set_value(grid)
    at.number_input(key=TRIALS).set_value(trials)
    at.text_input(key="kept_widget_tradeoffs_sizes").set_value("1000, 10000")
    at.run()
    assert not at.exception, at.exception
    return at


def run_sweep(at: AppTest, key: str) -> AppTest:
    at.button(key=f"{key}_run").click().run()
    assert not at.exception, at.exception
    return at


def mean_line(fig: dict, label: str) -> tuple[np.ndarray, np.ndarray]:
    (trace,) = traces(fig, label)
    return values(trace["x"]).astype(float), values(trace["y"]).astype(float)


def assert_theory_from_dpcore(fig: dict, label: str) -> None:
    """Laplace's and GRR's dotted ``label`` curves at ε = 1, 5 are dpcore's theoretical RMSE."""
    county = datasets.load("ireland_county").to_dense()
    for key in ("laplace", "grr"):
        theory_x, theory_y = mean_line(fig, f"{mechanisms.get(key).name} · {label}")
        expected = [summaries.theoretical_rmse(mechanisms.build(key, epsilon=e), county)
                    for e in (1.0, 5.0)]
        assert list(theory_x) == [1.0, 5.0] and np.allclose(theory_y, expected)


def test_nothing_runs_until_asked():
    at = tradeoffs_page(seed="101")
    assert not figures(at)
    labels = {b.key: b.label for b in at.button}
    assert labels["tradeoffs_epsilon_run"] == "Run 8 releases"  # 2 mechanisms × 2 ε × 2 trials
    assert labels["tradeoffs_n_run"] == "Run 8 releases"        # 2 mechanisms × 2 n × 2 trials


def test_epsilon_sweep_curves_bands_and_theory_match_dpcore():
    at = run_sweep(tradeoffs_page(pp="base", seed="102"), "tradeoffs_epsilon")
    fig = figure(at, "against ε (Base")
    x, y = mean_line(fig, "Laplace")
    assert list(x) == [1.0, 5.0]
    assert len(traces(fig, "Laplace (95 % band)")) == 1
    assert_theory_from_dpcore(fig, "theory")
    # the empirical Laplace RMSE is within a few percent of its theory (1,085 cells, 2 trials)
    assert np.allclose(y, mean_line(fig, "Laplace · theory")[1], rtol=0.15)
    assert fig["layout"]["xaxis"]["title"]["text"] == "ε (privacy budget)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "RMSE (commuters)"
    assert any("release time" in f["layout"]["title"]["text"] for f in figures(at))


def test_default_post_processing_draws_the_raw_theory_as_an_upper_bound():
    at = run_sweep(tradeoffs_page(seed="106"), "tradeoffs_epsilon")  # default: Base-Pos
    fig = figure(at, "against ε (Base-Pos")
    assert_theory_from_dpcore(fig, "theory bound")
    # a bound on the expectation: 2 trials of Laplace may exceed it by sampling noise (s.e. 2.4 %)
    bound = mean_line(fig, "Laplace · theory bound")[1]
    assert np.all(mean_line(fig, "Laplace")[1] <= 1.15 * bound)
    assert any("upper bound" in c.value for c in at.caption)
    at = run_sweep(tradeoffs_page(pp="significance_cut", seed="106"), "tradeoffs_epsilon")
    assert not [t for t in figure(at, "against ε (Significance cut")["data"] if "theory" in t["name"]]


def test_returning_and_shrinking_reuse_the_cached_releases():
    at = run_sweep(tradeoffs_page(seed="103"), "tradeoffs_epsilon")
    first = mean_line(figure(at, "against ε ("), "Laplace")
    again = tradeoffs_page(seed="103")  # a new session: the finished releases are reused
    assert "tradeoffs_epsilon_run" not in {b.key for b in again.button}
    assert np.array_equal(mean_line(figure(again, "against ε ("), "Laplace")[1], first[1])
    again.text_input(key=GRID).set_value("5").run()  # shrink the grid: nothing to run
    assert "tradeoffs_epsilon_run" not in {b.key for b in again.button}
    assert list(mean_line(figure(again, "against ε ("), "Laplace")[0]) == [5.0]
    again.number_input(key=TRIALS).set_value(3).run()  # one more trial: only it is missing
    labels = {b.key: b.label for b in again.button}
    assert labels["tradeoffs_epsilon_run"] == "Run 2 releases"


def test_metric_choice_and_bad_grid():
    at = tradeoffs_page(seed="104")
    at.selectbox(key="kept_widget_tradeoffs_metric").set_value("max_error").run()
    run_sweep(at, "tradeoffs_epsilon")
    fig = figure(at, "Max error (L∞) against ε (")
    assert fig["layout"]["yaxis"]["title"]["text"] == "Max error (L∞) (commuters)"
    assert not [t for t in fig["data"] if "theory" in t["name"]]
    at.text_input(key=GRID).set_value("1, lots").run()
    assert any("“lots” is not a number" in e.value for e in at.error)


def test_population_sweep_subsamples():
    at = run_sweep(tradeoffs_page(seed="105"), "tradeoffs_n")
    fig = figure(at, "against population size")
    x, y = mean_line(fig, "Laplace")
    assert list(x) == [1000.0, 10000.0]
    assert fig["layout"]["xaxis"]["type"] == "log"
    # Laplace noise does not depend on n: its RMSE is the same at both sizes, within noise
    assert np.allclose(y, y[0], rtol=0.2)


def test_a_series_of_rmse_zero_leaves_the_log_axis_with_a_note():
    """Suppression below 1 commuter publishes the exact table: RMSE 0 at every n, which a log
    axis cannot draw. It is left out of the line and its band (no line down off the chart) and
    the caption names it; the n axis reads 1k, 10k (one format)."""
    at = tradeoffs_page(mech=["laplace", "suppression"])
    at.number_input(key=option_widget("suppression", "threshold")).set_value(1).run()
    at = run_sweep(at, "tradeoffs_n")
    fig = figure(at, "against population size")
    name = mechanisms.get("suppression").name
    (line,) = traces(fig, name)
    assert all(v is None for v in line["y"]) if isinstance(line["y"], list) else \
        np.isnan(values(line["y"]).astype(float)).all()
    assert not traces(fig, f"{name} (95 % band)")[0]["y"]
    drawn = [values(t["y"]).astype(float) for t in fig["data"]
             if t.get("y") is not None and len(t["y"])]
    assert all((d[np.isfinite(d)] > 0).all() for d in drawn)
    note = next(c.value for c in at.caption if c.value.startswith("Not drawn on the log scale"))
    assert f"{name} at Commuters n = 1,000, 10,000" in note
    assert fig["layout"]["xaxis"]["tickformat"] == "~s"
    at.toggle(key="kept_widget_tradeoffs_log_y").set_value(False).run()
    assert not [c for c in at.caption if c.value.startswith("Not drawn on the log scale")]
    assert np.array_equal(mean_line(figure(at, "against population size"), name)[1], [0, 0])


def test_post_processing_comparison_and_a_mechanism_left_out():
    at = tradeoffs_page(seed="106", mech=["laplace", "topk"])
    # each method's one-line definition is the widget's help: the thesis's Base-Cut and Wang et
    # al.'s threshold under their own names
    help_text = at.multiselect(key="kept_widget_tradeoffs_methods").help
    assert "running sum first exceeds n" in help_text and "Significance cut" in help_text
    at.multiselect(key="kept_widget_tradeoffs_methods").set_value(["base", "significance_cut"]).run()
    run_sweep(at, "tradeoffs_postprocess")
    fig = figure(at, "by post-processing")
    names = {t["name"] for t in fig["data"]}
    assert {"Laplace · Base", "Laplace · Significance cut"} <= names  # names, not keys
    shown = [t["name"] for t in fig["data"] if t.get("showlegend", True)]
    assert shown == ["Laplace", "Base", "Significance cut"]  # mechanism by colour, method by dash
    assert any("left out" in w.value and "significance cut" in w.value.lower() for w in at.warning)
    assert "tradeoffs_postprocess_run" not in {b.key for b in at.button}  # nothing left to run


@pytest.mark.slow
def test_domain_comparison_of_the_thesis_subsets():
    at = tradeoffs_page(grid="5", trials=1, seed="107", mech=["laplace", "hm"],
                        dataset="ireland_ed", level="parent")
    options = at.multiselect(key="kept_widget_tradeoffs_scenarios").options
    dublin = next(o for o in options if o.startswith("Dublin City (d = 26,244"))
    rural = next(o for o in options if o.startswith("Cavan + Leitrim (d = 26,244"))
    at.multiselect(key="kept_widget_tradeoffs_scenarios").set_value([dublin, rural]).run()
    run_sweep(at, "tradeoffs_domain")
    fig = figure(at, "by data")
    assert {t["name"] for t in fig["data"]} >= {f"Laplace · {dublin}", f"Laplace · {rural}"}
    times = figure(at, "release time")
    assert times["layout"]["yaxis"]["type"] == "log"
    assert {t["name"] for t in times["data"]} == {"Laplace", mechanisms.get("hm").name}


def test_uploaded_data_sweeps_stay_in_the_session():
    from dpcore.data.od import ODMatrix, ZoneSet
    from ui.components import runs, state

    zones = ZoneSet.from_ids(["A", "B", "C"])
    upload = ODMatrix.from_pairs("mine", zones, zones, [0, 1, 2, 0], [0, 1, 2, 2],
                                 [500, 300, 200, 50])
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.session_state[state.UPLOADED_MATRIX] = upload
    at.session_state[state.UPLOADED_FILENAME] = "mine.csv"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.query_params["mech"] = ["laplace"]
    at.query_params["seed"] = "108"
    at.run()
    at.text_input(key=GRID).set_value("1").run()
    at.number_input(key=TRIALS).set_value(2).run()
    run_sweep(at, "tradeoffs_epsilon")
    assert list(mean_line(figure(at, "against ε ("), "Laplace")[0]) == [1.0]
    shared = list(runs._shared_store())
    assert not [key for key in shared if key[0][0] == state.UPLOADED]
    assert at.session_state["run_session_memo"]["entries"]


def test_release_times_show_each_version_of_the_data_once():
    """The sidebar's data and the same data in the domain comparison ("Everything as loaded")
    are one bar group, not the same releases drawn twice under two names."""
    at = tradeoffs_page(grid="1, 5", trials=1, seed="108")
    run_sweep(at, "tradeoffs_epsilon")
    # the same data under the same name: the domain comparison's releases are those just made
    assert "tradeoffs_domain_run" not in {b.key for b in at.button}
    assert figure(at, "by data")
    times = figure(at, "release time")
    for trace in times["data"]:
        groups = list(values(trace["x"]))
        assert len(groups) == 1 and groups[0].startswith("Everything as loaded"), groups
