"""The thesis's results chapter as one self-contained HTML file (:mod:`dpcore.evaluation.thesis` data).

plotly.js is inlined once in the page head and every figure is a ``<div>`` that uses it, so the
file opens offline and asks no server for anything (no CDN, no fonts, no MathJax, no map tiles:
figure 5.16 draws the bundled land outline). Every label that may come from a user's file (zone
and area names) is escaped before it reaches HTML or a plotly legend or hover.

Every series differs by marker and dash as well as colour (unary encoding's line lies under local
hashing's: their variance formulas are equal, so it gets open markers and dashes), panels whose
values differ by orders of magnitude get their own y-axis, and log axes label only what they mean
(:mod:`report.log_ticks`).
"""

from __future__ import annotations

import html
import io
import math
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from plotly.subplots import make_subplots

from dpcore import confidential
from dpcore.evaluation import thesis
from dpcore.mechanisms import postprocess
from dpcore.scoring import metrics
from report.log_ticks import log_axis

#: Series styles: colour, marker symbol, marker size, dash — never colour alone.
MECHANISM_STYLE = {
    "laplace": ("#1f77b4", "circle", 8, "solid"),
    "stability_histogram": ("#ff7f0e", "square", 8, "dash"),
    "grr": ("#2ca02c", "diamond", 9, "dot"),
    "oue": ("#d62728", "circle-open", 13, "dash"),
    "olh": ("#9467bd", "x", 7, "solid"),
    "hm": ("#8c564b", "triangle-up", 9, "dashdot"),
}
POSTPROCESS_STYLE = {
    "base": ("#7f7f7f", "circle", 8, "solid"),
    "base_pos": ("#17becf", "square-open", 11, "dash"),
    "base_cut": ("#e377c2", "diamond", 8, "dot"),
}
SCENARIO_DASHES = ("solid", "dash", "dot", "dashdot")
TRUE_COLOUR, RELEASED_COLOUR = "#8c564b", "#d62728"  # the thesis's brown and red bars
_CONFIG = {"displaylogo": False, "responsive": True}
_VERDICT_MARK = {"agrees": "✓ agrees", "differs": "✗ differs", "not checked": "– not checked",
                 "cannot tell": "? cannot tell",
                 "data alike": "data fact: alike", "data differ": "data fact: differs"}


def _esc(text) -> str:
    return html.escape(str(text))


def _panel_name(key: str, facet: str) -> str:
    if facet == "mechanism":
        return thesis.label(key) if key in thesis.MECHANISMS else str(key)
    if facet == "postprocess":
        return postprocess.METHODS[key].name
    return str(key)


