"""The Learn page's lesson on OnTheMap's (ε, δ)-probabilistic DP, worked on one workplace.

Its numbers come from :func:`dpcore.theory.probabilistic_dp.worked_example` (which calls
:mod:`dpcore.mechanisms.onthemap`); :mod:`ui.learn.lessons` lists it by :data:`KEY`. Zone names
are escaped for Markdown and for the chart.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.mechanisms import onthemap as otm
from dpcore.text import visible
from dpcore.theory import probabilistic_dp
from ui.components import charts, data, safe
from ui.components.viewstate import kept

KEY, TITLE = "pdp", "OnTheMap: probabilistic DP"
DELTAS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
#: Origins drawn one by one in the chart; the rest are one bar.
SHOWN_ORIGINS = 10
SERIES = {"truth": "Real workers", "epsilon_dp": "Synthetic, ε-DP prior",
          "test": "Synthetic, probabilistic-DP prior"}


def chart(example: probabilistic_dp.WorkedExample, workplace: str) -> tuple[go.Figure,
                                                                            pd.DataFrame]:
    """The workplace's origins: real shares and expected synthetic shares under each prior (the
    busiest origins, then the rest together)."""
    shares = example.shares
    frame = shares.head(SHOWN_ORIGINS).copy()
    if len(shares) > SHOWN_ORIGINS:
        rest = shares.iloc[SHOWN_ORIGINS:]
        frame.loc[len(frame)] = [f"Other {len(rest):,} origins", *rest[list(SERIES)].sum()]
    ticks = [charts.escape(charts.short(visible(origin), 24)) for origin in frame["origin"]]
    alphas = {"epsilon_dp": example.pure_alpha, "test": example.test_alpha}
    fig = go.Figure()
    for column, colour in zip(SERIES, (charts.TRUE_COLOUR, "#4477AA", "#EE6677")):
        name = SERIES[column] + (f" (α = {alphas[column]:.3g})" if column in alphas else "")
        fig.add_bar(x=ticks, y=frame[column], name=name, marker_color=colour,
                    hovertemplate="%{x}: %{y:.1%}<extra>" + name + "</extra>")
    fig.update_yaxes(tickformat=".0%")
    title = f"Where the synthetic workers of {charts.escape(charts.short(visible(workplace)))} live"
    return charts.layout(fig, title, "Home zone (origin)", "Share of the workplace's workers",
                         height=420, bottom=120), frame


def lesson(current: data.Current, epsilon: float) -> None:
    """One workplace: the ε-DP prior against its size, the smaller probabilistic prior, what
    that promises and does not, and the exact total."""
    od = current.matrix
    totals = od.destination_totals()
    names = od.destinations.labels
    left, right = st.columns([3, 2])
    workplace = kept(left.selectbox, "Workplace", "learn_pdp_workplace",
                     probabilistic_dp.smallest_workplace(od),
                     options=[int(d) for d in (totals > 0).nonzero()[0]],
                     format_func=lambda d: f"{visible(names[d])} ({int(totals[d]):,} workers)")
    with right:
        delta = kept(st.select_slider, "δ of the probabilistic test", "learn_pdp_delta", 1e-5,
                     options=DELTAS, format_func=lambda x: f"{x:g}")
    example = probabilistic_dp.worked_example(od, workplace, epsilon, delta)
    name, k, n = safe.markdown(names[workplace]), example.origins, example.workers
    st.markdown(
        "OnTheMap (US Census Bureau, LODES) adds no noise to counts: for each workplace it "
        "redraws its workers' homes, $p \\sim \\mathrm{Dirichlet}(n(d) + \\alpha)$, "
        "$s \\sim \\mathrm{Multinomial}(m, p)$, with a prior α per origin. How private that is "
        f"depends on α. **{name}** has n = {n:,} workers from k = {k:,} origins.")
    st.markdown(
        f"**ε-DP needs a prior that swamps the data.** For the synthetic homes to be ε-DP at "
        f"ε = {epsilon:g}, α must be at least m/(e^ε − 1) = **{example.pure_alpha:,.4g}** per "
        f"origin: the prior adds kα = {k * example.pure_alpha:,.0f} imaginary workers to the "
        f"{n:,} real ones, **{example.prior_weight:,.3g} times** the data (k/(e^ε − 1), the same "
        "for every workplace).")
    how = ("summed exactly" if n <= otm.TEST_MAX_WORKERS else
           f"bounded from above within about 1 % (summed exactly up to "
           f"{otm.TEST_MAX_WORKERS:,} workers)")
    st.markdown(
        f"**(ε, δ)-probabilistic DP asks less.** It only requires that, for every table, the "
        f"synthetic tables whose likelihood ratio against a neighbouring table (one worker's "
        f"home moved) exceeds e^ε = {math.exp(epsilon):,.4g} have probability at most "
        f"δ = {delta:g}. The product's test, run on {name}'s {n:,} workers (δ {how}), allows "
        f"**α = {example.test_alpha:,.4g}** (its δ bound: {example.test_delta:.2g}), "
        f"{example.pure_alpha / example.test_alpha:,.3g} times smaller: the prior now adds "
        f"{k * example.test_alpha / n:,.3g} times the data.")
    st.markdown(
        f"**What it promises, and what it does not.** Except on synthetic tables of total "
        f"probability at most δ = {delta:g}, an observer's odds between two homes of a worker "
        f"change at most e^ε = {math.exp(epsilon):,.4g}-fold. " + otm.PLAIN_PDP
        + f" In this model the worst of those tables moves the "
        f"odds 1 + m/α = {math.exp(example.worst_epsilon):,.4g}-fold, a privacy loss of "
        f"{example.worst_epsilon:.3g} instead of ε = {epsilon:g}.")
    st.markdown(
        f"**The total is not protected.** Every synthetic table gives {name} exactly {n:,} "
        "workers. " + otm.PLAIN_TOTALS)
    fig, frame = chart(example, names[workplace])
    charts.show(fig, frame, "onthemap_priors", "learn_pdp_chart")
    st.caption(
        "Expected shares E[s_i]/m = (n_i + α)/(n + kα). Distance from the real shares (total variation: half the sum of the absolute "
        f"differences): ε-DP prior "
        f"{example.distance('epsilon_dp'):.1%}, probabilistic-DP prior "
        f"{example.distance('test'):.1%}.")
