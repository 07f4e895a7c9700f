"""AppTest of the Explore page: the widgets drive the right dpcore calls, the charts show them."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms, release, seeding
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.mechanisms import postprocess
from dpcore.scoring import metrics, ranks
from tests.app_pages import epsilon_box, epsilon_slider, shown_table
from tests.plotly_spec import (assert_bars_readable, figure, figures, legend_name, released_bars,
                                traces, values)
from ui.components import charts, panels, runs, state
from ui.components.controls import KEYS, NEW_DRAW, option_widget
from ui.components.memo import BoundedMemo

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "2_Explore.py")
BARS, ORDERING = "busiest commutes", "Ordering"


def explore_page(**query) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at


def expected_release(key: str, epsilon: float, seed: int, post: str = "base_pos",
                     dataset: str = "ireland_county", **params) -> np.ndarray:
    """What the page must show: dpcore's release with the seed's generator, post-processed."""
    od = datasets.load(dataset)
    counts = od.to_dense()
    mechanism = mechanisms.build(key, epsilon=epsilon, **params)
    raw = mechanism.release(counts, seeding.generator(seed, "release", key, float(epsilon), 0))
    return postprocess.apply(post, raw, od.n)


def url(at: AppTest, name: str) -> list[str]:
    """A URL parameter's values (AppTest keeps a single value as a plain string)."""
    value = at.query_params[name]
    return [value] if isinstance(value, str) else list(value)


def bar_trace(at: AppTest, key: str) -> dict:
    (trace,) = [t for t in figure(at, BARS)["data"]
                if legend_name(t).startswith(mechanisms.get(key).name + " (95 % interval")]
    return trace


def bar_values(at: AppTest, key: str) -> np.ndarray:
    """The released counts behind a mechanism's bars (a bar beyond the axis is drawn shorter)."""
    return values(bar_trace(at, key)["customdata"])[:, 1]


def top_cells(k: int, dataset: str = "ireland_county") -> np.ndarray:
    return ranks.top_cells(datasets.load(dataset).to_dense(), k)


SECTIONS = ["What happened", "Ordering", "Heat map", "True top 10", "Scores",
            "Checks over repeated draws", "Heavy hitters", "Downloads"]


def test_default_page_draws_the_bars_the_summary_and_only_the_open_tab():
    at = explore_page(mech=["laplace", "grr"])
    bars = figure(at, BARS)
    assert [legend_name(t).split(" (95 % interval")[0] for t in bars["data"]] == [
        "True count", "Laplace", mechanisms.get("grr").name]
    assert all(len(values(t["y"])) == 30 for t in bars["data"])
    county = datasets.load("ireland_county")
    assert np.array_equal(values(bars["data"][0]["y"]), county.top(30)["count"])
    assert bars["layout"]["yaxis"]["title"]["text"] == "Commuters (count)"
    sentences = [m.value for m in at.markdown if "busiest commutes kept their rank" in m.value]
    assert len(sentences) == 2
    assert [t.label for t in at.tabs] == SECTIONS   # the page's sections, and nothing inside
    # Only "What happened" is computed and drawn: no ordering, heat map or score table yet.
    assert len(figures(at)) == 1 and not at.dataframe and not at.metric


