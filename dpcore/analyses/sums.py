"""Sums of a count vector over groups of OD cells, dense or sparse, and how many cells each sums.

Every analysis is a set of such sums: the cells of a block ``rows × cols`` of the OD grid, summed
whole (``"all"``), per row, per column, or per label (an int matrix over the block, −1 = left
out), or cell by cell (``"pairs"``: the cells (rows[i], cols[i])). The number of cells in
each group is returned too: the interval of a sum needs it.

A :class:`~dpcore.mechanisms.sparse_vector.SparseVector` is summed without densifying: its named
cells (the data's non-zero cells and the kept top) exactly, and each of the other empty cells in
a group at the mean released value of those cells. Their values exist only as a distribution
whose assignment to cells is exchangeable, so this mean is the expected sum given what the
release holds (true counts: those cells are exactly 0). Where they are exchangeable only within
a destination (OnTheMap's synthesizer: :attr:`SparseVector.by_column`), each destination's
unnamed empty cells are at that destination's mean, so a workplace's inflow is its released
total.
"""

from __future__ import annotations

import weakref

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.mechanisms.sparse_vector import SparseVector


def _groups(by, rows: np.ndarray, cols: np.ndarray, groups: int | None
            ) -> tuple[int, np.ndarray]:
    """(number of groups, cells per group) of a grouping of the block."""
    if isinstance(by, str) and by == "pairs":
        return rows.size, np.ones(rows.size, dtype=np.int64)
    if isinstance(by, str):
        size = {"all": 1, "row": rows.size, "col": cols.size}[by]
        per = {"all": rows.size * cols.size, "row": cols.size, "col": rows.size}[by]
        return size, np.full(size, per, dtype=np.int64)
    labels = np.asarray(by)
    size = int(labels.max(initial=-1)) + 1 if groups is None else groups
    return size, np.bincount(labels[labels >= 0], minlength=size).astype(np.int64)


def _block_means(by, rows: int, column_mean: np.ndarray, size: int) -> np.ndarray:
    """Per group, the sum of its block cells' column means (``column_mean`` over the block's
    columns; ``rows`` rows)."""
    if isinstance(by, str):
        return {"all": lambda: np.array([rows * column_mean.sum()]),
                "row": lambda: np.full(size, column_mean.sum()),
                "col": lambda: rows * column_mean}[by]()
    labels = np.asarray(by)
    inside = labels >= 0
    return np.bincount(labels[inside], weights=np.broadcast_to(column_mean, labels.shape)[inside],
                       minlength=size)


