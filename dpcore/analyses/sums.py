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

Speed on national data (85,000 tracts, 8.1 M non-empty cells): a sparse vector's non-empty cells
are the table's own, so their origins and destinations are the table's ``rows``/``cols``; the
table's public structures (where each origin's cells start, its cells in destination order,
parent labels, zone positions) are made once per table (:func:`once_per_table`), weakly keyed
by the table object: an upload's live only as long as its session's table, and none holds a
release or a count. docs/ANALYSES.md, "Speed".
"""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np
from scipy import sparse

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
    cells, named_empty = values.top_outside_flat()   # the kept top's empty cells
    if values.by_column is not None:
        count, mass = values.by_column
        column = cells % od.n_destinations
        rest = count - np.bincount(column, minlength=count.size)
        left = mass - np.bincount(column, weights=named_empty, minlength=count.size)
        return np.divide(left, rest, out=np.zeros(count.size), where=rest > 0)
    if named_empty.size == 0:
        return zeros.total() / zeros.count if zeros.count else 0.0
    rest = zeros.count - named_empty.size
    return (zeros.total() - float(named_empty.sum())) / rest if rest else 0.0


#: Per ODMatrix (weakly held: dropped with it, so an upload's lives no longer than its session):
#: public structures of the table, made once and shared by all its vectors and queries
#: (:func:`once_per_table`).
_TABLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Per SparseVector (weakly held): its named cells as parts (origins, destinations, values, the
#: table's index or a smaller one) and the empty-cell mean, computed once for the many sums of
#: one set of analyses.
_NAMED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def once_per_table(od: ODMatrix, name: str, make: Callable):
    """``make()``, a structure of the table ``od`` alone (never of a release), made once."""
    held = _TABLE.setdefault(od, {})
    if name not in held:
        held[name] = make()
    return held[name]


def _position(od: ODMatrix) -> type:
    """The integer type of positions among the table's cells (half the memory of int64)."""
    return np.int32 if od.nonzero < 2 ** 31 else np.int64


def _index(od: ODMatrix) -> dict:
    """The table's non-zero cells' flat indices, where each origin's cells start (the cells
    are in flat order, so an origin's are contiguous), and the cells in destination order with
    where each destination's start."""
    def make() -> dict:
        row_start = np.searchsorted(od.rows, np.arange(od.n_origins + 1))
        # the cells in destination order: CSR → CSC is a counting sort, O(cells), in C
        by_col = sparse.csr_matrix((np.arange(od.nonzero, dtype=_position(od)), od.cols,
                                    row_start),
                                   shape=(od.n_origins, od.n_destinations)).tocsc()
        return {"flat": od.flat_index, "row_start": row_start, "col_order": by_col.data,
                "col_start": by_col.indptr}
    return once_per_table(od, "index", make)


def _named(values: SparseVector, od: ODMatrix) -> dict:
    """The named cells in two parts: the ``flat`` cells — the table's own non-zero cells (the
    truth, every sparse release), whose origins and destinations are ``od.rows``/``od.cols``
    and whose index is the table's — and the few empty cells of the kept top."""
    if values not in _NAMED:
        index = _index(od)
        if np.array_equal(values.flat, index["flat"]):
            main = (od.rows, od.cols, values.values, index)
        else:
            o, d = np.divmod(values.flat, od.n_destinations)
            main = (o, d, values.values,
                    {"row_start": np.searchsorted(o, np.arange(od.n_origins + 1))})
        cells, top = values.top_outside_flat()
        o, d = np.divmod(cells, od.n_destinations)
        _NAMED[values] = {"parts": (main, (o, d, top, {})), "mean": empty_mean(values, od)}
    return _NAMED[values]


