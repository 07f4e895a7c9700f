"""Origin–destination (OD) commuting data model.

An :class:`ODMatrix` holds commuting counts sparsely, one entry per non-zero (origin, destination)
cell, over a *domain* that is every origin × destination pair (``|X| = |O|·|D|``, zeros included, as
in the thesis). Origins and destinations are separate :class:`ZoneSet` objects because they differ:
destinations such as "Work/school from home" or "Overseas" are never places of residence and have no
coordinates.

Cells are addressed by a *flat index* ``origin_index * n_destinations + destination_index``; every
mechanism in :mod:`dpcore.mechanisms` works on the dense vector over that index
(:meth:`ODMatrix.to_dense`) or on one flat index per person (:meth:`ODMatrix.to_items`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: Largest domain (origins × destinations) converted to a dense vector. 50 M cells is 400 MB as
#: float64 — the ED level of Ireland (≈ 9.8 M cells) fits with room to spare on a 24 GB machine,
#: a 10,000 × 10,000 tract matrix does not.
DENSE_CELL_LIMIT = 50_000_000
#: Limits of the sparse representation (memory O(zones + non-zero cells)), for data released by
#: :mod:`dpcore.mechanisms.sparse_release`: at most this many non-zero cells (≈ 1.2 GB as rows, columns and
#: counts) and zones on each side (the national tract level has 85,000).
NONZERO_LIMIT = 50_000_000
ZONE_LIMIT = 1_000_000
#: Memory one piece of work on one user's data (an import, a publish) may hold at once: the app's
#: per-session budget (``ui.components.budget.SESSION_WORK_BYTES`` is this figure) and the command line's.
MEMORY_BUDGET_BYTES = 1280 * 2 ** 20

ARROW = " → "


def text_array(values) -> np.ndarray:
    """Python strings in an object array: memory proportional to the text.

    A fixed-width NumPy string array (``'<U…'``) gives every entry the width of the longest, so
    one long uploaded label would multiply the memory of every zone.
    """
    out = np.empty(len(values), dtype=object)
    out[:] = [str(value) for value in values]
    return out


class DomainTooLargeError(ValueError):
    """The domain is too large for a dense vector; roll up to a coarser level or take a subset."""


@dataclass(frozen=True, eq=False)
class ZoneSet:
    """An ordered set of zones.

    Parameters
    ----------
    ids : array of str (stored as an object array of Python strings, see :func:`text_array`)
        Unique zone identifiers, in a fixed order (the order defines the flat cell index).
    labels : array of str
        Human-readable names (may contain anything a user uploaded: escape before making HTML).
    lat, lon : array of float
        WGS84 coordinates in degrees; NaN where a zone has no position.
    parent : array of str, optional
        The id of each zone's parent at the coarser level (e.g. the county of an ED).
    parent_zones : ZoneSet, optional
        The coarser level itself, so that aggregation keeps labels and coordinates.
    """

    ids: np.ndarray
    labels: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    parent: np.ndarray | None = None
    parent_zones: ZoneSet | None = None
    _position: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        ids = text_array(self.ids)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "labels", text_array(self.labels))
        object.__setattr__(self, "lat", np.asarray(self.lat, dtype=float))
        object.__setattr__(self, "lon", np.asarray(self.lon, dtype=float))
        if self.parent is not None:
            object.__setattr__(self, "parent", text_array(self.parent))
        n = len(ids)
        for name in ("labels", "lat", "lon") + (("parent",) if self.parent is not None else ()):
            if len(getattr(self, name)) != n:
                raise ValueError(f"ZoneSet.{name} has {len(getattr(self, name))} entries, ids has {n}")
        position = {zone_id: i for i, zone_id in enumerate(ids)}
        if len(position) != n:
            dupes = pd.Series(ids)[pd.Series(ids).duplicated()].unique()[:5]
            raise ValueError(f"zone ids must be unique; repeated: {', '.join(dupes)}")
        object.__setattr__(self, "_position", position)

    @classmethod
    def from_ids(cls, ids, labels=None, lat=None, lon=None, parent=None, parent_zones=None) -> ZoneSet:
        """Build a zone set, filling missing labels with the ids and missing coordinates with NaN."""
        ids = text_array(ids)
        n = len(ids)
        return cls(
            ids=ids,
            labels=ids if labels is None else labels,
            lat=np.full(n, np.nan) if lat is None else lat,
            lon=np.full(n, np.nan) if lon is None else lon,
            parent=parent,
            parent_zones=parent_zones,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def index_of(self, zone_ids) -> np.ndarray:
        """Positions of the given ids; raises KeyError naming the first unknown id."""
        out = np.empty(len(zone_ids), dtype=np.int64)
        for i, zone_id in enumerate(zone_ids):
            try:
                out[i] = self._position[str(zone_id)]
            except KeyError:
                raise KeyError(f"unknown zone id {zone_id!r}") from None
        return out

    @property
    def has_coordinates(self) -> np.ndarray:
        """Boolean mask of zones with a position."""
        return np.isfinite(self.lat) & np.isfinite(self.lon)

    def take(self, positions) -> ZoneSet:
        """The zones at ``positions``, in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        return ZoneSet(
            ids=self.ids[positions],
            labels=self.labels[positions],
            lat=self.lat[positions],
            lon=self.lon[positions],
            parent=None if self.parent is None else self.parent[positions],
            parent_zones=self.parent_zones,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per zone: id, label, lat, lon and parent (if any)."""
        frame = pd.DataFrame({"id": self.ids, "label": self.labels, "lat": self.lat, "lon": self.lon})
        if self.parent is not None:
            frame["parent"] = self.parent
        return frame


@dataclass(frozen=True, eq=False)
class ODMatrix:
    """Sparse commuting counts over the full origin × destination domain.

    ``rows``, ``cols`` and ``counts`` are parallel arrays holding the non-zero cells only, sorted by
    flat index, without duplicates. Build with :meth:`from_pairs`, which validates and normalises.
    """

    name: str
    origins: ZoneSet
    destinations: ZoneSet
    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray
    description: str = ""

    # ----------------------------------------------------------------------------------------- build
    @classmethod
    def from_pairs(cls, name, origins: ZoneSet, destinations: ZoneSet, rows, cols, counts,
                   description: str = "") -> ODMatrix:
        """Build from parallel (origin position, destination position, count) arrays.

        Duplicate cells are summed and zero counts dropped; negative counts are rejected.
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        if not (len(rows) == len(cols) == len(counts)):
            raise ValueError("rows, cols and counts must have the same length")
        if len(counts) and counts.min() < 0:
            raise ValueError("counts must be non-negative")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(origins)):
            raise ValueError("an origin position is outside the origin zone set")
        if len(cols) and (cols.min() < 0 or cols.max() >= len(destinations)):
            raise ValueError("a destination position is outside the destination zone set")
        flat = rows * len(destinations) + cols
        unique, inverse = np.unique(flat, return_inverse=True)
        summed = np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)
        keep = summed > 0
        unique, summed = unique[keep], summed[keep]
        return cls(name=name, origins=origins, destinations=destinations,
                   rows=unique // len(destinations), cols=unique % len(destinations),
                   counts=summed, description=description)

    @classmethod
    def from_dense(cls, name, origins: ZoneSet, destinations: ZoneSet, dense,
                   description: str = "") -> ODMatrix:
        """Build from a dense count vector over the domain (non-negative integers)."""
        dense = np.asarray(dense).reshape(-1)
        if len(dense) != len(origins) * len(destinations):
            raise ValueError(f"dense vector has {len(dense)} cells, the domain has "
                             f"{len(origins) * len(destinations)}")
        flat = np.flatnonzero(dense)
        return cls.from_pairs(name, origins, destinations, flat // len(destinations),
                              flat % len(destinations), np.rint(dense[flat]).astype(np.int64),
                              description)

    # ------------------------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of people (commuters)."""
        return int(self.counts.sum())

    @property
    def n_origins(self) -> int:
        return len(self.origins)

    @property
    def n_destinations(self) -> int:
        return len(self.destinations)

    @property
    def domain_size(self) -> int:
        """|X| = |O|·|D|, every possible commute including those nobody makes."""
        return self.n_origins * self.n_destinations

    @property
    def nonzero(self) -> int:
        """Number of cells with at least one commuter."""
        return len(self.counts)

    @property
    def fits_dense(self) -> bool:
        """Whether a dense vector over the domain is allowed (:data:`DENSE_CELL_LIMIT`); larger
        domains are released by :mod:`dpcore.mechanisms.sparse_release`."""
        return self.domain_size <= DENSE_CELL_LIMIT

    @property
    def sparsity(self) -> float:
        """Share of the domain that is empty."""
        return 1.0 - self.nonzero / self.domain_size if self.domain_size else 0.0

    @property
    def flat_index(self) -> np.ndarray:
        """Flat domain index of each non-zero cell."""
        return self.rows * self.n_destinations + self.cols

    @property
    def has_parent_level(self) -> bool:
        """Whether the matrix can roll up to a coarser level (e.g. EDs within counties): every
        zone names its parent and the parent zones are known. The one test of this, everywhere."""
        return all(value is not None for value in (
            self.origins.parent, self.destinations.parent, self.origins.parent_zones,
            self.destinations.parent_zones))

    def count_at_most(self, k: int) -> int:
        """Number of non-zero cells with count ≤ k (the re-identification exposure)."""
        return int(np.count_nonzero(self.counts <= k))

    def cell_labels(self, flat_index=None) -> np.ndarray:
        """"Origin → Destination" for the given flat indices (default: the non-zero cells)."""
        flat = self.flat_index if flat_index is None else np.asarray(flat_index, dtype=np.int64)
        o = self.origins.labels[flat // self.n_destinations]
        d = self.destinations.labels[flat % self.n_destinations]
        return o + ARROW + d  # object arrays of str: concatenated element by element

    # ----------------------------------------------------------------------------------- conversion
    def to_dense(self, dtype=np.int64, limit: int = DENSE_CELL_LIMIT) -> np.ndarray:
        """Counts over the whole domain in flat-index order.

        Raises :class:`DomainTooLargeError` above ``limit`` cells (default
        :data:`DENSE_CELL_LIMIT`).
        """
        if self.domain_size > limit:
            raise DomainTooLargeError(
                f"{self.name}: the domain has {self.domain_size:,} cells "
                f"({self.n_origins:,} origins × {self.n_destinations:,} destinations), more than "
                f"the {limit:,} that fit in memory as a dense vector. Roll up to the parent level "
                f"or take a subset of zones.")
        dense = np.zeros(self.domain_size, dtype=dtype)
        dense[self.flat_index] = self.counts
        return dense

    def to_items(self) -> np.ndarray:
        """One flat cell index per person (length n), grouped by cell: the per-user input."""
        return np.repeat(self.flat_index, self.counts)

    def to_frame(self) -> pd.DataFrame:
        """Non-zero cells as a long table: origin, destination ids and labels, count."""
        return pd.DataFrame({
            "origin": self.origins.ids[self.rows],
            "destination": self.destinations.ids[self.cols],
            "origin_label": self.origins.labels[self.rows],
            "destination_label": self.destinations.labels[self.cols],
            "count": self.counts,
        })

    def top(self, k: int) -> pd.DataFrame:
        """The k busiest commutes with their rank, label and count."""
        order = np.lexsort((self.flat_index, -self.counts))[:k]
        return pd.DataFrame({
            "rank": np.arange(1, len(order) + 1),
            "commute": self.cell_labels(self.flat_index[order]),
            "count": self.counts[order],
        })

    def origin_totals(self) -> np.ndarray:
        """Residents who commute, per origin zone."""
        return np.bincount(self.rows, weights=self.counts, minlength=self.n_origins).astype(np.int64)

    def destination_totals(self) -> np.ndarray:
        """Workers/students arriving, per destination zone."""
        return np.bincount(self.cols, weights=self.counts,
                           minlength=self.n_destinations).astype(np.int64)

    # -------------------------------------------------------------------------------- restructuring
    def aggregate(self, name: str | None = None) -> ODMatrix:
        """Roll up to the parent level (e.g. ED → county); counts are summed exactly."""
        if not self.has_parent_level:
            raise ValueError(f"{self.name} has no parent level to aggregate to")
        o_parents = self.origins.parent_zones
        d_parents = self.destinations.parent_zones
        o_map = o_parents.index_of(self.origins.parent)
        d_map = d_parents.index_of(self.destinations.parent)
        return ODMatrix.from_pairs(name or f"{self.name} (rolled up)", o_parents, d_parents,
                                   o_map[self.rows], d_map[self.cols], self.counts,
                                   self.description)

    def subset(self, origins=None, destinations=None, name: str | None = None) -> ODMatrix:
        """Keep only the chosen origin and/or destination zones (ids), renumbering the domain.

        ``subset(origins=ids, destinations=ids)`` with the EDs of Dublin City gives the thesis's
        "Dublin City only" domain of 162 × 162 = 26,244 cells.
        """
        o_keep = (np.arange(self.n_origins) if origins is None
                  else np.unique(self.origins.index_of(list(origins))))
        d_keep = (np.arange(self.n_destinations) if destinations is None
                  else np.unique(self.destinations.index_of(list(destinations))))
        o_new = np.full(self.n_origins, -1)
        o_new[o_keep] = np.arange(len(o_keep))
        d_new = np.full(self.n_destinations, -1)
        d_new[d_keep] = np.arange(len(d_keep))
        r, c = o_new[self.rows], d_new[self.cols]
        keep = (r >= 0) & (c >= 0)
        return ODMatrix.from_pairs(name or f"{self.name} (subset)", self.origins.take(o_keep),
                                   self.destinations.take(d_keep), r[keep], c[keep],
                                   self.counts[keep], self.description)

    def subset_by_parent(self, parent_ids, name: str | None = None) -> ODMatrix:
        """Keep origins and destinations whose parent is one of ``parent_ids`` (e.g. counties).

        ``subset_by_parent(["Cavan", "Leitrim"])`` is the thesis's rural subset R.
        """
        if not self.has_parent_level:
            raise ValueError(f"{self.name} has no parent level")
        wanted = set(map(str, parent_ids))
        o_ids = self.origins.ids[np.isin(self.origins.parent, list(wanted))]
        d_ids = self.destinations.ids[np.isin(self.destinations.parent, list(wanted))]
        return self.subset(o_ids, d_ids, name=name)

    def with_counts(self, dense, name: str | None = None) -> ODMatrix:
        """Same zones, new (rounded, non-negative) counts: e.g. a released matrix."""
        dense = np.clip(np.rint(np.asarray(dense, dtype=float)), 0, None)
        return ODMatrix.from_dense(name or self.name, self.origins, self.destinations, dense,
                                   self.description)

    def summary(self) -> dict:
        """The headline figures shown on the home page and by ``python -m dpcore datasets``."""
        return {
            "name": self.name,
            "n": self.n,
            "origins": self.n_origins,
            "destinations": self.n_destinations,
            "domain_size": self.domain_size,
            "nonzero": self.nonzero,
            "sparsity": self.sparsity,
            "cells_count_1": self.count_at_most(1),
            "cells_under_10": self.count_at_most(9),
        }
