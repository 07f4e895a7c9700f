"""AppTest of the Tradeoffs page's "Error against ε on one answer": nothing runs until asked, and
the curves are dpcore's numbers (the releases' RMSE and the closed-form sd)."""

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms, release
from dpcore.analyses import selection as sel, synthesized, tradeoffs
from dpcore.analyses.intervals import Z_NORMAL
from dpcore.data import datasets
from tests.plotly_spec import figure, figures, traces, values

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "3_Tradeoffs.py")
LABEL = "inflow — Dublin City"


def test_answer_error_against_epsilon():
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace", "grr", "hr", "topk"]
    at.query_params["seed"] = "101"
    at.run()
    at.text_input(key="kept_widget_tradeoffs_grid").set_value("1, 5")
    at.number_input(key="kept_widget_tradeoffs_trials").set_value(4)
    at.run()
    assert not at.exception, at.exception
    assert at.multiselect(key="kept_widget_tradeoffs_answer_zones").value == ["Dublin City"]
    at.selectbox(key="kept_widget_tradeoffs_answer").set_value(LABEL).run()
    assert not [f for f in figures(at) if "Error of" in f["layout"]["title"]["text"]]
    at.button(key="tradeoffs_answer_run").click().run()
    assert not at.exception, at.exception
    fig = figure(at, "Error of")

    od = datasets.load("ireland_county")
    truth = release.true_values(od)
    query, part = tradeoffs.choices(od, sel.zones(od, ["Dublin City"]))[LABEL]
    found = tradeoffs.rmse(tradeoffs.experiment(od, truth, query, part,
                                                ["laplace", "grr", "hr", "topk"], (1.0, 5.0), 4,
                                                101))
    theory = tradeoffs.theory(od, truth, query, part, ["laplace", "grr", "hr", "topk"],
                              (1.0, 5.0))
    names = {key: mechanisms.get(key).name for key in ("laplace", "grr", "hr", "topk")}
    for key, name in names.items():
        (line,) = [t for t in traces(fig, name) if t.get("mode") == "lines+markers"]
        expected = found[found.mechanism == key]
        assert np.allclose(values(line["x"]).astype(float), expected["epsilon"])
        assert np.allclose(values(line["y"]).astype(float), expected["rmse"])
    for key in ("laplace", "grr", "hr"):
        name = names[key]
        (dotted,) = traces(fig, f"{name} · theory (closed-form sd)")
        assert np.allclose(values(dotted["y"]).astype(float),
                           theory[theory.mechanism == key]["sd"])
    assert not traces(fig, f"{names['topk']} · theory (closed-form sd)")  # no closed form
    caption = "\n".join(c.value for c in at.caption)
    assert "upper bound" in caption and "HR" in caption   # HR at ε = 1: a bound
    assert fig["layout"]["yaxis"]["title"]["text"] == "RMSE of the answer (commuters)"
    labels = [b.label for b in at.get("download_button")]
    assert any(label.startswith("Every release's answer") and "not for publication" in label
               for label in labels)


def _run(mechanisms_: list[str], label: str) -> AppTest:
    """The page with these mechanisms (seed 101), ε 1 and 5, 4 trials, ``label`` run."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = mechanisms_
    at.query_params["seed"] = "101"
    at.run()
    at.text_input(key="kept_widget_tradeoffs_grid").set_value("1, 5")
    at.number_input(key="kept_widget_tradeoffs_trials").set_value(4)
    at.run()
    at.selectbox(key="kept_widget_tradeoffs_answer").set_value(label).run()
    at.button(key="tradeoffs_answer_run").click().run()
    assert not at.exception, at.exception
    return at


def test_share_within_10_km_against_epsilon_in_percentage_points():
    """The share within 10 km of Dublin City's workers: the releases' RMSE in percentage points,
    the delta method's sd dotted for Laplace only (GRR's share has no interval: no theory)."""
    label = "share within 10 km (%) — workers in Dublin City"
    at = _run(["laplace", "grr"], label)
    fig = figure(at, "Error of")
    assert fig["layout"]["yaxis"]["title"]["text"] == "RMSE of the answer (percentage points)"
    od = datasets.load("ireland_county")
    truth = release.true_values(od)
    query, part = tradeoffs.choices(od, sel.zones(od, ["Dublin City"]))[label]
    found = tradeoffs.rmse(tradeoffs.experiment(od, truth, query, part, ["laplace", "grr"],
                                                (1.0, 5.0), 4, 101))
    theory = tradeoffs.theory(od, truth, query, part, ["laplace", "grr"], (1.0, 5.0))
    for key in ("laplace", "grr"):
        (line,) = [t for t in traces(fig, mechanisms.get(key).name)
                   if t.get("mode") == "lines+markers"]
        assert np.allclose(values(line["y"]).astype(float),
                           found[found.mechanism == key]["rmse"])
    (dotted,) = traces(fig, f"{mechanisms.get('laplace').name} · theory (closed-form sd)")
    assert np.allclose(values(dotted["y"]).astype(float), theory["sd"])
    assert not traces(fig, f"{mechanisms.get('grr').name} · theory (closed-form sd)")


def test_onthemap_raw_answer_and_debiased_estimate_each_with_its_theory():
    """OnTheMap: two series, the raw synthetic answer (dotted: dpcore's √(bias² + variance)) and
    the debiased estimate (dotted: dpcore's sd, the 95 % half-width / 1.96), each solid line the
    releases' RMSE; the caption says which is which."""
    at = _run(["onthemap"], LABEL)
    od = datasets.load("ireland_county")
    truth = release.true_values(od)
    query, part = tradeoffs.choices(od, sel.zones(od, ["Dublin City"]))[LABEL]
    theory = tradeoffs.theory(od, truth, query, part, ["onthemap"], (1.0, 5.0))
    found = tradeoffs.rmse(tradeoffs.experiment(od, truth, query, part, ["onthemap"], (1.0, 5.0),
                                                4, 101))
    law = synthesized.Theory(od, truth, {}, [query])
    fig = figure(at, "Error of")
    name = mechanisms.get("onthemap").name
    for series, key in ((name, "onthemap"), (f"{name} · debiased estimate", tradeoffs.DEBIASED)):
        (line,) = [t for t in traces(fig, series) if t.get("mode") == "lines+markers"]
        assert np.allclose(values(line["y"]).astype(float),
                           found[found.mechanism == key]["rmse"])
        (dotted,) = traces(fig, f"{series} · theory (closed-form sd)")
        assert np.allclose(values(dotted["y"]).astype(float),
                           theory[theory.mechanism == key]["sd"])
    (dotted,) = traces(fig, f"{name} · debiased estimate · theory (closed-form sd)")
    assert np.allclose(values(dotted["y"]).astype(float),
                       [law.half_widths(e)[part] / Z_NORMAL for e in (1.0, 5.0)])
    caption = "\n".join(c.value for c in at.caption)
    assert "the series under its own name is the raw synthetic answer" in caption
    assert f"“{name} · debiased estimate” is the number the Places page gives" in caption
