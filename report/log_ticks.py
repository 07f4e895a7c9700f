"""Unambiguous log-axis ticks for plotly (no Streamlit, no dpcore: the app may import it too).

plotly's own log ticks label minor ticks "2", "5" with no decade, which reads as 2 and 5 commuters
on an axis that means 20 or 5,000. Here an axis spanning at least a decade labels only the powers
of ten (1, 10, 100 …, written out) and draws unlabelled minor ticks at 2–9 × each decade; a
narrower axis labels 1, 2 and 5 × 10^k in full (e.g. 20, 50, 100, 200).
"""

from __future__ import annotations

import math

import numpy as np


def tick_label(value: float) -> str:
    """A tick value written out: 1, 10, 1,000, 0.01; 10⁶ and up as 1e6 (no ambiguity)."""
    if value >= 1e6:
        return f"{value:.0e}".replace("e+0", "e").replace("e+", "e")
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.10f}".rstrip("0")


def log_axis(values) -> dict:
    """Keyword arguments for ``fig.update_yaxes``/``update_xaxes`` of a log axis showing
    ``values`` (non-positive and non-finite ones are ignored)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {"type": "log"}
    low, high = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    high = max(high, low + 1)
    if math.log10(v.max()) - math.log10(v.min()) >= 1:
        major = [10.0 ** k for k in range(low, high + 1)]
        minor = [m * 10.0 ** k for k in range(low, high) for m in range(2, 10)]
        return {"type": "log", "tickvals": major, "ticktext": [tick_label(t) for t in major],
                "minor": {"tickvals": minor, "ticks": "outside", "ticklen": 3,
                          "showgrid": True}}
    major = [m * 10.0 ** k for k in range(low - 1, high + 1) for m in (1, 2, 5)]
    major = [t for t in major if v.min() / 2 <= t <= v.max() * 2]
    return {"type": "log", "tickvals": major, "ticktext": [tick_label(t) for t in major]}
