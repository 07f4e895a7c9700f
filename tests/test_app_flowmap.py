"""AppTest of the flow map page: the generated Leaflet code (layers, links), filters and views.

A st_folium map is a ``component_instance`` whose ``json_args`` hold the generated Leaflet script,
header and HTML and the script/style links the component will load: they must point to the app
itself only (the opt-in basemap apart), and the number of flow layers must match the style groups
dpcore's selection implies.
"""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms, seeding
from dpcore.data import datasets, importers, schematic
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import flows
from dpcore.mechanisms import postprocess
from ui.components import controls, state
from tests import app_pages
from tests.app_pages import shown_table as listed_table
from ui.maps import flowmap, layers as maps, leaflet_assets

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "4_Flow_map.py")
URL = re.compile(r"https?://[^\s\"'<>)\\]+")
EVIL = '<img src=x onerror=alert(1)>'
TEMPLATE = '{{ "inj" ~ "ected" }}{% raw %}'


def maps_of(at: AppTest) -> list[dict]:
    """The arguments of every st_folium component on the page."""
    found = [c for c in at.get("component_instance")
             if c.proto.component_name == "streamlit_folium.st_folium"]
    return [json.loads(c.proto.json_args) for c in found]


def flow_layers(args: dict) -> int:
    return args["script"].count("L.polyline(")


def shown_table(at: AppTest):
    return at.dataframe[-1].value


def released_like_the_page(od: ODMatrix, key="laplace", epsilon=1.0, seed=0, post="base_pos"):
    """The release the shared controls make by default (see ui.components.runs): own stream per mechanism."""
    true = od.to_dense()
    rng = seeding.generator(seed, "release", key, float(epsilon), 0)
    raw = mechanisms.build(key, epsilon=epsilon).release(true, rng)
    return true, postprocess.apply(post, raw, od.n)


def expected_layers(selection: flows.FlowSelection, breaks) -> int:
    classes = flows.width_class(selection.lines["shown"], breaks)
    lines = selection.lines
    bounds = maps.difference_bounds(pd.concat([lines, selection.within]))
    styles = (flows.classify(lines["true"], lines["released"], *bounds)
              if selection.view == flows.DIFFERENCE else [""] * len(classes))
    return len(set(zip(styles, classes)))


def open_page(**session) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def county():
    od = datasets.load("ireland_county")
    return od, *released_like_the_page(od)


def test_default_map_is_offline_with_one_layer_per_width_class(county):
    od, true, released = county
    at = open_page()
    [args] = maps_of(at)
    assert args["js_links"] == [leaflet_assets.JS_URL]
    assert args["css_links"] == [leaflet_assets.CSS_URL]
    for part in ("script", "header", "html"):
        assert URL.findall(args[part]) == [], part
    assert args["returned_objects"] == ["last_object_clicked_tooltip"]  # panning doesn't rerun
    selection = flows.select(od, true, released, view=flows.TRUE, top_k=250,
                             min_km=flows.default_min_km(od))
    breaks = flows.width_breaks(selection.lines["shown"].max())
    assert flow_layers(args) == expected_layers(selection, breaks) <= len(breaks)
    assert any(f"{len(selection.lines)} lines drawn ({flow_layers(args)} grouped layers)"
               in c.value for c in at.caption)
    table = shown_table(at)
    assert (table["shown_as"] == "line").sum() == len(selection.lines) == 250
    assert (table["shown_as"] == "listed, no position").sum() == len(
        selection.unplaced)


