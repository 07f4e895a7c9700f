"""The 95 % margin of error beside every published count, from the mechanism, its parameters and
the post-processing alone.

A planner reading ``release.csv`` needs to tell ±2 from ±200, as official statistics publish a
margin of error beside every estimate (the US Census Bureau's ACS prints a 90 % one). The noise's
law is public, so the margin can be computed without looking at the rows: it is the same for any
two neighbouring tables, and publishing it costs no privacy. Each margin m is a whole number of
commuters such that the published count c and the true count t satisfy |c − t| ≤ m with
probability at least 95 % (over the noise, for every true table); a count published as 0 reads
"between 0 and m".

* **Flat** (one level): the smallest whole m with P[|noise| ≤ m] ≥ 95 % for the publish's OpenDP
  noise, from OpenDP's accuracy functions (``discrete_laplacian_scale_to_accuracy``,
  ``discrete_gaussian_scale_to_accuracy``: they return a with P[|noise| ≥ a] ≤ α, so
  m = ⌈a⌉ − 1). Exact for the raw counts (coverage 95 % up to the discreteness); setting negative
  counts to 0 moves a count towards any true count t ≥ 0, never away, so the same m covers at
  least 95 % after it.
* **WLS** (two levels, :func:`dpcore.interfaces.publish.publish_levels`): a *simulation of the
  method's error on a public stand-in*. The error of least squares and of the rounding within
  parents does not depend on the counts at all (both act on the noise alone: the true counts are
  whole numbers), only on the number m of fine cells in each parent cell, which the public
  domain fixes; so the stand-in (a table of zeros over the same domain) has exactly the real
  table's error law. Per distinct m, :data:`DRAWS` draws of one fine cell's and one parent
  cell's error give the margin as an upper 99.9 % confidence bound on the 95 % quantile of the
  absolute error (so Monte Carlo error cannot make it too small). A fine cell's margin adds 1 for
  the rounding within its parent (it moves the cell by less than 1); a parent's is exact, since
  it publishes its rounded least-squares count. With ``base_pos`` the fine counts stay covered
  (clipping only moves towards the truth), but a parent becomes the sum of its clipped children,
  biased upwards by an amount that depends on how many of them are empty — confidential —, so
  no parent margin is published then (the column is empty on those rows, and the manifest says
  why).
* **TopDown** (:func:`dpcore.interfaces.publish.publish_topdown`): the *bound* of
  :func:`dpcore.mechanisms.topdown.error_bound` at β = 5 %, which holds for every cell of every
  level at once (the discrete Gaussian is σ²-subgaussian, union bound over the cells): a single
  cell is covered far more often than 95 %, so this margin is conservative.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.mechanisms import topdown

#: The column of ``release.csv`` that holds each count's margin.
COLUMN = "margin_of_error_95"
CONFIDENCE = 0.95
#: Simulated draws per distinct number of fine cells in a parent (WLS), and the confidence of
#: the order statistic taken as the margin (an upper bound on the 95 % quantile).
DRAWS = 20_000
QUANTILE_CONFIDENCE = 0.999
#: The simulation's seed: the margins are reproducible, and the seed is public (it draws no
#: privacy noise, only the stand-in's errors).
SIMULATION_SEED = 20_250_530


def noise_margin(mechanism: str, scale: float, confidence: float = CONFIDENCE) -> int:
    """Smallest whole m with P[|noise| ≤ m] ≥ ``confidence`` for OpenDP's discrete Laplace
    (``mechanism`` "discrete_laplace") or discrete Gaussian ("gaussian") at ``scale``."""
    from opendp import accuracy

    alpha = 1.0 - confidence
    if mechanism == "discrete_laplace":
        tolerance = accuracy.discrete_laplacian_scale_to_accuracy(float(scale), alpha)
    elif mechanism == "gaussian":
        tolerance = accuracy.discrete_gaussian_scale_to_accuracy(float(scale), alpha)
    else:
        raise ValueError(f"margins are for discrete_laplace or gaussian noise; got {mechanism!r}")
    return max(math.ceil(tolerance) - 1, 0)


def discrete_gaussian(rng: np.random.Generator, sigma: float, size: int) -> np.ndarray:
    """Draws of the discrete Gaussian N_Z(0, σ²) (Canonne, Kamath, Steinke 2020) from its mass
    function over |z| ≤ 12σ + 2 (the mass beyond is below 10⁻³¹)."""
    support = np.arange(-math.ceil(12 * sigma) - 2, math.ceil(12 * sigma) + 3)
    mass = np.exp(-support.astype(float) ** 2 / (2 * sigma ** 2))
    return rng.choice(support, size=size, p=mass / mass.sum())


def _gaussian_sum_law(sigma: float, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Support and mass of the sum of ``cells`` independent discrete Gaussians N_Z(0, σ²): the
    single law's mass to the power ``cells`` in Fourier space (a circular convolution on a grid
    wide enough that nothing wraps: ±(12σ√cells + 12σ + 2), beyond which the mass is below
    10⁻³¹)."""
    reach = math.ceil(12 * sigma * math.sqrt(cells) + 12 * sigma) + 2
    size = 1 << (2 * reach + 1).bit_length()
    one = math.ceil(12 * sigma) + 2
    support = np.arange(-one, one + 1)
    mass = np.exp(-support.astype(float) ** 2 / (2 * sigma ** 2))
    grid = np.zeros(size)
    grid[support % size] = mass / mass.sum()
    total = np.fft.irfft(np.fft.rfft(grid) ** cells, size)
    values = np.arange(-reach, reach + 1)
    law = np.clip(total[values % size], 0.0, None)
    return values, law / law.sum()


