"""The value axis of a true-versus-released bar chart: it follows the truth, whatever the noise.

On the ED data GRR's released counts reach ≈ 10⁷ while no true count exceeds 6,000: an axis
fitted to every value shows only GRR's noise, the truth and the other mechanisms flat at zero.

**Linear rule** (:func:`linear`): the axis spans the true counts and every released value or
interval end within ``REACH`` times the largest true count above 0 (and ``REACH`` times it below
0), with ``HEADROOM``. A released value beyond is drawn to the edge (:func:`place`) and labelled
with its value; its interval, off the chart, is in its label and hover.

**Log rule** (:func:`logarithmic`): the axis spans every positive value drawn (true counts,
released counts, interval ends). A released count of 0 or below has no place on it: it is
dropped and counted in a note (:func:`dropped`), never drawn as a line off the chart; an interval
reaching 0 or below is drawn down to the axis's bottom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Released values up to this many times the largest true count are drawn in full.
REACH = 2.0
#: Space left above the highest value drawn (and below the lowest negative one).
HEADROOM = 1.08
#: Room around the extreme values on a log axis (a factor each way).
LOG_ROOM = 1.5


@dataclass(frozen=True)
class Axis:
    """The axis range in data units (``low`` > 0 on a log axis)."""

    low: float
    high: float
    log: bool

    def plotly_range(self) -> list[float]:
        """The range as plotly wants it (log₁₀ of the ends on a log axis)."""
        return ([float(np.log10(self.low)), float(np.log10(self.high))] if self.log
                else [self.low, self.high])


def _finite(values) -> np.ndarray:
    data = [np.asarray(v, dtype=float).ravel() for v in values]
    data = np.concatenate(data) if data else np.empty(0)
    return data[np.isfinite(data)]


def linear(true_counts, *others) -> Axis:
    """The linear axis that follows ``true_counts``; ``others``: released values and interval
    ends, included when within :data:`REACH` of the largest true count."""
    truth = _finite([true_counts])
    top = float(truth.max()) if truth.size and truth.max() > 0 else 1.0
    rest = _finite(others)
    inside = rest[np.abs(rest) <= REACH * top]
    high = max(top, float(inside.max()) if inside.size else top) * HEADROOM
    lowest = min(0.0, float(inside.min()) if inside.size else 0.0,
                 float(truth.min()) if truth.size else 0.0)
    return Axis(lowest * HEADROOM, high, False)


def logarithmic(*values) -> Axis:
    """The log axis holding every positive value of ``values``."""
    positive = _finite(values)
    positive = positive[positive > 0]
    if not positive.size:
        return Axis(0.1, 10.0, True)
    return Axis(float(positive.min()) / LOG_ROOM, float(positive.max()) * LOG_ROOM, True)


def place(values, axis: Axis) -> tuple[np.ndarray, np.ndarray]:
    """Where each value is drawn, and which side of the axis it passes (+1 above, −1 below,
    0 inside). On a log axis a value ≤ 0 is not drawn (NaN, side 0: see :func:`dropped`)."""
    values = np.asarray(values, dtype=float)
    side = np.where(values > axis.high, 1, np.where(values < axis.low, -1, 0))
    if axis.log:
        side = np.where(values <= 0, 0, side)
        drawn = np.where(values <= 0, np.nan, np.clip(values, axis.low, axis.high))
    else:
        drawn = np.clip(values, axis.low, axis.high)
    side = np.where(np.isfinite(values), side, 0)
    return drawn, side


def dropped(values, axis: Axis) -> int:
    """How many of ``values`` a log axis cannot draw (0 or below); none on a linear axis."""
    values = np.asarray(values, dtype=float)
    return int(np.sum(values <= 0)) if axis.log else 0


def for_bars(true_counts, released, low=None, high=None, log: bool = False) -> Axis:
    """The axis of true-versus-released bars: :func:`linear` from the true and released counts,
    or :func:`logarithmic` from those and the interval ends."""
    if log:
        return logarithmic(true_counts, released, *(v for v in (low, high) if v is not None))
    return linear(true_counts, released)
