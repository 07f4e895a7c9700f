"""The metrics of a sparse release (:mod:`dpcore.mechanisms.sparse_release`): those of
:func:`dpcore.scoring.metrics.compute` that depend only on the non-zero cells and the empty cells'
empirical distribution; the others are NaN (see the release module's docstring for what is exact)."""

from __future__ import annotations

import math

import numpy as np

from dpcore.mechanisms.sparse_release import GEH_EMPTY_LIMIT, METHODS, SparseRelease
from dpcore.scoring import metrics
from dpcore.scoring.ranks import PRESENT_AT, top_cells


def score(release: SparseRelease, method: str = "base", k: int = 10, top_n: int = 100
          ) -> dict[str, float]:
    """The metrics of :data:`dpcore.scoring.metrics.METRICS` computable from the sparse release (the
    others NaN), after post-processing ``method`` (one of :data:`METHODS`)."""
    if method not in METHODS:
        raise ValueError(f"the sparse release supports the post-processings {', '.join(METHODS)}; "
                         f"got {method!r}")
    if not 1 <= k <= release.keep or top_n < 1:
        raise ValueError(f"k must be between 1 and the {release.keep} top cells the release "
                         f"kept, and top_n at least 1; got k={k}, top_n={top_n}.")
    od = release.od
    t = od.counts.astype(float)
    n, d = float(t.sum()), od.domain_size
    raw_total = float(release.nonzero.sum()) + release.zeros.total()
    r, zeros = release.nonzero, release.zeros
    if method != "base":
        r, zeros = np.maximum(r, 0.0), zeros.clipped()
    out = dict.fromkeys(metrics.METRICS, math.nan)
    error = r - t
    sse = float(np.sum(error * error)) + zeros.total_sq()
    out["rmse"] = math.sqrt(sse / d)
    out["mae"] = (float(np.abs(error).sum()) + zeros.total_abs()) / d
    out["max_error"] = max(float(np.abs(error).max()), zeros.max_abs() if zeros.count else 0.0)
    for name in ("rmse", "mae", "max_error"):
        out[f"{name}_freq"] = out[name] / n if n else math.nan
    out["rmse_real"] = math.sqrt(float(np.mean(error ** 2)))
    out["pct_rmse"] = 100 * out["rmse_real"] / float(t.mean())

    true_top = top_cells(t, max(k, top_n))
    released = release.top_flat[:k]
    hits = np.intersect1d(od.flat_index[true_top[:k]], released).size
    out["topk_precision"] = hits / released.size if released.size else math.nan
    out["topk_recall"] = hits / min(k, true_top.size)
    out["spearman_rho"], out["kendall_tau"] = metrics._rank_correlations(t[true_top[:top_n]],
                                                                           r[true_top[:top_n]])
    present = r >= PRESENT_AT
    invented = zeros.sum_at_least(PRESENT_AT)
    present_trips = float(r[present].sum()) + invented
    out["false_zero_cells"] = float(t.size - np.count_nonzero(present))
    out["false_zero_share"] = float(t[~present].sum()) / n
    out["false_positive_cells"] = float(zeros.count_at_least(PRESENT_AT))
    out["false_positive_share"] = invented / present_trips if present_trips else math.nan
    out["erased_share"] = out["false_zero_cells"] / t.size
    shown = np.count_nonzero(present) + out["false_positive_cells"]
    out["invented_share"] = out["false_positive_cells"] / shown if shown else math.nan

    m_obs = np.maximum(r, 0.0)
    geh_obs = 2 * (m_obs - t) ** 2 < metrics.GEH_LIMIT ** 2 * (m_obs + t)
    positive_empty = zeros.count_positive()
    passing_empty = positive_empty - zeros.count_at_least(GEH_EMPTY_LIMIT)
    out["geh_pass_share"] = (np.count_nonzero(geh_obs) + passing_empty) / (t.size + positive_empty)
    t_ss = float(np.sum(t * t))
    out["cell_slope"] = float(np.sum(t * r)) / t_ss
    total_ss = t_ss - n * n / d
    out["cell_r2"] = 1.0 - sse / total_ss if total_ss > 0 else math.nan
    total = (max(raw_total, 0.0) if method == "post_pos"
             else float(r.sum()) + zeros.total())
    out["total_error_pct"] = 100 * (total - n) / n
    return {name: float(value) for name, value in out.items()}


def invented_in_top(release: SparseRelease, k: int = 10) -> int:
    """How many of the released top-k flows are empty cells (invented flows)."""
    return int(np.count_nonzero(~np.isin(release.top_flat[:k], release.od.flat_index)))
