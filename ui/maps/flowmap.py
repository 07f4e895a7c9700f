"""The Flow map page's sections: what to show, the maps, and the tables beside them.

The page gathers the run settings and the release (:mod:`ui.components.controls`, :mod:`ui.components.runs`); this module
draws the view controls (:func:`view_options`), the maps with their downloads (:func:`maps_row`),
and the lists and tables of the flows shown (:func:`side_tables`, :func:`flows_table`). Flow
selection is :mod:`dpcore.evaluation.flows`; the Leaflet maps are :mod:`ui.maps.layers` (served by the app itself,
no third party).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st
from streamlit_folium import st_folium

from dpcore.data.od import ODMatrix
from dpcore.evaluation import flows
from ui.components import charts, data, huge, safe
from ui.components.viewstate import kept
from ui.maps import layers

VIEW, SIDE_BY_SIDE = "flowmap_view", "side_by_side"
RULE, TOP_K, MIN_COUNT = "flowmap_rule", "flowmap_top_k", "flowmap_min_count"
ZONE, DIRECTION, SIZE_BY = "flowmap_zone", "flowmap_direction", "flowmap_size_by"
ROLL_UP, MORE_LINES, CAP, BASEMAP = ("flowmap_roll_up", "flowmap_more_lines", "flowmap_cap",
                                     "flowmap_basemap")
RINGS, MIN_KM = "flowmap_rings", "flowmap_min_km"
MAP = "flowmap_map"
#: Where :func:`ui.components.viewstate.kept` holds a control's value (the widget is
#: ``kept_widget_<key>``).
KEPT = "kept_"
#: Session key: the default shortest line the kept value was last measured against.
MIN_KM_DEFAULT = "flowmap_min_km_default"
ALL_ZONES = ""
#: Only a click on an object reruns the page: panning and zooming stay in the browser.
RETURNED = ["last_object_clicked_tooltip"]
VIEW_NAMES = {flows.TRUE: "True", flows.RELEASED: "Released", flows.DIFFERENCE: "Difference",
              SIDE_BY_SIDE: "True | released side by side"}
NUMBERS = {name: st.column_config.NumberColumn(format="%,.1f" if name != "true" else "%,.0f")
           for name in ("true", "released", "difference")}
#: The table of flows shown: 790 px in all, headers short, the long meanings in the help.
COLUMNS = {
    "origin": st.column_config.TextColumn("Origin", width=160),
    "destination": st.column_config.TextColumn("Destination", width=160),
    **{name: st.column_config.NumberColumn(name.capitalize(), width=80 if name == "true" else 90,
                                           format="%,.1f" if name != "true" else "%,.0f")
       for name in ("true", "released", "difference")},
    "release_effect": st.column_config.TextColumn(
        "Release did", width=110, help="What the release did to the flow: "
        + "; ".join(flows.STATUSES.values()) + " (the map's legend gives the bounds used)."),
    "shown_as": st.column_config.TextColumn(
        "Shown as", width=100, help="; ".join(f"{k}: {v}" for k, v in flows.SHOWN_AS.items())),
}


@dataclass
class Options:
    """What the user chose to see; ``od``/``truth``/``released`` are rolled up when asked."""

    od: ODMatrix
    truth: np.ndarray
    released: np.ndarray | None
    view: str
    top_k: int | None
    min_count: int | None
    zone: str | None
    zone_names: dict[str, str]
    direction: str
    size_by: str
    cap: int
    basemap: bool
    #: Draw the flows within one zone as rings (off by default: see ``FlowSelection.table``).
    rings: bool = False
    #: Shortest line drawn, km (:func:`dpcore.evaluation.flows.default_min_km`).
    min_km: float = 0.0

    @property
    def shown(self) -> list[str]:
        return [flows.TRUE, flows.RELEASED] if self.view == SIDE_BY_SIDE else [self.view]


def _pick_zone(map_key: str, tooltip_to_zone: dict[str, str]) -> None:
    """st_folium callback: a click on a zone point makes it the zone filter."""
    zone = layers.clicked_zone(st.session_state.get(map_key), tooltip_to_zone)
    if zone is not None:
        st.session_state[KEPT + ZONE] = zone


def view_options(od: ODMatrix, truth, released, schematic: bool = False) -> Options:
    """The row of controls above the map, and the expander of line length, count and basemap
    (``schematic``: the zones are at a made-up layout, so no length in km).

    What the view shows is kept in the session and the URL (:func:`ui.components.viewstate.kept`),
    so that a reload or a shared link keeps it (issue 42). Not the line limit nor the basemap: a
    link should neither slow a page down nor make its reader's browser ask a third party for tiles.
    """
    top = st.columns([3, 2, 3, 2])
    views = list(VIEW_NAMES) if released is not None else [flows.TRUE]
    view = kept(top[0].radio, "Show", VIEW, views[0], url="view", options=views,
                format_func=VIEW_NAMES.__getitem__, horizontal=True)
    rule = kept(top[1].radio, "Which flows", RULE, "top", url="rule", options=["top", "min"],
                horizontal=True, format_func={"top": "Largest k", "min": "At least"}.__getitem__,
                help="Applied separately to flows between zones (lines), within one zone "
                     "(rings) and to or from places without a position (listed), by the "
                     "count the view shows: true, released, or the larger of the two.")
    if rule == "top":
        top_k = kept(top[1].number_input, "k", TOP_K, 250, url="top_k", min_value=1,
                     max_value=100_000)
        min_count = None
    else:
        top_k, min_count = None, kept(top[1].number_input, "Commuters", MIN_COUNT, 100,
                                      url="min_count", min_value=1, max_value=10**7)
    rolls_up = od.has_parent_level and not huge.is_huge(od) and not huge.is_sparse(released)
    if rolls_up and kept(
            top[3].toggle, "Roll up", ROLL_UP, False, url="roll_up",
            help="Roll the flows up to parent zones (e.g. ED → county): sum each pair of "
                 "parents' flows, true and released alike. The noise of many small cells adds "
                 "up in each parent flow."):
        od, truth, released = flows.roll_up(od, truth, released)
    zone_frame = flows.zones(od, truth, keep_empty=False)
    if huge.is_huge(od):   # a picker of 85,000 zones would not load: the busiest ones
        zone_frame = zone_frame.nlargest(huge.PICKER_ZONES, "residents")
        top[3].caption(f"Zones offered: the {huge.PICKER_ZONES:,} with most residents. No roll-up: "
                       f"{huge.why(od)}.")
    names = {ALL_ZONES: "All zones", **dict(zip(zone_frame["id"], zone_frame["label"]))}
    zone = kept(top[2].selectbox, "Zone (or click one on the map)", ZONE, ALL_ZONES, url="zone",
                options=list(names), format_func=names.__getitem__,
                valid=f"empty (all zones) or the id of one of the {len(names) - 1:,} zones "
                      f"offered, e.g. {next(iter(zone_frame['id']), '')}") or None
    # Shown only with a zone chosen (a disabled radio's faint label fails the contrast check).
    direction = (kept(top[2].radio, "Its flows", DIRECTION, flows.EITHER, url="direction",
                      options=list(flows.DIRECTIONS), horizontal=True,
                      format_func=flows.DIRECTIONS.__getitem__)
                 if zone is not None else flows.EITHER)
    size_by = kept(top[3].radio, "Size zones by", SIZE_BY, next(iter(layers.SIZE_BY)),
                   url="size_by", options=list(layers.SIZE_BY), horizontal=True,
                   format_func=lambda k: k.capitalize(), help=" ".join(layers.SIZE_BY.values()))
    rings = kept(top[3].toggle, "Rings: flows within one zone", RINGS, False, url="rings",
                 help="Commuters who live and work in the same zone, drawn as rings "
                      "around it. Off by default: where zones are many, the largest "
                      "flows are nearly all within one zone, and their rings would cover "
                      "the lines between zones. Listed beside the map either way.")
    with st.expander("More lines, basemap"):
        min_km = 0.0 if schematic else _shortest_line(od)   # a schematic's distances mean nothing
        cap = flows.DEFAULT_LINE_CAP
        if st.checkbox(f"Draw more than {cap:,} lines (slower)", key=MORE_LINES):
            cap = st.number_input("At most", cap, 20_000, 5_000, 1_000, key=CAP)
            st.warning(f"Up to {cap:,} lines: building and drawing the map takes longer, and "
                       "the page may feel slow.")
        basemap = st.checkbox("OpenStreetMap basemap (needs internet; your browser then "
                              "requests map tiles from tile.openstreetmap.org)", key=BASEMAP)
    return Options(od, truth, released, view, top_k, min_count, zone, names, direction,
                   size_by, cap, basemap, rings, min_km if zone is None else 0.0)


def _shortest_line(od: ODMatrix) -> float:
    """The shortest line drawn, km. Its default depends on the map's width (the data, a roll-up):
    a value the user left at the default follows it, one they set stays."""
    default = float(flows.default_min_km(od))
    measured = st.session_state.get(MIN_KM_DEFAULT)
    if measured is not None and st.session_state.get(KEPT + MIN_KM) == measured:
        st.session_state[KEPT + MIN_KM] = default
    st.session_state[MIN_KM_DEFAULT] = default
    return kept(st.number_input, "Shortest line drawn (km)", MIN_KM, default, url="min_km",
                min_value=0.0, max_value=100_000.0,
                help=f"By default {flows.SHORTEST_SHARE:.0%} of the map's width: a shorter "
                     "line hides under the points of its two zones, so the largest flows "
                     "between neighbouring zones would fill the map with lines no one can see. "
                     "0 ranks every flow between zones. Not applied to one zone's flows: "
                     "all of them are drawn.")


def selections(options: Options) -> dict[str, flows.FlowSelection]:
    """The flows each shown map draws (:func:`dpcore.evaluation.flows.select`)."""
    return {v: flows.select(options.od, options.truth, options.released, view=v,
                            top_k=options.top_k, min_count=options.min_count, zone=options.zone,
                            direction=options.direction, cap=options.cap,
                            min_km=options.min_km)
            for v in options.shown}


def maps_row(options: Options, chosen: dict[str, flows.FlowSelection], mechanism: str,
             **extra) -> None:
    """The map (or the true and released maps side by side), each with its HTML download;
    ``extra`` goes to :func:`ui.maps.layers.flow_map` (e.g. coloured zone areas)."""
    largest = max([s.lines["shown"].max() for s in chosen.values() if not s.lines.empty] or [1])
    breaks = flows.width_breaks(largest)
    colours = {flows.TRUE: charts.TRUE_COLOUR, flows.RELEASED: charts.colour(mechanism)}
    map_options = {"size_by": options.size_by, "selected": options.zone,
                   "parent_outlines": layers.outlines(data.current().matrix.origins),
                   "basemap": options.basemap, "rings": options.rings, **extra}

    def build(v: str, frame, legends_inside: bool = True) -> layers.FlowMap:
        return layers.flow_map(chosen[v], frame, breaks, colour=colours.get(v),
                             legends_inside=legends_inside, **map_options)

    def standalone(v: str, frame) -> str:
        """The map of view ``v`` as one HTML file (built afresh: st_folium renames what it
        draws), its legends inside."""
        return layers.standalone_html(build(v, frame).map)

    for column, v in zip(st.columns(len(chosen)), chosen):
        counts = options.released if v == flows.RELEASED else options.truth
        frame = flows.zones(options.od, counts, keep_empty=False)
        if huge.is_huge(options.od):   # only the zones of the flows drawn, not all 85,000
            frame = frame[frame["id"].isin(_zones_of(chosen[v]) | {options.zone})]
        built = build(v, frame, legends_inside=False)  # legends under the map, not over it
        column.caption(f"**{flows.VIEWS[v]}**: {len(chosen[v].lines):,} lines drawn "
                       f"({built.flow_layers} grouped layers)." + (f" {chosen[v].note}"
                                                                 if chosen[v].note else "")
                       + _length_note(chosen[v]))
        with column:
            st_folium(built.map, key=f"{MAP}_{v}", height=layers.HEIGHT, use_container_width=True,
                      returned_objects=RETURNED, render=False,  # one render pass, not two
                      on_change=partial(_pick_zone, f"{MAP}_{v}", built.tooltip_to_zone))
            st.html(layers.legends_beside(built.legends))
        charts.download_button(  # every map's tooltips hold the true count
            column, f"Map as HTML ({VIEW_NAMES[v].lower()})", partial(standalone, v, frame),
            f"flow_map_{v}.html", "text/html", f"{MAP}_{v}_html", private=True,
            help="One file with Leaflet inside: opens in any browser, without internet.")
        if chosen[v].truncated():
            column.warning(f"{chosen[v].matched[flows.LINES]:,} flows match; only the largest "
                           f"{options.cap:,} are drawn. Raise the limit under “More lines, "
                           "basemap”.")
    st.caption(charts.PRIVATE_CAPTION)


def _length_note(selection: flows.FlowSelection) -> str:
    """What the shortest-line rule left out, for the caption over the map."""
    if not selection.min_km:
        return ""
    return (f" Only flows at least {selection.min_km:,g} km long are ranked and drawn as "
            f"lines: a shorter line would hide under its zones' points "
            f"({selection.too_short:,} flows between zones are shorter; change the length "
            "under “More lines, basemap”).")


def _zones_of(selection: flows.FlowSelection) -> set[str]:
    """Zone ids at either end of the flows a selection shows."""
    parts = [getattr(selection, group) for group in flows.GROUPS]
    return {str(z) for part in parts for z in (*part["origin"], *part["destination"])}


def side_tables(options: Options, selection: flows.FlowSelection, places) -> None:
    """The chosen zone's totals, then the flows within one zone and those to or from places
    without a position (``places``: the two or three containers to draw them in)."""
    first, *rest = places
    if options.zone is not None:
        with first:
            st.markdown(f"**Commuters of {safe.markdown(options.zone_names[options.zone])}**")
            st.dataframe(flows.zone_totals(options.od, options.zone, options.truth,
                                           options.released).to_frame(),
                         hide_index=True, width="stretch", column_config=NUMBERS)
    lists = [(flows.UNPLACED, "To or from places without a position"),
             (flows.WITHIN, "Within one zone (rings on the map)" if options.rings else
              "Within one zone (not drawn: turn on “Rings” to draw them)")]
    for place, (group, title) in zip(rest or [first, first], lists):
        with place:
            left_out = selection.truncated(group)
            listing = selection.listing(group)
            st.markdown(f"**{title}**: {len(listing):,}"
                        + (f" (the largest; {left_out:,} more beyond the limit)"
                           if left_out else ""))
            _wrapped_list(listing)


#: Rows of a list beside the map (the table of flows shown below has them all).
LISTED = 15


def _wrapped_list(listing: pd.DataFrame) -> None:
    """The first :data:`LISTED` flows of a list as an HTML table whose names wrap (a grid cut
    "Kildare → No fixed place of worl" without an ellipsis and pushed the released column off
    its narrow column)."""
    shown = listing.head(LISTED).assign(
        true=listing["true"].head(LISTED).map("{:,.0f}".format),
        released=listing["released"].head(LISTED).map(
            lambda v: charts.NOTHING if pd.isna(v) else f"{v:,.1f}"))
    charts.wrapped_table(shown)   # not in a scrolling box: one the keyboard cannot reach
    if len(listing) > LISTED:
        st.caption(f"The largest {LISTED} of {len(listing):,}: all of them are in “The flows "
                   "shown” below and its CSV.")


def flows_table(selection: flows.FlowSelection, side_by_side: bool, rings: bool) -> None:
    """Every flow shown, as a table and a formula-safe CSV."""
    st.header("The flows shown" + (" on the released map" if side_by_side else ""))
    table = selection.table(rings)
    if table["released"].notna().any():  # the map's classes (fitted to the flows drawn)
        bounds = layers.difference_bounds(pd.concat([selection.lines, selection.within]))
        labels = flows.status_labels(*bounds, short=True)
        table["release_effect"] = [labels.get(status, "") for status in flows.classify(
            table["true"], table["released"].fillna(0), *bounds)]
    # Fixed widths that add up to less than the frame at 1,280 px (818 px): sized to their
    # content, the columns ran to 920 px and cut "Shown as" off.
    st.dataframe(table.drop(columns=["origin_id", "destination_id"]), hide_index=True,
                 width="stretch", column_config=COLUMNS)
    charts.table_download(table, "flows_shown", MAP, "Flows shown (CSV)", private=True)
