"""What the Places page asks and shows: the side, the selection and the analysis chosen; every
release's answers beside the true ones, with their 95 % intervals and a verdict per answer.

The answers and intervals are :mod:`dpcore.analyses`' (the CLI's ``analyse``); this module only
gathers the choices, lays the answers side by side and says what they mean. A choice the data
cannot answer (a radius or distance on data without positions, a parent on data without parents)
is a message and the page stops: never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.analyses import answers, intervals, selection as sel, shares, simulated
from dpcore.data.od import ODMatrix
from dpcore.release import ReleaseResult, RunSettings
from ui.components import charts, safe
from ui.components.viewstate import kept

ANALYSES = {
    "flows": "Inflow, outflow, live and work",
    "destination": "Ranked destinations",
    "distance": "Distance bands",
    "direction": "Compass directions",
    "paired": "A → B (paired areas)",
    "comparison": "Every zone compared",
}
SIDES = {"work": "work in the selection (where do they come from?)",
         "home": "live in the selection (where do they go?)"}
HOW = {"zones": "Zones", "parent": "A parent area", "radius": "A radius around a zone"}
MEASURES = {"inflow": "Inflow (live outside, work in it)",
            "outflow": "Outflow (live in it, work outside)",
            "live_and_work": "Live and work in it",
            "jobs": "Jobs (work in it)", "employed_residents": "Employed residents (live in it)"}
#: The true and released answers' table, as shown and downloaded.
SHOWN = ["mechanism", "key", "analysis", "selection", "part", "rank", "true", "released", "low",
         "high", "relative error (%)", "within tolerance", "interval holds the truth", "method"]
#: OnTheMap's rows add "estimate" (debiased) after "released": its intervals are around it.

#: The distance of the distance analysis's share: the first band's upper edge.
SHARE_KM = answers.BANDS_KM[1]
#: What each share is, as the page names it.
SHARE_NAMES = {"share_live_and_work_work": "Share of its jobs held by its residents",
               "share_live_and_work_home": "Share of its employed residents working in it",
               "share_within_work": f"Share of its workers' commutes under {SHARE_KM:g} km",
               "share_within_home": f"Share of its residents' commutes under {SHARE_KM:g} km"}
SHARE_COLUMNS = ["mechanism", "share", "selection", "true (%)", "released (%)", "low (%)",
                 "high (%)", "method"]

#: Rows of the table of every answer drawn on the page (a comparison of every national tract has
#: hundreds of thousands); the download holds them all.
TABLE_ROWS = 5_000


@dataclass(frozen=True)
class Choice:
    analysis: str
    queries: tuple
    tolerance: float   # per cent
    top: int
    measure: str       # comparison: which of the three flows is drawn
    shares: tuple = ()   # flows: the live-and-work shares; distance: the share within 10 km


def stop(message: str) -> None:
    """A message the user can act on, then the page stops."""
    st.warning(safe.markdown(message))
    st.stop()


def _selection(od: ODMatrix, label: str, key: str, default: int = 0) -> sel.Selection:
    """One selection: zones, a parent area or a radius around a zone (messages, never errors)."""
    ids = list(dict.fromkeys([*od.origins.ids, *od.destinations.ids]))
    how = kept(st.radio, f"{label}: select by", f"{key}_how", "zones", url=f"{key}_how",
               options=list(HOW), format_func=HOW.get, horizontal=True)
    try:
        if how == "zones":
            chosen = kept(st.multiselect, f"{label}: zones", f"{key}_zones",
                          [ids[min(default, len(ids) - 1)]], url=f"{key}_zones", options=ids)
            return sel.zones(od, chosen)
        if how == "parent":
            if od.origins.parent is None:
                stop("This data has no parent areas (such as the counties of the EDs): select "
                     "zones or a radius instead.")
            parents = list(dict.fromkeys(od.origins.parent))
            return sel.parent(od, kept(st.selectbox, f"{label}: parent area", f"{key}_parent",
                                       parents[min(default, len(parents) - 1)],
                                       url=f"{key}_parent", options=parents))
        left, right = st.columns(2)
        km = kept(left.number_input, "Radius (km)", f"{key}_km", 10.0, url=f"{key}_km",
                  min_value=0.0, max_value=1000.0, step=5.0)
        centre = kept(right.selectbox, f"{label}: around the zone", f"{key}_around",
                      ids[min(default, len(ids) - 1)], url=f"{key}_around", options=ids)
        return sel.radius(od, km, zone=centre)
    except ValueError as error:
        stop(f"{label}: {error}")


def inputs(od: ODMatrix, zones: str = "places") -> Choice:
    """The analysis, its side and selection(s), the tolerance and how many parts to draw.
    ``zones`` prefixes the selections' keys: each set of zones (the loaded data, each level of a
    published release) keeps its own, since a zone kept from another set is not an option."""
    left, middle, right = st.columns([2, 1, 1])
    analysis = kept(left.selectbox, "Analysis", "places_analysis", "flows", url="analysis",
                    options=list(ANALYSES), format_func=ANALYSES.get)
    tolerance = kept(middle.number_input, "Tolerance (± %)", "places_tolerance", 5.0,
                     url="tolerance", min_value=0.1, max_value=100.0, step=1.0,
                     help="An answer is within tolerance when |released − true| ≤ this share "
                          "of the true value.")
    top = kept(right.number_input, "Zones drawn", "places_top", 15, url="top", min_value=3,
               max_value=50, help="Ranked and compared analyses: the zones with the most true "
                                  "commuters are drawn; the table keeps every rank.")
    measure, asked = "inflow", ()
    try:
        if analysis == "comparison":
            level = "zones"
            if od.origins.parent is not None:
                level = kept(st.radio, "Compare", "places_level", "parents", url="compare",
                             options=["parents", "zones"], horizontal=True,
                             format_func={"parents": "every parent area",
                                          "zones": "every zone"}.get)
            measure = kept(st.radio, "Drawn", "places_measure", "inflow", url="measure",
                           options=["inflow", "outflow", "live_and_work"], horizontal=True,
                           format_func=MEASURES.get)
            found = answers.comparison(od, level)
        elif analysis == "paired":
            home = _selection(od, "A (home area)", f"{zones}_a")
            work = _selection(od, "B (work area)", f"{zones}_b", default=1)
            found = answers.paired(od, home, work)
        else:
            side = "work"
            if analysis != "flows":
                side = kept(st.radio, "The commuters counted", "places_side", "work",
                            url="side", options=list(SIDES), format_func=SIDES.get,
                            horizontal=True)
            chosen = _selection(od, "Selection", f"{zones}_sel")
            make = {"flows": lambda: answers.flows(od, chosen),
                    "destination": lambda: answers.destinations(od, chosen, side),
                    "distance": lambda: answers.distance(od, chosen, side),
                    "direction": lambda: answers.direction(od, chosen, side)}[analysis]
            found = make()
            share = {"flows": lambda: (shares.live_and_work(od, chosen, "work"),
                                       shares.live_and_work(od, chosen, "home")),
                     "distance": lambda: (shares.within(od, chosen, side, SHARE_KM),)}
            asked = share[analysis]() if analysis in share else ()
    except ValueError as error:
        stop(str(error))
    return Choice(analysis, tuple(found), float(tolerance), int(top), measure, asked)


def interval_rule(settings: RunSettings, key: str, od: ODMatrix, result: ReleaseResult):
    """The interval rule of one mechanism's release at these settings: a closed form, else
    simulated on a public stand-in within a live page's size limit."""
    return simulated.rule(od, settings.spec(key), result.released, sparse=result.sparse,
                          live=True)