def _noise_sums(mechanism: str, scale: float, cells: int, rng, size: int) -> np.ndarray:
    """``size`` draws of the sum of ``cells`` independent noises of the publish's law. Discrete
    Laplace: a difference of two negative binomials (each noise is a difference of two
    geometrics). Discrete Gaussian: from the sum's law (:func:`_gaussian_sum_law`)."""
    if cells == 0:
        return np.zeros(size)
    if mechanism == "discrete_laplace":
        p = 1.0 - math.exp(-1.0 / scale)
        return (rng.negative_binomial(cells, p, size) - rng.negative_binomial(cells, p, size)
                ).astype(float)
    if cells == 1:
        return discrete_gaussian(rng, scale, size).astype(float)
    values, law = _gaussian_sum_law(scale, cells)
    return rng.choice(values, size=size, p=law).astype(float)


def upper_quantile(absolute: np.ndarray, confidence: float = CONFIDENCE,
                   sure: float = QUANTILE_CONFIDENCE) -> float:
    """An order statistic of ``absolute`` that is at least its law's ``confidence`` quantile with
    probability ``sure`` (the j-th smallest, j from the binomial law of the count below it)."""
    j = int(stats.binom.ppf(sure, absolute.size, confidence)) + 1
    return float(np.sort(absolute)[min(j, absolute.size) - 1])