def _grid(panels: list, columns: int, titles: list[str], independent_y: bool = True,
          height_per_row: int = 330):
    cols = min(columns, max(len(panels), 1))
    rows = max(1, math.ceil(len(panels) / cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[_esc(t) for t in titles],
                        shared_yaxes=not independent_y, horizontal_spacing=0.08,
                        vertical_spacing=0.16 if rows > 1 else 0.1)
    fig.update_layout(height=height_per_row * rows + 140, template="plotly_white")
    return fig, [(i // cols + 1, i % cols + 1) for i in range(len(panels))]


def _axes(index: int) -> tuple[str, str]:
    """Layout keys of the x- and y-axis of subplot ``index`` (0-based, row by row)."""
    suffix = "" if index == 0 else str(index + 1)
    return f"xaxis{suffix}", f"yaxis{suffix}"


def _finish(fig: go.Figure, traces: list, cells: list, axes: dict, **layout) -> go.Figure:
    """Add every trace and axis setting at once (plotly validates each call: one call each)."""
    fig.add_traces([t for t, _ in traces], rows=[cells[i][0] for _, i in traces],
                   cols=[cells[i][1] for _, i in traces])
    fig.update_layout({**axes, **layout})
    return fig


def _lines(spec: thesis.Figure) -> go.Figure:
    """Mean over trials against ε, error bars = 95 % intervals; one panel per facet value."""
    data = spec.data
    info = metrics.METRICS[spec.metric]
    unit = f"{info.label} ({info.unit})" if info.unit else info.label
    panels = list(dict.fromkeys(data[spec.facet])) if spec.facet else [None]
    columns = 2 if spec.facet else 1
    fig, cells = _grid(panels, columns,
                       [_panel_name(p, spec.facet) for p in panels] if spec.facet else [""],
                       spec.independent_y)
    styles = POSTPROCESS_STYLE if spec.colour == "postprocess" else MECHANISM_STYLE
    dashes = {s: SCENARIO_DASHES[i % len(SCENARIO_DASHES)]
              for i, s in enumerate(dict.fromkeys(data["scenario"]))}
    shown, traces, axes = set(), [], {}
    for index, panel in enumerate(panels):
        rows = data if panel is None else data[data[spec.facet] == panel]
        group = [spec.colour] + ([spec.dash] if spec.dash else [])
        for keys, series in rows.groupby(group, sort=False):
            keys = keys if isinstance(keys, tuple) else (keys,)
            colour, symbol, size, dash = styles[keys[0]]
            if spec.dash:
                dash = dashes[keys[1]]
            name = (_panel_name(keys[0], spec.colour)
                    + (f" · {_esc(keys[1])}" if spec.dash else ""))
            series = series.sort_values("epsilon")
            traces.append((go.Scatter(
                x=series["epsilon"], y=series["mean"], name=name, legendgroup=name,
                showlegend=name not in shown, mode="lines+markers",
                line={"color": colour, "dash": dash, "width": 2},
                marker={"symbol": symbol, "size": size, "color": colour,
                        "line": {"width": 2, "color": colour}},
                error_y={"type": "data", "symmetric": False,
                         "array": series["high"] - series["mean"],
                         "arrayminus": series["mean"] - series["low"], "thickness": 1},
                customdata=series[["trials", "low", "high"]],
                hovertemplate=(f"{name}<br>ε = %{{x}}<br>mean %{{y:.4g}}<br>95 % interval "
                               f"%{{customdata[1]:.4g}} – %{{customdata[2]:.4g}}<br>"
                               f"%{{customdata[0]}} trials<extra></extra>")), index))
            shown.add(name)
        x_key, y_key = _axes(index)
        axes[x_key] = {"title": {"text": "ε (privacy budget)"}}
        y_axis = log_axis(pd.concat([rows["low"], rows["high"], rows["mean"]])) \
            if spec.log_y else {}
        if index % columns == 0:
            y_axis["title"] = {"text": unit}
        axes[y_key] = y_axis
    return _finish(fig, traces, cells, axes, title=_esc(spec.title),
                   legend={"title": {"text": "series"}})


def _bars(spec: thesis.Figure) -> go.Figure:
    data = spec.data
    panels = list(dict.fromkeys(data["panel"]))
    fig, cells = _grid(panels, 2, panels, True, 300)
    traces, axes = [], {}
    for index, panel in enumerate(panels):
        rows = data[data["panel"] == panel]
        hover = [_esc(c) for c in rows["commute"]]
        traces.append((go.Bar(x=rows["rank"], y=rows["true"], name="True count",
                              marker={"color": TRUE_COLOUR}, legendgroup="true",
                              showlegend=index == 0, hovertext=hover), index))
        traces.append((go.Bar(x=rows["rank"], y=rows["released"], name="Released count",
                              marker={"color": RELEASED_COLOUR, "pattern": {"shape": "/"}},
                              legendgroup="released", showlegend=index == 0,
                              hovertext=hover), index))
        x_key, y_key = _axes(index)
        axes[x_key] = {"title": {"text": "true rank of the commute"}}
        axes[y_key] = {"tickformat": ",", "title": {"text": "commuters" if index % 2 == 0
                                                    else ""}}
    return _finish(fig, traces, cells, axes, title=_esc(spec.title), barmode="group")


def _ordering(spec: thesis.Figure) -> go.Figure:
    data = spec.data
    panels = list(dict.fromkeys(data[spec.facet]))
    zeros = data.groupby(spec.facet, sort=False)["released_zero"].sum()
    fig, cells = _grid(panels, 2, [f"{_panel_name(p, spec.facet)}: {int(zeros[p]):,} released "
                                   f"as 0" for p in panels], True, 360)
    traces, axes = [], {}
    for index, panel in enumerate(panels):
        rows = data[data[spec.facet] == panel]
        top = int(rows["true_rank"].max())
        traces.append((go.Scatter(x=[1, top], y=[1, top], mode="lines", name="true order",
                                  line={"color": "black", "width": 1}, showlegend=index == 0,
                                  legendgroup="diag"), index))
        for zero, name, style in ((False, "released > 0", ("#1f77b4", "circle", 4)),
                                  (True, "released as 0", ("#d62728", "x", 6))):
            part = rows[rows["released_zero"] == zero]
            traces.append((go.Scattergl(
                x=part["true_rank"], y=part["released_rank"], mode="markers", name=name,
                legendgroup=name, showlegend=index == 0,
                marker={"color": style[0], "symbol": style[1], "size": style[2]},
                hovertemplate="true rank %{x}<br>released rank %{y}<extra></extra>"), index))
        x_key, y_key = _axes(index)
        axes[x_key] = {"title": {"text": "true rank"}}
        y_axis = log_axis(rows["released_rank"]) if rows["released_rank"].max() > 20 * top \
            else {}
        y_axis["title"] = {"text": "released rank" if index % 2 == 0 else ""}
        axes[y_key] = y_axis
    return _finish(fig, traces, cells, axes, title=_esc(spec.title))


def _map(spec: thesis.Figure) -> go.Figure:
    data, land = spec.data, spec.context.get("land")
    fig = go.Figure()
    if land:
        polygons = land["coordinates"] if land["type"] == "MultiPolygon" else [land["coordinates"]]
        xs, ys = [], []
        for polygon in polygons:
            ring = np.asarray(polygon[0])
            xs += list(ring[:, 0]) + [None]
            ys += list(ring[:, 1]) + [None]
        fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", mode="lines", name="land",
                                 line={"color": "#999", "width": 1}, fillcolor="#eeeeee",
                                 hoverinfo="skip"))
    styles = {"D": ("#d62728", "circle", 7), "R": ("#1f77b4", "square", 7)}
    for subset, rows in data.groupby("subset", sort=True):
        colour, symbol, size = styles.get(subset[:1], ("#bbbbbb", "circle", 3))
        fig.add_trace(go.Scattergl(x=rows["lon"], y=rows["lat"], mode="markers",
                                   name=f"{_esc(subset)} ({len(rows)} zones)",
                                   marker={"color": colour, "symbol": symbol, "size": size},
                                   hovertext=[_esc(z) for z in rows["label"]]))
    mid = float(data["lat"].mean()) if len(data) else 0.0
    fig.update_xaxes(title_text="longitude (°)", showgrid=False)
    fig.update_yaxes(title_text="latitude (°)", showgrid=False, scaleanchor="x",
                     scaleratio=1 / max(math.cos(math.radians(mid)), 0.1))
    fig.update_layout(title=_esc(spec.title), template="plotly_white", height=620)
    return fig


def figure(spec: thesis.Figure) -> go.Figure:
    """A plotly figure of one :class:`dpcore.evaluation.thesis.Figure`."""
    return {"lines": _lines, "bars": _bars, "ordering": _ordering, "map": _map}[spec.kind](spec)


def _table_html(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, escape=True, border=0, classes="data", na_rep="–",
                         float_format=lambda v: f"{v:,.4g}")


def _verdict_html(verdict: thesis.Verdict) -> str:
    parts = [f"<b>Thesis:</b> {_esc(verdict.thesis)}" if verdict.thesis else "",
             f"<b>Check:</b> {_esc(verdict.criterion)}" if verdict.criterion else "",
             f"<b>This run:</b> {_esc(verdict.ours)}",
             f'<b>Verdict:</b> <span class="{verdict.word.replace(" ", "-")}">'
             f"{_VERDICT_MARK[verdict.word]}</span>"
             + (f" — {_esc(verdict.reason)}" if verdict.reason else "")]
    return '<p class="verdict">' + "<br>".join(p for p in parts if p) + "</p>"


def _anchor(protocol: str, ref: str) -> str:
    return thesis.slug(f"{protocol} {ref}")


def _section(item, protocol: str) -> str:
    anchor = _anchor(protocol, item.ref)
    heading = f"<h2>{_esc(item.ref)}: {_esc(item.title)}</h2>"
    if isinstance(item, thesis.Absent):
        return (f'<section id="{anchor}">{heading}<p class="caption">Not in this run: '
                f"{_esc(item.why)}.</p></section>")
    if isinstance(item, thesis.Figure):
        body = pio.to_html(figure(item), full_html=False, include_plotlyjs=False, config=_CONFIG)
    else:
        shown = item.data.drop(columns=["key"], errors="ignore")
        body = _table_html(shown)
    return (f'<section id="{anchor}">{heading}{body}<p class="caption">{_esc(item.caption)} '
            f"Data: <code>{_esc(_anchor(protocol, item.ref))}.csv</code>.</p>"
            f"{_verdict_html(item.verdict)}</section>")


def _summary_html(chapter: thesis.Chapter) -> str:
    """One row per item: each protocol's verdict and its computed reason, side by side."""
    protocols = list(chapter.by_protocol)
    verdicts = {(v.protocol, v.ref): v for v in chapter.verdicts}
    rows = []
    for ref, _ in thesis.ITEMS:
        cells = [f"<td>{_esc(ref)}</td>"]
        for protocol in protocols:
            v = verdicts.get((protocol, ref))
            if v is None:
                cells.append("<td>–</td>")
                continue
            cells.append(f'<td class="{v.word.replace(" ", "-")}"><a href="#'
                         f'{_anchor(protocol, ref)}">{_VERDICT_MARK.get(v.word, v.word)}</a>'
                         + (f'<br><span class="caption">{_esc(v.reason)}</span>'
                            if v.reason and v.agrees is False else "") + "</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    tally = "; ".join(
        f"{_esc(p)}: " + ", ".join(f"{n} {w}" for w, n in pd.Series(
            [v.word for v in chapter.verdicts if v.protocol == p]).value_counts().items())
        for p in protocols)
    head = "".join(f"<th>{_esc(p)}</th>" for p in protocols)
    return (f"<h2 id=\"summary\">Summary: the thesis's findings against this run ({tally})</h2>"
            f'<table class="data summary"><thead><tr><th>Item</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            "<p class=\"caption\">As written: chapter 3's definitions. As run: what the "
            "thesis's code computed (" + _esc("; ".join(
                d.title + (" — a defect of the original code" if d.defect else "")
                for d in thesis.as_run.DIFFERENCES.values())) + "). Each verdict is computed by "
            "the check printed under its item. The reason for a difference is computed too: the "
            "item is rerun with one protocol difference toggled at a time, and the ones that "
            "flip it are named; when none does, what remains (the data) is said. An agreement "
            "is judged again with three breaks planted in the item's data (no noise, ten times "
            "the noise, a constant bias): “cannot tell” marks a check that agrees on one of "
            "them too, and names it. Items marked as data facts compare the data with the "
            "thesis's, not a mechanism.</p>")


def _about_data(chapter: thesis.Chapter) -> str:
    facts = f"<p>{_esc(chapter.data_facts)}</p>" if chapter.data_facts else ""
    return _which_data(chapter) + facts


def _which_data(chapter: thesis.Chapter) -> str:
    source = chapter.source
    if source is None:
        return (f"<p>Run on <b>your data</b>, <b>{_esc(chapter.dataset)}</b>. The thesis's numbers "
                "come from the 2016 Irish census (POWSCAR); compare the findings, not the "
                "values.</p>")
    if getattr(source, "synthetic", False):
        return (f"<p>Run on the bundled dataset <b>{_esc(chapter.dataset)}</b>, which is "
                "synthetic (calibrated to the 2016 census margins), so the numbers differ from "
                "the thesis's; the comparisons are the thesis's.</p>")
    return f"<p>Run on the bundled dataset <b>{_esc(chapter.dataset)}</b>.</p>"


def render(chapter: thesis.Chapter) -> str:
    """The report as one HTML document (plotly.js inlined once)."""
    settings = "".join(f"<li><b>{_esc(k)}</b>: {_esc(v)}</li>"
                       for k, v in chapter.settings.items())
    groups = chapter.by_protocol or {"": chapter.items}
    toc = "".join(f'<li><a href="#{_anchor(protocol, item.ref)}">{_esc(item.ref)}</a>: '
                  f"{_esc(item.title)} ({_esc(protocol)})</li>"
                  for protocol, items in groups.items() for item in items)
    body = "".join(f"<h1>The thesis {_esc(protocol)}</h1>"
                   + "".join(_section(item, protocol) for item in items)
                   for protocol, items in groups.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Thesis chapter 5 reproduced · {_esc(chapter.dataset)}</title>
<style>
body {{ font-family: "Liberation Sans", Arial, sans-serif; max-width: 1150px; margin: 2em auto;
       padding: 0 1em; color: #222; }}
.caption {{ color: #444; font-size: 0.9em; }}
.verdict {{ font-size: 0.9em; background: #f6f6f6; padding: 0.5em 0.8em; }}
.agrees {{ color: #1a6b1a; font-weight: bold; }}
.differs {{ color: #a34000; font-weight: bold; }}
.not-checked, .cannot-tell, .data-alike, .data-differ {{ color: #555; }}
table.data {{ border-collapse: collapse; font-size: 0.9em; }}
table.data th, table.data td {{ padding: 3px 8px; border-bottom: 1px solid #ddd;
                                text-align: right; vertical-align: top; }}
table.data td:first-child {{ text-align: left; }}
table.summary td {{ text-align: left; }}
section {{ margin-bottom: 2.5em; }}
</style>
<script>{plotly.offline.get_plotlyjs()}</script>
</head><body>
<h1>Experiments of the thesis's chapter 5, reproduced</h1>
<p>Finnegan, <i>Local Differential Privacy Mechanisms for Frequency Estimation with Application to
Mobility Data</i>, chapter 5, rerun by <code>python3 -m dpcore reproduce-thesis</code> in
{chapter.seconds:.0f} s, under two protocols: <b>as written</b> (chapter 3's definitions; "Hadamard"
is its Hadamard mechanism with t = 1) and <b>as run</b> (what the thesis's code computed; "Hadamard"
is Hadamard Response, and two defects of the original code are reproduced to explain its
numbers, never offered as mechanisms). Every figure's data is a CSV next to this file.</p>
{_about_data(chapter)}
{_summary_html(chapter)}
<h2>Settings</h2><ul>{settings}</ul>
<h2>Contents</h2><ol>{toc}</ol>
{body}
</body></html>
"""


def write(chapter: thesis.Chapter, out: Path, private: bool = False) -> Path:
    """``report.html`` and every figure's and table's CSV in directory ``out``; ``private``: run
    on the user's own table (not a bundled synthetic one), so every file shows its true counts
    or errors measured against them and starts with the not-for-publication line
    (:mod:`dpcore.confidential`; the page's zip is marked as a whole instead)."""
    out = Path(out)
    thesis.write_csvs(chapter, out, private)
    page = render(chapter)
    path = out / "report.html"
    path.write_text(confidential.html_text(page) if private else page, encoding="utf-8")
    return path


def zipped(chapter: thesis.Chapter) -> bytes:
    """What :func:`write` writes, as one zip file (a download)."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as folder, zipfile.ZipFile(
            buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        write(chapter, Path(folder))
        for path in sorted(Path(folder).iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()
