"""How far a released OD matrix is from the true one: statisticians' errors and planners' checks.

:func:`compute` returns every metric of :data:`METRICS` for one release, as plain floats under stable
names (the experiment runner, the command line and the pages all use them). :func:`planner_checks`
turns them into the pass/fail acceptance checks transport modellers apply to a modelled matrix
(TAG M3.1, TxDOT; see the project's planner notes). Both work on dense vectors over the whole domain
(zeros included) and are vectorised: the Irish ED level (9.8 M cells) takes well under a second
after the first call on a matrix, which measures its trip lengths once (:mod:`dpcore.data.geo`).

Definitions (t = true count, r = released count of a cell, n = Σt, d = |X| cells):

* **rmse, mae, max_error** over all d cells, in commuters; ``*_freq``: the same divided by n (the
  relative-frequency scale of the thesis).
* **rmse_real**: RMSE over the real commutes (t > 0) only, in commuters. On a huge, mostly empty
  domain the RMSE over all d cells is dominated by the empty cells, so a mechanism that releases
  almost everything as 0 scores best there while erasing the commutes; this one shows it.
* **pct_rmse**: RMSE as a percentage of the mean true flow, both over the *observed* flows (t > 0),
  as traffic validation computes %RMSE over counted links. Invented flows are counted separately.
* **A flow is present** in the release when r ≥ 0.5, i.e. it shows as at least one commuter once
  rounded to whole numbers (for Base, Base-Pos and the other real-valued outputs too).
  **False zero cells**: t > 0 but not present, and **erased_share** their share of the real
  commutes (false zeros / #{t > 0}); **false positive (invented) flows**: t = 0 but present, with
  their share of the released trips (Σ r over invented flows / Σ r over present ones) and
  **invented_share** their share of the released commutes (invented / #{r ≥ 0.5}).
* **top-k precision / recall**: the k largest true flows (t > 0) against the k largest present
  released flows; ties are broken by flat index. They differ only when fewer than k flows are present.
* **spearman_rho, kendall_tau** (τ-b): released against true counts over the top-N true flows.
* **GEH** = √(2(M−C)²/(M+C)) with C = t, M = max(r, 0); share of cells with GEH < 5 among cells with
  M > 0 or C > 0.
* **Regressions** (trip ends: origin and destination totals; cells: the whole domain) of released
  (y) on true (x): the least-squares *slope through the origin* Σxy/Σx², and **R² about the line
  y = x**, 1 − Σ(y−x)²/Σ(x−x̄)² (ATAP's "R² against y = x"; it can be negative). An intercept-OLS R²
  would pass a matrix that is off by a constant factor; this one does not.
* **Trip lengths** (zone-to-zone great-circle km; cells to zones without coordinates are excluded and
  reported): mean and standard deviation with the released values as published (negatives
  included — clipping them turns the noise on the many empty cells into extra trips and inflates
  the mean), relative to the truth; the *distributions* use max(r, 0) as weights: Wasserstein-1 in
  km (scipy, on 0.1 km length bins, so within 0.1 km of the unbinned value) and the coincidence
  ratio Σmin/Σmax of the two normalised distributions in ``bin_km`` bins.
* **wasserstein_hist**: the whole-histogram metric of a thesis draft's low-population experiments
  with Microsoft's dBitFlip (Ding, Kulkarni, Yekhanin, "Collecting telemetry data privately",
  NeurIPS 2017): the Wasserstein distance between the true and the released histogram
  (negatives truncated to 0, both normalised) with the buckets on a line — here the cells in flat
  index order, one unit per cell. Cells of an OD domain have no natural order, so this compares
  releases of the same dataset; the trip-length W1 is the geographic version.
* **Sector matrix**: flows summed to the parent level (e.g. ED → county), when the matrix has one:
  weighted absolute percentage error Σ|R−T|/ΣT and the share of non-empty sector flows within 5 %.
* **Self-containment**, for zones that are both an origin and a destination (same id): supply side
  t_zz / origin total (resident workers who work in the zone), demand side t_zz / destination total
  (workers who live in it). Mean absolute error in percentage points, and the number of zones whose
  travel-to-work-area test (both sides ≥ 75 %, or ≥ 2/3) has a different outcome in the release
  (zones whose true test is undefined, having no residents or workers, are not counted).
  Other special destinations (e.g. "Work/school from home") count as leaving the zone.

When ``raw`` (the unprocessed estimates) is given, aggregate queries — trip ends, total, mean trip
length, sector flows and self-containment denominators — are answered from it and clipped at 0,
which is Post-Pos (Wang et al.) for queries; otherwise they are sums of the released cells.
"""

