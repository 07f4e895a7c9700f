"""Plotly figures of the Learn page, in the house style of :mod:`ui.components.charts`.

Each returns the figure and the table behind it, so the page can offer both as downloads. Curves
come from :mod:`dpcore.theory.privacy_theory` and :mod:`dpcore.theory.amplification`; nothing is computed here
but the grids they are evaluated on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpcore.theory import amplification, deployments, privacy_theory
from ui.components import charts

#: Neutral colours for curves that are not mechanisms (Paul Tol's "bright" scheme).
BOUND_COLOUR, REFERENCE_COLOUR, ACCENT_COLOUR = "#4477AA", "#BBBBBB", "#EE6677"
GRID_POINTS = 201


def posterior(epsilon: float, delta: float, prior: float) -> tuple[go.Figure, pd.DataFrame]:
    """The most an adversary's belief can rise after one release, against their prior belief."""
    priors = np.linspace(0.0, 1.0, GRID_POINTS)
    frame = pd.DataFrame({"prior": priors,
                          "posterior_max": privacy_theory.posterior_bound(priors, epsilon)})
    fig = go.Figure()
    fig.add_scatter(x=priors, y=priors, mode="lines", name="No release (belief unchanged)",
                    line=dict(color=REFERENCE_COLOUR, dash="dot"))
    fig.add_scatter(x=priors, y=frame["posterior_max"], mode="lines",
                    name=f"Highest belief after an ε = {epsilon:g} release",
                    line=dict(color=BOUND_COLOUR, width=3),
                    hovertemplate="prior %{x:.0%} → at most %{y:.1%}<extra></extra>")
    if delta > 0:
        frame["posterior_max_delta"] = privacy_theory.posterior_bound(priors, epsilon, delta)
        fig.add_scatter(x=priors, y=frame["posterior_max_delta"], mode="lines",
                        name=f"… with δ = {delta:g} (except with probability 10δ)",
                        line=dict(color=BOUND_COLOUR, dash="dash"))
    top = privacy_theory.posterior_bound(prior, epsilon)
    fig.add_scatter(x=[prior], y=[top], mode="markers", name="Your prior",
                    marker=dict(color=ACCENT_COLOUR, size=12, symbol="diamond"),
                    hovertemplate="prior %{x:.0%} → at most %{y:.1%}<extra></extra>")
    fig.update_xaxes(tickformat=".0%", range=[0, 1])
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return charts.layout(fig, "What an adversary can learn from one release",
                         "Belief before the release (prior, %)",
                         "Highest belief after it (posterior, %)"), frame


def test_region(epsilon: float, delta: float) -> tuple[go.Figure, pd.DataFrame]:
    """The (false-positive, true-positive) rates any test telling two neighbouring tables apart
    can reach under (ε, δ)-DP: the band between the two boundaries. Under substitution (the
    product's default) the two tables differ in one person's commute, A or B; the axes say so
    (not "in the data", which is the add/remove question)."""
    region = privacy_theory.hypothesis_test_region(epsilon, delta)
    frame = pd.DataFrame({"fpr": region.fpr, "tpr_max": region.tpr_max,
                          "tpr_min": region.tpr_min})
    fig = go.Figure()
    fig.add_scatter(x=region.fpr, y=region.tpr_min, mode="lines", showlegend=False,
                    line=dict(color=BOUND_COLOUR, width=1), hoverinfo="skip")
    fig.add_scatter(x=region.fpr, y=region.tpr_max, mode="lines", fill="tonexty",
                    fillcolor="rgba(68,119,170,0.25)", line=dict(color=BOUND_COLOUR, width=3),
                    name=f"Reachable tests at ε = {epsilon:g}, δ = {delta:g}",
                    hovertemplate="FPR %{x:.1%}: TPR at most %{y:.1%}<extra></extra>")
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="Guessing (TPR = FPR)",
                    line=dict(color=REFERENCE_COLOUR, dash="dot"))
    fig.update_xaxes(tickformat=".0%", range=[0, 1])
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return charts.layout(fig, "DP as a hypothesis test: how well can anyone tell?",
                         "False-positive rate (says 'commute A' when it is B, %)",
                         "True-positive rate (says 'commute A' when it is A, %)",
                         height=420), frame


def profiles(epsilon0: float, sigma: float, k: int) -> tuple[go.Figure, pd.DataFrame]:
    """Privacy profiles δ(ε): randomised response and Laplace at ε₀, k-ary GRR, and a Gaussian of
    standard deviation σ (sensitivity 1) — one mechanism, a whole curve of (ε, δ) guarantees."""
    grid = np.linspace(0.0, max(2.0 * epsilon0, 1.0), GRID_POINTS)
    curves = {
        f"Randomised response, ε₀ = {epsilon0:g}": privacy_theory.rr_profile(grid, epsilon0),
        f"GRR over {k:,} cells, ε₀ = {epsilon0:g}": privacy_theory.grr_profile(grid, epsilon0, k),
        f"Laplace, scale 1/ε₀ = {1 / epsilon0:.3g}": privacy_theory.laplace_profile(grid,
                                                                                    epsilon0),
        f"Gaussian, σ = {sigma:g}": privacy_theory.gaussian_profile(grid, sigma),
    }
    frame = pd.DataFrame({"epsilon": grid, **curves})
    fig = go.Figure()
    for (label, values), colour, dash in zip(curves.items(), charts.SPARE, charts.DASHES):
        fig.add_scatter(x=grid, y=values, mode="lines", name=label,
                        line=dict(color=colour, dash=dash, width=2.5),
                        hovertemplate=f"{label}<br>ε = %{{x:.3g}}: δ = %{{y:.3g}}<extra></extra>")
    fig.update_yaxes(rangemode="tozero")
    return charts.layout(fig, "Privacy profiles: the δ each mechanism needs at every ε",
                         "ε (natural-log privacy loss)", "δ(ε) (slack)",
                         height=380), frame


