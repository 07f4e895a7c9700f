"""Trip lengths: great-circle (haversine) distances between zone positions.

A commute's length is the distance between its origin's and its destination's point (a centroid or
town), in kilometres. Cells whose origin or destination has no coordinates ("Work/school from home",
"Overseas", …) have no length (NaN). Intrazonal cells have length 0 at this resolution.

Trip-length metrics are evaluated many times on the same matrix (every trial of a sweep), so the
lengths over the whole domain are computed once per :class:`~dpcore.data.od.ODMatrix` and cached (weakly:
the cache entry goes when the matrix does). At the ED level that is 9.8 M cells, 78 MB, about
0.2 s; :func:`cell_lengths` serves a few cells without building it.
"""

from __future__ import annotations

import weakref

import numpy as np

from dpcore.data.od import DENSE_CELL_LIMIT, DomainTooLargeError, ODMatrix

#: Mean Earth radius (IUGG), km.
EARTH_RADIUS_KM = 6371.0088

_DOMAIN_LENGTHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    """Great-circle distance in km between points given in degrees (NumPy broadcasting applies)."""
    phi1, phi2 = np.radians(lat1), np.radians(lat2)
    half_dphi = (phi2 - phi1) / 2
    half_dlambda = np.radians(np.subtract(lon2, lon1)) / 2
    a = np.sin(half_dphi) ** 2 + np.cos(phi1) * np.cos(phi2) * np.sin(half_dlambda) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


def cell_lengths(od: ODMatrix, flat_index) -> np.ndarray:
    """Trip length in km of the given cells (flat indices); NaN where a zone has no coordinates."""
    flat = np.asarray(flat_index, dtype=np.int64)
    cached = _DOMAIN_LENGTHS.get(od)
    if cached is not None:
        return cached[flat]
    o, d = flat // od.n_destinations, flat % od.n_destinations
    return haversine_km(od.origins.lat[o], od.origins.lon[o],
                        od.destinations.lat[d], od.destinations.lon[d])


def domain_lengths(od: ODMatrix) -> np.ndarray:
    """Trip length in km of every cell of the domain in flat-index order (read-only, cached)."""
    cached = _DOMAIN_LENGTHS.get(od)
    if cached is not None:
        return cached
    if od.domain_size > DENSE_CELL_LIMIT:
        raise DomainTooLargeError(f"{od.name}: {od.domain_size:,} cells are too many to measure "
                                  f"every trip length; roll up or take a subset of zones.")
    lengths = haversine_km(od.origins.lat[:, None], od.origins.lon[:, None],
                           od.destinations.lat[None, :], od.destinations.lon[None, :]).reshape(-1)
    lengths.flags.writeable = False
    _DOMAIN_LENGTHS[od] = lengths
    return lengths
