"""AppTest of the Places page: the planner's analyses true vs each release, with the 95 %
intervals of dpcore.analyses, the verdicts, the charts, the private download, and messages (never
tracebacks) where the data cannot answer."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore import mechanisms, release, seeding
from dpcore.analyses import answers, intervals, selection as sel, shares, simulated, synthesized
from dpcore.data import datasets, importers
from tests.app_pages import run_page
from tests.downloads import Downloads, private_csv
from tests.plotly_spec import figures, values
from tests.test_app_explore import hostile_upload
from tests.test_app_flowmap import released_like_the_page
from ui.components import charts, state

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "2_Places.py")
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def places(query: dict, dataset="ireland_county", session=None):
    return run_page(PAGE, query, dataset, session or {})


def answers_table(at) -> pd.DataFrame:
    """The table of every answer (the last dataframe on the page)."""
    return at.dataframe[-1].value


def bar_chart(at) -> dict:
    (fig,) = [f for f in figures(at) if f["data"][0]["type"] == "bar"]
    return fig


def test_county_flows_are_dpcores_answers_with_their_intervals_and_verdicts():
    """Inflow/outflow/… of Dublin City at ε = 1 on the Base release: the page's released values
    and intervals are dpcore.analyses' on the seed's release (HM's closed form too); top-k says it
    has no interval; the verdict follows the tolerance typed."""
    at = places({"mech": ["laplace", "grr", "hm", "topk"], "pp": "base",
                 "places_sel_zones": ["Dublin City"], "tolerance": "0.5"})
    od = datasets.load("ireland_county")
    table = answers_table(at)
    queries = answers.flows(od, sel.zones(od, ["Dublin City"]))
    for key in ("laplace", "grr", "hm"):
        truth, released = released_like_the_page(od, key, post="base")
        rule = intervals.Interval(key, mechanisms.build(key, epsilon=1.0), "base", n=od.n,
                                  d=od.domain_size)
        expected = answers.evaluate(queries, truth, released, rule)
        shown = table[table["key"] == key].reset_index(drop=True)
        for column in ("true", "released", "low", "high"):
            assert np.allclose(shown[column], expected[column]), (key, column)
        error = (shown["released"] - shown["true"]).abs()
        assert list(shown["within tolerance"]) == list(
            np.where(error <= 0.005 * shown["true"], "yes", "no")), key
        assert np.allclose(shown["relative error (%)"],
                           100 * (shown["released"] - shown["true"]) / shown["true"])
    topk = table[table["key"] == "topk"]
    assert topk["low"].isna().all() and set(topk["interval holds the truth"]) == {"no interval"}
    text = "\n".join(m.value for m in at.markdown)
    assert "within ±0.5 %" in text and "no interval" in text
    fig = bar_chart(at)
    laplace = next(t for t in fig["data"] if t["name"].startswith("Laplace"))
    assert "closed form" in laplace["name"]
    ours = table[table["key"] == "laplace"]
    assert np.allclose(values(laplace["error_y"]["array"]), ours["high"] - ours["released"])
    topk_trace = next(t for t in fig["data"] if "no interval" in t["name"])
    assert np.isnan(values(topk_trace["error_y"]["array"]).astype(float)).all()
    assert fig["layout"]["yaxis"]["title"]["text"] == "Commuters (people)"


def test_simulated_intervals_where_no_closed_form_holds():
    """HCMS after Norm has no closed form: the page shows dpcore's interval simulated on a public
    stand-in of the same release, and the legend says how it was obtained."""
    at = places({"mech": ["hcms"], "pp": "norm", "places_sel_zones": ["Dublin City"]})
    od = datasets.load("ireland_county")
    truth, released = released_like_the_page(od, "hcms", post="norm")
    spec = release.ReleaseSpec("hcms", 1.0, (), ("norm",))
    expected = answers.evaluate(answers.flows(od, sel.zones(od, ["Dublin City"])), truth,
                                released, simulated.rule(od, spec, released))
    shown = answers_table(at).reset_index(drop=True)
    for column in ("released", "low", "high"):
        assert np.allclose(shown[column], expected[column]), column
    assert (shown["method"] == simulated.METHOD).all()
    names = [trace["name"] for trace in bar_chart(at)["data"]]
    assert any("(simulated on a public stand-in, 199 draws, not a guarantee)" in name
               for name in names), names


def test_distance_histogram_and_direction_rose_on_the_county(monkeypatch):
    """Distance bands (a bar histogram with km on its axis) add up to the selection's workers;
    the direction rose draws the 8 sectors; the chart's CSV is marked not for publication."""
    downloads = Downloads(monkeypatch)
    at = places({"analysis": "distance", "places_sel_zones": ["Meath"], "pp": "base"})
    table = answers_table(at)
    od = datasets.load("ireland_county")
    jobs = answers.evaluate(answers.flows(od, sel.zones(od, ["Meath"])), od.to_dense())
    laplace = table[table["key"] == "laplace"]
    assert laplace["true"].sum() == jobs.set_index("analysis").loc["jobs", "true"]
    fig = bar_chart(at)
    assert "km" in fig["layout"]["xaxis"]["title"]["text"]
    csv = private_csv(downloads.by_key(at, "places_bars_csv"))
    assert b"0\xe2\x80\x9310 km" in csv   # "0–10 km"

    at = places({"analysis": "direction", "places_sel_zones": ["Meath"], "places_side": "home"})
    (rose,) = [f for f in figures(at) if f["data"][0]["type"] == "barpolar"]
    assert {t["type"] for t in rose["data"][1:]} == {"scatterpolar"}
    assert list(rose["data"][0]["theta"]) == list(answers.COMPASS)
    assert rose["layout"]["polar"]["radialaxis"]["title"]["text"] == "Commuters (people)"
    assert len(rose["data"]) == 1 + 6   # the truth and the six default mechanisms


def test_an_upload_without_positions_gets_messages_and_escaped_names(monkeypatch):
    """Distance, direction and a radius need positions: a message, no traceback. The other
    analyses answer, with zone names escaped in the chart's ticks and hover text, and the table's
    download is marked not for publication and formula-safe."""
    downloads = Downloads(monkeypatch)
    session = {state.UPLOADED_MATRIX: hostile_upload(), state.UPLOADED_FILENAME: "h.csv"}
    for query in ({"analysis": "distance"}, {"analysis": "direction"},
                  {"places_sel_how": "radius"}):
        at = places(query, state.UPLOADED, session)
        assert any("positions" in w.value for w in at.warning), query
        assert not at.get("plotly_chart"), query
    at = places({"analysis": "destination", "mech": ["laplace"]}, state.UPLOADED, session)
    spec = str(figures(at))
    assert "<img" not in spec and "&lt;img src=x onerror=alert(1)&gt;" in spec
    assert len(answers_table(at)) == 3
    table = pd.read_csv(io.BytesIO(private_csv(downloads.by_key(at, "places_all_csv"))))
    assert "'=HYPERLINK(1)" in set(table["part"]) and "=HYPERLINK(1)" not in set(table["part"])


def test_an_upload_with_positions_gets_distance_direction_and_a_radius():
    """The long file with each zone's latitude and longitude, imported as the Data page does:
    distance bands answer with their intervals and add up to the selection's jobs, the rose
    draws the 8 sectors, and a radius selects the zones within it (Maynooth: Celbridge 5 km and
    Leixlip 7 km away; Naas 18 km and Dublin City 22 km are outside 10 km)."""
    result = importers.import_od((FIXTURES / "long_coordinates.csv").read_bytes(),
                                 "long_coordinates.csv")
    od = result.matrix
    session = {state.UPLOADED_MATRIX: od, state.UPLOADED_FILENAME: "long_coordinates.csv"}
    base = {"mech": ["laplace"], "pp": "base", "places_sel_zones": ["Dublin City"]}
    at = places({**base, "analysis": "distance"}, state.UPLOADED, session)
    table = answers_table(at)
    jobs = answers.evaluate(answers.flows(od, sel.zones(od, ["Dublin City"])), od.to_dense())
    assert table["true"].sum() == jobs.set_index("analysis").loc["jobs", "true"] > 0
    assert table["low"].notna().all() and (table["low"] <= table["released"]).all() \
        and (table["released"] <= table["high"]).all()
    assert "km" in bar_chart(at)["layout"]["xaxis"]["title"]["text"]
    assert not at.warning
    at = places({**base, "analysis": "direction"}, state.UPLOADED, session)
    (rose,) = [f for f in figures(at) if f["data"][0]["type"] == "barpolar"]
    assert list(rose["data"][0]["theta"]) == list(answers.COMPASS)
    at = places({**base, "places_sel_how": "radius", "places_sel_around": "Maynooth",
                 "places_sel_km": "10"}, state.UPLOADED, session)
    assert set(answers_table(at)["selection"]) == {"within 10 km of Maynooth"}
    inside = sel.radius(od, 10, zone="Maynooth")
    assert sorted(od.origins.ids[inside.origins]) == ["Celbridge", "Leixlip", "Maynooth"]


def test_a_parent_on_data_without_parents_is_a_message():
    at = places({"places_sel_how": "parent"})
    assert any("no parent areas" in w.value for w in at.warning)


def test_ed_parent_flows_and_comparison_with_sparse_intervals():
    """The EDs of Leitrim, sparse OUE and dense Laplace releases: every answer has an interval,
    OUE's says the unnamed empty cells are at their mean; the county comparison draws every
    county."""
    at = places({"mech": ["laplace", "oue"], "pp": "base", "places_sel_how": "parent",
                 "places_sel_parent": "Leitrim"}, "ireland_ed")
    table = answers_table(at)
    assert len(table) == 10 and table["low"].notna().all()
    assert table[table["key"] == "oue"]["method"].str.contains("sparse release").all()
    assert (table["selection"] == "Leitrim").all()
    at = places({"mech": ["laplace"], "pp": "base", "analysis": "comparison"}, "ireland_ed")
    table = answers_table(at)
    assert table["part"].nunique() == 31 and len(table) == 3 * 31
    assert len(bar_chart(at)["data"][0]["x"]) == 15   # the "Zones drawn" default


def test_paired_areas_answer_the_commute_from_a_to_b():
    at = places({"analysis": "paired", "places_a_zones": ["Meath"],
                 "places_b_zones": ["Dublin City"], "mech": ["laplace"]})
    od = datasets.load("ireland_county")
    table = answers_table(at)
    cell = od.to_dense().reshape(od.n_origins, od.n_destinations)[
        od.origins.index_of(["Meath"])[0], od.destinations.index_of(["Dublin City"])[0]]
    assert table["true"].tolist() == [cell] and cell > 0
    assert list(bar_chart(at)["data"][0]["x"]) == ["Meath → Dublin City"]


def shares_table(at) -> pd.DataFrame:
    """The shares' table (the dataframe before the table of every answer)."""
    return at.dataframe[-2].value


def test_shares_beside_flows_and_distance_bands_in_per_cent():
    """Flows: the live-and-work shares of Dublin City; distance: the share under 10 km. The
    page's per cents are dpcore.analyses.shares' on the seed's release ×100; Laplace's carry a
    delta-method interval around the released share, GRR's none (measured short)."""
    od = datasets.load("ireland_county")
    chosen = sel.zones(od, ["Dublin City"])
    for query, asked in (({}, [shares.live_and_work(od, chosen, "work"),
                               shares.live_and_work(od, chosen, "home")]),
                         ({"analysis": "distance"}, [shares.within(od, chosen, "work", 10.0)])):
        at = places({"mech": ["laplace", "grr"], "pp": "base",
                     "places_sel_zones": ["Dublin City"], **query})
        table = shares_table(at)
        assert "**Shares** (per cent)" in "\n".join(m.value for m in at.markdown)
        for key in ("laplace", "grr"):
            truth, released = released_like_the_page(od, key, post="base")
            rule = intervals.Interval(key, mechanisms.build(key, epsilon=1.0), "base", n=od.n,
                                      d=od.domain_size)
            expected = shares.evaluate(asked, truth, released, rule)
            shown = table[table["mechanism"] == charts.name(key)]
            assert len(shown) == len(asked)
            for column in ("true", "released", "low", "high"):
                assert np.allclose(shown[f"{column} (%)"], 100 * expected[column],
                                   equal_nan=True), (key, column)
        laplace = table[table["mechanism"] == charts.name("laplace")]
        assert ((laplace["low (%)"] <= laplace["released (%)"])
                & (laplace["released (%)"] <= laplace["high (%)"])).all()
        assert laplace["method"].str.startswith("delta method").all()
        grr = table[table["mechanism"] == charts.name("grr")]
        assert grr["low (%)"].isna().all() and grr["method"].str.contains("fell short").all()
    assert table["share"].iloc[0] == "Share of its workers' commutes under 10 km"


def test_no_shares_table_for_other_analyses():
    at = places({"analysis": "destination", "mech": ["laplace"],
                 "places_sel_zones": ["Dublin City"]})
    assert len(at.dataframe) == 1
    assert "**Shares**" not in "\n".join(m.value for m in at.markdown)


def test_onthemap_shows_its_synthetic_answer_and_the_debiased_estimate_with_its_interval():
    """OnTheMap's rows keep the synthetic answer (biased, no interval) and add the debiased
    estimate its interval is around — dpcore.analyses.synthesized's on the seed's release; the
    chart draws both, the verdict says which is which; Laplace's rows have no estimate."""
    at = places({"mech": ["onthemap", "laplace"], "pp": "base",
                 "places_sel_zones": ["Dublin City"]})
    od = datasets.load("ireland_county")
    mechanism = release.check(release.ReleaseSpec("onthemap", 1.0), od)
    truth = od.to_dense()
    released = mechanism.release(truth, seeding.generator(0, "release", "onthemap", 1.0, 0))
    expected = answers.evaluate(answers.flows(od, sel.zones(od, ["Dublin City"])), truth,
                                released, synthesized.rule(od, mechanism, released))
    table = answers_table(at)
    shown = table[table["key"] == "onthemap"]
    for column in ("released", "estimate", "low", "high"):
        assert np.allclose(shown[column], expected[column]), column
    assert table.loc[table["key"] == "laplace", "estimate"].isna().all()
    names = [trace["name"] for trace in bar_chart(at)["data"]]
    assert any("synthetic answer, no interval" in n for n in names)
    assert any("debiased" in n for n in names)
    said = "\n".join(m.value for m in at.markdown)
    assert "its synthetic answers (what OnTheMap users read) are biased" in said