def test_difference_view_groups_by_status_and_uses_the_shared_release(county):
    od, true, released = county
    at = open_page()
    at.radio(key="kept_widget_flowmap_view").set_value(flows.DIFFERENCE).run()
    assert not at.exception
    [args] = maps_of(at)
    selection = flows.select(od, true, released, view=flows.DIFFERENCE, top_k=250,
                             min_km=flows.default_min_km(od))
    breaks = flows.width_breaks(selection.lines["shown"].max())
    assert flow_layers(args) == expected_layers(selection, breaks)
    # At the default settings (Laplace, ε = 1, large county flows) the errors are far below
    # 10 %: the classes are fitted to them, so the lines show over, close and under, not grey.
    close, far = maps.difference_bounds(pd.concat([selection.lines, selection.within]))
    assert close < flows.CLOSE
    drawn = flows.classify(selection.lines["true"], selection.lines["released"], close, far)
    assert {flows.OVER, flows.UNDER} <= set(drawn) or {flows.OVER_FAR, flows.UNDER_FAR} <= set(drawn)
    assert (drawn == flows.CLOSE_TO_TRUE).mean() < 0.75
    assert f"Within {close * 100:.3g}% of the truth" in " ".join(
        h.proto.body for h in at.get("html"))  # the legend, beside the map, says the bounds
    table = shown_table(at)
    lines = table[table["shown_as"] == "line"]
    np.testing.assert_allclose(lines["released"], selection.lines["released"])
    labels = flows.status_labels(close, far, short=True)  # what the map's colours say
    assert set(lines["release_effect"]) == {labels[s] for s in drawn}


def test_side_by_side_draws_two_maps_with_shared_widths():
    at = open_page()
    at.radio(key="kept_widget_flowmap_view").set_value("side_by_side").run()
    assert not at.exception
    true_map, released_map = maps_of(at)
    assert true_map["key"] != released_map["key"]
    for args in (true_map, released_map):
        assert args["js_links"] == [leaflet_assets.JS_URL] and flow_layers(args) >= 1
    legend = re.compile(r"border-top:([\d.]+)px solid")
    assert legend.findall(true_map["script"]) == legend.findall(released_map["script"])


def test_basemap_is_opt_in_and_the_only_remote_host():
    at = open_page()
    at.checkbox(key="flowmap_basemap").check().run()
    [args] = maps_of(at)
    hosts = {re.match(r"https?://([^/]+)", u).group(1) for u in URL.findall(args["script"])}
    assert hosts == {"tile.openstreetmap.org", "www.openstreetmap.org"}
    assert args["js_links"] == [leaflet_assets.JS_URL]


def test_zone_from_the_list_filters_flows_and_shows_its_totals(county):
    od, true, released = county
    at = open_page()
    at.selectbox(key="kept_widget_flowmap_zone").set_value("Cavan").run()
    assert not at.exception
    assert any("Commuters of Cavan" in m.value for m in at.markdown)
    totals = at.dataframe[0].value
    expected = flows.zone_totals(od, "Cavan", true, released)
    assert totals["true"].tolist() == [expected.out_true, expected.in_true, expected.within_true]
    np.testing.assert_allclose(totals["released"], [expected.out_released,
                                                    expected.in_released,
                                                    expected.within_released])
    table = shown_table(at)
    assert ((table["origin"] == "Cavan") | (table["destination"] == "Cavan")).all()
    at.radio(key="kept_widget_flowmap_direction").set_value(flows.TO).run()
    assert (shown_table(at)["destination"] == "Cavan").all()
    [args] = maps_of(at)
    assert "#e6550d" in args["script"]  # the chosen zone is ringed
    # one zone's flows are all drawn, short ones too (Galway City and County share a position)
    at.selectbox(key="kept_widget_flowmap_zone").set_value("Galway City").run()
    at.radio(key="kept_widget_flowmap_direction").set_value(flows.EITHER).run()
    lines = shown_table(at).query("shown_as == 'line'")
    assert "Galway County" in set(lines["destination"]) | set(lines["origin"])
    assert len(lines) == len(flows.select(od, true, released, top_k=250, zone="Galway City").lines)
    assert not any("Only flows at least" in c.value for c in at.caption)