from __future__ import annotations

import math
import warnings
import weakref
from dataclasses import dataclass

import numpy as np
from scipy import sparse, stats

from dpcore.data import geo
from dpcore.data.od import ODMatrix
from dpcore.mechanisms.base import occupied_cells
from dpcore.scoring.ranks import PRESENT_AT, top_cells

#: Width of the length bins on which the trip-length W1 is computed (its error is below this).
FINE_BIN_KM = 0.1
#: Travel-to-work-area self-containment thresholds (ONS): 75 %, and 66.7 % for large areas.
SELF_CONTAINMENT_THRESHOLDS = (0.75, 2 / 3)
GEH_LIMIT = 5.0


@dataclass(frozen=True)
class MetricInfo:
    """How to show a metric: label, unit, and which direction is better.

    ``better`` is "lower", "higher" or "zero" (a signed error: closest to 0 is best).
    """

    label: str
    unit: str
    better: str
    description: str


_INFO = MetricInfo
#: Every metric :func:`compute` returns, in display order.
METRICS: dict[str, MetricInfo] = {
    "rmse": _INFO("RMSE", "commuters", "lower", "Root mean squared error per cell, whole domain."),
    "rmse_real": _INFO("RMSE (real commutes)", "commuters", "lower",
                       "Root mean squared error over the real (non-empty) commutes only."),
    "mae": _INFO("MAE", "commuters", "lower", "Mean absolute error per cell, whole domain."),
    "max_error": _INFO("Max error (L∞)", "commuters", "lower", "Largest absolute cell error."),
    "rmse_freq": _INFO("RMSE (frequency)", "share of n", "lower", "RMSE divided by n."),
    "mae_freq": _INFO("MAE (frequency)", "share of n", "lower", "MAE divided by n."),
    "max_error_freq": _INFO("Max error (frequency)", "share of n", "lower",
                            "Largest absolute cell error divided by n."),
    "pct_rmse": _INFO("%RMSE", "%", "lower",
                      "RMSE over observed flows as a percentage of their mean true count."),
    "topk_precision": _INFO("Top-k precision", "share", "higher",
                            "Share of the released top-k flows that are true top-k flows."),
    "topk_recall": _INFO("Top-k recall", "share", "higher",
                         "Share of the true top-k flows found in the released top-k."),
    "spearman_rho": _INFO("Spearman ρ (top-N)", "", "higher",
                          "Rank correlation of released with true counts over the top-N true flows."),
    "kendall_tau": _INFO("Kendall τ (top-N)", "", "higher",
                         "Kendall's τ-b of released with true counts over the top-N true flows."),
    "false_zero_cells": _INFO("False zero cells", "cells", "lower",
                              "Real flows released as zero (below 0.5 commuters)."),
    "false_zero_share": _INFO("Trips in false zeros", "share of n", "lower",
                              "Share of true trips in flows released as zero."),
    "erased_share": _INFO("Real commutes erased", "share", "lower",
                          "Share of the real (non-empty) commutes released as zero."),
    "false_positive_cells": _INFO("Invented flows", "cells", "lower",
                                  "Empty cells released as a flow (0.5 commuters or more)."),
    "false_positive_share": _INFO("Trips in invented flows", "share", "lower",
                                  "Share of released trips that are in invented flows."),
    "invented_share": _INFO("Released commutes invented", "share", "lower",
                            "Share of the commutes released as non-zero that are empty in truth."),
    "geh_pass_share": _INFO("GEH < 5", "share", "higher",
                            "Share of cells with GEH < 5, over cells where either value is > 0."),
    "cell_slope": _INFO("Cells: slope", "", "higher", "Slope through the origin, released on true."),
    "cell_r2": _INFO("Cells: R²", "", "higher", "R² about y = x, released on true."),
    "origin_slope": _INFO("Origin totals: slope", "", "higher",
                          "Trip ends (productions): slope through the origin."),
    "origin_r2": _INFO("Origin totals: R²", "", "higher", "Trip ends (productions): R² about y = x."),
    "destination_slope": _INFO("Destination totals: slope", "", "higher",
                               "Trip ends (attractions): slope through the origin."),
    "destination_r2": _INFO("Destination totals: R²", "", "higher",
                            "Trip ends (attractions): R² about y = x."),
    "origin_total_rmse": _INFO("Origin totals: RMSE", "commuters", "lower",
                               "RMSE of the residents per origin zone."),
    "origin_total_mape": _INFO("Origin totals: mean % error", "%", "lower",
                               "Mean absolute % error over origins with residents."),
    "destination_total_rmse": _INFO("Destination totals: RMSE", "commuters", "lower",
                                    "RMSE of the workers per destination zone."),
    "destination_total_mape": _INFO("Destination totals: mean % error", "%", "lower",
                                    "Mean absolute % error over destinations with workers."),
    "total_error_pct": _INFO("Total trips: error", "%", "zero",
                             "Released total minus n, as a % of n."),
    "trip_length_mean_error_pct": _INFO("Mean trip length: error", "%", "zero",
                                        "Relative error of the mean trip length."),
    "trip_length_sd_error_pct": _INFO("Trip length s.d.: error", "%", "zero",
                                      "Relative error of the trip-length standard deviation."),
    "trip_length_w1_km": _INFO("Trip-length W1", "km", "lower",
                               "Wasserstein-1 distance between the trip-length distributions."),
    "trip_length_coincidence": _INFO("Trip-length coincidence ratio", "share", "higher",
                                     "Σmin/Σmax of the binned trip-length distributions."),
    "trip_length_excluded_cells": _INFO("Flows without a length", "cells", "lower",
                                        "True flows to or from zones without coordinates."),
    "trip_length_excluded_share": _INFO("Trips without a length", "share of n", "lower",
                                        "Share of true trips excluded from trip-length metrics."),
    "wasserstein_hist": _INFO("Histogram W1 over cell index", "cells", "lower",
                              "Wasserstein distance between the histograms over the cell index."),
    "sector_wape": _INFO("Sector flows: weighted % error", "%", "lower",
                         "Σ|R−T|/ΣT over the parent-level (sector) matrix."),
    "sector_within_5pct": _INFO("Sector flows within 5 %", "share", "higher",
                                "Share of non-empty sector flows within 5 % of the truth."),
    "self_containment_supply_mae": _INFO("Self-containment (supply): error", "pp", "lower",
                                         "Mean absolute error, percentage points."),
    "self_containment_demand_mae": _INFO("Self-containment (demand): error", "pp", "lower",
                                         "Mean absolute error, percentage points."),
    "self_containment_crossings_75": _INFO("Zones crossing 75 %", "zones", "lower",
                                           "Zones whose TTWA test at 75 % flips."),
    "self_containment_crossings_667": _INFO("Zones crossing 66.7 %", "zones", "lower",
                                            "Zones whose TTWA test at 66.7 % flips."),
}