def test_each_tab_opens_from_the_url_and_draws_its_section():
    county = datasets.load("ireland_county")
    at = explore_page(mech=["laplace", "grr"], tab="Ordering")
    ordering = figure(at, ORDERING)
    for fig in (figure(at, BARS), ordering):  # the house template, set once in ui.components.charts
        assert fig["layout"]["template"]["layout"]["plot_bgcolor"] == "white"
    assert len(traces(ordering, "Perfect order (y = x)")) == 2
    markers = [t for t in ordering["data"] if t["mode"] == "markers"]
    assert sum(len(values(t["x"])) for t in markers) == 200  # top 100 × 2 mechanisms
    zeros = traces(ordering, "Released as zero")
    assert all(t["marker"]["color"] == "#BBBBBB" for t in zeros)
    assert sum(t.get("showlegend", True) for t in zeros) <= 1
    assert not [m for m in at.markdown if "busiest commutes kept their rank" in m.value]

    table = shown_table(explore_page(mech=["laplace", "grr"], tab="True top 10").table[0])
    assert list(table.columns) == ["Commute", "True count", "True rank", "Laplace", "GRR"]
    assert list(table["Commute"]) == list(county.top(10)["commute"])
    # A wrapping table (no header cut short), counts in one format: 218,860, not 218860.
    assert list(table["True count"]) == [f"{c:,}" for c in county.top(10)["count"]]

    at = explore_page(mech=["laplace", "grr"], tab="Scores")
    labels = [t.label for t in at.tabs]
    assert [label for label in labels if label not in SECTIONS] == ["Laplace",
                                                                      mechanisms.get("grr").name]
    check_tables = [d.value for d in at.dataframe if "Check" in d.value.columns]
    assert len(check_tables) == 1 and set(check_tables[0]["Result"]) <= {"pass", "fail", "n/a"}
    assert "pass" in set(check_tables[0]["Result"])
    # sources shortened to fit the 1,280 px frame (browser: test_the_checks_tables_fit_...),
    # each abbreviation spelt out in the Source header's help
    sources = {source for *_, source in metrics._CHECKS}
    assert set(check_tables[0]["Source"]) == {panels._short_source(s) for s in sources}
    assert max(len(panels._short_source(s)) for s in sources) <= len("TAG M3.1 Table 2; TxDOT")
    assert all(short in panels.CHECK_COLUMNS["Source"]["help"]
               for short in panels.SHORT_SOURCES.values())
    laplace_cards = [m.value for m in at.metric]
    # Only the open tab is drawn (one rerun's CPU); choosing the other one draws its scores.
    at.session_state["explore_scores_tab"] = mechanisms.get("grr").name
    at.run()
    assert not at.exception
    assert len([d for d in at.dataframe if "Check" in d.value.columns]) == 1
    assert [m.value for m in at.metric] != laplace_cards


def test_releases_made_in_two_threads_are_the_seeds_releases(monkeypatch):
    """Large domains release in two threads (dpcore.release.PARALLEL_FROM_CELLS); forced here on the
    county data, every bar is still dpcore's release for the seed, and scored as asked."""
    monkeypatch.setattr(release, "PARALLEL_FROM_CELLS", 0)
    keys = ["laplace", "stability_histogram", "grr", "oue", "olh", "hm"]
    at = explore_page(mech=keys, seed="91", tab="Scores")
    for key in keys:
        assert np.allclose(bar_values(at, key), expected_release(key, 1.0, 91)[top_cells(30)]), key
    assert len([d for d in at.dataframe if panels.METRIC in d.value.columns]) == 1


def test_ed_bars_show_the_truth_and_every_mechanism_with_intervals():
    """GRR's releases reach millions on the ED data while no true count reaches 7,000: the axis
    follows the truth, GRR's bars are drawn to its edge with their values, every mechanism's
    drawn bars carry their 95 % interval and the caption says how each was obtained."""
    at = explore_page(dataset="ireland_ed")
    fig = figure(at, BARS)
    assert_bars_readable(fig)
    bars = released_bars(fig)
    assert set(bars) == {mechanisms.get(k).name for k in
                         ("laplace", "stability_histogram", "grr", "oue", "olh", "hm")}
    grr = values(bars[mechanisms.get("grr").name]["customdata"])[:, 1]
    assert grr.max() > 1e6 > fig["layout"]["yaxis"]["range"][1]
    caption = next(c.value for c in at.caption if c.value.startswith("Whiskers"))
    assert "Laplace: exact (Laplace law)" in caption and "drawn to its edge" in caption
    at.toggle(key="kept_widget_explore_log_bars").set_value(True).run()
    fig = figure(at, BARS)
    assert fig["layout"]["yaxis"]["type"] == "log"
    low, high = (10 ** end for end in fig["layout"]["yaxis"]["range"])
    for name, trace in released_bars(fig).items():
        drawn, released = values(trace["y"]), values(trace["customdata"])[:, 1]
        assert np.isnan(drawn[released <= 0]).all(), name          # dropped, not drawn
        assert ((drawn[released > 0] >= low) & (drawn[released > 0] <= high)).all(), name
    caption = next(c.value for c in at.caption if c.value.startswith("Whiskers"))
    assert "released counts of 0 or below are not drawn" in caption


