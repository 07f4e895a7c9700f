"""AppTests of the pages on a huge domain (more cells than a dense release holds): a whole
state's LODES tract file through the Data page, then Explore, Tradeoffs and the Flow map on a
huge sparse matrix, and the national synthetic dataset offered on the Data page."""

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms, release
from dpcore.data import national
from dpcore.evaluation import summaries
from dpcore.mechanisms import sparse_release
from dpcore.mechanisms.count_profile import CountProfile
from dpcore.scoring import ranks
from tests.app_pages import run_page, shown_table
from tests.huge import huge_matrix
from tests.plotly_spec import assert_bars_readable, figure, released_bars, traces, values
from tests.test_sparse_import import lodes_state
from ui.components import controls, state

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "pages"
CAP = "possible commutes would hold"     # the memory guard's message


def page(name: str, **query) -> AppTest:
    """The page on the huge matrix, uploaded in this session."""
    upload = {state.UPLOADED_MATRIX: huge_matrix(), state.UPLOADED_FILENAME: "state_tracts.csv"}
    return run_page(str(PAGES / name), query, state.UPLOADED, upload, timeout=300)


def messages(at: AppTest) -> str:
    return "\n".join(box.value for kind in ("warning", "info", "error", "caption")
                     for box in getattr(at, kind))


def test_a_state_lodes_tract_file_imports_sparse_and_releases_without_a_cap():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["mech"] = ["laplace", "oue"]   # read by the session's first page (issue 42)
    at.switch_page("pages/1_Data.py").run()
    at.selectbox(key=state.UPLOAD_FORMAT).set_value("lodes").run()
    at.selectbox(key=state.level_widget("lodes")).set_value("tract").run()
    at.file_uploader(key=state.UPLOAD_FILE).set_value(("ca_od.csv", lodes_state(),
                                                       "text/csv")).run()
    assert not at.exception, at.exception
    assert not at.error and any("sparse release" in box.value for box in at.info)
    at.button(key=state.USE_UPLOAD).click().run()
    matrix = at.session_state[state.UPLOADED_MATRIX]
    assert matrix.n_origins == 8_000 and not matrix.fits_dense
    at.switch_page("pages/2_Explore.py").run()
    assert not at.exception, at.exception
    assert CAP not in messages(at) and not at.warning
    bars = figure(at, "busiest commutes")
    assert len(bars["data"]) == 3      # true + two releases


def test_explore_shows_the_sparse_releases_and_says_what_it_cannot():
    at = page("2_Explore.py", mech=["laplace", "oue", "hr"], seed="5", tab="True top 10")
    od = huge_matrix()
    text = messages(at)
    assert "no sparse release" in text and "Hadamard response" in text      # refused: why
    assert "approximate" in text and "normal law" in text                  # Laplace's CLT label
    assert CAP not in text
    truth = release.true_values(od)
    result = release.run(od, release.ReleaseSpec("laplace", 1.0, {}, ("base_pos",), 5))
    cells = ranks.top_cells(truth, 30)
    trace = released_bars(figure(at, "busiest commutes"))[mechanisms.get("laplace").name]
    assert np.allclose(values(trace["customdata"])[:, 1], result.released.at(cells))
    table = shown_table(at.table[0])
    expected = ranks.rank_pairs(truth, result.released, 10)["released_rank"].to_numpy()
    assert list(table[table.columns[3]]) == [f"{rank:,}" for rank in expected]
    at.query_params["tab"] = "Heat map"
    at.run()
    assert not at.exception, at.exception
    assert "The heat map" in messages(at) and "64,000,000 possible commutes" in messages(at)


def test_explore_bars_show_the_truth_and_every_release_with_intervals():
    """The national-size path (sparse releases): the default mechanisms' bars, each with its
    95 % interval, on an axis that follows the true counts."""
    at = page("2_Explore.py")
    fig = figure(at, "busiest commutes")
    assert_bars_readable(fig)
    assert len(released_bars(fig)) >= 4
    assert "95 % interval for the true count" in messages(at)


def test_tradeoffs_curves_against_epsilon_on_a_huge_domain():
    at = page("3_Tradeoffs.py", mech=["laplace", "oue"])
    at.text_input(key="kept_widget_tradeoffs_grid").set_value("1, 5")
    at.number_input(key="kept_widget_tradeoffs_trials").set_value(2)
    at.run()
    at.button(key="tradeoffs_epsilon_run").click().run()
    assert not at.exception, at.exception
    fig = figure(at, "against ε (")
    od = huge_matrix()
    for key in ("laplace", "oue"):
        (line,) = traces(fig, mechanisms.get(key).name)
        x, y = values(line["x"]).astype(float), values(line["y"]).astype(float)
        assert list(x) == [1.0, 5.0]
        expected = [np.mean([release.run(od, release.ReleaseSpec(key, e, {}, ("base_pos",), 0,
                                                                 trial)).metrics["rmse"]
                             for trial in range(2)]) for e in (1.0, 5.0)]
        assert np.allclose(y, expected)
        # The closed forms need only the table's distinct counts, n and d, so the theory bound
        # is drawn on a huge domain too, from the sparse matrix alone.
        (bound,) = [t for t in fig["data"] if t.get("name", "").startswith(
            mechanisms.get(key).name) and t["name"].endswith("theory bound")]
        theory = [summaries.theoretical_rmse(mechanisms.build(key, epsilon=e),
                                             CountProfile.of_matrix(od)) for e in (1.0, 5.0)]
        assert np.allclose(values(bound["y"]).astype(float), theory)
    options = at.multiselect(key="kept_widget_tradeoffs_methods").options
    assert len(options) == len(sparse_release.METHODS)      # only those a sparse release has


