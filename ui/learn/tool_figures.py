"""Plotly figures of the Learn page's "more tools" lessons (:mod:`ui.learn.tools`), in the house
style of :mod:`ui.components.charts`. Each returns the figure and the table behind it; the numbers
come from :mod:`dpcore.theory.selection`, :mod:`~dpcore.theory.composition` and
:mod:`~dpcore.theory.coins`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpcore.theory import coins, composition, mean_estimation, multi_message, selection
from ui.components import charts
from ui.learn.figures import ACCENT_COLOUR, BOUND_COLOUR, REFERENCE_COLOUR

EPSILON_POINTS = 41


def selection_curve(counts: np.ndarray, epsilon: float) -> tuple[go.Figure, pd.DataFrame]:
    """P[the true busiest is named] against ε for the exponential mechanism and Laplace
    report-noisy-max, over the ε range where it climbs (from the gap of the two largest counts)."""
    top = np.sort(counts)[::-1]
    gap = float(top[0] - top[1]) if top.size > 1 and top[0] > top[1] else 1.0
    grid = np.unique(np.append(np.logspace(np.log10(0.05 / gap), np.log10(50 / gap),
                                           EPSILON_POINTS), epsilon))
    best = int(np.argmax(counts))
    frame = pd.DataFrame({
        "epsilon": grid,
        "exponential": [selection.exponential_probabilities(counts, e)[best] for e in grid],
        "noisy_max_laplace": [selection.noisy_max_probabilities(counts, e)[best] for e in grid]})
    fig = go.Figure()
    for column, label, colour, dash in (
            ("exponential", "Exponential mechanism (= Gumbel noisy max)", BOUND_COLOUR, "solid"),
            ("noisy_max_laplace", "Report-noisy-max, Laplace noise", charts.colour("laplace"),
             "dash")):
        fig.add_scatter(x=grid, y=frame[column], mode="lines", name=label,
                        line=dict(color=colour, dash=dash, width=3),
                        hovertemplate="ε = %{x:.3g}: %{y:.1%}<extra></extra>")
    fig.add_scatter(x=[epsilon], y=[selection.exponential_probabilities(counts, epsilon)[best]],
                    mode="markers", name=f"Your ε = {epsilon:g}",
                    marker=dict(color=ACCENT_COLOUR, size=12, symbol="diamond"))
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return charts.layout(fig, "How often the busiest destination is named",
                         "ε (log scale)", "P[true busiest named] (%)", log_x=True), frame


def gaussian_sigmas(epsilon: float, delta: float) -> tuple[go.Figure, pd.DataFrame]:
    """σ of the classic and the analytic Gaussian across ε (sensitivity 1), with ε = 1 and the
    classic σ's last private ε marked."""
    frame = composition.gaussian_sigmas(np.unique(np.append(np.logspace(-2, 1.3, 60), epsilon)),
                                        delta)
    fig = go.Figure()
    fig.add_scatter(x=frame["epsilon"], y=frame["classic_sigma"], mode="lines",
                    name="Classic σ = √(2 ln(1.25/δ))/ε", line=dict(color=REFERENCE_COLOUR,
                                                                    width=3, dash="dash"),
                    hovertemplate="ε = %{x:.3g}: σ = %{y:.3g}<extra></extra>")
    fig.add_scatter(x=frame["epsilon"], y=frame["analytic_sigma"], mode="lines",
                    name="Analytic σ (Balle & Wang 2018)",
                    line=dict(color=charts.colour("gaussian"), width=3),
                    hovertemplate="ε = %{x:.3g}: σ = %{y:.3g}<extra></extra>")
    charts.marker_line(fig, "x", 1.0, True, line=dict(color=BOUND_COLOUR, dash="dot"),
                       annotation_text="classic proof ends (ε = 1)")
    fig.add_scatter(x=[epsilon], y=[float(frame.loc[frame["epsilon"] == epsilon,
                                                    "analytic_sigma"].iloc[0])],
                    mode="markers", name=f"Your ε = {epsilon:g}",
                    marker=dict(color=ACCENT_COLOUR, size=12, symbol="diamond"))
    return charts.layout(fig, f"Gaussian noise needed at δ = {delta:g} (sensitivity 1)",
                         "ε (log scale)", "Noise σ (commuters, log scale)", log_x=True,
                         log_y=True), frame