def test_a_bad_tab_in_the_url_opens_the_first():
    at = explore_page(mech=["laplace"], tab="<script>")
    assert [m for m in at.markdown if "busiest commutes kept their rank" in m.value]


def test_slider_epsilon_drives_the_release():
    at = explore_page(mech=["laplace"])
    epsilon_slider(at).set_value(5.0).run()
    assert not at.exception
    expected = expected_release("laplace", 5.0, 0)
    assert np.allclose(bar_values(at, "laplace"), expected[top_cells(30)])
    assert url(at, "eps") == ["5"]


def test_typed_epsilon_is_used_exactly_and_the_slider_snaps():
    at = explore_page(mech=["laplace"])
    epsilon_box(at).set_value(0.37).run()
    assert epsilon_slider(at).value == 0.4
    expected = expected_release("laplace", 0.37, 0)
    assert np.allclose(bar_values(at, "laplace"), expected[top_cells(30)])


def test_mechanism_choice_and_its_own_parameters():
    at = explore_page(mech=["laplace"])
    at.multiselect(key=KEYS["mechanisms"].widget).set_value(["hm"]).run()
    assert not at.exception
    t_input = at.selectbox(key=option_widget("hm", "t"))
    t_input.set_value(2).run()
    assert np.allclose(bar_values(at, "hm"),
                       expected_release("hm", 1.0, 0, t=2)[top_cells(30)])
    assert url(at, "opt") == ["hm.t=2"] and url(at, "mech") == ["hm"]


def test_new_draw_changes_the_seed_and_the_noise():
    at = explore_page(mech=["laplace"])
    before = bar_values(at, "laplace")
    at.button(key=NEW_DRAW).click().run()
    assert at.number_input(key=KEYS["seed"].widget).value == 1
    after = bar_values(at, "laplace")
    assert not np.allclose(before, after)
    assert np.allclose(after, expected_release("laplace", 1.0, 1)[top_cells(30)])


def test_settings_come_from_the_url():
    at = explore_page(mech=["grr", "laplace"], eps="2.5", seed="7", pp="base", nb="add_remove")
    assert np.allclose(bar_values(at, "grr"),
                       expected_release("grr", 2.5, 7, "base")[top_cells(30)])
    assert at.radio(key=KEYS["neighbours"].widget).value == "add_remove"


def test_bad_url_values_fall_back_to_defaults():
    at = explore_page(mech=["nonsense", "laplace"], eps="-3", seed="x", pp="zzz", opt="hm.t=99")
    assert at.session_state[KEYS["epsilon"].value] == 1.0
    assert at.session_state[KEYS["mechanisms"].value] == ("laplace",)
    expected = expected_release("laplace", 1.0, 0)
    assert np.allclose(bar_values(at, "laplace"), expected[top_cells(30)])


def test_neighbouring_relation_changes_the_central_noise():
    at = explore_page(mech=["laplace"])
    at.radio(key=KEYS["neighbours"].widget).set_value("add_remove").run()
    assert np.allclose(bar_values(at, "laplace"), expected_release(
        "laplace", 1.0, 0, neighbours="add_remove")[top_cells(30)])


def test_delta_input_only_for_mechanisms_that_use_it():
    at = explore_page(mech=["laplace"])
    assert not [w for w in at.number_input if w.key == KEYS["delta"].widget]
    at = explore_page(mech=["gaussian"])
    at.number_input(key=KEYS["delta"].widget).set_value(1e-9).run()
    assert np.allclose(bar_values(at, "gaussian"), expected_release(
        "gaussian", 1.0, 0, delta=1e-9)[top_cells(30)])


