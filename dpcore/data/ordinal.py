"""Ranks without sorting: how many values lie above a few queried values, and how many equal
them earlier in the array (ties go to the smaller index, as in a stable descending sort).

A page asks for the ranks of ~100 true top flows in a release of millions of cells, once per
release: sorting the release costs ~0.6 s at 9.8 M cells. Here the value range is cut into
:data:`BUCKETS` equal buckets (one pass of arithmetic: a value's bucket never decreases as the
value grows, so every value in a higher bucket than a level lies above it), and only the values
in the queried levels' own buckets are sorted — a few thousand at ED level, where the Hadamard
mechanism's released values of the top flows are spread through the whole noise distribution
(the histogram over those levels this replaces sorted 8.7 M of the 9.8 M values: 0.63 s). When
the top flows stand above the noise instead (Laplace at ε = 1.5: 100 of 9.8 M values are at or
above the lowest of them), one comparison finds the few values that count and only they are
sorted (:func:`_at_or_above`; 0.057 → 0.006 s of CPU). Used
by :func:`dpcore.scoring.ranks.ordinal_ranks` (a dense release) and
:meth:`dpcore.mechanisms.sparse_vector.SparseVector.ranks` (the named cells of a sparse one).
"""

from __future__ import annotations

import numpy as np

#: Up to this many (queried value, value) pairs every pair is compared directly: cheaper than
#: buckets on small domains (100 top flows of 1,085 county cells: 0.86 → 0.22 ms).
PAIRWISE_CELLS = 1 << 18
#: Equal buckets the value range is cut into (their counts: one bincount of this length; at most
#: 2¹⁶, a value's bucket is kept in 2 bytes).
BUCKETS = 1 << 16
#: A queried level whose bucket holds more than 1/HEAVY_SHARE of the values (the many released
#: zeros of a clamped release) is counted by two comparisons over the array instead of a sort of
#: its bucket, when at most :data:`DIRECT_LEVELS` levels are in such buckets.
HEAVY_SHARE = 16
DIRECT_LEVELS = 4
#: Values given their bucket at a time: the chunk's arithmetic stays in the CPU cache (2 MB;
#: 2¹⁴–2¹⁸ measured within 15 % of each other at ED level).
CHUNK = 1 << 18
#: When the values at or above the lowest queried level are at most 1/NEAR_SHARE of all, they
#: are ranked alone, without buckets (:func:`_at_or_above`); every SAMPLE_STRIDE-th value is
#: compared first, which skips that pass when it would not pay.
NEAR_SHARE = 64
SAMPLE_STRIDE = 64


def above_and_before(values: np.ndarray, queried, before) -> tuple[np.ndarray, np.ndarray]:
    """For each queried value v_i and index b_i: the number of ``values`` strictly above v_i, and
    the number equal to v_i at an index below b_i (a cell's own index: the ties before it).
    Exact for any values (a NaN is never above nor equal to anything, as in a comparison)."""
    values = np.asarray(values)
    queried = np.asarray(queried, dtype=float)
    before = np.clip(np.asarray(before, dtype=np.int64), 0, values.size)   # beyond: all of them
    if queried.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if queried.size * values.size <= PAIRWISE_CELLS:   # county level: 100 × 1,085
        return ((values[None, :] > queried[:, None]).sum(axis=1),
                ((values[None, :] == queried[:, None])
                 & (np.arange(values.size)[None, :] < before[:, None])).sum(axis=1))
    levels, slot = np.unique(queried, return_inverse=True)  # ascending
    slot = slot.reshape(-1)
    if values.size and not np.isnan(levels[0]):
        near = _at_or_above(values, levels[0])
        if near is not None:      # every value that counts is among these few
            return _ranked_among(values, near, levels, slot, before,
                                 np.full(levels.size, near.size), np.zeros(levels.size, np.int64))
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):   # never in a release: level by level
        return _by_comparison(values, levels, slot, before, np.ones(levels.size, dtype=bool))
    scale = BUCKETS / (hi - lo) if hi > lo else 0.0
    if not np.isfinite(scale):
        scale = 0.0
    level_bucket = _buckets(np.where(np.isnan(levels), lo, levels), lo, scale).astype(np.int64)
    buckets, counts = _bucket_all(values, lo, scale)
    heavy = counts[level_bucket] * HEAVY_SHARE > values.size
    direct = heavy if np.count_nonzero(heavy) <= DIRECT_LEVELS else np.zeros_like(heavy)
    direct |= np.isnan(levels)    # a NaN has no bucket: nothing is above it nor equal to it
    above, tied_before = _by_comparison(values, levels, slot, before, direct)
    if direct.all():
        return above, tied_before
    # Every value in a sorted bucket, sorted by value then index: above a level are the values
    # of higher buckets and those of its own bucket sorted above it.
    wanted = np.zeros(BUCKETS, dtype=bool)
    wanted[level_bucket[~direct]] = True
    positions = np.flatnonzero(wanted[buckets])
    del buckets
    near_bucket = np.sort(_buckets(values[positions], lo, scale))   # as the values sort
    higher = np.append(np.cumsum(counts[::-1])[::-1], 0)[1:]     # values in buckets > b
    bucket_end = np.searchsorted(near_bucket, level_bucket, side="right")
    queries = ~direct[slot]
    found = _ranked_among(values, positions, levels, slot[queries], before[queries],
                          bucket_end, higher[level_bucket])
    above[queries], tied_before[queries] = found
    return above, tied_before


