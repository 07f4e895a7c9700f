"""Ranks and top-k: which commutes a release puts first, and where it puts the true busiest ones.

The thesis reads a release largely through its ordering (figures 5.4, 5.9, 5.11, 5.15 and tables
5.1–5.4: the rank each release gives the true top flows) and through its busiest commutes (the bars
of figures 5.1, 5.5, 5.6, 5.12). Every top-k in the product comes from :func:`top_cells`, so ties
are broken the same way on every page, in every metric and in every download.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix

#: A released cell is a flow when it rounds to at least one commuter.
PRESENT_AT = 0.5


def top_cells(values: np.ndarray, n: int) -> np.ndarray:
    """Flat indices of the n largest values, largest first, ties broken by index."""
    values = np.asarray(values)
    n = min(int(n), values.size)
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    kth = np.partition(values, values.size - n)[values.size - n]
    candidates = np.flatnonzero(values >= kth)
    return candidates[np.lexsort((candidates, -values[candidates]))[:n]]


def ordinal_ranks(values: np.ndarray, cells) -> np.ndarray:
    """Rank (1 = largest) of each cell among all ``values``, ties broken by flat index.

    Equivalent to the position in a stable descending sort, without sorting the domain: one
    histogram over edges at each queried value v and just above it (``nextafter``) counts, for
    every v, the values above it and those equal to it; equal values at a smaller index are then
    counted per tied value. So the rank of a top flow among 9.8 M released cells (thesis table
    5.3: "5031772") costs about one pass.
    """
    values = np.asarray(values)
    cells = np.asarray(cells, dtype=np.int64)
    if cells.size == 0:
        return np.empty(0, dtype=np.int64)
    queried = values[cells].astype(float)
    levels = np.unique(queried)  # ascending
    edges = np.empty(2 * levels.size + 2)
    edges[0], edges[-1] = -np.inf, np.inf
    edges[1:-1:2], edges[2:-1:2] = levels, np.nextafter(levels, np.inf)
    counts, _ = np.histogram(values, edges)  # bin 2i+1 holds the values equal to levels[i]
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
        positions = np.flatnonzero(pd.Series(values).isin(tied_levels).to_numpy())
        group = np.searchsorted(tied_levels, values[positions])
        keys = np.sort(group.astype(np.int64) * values.size + positions)
        where = tied[slot]
        query_group = np.searchsorted(tied_levels, queried[where]).astype(np.int64) * values.size
        ranks[where] += (np.searchsorted(keys, query_group + cells[where])
                         - np.searchsorted(keys, query_group))
    return ranks.astype(np.int64)


def rank_pairs(true_counts, released, n: int | None = None) -> pd.DataFrame:
    """True rank against released rank for the top ``n`` true cells (all cells when None).

    Columns: ``cell`` (flat index), ``true_rank``, ``released_rank``, ``true``, ``released`` and
    ``released_zero`` (shown as less than one commuter, i.e. absent from the release) — the data
    of the thesis's ordering scatters (figures 5.4, 5.9, 5.11, 5.15).
    """
    t = np.asarray(true_counts)
    r = np.asarray(released, dtype=float)
    cells = top_cells(t, t.size if n is None else n)
    return pd.DataFrame({"cell": cells, "true_rank": np.arange(1, cells.size + 1),
                         "released_rank": ordinal_ranks(r, cells), "true": t[cells],
                         "released": r[cells], "released_zero": r[cells] < PRESENT_AT})


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
    t = np.asarray(true_counts)
    cells = top_cells(t, min(k, np.count_nonzero(t)))
    labels = od.cell_labels(cells)
    frames = [pd.DataFrame({"rank": np.arange(1, cells.size + 1), "commute": labels,
                            "mechanism": key, "true": t[cells],
                            "released": np.asarray(values, dtype=float)[cells]})
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
