"""Estimating a mean under local DP: each commuter's distance in km, from zone positions.

Each person holds ``x ∈ [0, B]`` (B public: the largest distance between any two zones, known from
the public zone positions, not from the commuters).

* Local Laplace (003 l.1700–1705): each person sends ``x + Lap(B/ε)``; the mean's variance is
  ``2B²/(ε² n)``.
* Central Laplace (same place): the office adds ``Lap(B/(εn))`` to the true mean: variance
  ``2(B/(εn))²``.
* Duchi, Jordan, Wainwright's one-bit mechanism (JASA 2018, §4.2.3; also Wang et al. ICDE 2019
  eq. (3)): with ``t = 2x/B − 1 ∈ [−1, 1]`` and ``C = (e^ε + 1)/(e^ε − 1)``, send ``+C`` with
  probability ``1/2 + t/(2C)`` and ``−C`` otherwise. ``E[Y] = t``, ``Var[Y] = C² − t²``; the
  server's ``x̂ = B(Ȳ + 1)/2`` has variance ``(B/2)² (C² − mean t²)/n``, at most ``B²C²/(4n)``
  (≈ ``B²/(ε²n)`` for small ε, half the local Laplace's). Each person sends one bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.theory.privacy_theory import checked_array

EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1, lon1, lat2, lon2):
    """Great-circle distance in km between points given in degrees."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = (np.sin((p2 - p1) / 2) ** 2
         + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


@dataclass(frozen=True)
class Distances:
    """The commute distance (km between zone positions) of every cell whose two zones have a
    position, the public bound B, and who was left out for want of a position."""

    km: np.ndarray          # per kept nonzero cell
    counts: np.ndarray
    bound: float            # B: the largest distance between any two positioned zones
    left_out: int           # commuters to or from a zone without a position
    unplaced: tuple         # labels of those zones (e.g. "Work from home", "Overseas")

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def mean(self) -> float:
        return float(np.average(self.km, weights=self.counts))


def commute_distances(od: ODMatrix) -> Distances | None:
    """Distances of every commute between two positioned zones; None when there is none."""
    o, d = od.origins, od.destinations
    placed = o.has_coordinates[od.rows] & d.has_coordinates[od.cols]
    if not (placed & (od.counts > 0)).any():
        return None
    rows, cols, counts = od.rows[placed], od.cols[placed], od.counts[placed]
    km = haversine_km(o.lat[rows], o.lon[rows], d.lat[cols], d.lon[cols])
    po, pd_ = o.has_coordinates, d.has_coordinates
    bound = float(haversine_km(o.lat[po][:, None], o.lon[po][:, None], d.lat[pd_][None, :],
                               d.lon[pd_][None, :]).max())
    unplaced = tuple(dict.fromkeys([*o.labels[~po], *d.labels[~pd_]]))
    return Distances(km, counts.astype(np.int64), max(bound, 1e-9),
                     int(od.counts[~placed].sum()), unplaced)


def one_bit_constant(epsilon: float) -> float:
    """C = (e^ε + 1)/(e^ε − 1)."""
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    return 1.0 / math.tanh(eps / 2)


def one_bit_reports(x, bound: float, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Each person's ±C report of a value in [0, B] (vectorised over people)."""
    t = 2 * np.asarray(x, dtype=float) / bound - 1
    c = one_bit_constant(epsilon)
    return np.where(rng.random(t.shape) < 0.5 + t / (2 * c), c, -c)


def one_bit_mean(distances: Distances, epsilon: float, rng: np.random.Generator) -> float:
    """The server's estimate of the mean distance when every commuter sends one bit: per cell,
    the number of +C reports is Binomial(count, 1/2 + t/(2C)), the same as each person drawing."""
    c = one_bit_constant(epsilon)
    t = 2 * distances.km / distances.bound - 1
    plus = rng.binomial(distances.counts, 0.5 + t / (2 * c)).sum()
    mean_y = c * (2 * plus - distances.n) / distances.n
    return float(distances.bound * (mean_y + 1) / 2)


def one_bit_variance(distances: Distances, epsilon) -> np.ndarray:
    """Var of the one-bit mean: (B/2)² (C² − mean t²)/n."""
    eps = np.asarray(epsilon, dtype=float)
    c = 1.0 / np.tanh(eps / 2)
    t = 2 * distances.km / distances.bound - 1
    mean_t2 = np.average(t ** 2, weights=distances.counts)
    return (distances.bound / 2) ** 2 * (c ** 2 - mean_t2) / distances.n


def local_laplace_variance(bound: float, epsilon, n: int):
    """2B²/(ε² n) (003 l.1700–1705)."""
    return 2 * bound ** 2 / (np.asarray(epsilon, dtype=float) ** 2 * n)


def central_laplace_variance(bound: float, epsilon, n: int):
    """2(B/(εn))² (003 l.1700–1705)."""
    return 2 * (bound / (np.asarray(epsilon, dtype=float) * n)) ** 2
