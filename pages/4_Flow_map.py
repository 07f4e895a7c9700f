"""Flow map: the commutes a release keeps, distorts, invents or loses, on a map that works offline.

Thin page: settings from :mod:`ui.controls`, cached releases from :mod:`ui.runs`, flow selection
in :mod:`dpcore.flows`, maps from :mod:`ui.maps` (Leaflet served by the app, no third party).
"""

from functools import partial

import streamlit as st
from streamlit_folium import st_folium

from dpcore import explore, flows, postprocess
from dpcore.export import safe_csv
from ui import charts, choropleth, controls, data, leaflet_assets, maps, runs, safe

VIEW, SIDE_BY_SIDE = "flowmap_view", "side_by_side"
RULE, TOP_K, MIN_COUNT = "flowmap_rule", "flowmap_top_k", "flowmap_min_count"
ZONE, DIRECTION, SIZE_BY = "flowmap_zone", "flowmap_direction", "flowmap_size_by"
ROLL_UP, MORE_LINES, CAP, BASEMAP = ("flowmap_roll_up", "flowmap_more_lines", "flowmap_cap",
                                     "flowmap_basemap")
MAP = "flowmap_map"
ALL_ZONES = ""
#: Only a click on an object reruns the page: panning and zooming stay in the browser.
RETURNED = ["last_object_clicked_tooltip"]
VIEW_NAMES = {flows.TRUE: "True", flows.RELEASED: "Released", flows.DIFFERENCE: "Difference",
              SIDE_BY_SIDE: "True | released side by side"}


def pick_zone(map_key: str, tooltip_to_zone: dict[str, str]) -> None:
    """st_folium callback: a click on a zone point makes it the zone filter."""
    zone = maps.clicked_zone(st.session_state.get(map_key), tooltip_to_zone)
    if zone is not None:
        st.session_state[ZONE] = zone


st.set_page_config(page_title="Flow map · Commuting Privacy Lab", page_icon="🗺️",
                   layout="wide")
try:
    leaflet_assets.ensure()
except leaflet_assets.LeafletMissingError as error:
    st.error(f"Maps cannot be drawn: {error}")
    st.stop()
settings = controls.run_controls(multi=False)
st.title("Flow map")
st.markdown("Commuting flows as lines between zones: the true flows, the flows the chosen "
            "mechanism would publish, and the difference — which corridors survive privacy, "
            "which are distorted, invented by noise or lost. The map needs no internet.")
try:
    od = runs.view(settings)
except ValueError as error:
    st.warning(str(error))
    st.stop()
mechanism = settings.mechanisms[0]
result = runs.release(settings, mechanism)
truth, released = runs.true_counts(settings), result.released
if result.error:
    st.warning(f"**{charts.name(mechanism)}** could not run with these settings: {result.error} "
               "Only the true flows can be shown.")
st.caption(f"{charts.name(mechanism)}, ε = {settings.epsilon:g}, seed {settings.seed}, "
           f"post-processing: {postprocess.METHODS[settings.postprocess][0]}. Change them in the "
           "sidebar; every page shares them.")

top = st.columns([3, 2, 3, 2])
views = list(VIEW_NAMES) if released is not None else [flows.TRUE]
if st.session_state.get(VIEW) not in views:
    st.session_state[VIEW] = views[0]
view = top[0].radio("Show", views, format_func=VIEW_NAMES.__getitem__, key=VIEW, horizontal=True)
rule = top[1].radio("Which flows", ["top", "min"], key=RULE, horizontal=True,
                    format_func={"top": "Largest k", "min": "At least"}.__getitem__,
                    help="Applied separately to flows between zones (lines), within one zone "
                         "(rings) and to or from places without a position (listed), by the "
                         "count the view shows: true, released, or the larger of the two.")
if rule == "top":
    top_k, min_count = top[1].number_input("k", 1, 100_000, 250, key=TOP_K), None
else:
    top_k, min_count = None, top[1].number_input("Commuters", 1, 10**7, 100, key=MIN_COUNT)
if explore.roll_up_possible(od) and top[3].toggle(
        "Roll up", key=ROLL_UP,
        help="Roll the flows up to parent zones (e.g. ED → county): sum each pair of parents' "
             "flows, true and released alike. The noise of many small cells adds up in each "
             "parent flow."):
    od, truth, released = flows.roll_up(od, truth, released)
zone_frame = flows.zones(od, truth, keep_empty=False)
names = {ALL_ZONES: "All zones", **dict(zip(zone_frame["id"], zone_frame["label"]))}
if st.session_state.get(ZONE) not in names:
    st.session_state[ZONE] = ALL_ZONES
zone = top[2].selectbox("Zone (or click one on the map)", list(names), key=ZONE,
                        format_func=names.__getitem__) or None
direction = top[2].radio("Its flows", list(flows.DIRECTIONS), key=DIRECTION, horizontal=True,
                         format_func=flows.DIRECTIONS.__getitem__, disabled=zone is None)
