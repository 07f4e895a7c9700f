"""AppTests of the heavy-hitter sections: Learn's one-phone lesson, Explore's top k found and
Tradeoffs' recall against ε show dpcore's numbers (same seed, same cells), offer their data, and
answer a k the data cannot fill with a message. An upload's names stay inert and its runs stay in
the session."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import heavy_hitters
from dpcore.theory import learn_heavy_hitters
from tests.app_pages import run_page, text
from tests.downloads import Downloads, private_csv
from tests.plotly_spec import figure, traces, values
from ui.components import state
from ui.learn import lessons

PAGES = Path(__file__).resolve().parent.parent / "pages"
EXPLORE, TRADEOFFS, LEARN = (str(PAGES / name) for name in
                             ("2_Explore.py", "3_Tradeoffs.py", "5_Learn.py"))


def metric(at, label: str) -> str:
    (found,) = [m.value for m in at.metric if m.label == label]
    return found


def test_explore_shows_dpcores_runs_at_the_pages_epsilon_and_seed(monkeypatch):
    downloads = Downloads(monkeypatch)
    at = run_page(EXPLORE, {"mech": "laplace", "eps": "2.5", "seed": "7", "hh_k": "8",
                             "tab": "Heavy hitters"},
                  "ireland_county", {})
    county = datasets.load("ireland_county")
    for protocol, name in (("pem", "PEM"), ("treehist", "TreeHist")):
        found = heavy_hitters.find(protocol, county, 2.5, 8, 7)
        score = heavy_hitters.scores(county, found, 8)
        assert metric(at, f"{name}: recall") == f"{score['recall']:.0%}"
        assert metric(at, f"{name}: precision") == f"{score['precision']:.0%}"
        (points,) = traces(figure(at, "The 8 commutes each protocol found"), name)
        assert np.allclose(np.sort(values(points["y"])), np.sort(found.estimates))
        table = pd.read_csv(io.BytesIO(private_csv(
            downloads.by_key(at, f"explore_hh_{protocol}_csv"))))
        expected = heavy_hitters.compare(county, found, 8)
        assert list(table["commute"]) == list(expected["commute"])
        assert (table["status"] == "found").sum() == round(score["recall"] * 8)
    # On the page, a rank or estimate that does not exist reads "—" (with a legend), not None,
    # and every count and rank is in one format: thousands separated (not 218860 beside 221,571).
    for shown in [d.value for d in at.dataframe if "found_rank" in d.value.columns]:
        for column in ("true_count", "true_rank", "found_rank", "estimated_count"):
            assert all(re.fullmatch(r"—|-?\d{1,3}(,\d{3})*", cell) for cell in shown[column]), \
                shown[column]
        assert any(len(cell) > 5 for cell in shown["true_count"])   # county counts ≥ 10,000
    assert any("—: not in the true top 8" in c.value for c in at.caption)


def test_explore_asks_for_a_k_the_data_can_fill():
    at = run_page(EXPLORE, {"mech": "laplace", "hh_k": "60", "tab": "Heavy hitters"},
                  "toy_town", {})
    assert any("only 51 non-empty commutes" in w.value for w in at.warning)
    assert not [m for m in at.metric if m.label.startswith("PEM")]


def test_tradeoffs_recall_curves_after_run_with_the_oracles_beside_them(monkeypatch):
    downloads = Downloads(monkeypatch)
    query = {"mech": "oue", "grid": "1, 4", "trials": "2", "seed": "3"}
    at = run_page(TRADEOFFS, query, "toy_town", {})
    at.button(key="tradeoffs_epsilon_run").click().run()
    at.button(key="tradeoffs_hh_run").click().run()
    assert not at.exception, at.exception
    fig = figure(at, "Recall of the true top 10 against ε")
    toy = datasets.load("toy_town")
    for name, protocol in (("PEM", "pem"), ("TreeHist", "treehist")):
        (curve,) = traces(fig, f"{name} · heavy-hitter protocol")
        expected = [np.mean([heavy_hitters.scores(toy, heavy_hitters.find(
            protocol, toy, e, 10, 3, t), 10)["recall"] for t in range(2)]) for e in (1.0, 4.0)]
        assert np.allclose(values(curve["y"]), expected)
    assert traces(fig, "Optimised unary encoding · frequency oracle, then its top k")
    every = pd.read_csv(io.BytesIO(private_csv(downloads.by_key(at,
                                                                "tradeoffs_hh_every_run_csv"))))
    assert len(every) == 2 * 2 * 2 * 3   # protocols × ε × trials × (recall, precision, CPU s)
    assert every.loc[every["metric"] == "recall", "value"].between(0, 1).all()


def test_tradeoffs_asks_for_a_k_the_data_can_fill():
    at = run_page(TRADEOFFS, {"mech": "oue", "hh_k": "99"}, "toy_town", {})
    assert any("only 51 non-empty commutes" in w.value for w in at.warning)


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_learn_lesson_follows_one_phone_and_the_servers_walk(protocol):
    at = run_page(LEARN, {"lesson": "heavy"}, "ireland_county",
                  {"kept_learn_hh_protocol": protocol})
    county = datasets.load("ireland_county")
    cell = int(county.flat_index[np.lexsort((county.flat_index, -county.counts))[0]])
    report = learn_heavy_hitters.device_report(protocol, county.domain_size, cell, 1.0, 10,
                                               lessons._rng("heavy", protocol, cell, 10, draw=0))
    shown = text(at)
    assert f"**`{report.prefix_bits}`**" in shown
    assert f"bucket {report.prefix_report.bucket}" in shown
    found = heavy_hitters.find(protocol, county, 1.0, 10, 0)
    supported = learn_heavy_hitters.supported_candidates(report, found)
    assert f"This report supports {supported.size:,} of them" in shown
    walk = heavy_hitters.walk(county, found, 10)
    (reach,) = traces(figure(at, "server walks the prefix tree"),
                      "True top 10 still within reach")
    assert np.array_equal(values(reach["y"]), walk["true_top_k_in_reach"])
    recall = heavy_hitters.scores(county, found, 10)["recall"]
    assert f"**{recall:.0%}** of the true top 10" in shown


def test_learn_lesson_on_an_upload_escapes_names_and_keeps_runs_in_the_session():
    names = ["<img src=x onerror=alert(1)>", "[link](http://evil.example)", "Plain", "Other"]
    zones = ZoneSet.from_ids(names)
    upload = ODMatrix.from_pairs("hostile", zones, zones, [0, 0, 1, 2, 2, 3],
                                 [1, 2, 1, 2, 0, 3], [1, 20, 30, 40, 10, 5])
    session = {state.UPLOADED_MATRIX: upload, state.UPLOADED_FILENAME: "x.csv"}
    at = run_page(LEARN, {"lesson": "heavy"}, state.UPLOADED, session)
    assert any("only 6 non-empty commutes" in w.value for w in at.warning)   # k = 10 by default
    at = run_page(LEARN, {"lesson": "heavy"}, state.UPLOADED, {**session, "kept_learn_hh_k": 3})
    shown = text(at)
    assert "This report supports" in shown
    assert not re.search(r"(?<!\\)<img|(?<!\\)\]\(http", shown)
    store = at.session_state["run_session_memo"]["sweeps"]
    assert any(key[0] == "heavy_hitters" for key in store)