def table(od: ODMatrix, choice: Choice, truth, results: dict[str, ReleaseResult],
          settings: RunSettings) -> pd.DataFrame:
    """Every mechanism's answers beside the true ones (:data:`SHOWN`); ranked analyses keep
    every zone, each release ranked by its own answers."""
    frames = []
    for key, result in results.items():
        frame = answers.evaluate(list(choice.queries), truth, result.released,
                                 interval_rule(settings, key, od, result))
        frames.append(frame.assign(mechanism=charts.name(key), key=key))
    found = pd.concat(frames, ignore_index=True)
    if choice.analysis == "comparison":   # parent areas: one selection each, one part ""
        found["part"] = found["part"].where(found["part"] != "", found["selection"])
    error = found["released"] - found["true"]
    with np.errstate(divide="ignore", invalid="ignore"):
        found["relative error (%)"] = np.where(found["true"] > 0, 100 * error / found["true"],
                                               np.nan)
    found["within tolerance"] = np.where(
        error.abs() <= choice.tolerance / 100 * found["true"], "yes", "no")
    covered = found["low"].notna()
    found["interval holds the truth"] = np.where(
        ~covered, "no interval",
        np.where((found["low"] <= found["true"]) & (found["true"] <= found["high"]), "yes", "no"))
    if "estimate" in found:   # OnTheMap: the debiased estimate its interval is around
        return found[SHOWN[:SHOWN.index("released") + 1] + ["estimate"]
                     + SHOWN[SHOWN.index("released") + 1:]]
    return found[SHOWN]


