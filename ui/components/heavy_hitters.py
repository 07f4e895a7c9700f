"""Heavy hitters (PEM, TreeHist) on the pages: Explore's top-k found, Tradeoffs' recall against ε,
and the figures the Learn lesson draws.

Runs come from :mod:`dpcore.evaluation.heavy_hitters` (seeded by the one rule of
:mod:`dpcore.release`, so trial 0 of a sweep is the Explore run) and are kept in the sweeps' job
store (:func:`ui.components.runs.job_store`): shared for bundled data, this session's own for an upload.
Commute names are untrusted: tables show them as plain text, figures escape them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dpcore.data import views
from dpcore.evaluation import heavy_hitters, summaries
from dpcore.evaluation.heavy_hitters import PROTOCOLS, HeavyHitters
from dpcore.limits import HEAVY_HITTERS_K
from dpcore.release import RunSettings
from ui.components import charts, panels, runs
from ui.components.viewstate import kept

#: Colours of the two protocols (Paul Tol's "muted" scheme, apart from the mechanisms').
COLOURS = {"pem": "#882255", "treehist": "#44AA99"}
#: The frequency oracles' top-k recall in the Tradeoffs sweep is measured at this k.
SWEEP_K = runs.SweepSpec.k


def found(dataset: str, view: views.View, od, protocol: str, epsilon: float, k: int, seed: int,
          trial: int = 0) -> HeavyHitters:
    """One run of ``protocol`` on the view's matrix ``od`` (cached; ValueError with a message
    for a k the data cannot fill)."""
    store = runs.job_store(dataset)
    key = ("heavy_hitters", dataset, view.whole, protocol, float(epsilon), k, seed, trial)
    result = store.get(key)
    if result is None:
        result = heavy_hitters.find(protocol, od, epsilon, k, seed, trial)
        store.put(key, result)
    return result


def k_input(od, key: str) -> int | None:
    """The k to find, or None (with a message) when the data has fewer non-empty commutes."""
    k = kept(st.number_input, HEAVY_HITTERS_K.label, key, HEAVY_HITTERS_K.default, url="hh_k",
             min_value=HEAVY_HITTERS_K.low, max_value=HEAVY_HITTERS_K.high,
             help="The protocols look for the k busiest commutes without estimating every cell.")
    if k > od.nonzero:
        st.warning(f"This data has only {od.nonzero:,} non-empty commutes: choose k of at most "
                   f"{od.nonzero:,}.")
        return None
    return int(k)


# ------------------------------------------------------------------------------------- Explore
def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """Counts, ranks and estimates as text in one format (thousands separated), with
    :data:`ui.components.charts.NOTHING` where there is none: the true count too, which as a
    number column read 218860 beside an estimate's 221,571."""
    def text(values, pattern: str) -> list[str]:
        return [charts.NOTHING if pd.isna(v) else pattern.format(v) for v in values]
    return table.assign(**{column: text(table[column], "{:,.0f}") for column in
                           ("true_count", "true_rank", "found_rank", "estimated_count")})


def estimates_chart(tables: dict[str, pd.DataFrame], k: int, epsilon: float) -> go.Figure:
    """Estimated against true count of every cell each protocol found."""
    fig = go.Figure()
    top = 1.0
    for protocol, table in tables.items():
        rows = table.dropna(subset=["estimated_count"])
        top = max(top, float(rows["true_count"].max()), float(rows["estimated_count"].max()))
        fig.add_scatter(x=rows["true_count"], y=rows["estimated_count"], mode="markers",
                        name=PROTOCOLS[protocol][0], marker=dict(color=COLOURS[protocol], size=9),
                        text=[charts.escape(c) for c in rows["commute"]],
                        hovertemplate="%{text}<br>true %{x:,}, estimated %{y:,.0f}<extra>"
                                      f"{PROTOCOLS[protocol][0]}</extra>")
    fig.add_scatter(x=[0, top], y=[0, top], mode="lines", name="Estimate = truth",
                    line=dict(color=charts.TRUE_COLOUR, dash="dot"))
    return charts.layout(fig, f"The {k} commutes each protocol found: estimated vs true count "
                              f"(ε = {epsilon:g})", "True count (commuters)",
                         "Estimated count (commuters)")