size_by = top[3].radio("Size zones by", list(maps.SIZE_BY), key=SIZE_BY, horizontal=True,
                       format_func=lambda k: k.capitalize(), help=" ".join(maps.SIZE_BY.values()))
zone_colour = choropleth.controls(released is not None)
with st.expander("More lines, basemap"):
    cap = flows.DEFAULT_LINE_CAP
    if st.checkbox(f"Draw more than {cap:,} lines (slower)", key=MORE_LINES):
        cap = st.number_input("At most", cap, 20_000, 5_000, 1_000, key=CAP)
        st.warning(f"Up to {cap:,} lines: building and drawing the map takes longer, and the "
                   "page may feel slow.")
    basemap = st.checkbox("OpenStreetMap basemap (needs internet; your browser then requests map "
                          "tiles from tile.openstreetmap.org)", key=BASEMAP)

shown = [flows.TRUE, flows.RELEASED] if view == SIDE_BY_SIDE else [view]
selections = {v: flows.select(od, truth, released, view=v, top_k=top_k, min_count=min_count,
                              zone=zone, direction=direction, cap=cap) for v in shown}
largest = max([s.lines["shown"].max() for s in selections.values() if not s.lines.empty] or [1])
breaks = flows.width_breaks(largest)
outlines = maps.outlines(data.current().matrix.origins)
colours = {flows.TRUE: charts.TRUE_COLOUR, flows.RELEASED: charts.colour(mechanism)}
map_options = {"size_by": size_by, "selected": zone, "parent_outlines": outlines,
               "basemap": basemap,
               "areas": choropleth.for_map(*zone_colour, od, truth, released)}


def build(v: str, frame) -> maps.FlowMap:
    return maps.flow_map(selections[v], frame, breaks, colour=colours.get(v), **map_options)


def standalone(v: str, frame) -> str:
    """The map of view ``v`` as one HTML file (built afresh: st_folium renames what it draws)."""
    return maps.standalone_html(build(v, frame).map)


map_area, side = (st.columns([3, 2]) if view != SIDE_BY_SIDE
                  else (st.container(), st.columns(3)))
with map_area:
    for column, v in zip(st.columns(len(shown)), shown):
        frame = (flows.zones(od, released, keep_empty=False) if v == flows.RELEASED
                 else zone_frame)
        built = build(v, frame)
        column.caption(f"**{flows.VIEWS[v]}**: {len(selections[v].lines):,} lines drawn "
                       f"({built.flow_layers} grouped layers).")
        with column:
            st_folium(built.map, key=f"{MAP}_{v}", height=maps.HEIGHT, use_container_width=True,
                      returned_objects=RETURNED, render=False,  # one render pass, not two
                      on_change=partial(pick_zone, f"{MAP}_{v}", built.tooltip_to_zone))
        column.download_button(
            f"Map as HTML ({VIEW_NAMES[v].lower()})", partial(standalone, v, frame),
            file_name=f"flow_map_{v}.html", mime="text/html", key=f"{MAP}_{v}_html",
            on_click="ignore", icon=":material/download:",
            help="One file with Leaflet inside: opens in any browser, without internet.")
        if selections[v].truncated():
            column.warning(f"{selections[v].matched[flows.LINES]:,} flows match; only the largest "
                           f"{cap:,} are drawn. Raise the limit under “More lines, basemap”.")
    selection = selections[shown[-1]]
    st.caption(maps.reading_notes(size_by, within=not selection.within.empty)
               + (" " + choropleth.APPROXIMATE if map_options["areas"] else ""))

numbers = {name: st.column_config.NumberColumn(format="%,.1f" if name != "true" else "%,.0f")
           for name in ("true", "released", "difference")}
lists = [(flows.UNPLACED, "To or from places without a position"),
         (flows.WITHIN, "Within one zone (rings on the map)")]
with side if view != SIDE_BY_SIDE else side[0]:
    if zone is not None:
        st.markdown(f"**Commuters of {safe.markdown(names[zone])}**")
        st.dataframe(flows.zone_totals(od, zone, truth, released).to_frame(), hide_index=True,
                     width="stretch", column_config=numbers)
for place, (group, title) in zip(([side] * 2) if view != SIDE_BY_SIDE else side[1:], lists):
    with place:
        left_out = selection.truncated(group)
        st.markdown(f"**{title}**: {len(getattr(selection, group)):,}"
                    + (f" (the largest; {left_out:,} more beyond the limit)" if left_out else ""))
        st.dataframe(selection.listing(group), hide_index=True, width="stretch",
                     column_config=numbers)

st.subheader("The flows shown" + (" on the released map" if view == SIDE_BY_SIDE else ""))
table = selection.table()
st.dataframe(table.drop(columns=["origin_id", "destination_id"]), hide_index=True,
             width="stretch", column_config=numbers)
st.download_button("Flows shown (CSV)", lambda: safe_csv(table), file_name="flows_shown.csv",
                   mime="text/csv", key=f"{MAP}_csv", on_click="ignore",
                   icon=":material/download:")
