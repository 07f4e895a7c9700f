"""OD heat map: origins down, destinations across; true | released | difference side by side.

The grid (which zones, in which order) comes from :mod:`dpcore.evaluation.heatmap`. True and released share
one colour scale so that they compare; the difference has its own diverging scale centred on zero
(blue under, red over, as on the flow map). The log option colours by log10(1 + count) — signed
for the difference — with the colour bars still labelled in commuters. Zone names are untrusted:
escaped in tick labels and hover text.
"""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import streamlit as st

from dpcore.data.od import ODMatrix
from dpcore.evaluation import heatmap
from ui.components import charts, huge
from ui.components.viewstate import kept

#: ColorBrewer YlGnBu, as plotly.py defines it (named scales are resolved in Python, and a
#: figure built from a dict skips that step).
SEQUENTIAL = plotly.colors.get_colorscale("YlGnBu")
DIVERGING = [[0.0, "#2166ac"], [0.25, "#67a9cf"], [0.5, "#f7f7f7"], [0.75, "#ef8a62"],
             [1.0, "#b2182b"]]
TICK_LABEL = 18  # characters of a zone name on an axis


def _signed_log(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.log10(1 + np.abs(values))


def _log_ticks(top: float, signed: bool) -> tuple[list[float], list[str]]:
    """Colour-bar ticks at 0, 1, 10, 100, … commuters (and their negatives) on the log scale."""
    powers = [0] + [10 ** k for k in range(int(np.floor(np.log10(max(top, 1)))) + 1)]
    values = sorted({-p for p in powers} | set(powers)) if signed else powers
    return [float(_signed_log(np.array(v))) for v in values], [f"{v:,}" for v in values]


def figure(grid: heatmap.Grid, released_name: str | None, log: bool, title: str) -> go.Figure:
    """The heat maps of ``grid``: true, and with a release also released and difference."""
    panels = [("True", grid.true)]
    if grid.released is not None:
        panels += [(f"Released ({released_name})", grid.released),
                   ("Difference (released − true)", grid.difference)]
    spec = charts.subplot_grid(1, len(panels), tuple(charts.escape(name) for name, _ in panels),
                               shared_yaxes=True, horizontal_spacing=0.03)
    rows = [charts.escape(charts.short(label, TICK_LABEL)) for label in grid.origin_labels]
    cols = [charts.escape(charts.short(label, TICK_LABEL)) for label in grid.destination_labels]
    hover_rows = np.array([charts.escape(label) for label in grid.origin_labels], dtype=object)
    hover_cols = np.array([charts.escape(label) for label in grid.destination_labels],
                          dtype=object)
    names = np.char.add(np.char.add(hover_rows[:, None].astype(str), " → "),
                        hover_cols[None, :].astype(str))
    top = max(float(np.nanmax(grid.true)) if grid.true.size else 1.0,
              float(np.nanmax(grid.released)) if grid.released is not None and grid.released.size
              else 0.0, 1.0)
    data = []
    for column, (panel, values) in enumerate(panels):
        difference = panel.startswith("Difference")
        shown = (_signed_log(values) if difference else np.log10(1 + np.clip(values, 0, None))) \
            if log else values
        counts = np.vectorize(lambda v: f"{v:,.1f}", otypes=[str])(values) if values.size \
            else values.astype(str)
        hover = np.char.add(np.char.add(names, f"<br>{charts.escape(panel)}: "),
                            np.char.add(counts, " commuters"))
        data.append(dict(type="heatmap", z=np.asarray(shown), hovertext=hover,
                         hovertemplate="%{hovertext}<extra></extra>", xgap=0.5, ygap=0.5,
                         coloraxis="coloraxis2" if difference else "coloraxis",
                         **charts.subplot_axes(column)))
    for axis in charts.axes(spec, "x"):
        axis.update(tickmode="array", tickvals=list(range(len(cols))), ticktext=cols,
                    tickangle=-60, tickfont=dict(size=9),
                    title=dict(text="Destination (where they work)"))
    for axis in charts.axes(spec, "y"):
        axis.update(tickmode="array", tickvals=list(range(len(rows))), ticktext=rows,
                    autorange="reversed", tickfont=dict(size=9))
    spec["yaxis"].update(title=dict(text="Origin (where they live)"))
    bar = dict(orientation="h", yref="container", y=0.01, yanchor="bottom", thickness=12,
               title=dict(side="top"), ypad=4)
    pair = 2 / 3 if len(panels) > 1 else 1.0  # the colour bars sit under the panels they key
    sequential = dict(colorscale=SEQUENTIAL, cmin=0,
                      colorbar=bar | dict(title=dict(side="top", text=(
                          "True and released" if len(panels) > 1 else "True") + ": commuters"),
                                          x=pair / 2, len=pair * 0.8))
    diverging = dict(colorscale=DIVERGING,
                     colorbar=bar | dict(title=dict(side="top",
                                                    text="Difference, released − true: "
                                                         "commuters"),
                                         x=5 / 6, len=0.26))
    if log:
        tickvals, ticktext = _log_ticks(top, signed=False)
        sequential.update(cmax=float(np.log10(1 + top)))
        sequential["colorbar"].update(tickvals=tickvals, ticktext=ticktext)
    else:
        sequential.update(cmax=top)
    if grid.released is not None:
        limit = max(float(np.nanmax(np.abs(grid.difference))) if grid.difference.size else 1.0,
                    1.0)
        if log:
            tickvals, ticktext = _log_ticks(limit, signed=True)
            diverging["colorbar"].update(tickvals=tickvals, ticktext=ticktext)
            limit = float(_signed_log(np.array(limit)))
        diverging.update(cmin=-limit, cmax=limit)
        spec["coloraxis2"] = diverging
    side = 14 * max(len(rows), 12)
    spec.update(coloraxis=sequential, height=min(side + 360, 1250),
                title=dict(text=charts.escape(title), x=0, xanchor="left"),
                margin=dict(l=10, r=10, t=80, b=90))
    return charts.from_spec(data, spec)


def section(od: ODMatrix, true_counts, released: dict[str, np.ndarray], epsilon: float,
            key: str) -> None:
    """The OD heat map with its controls and downloads (``released``: mechanism → values)."""
    if huge.unavailable(od, "The heat map (every cell of a block of zones)"):
        return
    sparse = [charts.name(k) for k, values in released.items() if huge.is_sparse(values)]
    if sparse:
        st.caption(f"Not in the heat map: {', '.join(sparse)} (sparse releases, see above: "
                   "their empty cells are known only as a distribution).")
        released = {k: values for k, values in released.items() if not huge.is_sparse(values)}
    left, middle, right = st.columns(3)
    names = {k: charts.name(k) for k in released}
    chosen = (kept(left.selectbox, "Release shown", f"{key}_mechanism", next(iter(names)),
                   url="heat_mech", options=list(names), format_func=names.__getitem__)
              if len(names) > 1 else next(iter(names), None))
    log = kept(middle.toggle, "Log colour scale", f"{key}_log", False, url="heat_log",
               help="Colour by log10(1 + commuters) so that small flows show next to the "
                    "largest; the colour bars stay in commuters.")
    choice, size = heatmap.BUSIEST, 40
    if heatmap.needs_choice(od):
        options = [heatmap.BUSIEST] + ([heatmap.PARENT] if od.has_parent_level else [])
        choice = kept(right.radio, "Too many zones to show each one: show", f"{key}_choice",
                      heatmap.PARENT if od.has_parent_level else heatmap.BUSIEST,
                      url="heat_view", options=options,
                      format_func=lambda c: {heatmap.BUSIEST: "the busiest block",
                                             heatmap.PARENT: "the parent level"}[c],
                      help=" ".join(heatmap.CHOICES[c] for c in options))
        if choice == heatmap.BUSIEST:
            size = kept(right.slider, "Zones a side", f"{key}_size", 40, url="heat_n",
                        min_value=10, max_value=heatmap.MAX_SIDE)
    grid = heatmap.grid(od, true_counts, released.get(chosen) if chosen else None,
                        choice=choice, size=size)
    st.caption(grid.note + " Zones are grouped by parent (largest first) and ordered by size "
               "within it." + (" " + heatmap.CHOICES[choice] + "."
                               if heatmap.needs_choice(od) else ""))
    title = f"Origins × destinations: true | released | difference (ε = {epsilon:g})"
    charts.show(figure(grid, names.get(chosen), log, title), grid.to_frame(), "od_heatmap", key,
                private=True)