def wls(children: np.ndarray, mechanism: str, fine_scale: float, coarse_scale: float,
        fine_variance: float, coarse_variance: float, postprocess: str,
        draws: int = DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """Margins of a WLS publish (module docstring): per parent cell with ``children[p]`` fine
    cells, the margin of each of its fine cells and its own (NaN under ``base_pos``).

    A fine cell's error before rounding is z_i − (w/m)(Σ_j z_j − z_p) and its parent's
    (1 − w)Σ_j z_j + w·z_p, with w = m·v_f/(m·v_f + v_c) (:func:`publish.least_squares`); the
    rounding within parents moves a fine cell to ⌊·⌋ or ⌊·⌋ + 1 of its value (so its error to at
    most ⌊|e|⌋ + 1) and gives the parent its rounded count."""
    children = np.asarray(children, dtype=np.int64)
    fine = np.zeros(children.size, dtype=np.int32)   # indexed by fine cell: kept small
    parent = np.zeros(children.size)
    rng = np.random.default_rng(SIMULATION_SEED)
    for m in np.unique(children[children > 0]):
        m = int(m)
        weight = m * fine_variance / (m * fine_variance + coarse_variance)
        own = _noise_sums(mechanism, fine_scale, 1, rng, draws)
        siblings = _noise_sums(mechanism, fine_scale, m - 1, rng, draws)
        coarse = _noise_sums(mechanism, coarse_scale, 1, rng, draws)
        error = own - weight / m * (own + siblings - coarse)
        where = children == m
        fine[where] = math.floor(upper_quantile(np.abs(error))) + 1
        parent_error = np.rint((1 - weight) * (own + siblings) + weight * coarse)
        parent[where] = upper_quantile(np.abs(parent_error))
    if postprocess == "base_pos":
        parent[children > 0] = np.nan
    return fine, parent   # parents without fine cells are 0 by construction: margin 0


def column(margin: np.ndarray, cells: np.ndarray):
    """The margins of the listed ``cells``: whole numbers, empty where there is none (NaN)."""
    values = np.asarray(margin)[cells]
    if values.dtype.kind == "f":
        return pd.array(values, dtype="Int64")   # NaN → empty cell in release.csv
    return values


def topdown_margins(scales: list[float], cells: list[int],
                    confidence: float = CONFIDENCE) -> list[int]:
    """Per level (coarse → fine), :func:`topdown.error_bound` at β = 1 − confidence, floored
    (the errors are whole numbers)."""
    return [math.floor(bound) for bound in topdown.error_bound(scales, cells, 1 - confidence)]


FLAT_HOW = ("from the mechanism and its scale alone: the smallest whole m with P[|noise| ≤ m] ≥ "
            "95 % for the OpenDP noise drawn (OpenDP's {function}, m = ⌈accuracy⌉ − 1)")
WLS_HOW = ("simulation of the method's error on a public stand-in (a table of zeros over the "
           "same domain): the least-squares and rounding errors do not depend on the counts, only "
           "on the number of fine cells in each parent, so the stand-in has the real table's "
           f"error law; {DRAWS:,} draws per parent size, seed {SIMULATION_SEED}, the margin an "
           f"upper {QUANTILE_CONFIDENCE:.1%} confidence bound on the 95 % quantile of the absolute "
           "error; fine cells +1 for the rounding within parents")
TOPDOWN_HOW = ("the bound of the TopDown fit (each level adds at most twice its largest noise to "
               "the error of the level above; discrete Gaussian σ²-subgaussian, union bound over "
               "every cell of every level at β = 5 %): it holds for all cells at once, so a "
               "single cell is covered far more often than 95 % (conservative)")
MEANING = ("the true count lies within the published count ± this margin with probability at "
           "least 95 % (over the noise, whatever the true table); counts set to 0 or clipped at 0 "
           "only move towards the truth, so the margin still holds, and a count published as 0 "
           "reads 'between 0 and the margin'. A cell not listed in release.csv is published as 0 "
           "with its level's margin (see 'levels'). It is computed from the mechanism, its "
           "parameters and the post-processing alone, never from the rows.")
WLS_CLIPPED_PARENTS = ("no margin on the parent rows: with base_pos each parent is the sum of its "
                       "clipped fine cells, biased upwards by an amount that depends on how many "
                       "of them are empty (confidential); publish with base for parent margins")


def manifest_entry(how: str, extra: str = "") -> dict:
    """The manifest's ``margin_of_error``: the column, what it means and how it was computed."""
    entry = {"column": COLUMN, "confidence": CONFIDENCE, "meaning": MEANING, "how": how}
    if extra:
        entry["note"] = extra
    return entry


def sentence(table, entry: dict) -> str:
    """What the page says about a publish's margins: their range in ``table`` (release.csv's
    rows) and how they were computed (the manifest's ``margin_of_error``)."""
    shown = table[COLUMN].dropna()
    if shown.empty:
        span = "no margin on these rows"
    else:
        low, high = int(shown.min()), int(shown.max())
        span = (f"± {low:,} commuters on every row" if low == high
                else f"from ± {low:,} to ± {high:,} commuters")
    missing = int(table[COLUMN].isna().sum())
    note = f" ({missing:,} rows without one: {entry['note']})" if missing and "note" in entry \
        else ""
    return (f"Every count in release.csv carries its 95 % margin of error (column {COLUMN}): "
            f"{span}{note}. How: {entry['how']}.")