def section(settings: RunSettings, od) -> None:
    """Explore: PEM and TreeHist at the page's ε and seed, the top k found against the true."""
    st.caption("A frequency oracle estimates every one of the d possible commutes; for a whole "
               "country (10⁹–10¹⁰ cells) that is too much. PEM and TreeHist find the busiest "
               "commutes under ε-local DP by growing them bit by bit: the server only ever "
               "estimates a few thousand prefixes. See the Learn page (Heavy hitters) for one "
               "phone's view.")
    k = k_input(od, "explore_hh_k")
    if k is None:
        return
    try:
        with st.spinner("Finding the busiest commutes…"):
            results = {p: found(settings.dataset, settings.view, od, p, settings.epsilon, k,
                                settings.seed) for p in PROTOCOLS}
    except ValueError as error:
        st.warning(str(error))
        return
    tables = {p: heavy_hitters.compare(od, r, k) for p, r in results.items()}
    cols = st.columns(2 * len(results))
    for i, (protocol, result) in enumerate(results.items()):
        score = heavy_hitters.scores(od, result, k)
        name = PROTOCOLS[protocol][0]
        cols[2 * i].metric(f"{name}: recall", f"{score['recall']:.0%}",
                           help=f"Share of the true top {k} that {name} found.")
        cols[2 * i + 1].metric(f"{name}: precision", f"{score['precision']:.0%}",
                               help=f"Share of the {k} commutes found that are at least as busy "
                                    f"as the true {k}-th.")
    charts.show(estimates_chart(tables, k, settings.epsilon),
                pd.concat([t.assign(protocol=PROTOCOLS[p][0]) for p, t in tables.items()]),
                "heavy_hitters_found", "explore_hh_chart", private=True)
    for protocol, table in tables.items():
        with st.expander(f"{PROTOCOLS[protocol][0]}: the true top {k} and the commutes found",
                         expanded=True):
            st.caption(PROTOCOLS[protocol][1] + f". {results[protocol].groups} levels, cells "
                       f"written in {results[protocol].bits} bits.")
            st.dataframe(_readable(table.drop(columns=["origin", "destination"])),
                         hide_index=True, width="stretch", column_config={
                             "commute": "Commute", "true_count": "True count",
                             "true_rank": "True rank", "found_rank": "Rank found",
                             "estimated_count": "Estimated count", "status": "Status"})
            st.caption(f"{charts.NOTHING}: not in the true top {k} (true rank) or not found "
                       "(rank found, estimated count).")
            charts.table_download(table, f"heavy_hitters_{protocol}_eps{settings.epsilon:g}_"
                                  f"seed{settings.seed}", f"explore_hh_{protocol}", private=True)


# ------------------------------------------------------------------------------------ Tradeoffs
@dataclass(frozen=True)
class RecallSweep:
    """Both protocols × ε × trials on one view (hashable: it keys the Run/Stop widgets)."""

    dataset: str
    view: views.View
    epsilons: tuple[float, ...]
    k: int
    trials: int
    seed: int

    def jobs(self) -> list[tuple[int, str, float]]:
        """Trial by trial (a sweep stopped early has every curve with fewer trials)."""
        return [(trial, protocol, epsilon) for trial in range(self.trials)
                for protocol in PROTOCOLS for epsilon in self.epsilons]


def recall_sweep(spec: RecallSweep, compute: bool = False, progress=None) -> runs.Sweep:
    """The finished runs of ``spec`` (with ``compute``, also the missing ones, reporting
    ``progress(done, total)`` after each: Stop interrupts there and keeps what is done)."""
    store, od = runs.job_store(spec.dataset), runs.matrix_of(spec.dataset, spec.view)
    frames, jobs = [], spec.jobs()
    for trial, protocol, epsilon in jobs:
        key = ("heavy_hitters_rows", spec.dataset, spec.view.whole, protocol, epsilon, spec.k,
               spec.seed, trial)
        rows = store.get(key)
        if rows is None and compute:
            rows = heavy_hitters.trial_rows(protocol, od, epsilon, spec.k, spec.seed, trial)
            store.put(key, rows)
        if rows is None:
            continue
        frames.append(rows)
        if progress is not None:
            progress(len(frames), len(jobs))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["mechanism", "epsilon", "k", "trial", "metric", "value"])
    return runs.Sweep(table, len(frames), len(jobs), {})


