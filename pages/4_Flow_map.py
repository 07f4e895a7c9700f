"""Flow map: the commutes a release keeps, distorts, invents or loses, on a map that works offline.

Thin page: settings from :mod:`ui.components.controls`, the release from :mod:`ui.components.runs`, the view controls,
maps and tables from :mod:`ui.maps.flowmap`.
"""

import streamlit as st

from dpcore.data import schematic
from dpcore.mechanisms import postprocess
from ui.components import budget, charts, controls, huge, navigation, runs
from ui.maps import choropleth, flowmap, layers, leaflet_assets

st.set_page_config(page_title="Flow map · Commuting Privacy Lab", page_icon="🗺️",
                   layout="wide")
navigation.menu(controls.keep())
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
budget.stop_if_too_big(od, 1)
unplaced = schematic.needed(od)
if unplaced:   # e.g. a POWSCAR or LODES file alone: draw the flows on a schematic layout
    od = schematic.place(od)
    st.info("**No coordinates in this data, so the map is a schematic layout, not geographic.** "
            "To see real places, upload a zones file (zone, lat, lon) with the commuting file on "
            "the **Data** page.", icon=":material/info:")
mechanism = settings.mechanisms[0]
result = runs.release_of(settings, mechanism)
if result.error:
    st.warning(f"**{charts.name(mechanism)}** could not run with these settings: {result.error} "
               "Only the true flows can be shown.")
st.caption(f"{charts.name(mechanism)}, ε = {settings.epsilon:g}, seed {settings.seed}, "
           f"post-processing: {postprocess.METHODS[settings.postprocess][0]}. Change them in the "
           "sidebar; every page shares them.")

options = flowmap.view_options(od, runs.true_counts(settings), result.released,
                               schematic=bool(unplaced))
areas = None
if not unplaced:   # zone areas come from coordinates
    cell_by_cell = None if huge.is_sparse(options.released) else options.released   # zone totals
    zone_colour = choropleth.controls(cell_by_cell is not None, options.od)
    areas = choropleth.for_map(*zone_colour, options.od, options.truth, cell_by_cell)
chosen = flowmap.selections(options)
side_by_side = options.view == flowmap.SIDE_BY_SIDE
map_area, side = (st.columns([3, 2]) if not side_by_side else (st.container(), st.columns(3)))
selection = chosen[options.shown[-1]]
with map_area:
    flowmap.maps_row(options, chosen, mechanism, areas=areas, schematic=unplaced)
    st.caption(layers.reading_notes(options.size_by,
                                    within=options.rings and not selection.within.empty)
               + (" " + choropleth.APPROXIMATE if areas else ""))
flowmap.side_tables(options, selection, [side] * 3 if not side_by_side else side)
flowmap.flows_table(selection, side_by_side, options.rings)
