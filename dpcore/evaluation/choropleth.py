"""Per-zone figures of a release for colouring zone areas, and their colour classes.

For every zone: its residents (origin total: commuters living there), its jobs (destination
total: commuters working or studying there) and its self-containment (the share of its residents
who also work there, a standard travel-to-work-area criterion; Coombes & Bond, *Travel-to-Work
Areas: the 2007 review*, ONS 2008), true and released, with the release's error (released − true)
and relative error (error / true, so that small zones are not hidden behind large ones).

Released totals are sums of released cells: post-processing, no privacy cost. Raw noise can make
a released total negative or a released self-containment fall outside 0–100 %; they are shown as
they are, since that is what the release says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix
from dpcore.evaluation import flows

MEASURES = {
    "residents": "Residents (commuters living in the zone)",
    "jobs": "Jobs (commuters working or studying in the zone)",
    "self_containment": "Self-containment (share of residents who work in their own zone)",
}
VALUES = {
    "true": "True",
    "released": "Released",
    "error": "Error (released − true)",
    "relative": "Relative error ((released − true) / true)",
}
#: Values drawn with a diverging scale centred on zero.
DIFFERENCES = ("error", "relative")
#: Sequential classes (shares of the top break) and diverging ones (shares of the limit).
SEQUENTIAL_SHARES = np.array([0.0, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0])
DIVERGING_SHARES = np.array([-1.0, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, 1.0])


def zone_figures(od: ODMatrix, true_counts, released=None) -> pd.DataFrame:
    """One row per zone (:func:`dpcore.evaluation.flows.zones` order, empty zones left out) with
    ``residents_true``, ``residents_released``, ``jobs_…``, ``within_…`` (same-zone commuters)
    and ``self_containment_…`` (within / residents, NaN without residents); released columns are
    NaN when there is no release."""
    frame = flows.zones(od, true_counts, keep_empty=False)
    out = frame[["id", "label", "lat", "lon", "placed"]].copy()
    out["residents_true"], out["jobs_true"] = frame["residents"], frame["jobs"]
    versions = {"true": true_counts}
    if released is not None:
        figures = flows.zones(od, released).set_index("id").loc[frame["id"]]
        out["residents_released"] = figures["residents"].to_numpy()
        out["jobs_released"] = figures["jobs"].to_numpy()
        versions["released"] = released
    else:
        out["residents_released"] = out["jobs_released"] = np.nan
    out["within_true"] = out["within_released"] = np.nan
    # The diagonal: zones that are both an origin and a destination.
    origin_pos = pd.Index(od.origins.ids).get_indexer(out["id"])
    destination_pos = pd.Index(od.destinations.ids).get_indexer(out["id"])
    both = (origin_pos >= 0) & (destination_pos >= 0)
    flat = origin_pos[both] * od.n_destinations + destination_pos[both]
    for version, values in versions.items():
        within = np.full(len(out), np.nan)
        within[both] = np.asarray(values, dtype=float).reshape(-1)[flat]
        within[~both & (out[f"residents_{version}"] != 0).to_numpy()] = 0.0
        out[f"within_{version}"] = within
    for version in ("true", "released"):
        residents = out[f"residents_{version}"].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"self_containment_{version}"] = np.where(
                residents > 0, out[f"within_{version}"].to_numpy(dtype=float) / residents, np.nan)
    return out


def values(figures: pd.DataFrame, measure: str, value: str) -> np.ndarray:
    """The numbers to colour: one measure's true, released, error or relative-error values
    (self-containment as a share, 0–1; relative error as a share of the true value, NaN where
    the true value is 0)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
    if value not in VALUES:
        raise ValueError(f"value must be one of {', '.join(VALUES)}; got {value!r}")
    true = figures[f"{measure}_true"].to_numpy(dtype=float)
    released = figures[f"{measure}_released"].to_numpy(dtype=float)
    if value == "true":
        return true
    if value == "released":
        return released
    error = released - true
    if value == "error":
        return error
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(true != 0, error / np.abs(true), np.nan)


def unit(measure: str, value: str) -> str:
    """What the numbers are in: commuters, or a share shown in % (percentage points for the
    error of a share)."""
    if value == "relative":
        return "%"
    if measure == "self_containment":
        return "percentage points" if value == "error" else "%"
    return "commuters"


def _nice(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (> 0)."""
    exponent = np.floor(np.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * 10 ** exponent >= value * (1 - 1e-12):
            return float(step * 10 ** exponent)
    return float(10 ** (exponent + 1))


def class_breaks(values, diverging: bool) -> np.ndarray:
    """Class limits for colouring ``values`` (NaN ignored).

    Sequential: 0 and then halving steps below a round top at the 98th percentile, since zone
    totals are skewed (a few cities hold most commuters). Diverging: symmetric around zero up to a
    round limit at the 95th percentile of |value|, with a middle class (±10 % of the limit) for
    "about right". Values beyond the outer limits fall in the outer classes.
    """
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if diverging:
        top = np.percentile(np.abs(finite), 95) if finite.size else 0.0
        return _nice(top if top > 0 else 1.0) * DIVERGING_SHARES
    top = np.percentile(finite, 98) if finite.size else 0.0
    return _nice(top if top > 0 else 1.0) * SEQUENTIAL_SHARES


def classify(values, breaks) -> np.ndarray:
    """Class of each value: 0 … len(breaks) − 2 (values beyond the ends in the end classes),
    −1 for NaN."""
    values = np.asarray(values, dtype=float)
    inner = np.asarray(breaks, dtype=float)[1:-1]
    classes = np.searchsorted(inner, values, side="right")
    return np.where(np.isfinite(values), classes, -1)
