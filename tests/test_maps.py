"""ui.maps.layers and ui.maps.leaflet_assets: offline maps, grouped layers, geometry, escaping, downloads."""

import html
import json
import re

import folium
import numpy as np
import pytest
from scipy.spatial import Delaunay

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import flows
from ui.maps import layers as maps, leaflet_assets

URL = re.compile(r"https?://[^\s\"'<>)]+")
EVIL = '<img src=x onerror=alert(1)></script><script>alert("x")</script>'


def county_release(rng, epsilon=0.2):
    od = datasets.load("ireland_county")
    true = od.to_dense()
    return od, true, mechanisms.build("laplace", epsilon=epsilon).release(true, rng)


def build(od, true, released, view=flows.DIFFERENCE, **options):
    selection = flows.select(od, true, released, view=view, top_k=options.pop("top_k", 300))
    breaks = flows.width_breaks(max(selection.lines["shown"].max(), 1))
    zones = flows.zones(od, true)
    return selection, maps.flow_map(selection, zones, breaks, **options)


def json_text(text: str) -> str:
    """How a string appears inside JSON embedded in the page (Jinja's tojson escaping)."""
    return json.dumps(text)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026").replace("'", "\\u0027")


def polylines(m: folium.Map) -> list[folium.PolyLine]:
    return [child for child in m._children.values() if isinstance(child, folium.PolyLine)]


def geojson(m: folium.Map, name: str) -> dict:
    return next(child.data for child in m._children.values()
                if isinstance(child, folium.GeoJson) and child.layer_name == name)


# ------------------------------------------------------------------------------- no third party
def test_map_loads_only_leaflet_from_the_app_and_no_url_at_all(rng):
    od, true, released = county_release(rng)
    _, built = build(od, true, released)
    page = built.map.get_root().render()
    assert re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", page) == [leaflet_assets.JS_URL]
    assert re.findall(r"<link[^>]*\bhref=\"([^\"]+)\"", page) == [leaflet_assets.CSS_URL]
    assert URL.findall(page) == []
    assert '"preferCanvas": true' in page and "tile_layer" not in page


def test_opt_in_basemap_is_the_only_remote_address(rng):
    od, true, released = county_release(rng)
    _, built = build(od, true, released, basemap=True)
    hosts = {re.match(r"https?://([^/]+)", url).group(1)
             for url in URL.findall(built.map.get_root().render())}
    assert hosts == {"tile.openstreetmap.org", "www.openstreetmap.org"}


def test_standalone_html_inlines_leaflet_and_loads_nothing(rng):
    od, true, released = county_release(rng)
    _, built = build(od, true, released)
    page = maps.standalone_html(built.map)
    assert "<script src" not in page and "<link" not in page
    assert leaflet_assets.inline_js() in page
    assert "url(data:image/png;base64," in page and "url(images/" not in page
    outside_leaflet = page.replace(leaflet_assets.inline_js(), "").replace(
        leaflet_assets.inline_css(), "")  # (Leaflet's own comments cite bug trackers)
    assert URL.findall(outside_leaflet) == []
    with pytest.raises(RuntimeError, match="does not load Leaflet"):
        maps.standalone_html(folium.Map(tiles=None))


# ------------------------------------------------------------------------------ grouped layers
@pytest.mark.parametrize("view", list(flows.VIEWS))
def test_lines_are_grouped_by_style_with_an_arc_and_a_chevron_per_flow(rng, view):
    od, true, released = county_release(rng, epsilon=0.05)
    selection, built = build(od, true, released, view=view, top_k=600)
    lines = selection.lines
    breaks = flows.width_breaks(lines["shown"].max())
    classes = flows.width_class(lines["shown"], breaks)
    styles = lines["status"] if view == flows.DIFFERENCE else [""] * len(lines)
    expected_groups = len(set(zip(styles, classes)))
    layers = polylines(built.map)
    assert built.flow_layers == len(layers) == expected_groups
    assert len(layers) <= len(flows.STATUSES) * len(breaks)
    assert sum(len(layer.locations) for layer in layers) == 2 * len(lines)
    lengths = sorted({len(path) for layer in layers for path in layer.locations})
    assert lengths == [3, maps.ARC_POINTS]
    assert all(layer.options["interactive"] is False for layer in layers)
    weights = [layer.options["weight"] for layer in layers]
    assert set(weights) <= set(maps.line_widths(breaks).tolist())
    if view == flows.DIFFERENCE:
        colours = {layer.options["color"] for layer in layers}
        assert colours == {maps.STATUS_COLOURS[s] for s in set(lines["status"])}