def _slices(start: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The positions start[w] … start[w + 1] − 1 for every w in ``which``, concatenated."""
    begin, length = start[which], start[which + 1] - start[which]
    offsets = np.repeat(begin - np.concatenate([[0], np.cumsum(length)[:-1]]), length)
    return offsets + np.arange(int(length.sum()))


def _candidates(d: np.ndarray, index: dict, od: ODMatrix, rows: np.ndarray, cols: np.ndarray):
    """Positions of the named cells that can lie in the block, in flat order (so sums add in
    one order whichever way they were found): those of its rows when they hold at most a
    quarter of the cells, else likewise those of its columns, else (a scan of the destinations)
    those of its columns when they are at most a quarter of the columns, else every cell (a
    slice: no copy)."""
    quarter = d.size // 4
    start = index.get("row_start")
    if start is not None and int((start[rows + 1] - start[rows]).sum()) <= quarter:
        return _slices(start, rows)
    start = index.get("col_start")
    if start is not None and int((start[cols + 1] - start[cols]).sum()) <= quarter:
        return np.sort(index["col_order"][_slices(start, cols)])
    if cols.size <= od.n_destinations // 4:
        wanted = np.zeros(od.n_destinations, dtype=bool)
        wanted[cols] = True
        return np.flatnonzero(wanted[d])   # one pass of bytes, no sort
    return slice(None)


def _positions(chosen: np.ndarray, size: int):
    """Each zone's position in the block's ``chosen`` zones (−1 = not in it), or None when the
    block takes every zone in order (the position is the zone)."""
    if chosen.size == size and np.array_equal(chosen, np.arange(size)):
        return None
    at = np.full(size, -1, dtype=np.int64)
    at[chosen] = np.arange(chosen.size)
    return at


def named_in_block(values: SparseVector, od: ODMatrix, rows: np.ndarray, cols: np.ndarray):
    """The named cells of ``values`` inside the block ``rows × cols``, in parts: per part their
    block positions (r, c), values and destinations."""
    named = _named(values, od)
    row_at, col_at = _positions(rows, od.n_origins), _positions(cols, od.n_destinations)
    for o, d, known, index in named["parts"]:
        where = _candidates(d, index, od, rows, cols)
        r = o[where] if row_at is None else row_at[o[where]]
        c = d[where] if col_at is None else col_at[d[where]]
        weights, column = known[where], d[where]
        if row_at is not None or col_at is not None:
            inside = (r >= 0) & (c >= 0)
            r, c, weights, column = r[inside], c[inside], weights[inside], column[inside]
        yield r, c, weights, column


def named_mean(values: SparseVector, od: ODMatrix) -> float | np.ndarray:
    """The released value every unnamed cell is summed at (:func:`empty_mean`), kept per
    vector."""
    return _named(values, od)["mean"]


def _sparse_sums(values: SparseVector, od: ODMatrix, rows, cols, by, size: int, cells
                 ) -> np.ndarray:
    """Sums per group of a SparseVector: its named cells exactly, every other cell of a group at
    the empty-cell mean."""
    mean = _named(values, od)["mean"]
    sums, counted = np.zeros(size), np.zeros(size)   # counted: the named cells' means
    for r, c, weights, column in named_in_block(values, od, rows, cols):
        label = _label(by, r, c)
        if not isinstance(by, str):   # a label matrix: −1 = left out
            keep = label >= 0
            label, weights, column = label[keep], weights[keep], column[keep]
        sums += np.bincount(label, weights=weights, minlength=size)
        counted += (np.bincount(label, minlength=size) if np.isscalar(mean)
                    else np.bincount(label, weights=mean[column], minlength=size))
    if np.isscalar(mean):
        return sums + (cells - counted) * mean
    # per destination: every block cell's mean, less the named cells'
    return sums + _block_means(by, rows.size, mean[cols], size) - counted


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
    per_unit = getattr(values, "per_unit_sums", None)
    if per_unit is not None:   # OnTheMap's debiased interval: the sums per workplace
        return per_unit(rows, cols, by, size), cells
    if isinstance(by, str) and by == "pairs":
        return _pairs(values, od, rows, cols), cells
    if isinstance(values, SparseVector):
        return _sparse_sums(values, od, rows, cols, by, size, cells), cells
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


def parent_labels(od: ODMatrix) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The parent areas (in order of first appearance among the origins) and each origin's and
    destination's parent as a position in that list (−1: none), once per table."""
    def make():
        parents = [str(p) for p in dict.fromkeys(od.origins.parent)]
        at = {p: i for i, p in enumerate(parents)}
        o_label = np.array([at[str(p)] for p in od.origins.parent], dtype=np.int64)
        d_label = (np.full(od.n_destinations, -1, dtype=np.int64)
                   if od.destinations.parent is None else
                   np.array([at.get(str(p), -1) for p in od.destinations.parent], dtype=np.int64))
        return parents, o_label, d_label
    return once_per_table(od, "parents", make)


def _within_parent_cells(od: ODMatrix) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the table's non-zero cells whose home and work share a parent area, and
    that parent's position."""
    def make():
        _, o_label, d_label = parent_labels(od)
        same = np.flatnonzero(o_label[od.rows] == d_label[od.cols])   # −1 never equals
        return same.astype(_position(od)), o_label[od.rows[same]].astype(np.int32)
    return once_per_table(od, "within_parent", make)


def within_parent_sums(values, od: ODMatrix) -> tuple[np.ndarray, np.ndarray]:
    """(sum per parent area, cells per parent area) of the commutes within each parent area (home
    and work in it; :func:`parent_labels`' order), without a block of every pair."""
    parents, o_label, d_label = parent_labels(od)
    groups = len(parents)
    cells = np.bincount(o_label, minlength=groups) * np.bincount(d_label[d_label >= 0],
                                                                 minlength=groups)
    if isinstance(values, SparseVector):
        named = _named(values, od)
        mean = named["mean"]
        sums, counted = np.zeros(groups), np.zeros(groups)   # counted: the named cells' means
        for o, d, known, index in named["parts"]:
            if index is _index(od):   # the table's own cells: those within a parent are known
                same, label = _within_parent_cells(od)
            else:
                label = o_label[o]
                same = np.flatnonzero(label == d_label[d])
                label = label[same]
            sums += np.bincount(label, weights=known[same], minlength=groups)
            counted += (np.bincount(label, minlength=groups) if np.isscalar(mean)
                        else np.bincount(label, weights=mean[d[same]], minlength=groups))
        if np.isscalar(mean):
            return sums + (cells - counted) * mean, cells
        inside = d_label >= 0   # every within-parent cell's mean, less the named cells'
        block = np.bincount(o_label, minlength=groups) * np.bincount(
            d_label[inside], weights=mean[inside], minlength=groups)
        return sums + block - counted, cells
    grid = np.asarray(values).reshape(od.n_origins, od.n_destinations)
    by_o, by_d = np.argsort(o_label, kind="stable"), np.argsort(d_label, kind="stable")
    o_start = np.searchsorted(o_label[by_o], np.arange(groups + 1))
    d_start = np.searchsorted(d_label[by_d], np.arange(groups + 1))
    return np.array([grid[np.ix_(by_o[o_start[g]:o_start[g + 1]], by_d[d_start[g]:d_start[g + 1]])]
                     .sum(dtype=float) for g in range(groups)]), cells