def test_k_log_scale_and_ordering_scope():
    at = explore_page(mech=["laplace"], tab="Ordering")
    at.slider(key="kept_widget_explore_k").set_value(12).run()
    at.toggle(key="kept_widget_explore_log_bars").set_value(True).run()
    at.selectbox(key="kept_widget_explore_scope").set_value(1085).run()
    bars = figure(at, BARS)
    assert "12 busiest" in bars["layout"]["title"]["text"]
    assert all(len(values(t["y"])) == 12 for t in bars["data"])
    assert bars["layout"]["yaxis"]["type"] == "log"
    ordering = figure(at, ORDERING)
    shown = sum(len(values(t["x"])) for t in ordering["data"] if t["mode"] == "markers")
    assert shown == 1085


def test_roll_up_and_areas_of_the_ed_level():
    at = explore_page(mech=["laplace"], dataset="ireland_ed", level="parent")
    assert any("1,085 possible commutes" in c.value for c in at.caption)
    at.radio(key=KEYS["level"].widget).set_value("as_loaded").run()
    at.multiselect(key=KEYS["areas"].widget).set_value(["Dublin City"]).run()
    assert not at.exception
    assert any("26,244 possible commutes" in c.value for c in at.caption)
    assert url(at, "areas") == ["Dublin City"] and url(at, "level") == ["as_loaded"]


def test_post_processing_choice_is_applied():
    at = explore_page(mech=["grr"], pp="norm_sub")
    expected = expected_release("grr", 1.0, 0, "norm_sub")
    assert np.allclose(bar_values(at, "grr"), expected[top_cells(30)])


def test_a_mechanism_that_cannot_run_says_why():
    at = explore_page(mech=["topk", "laplace"], pp="significance_cut")
    assert any("could not run" in w.value and "significance cut" in w.value for w in at.warning)
    assert [t["name"] for t in figure(at, BARS)["data"]] == ["True count",
                                                             "Laplace (95 % interval: none)"]


def test_no_mechanism_asks_for_one():
    at = explore_page(mech=["laplace"])
    at.multiselect(key=KEYS["mechanisms"].widget).set_value([]).run()
    assert any("Choose at least one mechanism" in i.value for i in at.info)
    assert not figures(at)


def test_pass_probability_over_repeated_draws():
    at = explore_page(mech=["laplace", "grr"], tab="Checks over repeated draws")
    at.number_input(key="kept_widget_explore_draws").set_value(3).run()
    at.button(key="explore_draws_run").click().run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "P(pass)" in d.value.columns]
    assert len(tables) == 1  # the open tab's; the other mechanism's is drawn when chosen
    assert set(tables[0]["Draws"]) <= {0, 3}
    assert tables[0]["P(pass)"].dropna().between(0, 1).all()


def hostile_upload() -> ODMatrix:
    names = ["<img src=x onerror=alert(1)>", "=HYPERLINK(1)", "Plain"]
    zones = ZoneSet.from_ids(names)
    return ODMatrix.from_pairs("hostile", zones, zones, [0, 0, 1, 2, 2], [0, 1, 1, 2, 0],
                               [50, 20, 30, 40, 10])


def test_uploaded_data_stays_in_the_session_and_names_are_escaped():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[state.UPLOADED_MATRIX] = hostile_upload()
    at.session_state[state.UPLOADED_FILENAME] = "hostile.csv"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.query_params["mech"] = ["laplace"]
    at.run()
    assert not at.exception, at.exception
    spec = str(figures(at))
    assert "<img" not in spec and "&lt;img src=x onerror=alert(1)&gt;" in spec
    assert at.session_state["run_session_memo"]["entries"]  # memoised in this session only
    bars = figure(at, BARS)
    assert len(values(bars["data"][0]["y"])) == 5


@pytest.mark.parametrize("dataset", ["toy_town", "ireland_county"])
def test_every_mechanism_runs_on_small_data(dataset):
    at = explore_page(mech=mechanisms.names(), dataset=dataset, pp="base")
    assert not at.warning
    assert len(figure(at, BARS)["data"]) == 1 + len(mechanisms.names())


