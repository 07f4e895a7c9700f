"""AppTests of the zone choropleth (Flow map) and the OD heat map (Explore) on every bundled
dataset and on an upload with coordinates (anywhere in the world, hostile zone names)."""

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import heatmap
from tests.app_pages import run_page
from tests.plotly_spec import figure, values
from ui.components import state
from ui.maps import layers as maps, leaflet_assets

ROOT = Path(__file__).resolve().parent.parent
FLOW_MAP, EXPLORE = str(ROOT / "pages" / "4_Flow_map.py"), str(ROOT / "pages" / "2_Explore.py")
HEAT = "Origins × destinations"
EVIL = "<img src=x onerror=alert(1)>"
URL = re.compile(r"https?://[^\s\"'<>)\\]+")


@pytest.fixture(autouse=True)
def keep_main_module():
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def tokyo_upload() -> ODMatrix:
    """Four zones around Tokyo (far from the bundled data), one with a hostile name."""
    zones = ZoneSet.from_ids(["a", "b", "c", "d"], labels=[EVIL, "=HYPERLINK(1)", "Chiyoda", "Koto"],
                             lat=[35.69, 35.66, 35.72, 35.64], lon=[139.70, 139.75, 139.80, 139.82])
    counts = np.array([[400, 50, 30, 10], [60, 300, 20, 5], [15, 25, 200, 40], [8, 12, 30, 150]])
    return ODMatrix.from_dense("tokyo", zones, zones, counts.reshape(-1))


def open_page(page: str, upload: ODMatrix | None = None, **query) -> AppTest:
    """The page with these URL parameters, on ``upload`` (as this session's upload) if given."""
    if upload is None:
        return run_page(page, query, None, {}, 180)
    return run_page(page, query, state.UPLOADED, {state.UPLOADED_MATRIX: upload,
                                                  state.UPLOADED_FILENAME: "upload.csv"}, 180)


def map_script(at: AppTest) -> str:
    [found] = [c for c in at.get("component_instance")
               if c.proto.component_name == "streamlit_folium.st_folium"]
    args = json.loads(found.proto.json_args)
    assert args["js_links"] == [leaflet_assets.JS_URL]
    for part in ("script", "header", "html"):
        assert URL.findall(args[part]) == [], part  # background drawn in: no third party
    return args["script"]


def legends(at: AppTest) -> str:
    """The map's legends, drawn on the page under the map (not over it)."""
    return " ".join(block.proto.body for block in at.get("html")
                    if "flow-legend" in block.proto.body)


def area_features(script: str) -> list[dict]:
    """The zone-area GeoJSON features embedded in the map's script."""
    found = []
    for match in re.finditer(r'_add\((\{"features".*?\})\);\n', script):
        data = json.loads(match.group(1))
        found += [f for f in data["features"] if "value" in f.get("properties", {})]
    return found


@pytest.mark.parametrize("dataset, zones", [("toy_town", 7), ("ireland_county", 31),
                                            ("ireland_ed", 3126)])
def test_choropleth_colours_every_placed_zone_on_the_background(dataset, zones):
    at = open_page(FLOW_MAP, dataset=dataset, mech=["laplace"], zone_colour="residents",
                   zone_value="error")
    script = map_script(at)
    assert maps.LAND in script  # the Natural Earth land under the map
    features = area_features(script)
    assert len(features) == zones
    assert all(f["geometry"]["type"] in ("Polygon", "MultiPolygon") for f in features)
    assert "Zone areas: Residents, error (released − true)" in legends(at)
    assert "In commuters (approximate areas)" in legends(at)
    assert any("Zone areas are approximate" in c.value for c in at.caption)


def test_choropleth_values_follow_the_choice_and_the_url():
    at = open_page(FLOW_MAP, dataset="toy_town", mech=["laplace"], zone_colour="self_containment",
                   zone_value="relative")
    assert at.selectbox(key="kept_widget_flowmap_areas").value == "self_containment"
    assert "Self-containment, relative error" in legends(at)
    at.radio(key="kept_widget_flowmap_areas_value").set_value("true").run()
    assert at.query_params["zone_value"] == "true"
    assert "Zone areas: Self-containment, true" in legends(at)
    assert "Self-containment, true: " in map_script(at)  # each area's hover text
    at.selectbox(key="kept_widget_flowmap_areas").set_value("").run()
    assert area_features(map_script(at)) == []  # points only
    assert at.query_params["zone_colour"] == ""


def test_choropleth_of_an_upload_anywhere_is_escaped_and_session_only():
    at = open_page(FLOW_MAP, upload=tokyo_upload(), mech=["laplace"], zone_colour="jobs",
                   zone_value="true")
    script = map_script(at)
    features = area_features(script)
    assert len(features) == 4
    assert "<img" not in script and "&amp;lt;img" not in script
    assert any("&lt;img src=x onerror=alert(1)&gt;" in f["properties"]["name"] for f in features)
    assert maps.LAND in script  # Japan's land, from the same bundled file
    memo = at.session_state["run_session_memo"]["entries"]
    assert any(name == "zone_areas" for name, _ in memo)  # this session's memo, nowhere else


@pytest.mark.parametrize("dataset, shape", [("toy_town", (7, 8)), ("ireland_county", (31, 35)),
                                            ("ireland_ed", (31, 35))])
def test_heat_map_true_released_difference_on_every_dataset(dataset, shape):
    at = open_page(EXPLORE, dataset=dataset, mech=["laplace"], tab="Heat map")
    spec = figure(at, HEAT)
    traces = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(traces) == 3
    true, released, difference = (values(t["z"]) for t in traces)
    assert true.shape == shape
    np.testing.assert_allclose(difference, released - true)
    if dataset == "ireland_ed":  # too many zones: the parent level by default, explained
        assert any("Rolled up to the parent zones" in c.value for c in at.caption)
        assert true.sum() == datasets.load(dataset).n


def test_heat_map_busiest_block_and_log_scale_from_the_url():
    at = open_page(EXPLORE, dataset="ireland_ed", mech=["laplace"], tab="Heat map",
                   heat_view="busiest", heat_n="20", heat_log="true")
    spec = figure(at, HEAT)
    true = values(spec["data"][0]["z"])
    assert true.shape == (20, 20)
    assert true.max() <= np.log10(1 + datasets.load("ireland_ed").counts.max()) + 1e-9
    assert spec["layout"]["coloraxis"]["colorbar"]["ticktext"][:3] == ["0", "1", "10"]
    assert any("busiest 20 origins" in c.value for c in at.caption)
    at.radio(key="kept_widget_explore_heatmap_choice").set_value(heatmap.PARENT).run()
    assert at.query_params["heat_view"] == heatmap.PARENT


def test_heat_map_of_an_upload_escapes_names():
    at = open_page(EXPLORE, upload=tokyo_upload(), mech=["laplace"], tab="Heat map")
    spec = figure(at, HEAT)
    text = json.dumps(spec)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    ticks = spec["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == "&lt;img src=x onerror…" or ticks[0].startswith("&lt;img")
