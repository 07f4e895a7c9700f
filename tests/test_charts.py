"""The house style of every chart (ui.components.charts): readable log axes, one colour + marker + dash per
series, a legend that stays short, and a text alternative (the data) one click away."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms
from tests.plotly_spec import figures
from ui.components import charts, safe

EXPLORE = str(Path(__file__).resolve().parent.parent / "pages" / "2_Explore.py")
KEYS = ["laplace", "stability_histogram", "grr", "oue", "olh", "hm"]  # the default six


def test_log_axes_label_decades_and_leave_the_steps_between_unlabelled():
    axis = charts.log_axis([0.3, 2.0], np.array([40.0, 9_000.0]))
    assert axis["type"] == "log" and axis["dtick"] == 1  # 0.1, 1, 10, 100, 1000, 10000
    assert axis["minor"]["dtick"] == "D1" and axis["minor"]["ticks"] == "outside"
    assert "showticklabels" not in axis["minor"]  # plotly never labels minor ticks
    assert "tickformat" not in axis      # below 1, "~s" would read 300m for 0.3
    within = charts.log_axis([2.0, 3.0, 8.0])
    # one decade: plotly's own steps, in the one format of whole counts (2k, not 2000, 10k)
    assert within == {"type": "log", "tickformat": "~s"}
    counts = charts.log_axis([100, 1000, 10_000, 2.7e6])
    assert counts["tickformat"] == "~s" and counts["dtick"] == 1   # 100, 1k, 10k, 1M


def test_curves_leave_zero_means_off_a_log_axis_and_say_so():
    frame = summary().assign(mean=lambda f: np.where(f["epsilon"] == 0.5, 0.0, f["mean"]),
                             low=lambda f: f["mean"] - 1)
    fig = charts.curves(frame, "epsilon", "t", "ε (privacy budget)", "RMSE",
                        log_y=True)
    for trace in fig.data:
        y = np.asarray([np.nan if v is None else v for v in (() if trace.y is None else trace.y)],
                       dtype=float)
        assert (y[np.isfinite(y)] > 0).all(), trace.name     # nothing at or below 0
        if trace.fill == "toself":
            assert 0.5 not in list(trace.x)                    # no band at the dropped point
    note = charts.not_on_log_axis(frame, "epsilon", "ε (privacy budget)")
    assert note.startswith("Not drawn on the log scale") and "at ε = 0.5" in note
    assert charts.not_on_log_axis(summary(), "epsilon", "ε") is None


def summary(style: str | None = None) -> pd.DataFrame:
    rows = [dict(mechanism=key, epsilon=e, mean=1.0, low=0.9, high=1.1, trials=3,
                 **({style: variant} if style else {}))
            for key in KEYS for e in (0.5, 1, 5)
            for variant in (["Base", "Base-Pos", "Base-Cut"] if style else [None])]
    return pd.DataFrame(rows)


def test_every_log_axis_goes_through_the_one_helper():
    frame = pd.DataFrame({"rank": [1, 2], "commute": ["a → b", "c → d"], "true": [5, 500],
                          "mechanism": ["laplace"] * 2, "released": [3.0, 700.0],
                          "error": [-2.0, 200.0]})
    bars = charts.top_bars(frame, "t", log_y=True).to_plotly_json()["layout"]["yaxis"]
    times = pd.DataFrame({"mechanism": ["laplace", "hm"], "scenario": ["x", "x"],
                          "seconds": [0.001, 2.0], "releases": [3, 3]})
    runtime = charts.runtime_bars(times, "t").to_plotly_json()["layout"]["yaxis"]
    curves = charts.curves(summary().assign(mean=lambda f: f["epsilon"] ** -2), "epsilon", "t",
                           "ε", "RMSE", log_y=True).to_plotly_json()["layout"]["yaxis"]
    pairs = {"laplace": pd.DataFrame({"true_rank": np.arange(1, 301),
                                      "released_rank": np.arange(1, 301), "true": 1.0,
                                      "released": 1.0, "released_zero": False})}
    scatter = charts.rank_scatter(pairs, np.array(["x"] * 300), "t", log_axes=True)
    ranks = scatter.to_plotly_json()["layout"]["xaxis"]
    for axis in (bars, runtime, curves, ranks):
        assert axis["type"] == "log" and axis["dtick"] == 1 and axis["minor"]["dtick"] == "D1"


def drawn(fig) -> list[dict]:
    return [t for t in fig.to_plotly_json()["data"] if t.get("x") is not None
            and t.get("x") != (None,) and list(t.get("x")) != [None] and t.get("fill") != "toself"]


def test_each_series_has_its_own_colour_marker_and_dash():
    """Coinciding lines stay visible: no two mechanisms share colour, marker or dash."""
    fig = charts.curves(summary(), "epsilon", "t", "ε", "RMSE")
    lines = drawn(fig)
    assert len(lines) == len(KEYS)
    for part in (lambda t: t["line"]["color"], lambda t: t["marker"]["symbol"],
                 lambda t: t["line"]["dash"]):
        assert len({part(t) for t in lines}) == len(KEYS)


@pytest.mark.parametrize("style", [None, "postprocess"])
def test_legends_stay_short(style):
    """Six mechanisms × three post-processings with theory lines drew 18 or 12 legend entries;
    now a key: one per mechanism, one per style, one for all theory lines."""
    theory = pd.DataFrame([dict(mechanism=key, x=e, value=1.0) for key in KEYS
                           for e in (0.5, 1, 5)])
    fig = charts.curves(summary(style), "epsilon", "t", "ε", "RMSE", style=style, theory=theory)
    entries = [t["name"] for t in fig.to_plotly_json()["data"] if t.get("showlegend", True)]
    assert len(entries) == len(KEYS) + (3 if style else 0) + 1
    assert entries[:len(KEYS)] == [charts.escape(mechanisms.get(k).name) for k in KEYS]
    assert entries[-1].startswith("Theory")


def test_every_chart_has_its_data_one_click_away():
    at = AppTest.from_file(EXPLORE, default_timeout=120)
    at.query_params["mech"] = ["laplace", "grr"]
    at.query_params["tab"] = "Ordering"
    at.run()
    assert not at.exception
    toggles = [t for t in at.toggle if t.label == charts.DATA_BEHIND]
    assert len(toggles) == len(figures(at)) >= 2
    tables = len(at.dataframe)
    toggles[0].set_value(True).run()
    assert len(at.dataframe) == tables + 1
    assert list(at.dataframe[0].value.columns)[:2] == ["rank", "commute"]  # the bars' data


def test_wrapped_tables_show_uploaded_names_as_text_not_markdown():
    """st.table renders its cells and headers as Markdown: a zone named like a link stays text."""
    def page():
        import pandas as pd

        from ui.components import charts
        charts.wrapped_table(pd.DataFrame({"commute [x](http://evil.example)": [
            "[click](http://evil.example) **bold** :red[red] <img src=x>"], "count": [1234]}))

    at = AppTest.from_function(page).run()
    assert not at.exception
    table = at.table[0].value
    header, cell, count = table.columns[0], table.iloc[0, 0], table.iloc[0, 1]
    hostile = "[click](http://evil.example) **bold** :red[red] <img src=x>"
    assert cell == safe.markdown(hostile)
    assert cell.replace("\\", "").replace("\u200b", "") == hostile   # shown as typed
    assert header == safe.markdown("commute [x](http://evil.example)")
    assert re.fullmatch(r"(\\[^\w\s]|[\w \u200b])*", cell)   # every punctuation mark escaped
    assert count.replace("\\", "") == "1,234"


def test_long_labels_wrap_escaped_and_end_in_an_ellipsis_when_cut():
    """Issue 42: plotly never wraps, so a legend entry ran past a phone's figure."""
    label = charts.wrap("Generalised randomised response (direct encoding) (95 % interval: "
                        "normal approx.)", 30)
    lines = charts.lines_of(label)
    assert len(lines) == 3 and all(len(line) <= 30 for line in lines)
    assert " ".join(lines) == ("Generalised randomised response (direct encoding) (95 % "
                               "interval: normal approx.)")
    cut = charts.lines_of(charts.wrap("<b>x</b> " + "word " * 40, 20, lines=2))
    assert cut[0] == "&lt;b&gt;x&lt;/b&gt; word word" and cut[1].endswith("…")
    assert len(cut) == 2 and len(cut[1]) == 20
    assert charts.lines_of(charts.wrap("A" * 50, 20)) == ["A" * 19 + "…"]
    # a legend's rows count the lines of its tallest entry
    assert charts._legend_rows([{"name": "a<br>b<br>c"}, {"name": "d"}]) == 3
    assert charts.wrap_title("Commute (origin → destination), by true rank") == (
        "Commute (origin → destination), by<br>true rank")
