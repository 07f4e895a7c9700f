"""Ranks and top-k: which commutes a release puts first, and where it puts the true busiest ones.

The thesis reads a release largely through its ordering (figures 5.4, 5.9, 5.11, 5.15 and tables
5.1–5.4: the rank each release gives the true top flows) and through its busiest commutes (the bars
of figures 5.1, 5.5, 5.6, 5.12). Every top-k in the product comes from :func:`top_cells`, so ties
are broken the same way on every page, in every metric and in every download.

Every function here takes a dense vector over the domain or, for a domain too large for one, a
:class:`~dpcore.mechanisms.sparse_vector.SparseVector`; :func:`top_cells`, :func:`ordinal_ranks`
and :func:`values_at` are the one place that tells them apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix
from dpcore.mechanisms.sparse_vector import PRESENT_AT, SparseVector

__all__ = ["PRESENT_AT"]  # re-exported: the metrics read it here


def top_cells(values: np.ndarray, n: int) -> np.ndarray:
    """Flat indices of the n largest values, largest first, ties broken by index (a
    :class:`SparseVector` names at most its known largest cells)."""
    if isinstance(values, SparseVector):
        return values.top(n)
    values = np.asarray(values)
    n = min(int(n), values.size)
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    # Among the positive cells when they are enough (the n-th largest is then positive, so the
    # candidates are the same): partitioning 9.8 M true counts, mostly tied at 0, takes ~2 s.
    positive = np.flatnonzero(values > 0)
    if positive.size >= n:
        kth = np.partition(values[positive], positive.size - n)[positive.size - n]
        candidates = positive[values[positive] >= kth]
    else:
        kth = np.partition(values, values.size - n)[values.size - n]
        candidates = np.flatnonzero(values >= kth)
    return candidates[np.lexsort((candidates, -values[candidates]))[:n]]


def ordinal_ranks(values: np.ndarray, cells) -> np.ndarray:
    """Rank (1 = largest) of each cell among all ``values``, ties broken by flat index.

    Equivalent to the position in a stable descending sort, without sorting the domain: a
    histogram over edges at each queried value v and just above it (``nextafter``) counts, for
    every v, the values above it and those equal to it; equal values at a smaller index are then
    counted per tied value. So the rank of a top flow among 9.8 M released cells (thesis table
    5.3: "5031772") costs about one pass. A :class:`SparseVector` counts from its distribution
    (:meth:`SparseVector.ranks`).
    """
    if isinstance(values, SparseVector):
        return values.ranks(cells)
    values = np.asarray(values)
    cells = np.asarray(cells, dtype=np.int64)
    if cells.size == 0:
        return np.empty(0, dtype=np.int64)
    queried = values[cells].astype(float)
    levels = np.unique(queried)  # ascending
    # counts[2i+1]: values equal to levels[i]; counts[2i]: values strictly between levels[i-1]
    # and levels[i] (counts[0]: below levels[0], counts[-1]: above the last level). The lowest
    # level (often the many released zeros, or a deep noise value) is counted by two comparisons;
    # the others by one histogram over the values at or above levels[1] alone, usually a small
    # share of a large domain (the released values of the true top flows are among the largest).
    counts = np.empty(2 * levels.size + 1, dtype=np.int64)
    equal_low = int(np.count_nonzero(values == levels[0]))
    above_low = int(np.count_nonzero(values > levels[0]))
    counts[0], counts[1] = values.size - equal_low - above_low, equal_low
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
    above = np.append(np.cumsum(counts[::-1])[::-1], 0)[2::2]  # values > levels[i]
    slot = np.searchsorted(levels, queried)
    ranks = above[slot] + 1
    tied = counts[1::2] > 1
    if tied[0]:  # the lowest level: often the many released zeros
        where = slot == 0
        ranks[where] += np.searchsorted(np.flatnonzero(values == levels[0]), cells[where])
    tied[0] = False
    if tied.any():  # the others together: one hashed membership pass, then a small sort
        tied_levels = levels[tied]
        positions = upper[pd.Series(upper_values).isin(tied_levels).to_numpy()]
        group = np.searchsorted(tied_levels, values[positions])
        keys = np.sort(group.astype(np.int64) * values.size + positions)
        where = tied[slot]
        query_group = np.searchsorted(tied_levels, queried[where]).astype(np.int64) * values.size
        ranks[where] += (np.searchsorted(keys, query_group + cells[where])
                         - np.searchsorted(keys, query_group))
    return ranks.astype(np.int64)


def values_at(values, cells) -> np.ndarray:
    """The values at flat indices ``cells`` (a :class:`SparseVector`: NaN where not known)."""
    if isinstance(values, SparseVector):
        return values.at(cells)
    return np.asarray(values)[np.asarray(cells, dtype=np.int64)]


def rank_pairs(true_counts, released, n: int | None = None) -> pd.DataFrame:
    """True rank against released rank for the top ``n`` true cells (all cells when None).

    Columns: ``cell`` (flat index), ``true_rank``, ``released_rank``, ``true``, ``released`` and
    ``released_zero`` (shown as less than one commuter, i.e. absent from the release) — the data
    of the thesis's ordering scatters (figures 5.4, 5.9, 5.11, 5.15).
    """
    if not isinstance(true_counts, SparseVector):
        true_counts = np.asarray(true_counts)
    cells = top_cells(true_counts, true_counts.size if n is None else n)
    r = values_at(released, cells).astype(float)
    return pd.DataFrame({"cell": cells, "true_rank": np.arange(1, cells.size + 1),
                         "released_rank": ordinal_ranks(released, cells),
                         "true": values_at(true_counts, cells), "released": r,
                         "released_zero": r < PRESENT_AT})


def rank_table(od: ODMatrix, pairs: dict[str, pd.DataFrame], k: int = 10,
               names: dict[str, str] | None = None) -> pd.DataFrame:
    """Thesis tables 5.1–5.4: the true top-k commutes and the rank each release gave them.

    ``pairs`` maps mechanism key → :func:`rank_pairs` (over at least the top k).
    """
    frames = list(pairs.values())
    if not frames:
        return pd.DataFrame(columns=["Commute", "True count", "True rank"])
    top = frames[0].head(k)
    table = pd.DataFrame({"Commute": od.cell_labels(top["cell"].to_numpy()),
                          "True count": top["true"].to_numpy(),
                          "True rank": top["true_rank"].to_numpy()})
    for key, frame in pairs.items():
        table[(names or {}).get(key, key)] = frame["released_rank"].to_numpy()[:len(top)]
    return table


def top_flows(od: ODMatrix, true_counts, released: dict[str, np.ndarray], k: int = 30
              ) -> pd.DataFrame:
    """The true top-k commutes with each release's count and error, one row per (cell, release).

    Only commutes someone makes are listed (fewer than k when fewer are non-empty). Columns:
    ``rank``, ``commute``, ``mechanism``, ``true``, ``released``, ``error`` (released −
    true, commuters): the data of the noisy-vs-true bars (thesis figures 5.1, 5.5, 5.6, 5.12).
    """
    cells = top_cells(true_counts, k)
    t = values_at(true_counts, cells)
    cells, t = cells[t != 0], t[t != 0]
    labels = od.cell_labels(cells)
    frames = [pd.DataFrame({"rank": np.arange(1, cells.size + 1), "commute": labels,
                            "mechanism": key, "true": t,
                            "released": values_at(values, cells).astype(float)})
              for key, values in released.items()]
    if not frames:
        return pd.DataFrame(columns=["rank", "commute", "mechanism", "true", "released", "error"])
    out = pd.concat(frames, ignore_index=True)
    out["error"] = out["released"] - out["true"]
    return out


def long_pairs(od: ODMatrix, pairs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The rank pairs of several releases in one table (``mechanism`` and ``commute`` added)."""
    frames = [frame.assign(mechanism=key, commute=od.cell_labels(frame["cell"].to_numpy()))
              for key, frame in pairs.items()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