def _oracle_recall(main: runs.Sweep | None) -> pd.DataFrame:
    """The frequency oracles' top-k recall from the page's ε sweep (empty when none ran)."""
    if main is None or main.table.empty:
        return pd.DataFrame()
    return summaries.summarise(main.table, "topk_recall").assign(
        method="frequency oracle, then its top k")


def recall_section(settings: RunSettings, od, epsilons: tuple, trials: int,
                   main: runs.Sweep | None = None) -> None:
    """Tradeoffs: top-k recall against ε for PEM and TreeHist (mean over trials, 95 % bands),
    beside the frequency oracles' from the page's ε sweep when it ran at the same k."""
    st.header("Finding the busiest commutes: heavy hitters against ε")
    k = k_input(od, "tradeoffs_hh_k")
    if k is None:
        return
    spec = RecallSweep(settings.dataset, settings.view, tuple(float(e) for e in epsilons), k,
                       int(trials), settings.seed)
    done = panels.sweep_runner(spec, "tradeoffs_hh", run=recall_sweep)
    if done.table.empty:
        return
    summary = summaries.summarise(done.table, "recall").assign(method="heavy-hitter protocol")
    oracles = _oracle_recall(main) if k == SWEEP_K else pd.DataFrame()
    summary = pd.concat([summary, oracles], ignore_index=True)
    fig = charts.curves(summary, "epsilon", f"Recall of the true top {k} against ε",
                        "ε (privacy budget)", f"Top-{k} recall (share of the true top {k} found)",
                        style="method")
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    charts.show(fig, summary, "heavy_hitters_recall", "tradeoffs_hh_chart", private=True)
    charts.table_download(done.table, "heavy_hitters_every_release", "tradeoffs_hh_every_run",
                          "Every release (CSV)", private=True)
    if k != SWEEP_K:
        note = (f" The frequency oracles' recall is measured at k = {SWEEP_K} (in the sweep "
                f"above): set k = {SWEEP_K} to compare.")
    elif oracles.empty:
        note = " The frequency oracles' curves appear once the error-against-ε sweep above has run."
    else:
        note = (" Frequency oracles: every cell estimated (after the sidebar's post-processing), "
                "then the top k taken.")
    st.caption(f"{done.done:,} of {done.total:,} runs, {trials} trial(s) per point; the band is "
               "the 95 % confidence interval of the mean. Each run's CPU time and precision are "
               "in the “Every release” CSV." + note)


# ---------------------------------------------------------------------------------------- Learn
def walk_chart(walk: pd.DataFrame, k: int, name: str) -> go.Figure:
    """The server's walk: prefixes estimated and kept per level (log scale), and how many of the
    true top k are still within reach."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        row_heights=[0.6, 0.4])
    fig.add_bar(x=walk["level"], y=walk["candidates"], name="Prefixes estimated",
                marker_color=charts.ZERO_COLOUR, row=1, col=1,
                hovertemplate="level %{x}: %{y:,} prefixes estimated<extra></extra>")
    fig.add_bar(x=walk["level"], y=walk["kept"], name="Prefixes kept",
                marker_color=charts.TRUE_COLOUR, marker_pattern_shape="/", row=1, col=1,
                hovertemplate="level %{x}: %{y:,} kept<extra></extra>")
    fig.add_scatter(x=walk["level"], y=walk["true_top_k_in_reach"], mode="lines+markers",
                    name=f"True top {k} still within reach", row=2, col=1,
                    line=dict(color=COLOURS["pem"]), marker=dict(symbol="diamond", size=8),
                    customdata=walk[["prefix_bits"]].to_numpy(),
                    hovertemplate="level %{x} (%{customdata[0]} bits): %{y} of " f"{k}"
                                  "<extra></extra>")
    charts.layout(fig, f"How the {name} server walks the prefix tree", "", "", height=460)
    fig.update_layout(barmode="overlay")
    fig.update_yaxes(charts.log_axis(walk["candidates"], walk["kept"]),
                     title_text="Prefixes (log scale)", row=1, col=1)
    fig.update_yaxes(range=[0, k * 1.05], title_text="Commutes", row=2, col=1)
    fig.update_xaxes(title_text="Level (prefix length in bits grows at each level)", row=2,
                     col=1)
    fig.update_xaxes(dtick=1)   # levels are whole numbers
    return fig