def test_minimum_count_rule(county):
    true = county[1]
    at = open_page()
    at.radio(key="kept_widget_flowmap_rule").set_value("min").run()
    at.number_input(key="kept_widget_flowmap_min_count").set_value(5000).run()
    table = shown_table(at)
    assert (table["true"] >= 5000).all()
    short = flows.select(county[0], true, min_count=5000, min_km=5).too_short
    assert short == 2   # Galway City ↔ County (one position); South Dublin ↔ Dublin City (9.5 km) drawn
    assert len(table) == np.count_nonzero(true >= 5000) - short


def test_ed_subset_roll_up_and_the_line_cap():
    at = open_page(**{state.CURRENT_DATASET: "ireland_ed",
                      controls.KEYS["areas"].value: ("Dublin City",)})
    at.radio(key="kept_widget_flowmap_rule").set_value("min").run()
    at.number_input(key="kept_widget_flowmap_min_count").set_value(1).run()
    assert not at.exception
    [args] = maps_of(at)
    assert any("only the largest 1,000 are drawn" in w.value for w in at.warning)
    assert any("1,000 lines drawn" in c.value for c in at.caption)
    assert 1 <= flow_layers(args) <= 6
    at.toggle(key="kept_widget_flowmap_roll_up").set_value(True).run()
    assert not at.exception
    table = shown_table(at)
    assert set(table["origin"]) == {"Dublin City"}   # one county left: no lines, one ring
    assert (table["shown_as"] == "line").sum() == 0
    assert flow_layers(maps_of(at)[0]) == 0


def test_a_failed_release_leaves_the_true_map():
    at = open_page()
    at.radio(key="kept_widget_flowmap_view").set_value(flows.DIFFERENCE).run()
    at.session_state[controls.KEYS["mechanisms"].value] = ("topk",)
    at.session_state[controls.KEYS["postprocess"].value] = "significance_cut"
    at.run()
    assert not at.exception
    assert any("could not run with these settings" in w.value for w in at.warning)
    assert at.radio(key="kept_widget_flowmap_view").options == ["True"]
    [args] = maps_of(at)
    assert flow_layers(args) >= 1 and "#555555" in args["script"]


def test_more_lines_on_request_with_a_warning():
    at = open_page()
    at.checkbox(key="flowmap_more_lines").check().run()
    assert any("Up to 5,000 lines" in w.value for w in at.warning)


def test_uploaded_zone_names_are_inert_in_the_map():
    zones = ZoneSet.from_ids(["a", "b", "c"], labels=[EVIL, TEMPLATE, "C"],
                             lat=[53.0, 53.2, 53.4], lon=[-7.0, -6.8, -6.6])
    upload = ODMatrix.from_dense("evil", zones, zones,
                                 np.array([50, 30, 20, 40, 60, 10, 5, 20, 90]))
    at = open_page(**{state.UPLOADED_MATRIX: upload, state.UPLOADED_FILENAME: "evil.csv",
                      state.CURRENT_DATASET: state.UPLOADED})
    [args] = maps_of(at)
    assert flow_layers(args) >= 1
    for part in ("script", "header", "html"):
        assert "<img" not in args[part] and "injected" not in args[part]
    # The name as inert HTML (braces as character references), inside JSON ("&" as \u0026).
    assert "\\u0026#123;\\u0026#123; \\u0026quot;inj\\u0026quot;" in args["script"]


@pytest.mark.parametrize("example, file_format", [("powscar", "powscar"), ("lodes", "lodes")])
def test_a_file_without_coordinates_draws_its_flows_on_a_schematic_layout(example, file_format):
    # A POWSCAR or LODES file alone once raised folium's AssertionError on this page.
    data = (Path(__file__).parent / "fixtures" / f"{example}.csv").read_bytes()
    od = importers.import_od(data, f"{example}.csv", format=file_format).matrix
    assert schematic.needed(od)
    at = open_page(**{state.CURRENT_DATASET: state.UPLOADED, state.UPLOADED_MATRIX: od,
                      state.UPLOADED_FILENAME: f"{example}.csv"})
    assert any("schematic layout, not geographic" in box.value and "zones file" in box.value
               and "Data" in box.value for box in at.info)
    [args] = maps_of(at)
    assert maps.SCHEMATIC_LABEL in args["script"]
    assert "Natural Earth" not in args["script"] and "control.scale" not in args["script"]
    truth = od.to_dense()
    placed = schematic.place(od)
    selection = flows.select(placed, truth, None, view=flows.TRUE, top_k=250)
    assert len(selection.lines) + len(selection.within) == od.nonzero and len(selection.lines)
    assert flow_layers(args) >= 1
    table = shown_table(at)
    assert (table["shown_as"] == "line").sum() == len(selection.lines)
    assert not (table["shown_as"] == "listed, no position").any()   # all placed