def monthly(frame: pd.DataFrame, epsilon: float) -> go.Figure:
    """Total ε after each monthly Gaussian release under basic, advanced and zCDP accounting."""
    fig = go.Figure()
    for column, label, colour, dash in (
            ("basic", "Basic: kε", REFERENCE_COLOUR, "dot"),
            ("advanced", "Advanced composition", BOUND_COLOUR, "dash"),
            ("zcdp", "zCDP: ρ's add, then ε = ρ + 2√(ρ ln(1/δ))", charts.colour("gaussian"),
             "solid")):
        fig.add_scatter(x=frame["releases"], y=frame[column], mode="lines+markers", name=label,
                        line=dict(color=colour, dash=dash, width=3),
                        hovertemplate="%{x} releases: ε = %{y:.3g}<extra></extra>")
    return charts.layout(fig, f"Monthly Gaussian releases at ε = {epsilon:g} each",
                         "Releases so far (months)", "Total ε (natural log)")


def coin_crowds(surveys: list[coins.Survey]) -> tuple[go.Figure, pd.DataFrame]:
    """The two-coin estimate and its exact 95 % interval for crowds of growing size."""
    frame = pd.DataFrame({"people": [s.n for s in surveys], "truth": [s.truth for s in surveys],
                          "estimate": [s.estimate for s in surveys],
                          "low": [s.interval[0] for s in surveys],
                          "high": [s.interval[1] for s in surveys]})
    fig = go.Figure()
    fig.add_scatter(x=frame["people"], y=frame["estimate"], mode="markers",
                    name="Estimate 2p − 1/2 with exact 95 % interval",
                    marker=dict(color=BOUND_COLOUR, size=10),
                    error_y=dict(type="data", symmetric=False,
                                 array=frame["high"] - frame["estimate"],
                                 arrayminus=frame["estimate"] - frame["low"]),
                    hovertemplate="%{x:,} people: %{y:.1%}<extra></extra>")
    fig.add_scatter(x=frame["people"], y=frame["truth"], mode="lines",
                    name="True share in the crowd", line=dict(color=charts.TRUE_COLOUR,
                                                              dash="dot"))
    fig.update_yaxes(tickformat=".0%")
    return charts.layout(fig, "Two coins per person: the estimate closes in",
                         "People asked (log scale)", "Share answering yes truly (%)",
                         log_x=True), frame


def mean_errors(distances: mean_estimation.Distances, epsilon: float
                ) -> tuple[go.Figure, pd.DataFrame]:
    """Standard deviation of the mean-distance estimate across ε: local Laplace, Duchi et al.'s
    one bit, central Laplace."""
    grid = np.unique(np.append(np.logspace(-1, 1, 41), epsilon))
    b, n = distances.bound, distances.n
    frame = pd.DataFrame({
        "epsilon": grid,
        "local_laplace_sd": np.sqrt(mean_estimation.local_laplace_variance(b, grid, n)),
        "local_one_bit_sd": np.sqrt(mean_estimation.one_bit_variance(distances, grid)),
        "central_laplace_sd": np.sqrt(mean_estimation.central_laplace_variance(b, grid, n))})
    fig = go.Figure()
    for column, label, colour, dash in (
            ("local_laplace_sd", "Local: each phone adds Laplace(B/ε)", charts.colour("laplace"),
             "dash"),
            ("local_one_bit_sd", "Local: Duchi et al.'s one bit", charts.colour("grr"), "solid"),
            ("central_laplace_sd", "Central: the office adds Laplace(B/(εn))", BOUND_COLOUR,
             "dot")):
        fig.add_scatter(x=grid, y=frame[column], mode="lines", name=label,
                        line=dict(color=colour, dash=dash, width=3),
                        hovertemplate="ε = %{x:.3g}: SD %{y:.3g} km<extra></extra>")
    charts.marker_line(fig, "x", epsilon, True, line=dict(color=ACCENT_COLOUR),
                       annotation_text=f"your ε = {epsilon:g}")
    fig.update_yaxes(exponentformat="power")   # 10⁻⁵ km, not plotly's SI "10µ"
    return charts.layout(fig, "Error of the average commute distance",
                         "ε (log scale)", "Standard deviation of the estimate (km, log scale)",
                         log_x=True, log_y=True), frame


