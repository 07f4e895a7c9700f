"""Read the figures an AppTest page drew: ``at.get("plotly_chart")[i].proto.spec`` as Python.

Plotly ≥ 6 sends numeric arrays as typed arrays (``{"dtype": "f8", "bdata": <base64>}``);
:func:`values` turns those (and plain lists) into NumPy arrays.
"""

import base64
import json

import numpy as np


def figures(at) -> list[dict]:
    """Every plotly figure on the page, in order, as dicts."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def figure(at, title_part: str) -> dict:
    """The one figure whose title contains ``title_part``."""
    found = [f for f in figures(at) if title_part in f["layout"]["title"]["text"]]
    assert len(found) == 1, [f["layout"]["title"]["text"] for f in figures(at)]
    return found[0]


def values(data) -> np.ndarray:
    """A trace's x, y or customdata as an array."""
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        shape = data.get("shape")
        if isinstance(shape, str):
            shape = [int(part) for part in shape.split(",")]
        return array.reshape(shape) if shape else array
    return np.asarray(data)


def traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name]


def legend_name(trace: dict) -> str:
    """A trace's legend name as read: its line breaks (``charts.wrap``) as spaces."""
    return trace.get("name", "").replace("<br>", " ")


def released_bars(fig: dict) -> dict[str, dict]:
    """Explore's bars of each release, by legend name (without its "(95 % interval: …)";
    the name's line breaks read as spaces)."""
    return {legend_name(t).split(" (95 % interval")[0]: t for t in fig["data"]
            if "(95 % interval" in legend_name(t)}


def assert_bars_readable(fig: dict) -> None:
    """Explore's first chart shows the truth and every release: the value axis holds the true
    bars with the largest filling at least 40 % of it; each release is drawn inside the axis,
    or at its edge with its value written on it; each drawn release with an interval carries it
    as an error bar holding the released count, the rest state theirs in the hover."""
    low, high = fig["layout"]["yaxis"]["range"]
    truth = values(traces(fig, "True count")[0]["y"])
    assert low <= 0 <= truth.min() and truth.max() <= high
    assert truth.max() >= 0.4 * (high - low), (truth.max(), low, high)
    bars = released_bars(fig)
    assert bars
    for name, trace in bars.items():
        drawn, data = values(trace["y"]), values(trace["customdata"])
        released, lower, upper = data[:, 1], data[:, 2], data[:, 3]
        inside = (released >= low) & (released <= high)
        assert np.allclose(drawn[inside], released[inside]), name
        assert (drawn[~inside] == np.where(released[~inside] > high, high, low)).all(), name
        for text, value in zip(np.asarray(trace["text"])[~inside], released[~inside]):
            assert text[0] in "▲▼" and len(text) > 2, (name, text, value)
        plus, minus = values(trace["error_y"]["array"]), values(trace["error_y"]["arrayminus"])
        with_interval = inside & np.isfinite(lower)
        assert with_interval.any(), name
        assert np.allclose(released[with_interval] + plus[with_interval], upper[with_interval])
        assert np.allclose(released[with_interval] - minus[with_interval],
                           lower[with_interval])
        assert (lower[with_interval] <= released[with_interval] + 1e-9).all()
        assert (released[with_interval] <= upper[with_interval] + 1e-9).all()
        hovers = np.asarray(trace["hovertext"])
        assert all("95 % interval" in h for h in hovers[np.isfinite(lower)]), name
