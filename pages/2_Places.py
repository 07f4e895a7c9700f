"""Places: the planner's questions (inflow, destinations, distance, direction, A → B, every zone
compared), true vs each release, each answer with its 95 % interval and a verdict; or the
answers of a published release alone (its two files uploaded), with their intervals.

Thin page: settings from :mod:`ui.components.controls`, releases from :mod:`ui.components.runs`,
answers and intervals from :mod:`dpcore.analyses` through :mod:`ui.places.view`, a published
release through :mod:`ui.places.published`, charts from :mod:`ui.places.figures`.
"""

import streamlit as st

from dpcore.mechanisms import postprocess
from ui.components import budget, charts, controls, navigation, panels, runs, safe
from ui.places import figures, published, view

st.set_page_config(page_title="Places · Commuting Privacy Lab", page_icon="📍", layout="wide")
navigation.menu(controls.keep())
st.title("Places: the planner's questions")
if published.source() == "published":
    published.show()   # the release's own answers, then the page stops
settings = controls.run_controls()
od = panels.view_or_stop(settings)
budget.stop_if_too_big(od, len(settings.mechanisms))
st.caption("OnTheMap's analyses (inflow and outflow, destinations, distance, direction, paired "
           "areas, area comparison) answered on the true table and on each release at "
           f"ε = {settings.epsilon:g} (seed {settings.seed}, "
           f"{postprocess.METHODS[settings.postprocess][0]}), every "
           "released answer with its 95 % interval where one holds. The command line gives the "
           "same answers: `python3 -m dpcore analyse` (docs/ANALYSES.md).")

choice = view.inputs(od)
results = runs.releases(settings, only=())
for key, result in results.items():
    if result.error:
        st.warning(f"**{charts.name(key)}** could not run with these settings: {result.error}")
results = {key: result for key, result in results.items() if not result.error}
if not results:
    st.stop()
found = view.table(od, choice, runs.true_counts(settings), results, settings)
shown = view.drawn(found, choice)
if shown.empty:
    st.info("Nothing to draw for this selection.")
    st.stop()

title = f"{view.ANALYSES[choice.analysis]}: true vs released (ε = {settings.epsilon:g})"
if choice.analysis == "direction":
    st.plotly_chart(figures.rose(shown, title), key="places_rose", config=charts.CONFIG)
charts.show(figures.bars(shown, choice.analysis, title), safe.verbatim(shown, "selection", "part"),
            f"places_{choice.analysis}", "places_bars", private=True)
st.caption("Whiskers: each release's 95 % interval, computed from the mechanism's law alone "
           "(no true counts); a mechanism without one has none. The legend says how each was "
           "obtained; in full:" + (" Bars and whiskers beyond the axis are cut (the axis "
                                    "follows the truth); their values are in the table below."
                                    if figures.axis_edge(shown) is not None else ""))
for line in view.verdicts(shown, choice, settings.postprocess):
    st.markdown("- " + line)
if choice.shares:
    st.markdown("**Shares** (per cent), each with its 95 % interval where one is offered: "
                "the delta method for the central noises; see the method column.")
    st.dataframe(safe.verbatim(view.share_table(od, choice, runs.true_counts(settings), results,
                                                settings), "selection"),
                 hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.2f")
                                for c in ("true (%)", "released (%)", "low (%)", "high (%)")})
with st.expander("Every answer (ranks and all parts)"):
    if len(found) > view.TABLE_ROWS:
        st.caption(f"The first {view.TABLE_ROWS:,} of {len(found):,} answers; the download "
                   "holds them all.")
    st.dataframe(safe.verbatim(found.head(view.TABLE_ROWS), "selection", "part"),
                 hide_index=True, width="stretch")
    charts.table_download(found, f"places_{choice.analysis}_all", "places_all", private=True)
