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
    """A tick value written out: 1, 10, 1,000, 10,000,000, 0.01; from 10¹⁰ on as 1e10."""
    if value >= 1e10:
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
    smallest, largest = float(v.min()), float(v.max())
    low, high = math.floor(math.log10(smallest)), math.ceil(math.log10(largest))
    high = max(high, low + 1)
    decades = [10.0 ** k for k in range(low, high + 1)]
    if sum(smallest <= t <= largest for t in decades) >= 2:
        minor = [m * 10.0 ** k for k in range(low, high) for m in range(2, 10)]
        return {"type": "log", "tickvals": decades, "ticktext": [tick_label(t) for t in decades],
                "minor": {"tickvals": minor, "ticks": "outside", "ticklen": 3,
                          "showgrid": True}}
    # less than two decades in view: 1, 2 and 5 × 10^k labelled in full, the rest unlabelled
    steps = [(m, k) for k in range(low - 1, high + 1) for m in range(1, 10)]
    near = [(m, k) for m, k in steps if smallest / 2 <= m * 10.0 ** k <= largest * 2]
    major = [m * 10.0 ** k for m, k in near if m in (1, 2, 5)]
    minor = [m * 10.0 ** k for m, k in near if m not in (1, 2, 5)]
    return {"type": "log", "tickvals": major, "ticktext": [tick_label(t) for t in major],
            "minor": {"tickvals": minor, "ticks": "outside", "ticklen": 3, "showgrid": False}}