def test_approximate_fast_releases_are_labelled():
    at = explore_page(mech=["ss", "dbitflip", "oue"], dataset="toy_town")
    notes = [c.value for c in at.sidebar.caption if "approximate fast release" in c.value]
    assert len(notes) == 2   # subset selection and dBitFlip; OUE's release is exact
    assert all(mechanisms.get(k).approximation in note for k, note in zip(["ss", "dbitflip"],
                                                                           notes))


def test_onthemap_is_picked_with_its_guarantee_and_synthesized_per_workplace():
    """Its caveat (probabilistic DP is not DP; totals published exactly) is shown where it is
    picked, and the bars are the pipeline's release, bound to the table's destinations (so every
    workplace keeps its total), not the one-destination draw of the bare mechanism."""
    at = explore_page(mech=["onthemap"], pp="base")
    (note,) = [c.value for c in at.sidebar.caption if "does not promise" in c.value]
    assert mechanisms.get("onthemap").caveat in note and "not DP" in note
    od = datasets.load("ireland_county")
    bound = mechanisms.build("onthemap").for_destinations(od.n_destinations)
    released = bound.release(od.to_dense(), seeding.generator(0, "release", "onthemap", 1.0, 0))
    np.testing.assert_array_equal(bar_values(at, "onthemap"), released[top_cells(30)])
    totals = released.reshape(od.n_origins, od.n_destinations).sum(axis=0)
    np.testing.assert_array_equal(totals, od.destination_totals())


def test_onthemap_with_prior_test_releases_a_county_with_workplaces_of_432557_workers():
    """Choosing prior 'test' in the sidebar releases the county table (Dublin City: 432,557
    workers; the test was once refused above 1,000): no warning, and the bars are the
    pipeline's release with the test's α per workplace."""
    at = explore_page(mech=["onthemap"], pp="base")
    at.selectbox(key=option_widget("onthemap", "prior")).set_value("test").run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    delta = float(at.session_state[KEYS["delta"].value])
    od = datasets.load("ireland_county")
    bound = mechanisms.build("onthemap", prior="test", delta=delta).for_destinations(
        od.n_destinations)
    released = bound.release(od.to_dense(), seeding.generator(0, "release", "onthemap", 1.0, 0))
    np.testing.assert_array_equal(bar_values(at, "onthemap"), released[top_cells(30)])


def test_view_settings_come_from_and_go_to_the_url():
    at = explore_page(mech=["laplace"], k="12", log_bars="true", scope="1000")
    assert len(values(figure(at, BARS)["data"][0]["y"])) == 12
    assert figure(at, BARS)["layout"]["yaxis"]["type"] == "log"
    assert (at.query_params["k"], at.query_params["log_bars"], at.query_params["scope"]) == (
        "12", "true", "1000")
    at.slider(key="kept_widget_explore_k").set_value(20).run()
    assert at.query_params["k"] == "20"


@pytest.mark.parametrize("query", [{"k": "999"}, {"k": "many"}, {"scope": "7"},
                                   {"log_bars": "maybe"}])
def test_invalid_view_settings_in_the_url_are_ignored(query):
    at = explore_page(mech=["laplace"], **query)
    assert len(values(figure(at, BARS)["data"][0]["y"])) == 30
    assert figure(at, BARS)["layout"]["yaxis"].get("type") != "log"


def test_bars_tell_mechanisms_apart_without_colour():
    keys = mechanisms.names()
    at = explore_page(mech=keys, dataset="toy_town", pp="base")
    bars = figure(at, BARS)["data"][1:]
    styles = {(t["marker"]["color"], t["marker"].get("pattern", {}).get("shape", "")) for t in bars}
    assert len(styles) == len(keys)
    shapes = [t["marker"].get("pattern", {}).get("shape", "") for t in bars]
    assert len(set(shapes)) == min(len(keys), 8)   # every pattern in use


