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
