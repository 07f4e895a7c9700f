"""AppTest of the Plan & publish page: closed-form answers at once and equal to dpcore's,
searched answers behind Find with the sentence, the curve's markers, baselines labelled not DP,
and the ε ruler."""

import math
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore import datasets, planner
from tests.plotly_spec import figure, traces, values

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Plan_and_publish.py")


@pytest.fixture(autouse=True)
def keep_main_module():
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def plan_page(**query) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=240)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_closed_form_answers_at_once_and_match_dpcore():
    at = plan_page(mech=["laplace", "grr", "suppression"], pp="base", target="rmse")
    assert not [b for b in at.button if b.key == "plan_find"]
    sentence = at.markdown[0].value
    expected = planner.closed_form("laplace", {"neighbours": "substitution"},
                                   datasets.load("ireland_county").to_dense(),
                                   planner.Target("rmse", 5.0)).epsilon
    assert f"{expected:.3g}".replace(".", "\\.") in sentence
    assert "not DP" in sentence
    table = at.dataframe[0].value
    row = table.set_index("Mechanism").loc["Small-cell suppression (not DP)"]
    assert row["Guarantee"] == "not DP" and row["ε needed"] == "— (not DP)"
    fig = figure(at, "against ε")
    (laplace,) = traces(fig, "Laplace")
    stars = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == "star"]
    assert len(stars) == 2  # Laplace and GRR; the baseline has no ε
    assert math.isclose(float(values(stars[0]["x"])[0]), expected, rel_tol=1e-9)
    (baseline,) = traces(fig, "Small-cell suppression (not DP)")
    assert baseline["line"]["dash"] == "dash"


def test_search_runs_behind_find_and_names_the_answer():
    at = plan_page(mech=["laplace", "cell_key"])
    at.number_input(key="kept_widget_plan_trials").set_value(5).run()
    at.button(key="plan_find").click().run()
    assert not at.exception, at.exception
    sentence = at.markdown[0].value
    assert sentence.startswith("**Laplace needs ε ≈") and "GEH" in sentence
    table = at.dataframe[0].value
    assert table["How"].tolist() == [planner.SEARCH, planner.NOT_DP_ANY]
    assert "(" in table["Pass rate (95 % CI)"][0]
    beside = at.dataframe[1].value
    assert len(beside) == 4 and (beside["Guarantee"] == "not DP").all()
    ruler = figure(at, "ε ruler")
    assert any("Census" in str(t.get("hovertext")) for t in ruler["data"])
    # Coming back to the same settings shows the answer without searching again.
    at.run()
    assert at.markdown[0].value == sentence


def test_baseline_caption_in_sidebar():
    at = plan_page(mech=["rounding"])
    assert any("not differentially private" in c.value for c in at.sidebar.caption)
