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

from dpcore.data import ordinal
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

    Equivalent to the position in a stable descending sort, without sorting the domain
    (:func:`dpcore.data.ordinal.above_and_before`), so the rank of a top flow among 9.8 M
    released cells (thesis table 5.3: "5031772") costs about one pass. A :class:`SparseVector`
    counts from its distribution (:meth:`SparseVector.ranks`).
    """
    if isinstance(values, SparseVector):
        return values.ranks(cells)
    values = np.asarray(values)
    cells = np.asarray(cells, dtype=np.int64)
    above, tied_before = ordinal.above_and_before(values, values[cells], cells)
    return 1 + above + tied_before


def values_at(values, cells) -> np.ndarray:
    """The values at flat indices ``cells`` (a :class:`SparseVector`: NaN where not known)."""
    if isinstance(values, SparseVector):
        return values.at(cells)
    return np.asarray(values)[np.asarray(cells, dtype=np.int64)]


def rank_pairs(true_counts, released, n: int | None = None, cells=None) -> pd.DataFrame:
    """True rank against released rank for the top ``n`` true cells (all cells when None;
    ``cells``: those cells, :func:`top_cells` of the truth, when the caller already has them).

    Columns: ``cell`` (flat index), ``true_rank``, ``released_rank``, ``true``, ``released`` and
    ``released_zero`` (shown as less than one commuter, i.e. absent from the release) — the data
    of the thesis's ordering scatters (figures 5.4, 5.9, 5.11, 5.15).
    """
    if not isinstance(true_counts, SparseVector):
        true_counts = np.asarray(true_counts)
    if cells is None:
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