def subsampling(epsilon: float, delta: float, rate: float) -> tuple[go.Figure, pd.DataFrame]:
    """ε′ of an ε-DP release run on a Poisson γ-sample, for every γ, with the chosen γ marked."""
    rates = np.linspace(0.01, 1.0, 100)
    amplified, _ = amplification.subsampling_amplification(epsilon, delta, rates)
    frame = pd.DataFrame({"rate": rates, "epsilon_amplified": amplified})
    chosen, _ = amplification.subsampling_amplification(epsilon, delta, rate)
    fig = go.Figure()
    fig.add_scatter(x=rates, y=amplified, mode="lines", name=f"ε′ for ε = {epsilon:g}",
                    line=dict(color=BOUND_COLOUR, width=3),
                    hovertemplate="sample %{x:.0%}: ε′ = %{y:.3g}<extra></extra>")
    fig.add_scatter(x=rates, y=rates * epsilon, mode="lines", name="γ·ε (small-ε rule of thumb)",
                    line=dict(color=REFERENCE_COLOUR, dash="dot"))
    fig.add_scatter(x=[rate], y=[chosen], mode="markers", name="Your sampling rate",
                    marker=dict(color=ACCENT_COLOUR, size=12, symbol="diamond"))
    fig.update_xaxes(tickformat=".0%")
    return charts.layout(fig, "Amplification by Poisson subsampling",
                         "Sampling rate γ (share of people asked, %)",
                         "Guarantee of the whole ε′ (natural log)"), frame


def trust_bars(frame: pd.DataFrame, epsilon: float) -> go.Figure:
    """Measured and theoretical RMSE per cell of the three trust models (log scale)."""
    labels = [f"{model.capitalize()}: {charts.short_name(key)}"
              for model, key in zip(frame["model"], frame["key"])]
    fig = go.Figure()
    fig.add_bar(x=labels, y=frame["rmse"], name="Measured (one release)",
                marker_color=[charts.colour(k) for k in frame["key"]],
                marker_pattern_shape=[charts.pattern(k) for k in frame["key"]],
                hovertemplate="%{x}: RMSE %{y:,.4g} commuters<extra></extra>")
    fig.add_scatter(x=labels, y=frame["rmse_theory"], mode="markers", name="Theory",
                    marker=dict(color="#000000", symbol="line-ew-open", size=40,
                                line=dict(width=3)),
                    hovertemplate="%{x}: theory %{y:,.4g} commuters<extra></extra>")
    return charts.layout(fig, f"Error per cell at the same central ε = {epsilon:g}",
                         "Trust model: mechanism", "RMSE per cell (commuters, log scale)",
                         log_y=True)


def epsilon_ruler(epsilon: float, marks: list[tuple[str, float, str]] = ()
                  ) -> tuple[go.Figure, pd.DataFrame]:
    """Deployed ε values (each with its privacy unit and scope) on one log axis with the user's
    ε, and optionally other marks ``(label, ε, colour)`` (e.g. the planner's answers)."""
    frame = deployments.ruler()
    fig = go.Figure()
    for model, symbol in (("central", "circle"), ("local", "diamond")):
        rows = frame[frame["model"] == model]
        text = [charts.escape(f"{r.name}: ε = {r.epsilon:g} per {r.unit} ({r.scope}; "
                              f"{r.source})") for r in rows.itertuples()]
        fig.add_scatter(x=rows["epsilon"], y=[model] * len(rows), mode="markers+text",
                        name=f"Deployed ({model} DP)", marker=dict(symbol=symbol, size=11,
                                                                   color=BOUND_COLOUR),
                        text=list(rows["short"]), hovertext=text, hoverinfo="text",
                        # Alternate above and below (and left, right), so neighbouring labels
                        # do not overlap.
                        textposition=(["top center", "bottom left", "top center",
                                       "bottom center", "top center", "bottom right"]
                                      * len(rows))[:len(rows)])
    charts.marker_line(fig, "x", epsilon, True, line=dict(color=ACCENT_COLOUR, width=3))
    fig.add_scatter(x=[epsilon], y=["yours"], mode="markers", name=f"Your ε = {epsilon:g}",
                    marker=dict(color=ACCENT_COLOUR, size=13, symbol="star"))
    for label, value, colour in marks:
        if np.isfinite(value):
            fig.add_scatter(x=[value], y=["yours"], mode="markers", name=charts.escape(label),
                            marker=dict(size=12, symbol="triangle-up", color=colour))
    fig.update_yaxes(categoryorder="array", categoryarray=["yours", "local", "central"])
    values = [*frame["epsilon"], epsilon, *(value for _, value, _ in marks if np.isfinite(value))]
    # Room on both sides for the labels of the smallest and largest values.
    fig.update_xaxes(range=[np.log10(min(values)) - 0.3, np.log10(max(values)) + 0.5])
    return charts.layout(fig, "The ε ruler: deployed privacy budgets beside yours",
                         "ε (log scale; each deployment's own privacy unit and scope)", "",
                         log_x=True, height=280), frame
