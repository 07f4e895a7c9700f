"""A published vector over a domain too large to hold densely: exact where it is known, a
distribution where it is not.

A release over a national tract domain (≈ 7·10⁹ cells) is made by
:mod:`dpcore.mechanisms.sparse_release` in O(non-zero cells + k): the data's non-zero cells are
drawn one by one, the empty cells are represented by their *empirical distribution*
(:class:`ZeroCells`: how many take each value) and the largest released cells are named (the
*kept top*). :class:`SparseVector` packages those three parts as the "published vector" the views
read, with the operations they need and nothing that would touch every cell:

* :meth:`SparseVector.at` — the value at given cells: exact at the data's non-zero cells and the
  kept top; NaN at any other empty cell (its value was never drawn: it is one of the many
  exchangeable cells below the kept top).
* :meth:`SparseVector.top` — the released top-n (n up to the kept top; ties by flat index, as
  :func:`dpcore.scoring.ranks.top_cells`).
* :meth:`SparseVector.ranks` — the released rank of given known cells: 1 + the cells above it +
  the cells tied with it at a smaller flat index. The non-zero cells are counted exactly, the
  empty cells above it exactly from their distribution (:class:`ZeroCells` atoms, and the bands
  entirely above it). Two parts are expected values, not draws: the empty cells *tied* with the
  cell at a smaller flat index (their placement among the empty cells is uniform, so that share of
  the tied ones; it only orders equal values) and, for continuous noise, the empty cells inside a
  band that straddles the value (the band's count × its conditional probability above the value,
  from the noise law). :attr:`SparseVector.rank_note` says so where it applies.

True counts over a huge domain are a :class:`SparseVector` too (:meth:`SparseVector.counts`: the
empty cells are exactly 0), so a view takes the truth and a release the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from dpcore.data import ordinal
from dpcore.data.od import ODMatrix

#: A released cell is a flow when it rounds to at least one commuter.
PRESENT_AT = 0.5


# ---------------------------------------------------------------------------- empty cells
@dataclass(frozen=True)
class Band:
    """``count`` empty cells with values in [low, high) (one sign), known by their sums."""

    low: float
    high: float
    count: int
    total: float
    total_sq: float


@dataclass(frozen=True)
class ZeroCells:
    """The released values of the M empty cells: atoms (value, multiplicity) plus bands."""

    count: int
    values: np.ndarray
    multiplicity: np.ndarray
    bands: tuple[Band, ...] = ()
    _suffix: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        values = np.asarray(self.values, dtype=float)
        mult = np.asarray(self.multiplicity, dtype=np.int64)
        keep = mult > 0
        levels, inverse = np.unique(values[keep], return_inverse=True)
        weights = np.bincount(inverse, weights=mult[keep], minlength=levels.size)
        object.__setattr__(self, "values", levels)
        object.__setattr__(self, "multiplicity", weights.astype(np.int64))
        # suffix sums over the ascending atoms: counts and value sums at or above each atom
        object.__setattr__(self, "_suffix", (np.append(np.cumsum(weights[::-1])[::-1], 0.0),
                                             np.append(np.cumsum((levels * weights)[::-1])[::-1],
                                                       0.0)))
        accounted = int(self.multiplicity.sum()) + sum(b.count for b in self.bands)
        if accounted != self.count:
            raise AssertionError(f"{accounted} empty cells accounted for, expected {self.count}")

    @property
    def exact(self) -> bool:
        return not self.bands

    def _at_least(self, x: float, which: int) -> float:
        for band in self.bands:
            if band.low < x < band.high and band.count:
                raise AssertionError(f"a band [{band.low}, {band.high}) straddles {x}")
        atoms = self._suffix[which][np.searchsorted(self.values, x, side="left")]
        return float(atoms) + sum(b.total if which else b.count for b in self.bands if b.low >= x)

    def count_at_least(self, x: float) -> int:
        return int(round(self._at_least(x, 0)))

    def sum_at_least(self, x: float) -> float:
        return self._at_least(x, 1)

    def count_positive(self) -> int:
        """Cells above 0 (a band starting at 0 is continuous: it holds no exact zeros)."""
        atoms = self._suffix[0][np.searchsorted(self.values, 0.0, side="right")]
        return int(round(atoms)) + sum(b.count for b in self.bands if b.low >= 0)

    def total(self) -> float:
        return float(self._suffix[1][0]) + sum(b.total for b in self.bands)

    def total_sq(self) -> float:
        return (float(np.sum(self.values ** 2 * self.multiplicity))
                + sum(b.total_sq for b in self.bands))

    def total_abs(self) -> float:
        return (float(np.sum(np.abs(self.values) * self.multiplicity))
                + sum(abs(b.total) for b in self.bands))

    def max_abs(self) -> float:
        """Largest |value| (bands lie strictly inside the explicit tail, so atoms hold it)."""
        bands = [max(abs(b.low), abs(b.high)) for b in self.bands if b.count]
        atoms = float(max(-self.values[0], self.values[-1])) if self.values.size else 0.0
        if bands and (not self.values.size or max(bands) > atoms):
            raise AssertionError("the largest empty-cell value is inside a band")
        return atoms

    def clipped(self) -> ZeroCells:
        """Base-Pos: every value below 0 becomes 0."""
        negative = self.values < 0
        zeros = int(self.multiplicity[negative].sum()
                    + sum(b.count for b in self.bands if b.high <= 0))
        values = np.append(self.values[~negative], 0.0)
        mult = np.append(self.multiplicity[~negative], zeros)
        return ZeroCells(self.count, values, mult, tuple(b for b in self.bands if b.low >= 0))


RANK_NOTE = ("Released ranks count exactly the cells released above each commute; among empty "
             "cells released at exactly the same value (ties, ordered by cell index) or inside "
             "the bulk of empty cells summarised by their sums, the count is its expected value.")


@dataclass(frozen=True, eq=False)
class SparseVector:
    """A vector over ``size`` cells: ``values`` at the sorted flat indices ``flat`` (the data's
    non-zero cells), the other cells' values as the distribution ``zeros``, and (a release) the
    kept top: ``top_flat``/``top_values``, its largest present cells among all, largest first,
    ties by flat index. ``known_from``: every cell whose value is at least this is among those
    named (``flat`` or the kept top). ``law`` is the continuous noise law of the empty cells (a
    SciPy distribution), when they have one: it places a rank inside a band."""

    size: int
    flat: np.ndarray
    values: np.ndarray
    zeros: ZeroCells
    top_flat: np.ndarray | None = None
    top_values: np.ndarray | None = None
    known_from: float = np.inf
    law: object = None
    #: The empty cells' number and value sum per destination (column) when they are
    #: exchangeable only within a column (OnTheMap's synthesizer: each workplace's own law);
    #: None when they are exchangeable over the whole domain.
    by_column: tuple[np.ndarray, np.ndarray] | None = None

    def __post_init__(self):
        values = np.asarray(self.values, dtype=float)
        values.flags.writeable = False
        object.__setattr__(self, "values", values)

    def top_outside_flat(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept top's cells that are not among ``flat`` (empty cells it names), in flat
        order, and their values: O(k), not O(non-zero cells)."""
        if self.top_flat is None or not self.top_flat.size:
            return np.empty(0, dtype=np.int64), np.empty(0)
        found, _ = self._explicit(self.top_flat)
        extra = np.argsort(self.top_flat[~found])
        return self.top_flat[~found][extra], self.top_values[~found][extra]

    @cached_property
    def _known(self) -> tuple[np.ndarray, np.ndarray]:
        cells, values = self.top_outside_flat()
        if not cells.size:
            return self.flat, self.values
        at = np.searchsorted(self.flat, cells)    # a merge of two sorted lists: O(n), no sort
        return np.insert(self.flat, at, cells), np.insert(self.values, at, values)

    def known(self) -> tuple[np.ndarray, np.ndarray]:
        """Every cell whose value is named (the non-zero cells and the kept top), in flat order,
        and those values."""
        return self._known

    @classmethod
    def counts(cls, od: ODMatrix) -> SparseVector:
        """The true counts of ``od``: exact at its non-zero cells, 0 everywhere else."""
        empty = od.domain_size - od.nonzero
        return cls(od.domain_size, od.flat_index, od.counts, ZeroCells(empty, [0.0], [empty]),
                   known_from=float(np.nextafter(0.0, 1.0)))

    @property
    def rank_note(self) -> str | None:
        """What is an expected value in :meth:`ranks` (None when every rank is exact)."""
        empty_ties = self.zeros.count and self.zeros.multiplicity.max(initial=0) > 1
        return RANK_NOTE if empty_ties or self.zeros.bands else None

    def _explicit(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which ``cells`` are among ``flat``, and where."""
        where = np.minimum(np.searchsorted(self.flat, cells), max(self.flat.size - 1, 0))
        found = self.flat[where] == cells if self.flat.size else np.zeros(cells.size, bool)
        return found, where

    def at(self, cells) -> np.ndarray:
        """Values at flat indices ``cells``; NaN at an empty cell outside the kept top when the
        empty cells do not all share one value."""
        cells = np.asarray(cells, dtype=np.int64)
        out = np.full(cells.size, np.nan)
        if self.zeros.values.size == 1 and not self.zeros.bands:
            out[:] = self.zeros.values[0]
        if self.top_flat is not None and self.top_flat.size:
            order = np.argsort(self.top_flat)
            where = np.minimum(np.searchsorted(self.top_flat[order], cells), order.size - 1)
            hit = self.top_flat[order][where] == cells
            out[hit] = self.top_values[order][where[hit]]
        found, where = self._explicit(cells)
        out[found] = self.values[where[found]]
        return out

    def top(self, n: int) -> np.ndarray:
        """Flat indices of the ``n`` largest cells, largest first, ties by flat index: a release
        names at most its kept top; true counts name their non-zero cells."""
        n = max(int(n), 0)
        if self.top_flat is not None:
            return self.top_flat[:n]
        positive = np.flatnonzero(self.values > 0)
        if positive.size > n > 0:   # only the n largest (with their ties) need sorting
            kth = np.partition(self.values[positive], positive.size - n)[positive.size - n]
            positive = positive[self.values[positive] >= kth]
        cells, values = self.flat[positive], self.values[positive]
        return cells[np.lexsort((cells, -values))[:n]]

    def ranks(self, cells) -> np.ndarray:
        """Rank (1 = largest, ties by flat index) of known cells (see the module docstring)."""
        cells = np.asarray(cells, dtype=np.int64)
        values = self.at(cells)
        if np.isnan(values).any():
            raise ValueError("ranks are known only for the non-zero cells and the kept top")
        explicit, _ = self._explicit(cells)
        named_before = np.searchsorted(self.flat, cells)   # named cells at a smaller flat index
        above, tied = ordinal.above_and_before(self.values, values, named_before)
        empty_before = cells - named_before
        others = self.zeros.count - (~explicit)
        # The tied share is an expected value: a float quotient, never the int64 product of two
        # counts near 10¹⁰ (which overflows); every rank ≤ 10¹⁰ is exact in int64 and float64.
        share = self._empty_tied(values, explicit).astype(float) / np.maximum(others, 1)
        return (1 + above + tied
                + np.array([self._empty_above(v) for v in values], dtype=np.int64)
                + np.rint(share * empty_before).astype(np.int64))

    def _empty_above(self, value: float) -> int:
        """Empty cells released strictly above ``value`` (expected count inside a band)."""
        zeros = self.zeros
        count = float(zeros.multiplicity[zeros.values > value].sum())
        for band in zeros.bands:
            if band.low >= value:
                count += band.count
            elif value < band.high:
                count += band.count * self._share_above(band, value)
        return round(count)

    def _share_above(self, band: Band, value: float) -> float:
        if self.law is None:
            return (band.high - value) / (band.high - band.low)
        inside = self.law.sf(band.low) - self.law.sf(band.high)
        return float((self.law.sf(value) - self.law.sf(band.high)) / inside) if inside else 0.0

    def _empty_tied(self, values: np.ndarray, explicit: np.ndarray) -> np.ndarray:
        """Empty cells released at exactly each value, the queried cell itself left out."""
        zeros = self.zeros
        where = np.minimum(np.searchsorted(zeros.values, values), max(zeros.values.size - 1, 0))
        hit = zeros.values[where] == values if zeros.values.size else np.zeros(values.size, bool)
        multiplicity = zeros.multiplicity[where] if zeros.values.size else np.zeros(values.size)
        return np.where(hit, multiplicity - (~explicit), 0)

    def clipped(self) -> SparseVector:
        """Base-Pos (and Post-Pos, cell by cell): every value below 0 becomes 0 (the kept top is
        all above 0, so unchanged)."""
        return replace(self, values=np.maximum(self.values, 0.0), zeros=self.zeros.clipped())

    def total(self) -> float:
        return float(self.values.sum()) + self.zeros.total()
