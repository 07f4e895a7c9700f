"""The thesis's results chapter as one self-contained HTML file (:mod:`dpcore.evaluation.thesis` data).

plotly.js is inlined once in the page head and every figure is a ``<div>`` that uses it, so the
file opens offline and asks no server for anything (no CDN, no fonts, no MathJax). Every label
that may come from a user's file (zone and area names) is escaped before it reaches HTML or a
plotly legend or hover.
"""

from __future__ import annotations

import html
import io
import tempfile
import zipfile
from pathlib import Path

import plotly.express as px
import plotly.io as pio
import plotly.offline

from dpcore import mechanisms
from dpcore.evaluation import metrics, thesis
from dpcore.mechanisms import postprocess

#: Mechanism colours in the chapter's order (plotly's qualitative set; the same in every figure).
COLOURS = dict(zip(thesis.MECHANISMS, px.colors.qualitative.D3))
POSTPROCESS_COLOURS = dict(zip(thesis.POSTPROCESS, px.colors.qualitative.Set2))
_CONFIG = {"displaylogo": False, "responsive": True}


def _label(key: str) -> str:
    return mechanisms.get(key).name


def figure(spec: thesis.Figure):
    """A plotly figure of one :class:`dpcore.evaluation.thesis.Figure`: mean over trials against ε, the
    95 % interval as error bars, log scale for errors spanning decades."""
    data = spec.data.copy()
    data["error_plus"] = data["high"] - data["mean"]
    data["error_minus"] = data["mean"] - data["low"]
    data["mechanism"] = data["mechanism"].map(_label)
    data["post-processing"] = data["postprocess"].map(lambda k: postprocess.METHODS[k][0])
    data["data"] = data["scenario"].map(lambda s: html.escape(str(s)))
    rename = {"postprocess": "post-processing", "scenario": "data"}
    colour = rename.get(spec.colour, spec.colour)
    colours = (POSTPROCESS_COLOURS if spec.colour == "postprocess" else COLOURS)
    colour_map = {(_label(k) if spec.colour == "mechanism" else postprocess.METHODS[k][0]): c
                  for k, c in colours.items()}
    info = metrics.METRICS[spec.metric]
    facet = rename.get(spec.facet, spec.facet) if spec.facet else None
    fig = px.line(data, x="epsilon", y="mean", color=colour, markers=True,
                  line_dash=rename.get(spec.dash, spec.dash) if spec.dash else None,
                  facet_col=facet, facet_col_wrap=3 if facet else 0,
                  error_y="error_plus", error_y_minus="error_minus", log_y=spec.log_y,
                  color_discrete_map=colour_map, hover_data={"trials": True, "low": ":.4g",
                                                             "high": ":.4g"},
                  labels={"epsilon": "ε (privacy budget)",
                          "mean": f"{info.label} ({info.unit})" if info.unit else info.label},
                  title=html.escape(spec.title), template="plotly_white",
                  height=330 * (1 + (data[facet].nunique() - 1) // 3) + 120 if facet else 460)
    if facet:
        fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    return fig


def _table_html(table: thesis.Table) -> str:
    return table.data.to_html(index=False, escape=True, border=0, classes="data",
                              float_format=lambda v: f"{v:.4g}")


def _section(ref: str, title: str, body: str, caption: str, csv: str) -> str:
    anchor = thesis.slug(ref)
    return (f'<section id="{anchor}"><h2>{html.escape(title)}</h2>{body}'
            f'<p class="caption">{html.escape(caption)} Data: <code>{html.escape(csv)}</code>.'
            f'</p></section>')


def render(chapter: thesis.Chapter) -> str:
    """The report as one HTML document (plotly.js inlined once)."""
    parts, contents = [], []
    for spec in chapter.figures:
        div = pio.to_html(figure(spec), full_html=False, include_plotlyjs=False,
                          config=_CONFIG)
        parts.append(_section(spec.ref, f"{spec.ref}: {spec.title}", div, spec.caption,
                              f"{thesis.slug(spec.ref)}.csv"))
        contents.append((spec.ref, spec.title))
    for table in chapter.tables:
        parts.append(_section(table.ref, f"{table.ref}: {table.title}", _table_html(table),
                              table.caption, f"{thesis.slug(table.ref)}.csv"))
        contents.append((table.ref, table.title))
    settings = "".join(f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</li>"
                       for k, v in chapter.settings.items())
    toc = "".join(f'<li><a href="#{thesis.slug(ref)}">{html.escape(ref)}</a>: '
                  f'{html.escape(title)}</li>' for ref, title in contents)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Thesis chapter 5 reproduced · {html.escape(chapter.dataset)}</title>
<style>
body {{ font-family: "Liberation Sans", Arial, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; }}
.caption {{ color: #444; font-size: 0.9em; }}
table.data {{ border-collapse: collapse; font-size: 0.9em; }}
table.data th, table.data td {{ padding: 3px 8px; border-bottom: 1px solid #ddd;
                                text-align: right; }}
table.data td:first-child {{ text-align: left; }}
section {{ margin-bottom: 2.5em; }}
</style>
<script>{plotly.offline.get_plotlyjs()}</script>
</head><body>
<h1>Experiments of the thesis's chapter 5, reproduced</h1>
<p>Finnegan, <i>Local Differential Privacy Mechanisms for Frequency Estimation with Application to
Mobility Data</i> (University of Padova, 2023/24), chapter 5, rerun on
<b>{html.escape(chapter.dataset)}</b> by <code>python3 -m dpcore reproduce-thesis</code> in
{chapter.seconds:.0f} s. The bundled Irish datasets are synthetic (calibrated to the 2016 census
margins), so the numbers differ from the thesis's; the comparisons are the thesis's. Every figure's
data is a CSV next to this file.</p>
<ul>{settings}</ul>
<h2>Contents</h2><ol>{toc}</ol>
{''.join(parts)}
</body></html>
"""


def write(chapter: thesis.Chapter, out: Path) -> Path:
    """``report.html`` and every figure's and table's CSV in directory ``out``."""
    out = Path(out)
    thesis.write_csvs(chapter, out)
    path = out / "report.html"
    path.write_text(render(chapter), encoding="utf-8")
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
