"""TopDown release of a hierarchical OD table: InfTDA (Boninsegna & Silvestri, "Differentially
Private Release of Hierarchical Origin/Destination Data with a TopDown Approach", PETS 2025,
arXiv 2412.09256), the TopDown approach of the US 2020 Census adapted to OD data.

Every level of the hierarchy (e.g. county pairs, then ED pairs) is noised with the discrete
Gaussian under zCDP, but only the children of parents that were published as non-zero; then,
parent by parent from the top, the children's noisy counts are fitted to the parent's published
total by an integer Chebyshev (max-error) fit that keeps them ≥ 0 (:func:`int_opt`, Algorithm 3
of the paper's appendix). So the levels add up exactly, every count is a non-negative integer, a
parent published as 0 has no commutes below it (sparsity is kept), and each level adds at most
twice its largest noise to the error of the level above (:func:`error_bound`).

The reference implementation is the ``inf-tda`` package (MIT): a pandas Series in, a Python loop
per child. Here the hierarchy is NumPy arrays, the children of a level are noised in one call (the
caller's noise function, OpenDP's in :mod:`dpcore.interfaces.publish`), and :func:`int_opt` does a
whole pass over the children at once; the output is the package's exactly, for the same noise
(tested). Nothing here draws randomness itself: the noise function is the mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix

#: ``noise(level, counts)``: the counts of one level's expanded cells (in traversal order) with
#: the level's noise added; integers.
NoiseFunction = Callable[[int, np.ndarray], np.ndarray]


def int_opt(x: np.ndarray, c: int) -> np.ndarray:
    """Integer children ``y ≥ 0`` with ``Σy = c`` that stay close to ``x`` in max norm.

    Algorithm 3 of the InfTDA appendix, step for step as ``InfTDA.optimization.int_opt`` does it
    (so the output is the package's, ties included): shift every child by ⌈(c − Σx)/m⌉ but never
    below 0; then, while the children sum to more than ``c``, take them in increasing order of
    ``x`` and lower each to at most ``t`` below its noisy count (and not below 0), ``t`` growing
    after each pass. The package lowers one child per Python iteration; here a pass is a cumulative
    sum: the children before the one that absorbs the last of the excess go to their floor.
    """
    x = np.asarray(x, dtype=np.int64)
    m = x.size
    if c == 0:
        return np.zeros(m, dtype=np.int64)
    total = int(x.sum())
    target = int(c - total)  # Σz must come down to this
    z = np.maximum(np.full(m, math.ceil((c - total) / m), dtype=np.int64), -x)
    t = int(np.abs(z).max())
    order = np.argsort(x)  # the package's order (same call, same tie-breaking)
    order = order[z[order] > -x[order]]
    z_sum = int(z.sum())
    while z_sum > target:
        floor = np.maximum(-x[order], -t)
        room = np.cumsum(z[order] - floor)
        excess = z_sum - target
        if room[-1] < excess:  # the whole pass, then a larger t
            z[order] = floor
            z_sum -= int(room[-1])
            order = order[z[order] > -x[order]]
            t += max(1, int((1 / order.size) * (z_sum - target)))
            continue
        last = int(np.searchsorted(room, excess))  # first child whose room covers the excess
        z[order[:last]] = floor[:last]
        z[order[last]] -= excess - (int(room[last - 1]) if last else 0)
        z_sum = target
    return z + x


@dataclass(frozen=True, eq=False)
class Level:
    """One level of the hierarchy: its OD matrix (zones, true counts) and, for each of its cells,
    the cell of the level above that contains it (None for the top level)."""

    od: ODMatrix
    parent: np.ndarray | None

    @property
    def name(self) -> str:
        return self.od.name


def _roll_up(od: ODMatrix) -> tuple[ODMatrix, np.ndarray]:
    """The parent level restricted to parents that have zones here (a subset of areas keeps only
    its own parents: the others would have no children to publish), and each cell's parent cell.
    Built from the zone lists only, not from the counts."""
    def parents(zones):
        position = zones.parent_zones.index_of(zones.parent)
        kept = np.unique(position)
        renumber = np.full(len(zones.parent_zones), -1)
        renumber[kept] = np.arange(kept.size)
        return zones.parent_zones.take(kept), renumber[position]
    o_zones, o_map = parents(od.origins)
    d_zones, d_map = parents(od.destinations)
    coarse = ODMatrix.from_pairs(f"{od.name} (rolled up)", o_zones, d_zones, o_map[od.rows],
                                 d_map[od.cols], od.counts, od.description)
    cells = np.arange(od.domain_size)
    parent = (o_map[cells // od.n_destinations] * coarse.n_destinations
              + d_map[cells % od.n_destinations])
    return coarse, parent


def hierarchy(od: ODMatrix) -> list[Level]:
    """Every level the zones know, coarse → fine (county → ED; county → tract → block); one
    level when the zones name no parents."""
    levels = []
    while od.has_parent_level:
        coarse, parent = _roll_up(od)
        levels.append(Level(od, parent))
        od = coarse
    levels.append(Level(od, None))
    return levels[::-1]


def topdown(levels: list[Level], root: int | None, noise: NoiseFunction,
            progress: Callable[[int, int], None] | None = None) -> list[np.ndarray]:
    """The TopDown release of every level (dense non-negative integer vectors, coarse → fine).

    ``root`` is the published total the top level is fitted to: the true n under substitution
    neighbours (n is then the same in every neighbouring table, so publishing it costs nothing —
    the paper's "bounded" setting), or None to publish the top level's noisy counts clipped at 0
    (add/remove neighbours, where n itself is private). Parents are taken in the order their own
    level was traversed and children in increasing cell order, as the reference package does.
    """
    released = []
    parents_order = None  # expanded cells of the level above, in traversal order
    above = None
    expected = sum(level.od.domain_size for level in levels)
    done = 0
    for number, level in enumerate(levels):
        counts = level.od.to_dense()
        if level.parent is None:
            cells = np.arange(counts.size)
            bounds = np.array([0, counts.size])
            totals = [root]
        else:
            rank = np.full(above.size, -1)
            rank[parents_order] = np.arange(parents_order.size)
            children = np.flatnonzero(rank[level.parent] >= 0)
            cells = children[np.argsort(rank[level.parent[children]], kind="stable")]
            bounds = np.searchsorted(rank[level.parent[cells]], np.arange(parents_order.size + 1))
            totals = above[parents_order].tolist()
        noisy = np.asarray(noise(number, counts[cells]), dtype=np.int64)
        done += cells.size
        if progress is not None:
            progress(done, expected)
        out = np.zeros(counts.size, dtype=np.int64)
        for start, stop, total in zip(bounds[:-1], bounds[1:], totals):
            out[cells[start:stop]] = (np.maximum(noisy[start:stop], 0) if total is None
                                      else int_opt(noisy[start:stop], int(total)))
        released.append(out)
        parents_order = cells[out[cells] != 0]
        above = out
    if progress is not None:
        progress(expected, expected)
    return released


def consistent(levels: list[Level], released: list[np.ndarray]) -> list[bool]:
    """For each level below the top, whether every parent equals the sum of its children."""
    return [bool(np.array_equal(np.bincount(level.parent, weights=fine,
                                            minlength=coarse.size).astype(np.int64), coarse))
            for level, coarse, fine in zip(levels[1:], released, released[1:])]


def error_bound(sigmas: list[float], cells: list[int], beta: float = 0.05) -> list[float]:
    """Max absolute error per level that holds with probability ≥ 1 − β (all levels at once).

    The Chebyshev fit's output y is at least as close to the noisy children x as the true
    children shifted by the parent's error e (they are feasible for the parent's published
    total), so ‖y − truth‖∞ ≤ ‖y − x‖∞ + ‖x − truth‖∞ ≤ 2·η + |e|: each level adds twice its
    largest noise η to the error of the level above (the form of the paper's bound). The discrete
    Gaussian is σ²-subgaussian (Canonne, Kamath, Steinke 2020), so with a union bound over the
    levels' ``cells`` η ≤ σ·√(2 ln(2·cells·T/β)).
    """
    bound, out = 0.0, []
    for sigma, n_cells in zip(sigmas, cells):
        bound += 2 * sigma * math.sqrt(2 * math.log(2 * n_cells * len(sigmas) / beta))
        out.append(bound)
    return out
