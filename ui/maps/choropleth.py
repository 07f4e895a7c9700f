"""Zone choropleth for the flow map: approximate zone areas coloured by a per-zone figure.

The figures come from :mod:`dpcore.evaluation.choropleth`, the areas (Voronoi cells clipped to the land)
from :mod:`dpcore.data.geography`. Colours are classed: a sequential scale for true and released
values, a diverging one centred on zero (blue under, red over, as on the flow lines) for the
release's error. Zone names are untrusted and pass through :func:`ui.maps.layers.html_text`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.data import geography
from dpcore.data.geography import ZoneAreas
from dpcore.data.od import ODMatrix
from dpcore.evaluation import choropleth
from ui.components import data, huge, runs, state
from ui.maps.layers import html_text, zone_tooltips
from ui.components.viewstate import kept

SEQUENTIAL = ["#ffffcc", "#c7e9b4", "#7fcdbb", "#41b6c4", "#2c7fb8", "#253494"]
DIVERGING = ["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fddbc7", "#ef8a62", "#b2182b"]
MISSING = "#cfcfcf"
NONE = ""
OPTIONS = {NONE: "No colour (points only)", **{k: v.split(" (")[0] for k, v in
                                                  choropleth.MEASURES.items()}}
APPROXIMATE = ("Zone areas are approximate: each zone's Voronoi cell (the land nearer to its point "
               "than to any other zone's), clipped to the coast — not official boundaries.")


@dataclass(frozen=True)
class AreaLayer:
    """Coloured zone areas ready for :func:`ui.maps.layers.flow_map`: a GeoJSON collection, its
    legend, and which hover text (first line) is which zone, so that a click picks the zone."""

    collection: dict
    legend: str
    tooltip_to_zone: dict


def _format(value: float, unit: str) -> str:
    if not np.isfinite(value):
        return "–"
    if unit == "commuters":
        return f"{value:,.0f}"
    return f"{value * 100:,.1f}"  # shares and percentage points


def _unit_suffix(unit: str) -> str:
    return {"commuters": " commuters", "%": " %", "percentage points": " pp"}[unit]


def legend_html(title: str, breaks, colours: list[str], unit: str) -> str:
    """Legend rows, one per class, in the figure's unit; the outer classes are open-ended."""
    rows = [f"<details open><summary>{html_text(title)}</summary>",
            f"<b>In {html_text(unit)} (approximate areas)</b>"]
    n = len(colours)
    for i, colour in enumerate(colours):
        low, high = _format(breaks[i], unit), _format(breaks[i + 1], unit)
        if i == 0 and breaks[0] < 0:
            text = f"below {high}"
        elif i == n - 1:
            text = f"{low} or more"
        else:
            text = f"{low} to {high}"
        rows.append(f'<div class="row"><span class="swatch" style="height:11px;background:'
                    f'{colour};border:1px solid #888"></span>{html_text(text)}</div>')
    rows.append(f'<div class="row"><span class="swatch" style="height:11px;background:{MISSING};'
                f'border:1px solid #888"></span>no value</div></details>')
    return "".join(rows)


def layer(figures: pd.DataFrame, areas: ZoneAreas, measure: str, value: str,
          names: pd.Series) -> AreaLayer:
    """Colour each zone's area by ``measure`` × ``value`` of :func:`dpcore.evaluation.choropleth.zone_figures`.

    ``names`` is the hover text of each zone (the same unique text as its point, so a click on
    either selects it).
    """
    numbers = choropleth.values(figures, measure, value)
    diverging = value in choropleth.DIFFERENCES
    breaks = choropleth.class_breaks(numbers, diverging)
    palette = DIVERGING if diverging else SEQUENTIAL
    classes = choropleth.classify(numbers, breaks)
    unit = choropleth.unit(measure, value)
    label = f"{choropleth.MEASURES[measure].split(' (')[0]}, {choropleth.VALUES[value].lower()}"
    features, mapping = [], {}
    for geometry, zone, name, number, cls in zip(areas.features(figures["id"]), figures["id"],
                                                 names, numbers, classes):
        if geometry is None:
            continue
        shown = html_text(name)
        features.append({"type": "Feature", "geometry": geometry, "properties": {
            "name": shown,
            "value": html_text(f"{label}: {_format(number, unit)}{_unit_suffix(unit)}"),
            "style": {"fillColor": palette[cls] if cls >= 0 else MISSING}}})
        mapping[str(name).strip()] = zone
    title = f"Zone areas: {label}"
    return AreaLayer({"type": "FeatureCollection", "features": features},
                     legend_html(title, breaks, palette, unit), mapping)



# ------------------------------------------------------------------------------- on the page
@st.cache_resource(max_entries=4, show_spinner="Working out approximate zone areas…")
def _bundled_areas(dataset: str) -> ZoneAreas:
    """A bundled dataset's zone areas, computed once per server (read-only, shared)."""
    return geography.zone_areas(data.bundled(dataset))


def zone_areas(current: data.Current) -> ZoneAreas:
    """The current dataset's zone areas: shared for bundled data, this session's alone for an
    upload (never in a global cache)."""
    if current.key == state.UPLOADED:
        return runs.session_memo("zone_areas", (), lambda: geography.zone_areas(current.matrix))
    return _bundled_areas(current.key)


def controls(has_release: bool, od: ODMatrix) -> tuple[str, str]:
    """The two choices, in one row and mirrored in the URL: which figure colours the zone areas
    (or none), and whether its true or released value or the release's error (none on a huge
    domain: a zone's released total sums thousands of empty cells never drawn one by one)."""
    if huge.unavailable(od, "Colouring zone areas by their totals"):
        return NONE, "true"
    left, right = st.columns([2, 3])
    measure = kept(left.selectbox, "Colour zone areas by", "flowmap_areas", NONE,
                   url="zone_colour", options=list(OPTIONS), format_func=OPTIONS.__getitem__,
                   help=APPROXIMATE)
    if measure == NONE:  # no value to choose (a disabled radio's faint label fails contrast)
        return measure, "true"
    choices = list(choropleth.VALUES) if has_release else ["true"]
    value = kept(right.radio, "Value", "flowmap_areas_value", "true", url="zone_value",
                 options=choices, format_func=choropleth.VALUES.__getitem__, horizontal=True)
    return measure, value


def for_map(measure: str, value: str, od: ODMatrix, true_counts, released) -> AreaLayer | None:
    """The coloured areas of the current view's zones (None when no measure is chosen)."""
    if measure == NONE:
        return None
    figures = choropleth.zone_figures(od, true_counts, released)
    return layer(figures, zone_areas(data.current()), measure, value, zone_tooltips(figures))