def test_flow_map_draws_the_top_flows_and_turns_the_zone_colours_off():
    at = page("4_Flow_map.py", mech=["laplace"])
    text = messages(at)
    assert "Colouring zone areas" in text and "No roll-up" in text
    assert "lines drawn" in text
    assert at.selectbox(key="kept_widget_flowmap_zone").options.__len__() <= 1 + 1_000


def test_the_national_dataset_is_made_on_demand(monkeypatch, tmp_path):
    monkeypatch.setenv("DPCORE_CACHE", str(tmp_path))
    small = national.generate(scale=0.02)           # the real generator at a small size
    monkeypatch.setattr(national, "generate", lambda scale=1.0: small)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page("pages/1_Data.py").run()
    at.button(key="national_use").click().run()
    assert not at.exception, at.exception
    assert national.cache_path().exists()
    assert at.session_state[state.CURRENT_DATASET] == national.KEY
    assert any(national.TITLE in box.value for box in at.success)


def test_plan_and_publish_explains_why_a_huge_table_is_not_published():
    at = page("6_Plan_and_publish.py", mech=["laplace"])
    assert "every one of them" in messages(at)
    assert not [b for b in at.button if b.key == "publish_go"]


def test_the_default_mechanisms_on_a_huge_domain_all_run_and_the_left_out_one_is_named():
    at = page("2_Explore.py")
    text = messages(at)
    assert not at.error and "no sparse release" not in text
    assert f"**{mechanisms.get('hm').name}** is left out of the default mechanisms" in text
    shown = tuple(at.multiselect(key="run_widget_mechanisms").value)
    assert shown == tuple(k for k in controls.DEFAULT_MECHANISMS
                          if k not in sparse_release.UNSUPPORTED)
    assert at.session_state["run_mechanisms"] == controls.DEFAULT_MECHANISMS   # not stored


def test_with_many_commuters_the_defaults_also_leave_out_grr_and_say_why(monkeypatch):
    """GRR's sparse release places every report (150 M on the national data, ~25 s): above
    the limit it is left out of the defaults, said, and still there to pick."""
    monkeypatch.setattr(controls, "PER_REPORT_DEFAULT_LIMIT", huge_matrix().n - 1)
    at = page("2_Explore.py")
    text = messages(at)
    assert f"**{mechanisms.get('grr').name}** is left out of the default mechanisms" in text
    assert "places each report" in text and f"{huge_matrix().n:,} commuters" in text
    shown = tuple(at.multiselect(key="run_widget_mechanisms").value)
    assert "grr" not in shown and "hm" not in shown and "oue" in shown
    assert "grr" in at.multiselect(key="run_widget_mechanisms").options or any(
        "Generalised" in option for option in at.multiselect(key="run_widget_mechanisms").options)


def test_explore_s_summary_line_states_the_erased_share_beside_the_rmse():
    """Issue 30: on a huge domain the stability histogram's line gives the share of real commutes
    it erased (its sparse metrics), the RMSE over them beside the all-cells RMSE, and says when it
    erased most of them."""
    at = page("2_Explore.py", mech=["stability_histogram"], eps="0.1", seed="3",
              tab="What happened")
    assert not at.exception, at.exception
    result = release.run(huge_matrix(), release.ReleaseSpec("stability_histogram", 0.1, seed=3),
                         only=summaries.SENTENCE_METRICS)
    erased = result.metrics["erased_share"]
    assert erased > summaries.MOSTLY_ERASED
    line = next(m.value for m in at.markdown if "busiest commutes kept their rank" in m.value)
    assert f"({summaries._percent(erased)} of the real ones) as empty" in line
    assert "RMSE over the real commutes" in line and "over all cells" in line
    assert f"It erased most real commutes ({summaries._percent(erased)})" in line


def test_explore_releases_the_onthemap_synthesizer_sparsely_with_its_caveat():
    """Issue 37: OnTheMap's synthesizer on a huge domain is released by its sparse path (no
    refusal), its caveat (probabilistic DP is not DP; totals exact) beside it, and its bars are
    the pipeline's release."""
    at = page("2_Explore.py", mech=["onthemap"], seed="5", tab="True top 10")
    assert not at.exception, at.exception
    text = messages(at)
    assert not at.error and "no sparse release" not in text
    assert mechanisms.get("onthemap").caveat in text and "not DP" in text
    od = huge_matrix()
    truth = release.true_values(od)
    result = release.run(od, release.ReleaseSpec("onthemap", 1.0, {}, ("base_pos",), 5))
    assert result.sparse and result.approximation is None
    cells = ranks.top_cells(truth, 30)
    trace = released_bars(figure(at, "busiest commutes"))[mechanisms.get("onthemap").name]
    assert np.allclose(values(trace["customdata"])[:, 1], result.released.at(cells))
