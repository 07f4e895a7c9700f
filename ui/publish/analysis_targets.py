"""The Plan & publish page's "Targets on the answers" section: a margin on a family of analysis
answers ("inflow of every zone within ±2 % at 95 %", or a share: "the share within 10 km of
every zone within ±2 percentage points", :mod:`dpcore.analyses.share_targets`) and the smallest
ε per mechanism
(:mod:`dpcore.analyses.planning`, instant) and, on request, for a flat OpenDP publish
(:mod:`dpcore.interfaces.publish_targets`, a few seconds: OpenDP calibrates each ε tried) and
for TopDown with the level shares that need the least ε (:mod:`dpcore.interfaces.topdown_targets`).
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore import mechanisms, release
from dpcore.analyses import planning, share_targets
from dpcore.interfaces import publish, publish_targets, topdown_targets
from dpcore.release import RunSettings
from ui.components import charts, runs
from ui.components.viewstate import kept

PLANNED = "plan_answer_targets"   # session keys: {settings: plans}
PUBLISHED = "plan_answer_targets_published"
TOPDOWN = "plan_answer_targets_topdown"
UNITS = {"relative": "% of each true answer", "absolute": "commuters"}
HALF_WIDTH, HALF_WIDTH_POINTS = ("Its 95 % half-width (commuters)",
                                 "Its 95 % half-width (percentage points)")


#: Every family a target can name: sums (:mod:`dpcore.analyses.planning`) and shares.
FAMILIES = {**planning.FAMILIES,
            **{key: text.replace("{km:g} km", "a distance")
               for key, text in share_targets.FAMILIES.items()}}


def target_inputs():
    """A target on sums (planning.Target) or on shares (share_targets.ShareTarget)."""
    left, middle, right = st.columns([3, 2, 2])
    family = kept(left.selectbox, "Answers", "plan_answers_family", "inflow",
                  options=list(FAMILIES), format_func=FAMILIES.get)
    if family in share_targets.FAMILIES:
        return _share_target(family, middle, right)
    unit = kept(right.radio, "Margin in", "plan_answers_unit", "relative", options=list(UNITS),
                format_func=UNITS.get)
    value = kept(middle.number_input, "Each within ± (95 % interval)",
                 f"plan_answers_within_{unit}", 2.0 if unit == "relative" else 50.0,
                 min_value=0.001, format="%.4g")
    return planning.Target(family, value / 100 if unit == "relative" else value,
                           unit == "relative")


def _share_target(family: str, middle, right) -> share_targets.ShareTarget:
    """A margin in percentage points, and the distance of the share within it."""
    points = kept(middle.number_input, "Each within ± percentage points (95 % interval)",
                  "plan_answers_within_points", 2.0, min_value=0.01, max_value=99.0,
                  format="%.4g")
    km = 10.0
    if family == "share_within":
        km = kept(right.number_input, "Distance (km)", "plan_answers_km", 10.0, min_value=0.1,
                  max_value=1000.0, step=5.0)
    return share_targets.ShareTarget(family, points / 100, float(km))


def _epsilon(plan: planning.Plan) -> str:
    if math.isnan(plan.epsilon):
        return "—"
    return f"> {planning.EPSILON_RANGE[1]:g}" if math.isinf(plan.epsilon) else \
        f"{plan.epsilon:.3g}"


def shown(plans: list[planning.Plan]) -> pd.DataFrame:
    """One row per mechanism or publishing method, as shown (a share's half-width in points)."""
    points = bool(plans) and _shares(plans[0].target)
    return pd.DataFrame([{
        "Mechanism / publish": (mechanisms.get(p.mechanism).name
                                if p.mechanism in mechanisms.names() else p.mechanism),
        "ε needed": _epsilon(p), "Deciding answer": p.worst_answer,
        HALF_WIDTH_POINTS if points else HALF_WIDTH: p.worst_half_width * (100 if points else 1),
        "How": p.method}
        for p in plans])


def _shares(target) -> bool:
    return isinstance(target, share_targets.ShareTarget)


def _topdown(settings: RunSettings, od, target: planning.Target) -> list[planning.Plan]:
    """A TopDown publish's proposed level shares and ε (and the even split's), on request; at
    the zones or, when they have parents, at the parent level. Not for shares (a TopDown
    folder's shares are ranges over its bounds, not the delta method's)."""
    if _shares(target):
        return []
    level = "fine level"
    if od.has_parent_level:
        level = kept(st.radio, "TopDown: answers asked at", "plan_answers_topdown_level",
                     "fine level", options=["fine level", "parent level"], horizontal=True)
    key = (settings.dataset, settings.view, settings.delta, settings.neighbours, target, level)
    stored = st.session_state.setdefault(TOPDOWN, {})
    place = st.empty()
    if key not in stored and place.button(
            "Also for TopDown (proposes the level shares)", key="plan_answers_topdown",
            icon=":material/account_tree:",
            help="Tries each level's share of ρ in steps of 0.1 and keeps the one that needs "
                 "the least ε: a few seconds."):
        place.empty()
        with st.spinner("Trying the level shares…"):
            try:
                stored[key] = topdown_targets.plan(od, target, level=level, delta=settings.delta,
                                                   neighbours=settings.neighbours).plans()
            except ValueError as error:
                st.caption(f"TopDown: {error}")
                return []
    return stored.get(key, [])


def section(settings: RunSettings) -> None:
    """Target inputs, the answers per mechanism at once, a flat publish's on request."""
    target = target_inputs()
    od = runs.view(settings)
    truth = release.true_values(od)
    specs = [(k, settings.own_params(k)) for k in settings.mechanisms]
    planned = st.session_state.setdefault(PLANNED, {})   # every OD pair at ED level: ~1 s
    mine = (settings.dataset, settings.view, runs.mechanism_specs(settings), target)
    if mine not in planned:
        try:
            planned[mine] = (share_targets if _shares(target) else planning).plan(
                od, truth, specs, target)
        except ValueError as error:
            st.warning(str(error))
            return
    plans = planned[mine]
    key = (settings.dataset, settings.view, settings.delta, target)
    stored = st.session_state.setdefault(PUBLISHED, {})
    place = st.empty()   # the button, gone once the publish's answers are in
    if key not in stored and place.button("Also for a flat OpenDP publish",
                                          key="plan_answers_publish", icon=":material/calculate:",
                                          help="OpenDP calibrates the noise at each ε tried: a "
                                               "few seconds."):
        place.empty()
        found = []
        with st.spinner("Calibrating OpenDP's noise…"):
            for mechanism in publish.MECHANISMS:
                delta = settings.delta if mechanism == publish.GAUSSIAN else 0.0
                try:
                    found.append(publish_targets.plan(od, truth, mechanism, target, delta))
                except ValueError as error:   # e.g. the Gaussian without δ
                    st.caption(f"{publish.MECHANISMS[mechanism]}: {error}")
        stored[key] = found
    plans = plans + stored.get(key, []) + _topdown(settings, od, target)
    st.markdown(f"**Target: {target.describe()}.**")
    charts.wrapped_table(shown(plans))
    charts.table_download(planning.table(plans), "plan_answer_targets", "plan_answer_targets",
                          "Answers (CSV)", private=True)
    note = (" The sidebar's post-processing is ignored here: these are raw (Base) releases, "
            "whose sums are unbiased." if settings.postprocess != "base" else "")
    if _shares(target):
        st.caption("Each share's 95 % interval is the one the Places page gives it: the delta "
                   "method on the closed forms of its two sums at their true values, offered "
                   "for the central noises only (Laplace, Gaussian, discrete Laplace, and a flat "
                   "OpenDP publish); the share must also be given at all (its total clearly "
                   "above 0, Fieller's g < 0.05). Zones whose true total is 0 are left out; "
                   "TopDown is not planned on shares (its folders give ranges over their "
                   "bounds)." + note)
        return
    st.caption("Each answer's 95 % interval is the one the Analyses give it (closed form of the "
               "sum's variance, covariances included) at its true value; the deciding answer is "
               "the one furthest from its margin, and bisection on ε finds where it meets it. "
               "A relative margin leaves out answers whose true value is 0. TopDown's rows use "
               "the bound its published folders give (a sum of k cells within ±k times the "
               "level's margin, which holds for every cell at once: conservative), for the "
               "shares of ρ named (top level first). OnTheMap's rows plan the interval its "
               "Places answers get around the debiased estimate (its raw synthetic answers are "
               "biased and have none); its synthesis keeps a posterior draw's randomness at "
               "every ε, so a tight margin on small areas can be out of reach." + note)