def test_the_schematic_layout_groups_zones_by_parent_largest_first():
    data = (Path(__file__).parent / "fixtures" / "powscar.csv").read_bytes()
    od = importers.import_od(data, "powscar.csv", format="powscar", level="ed").matrix
    table = schematic.positions(od)
    assert np.abs(table[["x", "y"]].to_numpy()).max() == pytest.approx(schematic.SPAN)
    assert len(table) == len(set(od.origins.ids) | set(od.destinations.ids))
    centres = table.attrs["centres"]
    sizes = table.groupby("parent")["size"].sum().sort_values(ascending=False, kind="stable")
    angle = {p: np.arctan2(*centres[p][::-1]) for p in sizes.index}   # clockwise from the top
    clockwise = [(np.pi / 2 - angle[p]) % (2 * np.pi) for p in sizes.index]
    assert clockwise == sorted(clockwise)
    for parent, members in table.groupby("parent"):       # the largest zone at its disc's centre
        largest = members["size"].idxmax()
        assert tuple(members.loc[largest, ["x", "y"]]) == pytest.approx(centres[parent])
    placed = schematic.place(od)
    assert placed.origins.has_coordinates.all() and placed.destinations.has_coordinates.all()
    assert np.array_equal(placed.counts, od.counts) and np.array_equal(placed.rows, od.rows)


def test_the_map_draws_lines_between_zones_and_the_rings_on_request(county):
    """Issue 42: on the national data the top flows were all within-zone rings, covering the
    lines. By default the map draws the lines; the rings are a layer the toggle adds."""
    od, true, released = county
    selection = flows.select(od, true, released, view=flows.TRUE, top_k=250,
                             min_km=flows.default_min_km(od))
    assert len(selection.within) == 31                      # every county has its own commuters
    at = open_page()
    [args] = maps_of(at)
    assert '"tip": "Within ' not in args["script"] and flow_layers(args) > 0
    assert (shown_table(at)["shown_as"] == "listed, same zone").sum() == 31
    assert any("Within one zone (not drawn" in m.value for m in at.markdown)
    assert not any("Rings around a zone" in c.value for c in at.caption)
    # the lists beside the map: HTML tables whose names wrap, the largest 15 of each
    unplaced, within = [listed_table(t) for t in at.table]
    assert unplaced["commute"].tolist() == selection.listing(flows.UNPLACED)["commute"][
        :flowmap.LISTED].tolist()
    assert within["true"].tolist() == [f"{v:,.0f}" for v in selection.within["true"][:15]]
    assert any(f"The largest 15 of {len(selection.unplaced)}" in c.value for c in at.caption)
    at.toggle(key="kept_widget_flowmap_rings").set_value(True).run()
    [args] = maps_of(at)
    assert args["script"].count('"tip": "Within ') == 31
    assert (shown_table(at)["shown_as"] == "ring").sum() == 31
    assert any("Within one zone (rings on the map)" in m.value for m in at.markdown)
    assert any("Rings around a zone" in c.value for c in at.caption)