def _label(by, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Group of the block cells at block positions (r, c)."""
    if isinstance(by, str):
        return {"all": np.zeros(r.size, np.int64), "row": r, "col": c}[by]
    return np.asarray(by)[r, c]


def empty_mean(values: SparseVector, od: ODMatrix | None = None) -> float | np.ndarray:
    """Mean released value of the empty cells that are not named (0 for true counts); per
    destination (an array) when the vector holds their sums per destination (``by_column``)."""
    zeros = values.zeros
    flat, known = values.known()
    if values.by_column is not None:
        count, mass = values.by_column
        named = np.ones(flat.size, dtype=bool)
        named[np.searchsorted(flat, values.flat)] = False           # the named empty cells
        column = flat[named] % od.n_destinations
        rest = count - np.bincount(column, minlength=count.size)
        left = mass - np.bincount(column, weights=known[named], minlength=count.size)
        return np.divide(left, rest, out=np.zeros(count.size), where=rest > 0)
    named_empty = known.size - values.flat.size
    if named_empty == 0:
        return zeros.total() / zeros.count if zeros.count else 0.0
    rest = zeros.count - named_empty
    named_empty_sum = float(known.sum()) - float(values.values.sum())   # known = flat ∪ top
    return (zeros.total() - named_empty_sum) / rest if rest else 0.0


#: Per SparseVector (weakly held: dropped with it): its named cells' origins, destinations and
#: values, the empty-cell mean, and where each origin's cells start (the named cells are in flat
#: order, so an origin's cells are contiguous), computed once for the many sums of one set of
#: analyses.
_NAMED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _named(values: SparseVector, od: ODMatrix) -> dict:
    if values not in _NAMED:
        flat, known = values.known()
        o, d = np.divmod(flat, od.n_destinations)
        _NAMED[values] = {"o": o, "d": d, "known": known, "mean": empty_mean(values, od),
                          "row_start": np.searchsorted(o, np.arange(od.n_origins + 1))}
    return _NAMED[values]


def _slices(start: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The positions start[w] … start[w + 1] − 1 for every w in ``which``, concatenated."""
    begin, length = start[which], start[which + 1] - start[which]
    offsets = np.repeat(begin - np.concatenate([[0], np.cumsum(length)[:-1]]), length)
    return offsets + np.arange(int(length.sum()))


def _candidates(named: dict, od: ODMatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Positions of the named cells that can lie in the block: those of its rows when they hold
    at most a quarter of the cells, else those of its columns when they are at most a quarter
    of the columns, else every cell."""
    total = named["o"].size
    row_start = named["row_start"]
    if int((row_start[rows + 1] - row_start[rows]).sum()) <= total // 4:
        return _slices(row_start, rows)
    if cols.size <= od.n_destinations // 4:
        wanted = np.zeros(od.n_destinations, dtype=bool)
        wanted[cols] = True
        return np.flatnonzero(wanted[named["d"]])   # one pass of bytes, no sort
    return np.arange(total)


def _pairs(values, od: ODMatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The single cells (rows[i], cols[i])."""
    flat = rows * od.n_destinations + cols
    if isinstance(values, SparseVector):
        out = values.at(flat)
        mean = _named(values, od)["mean"]
        return np.where(np.isnan(out), mean if np.isscalar(mean) else mean[cols], out)
    return np.asarray(values)[flat].astype(float)


def group_sums(values, od: ODMatrix, rows, cols, by="all", groups: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(sum per group, cells per group) of ``values`` (dense vector over the domain, or a
    SparseVector) over the block ``rows × cols`` (index arrays of origins and destinations);
    ``groups``: how many groups a label matrix has (default: its largest label + 1)."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    size, cells = _groups(by, rows, cols, groups)
    if isinstance(by, str) and by == "pairs":
        return _pairs(values, od, rows, cols), cells
    if isinstance(values, SparseVector):
        named = _named(values, od)
        where = _candidates(named, od, rows, cols)
        row_at = np.full(od.n_origins, -1, dtype=np.int64)
        row_at[rows] = np.arange(rows.size)
        col_at = np.full(od.n_destinations, -1, dtype=np.int64)
        col_at[cols] = np.arange(cols.size)
        r, c = row_at[named["o"][where]], col_at[named["d"][where]]
        inside = (r >= 0) & (c >= 0)
        label = _label(by, r[inside], c[inside])
        keep = label >= 0
        label = label[keep]
        sums = np.bincount(label, weights=named["known"][where][inside][keep], minlength=size)
        mean = named["mean"]
        if np.isscalar(mean):
            return sums + (cells - np.bincount(label, minlength=size)) * mean, cells
        # per destination: every block cell's mean, less the named cells'
        named_mean = np.bincount(label, weights=mean[named["d"][where][inside][keep]],
                                 minlength=size)
        return sums + _block_means(by, rows.size, mean[cols], size) - named_mean, cells
    grid = np.asarray(values).reshape(od.n_origins, od.n_destinations)   # no float copy
    every_row, every_col = rows.size == od.n_origins, cols.size == od.n_destinations
    if every_row and every_col and np.array_equal(rows, np.arange(rows.size)) \
            and np.array_equal(cols, np.arange(cols.size)):
        block = grid
    else:
        block = grid[np.ix_(rows, cols)]
    if isinstance(by, str):
        sums = {"all": lambda: np.array([block.sum(dtype=float)]),
                "row": lambda: block.sum(axis=1, dtype=float),
                "col": lambda: block.sum(axis=0, dtype=float)}[by]()
        return sums, cells
    labels = np.asarray(by)
    keep = labels >= 0
    return np.bincount(labels[keep], weights=block[keep], minlength=size), cells
