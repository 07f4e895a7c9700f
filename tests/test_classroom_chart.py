"""The Classroom teacher chart's geometry, read from the figure object: a clipped estimate's mark
lies beyond every bar and interval, never on one (a "clipped" text at the bar's end lay on the
interval's whisker); the commutes stay busiest first. Screenshots at 1,280 and 390 px:
tests/browser/test_classroom_browser.py."""

import numpy as np
import pandas as pd
import pytest

from ui.classroom import view

BAND = (0.0, 1.1)


def table(n: int) -> pd.DataFrame:
    """Estimates busiest first, as :func:`ui.classroom.view.estimate_table` gives them: one
    clipped at n (raw above it), one not, and three clipped at 0 whose intervals start at 0."""
    estimate = np.array([n, 0.6 * n, 0, 0, 0], dtype=float)
    low = np.array([0.5 * n, 0.2 * n, 0, 0, 0]).astype(int)
    high = np.array([n, n, 0.4 * n, 0.3 * n, 1]).astype(int)
    note = ["clipped (raw 7.3: impossible)", "", "clipped (raw -1.2: impossible)",
            "clipped (raw -0.04: impossible)", "clipped (raw -3: impossible)"]
    return pd.DataFrame({"commute": [f"Zone {i} → Zone {i + 1}" for i in range(5)],
                         "estimate": estimate, "95% low": low, "95% high": high, "note": note})


def rows(fig) -> dict[str, tuple[float, float]]:
    """Each commute's drawn extent: its bar (from 0) and its interval's whiskers together."""
    extent = {}
    for trace in fig.data:
        if trace.type != "bar":
            continue
        plus, minus = trace.error_x.array, trace.error_x.arrayminus
        for x, y, up, down in zip(trace.x, trace.y, plus, minus):
            extent[y] = (min(0.0, x - down), max(0.0, x + up))
    return extent


def marks(fig) -> list[tuple[float, str, str]]:
    """Everything drawn as a label or a mark on a commute's row: text on bars, annotations, the
    clipped estimates' marks (x, row, what)."""
    found = []
    for trace in fig.data:
        if trace.type == "bar" and trace.text is not None:
            found += [(x, y, text) for x, y, text in zip(trace.x, trace.y, trace.text) if text]
        if trace.type == "scatter" and trace.legendgroup == view.CLIPPED:
            found += [(x, y, symbol) for x, y, symbol in zip(trace.x, trace.y,
                                                               trace.marker.symbol)]
    found += [(a.x, a.y, a.text) for a in fig.layout.annotations]
    return found


@pytest.mark.parametrize("n", [1, 4, 30, 1000])
def test_clipped_marks_lie_beyond_every_bar_and_interval(n):
    shown = table(n)
    fig = view.estimate_chart(shown, BAND, n)
    extent = rows(fig)
    span = fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]
    found = marks(fig)
    clipped = shown.loc[shown["note"] != "", "commute"].tolist()
    assert sorted(y for _, y, _ in found) == sorted(clipped)    # each clipped one marked once
    for x, y, what in found:
        low, high = extent[y]
        # outside its row's bar and whiskers by at least 4 % of the axis (5 px on a phone's
        # ~120 px plot, a marker's half width), and inside the axis
        assert x <= low - 0.04 * span or x >= high + 0.04 * span, (x, y, what, extent[y])
        assert fig.layout.xaxis.range[0] < x < fig.layout.xaxis.range[1]
        below = shown.set_index("commute").loc[y, "estimate"] <= 0
        assert what == ("triangle-left" if below else "triangle-right")
    # the busiest commute at the top whatever trace it is in (plotly draws categories upwards)
    assert list(fig.layout.yaxis.categoryarray) == shown["commute"].tolist()[::-1]
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert view.CLIPPED in legend and "estimate with exact 95 % interval" in legend


def test_without_a_clipped_estimate_there_is_no_clipped_entry():
    shown = table(4).assign(note="", estimate=[4, 2.4, 0.5, 0.2, 0.1])
    fig = view.estimate_chart(shown, BAND, 4)
    assert [t.name for t in fig.data] == ["estimate with exact 95 % interval"]
    assert marks(fig) == []


def test_the_estimates_columns_fit_a_390_px_phone_with_or_without_revealed_answers():
    """The teacher's tables at 390 px have a 356 px frame (browser: the teacher's screen set to
    390 px in test_classroom_browser.py measures the top commutes' table); the revealed answers'
    column, when present, takes its room from the commute and the note, so both fit."""
    columns = view.ESTIMATE_COLUMNS
    plain = sum(c["width"] for name, c in columns.items() if name != "revealed (not private)")
    revealed = plain + columns["revealed (not private)"]["width"] + sum(
        width - columns[name]["width"] for name, width in view.REVEALED_WIDTHS.items())
    assert plain <= 356 and revealed <= 356, (plain, revealed)
    assert all(c["help"] for name, c in columns.items() if name != "commute")