def test_lines_drawn_by_default_are_long_enough_to_see_and_the_caption_says_so():
    """QA walk of issue 42: the national map said "250 lines drawn", yet none could be seen:
    the largest flows between zones join neighbouring zones, lines shorter than the zones'
    points. By default only lines of at least 3 % of the map's width are ranked and drawn."""
    at = open_page(**{state.CURRENT_DATASET: "ireland_ed"})
    od = datasets.load("ireland_ed")
    assert at.number_input(key="kept_widget_flowmap_min_km").value == flows.default_min_km(od) == 10
    lines = shown_table(at).query("shown_as == 'line'")
    drawn = flows.select(od, od.to_dense(), top_k=250, min_km=10).lines
    assert len(lines) == 250 and lines["origin"].tolist() == drawn["origin_label"].tolist()
    assert flows._lengths_km(od, drawn["cell"].to_numpy()).min() >= 10
    everything = flows.select(od, od.to_dense(), top_k=250)  # without: most are shorter
    assert (flows._lengths_km(od, everything.lines["cell"].to_numpy()) < 10).sum() > 100
    [caption] = [c.value for c in at.caption if "lines drawn" in c.value]
    too_short = flows.select(od, od.to_dense(), min_km=10).too_short
    assert ("Only flows at least 10 km long are ranked and drawn as lines" in caption
            and f"({too_short:,} flows between zones are shorter" in caption)
    at.number_input(key="kept_widget_flowmap_min_km").set_value(0.0).run()   # 0: every flow ranked
    assert not any("Only flows at least" in c.value for c in at.caption)
    lines = shown_table(at).query("shown_as == 'line'")
    assert (lines["true"].to_numpy() == everything.lines["true"].to_numpy()).all()


def widget(name: str) -> str:
    """The key a Flow map control kept in the URL is drawn under (:func:`ui.components.viewstate.kept`)."""
    return "kept_widget_" + name


def flowmap_link(**query) -> AppTest:
    """The page opened by a link carrying ``query``."""
    return app_pages.open_page(PAGE, 60, **query)


def link_notices(at: AppTest) -> list[str]:
    """The notices of values a link gave that were not used, as read (markdown escapes undone)."""
    return [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning
            if w.value.startswith("The link's value")]


def test_a_link_gives_the_maps_own_controls_and_they_draw_what_it_says(county):
    """Issue 42 follow-up: the Flow map's own controls were not in its URL, so a reload or a
    shared link lost them. Every one a link carries is shown and used, and a change is written."""
    od, true, released = county
    at = flowmap_link(dataset="ireland_county", mech="laplace", eps="1", seed="0",
                      view=flows.DIFFERENCE, rule="min", min_count="400", zone="Cavan",
                      direction=flows.TO, size_by="jobs", rings="true", min_km="20")
    assert link_notices(at) == []
    shown = {name: w.value for name, w in (
        (flowmap.VIEW, at.radio(key=widget(flowmap.VIEW))),
        (flowmap.RULE, at.radio(key=widget(flowmap.RULE))),
        (flowmap.MIN_COUNT, at.number_input(key=widget(flowmap.MIN_COUNT))),
        (flowmap.ZONE, at.selectbox(key=widget(flowmap.ZONE))),
        (flowmap.DIRECTION, at.radio(key=widget(flowmap.DIRECTION))),
        (flowmap.SIZE_BY, at.radio(key=widget(flowmap.SIZE_BY))),
        (flowmap.RINGS, at.toggle(key=widget(flowmap.RINGS))),
        (flowmap.MIN_KM, at.number_input(key=widget(flowmap.MIN_KM))))}
    assert shown == {flowmap.VIEW: flows.DIFFERENCE, flowmap.RULE: "min",
                     flowmap.MIN_COUNT: 400, flowmap.ZONE: "Cavan", flowmap.DIRECTION: flows.TO,
                     flowmap.SIZE_BY: "jobs", flowmap.RINGS: True, flowmap.MIN_KM: 20.0}
    expected = flows.select(od, true, released, view=flows.DIFFERENCE, min_count=400,
                            zone="Cavan", direction=flows.TO)
    table = shown_table(at)
    assert len(table) == len(expected.table(True)) > 0
    assert set(table["destination"]) == {"Cavan"}   # only the flows to Cavan
    assert any("Commuters of Cavan" in m.value for m in at.markdown)

    at.selectbox(key=widget(flowmap.ZONE)).set_value(flowmap.ALL_ZONES).run()
    at.radio(key=widget(flowmap.RULE)).set_value("top").run()
    at.number_input(key=widget(flowmap.TOP_K)).set_value(40).run()
    at.toggle(key=widget(flowmap.RINGS)).set_value(False).run()
    assert {name: at.query_params[name] for name in ("zone", "rule", "top_k", "rings",
                                                     "min_km", "view")} == {
        "zone": "", "rule": "top", "top_k": "40", "rings": "false", "min_km": "20",
        "view": flows.DIFFERENCE}
    lines = shown_table(at).query("shown_as == 'line'")
    assert len(lines) == 40 and any("Only flows at least 20 km long" in c.value
                                    for c in at.caption)