def share_table(od: ODMatrix, choice: Choice, truth, results: dict[str, ReleaseResult],
                settings: RunSettings) -> pd.DataFrame:
    """Every mechanism's shares (:data:`SHARE_COLUMNS`) in per cent, with their delta-method
    intervals where offered (:mod:`dpcore.analyses.shares`)."""
    frames = [shares.evaluate(list(choice.shares), truth, result.released,
                              interval_rule(settings, key, od, result)
                              ).assign(mechanism=charts.name(key))
              for key, result in results.items()]
    return in_percent(pd.concat(frames, ignore_index=True))[SHARE_COLUMNS]


def in_percent(found: pd.DataFrame) -> pd.DataFrame:
    """Shares as the page shows them: named, and their values in per cent."""
    found = found.assign(share=found["analysis"].map(SHARE_NAMES))
    for column in ("true", "released", "low", "high"):
        found[f"{column} (%)"] = 100 * found[column]
    return found


def drawn(found: pd.DataFrame, choice: Choice) -> pd.DataFrame:
    """The rows the charts draw: ranked and compared analyses keep the ``top`` parts with the
    most true commuters (the same parts for every mechanism), or with the most released ones
    when there is no truth (a published release alone)."""
    if choice.analysis == "comparison":
        found = found[found["analysis"] == choice.measure]
    if choice.analysis not in ("destination", "comparison"):
        return found
    first = found[found["mechanism"] == found["mechanism"].iloc[0]]
    keep = first.nlargest(choice.top, "true" if first["true"].notna().any() else "released")[
        "part"]
    order = {part: i for i, part in enumerate(keep)}
    return found[found["part"].isin(order)].sort_values(
        "part", key=lambda parts: parts.map(order), kind="stable")


def verdicts(found: pd.DataFrame, choice: Choice, postprocess: str) -> list[str]:
    """One plain sentence per mechanism: how many answers are within tolerance, how many
    intervals hold the truth, and how the intervals were obtained."""
    lines = []
    for mechanism, rows in found.groupby("mechanism", sort=False):
        within = int((rows["within tolerance"] == "yes").sum())
        method = rows["method"].iloc[0]
        has = rows["low"].notna()
        held = int((rows.loc[has, "interval holds the truth"] == "yes").sum())
        if has.any():
            said = (f"its 95 % intervals hold the truth in {held} of {int(has.sum())}. "
                    f"Intervals: {safe.markdown(method)}.")
            if "estimate" in rows and rows["estimate"].notna().any():
                said = ("its synthetic answers (what OnTheMap users read) are biased towards "
                        "a uniform spread and have no interval; the 95 % intervals of its "
                        "debiased estimates (column “estimate”, the dotted bars) hold the truth "
                        f"in {held} of {int(has.sum())}. Intervals: {safe.markdown(method)}.")
        else:
            why = safe.markdown(method.removeprefix("no interval: "))
            said = f"it has **no interval** ({why})."
            if rows["key"].iloc[0] in intervals.COVERED and postprocess != "base":
                said += " Choose the post-processing “base” in the sidebar for its intervals."
            elif method in simulated.REFUSED_POST.values():
                said += (" Choose the post-processing “base” or “norm” in the sidebar for its "
                         "simulated intervals.")
        lines.append(f"**{safe.markdown(mechanism)}** — within ±{choice.tolerance:g} %: "
                     f"**{'yes' if within == len(rows) else 'no'}** ({within} of {len(rows)} "
                     f"answers); {said}")
    return lines