# ------------------------------------------------------------------------------ per-matrix layout
@dataclass(frozen=True)
class _Layout:
    """Zone structure of a matrix that every call needs; built once per ODMatrix."""

    shape: tuple[int, int]
    lengths: np.ndarray          # km per cell, 0 where unknown (for dot products)
    lengths_sq: np.ndarray
    fine_bin: np.ndarray         # 0.1 km bin per cell; n_fine_bins where unknown
    n_fine_bins: int
    unknown_cells: np.ndarray    # flat indices without a length
    sector_rows: sparse.csr_matrix | None  # parent × origin indicator
    sector_cols: sparse.csr_matrix | None  # destination × parent indicator
    shared_cells: np.ndarray     # flat index of (z, z) for zones that are origin and destination
    shared_origin: np.ndarray
    shared_destination: np.ndarray


_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _indicator(parent_positions: np.ndarray, n_parents: int) -> sparse.csr_matrix:
    ones = np.ones(len(parent_positions))
    return sparse.csr_matrix((ones, (parent_positions, np.arange(len(parent_positions)))),
                             shape=(n_parents, len(parent_positions)))


def _layout(od: ODMatrix) -> _Layout:
    cached = _LAYOUTS.get(od)
    if cached is not None:
        return cached
    raw_lengths = geo.domain_lengths(od)
    known = np.isfinite(raw_lengths)
    lengths = np.where(known, raw_lengths, 0.0)
    n_fine = int(lengths.max() // FINE_BIN_KM) + 1 if known.any() else 0
    fine_bin = np.where(known, lengths // FINE_BIN_KM, n_fine).astype(np.int32)
    sector_rows = sector_cols = None
    if od.has_parent_level:
        o_parent = od.origins.parent_zones.index_of(od.origins.parent)
        d_parent = od.destinations.parent_zones.index_of(od.destinations.parent)
        sector_rows = _indicator(o_parent, len(od.origins.parent_zones))
        sector_cols = _indicator(d_parent, len(od.destinations.parent_zones)).T.tocsr()
    shared = np.intersect1d(od.origins.ids, od.destinations.ids)
    o_pos, d_pos = od.origins.index_of(shared), od.destinations.index_of(shared)
    layout = _Layout(shape=(od.n_origins, od.n_destinations), lengths=lengths,
                     lengths_sq=lengths ** 2, fine_bin=fine_bin, n_fine_bins=n_fine,
                     unknown_cells=np.flatnonzero(~known), sector_rows=sector_rows,
                     sector_cols=sector_cols, shared_cells=o_pos * od.n_destinations + d_pos,
                     shared_origin=o_pos, shared_destination=d_pos)
    _LAYOUTS[od] = layout
    return layout


def _flat_counts(true_counts) -> np.ndarray:
    """The true counts as a flat numeric array; integer counts are not copied to float (r − t is
    float64 either way, exactly while counts stay below 2⁵³)."""
    t = np.asarray(true_counts)
    if t.dtype.kind not in "iuf":
        t = t.astype(float)
    return t if t.ndim == 1 else t.reshape(-1)


# ------------------------------------------------------------------------------------- helpers
def _ratio(numerator, denominator) -> float:
    return float(numerator / denominator) if denominator else math.nan


def _slope_r2(x: np.ndarray, y: np.ndarray, residual_ss: float | None = None) -> tuple[float, float]:
    """Slope through the origin of y on x, and R² of y about the line y = x."""
    x_ss = float(np.dot(x, x))
    if residual_ss is None:
        residual_ss = float(np.sum((y - x) ** 2))
    total_ss = x_ss - float(x.sum()) ** 2 / x.size if x.size else 0.0
    return _ratio(float(np.dot(x, y)), x_ss), (1.0 - residual_ss / total_ss if total_ss > 0
                                                  else math.nan)


def _rmse_mape(true: np.ndarray, released: np.ndarray) -> tuple[float, float]:
    error = released - true
    observed = true > 0
    mape = 100 * float(np.mean(np.abs(error[observed]) / true[observed])) if observed.any() \
        else math.nan
    return float(np.sqrt(np.mean(error ** 2))) if error.size else math.nan, mape


def _rank_correlations(true_top: np.ndarray, released_top: np.ndarray) -> tuple[float, float]:
    if true_top.size < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():  # constant input: the correlation is undefined (NaN)
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        rho = stats.spearmanr(true_top, released_top).statistic
        tau = stats.kendalltau(true_top, released_top).statistic
    return float(rho), float(tau)


def _mean_sd(weights_dot_length: float, weights_dot_length_sq: float,
             weight: float) -> tuple[float, float]:
    if weight <= 0:
        return math.nan, math.nan
    mean = weights_dot_length / weight
    variance = weights_dot_length_sq / weight - mean ** 2
    return mean, math.sqrt(variance) if variance >= 0 else math.nan


def _relative_error_pct(estimate: float, truth: float) -> float:
    return 100 * (estimate - truth) / truth if truth else math.nan


def _w1_on_line(difference: np.ndarray) -> float:
    """W1 between two distributions on 0, 1, 2, … given the difference of their frequencies:
    Σ|F_u − F_v| (the CDF form; O(d), where scipy's sort-based one takes seconds at 9.8 M cells).
    Overwrites ``difference``."""
    np.cumsum(difference, out=difference)
    np.abs(difference, out=difference)
    return float(difference[:-1].sum())


def _self_containment(diagonal, origin_totals, destination_totals, layout: _Layout):
    with np.errstate(divide="ignore", invalid="ignore"):
        supply = diagonal / origin_totals[layout.shared_origin]
        demand = diagonal / destination_totals[layout.shared_destination]
    supply[~np.isfinite(supply)] = np.nan
    demand[~np.isfinite(demand)] = np.nan
    return supply, demand


# ------------------------------------------------------------------------------------- compute
#: Cells :func:`_cell_pass` reads at a time: its temporaries stay in the CPU cache (512 KB).
CELL_CHUNK = 1 << 16


@dataclass(frozen=True)
class _CellSums:
    """What :func:`_cell_pass` adds up over the cells (the unasked ones stay 0)."""

    squared_error: float
    absolute_error: float
    max_error: float
    present: int
    present_trips: float


def _cell_pass(r: np.ndarray, observed: np.ndarray, t_obs: np.ndarray, absolute: bool,
               presence: bool, trips: bool) -> _CellSums:
    """Σ(r − t)², and when asked Σ|r − t| and max |r − t|, the cells present (r ≥ 0.5), and
    their released trips, in one pass over r. r − t is r outside the occupied cells (t = 0
    there), so each chunk's error is a copy of r corrected at the chunk's occupied cells: no
    error vector over the domain (at ED level 78 MB written and read again per release, and
    the presence mask's float conversion another 78 MB). The chunks' sums are ``einsum``, not
    ``np.dot``: a BLAS dot per chunk keeps OpenBLAS's threads spinning through the whole pass
    in a process that has not limited them (:mod:`dpcore.blas`), 1.2 s of CPU instead of 0.01 s."""
    d = r.size
    starts = np.arange(0, d, CELL_CHUNK)
    bounds = np.searchsorted(observed, np.append(starts, d))
    error = np.empty(min(d, CELL_CHUNK))
    squared = absolute_sum = present_trips = 0.0
    largest, present = [], 0
    mask = np.empty(error.size) if trips else None
    for i, start in enumerate(starts):
        part = r[start:start + CELL_CHUNK]
        chunk = error[:part.size]
        np.copyto(chunk, part)
        inside = slice(bounds[i], bounds[i + 1])
        chunk[observed[inside] - start] -= t_obs[inside]
        squared += float(np.einsum("i,i->", chunk, chunk))   # not BLAS: see the docstring
        if absolute:
            np.abs(chunk, out=chunk)
            absolute_sum += float(chunk.sum())
            largest.append(chunk.max())
        if presence:
            shown = part >= PRESENT_AT
            present += int(np.count_nonzero(shown))
            if trips:    # a product with the mask as floats (a masked sum is 7× slower)
                weights = mask[:part.size]
                np.copyto(weights, shown)
                present_trips += float(np.einsum("i,i->", part, weights))
    return _CellSums(squared, absolute_sum, float(np.max(largest)) if largest else math.nan,
                     present, present_trips)


#: Metrics of the cell errors alone: a few passes over the domain, so a sweep that needs only
#: these (the thesis's RMSE and maximum error) skips the rest, ~10× the cost at ED level.
CELL_ERRORS = ("rmse", "mae", "max_error", "rmse_freq", "mae_freq", "max_error_freq", "pct_rmse",
               "rmse_real")
#: Invented and lost commutes: a few more passes, so a page's one-line summary (these and the
#: RMSE) skips the rest too.
PRESENCE = ("false_zero_cells", "false_zero_share", "false_positive_cells",
            "false_positive_share", "erased_share", "invented_share")


def compute(true_counts, released, od: ODMatrix, k: int = 10, top_n: int = 100, *,
            bin_km: float = 2.0, raw=None, only=None) -> dict[str, float]:
    """Every metric of :data:`METRICS` for one release (definitions in the module docstring).

    Parameters
    ----------
    true_counts : array, shape (d,)
        True counts over the domain in flat-index order (``od.to_dense()``).
    released : array, shape (d,)
        What is published, after post-processing (may be negative or fractional).
    od : ODMatrix
        The true matrix: its zones give trip ends, lengths, sectors and self-containment.
    k, top_n : int
        Size of the top-k sets and of the top-N true flows used for rank correlations.
    bin_km : float
        Width of the trip-length bins of the coincidence ratio (rounded to a multiple of 0.1 km).
    raw : array, shape (d,), optional
        Unprocessed estimates; when given, aggregate queries are answered from it and clipped at 0
        (Post-Pos).
    only : iterable of str, optional
        Return just these metrics; when all are in :data:`CELL_ERRORS` the others are not computed.

    Returns
    -------
    dict of str to float
        NaN where a metric does not apply (no coordinates, no parent level, nothing to rank).
    """
    t = _flat_counts(true_counts)
    r = np.asarray(released, dtype=float).reshape(-1)
    d = od.domain_size
    if t.size != d or r.size != d:
        raise ValueError(f"true_counts and released must have one value per cell of {od.name} "
                         f"({d:,}); got {t.size:,} and {r.size:,}.")
    if k < 1 or top_n < 1:
        raise ValueError(f"k and top_n must be at least 1; got k={k}, top_n={top_n}.")
    if bin_km < FINE_BIN_KM:
        raise ValueError(f"bin_km must be at least {FINE_BIN_KM} km; got {bin_km}.")
    names = METRICS if only is None else tuple(only)
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; valid: {', '.join(METRICS)}")
    observed, values = occupied_cells(t)  # found once per read-only truth (a sweep's trial)
    n, t_obs = float(values.sum()), values.astype(float)
    out: dict[str, float] = {}

    # cell errors and presence: one pass over the release, a cache-sized chunk at a time
    wanted = set(names)
    absolute = bool(wanted & {"mae", "mae_freq", "max_error", "max_error_freq"})
    presence = not wanted <= set(CELL_ERRORS)
    r_obs = r[observed]
    cells = _cell_pass(r, observed, t_obs, absolute, presence,
                       trips="false_positive_share" in wanted or not wanted <= set(CELL_ERRORS
                                                                                + PRESENCE))
    out["rmse"] = math.sqrt(cells.squared_error / d)
    out["rmse_freq"] = _ratio(out["rmse"], n)
    if absolute:                                       # not in a page's summary
        out["max_error"] = cells.max_error
        out["max_error_freq"] = _ratio(out["max_error"], n)
        out["mae"] = cells.absolute_error / d
        out["mae_freq"] = _ratio(out["mae"], n)
    if wanted & {"pct_rmse", "rmse_real"}:
        out["rmse_real"] = math.sqrt(np.mean((r_obs - t_obs) ** 2)) if observed.size else math.nan
        out["pct_rmse"] = 100 * out["rmse_real"] / t_obs.mean() if observed.size else math.nan
    if not presence:
        return {name: float(out[name]) for name in names}

    # presence ---------------------------------------------------------------------------------
    present_obs = r_obs >= PRESENT_AT
    out["false_zero_cells"] = float(observed.size - np.count_nonzero(present_obs))
    out["false_zero_share"] = _ratio(float(t_obs[~present_obs].sum()), n)
    out["false_positive_cells"] = float(cells.present - np.count_nonzero(present_obs))
    out["false_positive_share"] = _ratio(cells.present_trips - float(r_obs[present_obs].sum()),
                                         cells.present_trips)
    out["erased_share"] = _ratio(out["false_zero_cells"], observed.size)
    out["invented_share"] = _ratio(out["false_positive_cells"], cells.present)
    if wanted <= set(CELL_ERRORS + PRESENCE):
        return {name: float(out[name]) for name in names}

    t = np.asarray(t, dtype=float)
    layout = _layout(od)
    query = r if raw is None else np.asarray(raw, dtype=float).reshape(-1)

    # top-k and ranks: the k-th largest released value is at least the smallest released value
    # of any k cells, so only cells above that can be in the released top-k.
    true_top = observed[top_cells(t_obs, max(k, top_n))]
    floor = max(PRESENT_AT, float(r[true_top[:k]].min())) if true_top.size >= k else PRESENT_AT
    candidates = np.flatnonzero(r >= floor)
    released_top = candidates[top_cells(r[candidates], k)]
    hits = np.intersect1d(true_top[:k], released_top).size
    out["topk_precision"] = _ratio(hits, released_top.size)
    out["topk_recall"] = _ratio(hits, min(k, true_top.size))
    out["spearman_rho"], out["kendall_tau"] = _rank_correlations(t[true_top[:top_n]],
                                                                   r[true_top[:top_n]])

    # GEH < 5 ⇔ 2(M−C)² < 25(M+C). Empty true cells pass iff 0 < M < 12.5.
    m_obs = np.maximum(r_obs, 0.0)
    geh_obs = 2 * (m_obs - t_obs) ** 2 < GEH_LIMIT ** 2 * (m_obs + t_obs)
    positive_empty = np.count_nonzero(r > 0) - np.count_nonzero(r_obs > 0)
    passing_empty = positive_empty - (np.count_nonzero(r >= GEH_LIMIT ** 2 / 2)
                                      - np.count_nonzero(r_obs >= GEH_LIMIT ** 2 / 2))
    out["geh_pass_share"] = _ratio(np.count_nonzero(geh_obs) + passing_empty,
                                   observed.size + positive_empty)

    # regressions and trip ends ----------------------------------------------------------------
    out["cell_slope"], out["cell_r2"] = _slope_r2(t, r, residual_ss=cells.squared_error)
    true_grid, query_grid = t.reshape(layout.shape), query.reshape(layout.shape)
    true_ends = {"origin": true_grid.sum(axis=1), "destination": true_grid.sum(axis=0)}
    query_ends = {"origin": query_grid.sum(axis=1), "destination": query_grid.sum(axis=0)}
    if raw is not None:
        query_ends = {side: np.maximum(v, 0.0) for side, v in query_ends.items()}
    for side in ("origin", "destination"):
        out[f"{side}_slope"], out[f"{side}_r2"] = _slope_r2(true_ends[side], query_ends[side])
        out[f"{side}_total_rmse"], out[f"{side}_total_mape"] = _rmse_mape(true_ends[side],
                                                                          query_ends[side])
    query_total = float(query.sum())
    if raw is not None:
        query_total = max(query_total, 0.0)
    out["total_error_pct"] = _relative_error_pct(query_total, n)

    # trip lengths -----------------------------------------------------------------------------
    positive = np.maximum(r, 0.0)
    out.update(_trip_length_metrics(t, observed, positive, query, n, layout, bin_km,
                                    raw is not None))

    # histogram Wasserstein distance over the cell index ---------------------------------------
    positive_mass = float(positive.sum())
    if n > 0 and positive_mass > 0:
        difference = positive * (-1.0 / positive_mass)
        difference[observed] += t_obs / n
        out["wasserstein_hist"] = _w1_on_line(difference)
    else:
        out["wasserstein_hist"] = math.nan

    # sectors and self-containment ------------------------------------------------------------
    out.update(_sector_metrics(true_grid, query_grid, layout, raw is not None))
    out.update(_self_containment_metrics(t, r, true_ends, query_ends, layout))
    return {name: float(out[name]) for name in names}


def _trip_length_metrics(t, observed, positive, query, n, layout: _Layout, bin_km, clip_queries):
    t_obs = t[observed]
    unknown_obs = layout.fine_bin[observed] == layout.n_fine_bins
    known_true = n - float(t_obs[unknown_obs].sum())
    out = {"trip_length_excluded_cells": float(np.count_nonzero(unknown_obs)),
           "trip_length_excluded_share": _ratio(n - known_true, n)}
    nan = dict.fromkeys(("trip_length_mean_error_pct", "trip_length_sd_error_pct",
                         "trip_length_w1_km", "trip_length_coincidence"), math.nan)
    if layout.n_fine_bins == 0 or known_true <= 0:
        return out | nan
    true_mean, true_sd = _mean_sd(float(np.dot(t_obs, layout.lengths[observed])),
                                  float(np.dot(t_obs, layout.lengths_sq[observed])), known_true)
    known_query = float(query.sum()) - float(query[layout.unknown_cells].sum())
    sums = [float(np.dot(query, layout.lengths)), float(np.dot(query, layout.lengths_sq))]
    if clip_queries:
        sums, known_query = [max(s, 0.0) for s in sums], max(known_query, 0.0)
    released_mean, released_sd = _mean_sd(*sums, known_query)
    out["trip_length_mean_error_pct"] = _relative_error_pct(released_mean, true_mean)
    out["trip_length_sd_error_pct"] = _relative_error_pct(released_sd, true_sd)

    bins = layout.n_fine_bins + 1  # the last bin collects cells without a length
    true_hist = np.bincount(layout.fine_bin[observed], weights=t_obs, minlength=bins)[:-1]
    released_hist = np.bincount(layout.fine_bin, weights=positive, minlength=bins)[:-1]
    if released_hist.sum() <= 0:
        return out | {"trip_length_w1_km": math.nan, "trip_length_coincidence": math.nan}
    centres = (np.arange(layout.n_fine_bins) + 0.5) * FINE_BIN_KM
    out["trip_length_w1_km"] = float(stats.wasserstein_distance(centres, centres, true_hist,
                                                                released_hist))
    group = max(1, round(bin_km / FINE_BIN_KM))
    starts = np.arange(0, layout.n_fine_bins, group)
    p = np.add.reduceat(true_hist, starts) / true_hist.sum()
    q = np.add.reduceat(released_hist, starts) / released_hist.sum()
    out["trip_length_coincidence"] = float(np.minimum(p, q).sum() / np.maximum(p, q).sum())
    return out


def _sector_metrics(true_grid, query_grid, layout: _Layout, clip_queries):
    if layout.sector_rows is None:
        return {"sector_wape": math.nan, "sector_within_5pct": math.nan}
    true_sectors = np.asarray(layout.sector_rows @ true_grid @ layout.sector_cols).reshape(-1)
    query_sectors = np.asarray(layout.sector_rows @ query_grid @ layout.sector_cols).reshape(-1)
    if clip_queries:
        query_sectors = np.maximum(query_sectors, 0.0)
    error = np.abs(query_sectors - true_sectors)
    non_empty = true_sectors > 0
    return {"sector_wape": 100 * _ratio(float(error.sum()), float(true_sectors.sum())),
            "sector_within_5pct": _ratio(
                np.count_nonzero(error[non_empty] <= 0.05 * true_sectors[non_empty]),
                np.count_nonzero(non_empty))}


def _self_containment_metrics(t, r, true_ends, query_ends, layout: _Layout):
    keys = ("self_containment_supply_mae", "self_containment_demand_mae",
            "self_containment_crossings_75", "self_containment_crossings_667")
    if layout.shared_cells.size == 0:
        return dict.fromkeys(keys, math.nan)
    true_sc = _self_containment(t[layout.shared_cells], true_ends["origin"],
                                true_ends["destination"], layout)
    released_sc = _self_containment(r[layout.shared_cells], query_ends["origin"],
                                    query_ends["destination"], layout)
    out = {}
    for key, truth, release in zip(keys[:2], true_sc, released_sc):
        both = np.isfinite(truth) & np.isfinite(release)
        out[key] = 100 * float(np.mean(np.abs(release[both] - truth[both]))) if both.any() \
            else math.nan
    defined = np.isfinite(true_sc[0]) & np.isfinite(true_sc[1])
    for key, threshold in zip(keys[2:], SELF_CONTAINMENT_THRESHOLDS):
        with np.errstate(invalid="ignore"):  # NaN (no workers) never meets a threshold
            meets_true = (true_sc[0] >= threshold) & (true_sc[1] >= threshold)
            meets_released = (released_sc[0] >= threshold) & (released_sc[1] >= threshold)
        out[key] = float(np.count_nonzero((meets_true != meets_released) & defined))
    return out


# ------------------------------------------------------------------------------- planner checks
@dataclass(frozen=True)
class PlannerCheck:
    """One acceptance check: the metric value, the rule it must meet, and whether it does.

    ``passed`` is None when the check does not apply (e.g. no parent level, no coordinates).
    """

    key: str
    label: str
    value: float
    threshold: str
    passed: bool | None
    source: str


_TAG = "UK DfT TAG M3.1"
#: (metric, label, rule text, test, source) in display order; each row's source names the guide
#: its threshold comes from (UK DfT TAG unit M3.1, TxDOT, ONS travel-to-work areas).
_CHECKS = (
    ("geh_pass_share", "Cells with GEH < 5", "≥ 85 %", lambda v: v >= 0.85,
     f"{_TAG} Table 2; TxDOT"),
    ("origin_slope", "Trip ends (origins): slope", "0.99–1.01", lambda v: 0.99 <= v <= 1.01, _TAG),
    ("origin_r2", "Trip ends (origins): R²", "> 0.98", lambda v: v > 0.98, _TAG),
    ("destination_slope", "Trip ends (destinations): slope", "0.99–1.01",
     lambda v: 0.99 <= v <= 1.01, _TAG),
    ("destination_r2", "Trip ends (destinations): R²", "> 0.98", lambda v: v > 0.98, _TAG),
    ("cell_slope", "Cell values: slope", "0.98–1.02", lambda v: 0.98 <= v <= 1.02, _TAG),
    ("cell_r2", "Cell values: R²", "> 0.95", lambda v: v > 0.95, _TAG),
    ("total_error_pct", "Total trips", "within ±5 %", lambda v: abs(v) <= 5, "TxDOT"),
    ("trip_length_mean_error_pct", "Mean trip length", "within ±5 %", lambda v: abs(v) <= 5, _TAG),
    ("trip_length_sd_error_pct", "Trip-length standard deviation", "within ±5 %",
     lambda v: abs(v) <= 5, _TAG),
    ("sector_wape", "Sector-to-sector flows (weighted error)", "≤ 5 %", lambda v: v <= 5, _TAG),
    ("self_containment_crossings_75", "Zones crossing the 75 % self-containment test", "0",
     lambda v: v == 0, "ONS travel-to-work areas"),
    ("self_containment_crossings_667", "Zones crossing the 66.7 % self-containment test", "0",
     lambda v: v == 0, "ONS travel-to-work areas"),
    ("false_positive_share", "Trips in invented flows", "≤ 5 %", lambda v: v <= 0.05,
     "no official threshold; TAG's 5 % tolerance"),
)


def planner_checks(values: dict[str, float]) -> list[PlannerCheck]:
    """The planners' acceptance checks for one release, from the output of :func:`compute`."""
    checks = []
    for key, label, rule, test, source in _CHECKS:
        value = float(values[key])
        checks.append(PlannerCheck(key, label, value, rule,
                                   None if math.isnan(value) else bool(test(value)), source))
    return checks
