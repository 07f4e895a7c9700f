"""Sections of the analysis pages: metric cards, planner's checks, release downloads, sweeps."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore.evaluation import summaries
from dpcore.export import safe_csv
from dpcore.scoring import metrics
from dpcore.release import (
    SPARSE_TABLE_NOTE,
    SPARSE_TOP,
    ReleaseResult,
    RunSettings,
    release_table,
)
from ui.components import charts, runs, state

#: Pass probability at or above which a check shows green, at or below which red (amber between).
LIKELY, UNLIKELY = 0.95, 0.05


def _format(key: str, value: float) -> str:
    """A metric value with its unit: shares as %, percentages signed, counts whole."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    unit = metrics.METRICS[key].unit
    if unit in ("share", "share of n"):
        return f"{value:.1%}"
    if unit in ("cells", "zones"):
        return f"{value:,.0f}"
    if unit == "%":
        return f"{value:+.2f} %" if metrics.METRICS[key].better == "zero" else f"{value:.2f} %"
    return f"{value:,.4g}" + (f" {unit}" if unit and unit != "commuters" else "")


def _rows(frame: pd.DataFrame) -> int:
    """Table height (px) that shows every row without scrolling."""
    return 35 * (len(frame) + 1) + 3


def _seconds(value: float) -> str:
    return f"{value * 1000:.2g} ms" if value < 1 else f"{value:.2f} s"


def scorecard(results: dict[str, ReleaseResult]) -> pd.DataFrame:
    """The mechanisms side by side (one row each), numbers to 4 significant digits."""
    frame = summaries.scorecard(results)
    # Short names, pinned, and units in the headers, so the table fits a laptop's width (and
    # scrolls inside its frame, names still in view, when it does not).
    shown = frame.assign(mechanism=frame["mechanism"].map(charts.short_name))
    if "Bits per commuter" in shown:
        shown["Bits per commuter"] = [charts.NOTHING if pd.isna(bits) else f"{bits:,.0f}"
                                      for bits in shown["Bits per commuter"]]
    config = {"mechanism": st.column_config.TextColumn("Mechanism", pinned=True),
              "Bits per commuter": st.column_config.TextColumn(
                  "Bits per commuter", help=f"{charts.NOTHING}: a central mechanism (everyone's "
                                            "true commute is collected instead)."),
              "Release time (s)": st.column_config.NumberColumn(format="%.3g")}
    for key in summaries.SCORECARD:
        info = metrics.METRICS[key]
        units = f" ({info.unit})" if info.unit else ""
        share = info.unit == "share"
        config[info.label] = st.column_config.NumberColumn(
            info.label + ("" if share else units), format="percent" if share else "%.4g",
            help=info.description)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config)
    return frame


def cards(result: ReleaseResult, k: int) -> None:
    """The headline metrics of one release as metric cards, with run time and communication."""
    items = [(metrics.METRICS[m].label.replace("Top-k", f"Top-{k}"),
              _format(m, result.metrics[m]), metrics.METRICS[m].description)
             for m in summaries.SCORECARD]
    items.append(("Release time", _seconds(result.seconds),
                  f"The mechanism's release; post-processing took "
                  f"{_seconds(result.postprocess_seconds)}."))
    bits = result.bits_per_user
    items.append(("Bits per commuter", "—" if bits is None else f"{bits:,.0f}",
                  "What each commuter sends to the server (local mechanisms). Central mechanisms "
                  "(—) collect everyone's true commute instead."))
    for start in range(0, len(items), 5):
        for column, (label, value, help_text) in zip(st.columns(5), items[start:start + 5]):
            column.metric(label, value, help=help_text)


def checks(result: ReleaseResult) -> pd.DataFrame:
    """The planner's checks of one release: a light, the value, the rule and its source."""
    rows = [{"Check": c.label, "Result": charts.light(c.passed),
             "Value": _format(c.key, c.value), "Rule": c.threshold, "Source": c.source}
            for c in result.checks]
    frame = pd.DataFrame(rows)
    st.dataframe(charts.lit(frame), hide_index=True, width="stretch", height=_rows(frame))
    return frame


def pass_probabilities(table: pd.DataFrame) -> pd.DataFrame:
    """Pass rates over repeated draws (:func:`dpcore.evaluation.summaries.pass_rates`) with a light each."""
    def light(rate):
        if math.isnan(rate):
            return charts.light(None)
        return charts.light(True if rate >= LIKELY else False if rate <= UNLIKELY else "amber")
    frame = pd.DataFrame({"Check": table["label"], "Result": table["pass_rate"].map(light),
                          "P(pass)": table["pass_rate"], "Draws": table["draws"],
                          "Rule": table["threshold"], "Source": table["source"]})
    st.dataframe(charts.lit(frame), hide_index=True, width="stretch", height=_rows(frame),
                 column_config={"P(pass)": st.column_config.ProgressColumn(
                     "P(pass)", format="percent", min_value=0.0, max_value=1.0)})
    return frame


def view_or_stop(settings: RunSettings):
    """The matrix the settings select; when there is nothing to release (no mechanism chosen,
    an empty subset of areas) the page says what to change and stops here."""
    if not settings.mechanisms:
        st.info("Choose at least one mechanism in the sidebar.")
        st.stop()
    try:
        return runs.view(settings)
    except ValueError as error:
        st.warning(str(error))
        st.stop()