def memo_attack(frame: pd.DataFrame, prior_guess: float) -> go.Figure:
    """The attacker's accuracy after each month, fresh vs memoized answers (simulated and exact),
    beside guessing from the prior alone."""
    fig = go.Figure()
    for mode, label, colour in (("fresh", "Fresh randomness every month", charts.colour("laplace")),
                                ("memoized", "Memoized (permanent) answer", charts.colour("grr"))):
        fig.add_scatter(x=frame["months"], y=frame[f"{mode}_exact"], mode="lines",
                        name=f"{label} (exact)", line=dict(color=colour, width=3),
                        hovertemplate="%{x} months: %{y:.1%}<extra></extra>")
        fig.add_scatter(x=frame["months"], y=frame[f"{mode}_simulated"], mode="markers",
                        name=f"{label} (simulated crowd)",
                        marker=dict(color=colour, size=9, symbol="circle-open"),
                        hovertemplate="%{x} months: %{y:.1%}<extra></extra>")
    fig.add_scatter(x=frame["months"], y=[prior_guess] * len(frame), mode="lines",
                    name="Guessing the commoner answer", line=dict(color=REFERENCE_COLOUR,
                                                                   dash="dot"))
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return charts.layout(fig, "Averaging a person's monthly answers",
                         "Months answered", "Share of people whose answer the attacker names (%)")


def suppression(od_counts: np.ndarray, k: int) -> tuple[go.Figure, pd.DataFrame]:
    """Share of cells and of commuters a k-anonymous table suppresses, for k = 2…50."""
    ks = np.arange(2, 51)
    counts = np.sort(np.asarray(od_counts))
    below = np.searchsorted(counts, ks)                # cells with count < k
    people = np.concatenate([[0], np.cumsum(counts)])[below]
    frame = pd.DataFrame({"k": ks, "cells_suppressed": below / counts.size,
                          "people_suppressed": people / counts.sum()})
    fig = go.Figure()
    fig.add_scatter(x=ks, y=frame["cells_suppressed"], mode="lines", name="Commutes (cells)",
                    line=dict(color=BOUND_COLOUR, width=3),
                    hovertemplate="k = %{x}: %{y:.1%} of cells<extra></extra>")
    fig.add_scatter(x=ks, y=frame["people_suppressed"], mode="lines", name="Commuters",
                    line=dict(color=charts.colour("suppression"), width=3, dash="dash"),
                    hovertemplate="k = %{x}: %{y:.2%} of commuters<extra></extra>")
    charts.marker_line(fig, "x", k, False, line=dict(color=ACCENT_COLOUR),
                       annotation_text=f"k = {k}")
    fig.update_yaxes(tickformat=".0%")
    return charts.layout(fig, "What a k-anonymous table hides",
                         "k (smallest cell published, commuters)",
                         "Share suppressed (%)"), frame


def messages(n: int, d: int, epsilon: float, delta: float) -> tuple[go.Figure, pd.DataFrame]:
    """RMSE per cell against the domain size: one GRR message vs one bit per cell (shuffled),
    and the central Laplace mechanism, at this n, ε and δ."""
    domains = np.unique(np.append(np.logspace(1, 8, 36).astype(np.int64), d))
    frame = multi_message.across_domains(n, epsilon, delta, domains)
    frame["central_rmse"] = float(multi_message.compare(n, d, epsilon, delta)["rmse"].iloc[-1])
    fig = go.Figure()
    for column, label, colour, dash in (
            ("single_message_rmse", "Shuffled, one message per phone (GRR)", charts.colour("grr"),
             "solid"),
            ("one_bit_per_cell_rmse", "Shuffled, one bit per cell (d messages per phone)",
             charts.colour("oue"), "dash"),
            ("central_rmse", "Central Laplace (trusted office)", charts.colour("laplace"), "dot")):
        fig.add_scatter(x=frame["domain"], y=frame[column], mode="lines", name=label,
                        line=dict(color=colour, dash=dash, width=3),
                        hovertemplate="d = %{x:,}: RMSE %{y:.3g} commuters<extra></extra>")
    charts.marker_line(fig, "x", d, True, line=dict(color=ACCENT_COLOUR),
                       annotation_text=f"this table: d = {d:,}")
    return charts.layout(fig, f"Error per cell at central ε = {epsilon:g}, δ = {delta:g}",
                         "Possible commutes d (log scale)",
                         "RMSE per cell (commuters, log scale)", log_x=True, log_y=True), frame
