"""The Places page's charts: true vs released answers with their 95 % intervals as error bars
(distance bands drawn as a histogram), and the compass directions as a rose.

Zone names come from uploads and plotly renders HTML in hover text and tick labels, so every
part is escaped (:func:`ui.components.charts.escape`) before it is drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpcore.analyses import answers
from ui.components import charts

TRUE = "True (confidential)"
#: What the x axis holds, per analysis.
X_TITLES = {"flows": "Flow", "destination": "Zone", "distance": "Distance from home to work (km)",
            "direction": "Compass direction", "paired": "Pair of areas",
            "comparison": "Zone or area"}


def _x(frame: pd.DataFrame) -> list[str]:
    """The category of each row: its part (a zone, band or sector), else its analysis (flows),
    else its selection (A → B)."""
    return [charts.escape(charts.short(part or (selection if analysis == "paired"
                                                else analysis.replace("_", " "))))
            for part, analysis, selection in zip(frame["part"], frame["analysis"],
                                                 frame["selection"])]


def legend_name(mechanism: str, method: str) -> str:
    """A mechanism's legend entry with how its interval was obtained, in a few words."""
    how = method.split(":")[0]
    return charts.escape(f"{mechanism} ({how})" if how != "no interval"
                         else f"{mechanism} (no interval)")


def bars(found: pd.DataFrame, analysis: str, title: str) -> go.Figure:
    """Grouped bars: the true answer (none for a published release alone) and every
    mechanism's, each with its 95 % interval as an asymmetric error bar (none where the
    mechanism has no interval)."""
    fig = go.Figure()
    first = found[found["mechanism"] == found["mechanism"].iloc[0]]
    hover_true = [charts.escape(f"{s} · {p}") for s, p in zip(first["selection"], first["part"])]
    if first["true"].notna().any():
        fig.add_bar(name=TRUE, x=_x(first), y=first["true"], marker_color=charts.TRUE_COLOUR,
                    customdata=hover_true, hovertemplate="%{customdata}<br>true %{y:,.0f}"
                                                          "<extra></extra>")
    for (mechanism, rows), key in zip(found.groupby("mechanism", sort=False),
                                      _keys(found)):
        if "estimate" in rows and rows["estimate"].notna().any():
            # OnTheMap: its synthetic answer (biased, no interval) and, beside it, the
            # debiased estimate the interval is around
            _bar(fig, rows, "released", charts.escape(f"{mechanism} (synthetic answer, no "
                                                      "interval)"), key, interval=False)
            _bar(fig, rows, "estimate", charts.escape(f"{mechanism}, debiased estimate (its "
                                                      "law, ±1.96 sd)"), key, shape=".")
        else:
            _bar(fig, rows, "released", legend_name(mechanism, rows["method"].iloc[0]), key)
    fig.update_layout(barmode="group", bargap=0.05 if analysis == "distance" else 0.2)
    edge = axis_edge(found)
    if edge is not None:
        fig.update_yaxes(range=[-0.25 * edge, edge])
    return charts.layout(fig, title, X_TITLES[analysis], "Commuters (people)", height=420)


def _bar(fig: go.Figure, rows: pd.DataFrame, column: str, name: str, key: str,
         interval: bool = True, shape: str | None = None) -> None:
    """One release's bars (``column``: the released answer, or OnTheMap's debiased estimate)
    with the 95 % interval as an asymmetric error bar where it has one."""
    value = rows[column].to_numpy(float)
    has = rows["low"].notna().to_numpy() & interval
    plus = np.where(has, rows["high"] - value, np.nan)
    minus = np.where(has, value - rows["low"], np.nan)
    text = [charts.escape(f"{s} · {p}") + (f"<br>95 % interval {lo:,.0f} … {hi:,.0f}"
                                             if ok else "<br>no interval")
            for s, p, lo, hi, ok in zip(rows["selection"], rows["part"], rows["low"],
                                        rows["high"], has)]
    fig.add_bar(name=name, x=_x(rows), y=value, marker_color=charts.colour(key),
                marker_pattern_shape=shape or charts.pattern(key),
                error_y=dict(type="data", symmetric=False, array=plus, arrayminus=minus,
                             color="#222222", thickness=1.2, width=3),
                customdata=text, hovertemplate=f"%{{customdata}}<br>{column} %{{y:,.0f}}"
                                               "<extra></extra>")


def axis_edge(found: pd.DataFrame) -> float | None:
    """The value axis' top when some release is far off the truth (GRR on the EDs reaches
    millions where no true answer reaches thousands): twice the largest true answer, so the
    truth stays readable; None when every answer fits or there is no truth."""
    if not found["true"].notna().any():
        return None
    edge = 2.0 * max(float(found["true"].max()), 1.0)
    return edge if (found["released"].abs() > edge).any() else None


def _keys(found: pd.DataFrame) -> list[str]:
    """The mechanism keys of the table's mechanisms, in its order (for the house colours)."""
    return list(dict.fromkeys(found["key"]))


def rose(found: pd.DataFrame, title: str) -> go.Figure:
    """The 8 compass sectors as a rose: the true commuters as bars, each release as a closed
    line over the sectors (overlaid bars would hide each other)."""
    sectors = found[found["part"].isin(answers.COMPASS)]
    fig = go.Figure()
    first = sectors[sectors["mechanism"] == sectors["mechanism"].iloc[0]]
    fig.add_barpolar(name=TRUE, theta=list(first["part"]), r=first["true"],
                     marker_color=charts.TRUE_COLOUR, opacity=0.45,
                     hovertemplate="%{theta}: true %{r:,.0f}<extra></extra>")
    for (mechanism, rows), key in zip(sectors.groupby("mechanism", sort=False), _keys(found)):
        r = rows["released"].clip(lower=0).tolist()
        fig.add_scatterpolar(name=charts.escape(mechanism), theta=list(rows["part"]) + [
            rows["part"].iloc[0]], r=r + r[:1], mode="lines+markers",
            line=dict(color=charts.colour(key)), marker=dict(symbol=charts.symbol(key)),
            hovertemplate="%{theta}: released %{r:,.0f}<extra></extra>")
    edge = axis_edge(sectors)
    fig.update_layout(
        title=dict(text=title), font=charts.FONT, height=480,
        legend=dict(orientation="h", y=-0.12),
        polar=dict(angularaxis=dict(direction="clockwise", rotation=90,
                                    categoryorder="array", categoryarray=list(answers.COMPASS)),
                   # drawn along the border of N and NE, clear of the sectors' labels
                   radialaxis=dict(angle=67.5, tickangle=67.5,
                                   title=dict(text="Commuters (people)", font=dict(size=11)),
                                   **({} if edge is None else {"range": [0, edge]}))))
    return fig