def open_tab(labels: dict[str, str], key: str, url: bool = False):
    """Tabs, one per item of ``labels`` (item → label); returns the open tab and its item.

    Only the open tab's content is drawn (``on_change="rerun"``: choosing another tab reruns the
    page, which the caches make cheap). Drawing all of them cost a rerun six metric rows and six
    styled tables, the largest share of the server's CPU after an ε change on Explore; at ED level
    the page's hidden tabs (heat map, heavy hitters, downloads…) cost more than its releases.
    ``url``: the open tab is also the URL parameter ``key`` (its label), so a link opens it.
    """
    items = list(labels)
    tabs = st.tabs([labels[item] for item in items], key=key, on_change="rerun",
                   bind="query-params" if url else None)
    return next(((tab, item) for tab, item in zip(tabs, items) if tab.open),
                (tabs[0], items[0]))


def sweep_runner(spec, key: str, run=runs.sweep) -> runs.Sweep:
    """Run button, progress bar and Stop button of a sweep; returns what is finished so far.

    Finished releases are cached one by one, so Stop (which reruns the page and so interrupts the
    sweep), a smaller grid or fewer trials, and coming back to the page all reuse them. ``run``
    is the sweep (default :func:`ui.components.runs.sweep` of a :class:`ui.components.runs.SweepSpec`): ``run(spec)``
    peeks, ``run(spec, compute=True, progress=…)`` also computes what is missing. A sweep larger
    than one run may hold (:data:`dpcore.limits.RELEASES`) is said and nothing runs.
    """
    try:
        found = run(spec)
    except ValueError as error:  # e.g. more releases than one run may keep in memory
        st.error(str(error))
        return runs.Sweep(pd.DataFrame(), 0, 0, {})
    if not found.complete:
        place = st.empty()  # emptied when the sweep has finished: no stale Run/Stop buttons
        left, right, status = place.container().columns([2, 1, 4], vertical_alignment="center")
        remaining = found.total - found.done
        if left.button(f"Run {remaining:,} release{'s' * (remaining != 1)}", key=f"{key}_run",
                       type="primary", icon=":material/play_arrow:"):
            right.button("Stop", key=f"{key}_stop", icon=":material/stop:",
                         help="Stops after the current release; finished ones are kept.")
            bar = status.progress(found.done / found.total, "Starting…")
            try:
                found = run(spec, compute=True, progress=lambda done, total: bar.progress(
                    done / total, f"{done:,} of {total:,} releases"))
            except (ValueError, OSError) as error:  # the configured scheduler cannot be used
                if runs.scheduler_address() is None:
                    raise
                st.error(f"The sweep could not run on the Dask scheduler "
                         f"{runs.scheduler_address()!r}: {error}")
                return found
            place.empty()
        elif found.done:
            status.caption(f"{found.done:,} of {found.total:,} releases are ready from earlier "
                           f"runs; Run computes the other {remaining:,}.")
    for mechanism, message in found.errors.items():
        st.warning(f"**{charts.name(mechanism)}** left out: {message}")
    return found


#: Largest domain whose release download lists every cell; beyond it only the cells whose true or
#: rounded released count is not 0 (``--only-nonzero`` on the command line).
ALL_CELLS_DOWNLOAD = 1_000_000


def release_downloads(settings: RunSettings, od, truth, results: dict[str, ReleaseResult]) -> None:
    """Each release as a CSV (formula-safe) and the command line that makes the same numbers."""
    only_nonzero = od.domain_size > ALL_CELLS_DOWNLOAD
    done = {key: result for key, result in results.items() if not result.error}
    row = st.container(horizontal=True)
    for key, result in done.items():  # true_count beside released_count: not for publication
        charts.download_button(
            row, f"{charts.short_name(key)} (CSV)",
            lambda result=result: safe_csv(release_table(od, truth, result.released,
                                                         only_nonzero)),
            f"release_{key}_eps{settings.epsilon:g}_seed{settings.seed}.csv", "text/csv",
            f"release_download_{key}", private=True)
    st.caption(charts.PRIVATE_CAPTION)
    uploaded = settings.dataset == state.UPLOADED
    source = "--file YOUR_FILE.csv" if uploaded else None
    extra = " --only-nonzero" if only_nonzero else ""
    sparse = any(result.sparse for result in results.values() if not result.error)
    st.caption("Columns: origin, destination (zone ids), true_count, released_count"
               + (f"; {SPARSE_TABLE_NOTE.format(top=SPARSE_TOP)} (the domain has "
                  f"{od.domain_size:,} cells)." if sparse else
                  f"; only cells whose true or rounded released count is not 0 (the domain has "
                  f"{od.domain_size:,} cells)." if only_nonzero else "."))
    with st.expander("The same releases from the command line"):
        st.code("\n".join(settings.command(key, source, f"release_{key}.csv") + extra
                          for key in done), language="bash")
        st.caption("Every release is fixed by the dataset and its view, the mechanism and its "
                   "parameters, ε, the post-processing and the seed."
                   + (" Use the file you uploaded, with the format, level and zones file you "
                      "chose on the Data page." if uploaded else ""))