def test_a_link_to_a_parent_zone_rolls_up_first():
    """A county is a zone of the rolled-up ED map only: the link's roll_up comes before its zone."""
    at = flowmap_link(dataset="ireland_ed", areas=["Cavan", "Leitrim"], roll_up="true",
                      zone="Leitrim")
    assert link_notices(at) == []
    assert at.toggle(key=widget(flowmap.ROLL_UP)).value is True
    assert at.selectbox(key=widget(flowmap.ZONE)).value == "Leitrim"


def test_a_links_bad_values_are_named_and_the_defaults_used(county):
    """A zone not in the data, a k out of range, a length below 0, a word for a toggle: each is
    one line naming the value and what is valid, never a traceback."""
    at = flowmap_link(dataset="ireland_county", zone="Atlantis<b>", top_k="0", min_km="-3",
                      rings="maybe", rule="most", view="sideways")
    notices = link_notices(at)
    assert len(notices) == 6, notices
    text = " ".join(notices)
    offered = len(flows.zones(county[0], county[1], keep_empty=False))
    assert ("zone=Atlantis<b> is not valid (valid: empty (all zones) or the id of one of "
            f"the {offered} zones offered, e.g. Carlow)") in text and "using empty (All zones) instead" in text
    assert "top_k=0 is not valid (valid: a whole number from 1 to 100000); using 250" in text
    assert "min_km=-3 is not valid (valid: a number from 0 to 100000); using 5" in text
    assert "rings=maybe is not valid (valid: true or false); using false" in text
    assert "rule=most is not valid (valid: one of top, min); using top" in text
    assert "view=sideways is not valid" in text
    assert at.selectbox(key=widget(flowmap.ZONE)).value == flowmap.ALL_ZONES
    assert at.number_input(key=widget(flowmap.TOP_K)).value == 250
    assert at.number_input(key=widget(flowmap.MIN_KM)).value == 5.0
    assert at.toggle(key=widget(flowmap.RINGS)).value is False
    assert at.query_params["top_k"] == "250" and at.query_params["zone"] == ""
    at.run()   # said once: the session now holds the defaults
    assert link_notices(at) == []


def test_the_shortest_line_follows_the_data_unless_the_user_set_it():
    """Its default is 3 % of the map's width (5 km on the counties, 10 km on the EDs): kept in
    the session, a default must not carry over to another dataset; a length the user set does."""
    at = flowmap_link(dataset="ireland_county")
    assert at.number_input(key=widget(flowmap.MIN_KM)).value == 5.0
    at.session_state[state.CURRENT_DATASET] = "ireland_ed"
    at.run()
    assert at.number_input(key=widget(flowmap.MIN_KM)).value == 10.0
    at.number_input(key=widget(flowmap.MIN_KM)).set_value(2.0).run()
    at.session_state[state.CURRENT_DATASET] = "ireland_county"
    at.run()
    assert at.number_input(key=widget(flowmap.MIN_KM)).value == 2.0
    assert at.query_params["min_km"] == "2"
