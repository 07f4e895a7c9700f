"""The true counts as a profile: each distinct count and how many cells hold it.

Every closed-form per-cell variance (and exact mean) of the mechanisms is a function of the cell's
count, the table's n and d and the settings alone (:func:`dpcore.mechanisms.base.table_size`), so a
mean over the whole domain is a weighted sum over the distinct counts. At ED level that is ~800
distinct values instead of 9.8 million cells (one of them 0, held by ~9.5 million): the planner's
expected error costs microseconds per evaluation instead of a pass over the domain, and a profile
is built from the sparse matrix in O(non-zero cells), so it works on domains too large to be dense.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.mechanisms.sparse_vector import SparseVector


@dataclass(frozen=True)
class CountProfile:
    """``values``: the distinct counts (ascending, int64); ``cells``: how many cells hold each."""

    values: np.ndarray
    cells: np.ndarray

    @classmethod
    def of_nonzero(cls, counts, d: int) -> CountProfile:
        """From the non-zero counts of a table of d cells (the rest are zeros)."""
        given = np.asarray(counts)
        counts = given.astype(np.int64)
        if counts.size and (counts.min() <= 0 or not np.array_equal(counts, given)):
            raise ValueError("a count profile takes positive whole-number counts (the non-zero "
                             "cells)")
        if counts.size > d:
            raise ValueError(f"{counts.size} non-zero counts do not fit in {d} cells")
        values, cells = np.unique(counts, return_counts=True)
        if counts.size < d:
            values, cells = np.r_[0, values], np.r_[d - counts.size, cells]
        return cls(values.astype(np.int64), cells.astype(np.int64))

    @classmethod
    def of_matrix(cls, od: ODMatrix) -> CountProfile:
        """From an OD matrix, without a dense vector."""
        return cls.of_nonzero(od.counts, od.domain_size)

    @classmethod
    def of_counts(cls, counts) -> CountProfile:
        """From true counts over the whole domain: dense, or a huge domain's
        :class:`~dpcore.mechanisms.sparse_vector.SparseVector`."""
        if isinstance(counts, SparseVector):
            return cls.of_nonzero(counts.values[counts.values != 0], counts.size)
        counts = np.asarray(counts).reshape(-1)
        return cls.of_nonzero(counts[counts != 0], counts.size)

    @property
    def n(self) -> int:
        """People in the table."""
        return int(np.dot(self.values, self.cells))

    @property
    def d(self) -> int:
        """Cells in the table."""
        return int(self.cells.sum())

    def mean(self, per_value) -> float:
        """The mean over all d cells of a per-cell quantity given at each distinct count."""
        return float(np.dot(self.cells, np.asarray(per_value, dtype=float)) / self.d)

    def variance(self, mechanism) -> np.ndarray | None:
        """The mechanism's closed-form variance at each distinct count (None without one)."""
        return mechanism.variance(self.values, n=self.n, d=self.d)
