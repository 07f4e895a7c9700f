"""Plotly figures for every page, and the downloads that go with them.

Every figure has a title, axis titles with units and a legend, and draws each mechanism in the
same colour, marker and bar pattern everywhere: :func:`colour`, :func:`symbol` and :func:`pattern`
are the only source of them. The palette is Paul Tol's colour-blind-safe "bright", "vibrant" and
"muted" schemes; markers (scatters, curves) and fill patterns (bars) differ too, so no reading
relies on colour alone. Zone names come from uploads and plotly renders a subset of HTML in hover
text and tick labels, so every name is escaped (:func:`escape`) before it is drawn.

:func:`downloads` puts the data behind a figure (formula-safe CSV) and the figure itself (a
standalone HTML file with plotly.js inlined, which works offline) under the chart. PNG comes from
the camera button of the chart's own toolbar (drawn by the browser, no extra dependency).
"""

from __future__ import annotations

import copy
import functools
import html
import math
import re
import zlib

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from plotly.subplots import make_subplots

from dpcore import confidential, mechanisms
from dpcore.evaluation import intervals, value_axis
from dpcore.export import safe_csv
from ui.components import safe

#: The house template, set once for the process (every figure here is ours): a ``template=`` on
#: each figure makes plotly validate and copy the whole template again, ~25 ms a figure.
pio.templates.default = "plotly_white"

#: Fixed colour per mechanism key (Paul Tol's colour-blind-safe schemes).
PALETTE = {
    "laplace": "#CC3311", "discrete_laplace": "#EE7733", "gaussian": "#EE3377",
    "stability_histogram": "#009988", "topk": "#882255",
    "grr": "#0077BB", "sue": "#33BBEE", "oue": "#117733", "blh": "#999933", "olh": "#DDCC77",
    "ss": "#AA4499", "dbitflip": "#332288", "hr": "#88CCEE", "hm": "#AA3377",
    # Baselines (not DP) in greys and browns, apart from the DP mechanisms.
    "suppression": "#777777", "rounding": "#997755", "random_rounding": "#BB9966",
    "cell_key": "#444444",
}
#: Colours for other mechanisms a later version registers (picked by a stable hash of the key).
SPARE = ("#4477AA", "#228833", "#CCBB44", "#66CCEE", "#44AA99", "#882255")
#: What a table cell with nothing to show reads (each table's caption or help says why).
NOTHING = "—"
TRUE_COLOUR = "#555555"
ZERO_COLOUR = "#BBBBBB"
#: One marker per registered mechanism (20 and more), so no two mechanisms share one.
_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "star",
            "pentagon", "hexagon", "cross", "triangle-left", "triangle-right", "hourglass",
            "bowtie", "star-square", "octagon", "hexagram", "star-diamond", "diamond-wide",
            "triangle-ne", "triangle-sw", "star-triangle-up", "diamond-tall", "hexagon2")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
FONT = dict(family="Liberation Sans, Arial, sans-serif", size=13)


def colour(key: str) -> str:
    """The colour of mechanism ``key`` on every page."""
    return PALETTE.get(key) or SPARE[zlib.crc32(key.encode()) % len(SPARE)]


def symbol(key: str) -> str:
    """The marker of mechanism ``key`` (its position in the registry)."""
    keys = mechanisms.names()
    return _SYMBOLS[keys.index(key) % len(_SYMBOLS)] if key in keys else "circle"


#: Bar fill patterns, one per mechanism (registry order): bars never rely on colour alone.
_PATTERNS = ("", "/", "\\", "x", "-", "|", "+", ".")


def pattern(key: str) -> str:
    """The bar fill pattern of mechanism ``key`` (its position in the registry)."""
    keys = mechanisms.names()
    return _PATTERNS[keys.index(key) % len(_PATTERNS)] if key in keys else ""


#: Short names for table headers (the thesis's tables 5.1–5.4 use Lap, Stab H, RR, UE, …).
SHORT_NAMES = {"laplace": "Laplace", "discrete_laplace": "Discrete Laplace",
               "gaussian": "Gaussian", "stability_histogram": "Stability hist.", "topk": "Top-k",
               "grr": "GRR", "sue": "SUE", "oue": "OUE", "blh": "BLH", "olh": "OLH",
               "ss": "Subset selection", "dbitflip": "dBitFlip", "hr": "HR", "hm": "HM",
               "suppression": "Suppression (not DP)", "rounding": "Rounding (not DP)",
               "random_rounding": "Random rounding (not DP)", "cell_key": "Cell key (not DP)",
               "cms": "Apple CMS", "hcms": "Apple HCMS"}


def short_name(key: str) -> str:
    """A mechanism's short name, for table columns."""
    return SHORT_NAMES.get(key, key)


