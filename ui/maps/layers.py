"""Folium maps of commuting flows that draw without internet and stay fast with 1,000 lines.

What makes them work offline and quickly:

* **No third party.** ``folium.Map(tiles=None, prefer_canvas=True)`` with the map's ``default_js``
  and ``default_css`` replaced by Leaflet alone, served by the app (:mod:`ui.maps.leaflet_assets`);
  no plugin that would pull another script. The background is the app's own: land, coastlines
  and land borders from Natural Earth (:mod:`dpcore.data.geography`, bundled), then what the data
  gives: zone points sized by residents or jobs, labels, outlines (convex hulls of the zones of
  each parent, e.g. of a county's EDs) when a parent level exists, and optionally coloured zone
  areas (:mod:`ui.maps.choropleth`). Remote tiles only when the user opts in.
* **Few layers.** Flows are grouped by style (colour × width class) into one multi-polyline each,
  so 1,000 flows make a few dozen Leaflet layers, not 1,000. Direction is drawn into the same
  groups: each flow is an arc bending to its right (A→B and B→A are separate arcs) with a
  chevron at its middle pointing to the destination.
* **Inert text.** Zone names come from uploads. Every one goes through :func:`html_text` before it
  reaches a tooltip, label or legend: HTML-escaped, and with ``{`` and ``}`` as character
  references, because folium (through branca) re-reads each element's rendered script as a Jinja
  template — a zone named ``{{ 7*7 }}`` would otherwise be *executed on the server*.

:func:`flow_map` builds the whole map; :func:`standalone_html` makes a downloadable file with
Leaflet inlined.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import folium
import numpy as np
import pandas as pd
from branca.element import Element, MacroElement
from folium.template import Template
from scipy.spatial import ConvexHull, QhullError

from dpcore.data import geography
from dpcore.evaluation import flows
from ui.maps import leaflet_assets

#: Single-view line colours unless the page passes its own (e.g. the mechanism's palette colour).
TRUE_COLOUR, RELEASED_COLOUR = "#555555", "#cc3311"
#: Difference view: red over, blue under, grey close, purple invented, black lost (dashed).
STATUS_COLOURS = {
    flows.OVER_FAR: "#b2182b", flows.OVER: "#ef8a62", flows.CLOSE_TO_TRUE: "#8c8c8c",
    flows.UNDER: "#67a9cf", flows.UNDER_FAR: "#2166ac", flows.INVENTED: "#7b3294",
    flows.LOST: "#1a1a1a",
}
DASHED = {flows.INVENTED: "2 6", flows.LOST: "8 5"}
ZONE_FILL, ZONE_STROKE, SELECTED_COLOUR, OUTLINE_COLOUR = "#ffffff", "#2d3748", "#e6550d", "#9aa5b1"
#: Sea, land and the lines of the bundled background geography.
SEA, LAND, BORDER = "#d3e2ec", "#f4f2ee", "#8d8577"
#: Marks the background's Leaflet layers (so that they can be told from the data's).
BACKGROUND_CLASS = "background-geography"

MIN_LINE_PX, MAX_LINE_PX = 1.2, 14.0
#: Largest zone point and within-zone ring with up to CROWDED zones; smaller with more zones.
MIN_ZONE_PX, MAX_ZONE_PX, MAX_WITHIN_PX, CROWDED = 2.0, 12.0, 30.0, 100
#: Arcs bend by this share of their length; chevrons are this share of it, at most ARROW_MAX of
#: the map's extent so that long flows do not get huge heads.
BEND, ARROW, ARROW_MAX = 0.15, 0.12, 0.025
ARC_POINTS = 9
#: Decimal places of coordinates sent to the browser (5 ≈ 1 m).
PRECISION = 5
#: Zones labelled when there are no outlines to label instead (the largest ones).
MAX_LABELS = 40
#: For spacing the labels (:func:`spaced_labels`): the narrowest the map is drawn (px, the
#: page's map column at 1,280 px), and a label's glyph width and line height (px, .zone-label's
#: 11 px font) and its offset from the point (ZoneLabels' iconAnchor).
LABEL_MAP_WIDTH = 480
LABEL_CHAR_PX, LABEL_LINE_PX, LABEL_OFFSET_PX = 6.5, 14, (6, -7)
#: Leaflet's zoom steps and the padding (px) the map is fitted to its bounds with.
ZOOM_SNAP, FIT_PADDING_PX = 0.25, 12
#: Parents outlined and labelled at most: Ireland's 26 counties help read a map of its EDs, a
#: nation's 3,000 counties would cover the flows with their names (the largest zones are
#: labelled instead).
MAX_OUTLINES = MAX_LABELS
SIZE_BY = {"residents": "Residents (commuters living in the zone)",
           "jobs": "Jobs (commuters working or studying in the zone)"}
HEIGHT = 620
#: Written on a map whose zones are at a schematic layout (no coordinates in the data).
SCHEMATIC_LABEL = "Schematic layout, not geographic: zones grouped by parent, largest first"

OSM_TILES = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
OSM_ATTRIBUTION = ('&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> '
                   "contributors")

#: The legends' look, inside the map (a corner control) and beside it on the page.
LEGEND_CSS = """<style>
.flow-legends { display: flex; flex-wrap: wrap; gap: 8px 24px; }
.flow-legend { background: rgba(255,255,255,.92); padding: 6px 9px; font: 11px/1.35 sans-serif;
  color: #222; border-radius: 4px; box-shadow: 0 1px 4px rgba(0,0,0,.3); max-width: 250px; }
.flow-legends .flow-legend { box-shadow: none; border: 1px solid #ddd; max-width: 420px; }
.flow-legend b { display: block; margin: 3px 0 2px; }
.flow-legend summary { cursor: pointer; font-weight: bold; }
.flow-legend .row { display: flex; align-items: center; gap: 6px; }
.flow-legend .swatch { width: 34px; flex: none; }
</style>"""

_CSS = f"""<style>
body .leaflet-container {{ background: {SEA}; }}
.zone-label {{ font: 11px/1.2 sans-serif; color: #2d3748; white-space: nowrap;
  text-shadow: 0 0 3px #fff, 0 0 3px #fff, 0 0 2px #fff; pointer-events: none; }}
</style>""" + LEGEND_CSS


# ------------------------------------------------------------------------------------- geometry
def arcs(o_lat, o_lon, d_lat, d_lon, reference_lat: float, arrow_max: float,
         bend: float = BEND, points: int = ARC_POINTS):
    """Each flow as an arc (quadratic Bézier bending to the right of travel) and a chevron.

    Computed in an equirectangular projection around ``reference_lat`` so that bends and heads
    keep their shape; ``arrow_max`` caps the chevron length (degrees of latitude). Returns two
    arrays of [lat, lon] points: arcs ``(n, points, 2)`` and chevrons ``(n, 3, 2)`` (wing, tip,
    wing), the tip at the arc's middle pointing towards the destination.
    """
    scale = math.cos(math.radians(reference_lat))
    start = np.column_stack([np.asarray(o_lon, float) * scale, np.asarray(o_lat, float)])
    end = np.column_stack([np.asarray(d_lon, float) * scale, np.asarray(d_lat, float)])
    chord = end - start
    length = np.hypot(chord[:, 0], chord[:, 1])[:, None]
    right = np.column_stack([chord[:, 1], -chord[:, 0]])  # chord turned 90° clockwise
    control = (start + end) / 2 + bend * right
    s = np.linspace(0.0, 1.0, points)[None, :, None]
    curve = ((1 - s) ** 2 * start[:, None] + 2 * (1 - s) * s * control[:, None]
             + s ** 2 * end[:, None])
    tip = 0.25 * start + 0.5 * control + 0.25 * end  # the curve at s = 1/2
    along = chord / np.where(length > 0, length, 1.0)  # its tangent there is the chord
    across = np.column_stack([-along[:, 1], along[:, 0]])
    size = np.minimum(ARROW * length, arrow_max)
    back = tip - along * size * math.cos(math.radians(28))
    spread = across * size * math.sin(math.radians(28))
    heads = np.stack([back + spread, tip, back - spread], axis=1)

    def to_lat_lon(xy):
        return np.round(np.stack([xy[..., 1], xy[..., 0] / scale], axis=-1), PRECISION)
    return to_lat_lon(curve), to_lat_lon(heads)


def outlines(zones) -> list[tuple[str, np.ndarray]]:
    """Convex hull ([lat, lon] ring) of the placed zones of each parent, with the parent's label.

    ``zones`` is a :class:`~dpcore.data.od.ZoneSet` with a parent level (e.g. EDs in counties);
    parents with fewer than three distinct points get no outline, and none do when there are
    more than :data:`MAX_OUTLINES` parents.
    """
    if zones.parent is None or len(pd.unique(zones.parent)) > MAX_OUTLINES:
        return []
    parents = zones.parent_zones
    labels = (dict(zip(parents.ids, parents.labels)) if parents is not None else {})
    placed = zones.has_coordinates
    out = []
    for parent in pd.unique(zones.parent[placed]):
        mask = placed & (zones.parent == parent)
        points = np.unique(np.column_stack([zones.lat[mask], zones.lon[mask]]), axis=0)
        if len(points) < 3:
            continue
        try:
            hull = ConvexHull(points[:, ::-1])
        except QhullError:  # all points on a line
            continue
        out.append((str(labels.get(parent, parent)), np.round(points[hull.vertices], PRECISION)))
    return out


# ---------------------------------------------------------------------------------- styling
def html_text(text) -> str:
    """Untrusted text as inert HTML for a map: escaped, braces as character references.

    The browser shows the text exactly; neither it nor the template engine folium runs over
    every rendered script (a server-side template injection otherwise) can interpret any of it.
    """
    return html.escape(str(text)).replace("{", "&#123;").replace("}", "&#125;")


def line_widths(breaks) -> np.ndarray:
    """Pixel width of each width class: proportional to its upper bound, at least MIN_LINE_PX."""
    breaks = np.asarray(breaks, dtype=float)
    return np.maximum(MAX_LINE_PX * breaks / breaks[-1], MIN_LINE_PX).round(1)


def _colour(view: str, status: str, colour: str | None = None) -> str:
    if view == flows.DIFFERENCE:
        return STATUS_COLOURS.get(status, STATUS_COLOURS[flows.CLOSE_TO_TRUE])
    return colour or (TRUE_COLOUR if view == flows.TRUE else RELEASED_COLOUR)


def _count(value: float) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:,.0f}"


def zone_tooltips(zone_frame: pd.DataFrame) -> pd.Series:
    """Text shown when hovering over each zone, unique per zone so that a click identifies it:
    the label, with the id added where labels repeat."""
    labels = zone_frame["label"].astype(str)
    repeated = labels.duplicated(keep=False)
    return labels.where(~repeated, labels + " (" + zone_frame["id"].astype(str) + ")")


def crowding(n_zones: int) -> float:
    """Factor (≤ 1) shrinking points and rings when many zones share the map."""
    return min(1.0, math.sqrt(CROWDED / max(n_zones, 1)))


def zone_radii(values, largest: float | None = None, shrink: float = 1.0) -> np.ndarray:
    """Point radius in pixels, area proportional to the value (negative values count as 0)."""
    values = np.clip(np.asarray(values, dtype=float), 0, None)
    top = largest if largest else (values.max() if values.size else 0.0)
    biggest = max(MAX_ZONE_PX * shrink, 2 * MIN_ZONE_PX)
    if top <= 0:
        return np.full(values.shape, MIN_ZONE_PX)
    return (MIN_ZONE_PX + (biggest - MIN_ZONE_PX) * np.sqrt(values / top)).round(1)


# ---------------------------------------------------------------------------------- elements
class Legend(MacroElement):
    """A small HTML legend in a corner of the map (``html`` must already be escaped)."""

    _template = Template("""
        {% macro script(this, kwargs) %}
        var {{ this.get_name() }} = L.control({position: {{ this.position|tojson }}});
        {{ this.get_name() }}.onAdd = function (map) {
            var div = L.DomUtil.create("div", "flow-legend");
            div.innerHTML = {{ this.html|tojson }};
            L.DomEvent.disableScrollPropagation(div);
            L.DomEvent.disableClickPropagation(div);
            return div;
        };
        {{ this.get_name() }}.addTo({{ this._parent.get_name() }});
        {% endmacro %}
    """)

    def __init__(self, legend_html: str, position: str = "bottomright"):
        super().__init__()
        self._name = "Legend"
        self.html = legend_html
        self.position = position


def _mercator(lat) -> np.ndarray:
    return np.log(np.tan(np.pi / 4 + np.radians(np.clip(lat, -85, 85)) / 2))


def spaced_labels(places: list[tuple[str, float, float]], bounds: list[list[float]],
                  width: float = LABEL_MAP_WIDTH, height: float = HEIGHT
                  ) -> list[tuple[str, float, float]]:
    """The places, in order, whose label does not overlap the label of one kept before it on
    the map's first view: a national map's 40 largest tracts sit in a few cities, and their
    names were printed over each other (issue 42). Leaflet fits ``bounds`` (less its padding)
    at a zoom rounded down to a step of :data:`ZOOM_SNAP`, so the first view's scale is at least
    2^−ZOOM_SNAP of the fitted one: the boxes are measured at that scale. Every zone keeps its
    hover name."""
    (south, west), (north, east) = bounds
    across = max(math.radians(east - west), 1e-9)
    tall = max(float(_mercator(north) - _mercator(south)), 1e-9)
    scale = (min((width - 2 * FIT_PADDING_PX) / across, (height - 2 * FIT_PADDING_PX) / tall)
             * 2 ** -ZOOM_SNAP)                          # px per radian, the least the fit gives
    kept, boxes = [], []
    for text, lat, lon in places:
        x = math.radians(lon - west) * scale + LABEL_OFFSET_PX[0]
        y = float(_mercator(north) - _mercator(lat)) * scale + LABEL_OFFSET_PX[1]
        box = (x, y, x + LABEL_CHAR_PX * len(str(text)), y + LABEL_LINE_PX)
        if all(box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1]
               for b in boxes):
            kept.append((text, lat, lon))
            boxes.append(box)
    return kept


class ZoneLabels(MacroElement):
    """Permanent place names, one DOM label each (the text is :func:`html_text`, already inert)."""

    _template = Template("""
        {% macro script(this, kwargs) %}
        var {{ this.get_name() }} = L.layerGroup();
        {{ this.places|tojson }}.forEach(function (place) {
            var text = document.createElement("div");
            text.className = "zone-label";
            text.innerHTML = place[0];
            L.marker([place[1], place[2]], {
                icon: L.divIcon({html: text, className: "zone-label-icon", iconSize: [0, 0],
                                 iconAnchor: [-6, 7]}),
                interactive: false, keyboard: false
            }).addTo({{ this.get_name() }});
        });
        {{ this.get_name() }}.addTo({{ this._parent.get_name() }});
        {% endmacro %}
    """)

    def __init__(self, places: list[tuple[str, float, float]]):
        super().__init__()
        self._name = "ZoneLabels"
        self.places = [[html_text(text), round(float(lat), PRECISION),
                        round(float(lon), PRECISION)] for text, lat, lon in places]


def _points(frame: pd.DataFrame, properties: dict[str, list]) -> dict:
    """A GeoJSON FeatureCollection of points with the given per-feature properties."""
    lon = frame["lon"].round(PRECISION).tolist()
    lat = frame["lat"].round(PRECISION).tolist()
    names = list(properties)
    return {"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]},
         "properties": dict(zip(names, values))}
        for x, y, *values in zip(lon, lat, *properties.values())]}


def difference_bounds(lines: pd.DataFrame) -> tuple[float, float]:
    """The bounds (close, far) of the difference view's classes, fitted to the flows drawn.

    With fixed bounds of 10 % and 50 %, a good release of large flows (Laplace noise of a few
    commuters on flows of hundreds) draws every line grey. When the drawn flows' relative errors
    stay below ``FAR``, the bounds become 1-2-5 steps under their median and 90th percentile, so
    the lines spread over the classes and the legend says the bounds used."""
    both = lines[(lines["true"] > 0) & (lines["released"] >= flows.PRESENT_AT)]
    relative = np.abs(both["released"] - both["true"]).to_numpy(float) / both["true"].to_numpy(float)
    if relative.size == 0 or np.quantile(relative, 0.9) >= flows.FAR or relative.max() == 0:
        return flows.CLOSE, flows.FAR

    def step_below(value: float) -> float:
        value = max(value, 1e-6)
        decade = 10 ** math.floor(math.log10(value))
        return max(m * decade for m in (1, 2, 5) if m * decade <= value * (1 + 1e-9))

    close = min(step_below(float(np.median(relative))), flows.CLOSE)
    far = step_below(float(np.quantile(relative, 0.9)))
    return close, far if far > close else close * 2


def legend_html(view: str, breaks, statuses=(), colour: str | None = None,
                labels: dict[str, str] = flows.STATUSES) -> str:
    """The legend's HTML: line widths by class, colours (by status in the difference view,
    ``labels`` saying what each status means)."""
    widths = line_widths(breaks)
    line_colour = _colour(view, flows.CLOSE_TO_TRUE, colour)
    sized = {flows.TRUE: "true count", flows.RELEASED: "released count",
             flows.DIFFERENCE: "larger of true and released"}[view]
    parts = [f"<details open><summary>{html_text(flows.VIEWS[view])}</summary>",
             f"<b>Commuters per line ({html_text(sized)})</b>"]
    lower = 1.0
    for width, bound in zip(widths, breaks):
        parts.append(f'<div class="row"><span class="swatch" style="border-top:{width}px solid '
                     f'{html_text(line_colour)}"></span>{_count(lower)}–{_count(bound)}</div>')
        lower = bound + 1
    if view == flows.DIFFERENCE:
        parts.append("<b>What the release did</b>")
        for status in [s for s in flows.STATUSES if s in set(statuses)]:
            dash = "dashed" if status in DASHED else "solid"
            parts.append(f'<div class="row"><span class="swatch" style="border-top:3px {dash} '
                         f'{STATUS_COLOURS[status]}"></span>'
                         f"{html_text(labels[status])}</div>")
    parts.append("</details>")
    return "".join(parts)


def reading_notes(size_by: str, within: bool) -> str:
    """How to read the map (plain text, for a caption under it)."""
    notes = [("Lines bend to their right, so A→B and B→A are separate arcs; the chevron on each "
              "points to the destination."),
             f"Points are zones sized by {SIZE_BY[size_by].lower()}."]
    if within:
        notes.append("Rings around a zone: commuters who live and work in that same zone.")
    return " ".join(notes)


# ------------------------------------------------------------------------------------ the map
@dataclass
class FlowMap:
    """A built map, how many grouped flow layers it has, and which tooltip text is which zone."""

    map: folium.Map
    tooltip_to_zone: dict[str, str]
    flow_layers: int
    #: The legends' HTML (already escaped), for a page that draws them beside the map.
    legends: list[str] = field(default_factory=list)


def add_background(m: folium.Map, bounds) -> None:
    """Land (its edge against the sea is the coastline) and land borders around ``bounds`` from
    the bundled Natural Earth data (drawn in the map itself: no request to anyone)."""
    found = geography.background(bounds)
    if found["land"]:
        folium.GeoJson({"type": "Feature", "geometry": found["land"],
                        "properties": {"style": {"stroke": False, "fill": True,
                                                 "fillColor": LAND, "fillOpacity": 1,
                                                 "className": BACKGROUND_CLASS}}},
                       name="Land (Natural Earth)", interactive=False).add_to(m)
    if found["borders"]:
        folium.GeoJson({"type": "Feature", "geometry": found["borders"],
                        "properties": {"style": {"color": BORDER, "weight": 1.2, "opacity": 0.9,
                                                 "dashArray": "5 3", "fill": False,
                                                 "className": BACKGROUND_CLASS}}},
                       name="Borders (Natural Earth)", interactive=False).add_to(m)


def new_map(bounds, basemap: bool = False, geographic: bool = True) -> folium.Map:
    """A map showing ``bounds`` ([[south, west], [north, east]]) that loads only Leaflet, from
    the app, with the bundled land and borders drawn in. ``basemap`` adds OpenStreetMap tiles
    (requests to a third party: opt-in) over them. ``geographic=False`` (a schematic layout,
    :mod:`dpcore.data.schematic`): no land, borders, tiles or scale bar."""
    m = folium.Map(tiles=None, prefer_canvas=True, control_scale=geographic, zoom_snap=ZOOM_SNAP)
    m.default_js = [("leaflet", leaflet_assets.JS_URL)]
    m.default_css = [("leaflet_css", leaflet_assets.CSS_URL)]
    m.get_root().header.add_child(Element(_CSS), name="flow_map_css")
    if geographic:
        add_background(m, bounds)
    if basemap and geographic:
        folium.TileLayer(OSM_TILES, attr=OSM_ATTRIBUTION, name="OpenStreetMap",
                         max_zoom=19).add_to(m)
    m.fit_bounds(bounds, padding=(FIT_PADDING_PX, FIT_PADDING_PX))
    return m


def _bounds(zone_frame: pd.DataFrame) -> list[list[float]]:
    placed = zone_frame[zone_frame["placed"]]
    if placed.empty:
        return [[-60.0, -170.0], [75.0, 170.0]]
    south, north = float(placed["lat"].min()), float(placed["lat"].max())
    west, east = float(placed["lon"].min()), float(placed["lon"].max())
    pad = max(north - south, east - west, 0.01) * 0.03
    return [[south - pad, west - pad], [north + pad, east + pad]]


def _add_areas(m: folium.Map, areas) -> None:
    """Coloured zone areas (a :class:`ui.maps.choropleth.AreaLayer`): thin edges, hover name and
    value; clickable, so that a click on an area picks its zone like a click on its point."""
    folium.GeoJson(areas.collection, name="Zone areas (approximate)", smooth_factor=0.5,
                   color="#6b7280", weight=0.5, opacity=0.8, fillOpacity=0.72,
                   tooltip=folium.GeoJsonTooltip(["name", "value"], labels=False)).add_to(m)


def _add_outlines(m: folium.Map, rings: list[tuple[str, np.ndarray]]) -> None:
    if not rings:
        return
    style = {"color": OUTLINE_COLOUR, "weight": 1, "fill": True, "fillColor": "#ffffff",
             "fillOpacity": 0.55, "opacity": 0.9}
    collection = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"style": style},
         "geometry": {"type": "Polygon",
                      "coordinates": [[[lon, lat] for lat, lon in ring.tolist()]
                                      + [[ring[0][1], ring[0][0]]]]}}
        for _, ring in rings]}
    folium.GeoJson(collection, name="Outlines", interactive=False).add_to(m)


def add_flow_lines(m: folium.Map, lines: pd.DataFrame, view: str, breaks, reference_lat: float,
                   arrow_max: float, colour: str | None = None) -> int:
    """Draw the flows as one multi-polyline per (colour, width class); returns how many."""
    if lines.empty:
        return 0
    curves, heads = arcs(lines["origin_lat"], lines["origin_lon"], lines["destination_lat"],
                         lines["destination_lon"], reference_lat, arrow_max)
    classes = flows.width_class(lines["shown"], breaks)
    widths = line_widths(breaks)
    styles = (lines["status"].to_numpy() if view == flows.DIFFERENCE
              else np.full(len(lines), "", dtype=object))
    groups = sorted(set(zip(classes.tolist(), styles.tolist())))  # thin lines drawn first
    for width_index, status in groups:
        members = np.flatnonzero((styles == status) & (classes == width_index))
        line = folium.PolyLine([[0.0, 0.0], [0.0, 0.0]], color=_colour(view, status, colour),
                               weight=float(widths[width_index]), opacity=0.8,
                               dash_array=DASHED.get(status), line_cap="round")
        # Finite floats from NumPy by construction (only placed zones make lines): skip folium's
        # point-by-point Python validation, which costs 0.2 s per 1,000 flows.
        line.locations = [path for i in members
                          for path in (curves[i].tolist(), heads[i].tolist())]
        line.options["interactive"] = False  # clicks go through to the zones
        line.add_to(m)
    return len(groups)


def _add_within(m: folium.Map, within: pd.DataFrame, view: str, shrink: float,
                colour: str | None) -> None:
    if within.empty:
        return
    largest = max(float(within["shown"].max()), 1.0)
    biggest = max(MAX_WITHIN_PX * shrink, 8.0)
    radii = np.maximum(biggest * np.sqrt(np.clip(within["shown"], 0, None) / largest), 4.0)
    styles = [{"radius": float(r), "color": _colour(view, status, colour),
               **({"dashArray": DASHED[status]} if status in DASHED else {})}
              for r, status in zip(radii.round(1), within["status"])]
    tips = [html_text(f"Within {label}: true {_count(t)}, released {_count(r)}")
            for label, t, r in zip(within["origin_label"], within["true"], within["released"])]
    frame = pd.DataFrame({"lat": within["origin_lat"], "lon": within["origin_lon"]})
    folium.GeoJson(_points(frame, {"tip": tips, "style": styles}), name="Within zones",
                   marker=folium.CircleMarker(radius=4, weight=2, fill=True, fill_opacity=0.06),
                   tooltip=folium.GeoJsonTooltip(["tip"], labels=False)).add_to(m)


def _add_zones(m: folium.Map, frame: pd.DataFrame, size_by: str, tooltips: pd.Series,
               selected: str | None, shrink: float) -> None:
    radii = zone_radii(frame[size_by], shrink=shrink)
    styles = [{"radius": float(r)} for r in radii]  # the rest is the same for every zone
    names = [html_text(text) for text in tooltips]
    folium.GeoJson(_points(frame, {"name": names, "style": styles}), name="Zones",
                   marker=folium.CircleMarker(radius=4, color=ZONE_STROKE, weight=1,
                                              fill_color=ZONE_FILL, fill_opacity=0.9),
                   tooltip=folium.GeoJsonTooltip(["name"], labels=False)).add_to(m)
    chosen = np.flatnonzero(frame["id"].to_numpy() == selected)
    if chosen.size:
        row = frame.iloc[int(chosen[0])]
        ring = folium.CircleMarker([float(row["lat"]), float(row["lon"])],
                                   radius=float(radii[chosen[0]]) + 5, color=SELECTED_COLOUR,
                                   weight=3, fill=False)
        ring.options["interactive"] = False
        ring.add_to(m)


def flow_map(selection: flows.FlowSelection, zone_frame: pd.DataFrame, breaks, *,
             size_by: str = "residents", selected: str | None = None,
             parent_outlines: list[tuple[str, np.ndarray]] = (), basemap: bool = False,
             colour: str | None = None, areas=None, legends_inside: bool = True,
             schematic: bool = False, rings: bool = True) -> FlowMap:
    """The whole map of one view: background, within-zone rings, flow lines, zones, legend.

    ``zone_frame`` is :func:`dpcore.evaluation.flows.zones`; ``breaks`` the width classes
    (:func:`dpcore.evaluation.flows.width_breaks`, shared by maps shown side by side); ``selected`` a zone
    id to ring; ``parent_outlines`` from :func:`outlines`; ``colour`` the line colour of the
    true or released view (the difference view colours by status); ``areas`` coloured zone
    areas (:func:`ui.maps.choropleth.layer`) drawn under the flows. The legends are drawn in the
    map's corners (a standalone file) or, without ``legends_inside``, left to the page
    (``FlowMap.legends``), so that they cover none of the map. ``schematic``: the zones are at a
    schematic layout (:mod:`dpcore.data.schematic`), drawn without geography and labelled so.
    ``rings``: draw the flows within one zone as rings (their own layer); without, only the
    lines between zones are drawn and the page lists the rest.
    """
    if size_by not in SIZE_BY:
        raise ValueError(f"size_by must be one of {', '.join(SIZE_BY)}; got {size_by!r}")
    bounds = _bounds(zone_frame)
    placed = zone_frame[zone_frame["placed"].to_numpy()]
    shrink = crowding(len(placed))
    m = new_map(bounds, basemap, geographic=not schematic)
    if schematic:
        Legend(f"<b>{html_text(SCHEMATIC_LABEL)}</b>", "topright").add_to(m)
    if areas is not None:
        _add_areas(m, areas)
    else:
        _add_outlines(m, list(parent_outlines))
    lines, within, labels = selection.lines, selection.within, flows.STATUSES
    if selection.view == flows.DIFFERENCE:  # classes fitted to the flows drawn
        close, far = difference_bounds(pd.concat([lines, within]))
        lines, within = (frame.assign(status=flows.classify(frame["true"], frame["released"],
                                                            close, far))
                         for frame in (lines, within))
        labels = flows.status_labels(close, far)
    if not rings:
        within = within.iloc[:0]
    _add_within(m, within, selection.view, shrink, colour)
    reference_lat = (bounds[0][0] + bounds[1][0]) / 2
    extent = math.hypot(bounds[1][0] - bounds[0][0],
                        (bounds[1][1] - bounds[0][1]) * math.cos(math.radians(reference_lat)))
    layers = add_flow_lines(m, lines, selection.view, breaks, reference_lat,
                            ARROW_MAX * extent, colour)
    tooltips = zone_tooltips(zone_frame)[zone_frame["placed"].to_numpy()]
    _add_zones(m, placed, size_by, tooltips, selected, shrink)
    if parent_outlines:
        places = [(label, ring[:, 0].mean(), ring[:, 1].mean()) for label, ring in parent_outlines]
    else:
        largest = placed.nlargest(MAX_LABELS, size_by)
        places = list(zip(largest["label"], largest["lat"], largest["lon"]))
    ZoneLabels(spaced_labels(places, bounds)).add_to(m)
    statuses = set(lines["status"]) | set(within["status"])
    legends = [legend_html(selection.view, breaks, statuses, colour, labels)]
    if areas is not None:
        legends.append(areas.legend)
    if legends_inside:
        for legend, corner in zip(legends, ("bottomright", "bottomleft")):
            Legend(legend, corner).add_to(m)
    tooltip_to_zone = dict(zip(tooltips.str.strip(), placed["id"]))
    if areas is not None:
        tooltip_to_zone = {**areas.tooltip_to_zone, **tooltip_to_zone}
    return FlowMap(m, tooltip_to_zone, layers, legends)


def legends_beside(legends: list[str]) -> str:
    """The map's legends as one HTML block for the page, side by side under the map."""
    return (f"{LEGEND_CSS}<div class=\"flow-legends\">"
            + "".join(f'<div class="flow-legend">{legend}</div>' for legend in legends)
            + "</div>")


def clicked_zone(value, tooltip_to_zone: dict[str, str]) -> str | None:
    """The zone id a click on the map chose (st_folium's returned value), if it was a zone: its
    point's hover text, or the first line of its area's (name, then the coloured value)."""
    if not isinstance(value, dict):
        return None
    text = value.get("last_object_clicked_tooltip")
    if not isinstance(text, str):
        return None
    found = tooltip_to_zone.get(text.strip())
    return found if found is not None else tooltip_to_zone.get(text.strip().split("\n")[0].strip())


def standalone_html(m: folium.Map) -> str:
    """The map as one HTML file that needs nothing else: Leaflet's JS and CSS are inlined.

    Call on a freshly built map (st_folium renames a map's elements as it draws it).
    """
    page = m.get_root().render()
    script = f'<script src="{leaflet_assets.JS_URL}"></script>'
    link = f'<link rel="stylesheet" href="{leaflet_assets.CSS_URL}"/>'
    if script not in page or link not in page:
        raise RuntimeError("the map does not load Leaflet from the app as expected; "
                           "was it built by ui.maps.layers.new_map?")
    return (page.replace(script, f"<script>{leaflet_assets.inline_js()}</script>", 1)
                .replace(link, f"<style>{leaflet_assets.inline_css()}</style>", 1))
