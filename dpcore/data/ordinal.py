"""Ranks without sorting: how many values lie above a few queried values, and how many equal
them earlier in the array (ties go to the smaller index, as in a stable descending sort).

A page asks for the ranks of ~100 true top flows in a release of millions of cells, once per
release: sorting the release costs ~0.3 s at 9.8 M cells and ~0.7 s at 8 M sparse values, while
counting against the queried values costs about one pass. Used by
:func:`dpcore.evaluation.ranks.ordinal_ranks` (a dense release) and
:meth:`dpcore.mechanisms.sparse_vector.SparseVector.ranks` (the named cells of a sparse one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def above_and_before(values: np.ndarray, queried, before) -> tuple[np.ndarray, np.ndarray]:
    """For each queried value v_i and index b_i: the number of ``values`` strictly above v_i, and
    the number equal to v_i at an index below b_i (a cell's own index: the ties before it).

    ``counts[2i+1]`` are the values equal to the i-th distinct queried level, ``counts[2i]``
    those strictly between it and the one below. The lowest level (often the many released
    zeros, or a deep noise value) is counted by two comparisons; the others by one histogram
    over the values at or above the second level alone, usually a small share of the array
    (the released values of the true top flows are among the largest)."""
    values = np.asarray(values)
    queried = np.asarray(queried, dtype=float)
    before = np.asarray(before, dtype=np.int64)
    if queried.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    levels = np.unique(queried)  # ascending
    counts = np.empty(2 * levels.size + 1, dtype=np.int64)
    equal_low = int(np.count_nonzero(values == levels[0]))
    above_low = int(np.count_nonzero(values > levels[0]))
    counts[0], counts[1] = values.size - equal_low - above_low, equal_low
    upper = np.empty(0, dtype=np.int64)
    upper_values = values[upper]
    if levels.size > 1:
        upper = np.flatnonzero(values >= levels[1])
        upper_values = values[upper]
        edges = np.empty(2 * levels.size - 1)
        edges[0:-1:2], edges[1:-1:2] = levels[1:], np.nextafter(levels[1:], np.inf)
        edges[-1] = np.inf
        counts[3:], _ = np.histogram(upper_values, edges)
        counts[2] = above_low - upper.size
    else:
        counts[2] = above_low
    above_levels = np.append(np.cumsum(counts[::-1])[::-1], 0)[2::2]  # values > levels[i]
    slot = np.searchsorted(levels, queried)
    above = above_levels[slot].astype(np.int64)
    tied_before = np.zeros(queried.size, dtype=np.int64)
    tied = counts[1::2] > 0
    if tied[0]:
        where = slot == 0
        tied_before[where] = np.searchsorted(np.flatnonzero(values == levels[0]), before[where])
    tied[0] = False
    if tied.any():  # the others together: one hashed membership pass, then a small sort
        tied_levels = levels[tied]
        positions = upper[pd.Series(upper_values).isin(tied_levels).to_numpy()]
        group = np.searchsorted(tied_levels, values[positions]).astype(np.int64)
        keys = np.sort(group * values.size + positions)
        where = tied[slot]
        query_group = np.searchsorted(tied_levels, queried[where]).astype(np.int64) * values.size
        tied_before[where] = (np.searchsorted(keys, query_group + before[where])
                              - np.searchsorted(keys, query_group))
    return above, tied_before
