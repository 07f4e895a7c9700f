"""The Tradeoffs page's "Error against ε on one answer" section: a planner's number (inflow to an
area, commutes of 0–10 km) followed across ε per mechanism, the closed-form sd beside the RMSE of
seeded releases (:mod:`dpcore.analyses.tradeoffs`); for OnTheMap its debiased estimate as a series of its own.
Releases run when the user presses Run, with
progress and Stop; the result is kept in the session under its settings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from dpcore import release
from dpcore.analyses import selection as sel, synthesized, tradeoffs
from dpcore.data.od import ODMatrix
from dpcore.limits import RELEASES
from dpcore.release import RunSettings
from ui.components import charts, runs, safe
from ui.components.viewstate import kept

STORED = "tradeoffs_answer_runs"   # session key: {settings: (theory, releases)}


def _chosen(od: ODMatrix) -> tuple[sel.Selection, str]:
    """The area (zones that are both homes and workplaces) and the side, picked by the user."""
    homes = set(od.origins.ids)  # once: per zone it was O(zones²), minutes on national data
    zones = [z for z in od.destinations.ids if z in homes]
    left, right = st.columns([3, 1])
    inside = set(zones)
    by_jobs = [z for z in od.destinations.ids[np.argsort(-od.destination_totals())] if z in inside]
    busiest = by_jobs[0] if by_jobs else None
    picked = kept(left.multiselect, "Area (one or more zones)", "tradeoffs_answer_zones",
                  [busiest] if busiest in zones else zones[:1], options=zones)
    side = kept(right.radio, "Distances of the commuters who", "tradeoffs_answer_side", "work",
                options=["work", "home"], horizontal=True,
                format_func=lambda s: {"work": "work there", "home": "live there"}[s])
    if not picked:
        st.info("Pick at least one zone.")
        st.stop()
    return sel.zones(od, picked), side


#: Legend name of OnTheMap's debiased estimate (:data:`dpcore.analyses.tradeoffs.DEBIASED`).
DEBIASED = f"{charts.name(synthesized.KEY)} · debiased estimate"


def _named(frame: pd.DataFrame) -> pd.DataFrame:
    """The debiased series under its legend name (its key is not a mechanism's)."""
    return frame.assign(mechanism=frame["mechanism"].replace({tradeoffs.DEBIASED: DEBIASED}))


def _figure(theory: pd.DataFrame, found: pd.DataFrame, label: str, unit: str):
    theory, found = _named(theory), _named(found)
    summary = found.rename(columns={"rmse": "mean"})
    fig = charts.curves(summary, "epsilon", charts.escape(f"Error of “{label}” against ε"),
                        "ε (privacy budget, log scale)", f"RMSE of the answer ({unit})",
                        theory=theory.rename(columns={"epsilon": "x", "sd": "value"}),
                        theory_label="theory (closed-form sd)", log_x=True, log_y=True)
    frame = summary.rename(columns={"mean": "rmse"}).merge(
        theory[["mechanism", "epsilon", "sd"]].rename(columns={"sd": "theory_sd"}),
        on=["mechanism", "epsilon"], how="left")
    frame.insert(0, "answer", label)
    return fig, frame


def section(settings: RunSettings, od: ODMatrix, epsilons: tuple, trials: int) -> None:
    """Pick an area and an answer, run the releases, draw RMSE and theory against ε."""
    chosen, side = _chosen(od)
    options = tradeoffs.choices(od, chosen, side)
    label = kept(st.selectbox, "Answer", "tradeoffs_answer", next(iter(options)),
                 options=list(options))
    if label not in options:
        label = next(iter(options))
    query, part = options[label]
    specs = runs.mechanism_specs(settings)
    total = len(specs) * len(epsilons) * trials
    if not RELEASES.contains(total):
        st.info(f"{total:,} releases are more than one run may hold ({RELEASES.high:,}): "
                "fewer ε, trials or mechanisms.")
        return
    key = (settings.dataset, settings.view, specs, tuple(epsilons), trials, settings.seed,
           chosen.name, label)
    stored = st.session_state.setdefault(STORED, {})
    if key not in stored:
        place = st.empty()   # the buttons and progress, cleared once the releases are made
        left, right, status = place.container().columns([2, 1, 4], vertical_alignment="center")
        status.caption(f"{total:,} releases (Base): {len(specs)} mechanisms × {len(epsilons)} ε "
                       f"× {trials} trials, seed {settings.seed}.")
        if not left.button("Run", key="tradeoffs_answer_run", icon=":material/play_arrow:"):
            return
        truth = release.true_values(od)
        right.button("Stop", key="tradeoffs_answer_stop", icon=":material/stop:",
                     help="Stops the run (pressing it reruns the page).")
        bar = status.progress(0.0, "Starting…")
        try:
            table = tradeoffs.experiment(
                od, truth, query, part, specs, epsilons, trials, settings.seed,
                progress=lambda done, n: bar.progress(done / n, f"{done:,} of {n:,} releases")
                and None)
        except ValueError as error:   # a setting a mechanism cannot run with
            place.empty()
            st.warning(str(error))
            return
        stored[key] = (tradeoffs.theory(od, truth, query, part, specs, epsilons), table)
        place.empty()
    theory, table = stored[key]
    fig, frame = _figure(theory, tradeoffs.rmse(table), label, tradeoffs.unit(query))
    charts.show(fig, frame, "answer_error_against_epsilon", "tradeoffs_answer", private=True)
    charts.table_download(table, "answer_every_release", "tradeoffs_answer_releases",
                          "Every release's answer (CSV)", private=True)
    without = sorted({k for k, _ in specs} - set(theory["mechanism"]))
    bounds = sorted(set(theory.loc[~theory["exact"].astype(bool), "mechanism"]))
    st.caption("Solid: the RMSE of the answer over the releases (Base), its band the 95 % "
               "chi-square interval of the error's sd. Dotted: the sd of the released answer "
               "from the mechanism's closed-form variance of a sum at the true answer "
               "(covariances included, as the Analyses intervals use; equal to the expected "
               "RMSE for these unbiased releases; a share's: the delta method's sd, in percentage "
               "points, for the central noises only, whose share intervals were measured to "
               "cover)."
               + (" OnTheMap: the series under its own name is the raw synthetic answer, its "
                  "dotted line that answer's expected RMSE from its law, bias included (its "
                  "answers are biased towards a uniform spread of homes, and the bias, not the "
                  "randomness, dominates at small ε). “" + DEBIASED + "” is the number the Places "
                  "page gives instead, with its interval: s·A/m − |S|α on the same releases, "
                  "unbiased; its dotted line is its closed-form sd (the 95 % half-width / 1.96; none when "
                  "a workplace of the answer has too few workers for the normal law)."
                  if synthesized.KEY in set(theory["mechanism"]) else "")
               + (" No closed form for: " + safe.markdown(
                   ", ".join(charts.short_name(k) for k in without)) + "." if without else "")
               + (" Their dotted line is an upper bound (released sparsely here: unnamed empty "
                  "cells summed at their mean, which can only lower the error; or Hadamard "
                  "response at ε ≤ 1, whose variance of a sum is bounded): " + safe.markdown(
                      ", ".join(charts.short_name(k) for k in bounds)) + "." if bounds else ""))
