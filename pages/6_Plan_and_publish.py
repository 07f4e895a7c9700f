"""Plan & publish: the ε a planner's target needs, per mechanism, with today's disclosure control
(not DP) beside it and deployed budgets on the ε ruler; then a release to publish, with its
manifest (flat, WLS or TopDown), the budget ledger that outlives the session, and the
three publishing methods side by side.

Thin page: settings from :mod:`ui.components.controls`, the planner sections from
:mod:`ui.publish.planner` (computations in :mod:`dpcore.evaluation.planner`) and
:mod:`ui.publish.analysis_targets` (targets on analysis answers, :mod:`dpcore.analyses.planning`), the publish section and the budget ledger from
:mod:`ui.publish.publishing` (OpenDP's noise through :mod:`dpcore.interfaces.publish`).
"""

import streamlit as st

from ui.components import controls, navigation, panels
from ui.publish import analysis_targets, planner, publishing

st.set_page_config(page_title="Plan & publish · Commuting Privacy Lab", page_icon="🎯",
                   layout="wide")
navigation.menu(controls.keep())
settings = controls.run_controls()
st.title("Plan & publish")
st.caption("Set the accuracy your table must keep; the planner finds, per mechanism, the "
           "smallest ε that keeps it. The sidebar's ε is drawn as “your ε” for comparison.")
panels.view_or_stop(settings)

st.header("How much ε does your target need?")
planner.section(settings)

st.header("How much ε do the answers you will use need?")
analysis_targets.section(settings)

st.header("Publish a release")
publishing.section(settings)

st.header("Flat, WLS and TopDown side by side")
publishing.comparison_section(settings)
