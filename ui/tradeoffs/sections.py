"""The Tradeoffs page's sections: sweeps drawn as curves, with theory where it exists.

Each section specifies a sweep (:class:`ui.components.runs.SweepSpec`), runs or peeks it with the shared
runner (progress, Stop, cached jobs) and draws the mean over trials with its confidence band
(:func:`dpcore.evaluation.summaries.summarise`), with the data behind the figure to download.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data import datasets, views
from dpcore.evaluation import summaries, thesis
from dpcore.limits import RELEASES
from dpcore.mechanisms import postprocess
from dpcore.release import RunSettings
from dpcore.scoring import metrics
from ui.components import charts, panels, runs


def sweep_chart(spec: runs.SweepSpec, key: str, title: str, metric: str, log_y: bool, *,
                x: str = "epsilon", x_title: str = "ε (privacy budget)", style: str | None = None,
                theory: pd.DataFrame | None = None, theory_label: str = "theory",
                log_x: bool = False) -> runs.Sweep:
    """Run/peek a sweep and draw its mean curves with bands and downloads (the summary, and
    every release's metrics one row per trial)."""
    found = panels.sweep_runner(spec, key)
    if found.table.empty:
        return found
    info = metrics.METRICS[metric]
    y_title = f"{info.label} ({info.unit})" if info.unit else info.label
    by = ["mechanism", x] + ([style] if style else [])
    summary = summaries.summarise(found.table, metric, by=by)
    if style == "postprocess":  # the methods' names, not their keys ("Base-Pos", not base_pos)
        summary[style] = [postprocess.METHODS[m][0].split(" (")[0] if m in postprocess.METHODS
                          else m for m in summary[style]]
    fig = charts.curves(summary, x, title, x_title, y_title, style=style, theory=theory,
                        theory_label=theory_label, log_x=log_x, log_y=log_y)
    charts.show(fig, summary, key, key, private=True)
    note = charts.not_on_log_axis(summary, x, x_title) if log_y else None
    if note:
        st.caption(note)
    charts.table_download(found.table, f"{key}_every_release", f"{key}_every_release",
                          "Every release (CSV)", private=True)
    return found


def epsilon_section(spec: runs.SweepSpec, method: str, metric: str, log_y: bool) -> runs.Sweep:
    """Error against ε with each mechanism's theoretical RMSE: exact for raw releases, an upper
    bound after a projection that can only shrink the error (:data:`NEVER_WORSE_THAN_RAW`)."""
    name = postprocess.METHODS[method][0]
    with_theory = (method in postprocess.NEVER_WORSE_THAN_RAW
                   and metric in ("rmse", "rmse_freq"))
    exact = method == "base"
    found = sweep_chart(spec, "tradeoffs_epsilon",
                        f"{metrics.METRICS[metric].label} against ε ({name})", metric, log_y,
                        theory=runs.theory(spec, metric) if with_theory else None,
                        theory_label="theory" if exact else "theory bound")
    if not with_theory:
        st.caption("Theory curves are drawn for RMSE when the post-processing is Base, Base-Pos, "
                   "Post-Pos, Norm or Norm-Sub, where the variance gives them in closed form.")
    elif exact:
        st.caption("Dotted: the expected RMSE from each mechanism's closed-form variance (none "
                   "for mechanisms without a closed form).")
    else:
        st.caption(f"Dotted: the expected RMSE of the *raw* release from each mechanism's "
                   f"closed-form variance — an upper bound here, because {name} projects the "
                   "release onto a set holding every possible true table and so can only shrink "
                   "its error.")
    return found


def release_times(found: list[runs.Sweep | None]) -> None:
    """Mean release time per mechanism over the sweeps run on this page."""
    tables = [f.table for f in found if f is not None and not f.table.empty]
    times = summaries.release_times(pd.concat(tables)) if tables else pd.DataFrame()
    if len(times):
        charts.show(charts.runtime_bars(times, "Mean release time per mechanism"), times,
                    "release_times", "tradeoffs_times")
    else:
        st.caption("Run a sweep above to measure release times.")


def scheduler_note() -> None:
    """Where the sweeps run: the configured Dask scheduler, or this server."""
    address = runs.scheduler_address()
    if address:
        st.caption(f":material/hub: Sweeps run on the Dask scheduler `{address}` (set by "
                   f"`{runs.SCHEDULER_ENV}` or `[dpcore] scheduler` in the app's secrets).")


_REPORT = "tradeoffs_thesis_report"


def thesis_report(settings: RunSettings, epsilons: tuple, trials: int) -> None:
    """Build the thesis chapter-5 report (:mod:`dpcore.evaluation.thesis`, drawn by :mod:`report`) for the
    current dataset with the page's ε grid, trials and seed, with progress and Stop; then offer it
    as a zip (report.html and every figure's CSV). Kept in this session only."""
    from report import thesis_html  # plotly drawing, only when a report is asked for

    od = runs.matrix_of(settings.dataset, views.View())
    key = (settings.dataset, id(od), epsilons, trials, settings.seed)
    built = st.session_state.get(_REPORT)
    scenarios = thesis.levels(od).scenarios
    releases = len(scenarios) * len(thesis.MECHANISMS) * len(epsilons) * trials
    labels = ", ".join(scenario.label for scenario in scenarios)
    st.caption(f"Reruns the thesis's chapter 5 on this dataset ({labels}) with the ε grid and "
               f"trials above: {len(thesis.MECHANISMS)} "
               f"mechanisms, {releases:,} releases scored after Base, Base-Pos and the thesis's "
               "Base-Cut, then the rank tables — the same as `python3 -m dpcore reproduce-thesis`.")
    if not RELEASES.contains(releases):
        st.info(f"{releases:,} releases are more than one run may hold ({RELEASES.high:,}): "
                f"{RELEASES.why}")
        return
    if built is None or built[0] != key:
        left, right, status = st.columns([2, 1, 4], vertical_alignment="center")
        if not left.button("Build the thesis report", key="thesis_report_build",
                           icon=":material/description:"):
            return
        right.button("Stop", key="thesis_report_stop", icon=":material/stop:")
        bar = status.progress(0.0, "Starting…")
        address = runs.scheduler_address()
        chapter = thesis.run(od, epsilons=epsilons, trials=trials, seed=settings.seed,
                             scheduler=runs.client(address) if address else None,
                             source=datasets.DATASETS.get(settings.dataset),
                             progress=lambda done, total: bar.progress(
                                 done / total, f"{done:,} of {total:,} releases"))
        bar.progress(1.0, "Drawing the report…")
        built = (key, thesis_html.zipped(chapter), chapter.seconds)
        st.session_state[_REPORT] = built
        status.empty()
    charts.download_button(st, f"Thesis report (zip, built in {built[2]:.0f} s)",
                           lambda: built[1], "thesis_chapter5_report.zip", "application/zip",
                           "thesis_report_download", private=True)
    st.caption(charts.PRIVATE_CAPTION)