def _at_or_above(values: np.ndarray, lowest: float) -> np.ndarray | None:
    """Indices of the values ≥ ``lowest`` when they are at most 1/NEAR_SHARE of all (a release
    at large ε, where the top flows' values stand above the noise: one comparison then replaces
    the buckets), else None — after a look at every SAMPLE_STRIDE-th value when that already
    says so."""
    limit = values.size // NEAR_SHARE
    sample = values[::SAMPLE_STRIDE]
    if np.count_nonzero(sample >= lowest) > 2 * (limit // SAMPLE_STRIDE + 1):
        return None
    near = np.flatnonzero(values >= lowest)
    return near if near.size <= limit else None


def _ranked_among(values: np.ndarray, positions: np.ndarray, levels: np.ndarray,
                  slot: np.ndarray, before: np.ndarray, end: np.ndarray, outside: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The counts for queries ``slot`` (level numbers) from the values at ``positions``, which
    hold every value equal to a level and, sorted, those above it up to the ``end[level]``-th;
    ``outside[level]`` more lie above those."""
    near = values[positions].astype(float)
    order = np.lexsort((positions, near))
    near, positions = near[order], positions[order].astype(np.int64)
    first_above = np.searchsorted(near, levels, side="right")
    first_equal = np.searchsorted(near, levels, side="left")
    above = outside + end - first_above
    # Ties before an index: within a level's run of equal values, indices are ascending.
    group = np.zeros(near.size, dtype=np.int64)
    if near.size:
        group[1:] = np.cumsum(near[1:] != near[:-1])
    key = group * max(values.size, 1) + positions                # ascending
    present = first_equal[slot] < first_above[slot]
    at = np.minimum(first_equal[slot], max(near.size - 1, 0))
    ties = (np.searchsorted(key, group[at] * max(values.size, 1) + before)
            - first_equal[slot]) if near.size else np.zeros(slot.size, dtype=np.int64)
    return above[slot], np.where(present, ties, 0)


def _buckets(values: np.ndarray, lo: float, scale: float) -> np.ndarray:
    """Each value's bucket, 0…BUCKETS − 1 (float64 arithmetic: the same for a value wherever it
    is computed)."""
    position = np.subtract(values, lo, dtype=float)
    position *= scale
    np.clip(position, 0, BUCKETS - 1, out=position)
    return position.astype(np.uint16)


def _bucket_all(values: np.ndarray, lo: float, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Every value's bucket (2 bytes each) and the values per bucket, a cache-sized chunk at a
    time (each chunk's arithmetic in one reused buffer: 2.5× fewer passes over memory)."""
    buckets = np.empty(values.size, dtype=np.uint16)
    counts = np.zeros(BUCKETS, dtype=np.int64)
    position = np.empty(min(values.size, CHUNK))
    for start in range(0, values.size, CHUNK):
        part = position[:min(CHUNK, values.size - start)]
        np.subtract(values[start:start + CHUNK], lo, out=part, dtype=float)
        part *= scale                          # ≥ 0: lo is the smallest value
        np.minimum(part, BUCKETS - 1, out=part)
        chunk = buckets[start:start + CHUNK]
        chunk[...] = part
        counts += np.bincount(chunk, minlength=BUCKETS)
    return buckets, counts


def _by_comparison(values: np.ndarray, levels: np.ndarray, slot: np.ndarray, before: np.ndarray,
                   chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The counts for the queries at the ``chosen`` levels by two passes over the array per level
    (the others left at 0): the values above, and the equal ones counted between consecutive
    queried indices (no list of the equal values' positions: at a clamped release's 0, millions)."""
    above = np.zeros(slot.size, dtype=np.int64)
    tied_before = np.zeros(slot.size, dtype=np.int64)
    for i in np.flatnonzero(chosen):
        where = np.flatnonzero(slot == i)
        above[where] = np.count_nonzero(values > levels[i])
        equal = values == levels[i]
        ends = before[where]
        order = np.argsort(ends, kind="stable")
        edges = np.concatenate([[0], ends[order]])
        tied_before[where[order]] = np.cumsum([np.count_nonzero(equal[a:b])
                                               for a, b in zip(edges[:-1], edges[1:])])
    return above, tied_before