def test_scores_table_has_units_short_pinned_names_and_no_none():
    """One row per metric, one column per mechanism (one row per mechanism ran to 1,843 px at
    1,280 px wide: tests/browser/test_explore_browser.py measures it fit)."""
    at = explore_page(mech=["laplace", "oue"], tab="Scores")
    [scores] = [d for d in at.dataframe if panels.METRIC in d.value.columns]
    table = scores.value.set_index(panels.METRIC)
    assert list(table.columns) == ["Laplace", "OUE"]  # short names: the table fits
    assert list(table.loc["Bits per commuter"]) == ["—", "1,085"]  # central: nothing sent
    assert list(table.index) == [
        "RMSE (commuters)", "RMSE (real commutes) (commuters)", "MAE (commuters)",
        "Max error (L∞) (commuters)", "Top-k recall", "Kendall τ (top-N)", "GEH < 5",
        "Invented flows (cells)", "Released commutes invented", "False zero cells",
        "Real commutes erased", "Release time", "Bits per commuter"]
    cards = {m.label: m.value for m in at.metric}   # the open tab's (Laplace) cards agree
    assert table.loc["RMSE (commuters)", "Laplace"] == cards["RMSE"]
    assert table.loc["Real commutes erased", "Laplace"] == cards["Real commutes erased"]
    assert not table.isin(["None", "nan"]).any().any()
    config = scores.proto.columns
    assert '"pinned":true' in config.replace(" ", "")  # the names stay in view when scrolled
    assert metrics.METRICS["rmse"].description in config   # the definitions in the help
    assert mechanisms.get("oue").name in config                # each full name in its help
    assert "Columns: OUE: Optimised unary encoding." in [c.value for c in at.caption]


def test_scores_abbreviations_are_short_distinct_and_say_not_dp():
    """Eight columns of 74 px fit the 818 px frame beside the metrics' names (browser:
    test_the_scores_tables_fit_their_frame_at_1280_px): every mechanism's header is at most 8
    characters, no two alike, and the ones that are not DP keep a ⚠."""
    keys = mechanisms.names()
    shorts = [charts.abbreviation(k) for k in keys]
    assert max(map(len, shorts)) <= 8 and len(set(shorts)) == len(keys), shorts
    assert {k for k in keys if "⚠" in charts.abbreviation(k)} == {
        k for k in keys if "not DP" in mechanisms.get(k).name}
    assert panels.METRIC_WIDTH + 8 * panels.SCORE_WIDTH[0] <= panels.FRAME


def test_a_rerun_ranks_and_scores_the_releases_it_holds_after_the_cache_evicted_them(
        monkeypatch):
    """Issue 32: on a busy server the shared release cache may evict a release between a page's
    reads of it. The rerun ranks (runs.orderings) and scores (runs.releases(held=…)) the
    releases it already holds: each mechanism is drawn once per rerun, even with a cache that
    keeps nothing."""
    settings = release.RunSettings("ireland_county", "as_loaded", (), ("laplace", "hm"), 1.37,
                                   1e-6, "substitution", (), "base", 5)
    monkeypatch.setattr(runs, "_shared_releases", lambda: BoundedMemo(0))
    monkeypatch.setattr(runs, "_shared_orderings", lambda: BoundedMemo(0))
    monkeypatch.setattr(runs, "_shared_metrics", lambda: BoundedMemo(0))
    drawn = []
    draw = release.drawn
    monkeypatch.setattr(release, "drawn", lambda od, spec, **rest: drawn.append(spec.mechanism)
                        or draw(od, spec, **rest))
    results = runs.releases(settings, only=("rmse",))
    released = {key: result.released for key, result in results.items()}
    pairs = runs.orderings(settings, released, 100)
    scored = runs.releases(settings, held=results)
    assert sorted(drawn) == ["hm", "laplace"]
    for key in released:
        assert scored[key].released is released[key]
        assert np.array_equal(pairs[key]["released"], released[key][pairs[key]["cell"]])
        assert "kendall_tau" in scored[key].metrics and "kendall_tau" not in results[key].metrics