#: At most 8 characters, for tables with one narrow column per mechanism (Explore's Scores with 8
#: mechanisms: 75 px each); the full name goes in the column's help. ⚠: not differentially private.
ABBREVIATIONS = {"discrete_laplace": "DLap", "gaussian": "Gauss", "stability_histogram": "StabH",
                 "ss": "SS", "cms": "CMS", "hcms": "HCMS", "suppression": "Supp ⚠",
                 "rounding": "Round ⚠", "random_rounding": "RRound ⚠", "cell_key": "CKey ⚠",
                 "onthemap": "OnTheMap"}


def abbreviation(key: str) -> str:
    """A mechanism's name in at most 8 characters (its short name where that is short enough)."""
    return ABBREVIATIONS.get(key, short_name(key))


def name(key: str) -> str:
    """Legend name of a mechanism."""
    try:
        return mechanisms.get(key).name
    except KeyError:
        return key


def escape(text) -> str:
    """Untrusted text made inert for plotly's HTML-like labels."""
    return html.escape(str(text), quote=True)


def short(text, length: int = 40) -> str:
    """Text cut to ``length`` characters with an ellipsis (tick labels; hover shows it whole)."""
    text = str(text)
    return text if len(text) <= length else text[:length - 1] + "…"


def _lines(text, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word
    stays whole on its own line)."""
    out: list[str] = []
    for word in str(text).split():
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def wrap(text, width: int = 36, lines: int = 3) -> str:
    """Untrusted plain ``text`` broken at spaces into at most ``lines`` lines of about ``width``
    characters, escaped and joined by plotly's ``<br>``: a long legend entry or tick label
    wraps instead of running past a phone's 390 px (plotly never wraps text itself). A word
    longer than ``width``, or text beyond the last line, is cut with an ellipsis."""
    out = _lines(text, width)
    if len(out) > lines:
        out = out[:lines - 1] + [short(" ".join(out[lines - 1:]), width)]
    return "<br>".join(escape(short(line, width)) for line in out)


#: Axis titles longer than this many characters wrap (a 390 px phone's plot is ~250 px wide).
AXIS_TITLE_WIDTH = 34


def wrap_title(title: str, width: int = AXIS_TITLE_WIDTH) -> str:
    """Our own axis title (already safe markup, never cut) broken at spaces with ``<br>``."""
    return "<br>".join(_lines(title, width))


def lines_of(label: str) -> list[str]:
    """The lines of a label made by :func:`wrap`."""
    return label.split("<br>")


#: Legend above the plot, left-aligned: the plot keeps the page's full width.
LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0)


#: Assumed drawing width (px) when estimating how many rows the legend wraps into.
LEGEND_WIDTH = 620
#: The title starts below plotly's toolbar (a strip about 30 px high at the figure's top right,
#: shown on hover), so the toolbar never covers the title, however narrow the figure.
TITLE_PAD = 34
TITLE_SPACE, LEGEND_ROW = 45 + TITLE_PAD - 12, 22


def from_spec(data: list[dict], layout: dict) -> go.Figure:
    """A figure from traces and layout written directly in plotly's JSON shape.

    Plotly's object API validates and copies every property on every update: the Explore page's
    three figures cost 15–55 ms each that way at county level, about half of the server's CPU per
    rerun, and every session's rerun shares one Python interpreter. Given the final shape, plotly
    needs no validation (~2 ms a figure); the result is an ordinary ``go.Figure``.
    """
    return go.Figure({"data": data, "layout": layout}, _validate=False)


@functools.lru_cache(maxsize=64)
def _subplot_grid(rows: int, cols: int, titles: tuple[str, ...], **options) -> dict:
    return make_subplots(rows=rows, cols=cols, subplot_titles=titles, **options).to_dict()["layout"]


def subplot_grid(rows: int, cols: int, titles: tuple[str, ...], **options) -> dict:
    """The layout of plotly's ``make_subplots`` grid (axes, domains, panel titles) as a dict, made
    once per shape; trace ``i`` (row-major) of the grid belongs on :func:`subplot_axes` ``(i)``."""
    return copy.deepcopy(_subplot_grid(rows, cols, tuple(titles), **options))


def subplot_axes(index: int) -> dict:
    """The axes of the ``index``-th panel (row-major, from 0) of a :func:`subplot_grid`."""
    suffix = str(index + 1) if index else ""
    return dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")


def axes(layout: dict, letter: str) -> list[dict]:
    """Every ``xaxis*`` (``letter="x"``) or ``yaxis*`` entry of a layout dict."""
    return [value for key, value in layout.items() if re.fullmatch(f"{letter}axis[0-9]*", key)]


def _legend_rows(traces: list[dict]) -> int:
    """Lines a horizontal legend needs: entries (≈ 45 px + 7.5 px per character of their longest
    line) packed greedily into rows, each row as tall as its entry of most lines (:func:`wrap`)."""
    heights, used = [1], 0
    for trace in traces:
        if trace.get("showlegend") is False or not trace.get("name"):
            continue
        lines = lines_of(trace["name"])
        width = 45 + 7.5 * max(map(len, lines))
        if used and used + width > LEGEND_WIDTH:
            heights, used = heights + [1], 0
        used += width
        heights[-1] = max(heights[-1], len(lines))
    return sum(heights)


def heading(traces: list[dict], title: str, plot_height: int, bottom: int, gap: int = 0) -> dict:
    """Layout entries for the title at the top, the legend in rows under it, ``gap`` px (e.g. for
    subplot titles), then a plot area of ``plot_height`` px above a ``bottom`` px margin.

    The top margin grows with the legend's rows, so a long legend never covers the title.
    """
    top = TITLE_SPACE + LEGEND_ROW * _legend_rows(traces) + 10 + gap
    return dict(title=dict(text=title, x=0, xanchor="left", yref="container", y=1,
                           yanchor="top", pad=dict(t=TITLE_PAD)),
                legend=LEGEND | dict(y=1.02 + gap / plot_height),
                height=plot_height + top + bottom, margin=dict(t=top))


#: Height of one line of a legend below the plot (13 px text), and its characters per line.
LEGEND_LINE, LEGEND_BELOW_WIDTH = 19, 30


def legend_below(spec: dict, traces: list[dict], plot_height: int, bottom: int) -> dict:
    """``spec`` (a :func:`house_layout`) with its legend moved under the plot, one entry per row
    from the plot's left edge: its height then does not depend on the width, so a phone's
    narrow figure neither cuts an entry nor pushes the legend over the title. For legends of
    long entries (names wrapped by :func:`wrap` to :data:`LEGEND_BELOW_WIDTH`, which fit the
    ~270 px plot of a 390 px phone); ``bottom`` is the room for the x axis."""
    lines = sum(len(lines_of(t["name"])) for t in traces
                if t.get("showlegend") is not False and t.get("name"))
    below = LEGEND_LINE * lines + 16
    top = TITLE_SPACE + 10
    return spec | dict(
        # x in the plot's frame: plotly misplaces the y axis title of a legend in the figure's.
        legend=dict(orientation="v", x=0, xanchor="left", yref="container", y=0,
                    yanchor="bottom", traceorder="normal"),
        height=plot_height + top + bottom + below,
        # The margins are all set here: a legend would push them (plotly reserves its width at
        # the left, leaving a phone's plot 100 px wide).
        margin=spec["margin"] | dict(t=top, b=bottom + below, autoexpand=False))


def numbers_table(frame: pd.DataFrame, number_format: str, first: int = 1) -> None:
    """``frame`` as a table whose columns from ``first`` on are numbers shown in
    ``number_format`` (Streamlit's NumberColumn: "%.4g", "percent", …); the ones before are
    labels."""
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={column: st.column_config.NumberColumn(format=number_format)
                                for column in frame.columns[first:]})


def table_number(value) -> str:
    """A number as :func:`wrapped_table` shows it (a sentence quoting a table cell uses this)."""
    if pd.isna(value):
        return NOTHING
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def wrapped_table(frame: pd.DataFrame) -> None:
    """``frame`` as an HTML table whose headers and cells wrap (an ``st.dataframe`` cuts a long
    header to "Suppression (not" and pushes columns off-screen), every number in one format:
    thousands separated, whole numbers without decimals. ``st.table`` renders every cell and
    header as Markdown, so each is made literal (:func:`ui.components.safe.markdown`): an
    uploaded zone named ``[x](http://…)`` stays text, not a link."""
    shown = pd.DataFrame({
        safe.markdown(column): [safe.markdown(table_number(v) if numeric else v)
                                for v in frame[column]]
        for column in frame.columns
        for numeric in [pd.api.types.is_numeric_dtype(frame[column])]})
    st.table(shown.style.hide(axis="index"))


def marker_line(fig: go.Figure, axis: str, value: float, log: bool,
                annotation_text: str | None = None, **options) -> None:
    """A vertical (``axis="x"``) or horizontal (``"y"``) line at ``value`` across the plot, with
    its label. On a log axis plotly places a shape in data units but an annotation in log₁₀
    units: ``add_vline(x=2, annotation_text=…)`` on a log ε axis drew its line at ε = 2 and
    "your ε = 2" at ε = 100, stretching the axis. So the label is added here, at the value in
    the units of the axis the figure will have (:func:`layout`'s ``log_x``/``log_y``), where
    plotly's own ``add_vline``/``add_hline`` would have put it."""
    (fig.add_vline(x=value, **options) if axis == "x" else fig.add_hline(y=value, **options))
    if not annotation_text:
        return
    at = math.log10(value) if log else value
    if axis == "x":
        fig.add_annotation(x=at, xref="x", xanchor="left", y=1, yref="y domain", yanchor="top",
                           text=annotation_text, showarrow=False)
    else:
        fig.add_annotation(y=at, yref="y", yanchor="bottom", x=1, xref="x domain",
                           xanchor="right", text=annotation_text, showarrow=False)


def house_layout(traces: list[dict], title: str, x_title: str, y_title: str, *,
                 log_y: bool = False, log_x: bool = False, height: int = 360,
                 bottom: int = 70) -> dict:
    """The house style of a single-panel figure as layout entries: font, margins, axis titles
    (with units), log axes, title and legend above the plot."""
    def axis(letter: str, title_text: str, log: bool) -> dict:
        entries = dict(title=dict(text=wrap_title(title_text) if letter == "x" else title_text))
        if log:
            entries.update(log_axis(*(trace.get(letter) for trace in traces)))
        return entries

    found = heading(traces, title, height, bottom)
    return found | dict(font=FONT, margin=dict(l=70, r=20, b=bottom) | found["margin"],
                        xaxis=axis("x", x_title, log_x), yaxis=axis("y", y_title, log_y))


def layout(fig: go.Figure, title: str, x_title: str, y_title: str, *, log_y: bool = False,
           log_x: bool = False, height: int = 360, bottom: int = 70) -> go.Figure:
    """:func:`house_layout` applied to a figure built with plotly's object API."""
    fig.update_layout(house_layout([trace.to_plotly_json() for trace in fig.data], title,
                                   x_title, y_title, log_y=log_y, log_x=log_x, height=height,
                                   bottom=bottom))
    return fig


def log_axis(*values) -> dict:
    """Axis entries of every log axis: over more than a decade only the decades are labelled
    (0.1, 1, 10, 100, …) and the steps between them are unlabelled minor ticks (plotly's own
    labels there read "2", "5", "2", "5" with no decade); within one decade plotly's labels
    (2, 3, 5, …) are whole numbers already. Decades of whole counts read 100, 1k, 10k, 1M.
    ``values``: the data drawn on the axis."""
    data = [np.asarray(v, dtype=float).ravel() for v in values if v is not None]
    positive = np.concatenate([d[d > 0] for d in data]) if data else np.empty(0)
    entries = dict(type="log")
    if positive.size and np.log10(positive.max() / positive.min()) > 1:
        entries.update(dtick=1, minor=dict(dtick="D1", ticks="outside", ticklen=4,
                                           showgrid=False))
    if positive.size and positive.min() >= 1 and positive.max() < 1e9:
        # One format for every tick: plotly's own reads "100, 1000, 10k" (SI only from 10⁴);
        # "~s" gives 100, 1k, 10k, 1M (below 1 it would give "m" for milli: not used there).
        entries["tickformat"] = "~s"
    return entries


# ----------------------------------------------------------------------------------- Explore
def count_text(value: float) -> str:
    """A count for a label: whole numbers with thousands separators, one decimal below 100."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def compact_count(value: float) -> str:
    """A count in three significant figures with k/M/bn (labels on narrow bars)."""
    size = abs(value)
    for step, unit in ((1e9, " bn"), (1e6, " M"), (1e3, " k")):
        if size >= step:
            return f"{value / step:.3g}{unit}"
    return f"{value:.3g}"


def _interval_text(low: float, high: float) -> str:
    if not (np.isfinite(low) and np.isfinite(high)):
        return "no 95 % interval"
    return f"95 % interval {count_text(low)} – {count_text(high)}"


def _bars_axis(frame: pd.DataFrame, log_y: bool) -> value_axis.Axis:
    return value_axis.for_bars(frame.drop_duplicates("rank")["true"], frame["released"],
                               frame.get("low"), frame.get("high"), log_y)


def top_bars_caption(frame: pd.DataFrame, how: dict[str, str], log_y: bool) -> str:
    """What the bars chart needs said under it: how each interval was obtained, which releases
    are beyond the axis, and (log scale) which were not drawn."""
    axis = _bars_axis(frame, log_y)
    lines = ["Whiskers: each release's 95 % interval for the true count — "
             + "; ".join(f"{name(key)}: {words}" for key, words in how.items()) + "."]
    beyond, hidden = [], []
    for key, rows in frame.groupby("mechanism", sort=False):
        _, side = value_axis.place(rows["released"], axis)
        if np.any(side):
            beyond.append(f"{name(key)} {int(np.count_nonzero(side))} of {len(rows)}")
        if value_axis.dropped(rows["released"], axis):
            hidden.append(f"{name(key)} {value_axis.dropped(rows['released'], axis)}")
    if beyond:
        lines.append(
            "The axis follows the true counts" + ("" if log_y else
            f" (releases up to {value_axis.REACH:g}× the largest true count are drawn in full)")
            + "; releases beyond it are drawn to its edge and labelled ▲/▼ with their value: "
            + ", ".join(beyond) + ".")
    if hidden:
        lines.append("On the log scale, released counts of 0 or below are not drawn: "
                     + ", ".join(hidden) + " of the bars; intervals reaching 0 are drawn down "
                     "to the axis's bottom.")
    return " ".join(lines)


#: Room under the bars for upright tick labels of 40 characters and the axis title.
BARS_BOTTOM = 330


def top_bars(frame: pd.DataFrame, title: str, log_y: bool = False,
             how: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars: the true count and each mechanism's release for the true top-k commutes,
    each release with its 95 % interval as an error bar.

    ``frame`` is :func:`dpcore.scoring.ranks.top_flows` with ``low``/``high``
    (:func:`dpcore.evaluation.intervals.of_top_flows`); ``how`` says per mechanism how its
    intervals were obtained (in the legend). The value axis follows the truth
    (:mod:`dpcore.evaluation.value_axis`): a release beyond it is drawn to the edge and labelled
    with its value; on a log axis releases of 0 or below are not drawn (the caller notes them).
    Hover: commute, true, released, error, interval; ``customdata``: true, released, low, high.
    """
    how = how or {}
    first = frame.drop_duplicates("rank")
    # Upright one-line ticks (a second line would overlap the next tick; a slanted one reaches
    # left of its bar, past a phone's figure), cut with an ellipsis; the bars' hover names the
    # commute whole.
    ticks = [f"{rank}. {escape(short(commute))}"
             for rank, commute in zip(first["rank"], first["commute"])]
    names = [escape(c) for c in first["commute"]]
    axis = _bars_axis(frame, log_y)
    true_y, _ = value_axis.place(first["true"], axis)
    data = [dict(type="bar", x=ticks, y=true_y, name="True count",
                 marker=dict(color=TRUE_COLOUR), hovertext=names,
                 hovertemplate="<b>%{hovertext}</b><br>True: %{y:,.0f} commuters"
                               "<extra>True count</extra>")]
    for key, rows in frame.groupby("mechanism", sort=False):
        released = rows["released"].to_numpy(float)
        low = rows["low"].to_numpy(float) if "low" in rows else np.full(len(rows), np.nan)
        high = rows["high"].to_numpy(float) if "high" in rows else np.full(len(rows), np.nan)
        y, side = value_axis.place(released, axis)
        shown = np.isfinite(y) & (side == 0) & np.isfinite(low)
        bottom = np.maximum(low, axis.low) if axis.log else low
        label = escape(name(key))
        hover = [f"<b>{commute}</b><br>True: {true:,.0f}<br>Released: {value:,.1f}"
                 f"<br>Error: {value - true:+,.1f}<br>{_interval_text(lo, hi)}"
                 for commute, true, value, lo, hi in zip(names, rows["true"], released, low,
                                                         high)]
        data.append(dict(
            type="bar", x=ticks, y=y,
            name=wrap(f"{name(key)} (95 % interval: {intervals.short_how(how.get(key, 'none'))})",
                      LEGEND_BELOW_WIDTH, lines=4),
            marker=dict(color=colour(key), pattern=dict(shape=pattern(key))),
            error_y=dict(type="data", symmetric=False, visible=True, thickness=1.2, width=2,
                         color="#222222",
                         array=np.where(shown, high - released, np.nan),
                         arrayminus=np.where(shown, released - bottom, np.nan)),
            text=[f"{'▲' if s > 0 else '▼'} {compact_count(v)}" if s else ""
                  for s, v in zip(side, released)],
            textposition="inside", insidetextanchor="end", textangle=-90, constraintext="none",
            textfont=dict(size=10, color="#000000"),
            customdata=np.column_stack([rows["true"].to_numpy(float), released, low, high]),
            hovertext=hover, hovertemplate=f"%{{hovertext}}<extra>{label}</extra>"))
    spec = house_layout(data, title, "Commute (origin → destination), by true rank",
                        "Commuters (count)" + (", log scale" if log_y else ""), log_y=log_y,
                        height=330, bottom=BARS_BOTTOM)
    spec = legend_below(spec, data, 330, BARS_BOTTOM)
    spec["xaxis"].update(tickangle=-90)
    spec["yaxis"].update(range=axis.plotly_range(), autorange=False)
    return from_spec(data, spec | dict(barmode="group", bargap=0.15))


#: Above this many points a scatter is drawn with WebGL; below, SVG (no GL context to start,
#: which costs far more than drawing a thousand points on machines without a GPU).
WEBGL_ABOVE = 5000


def marker_type(points: int) -> str:
    """Trace type of a marker scatter: ``scattergl`` for many points, ``scatter`` otherwise."""
    return "scattergl" if points > WEBGL_ABOVE else "scatter"


def rank_scatter(pairs: dict[str, pd.DataFrame], labels: np.ndarray, title: str,
                 log_axes: bool = False) -> go.Figure:
    """True rank against released rank, one panel per mechanism; released zeros in grey; y = x.

    ``pairs`` maps mechanism key → :func:`dpcore.scoring.ranks.rank_pairs`; ``labels`` are the commute
    names of those cells (same order as the frames' rows).
    """
    keys = list(pairs)
    columns = min(3, max(1, len(keys)))
    rows = -(-len(keys) // columns) if keys else 1
    spec = subplot_grid(rows, columns, tuple(escape(short(name(k), 40)) for k in keys),
                        horizontal_spacing=0.08, vertical_spacing=0.16 if rows > 1 else 0.1)
    data, zero_legend = [], True
    for i, key in enumerate(keys):
        frame = pairs[key]
        top = max(int(frame["true_rank"].max()), 1) if len(frame) else 1
        data.append(dict(type="scatter", x=[1, top], y=[1, top], mode="lines",
                         name="Perfect order (y = x)", line=dict(color="black", width=1),
                         legendgroup="diagonal", showlegend=i == 0, hoverinfo="skip",
                         **subplot_axes(i)))
        for zero in (False, True):
            part = frame[frame["released_zero"] == zero]
            if zero and part.empty:
                continue
            data.append(dict(
                type=marker_type(len(part)), x=part["true_rank"].to_numpy(),
                y=part["released_rank"].to_numpy(), mode="markers",
                name="Released as zero" if zero else escape(name(key)),
                legendgroup="zero" if zero else key, showlegend=not zero or zero_legend,
                marker=dict(color=ZERO_COLOUR if zero else colour(key), size=6,
                            symbol="x" if zero else symbol(key)),
                hovertext=[escape(labels[j]) for j in part.index],
                customdata=part[["true", "released"]].to_numpy(float),
                hovertemplate="<b>%{hovertext}</b><br>True rank %{x:,}, released rank "
                              "%{y:,}<br>True %{customdata[0]:,.0f}, released "
                              "%{customdata[1]:,.1f}<extra></extra>", **subplot_axes(i)))
            zero_legend = zero_legend and not zero
    ranked = [trace["x"] for trace in data] + [trace["y"] for trace in data]
    scale = log_axis(*ranked) if log_axes else dict(type="linear")
    for axis in axes(spec, "x"):
        axis.update(title=dict(text="True rank (1 = busiest)"), **scale)
    for axis in axes(spec, "y"):
        axis.update(title=dict(text="Released rank"), **scale)
    found = heading(data, title, 340 * rows, 70, gap=28)
    spec |= found | dict(font=FONT, margin=dict(l=70, r=20, b=70) | found["margin"])
    return from_spec(data, spec)


#: Result words of the planner's checks and their background (Paul Tol's "light" scheme). The word
#: carries the meaning; the colour only helps, and needs no emoji font.
LIGHTS = {True: ("pass", "#44BB99"), False: ("fail", "#EE8866"),
          "amber": ("uncertain", "#EEDD88"), None: ("n/a", "#DDDDDD")}


def light(passed) -> str:
    """The result word of a check: True, False, "amber" (uncertain) or None (does not apply)."""
    return LIGHTS.get(passed, LIGHTS[None])[0]


def lit(frame: pd.DataFrame, column: str = "Result"):
    """``frame`` styled so that ``column`` shows each result word on its colour."""
    colours = {word: colour_ for word, colour_ in LIGHTS.values()}
    return frame.style.map(lambda word: f"background-color: {colours.get(word, '')}; "
                                        "color: #000000; font-weight: 600", subset=[column])


# ---------------------------------------------------------------------------------- Tradeoffs
def _key_entry(name_: str, group: str, **style) -> dict:
    """A legend entry with nothing drawn (a legend key for colour/marker or for dash)."""
    return dict(type="scatter", x=[None], y=[None], name=escape(name_), legendgroup=group,
                hoverinfo="skip", **style)


def curves(summary: pd.DataFrame, x: str, title: str, x_title: str, y_title: str, *,
           group: str = "mechanism", style: str | None = None, theory: pd.DataFrame | None = None,
           theory_label: str = "theory", log_x: bool = False, log_y: bool = False) -> go.Figure:
    """Mean curves with a shaded confidence band, one per (mechanism, ``style`` value).

    ``summary`` is :func:`dpcore.evaluation.summaries.summarise` output (``mean``, ``low``, ``high``);
    each mechanism has its colour and marker, each curve its own dash (lines on top of each other
    stay visible); with a ``style`` column (e.g. post-processing
    or data subset) the dash tells the style apart instead, and the legend is a key (one entry per
    mechanism, one per style) rather than one entry per curve. ``theory`` (columns ``mechanism``,
    ``x``, ``value``) is drawn as thin dotted lines of the same colour, with one legend entry
    named with ``theory_label`` (e.g. "theory bound") for all of them.
    """
    fig = go.Figure()
    if log_y:   # 0 has no place on a log axis: not drawn (the caller notes it, see below)
        summary = summary.assign(mean=summary["mean"].where(summary["mean"] > 0))
        positive = summary["mean"].to_numpy(float)
        floor = np.nanmin(positive[positive > 0]) / 10 if (positive > 0).any() else 1.0
        summary = summary.assign(low=summary["low"].clip(lower=floor),
                                 high=summary["high"].clip(lower=floor))
    variants = summary[style].astype(str) if style else pd.Series("", index=summary.index)
    styles = list(dict.fromkeys(variants))
    keyed = bool(style)  # one legend entry per mechanism and per style, not per curve
    order = list(dict.fromkeys(summary[group]))
    for (key, variant), rows in summary.groupby([summary[group], variants], sort=False):
        rows = rows.sort_values(x)
        label = name(key) + (f" · {variant}" if variant else "")
        banded = rows[rows["mean"].notna()]
        band_x = list(banded[x]) + list(banded[x])[::-1]
        band_y = list(banded["high"]) + list(banded["low"])[::-1]
        fig.add_scatter(x=band_x, y=band_y, fill="toself", mode="lines", line=dict(width=0),
                        fillcolor=colour(key), opacity=0.18, hoverinfo="skip", showlegend=False,
                        legendgroup=key if keyed else label,
                        name=escape(f"{label} (95 % band)"))
        fig.add_scatter(x=rows[x], y=rows["mean"], mode="lines+markers", name=escape(label),
                        legendgroup=key if keyed else label, showlegend=not keyed,
                        line=dict(color=colour(key),
                                  # the style's dash, else each series its own
                                  dash=DASHES[(styles.index(variant) if keyed
                                               else order.index(key)) % len(DASHES)]),
                        marker=dict(symbol=symbol(key), size=7),
                        customdata=np.column_stack([rows["low"], rows["high"], rows["trials"]]),
                        hovertemplate=f"<b>{escape(label)}</b><br>{escape(x_title)}: %{{x:,.4g}}"
                                      "<br>mean %{y:,.4g} (95 % CI %{customdata[0]:,.4g} – "
                                      "%{customdata[1]:,.4g}; %{customdata[2]} trials)"
                                      "<extra></extra>")
    if keyed:
        for key in order:
            fig.add_trace(_key_entry(name(key), key, mode="lines+markers",
                                     line=dict(color=colour(key)),
                                     marker=dict(symbol=symbol(key), size=7)))
        for variant in styles:
            fig.add_trace(_key_entry(variant, f"style {variant}", mode="lines",
                                     line=dict(color=TRUE_COLOUR, dash=DASHES[
                                         styles.index(variant) % len(DASHES)])))
    if theory is not None and len(theory):
        by = ["mechanism"] + ([style] if style and style in theory.columns else [])
        for keys, rows in theory.groupby(by, sort=False):
            key, *variant = keys
            label = " · ".join([name(key), *map(str, variant), theory_label])
            fig.add_scatter(x=rows["x"], y=rows["value"], mode="lines", name=escape(label),
                            legendgroup="theory", showlegend=False,
                            line=dict(color=colour(key), dash="dot", width=2),
                            hovertemplate=f"<b>{escape(label)}</b><br>"
                                          "%{x:,.4g}: %{y:,.4g}<extra></extra>")
        fig.add_trace(_key_entry(f"{theory_label[:1].upper()}{theory_label[1:]} (dotted, in "
                                 "the colour of its mechanism)", "theory", mode="lines",
                                 line=dict(color=TRUE_COLOUR, dash="dot", width=2)))
    return layout(fig, title, x_title, y_title, log_x=log_x, log_y=log_y)


def not_on_log_axis(summary: pd.DataFrame, x: str, x_title: str) -> str | None:
    """The note under a log-scale curve chart naming the points of mean 0 (or below) it does not
    draw, e.g. an RMSE of exactly 0; None when every point is drawn."""
    zero = summary[summary["mean"] <= 0]
    if zero.empty:
        return None
    found = [f"{name(key)} at {x_title.split(' (')[0]} = "
             + ", ".join(f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"
                         for value in sorted(rows[x]))
             for key, rows in zero.groupby("mechanism", sort=False)]
    return ("Not drawn on the log scale (a mean of 0 has no place on it): " + "; ".join(found)
            + ". Turn the log scale off to see them.")


def runtime_bars(frame: pd.DataFrame, title: str) -> go.Figure:
    """Mean release time per mechanism (log scale), grouped by ``scenario`` when there are several.

    ``frame`` columns: ``mechanism``, ``scenario``, ``seconds`` (mean over releases), ``releases``.
    """
    fig = go.Figure()
    for key, rows in frame.groupby("mechanism", sort=False):
        fig.add_bar(x=[escape(s) for s in rows["scenario"]], y=rows["seconds"], name=name(key),
                    marker_color=colour(key), marker_pattern_shape=pattern(key),
                    customdata=rows[["releases"]].to_numpy(),
                    hovertemplate=f"<b>{escape(name(key))}</b><br>%{{x}}: %{{y:.3g}} s "
                                  "(mean of %{customdata[0]} releases)<extra></extra>")
    fig.update_layout(barmode="group")
    return layout(fig, title, "Data", "Release time (seconds, log scale)", log_y=True)


# ---------------------------------------------------------------------------------- downloads
#: Said under every download computed from the confidential table
#: (:mod:`dpcore.confidential`).
PRIVATE_CAPTION = ("🔒 **Not for publication**: computed from the confidential table (each "
                   "file's first line says so). Publish only release.csv and manifest.json.")
#: Ends the label of a download computed from the confidential table.
PRIVATE_SUFFIX = " — not for publication"
#: How a private file of each type says so at its top (:mod:`dpcore.confidential`).
_MARK = {"text/csv": confidential.csv_marked, "text/html": confidential.html_text,
         "application/zip": confidential.zip_marked}


def download_button(place, label: str, content, file_name: str, mime: str, key: str, *,
                    private: bool = False, **extra) -> None:
    """One download button in ``place`` (``st`` or a container); ``content()`` makes the file
    when it is clicked. ``private``: the file holds true counts or error against them, so the
    label ends "— not for publication", the icon is a lock and the file's first line says so
    (the caller shows :data:`PRIVATE_CAPTION` once under its buttons)."""
    data = (lambda: _MARK[mime](content())) if private else content
    place.download_button(label + (PRIVATE_SUFFIX if private else ""), data,
                          file_name=file_name, mime=mime, key=key, on_click="ignore",
                          icon=":material/lock:" if private else ":material/download:", **extra)


def downloads(fig: go.Figure, frame: pd.DataFrame, stem: str, key: str,
              private: bool = False, figure_private: bool | None = None) -> None:
    """Two buttons under a chart: its data as CSV (formula-safe) and the figure as HTML;
    ``private``: computed from the confidential table, so labelled so on the page and in each
    file's first line. ``figure_private`` (default: ``private``) marks the HTML alone, for a
    chart whose data are public but whose drawing adds marks computed from the confidential
    table (Plan's ε ruler: deployed budgets, beside the ε the plan needs)."""
    figure_private = private if figure_private is None else figure_private
    row = st.container(horizontal=True)
    download_button(row, "Data (CSV)", lambda: safe_csv(frame), f"{stem}.csv", "text/csv",
                    f"{key}_csv", private=private)
    download_button(row, "Figure (HTML)",
                    lambda: fig.to_html(include_plotlyjs=True, full_html=True), f"{stem}.html",
                    "text/html", f"{key}_html", private=figure_private)
    if private or figure_private:
        st.caption(PRIVATE_CAPTION)


def table_download(frame: pd.DataFrame, stem: str, key: str, label: str = "Table (CSV)",
                   private: bool = False) -> None:
    """A table's CSV download (formula-safe); ``private`` as for :func:`downloads`."""
    download_button(st, label, lambda: safe_csv(frame), f"{stem}.csv", "text/csv", f"{key}_csv",
                    private=private)
    if private:
        st.caption(PRIVATE_CAPTION)


#: The label of every chart's text alternative: its data, one click away.
DATA_BEHIND = "Data behind this chart"


#: Plotly's options for every chart: no logo, and no tips (its "Double-click on legend to isolate
#: one trace" toast is white on light grey, 2.6:1, below the 4.5:1 contrast text needs).
CONFIG = {"displaylogo": False, "showTips": False}


def show(fig: go.Figure, frame: pd.DataFrame, stem: str, key: str, private: bool = False,
         figure_private: bool | None = None) -> None:
    """Draw a chart with its downloads (a PNG comes from the chart's camera button) and its text
    alternative: the data behind it as a table behind a toggle, for screen readers and for
    anyone who wants the numbers (zone names stay plain text in the table). The table is only
    sent to the browser when asked for."""
    st.plotly_chart(fig, key=key, config=CONFIG | {"toImageButtonOptions": {"filename": stem,
                                                                          "scale": 2}})
    if st.toggle(DATA_BEHIND, key=f"{key}_data"):
        st.dataframe(frame, hide_index=True, width="stretch",
                     height=min(35 * (len(frame) + 1) + 3, 320))
    downloads(fig, frame, stem, key, private, figure_private)
