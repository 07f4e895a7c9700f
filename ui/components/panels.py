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
    number = f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:,.4g}"   # 23,230, not 2.323e+04
    return number + (f" {unit}" if unit and unit != "commuters" else "")


def _rows(frame: pd.DataFrame) -> int:
    """Table height (px) that shows every row without scrolling."""
    return 35 * (len(frame) + 1) + 3


def _seconds(value: float) -> str:
    return f"{value * 1000:.2g} ms" if value < 1 else f"{value:.2f} s"


def _bits(bits: float | None) -> str:
    """Bits each commuter sends; :data:`ui.components.charts.NOTHING` for a central mechanism."""
    return charts.NOTHING if bits is None or pd.isna(bits) else f"{bits:,.0f}"


#: The scorecard's first column: each metric's name with its unit ("RMSE (real commutes)
#: (commuters)", the longest, fits its width).
METRIC = "Metric"
METRIC_WIDTH = 220
#: The frame's width (px) at 1,280 px with the sidebar open, and a mechanism column's width in the
#: scorecard: its share of what the metrics leave, between the narrowest that shows "100.0%" and
#: a comfortable one.
FRAME = 818
SCORE_WIDTH = (74, 140)


def scorecard(results: dict[str, ReleaseResult]) -> pd.DataFrame:
    """The mechanisms side by side: one row per metric, one column per mechanism (its
    abbreviation), each value with its unit as on the metric cards; returns the table of
    :func:`dpcore.evaluation.summaries.scorecard` (one row per mechanism, for the CSV).

    One row per mechanism needed 14 columns, 1,843 px at 1,280 px wide (818 px frame): the table
    scrolled sideways. Turned, its width grew with the mechanisms chosen: past six (with long
    names such as "Random rounding (not DP)") it scrolled again. Now each mechanism's column has
    its share of the frame (:data:`SCORE_WIDTH`) under an abbreviation of at most 8 characters
    (:func:`ui.components.charts.abbreviation`), its full name in the column's help; the metrics'
    definitions are in the first column's help. Past 8 mechanisms the table scrolls with the
    metrics' names pinned."""
    frame = summaries.scorecard(results)
    labels, cells = [], {charts.abbreviation(key): [] for key in frame["mechanism"]}
    for key in summaries.SCORECARD:
        info = metrics.METRICS[key]
        # a share reads as %; "False zero cells" needs no "(cells)"
        shown = info.unit and info.unit not in ("share", "share of n", *info.label.split())
        labels.append(info.label + (f" ({info.unit})" if shown else ""))
        for mechanism, value in zip(cells, frame[info.label]):
            cells[mechanism].append(_format(key, value))
    labels += ["Release time", "Bits per commuter"]
    for mechanism, seconds, bits in zip(cells, frame["Release time (s)"],
                                        frame["Bits per commuter"]):
        cells[mechanism] += [_seconds(seconds), _bits(bits)]
    definitions = [f"{metrics.METRICS[key].label}: {metrics.METRICS[key].description}"
                   for key in summaries.SCORECARD]
    config = {METRIC: st.column_config.TextColumn(
        METRIC, pinned=True, width=METRIC_WIDTH, help=" ".join(definitions) + " Bits per "
        f"commuter: what each commuter sends (local mechanisms); {charts.NOTHING}: a central "
        "mechanism, which collects everyone's true commute instead.")}
    width = max(SCORE_WIDTH[0], min(SCORE_WIDTH[1], (FRAME - METRIC_WIDTH) // len(cells)))
    config.update({short: st.column_config.TextColumn(short, alignment="right", width=width,
                                                      help=charts.name(key))
                   for short, key in zip(cells, frame["mechanism"])})
    table = pd.DataFrame({METRIC: labels, **cells})
    spelt = [f"{short}: {charts.name(key)}" for short, key in zip(cells, frame["mechanism"])
             if short != charts.name(key)]
    if spelt:
        st.caption("Columns: " + "; ".join(spelt) + ".")
    st.dataframe(table, hide_index=True, width="stretch", height=_rows(table),
                 column_config=config)
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
    items.append(("Bits per commuter", _bits(bits),
                  "What each commuter sends to the server (local mechanisms). Central mechanisms "
                  "(—) collect everyone's true commute instead."))
    for start in range(0, len(items), 5):
        for column, (label, value, help_text) in zip(st.columns(5), items[start:start + 5]):
            column.metric(label, value, help=help_text)


#: A check's source as its table shows it (the heading above names the guides in full, the
#: Source header's help spells each out): "UK DfT " and the long "no official threshold" cell
#: made the column 300 px wide.
SHORT_SOURCES = {"UK DfT TAG M3.1": "TAG M3.1",
                 "no official threshold; TAG's 5 % tolerance": "none (TAG's 5 %)",
                 "ONS travel-to-work areas": "ONS TTWA"}
#: The checks' columns, for Scores and for the pass rates over repeated draws: fixed widths that
#: fit the 818 px frame at 1,280 px with the sidebar open. Sized by Streamlit, the check's name
#: was cut ("Zones crossing the 75 % self-containn") and the source pushed past the frame.
CHECK_COLUMNS = {
    "Check": st.column_config.TextColumn("Check", width=300),
    "Result": st.column_config.TextColumn(
        "Result", width=80, help="pass; fail; uncertain (over repeated draws: passes in "
        f"between {UNLIKELY:.0%} and {LIKELY:.0%} of them); n/a (does not apply to these data, "
        "e.g. no parent zones or no coordinates)."),
    "Value": st.column_config.TextColumn("Value", width=85, help="This release's value."),
    "P(pass)": st.column_config.ProgressColumn(
        "P(pass)", width=95, format="percent", min_value=0.0, max_value=1.0,
        help="Share of the independent releases that pass the check."),
    "Draws": st.column_config.NumberColumn("Draws", width=55,
                                           help="Releases the share is over."),
    "Rule": st.column_config.TextColumn("Rule", width=85, help="What a release must meet to pass."),
    "Source": st.column_config.TextColumn(
        "Source", width=170, help="Where the rule comes from. TAG M3.1: UK Department for "
        "Transport, Transport Analysis Guidance unit M3.1 (Table 2: the GEH statistic); TxDOT: "
        "Texas Department of Transportation; ONS TTWA: Office for National Statistics, "
        "travel-to-work areas; none (TAG's 5 %): no official threshold, TAG's 5 % tolerance "
        "used."),
}


def _short_source(source: str) -> str:
    for long, short in SHORT_SOURCES.items():
        source = source.replace(long, short)
    return source


def _checks_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Draw a checks table (``frame``: its columns named as :data:`CHECK_COLUMNS`), lit."""
    frame = frame.assign(Source=frame["Source"].map(_short_source))
    st.dataframe(charts.lit(frame), hide_index=True, width="stretch", height=_rows(frame),
                 column_config={name: CHECK_COLUMNS[name] for name in frame.columns})
    return frame


def checks(result: ReleaseResult) -> pd.DataFrame:
    """The planner's checks of one release: a light, the value, the rule and its source."""
    return _checks_table(pd.DataFrame(
        [{"Check": c.label, "Result": charts.light(c.passed), "Value": _format(c.key, c.value),
          "Rule": c.threshold, "Source": c.source} for c in result.checks]))


def pass_probabilities(table: pd.DataFrame) -> pd.DataFrame:
    """Pass rates over repeated draws (:func:`dpcore.evaluation.summaries.pass_rates`) with a light each."""
    def light(rate):
        if math.isnan(rate):
            return charts.light(None)
        return charts.light(True if rate >= LIKELY else False if rate <= UNLIKELY else "amber")
    return _checks_table(pd.DataFrame(
        {"Check": table["label"], "Result": table["pass_rate"].map(light),
         "P(pass)": table["pass_rate"], "Draws": table["draws"], "Rule": table["threshold"],
         "Source": table["source"]}))


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