def test_single_view_colour_is_the_one_given(rng):
    od, true, released = county_release(rng)
    _, built = build(od, true, released, view=flows.RELEASED, colour="#123456")
    assert {layer.options["color"] for layer in polylines(built.map)} == {"#123456"}


# ---------------------------------------------------------------------------------- geometry
def test_arcs_join_origin_to_destination_bend_right_and_point_forward():
    o_lat, o_lon = np.array([53.0, 54.0]), np.array([-7.0, -7.0])
    d_lat, d_lon = np.array([54.0, 53.0]), np.array([-7.0, -7.0])
    curves, heads = maps.arcs(o_lat, o_lon, d_lat, d_lon, reference_lat=53.5, arrow_max=10.0)
    assert curves.shape == (2, maps.ARC_POINTS, 2) and heads.shape == (2, 3, 2)
    np.testing.assert_allclose(curves[:, 0], np.column_stack([o_lat, o_lon]))
    np.testing.assert_allclose(curves[:, -1], np.column_stack([d_lat, d_lon]))
    north, south = curves[0], curves[1]
    assert (north[1:-1, 1] > -7.0).all()   # travelling north, the arc bulges east (right)
    assert (south[1:-1, 1] < -7.0).all()   # the way back bulges west: two separate arcs
    tip, wings = heads[0, 1], heads[0, [0, 2]]
    np.testing.assert_allclose(tip, north[maps.ARC_POINTS // 2], atol=1e-5)
    assert (wings[:, 0] < tip[0]).all()    # the chevron opens behind a northward tip
    assert wings[0, 1] > tip[1] > wings[1, 1] or wings[1, 1] > tip[1] > wings[0, 1]
    chevron = np.hypot(*(wings[0] - tip) * [1, np.cos(np.radians(53.5))])
    assert chevron == pytest.approx(maps.ARROW * 1.0, rel=0.01)


def test_chevrons_are_capped():
    _, heads = maps.arcs([53.0], [-7.0], [55.0], [-7.0], reference_lat=54, arrow_max=0.05)
    wing = (heads[0, 0] - heads[0, 1]) * [1, np.cos(np.radians(54))]  # in the arcs' projection
    assert np.hypot(*wing) == pytest.approx(0.05, rel=0.01)


def test_outlines_contain_every_zone_of_their_parent():
    ed = datasets.load("ireland_ed").origins
    rings = maps.outlines(ed)
    counties = dict(zip(ed.parent_zones.labels, ed.parent_zones.ids))
    assert len(rings) == 31
    for label, ring in rings[:5]:
        inside = ed.parent == counties[label]
        points = np.column_stack([ed.lat[inside], ed.lon[inside]])
        assert (Delaunay(ring).find_simplex(points, tol=1e-6) >= 0).all()
    assert maps.outlines(datasets.load("ireland_county").origins) == []


@pytest.mark.parametrize("parents", [maps.MAX_OUTLINES, maps.MAX_OUTLINES + 1])
def test_a_nation_of_counties_is_not_outlined(parents):
    """A national map's thousands of county names covered its flows: beyond MAX_OUTLINES parents
    there are no outlines (and so the largest zones are labelled instead)."""
    rng = np.random.default_rng(0)
    n = 3 * parents
    parent_ids = np.repeat([f"c{i}" for i in range(parents)], 3)
    zones = ZoneSet.from_ids([f"z{i}" for i in range(n)], lat=rng.uniform(30, 45, n),
                             lon=rng.uniform(-120, -70, n), parent=parent_ids,
                             parent_zones=ZoneSet.from_ids([f"c{i}" for i in range(parents)]))
    assert len(maps.outlines(zones)) == (parents if parents <= maps.MAX_OUTLINES else 0)


def leaflet_boxes(places, bounds, width):
    """Each label's box (px) at the zoom Leaflet's fitBounds picks for a map ``width`` px wide
    and maps.HEIGHT tall: the largest zoom, in steps of ZOOM_SNAP, at which the bounds fit
    inside the padding (Web Mercator: 256·2^z px around the world)."""
    (south, west), (north, east) = bounds
    merc = lambda lat: np.log(np.tan(np.pi / 4 + np.radians(lat) / 2))     # noqa: E731
    pad = 2 * maps.FIT_PADDING_PX
    zoom = np.log2(min((width - pad) * 360 / (256 * (east - west)),
                       (maps.HEIGHT - pad) * 2 * np.pi / (256 * (merc(north) - merc(south)))))
    zoom = np.floor(zoom / maps.ZOOM_SNAP) * maps.ZOOM_SNAP
    per_radian = 256 * 2 ** zoom / (2 * np.pi)
    dx, dy = maps.LABEL_OFFSET_PX
    return [(x := np.radians(lon - west) * per_radian + dx,
             y := (merc(north) - merc(lat)) * per_radian + dy,
             x + maps.LABEL_CHAR_PX * len(text), y + maps.LABEL_LINE_PX)
            for text, lat, lon in places]


def overlapping(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[:i])
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]


def test_zone_labels_do_not_overlap_on_the_first_view():
    """Issue 42 walk: the national Flow map printed its 40 largest tracts' names over each other
    (they sit in a few cities). Labels kept are apart at the zoom Leaflet picks for the
    narrowest map and any wider one; the largest is always kept; places far apart all keep
    theirs; a city of 30 tracts a few px across keeps one."""
    rng = np.random.default_rng(0)
    city = [(f"Tract {i:011d}", 40 + rng.uniform(0, 0.3), -100 + rng.uniform(0, 0.3))
            for i in range(30)]
    towns = [(f"Town {i}", 30 + 4 * (i % 2), -120 + 6 * (i // 2)) for i in range(8)]
    places = city + towns
    bounds = [[29.0, -121.0], [41.0, -95.0]]
    kept = maps.spaced_labels(places, bounds)
    assert kept[0] == places[0] and set(towns) <= set(kept)
    assert set(city) & set(kept) == {city[0]}     # the city is a few px across: one name
    for width in (maps.LABEL_MAP_WIDTH, 540, 900):
        assert overlapping(leaflet_boxes(kept, bounds, width)) == []
        assert overlapping(leaflet_boxes(places, bounds, width))   # without spacing they do


def test_the_county_map_keeps_most_names_and_none_overlap():
    od = datasets.load("ireland_county")
    zones = od.origins
    places = list(zip(zones.labels, zones.lat, zones.lon))
    frame = flows.zones(od, od.to_dense(), keep_empty=False)
    bounds = maps._bounds(frame)
    kept = maps.spaced_labels(places, bounds)
    assert overlapping(leaflet_boxes(kept, bounds, maps.LABEL_MAP_WIDTH)) == []
    assert len(kept) >= 2 * len(places) // 3


# ------------------------------------------------------------------------------------ styling
def test_line_widths_are_proportional_to_the_class_bounds():
    breaks = np.array([100, 200, 500, 1000, 2000, 5000])
    widths = maps.line_widths(breaks)
    assert widths[-1] == maps.MAX_LINE_PX and widths.min() >= maps.MIN_LINE_PX
    big = widths > maps.MIN_LINE_PX
    np.testing.assert_allclose(widths[big] / breaks[big], maps.MAX_LINE_PX / 5000, rtol=0.05)


def test_zone_points_have_area_proportional_to_the_value_and_shrink_when_crowded():
    radii = maps.zone_radii([0, 25, 100, -5])
    extra = radii - maps.MIN_ZONE_PX
    assert extra[3] == 0 and extra[0] == 0
    assert extra[2] == pytest.approx(2 * extra[1], abs=0.1)
    assert maps.zone_radii([100], shrink=maps.crowding(3126))[0] < radii[2]
    assert maps.crowding(31) == 1.0


def test_legend_lists_width_classes_and_statuses_in_order():
    legend = maps.legend_html(flows.DIFFERENCE, np.array([10.0, 20.0, 50.0]),
                              {flows.LOST, flows.OVER})
    assert "1–10" in legend and "11–20" in legend and "21–50" in legend
    assert legend.index(html.escape(flows.STATUSES[flows.OVER])) < legend.index(
        html.escape(flows.STATUSES[flows.LOST]))
    assert html.escape(flows.STATUSES[flows.INVENTED]) not in legend


# ------------------------------------------------------------------------- untrusted zone names
@pytest.fixture
def evil_od() -> ODMatrix:
    zones = ZoneSet.from_ids(["a", "b", "c"], labels=[EVIL, "Bee & Co", "Bee & Co"],
                             lat=[53.0, 53.2, 53.4], lon=[-7.0, -6.8, -6.6])
    return ODMatrix.from_dense("evil", zones, zones, np.array([5, 3, 2, 4, 6, 1, 0, 2, 9]))


def test_zone_names_are_escaped_everywhere(evil_od):
    true = evil_od.to_dense()
    _, built = build(evil_od, true, true + 1.0)
    page = built.map.get_root().render()
    assert "<img" not in page and '<script>alert("x")' not in page
    assert json_text(html.escape(EVIL)) in page  # the label, as inert HTML
    names = [f["properties"]["name"] for f in geojson(built.map, "Zones")["features"]]
    assert names == [html.escape(EVIL), "Bee &amp; Co (b)", "Bee &amp; Co (c)"]
    tips = [f["properties"]["tip"] for f in geojson(built.map, "Within zones")["features"]]
    assert any(html.escape(EVIL) in tip for tip in tips)
    assert names[0] == maps.html_text(EVIL)
    standalone = maps.standalone_html(build(evil_od, true, true + 1.0)[1].map)
    assert "<img" not in standalone.replace(leaflet_assets.inline_js(), "")


@pytest.mark.parametrize("template", ['{{ "inj" ~ "ected" }}', '{% raw %}', '{# x #}}}{{'])
def test_zone_names_are_never_run_as_templates(template):
    """folium re-reads rendered scripts as Jinja templates: a name must stay text, not run."""
    zones = ZoneSet.from_ids(["a", "b"], labels=[template, "b"], lat=[53.0, 53.2],
                             lon=[-7.0, -6.8])
    od = ODMatrix.from_dense("jinja", zones, zones, np.array([5, 3, 2, 4]))
    true = od.to_dense()
    _, built = build(od, true, true)
    page = built.map.get_root().render()     # '{% raw %}' unescaped would not even render
    assert "injected" not in page
    inert = maps.html_text(template)
    assert "{" not in inert and "}" not in inert
    assert json_text(inert) in page
    assert built.tooltip_to_zone[template] == "a"   # the browser shows (and returns) the name
    assert maps.standalone_html(build(od, true, true)[1].map).count(json_text(inert)) >= 2


def test_clicks_identify_zones_by_their_unique_tooltip(evil_od):
    true = evil_od.to_dense()
    _, built = build(evil_od, true, true)
    mapping = built.tooltip_to_zone
    assert mapping == {EVIL: "a", "Bee & Co (b)": "b", "Bee & Co (c)": "c"}
    # st_folium returns the tooltip's text (HTML unescaped), sometimes padded with whitespace.
    assert maps.clicked_zone({"last_object_clicked_tooltip": "\n  Bee & Co (c) \n"}, mapping) == "c"
    assert maps.clicked_zone({"last_object_clicked_tooltip": "Within x: true 3"}, mapping) is None
    assert maps.clicked_zone({"last_object_clicked_tooltip": None}, mapping) is None
    # A coloured zone area's hover text: the name, then the value on its own line.
    assert maps.clicked_zone({"last_object_clicked_tooltip": " Bee & Co (c)\n Jobs, true: 5 "},
                             mapping) == "c"
    assert maps.clicked_zone(None, mapping) is None


def test_size_by_must_be_known(evil_od):
    true = evil_od.to_dense()
    with pytest.raises(ValueError, match="size_by"):
        build(evil_od, true, true, size_by="height")


# ------------------------------------------------------------------------------ Leaflet assets
def test_ensure_copies_leaflet_once_and_repairs_changed_files(tmp_path):
    copied = leaflet_assets.ensure(tmp_path)
    assert copied == list(leaflet_assets.FILES)
    for name in leaflet_assets.FILES:
        assert (tmp_path / name).read_bytes() == leaflet_assets.source(name).read_bytes()
    assert leaflet_assets.ensure(tmp_path) == []
    (tmp_path / leaflet_assets.JS_FILE).write_text("tampered")
    assert leaflet_assets.ensure(tmp_path) == [leaflet_assets.JS_FILE]
    assert b"Leaflet" in (tmp_path / leaflet_assets.JS_FILE).read_bytes()[:2000]
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_the_within_zone_rings_are_a_layer_of_their_own(rng):
    """Issue 42: the page draws the lines between zones by default, the rings on request."""
    od, true, released = county_release(rng)
    selection, with_rings = build(od, true, released, view=flows.TRUE, top_k=50)
    _, without = build(od, true, released, view=flows.TRUE, top_k=50, rings=False)
    assert len(geojson(with_rings.map, "Within zones")["features"]) == len(selection.within) > 0
    assert not any(isinstance(child, folium.GeoJson) and child.layer_name == "Within zones"
                   for child in without.map._children.values())
    assert without.flow_layers == with_rings.flow_layers > 0   # the same lines either way
