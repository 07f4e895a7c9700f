"""Statistical checks shared by the mechanism tests, with tolerances derived from theory.

* :func:`assert_exact_ldp` — recipe A of MECHANISMS.md §10: from an exact output distribution
  ``P[x, y]`` the largest log-likelihood ratio equals ε (not more: private; not less: no waste).
* :func:`assert_unbiased` — recipe C: each cell's mean within a Bonferroni-corrected z bound of the
  truth, using the exact variance.
* :func:`assert_variance` — recipe D: each cell's sample variance inside the two-sided chi-square
  interval of the theoretical one (Bonferroni over cells).
* :func:`assert_same_distribution` — recipe E: fast release vs per-user simulation, per cell, means by
  a Welch z bound and variances by an F-test.

``alpha`` is the family-wise false-failure rate of one call; it is fixed (1e-4 by default), never tuned.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

ALPHA = 1e-4


def assert_exact_ldp(P: np.ndarray, epsilon: float, attained: bool = True, tol: float = 1e-9):
    """``P[x, y]`` = probability of output y given input x, enumerated from the definition."""
    P = np.asarray(P, dtype=float)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12, err_msg="rows must sum to 1")
    support = P > 0
    assert (support == support[0]).all(), "an output is possible for one input and not another"
    ratios = np.log(P[:, None, support[0]] / P[None, :, support[0]])
    worst = ratios.max()
    assert worst <= epsilon + tol, f"privacy loss {worst:.12g} exceeds epsilon {epsilon}"
    if attained:
        assert worst >= epsilon - tol, f"privacy loss {worst:.12g} below epsilon {epsilon}: waste"


def _bonferroni_z(alpha: float, cells: int) -> float:
    return float(stats.norm.isf(alpha / (2 * cells)))


def assert_unbiased(samples: np.ndarray, truth: np.ndarray, variance: np.ndarray,
                    alpha: float = ALPHA):
    """``samples`` has one row per run; ``variance`` is the exact per-cell variance of one run."""
    samples = np.asarray(samples, dtype=float)
    runs, cells = samples.shape
    variance = np.broadcast_to(np.asarray(variance, dtype=float), (cells,))
    truth = np.broadcast_to(np.asarray(truth, dtype=float), (cells,))
    fixed = variance == 0
    assert (samples[:, fixed] == truth[fixed]).all(), "a zero-variance cell is not exactly the truth"
    z = np.zeros(cells)
    z[~fixed] = (samples.mean(axis=0) - truth)[~fixed] / np.sqrt(variance[~fixed] / runs)
    bound = _bonferroni_z(alpha, cells)
    bad = np.flatnonzero(np.abs(z) > bound)
    assert not len(bad), (f"biased cells {bad.tolist()[:10]}: z = {z[bad][:10]} beyond ±{bound:.2f} "
                          f"({runs} runs)")


def assert_variance(samples: np.ndarray, variance: np.ndarray, alpha: float = ALPHA,
                    excess_kurtosis: float | None = None):
    """Sample variance of each cell inside the chi-square interval of ``variance``.

    The chi-square interval assumes normal samples. For heavy-tailed ones pass the exact
    ``excess_kurtosis`` of one sample (Laplace: 3); the interval then uses the normal approximation
    with the standard error sqrt(2/(R−1) + κ/R) of the variance ratio (MECHANISMS.md §10 D).
    """
    samples = np.asarray(samples, dtype=float)
    runs, cells = samples.shape
    dof = runs - 1
    if excess_kurtosis is None:
        lo = stats.chi2.ppf(alpha / (2 * cells), dof) / dof
        hi = stats.chi2.isf(alpha / (2 * cells), dof) / dof
    else:
        half = _bonferroni_z(alpha, cells) * np.sqrt(2 / dof + excess_kurtosis / runs)
        lo, hi = 1 - half, 1 + half
    ratio = samples.var(axis=0, ddof=1) / np.asarray(variance, dtype=float)
    bad = np.flatnonzero((ratio < lo) | (ratio > hi))
    assert not len(bad), (f"variance ratios {ratio[bad][:10]} of cells {bad.tolist()[:10]} outside "
                          f"[{lo:.3f}, {hi:.3f}] ({runs} runs)")


def assert_same_distribution(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA):
    """Two sets of runs (rows) of the same estimator agree per cell in mean and variance."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    cells = a.shape[1]
    va, vb = a.var(axis=0, ddof=1), b.var(axis=0, ddof=1)
    se = np.sqrt(va / len(a) + vb / len(b))
    live = se > 0
    z = np.zeros(cells)
    z[live] = (a.mean(axis=0) - b.mean(axis=0))[live] / se[live]
    bound = _bonferroni_z(alpha, cells)
    bad = np.flatnonzero(np.abs(z) > bound)
    assert not len(bad), f"means differ in cells {bad.tolist()[:10]}: z = {z[bad][:10]}"
    f_lo = stats.f.ppf(alpha / (2 * cells), len(a) - 1, len(b) - 1)
    f_hi = stats.f.isf(alpha / (2 * cells), len(a) - 1, len(b) - 1)
    ratio = np.ones(cells)
    both = (va > 0) & (vb > 0)
    ratio[both] = va[both] / vb[both]
    assert ((va > 0) == (vb > 0)).all(), "one sampler is deterministic where the other is not"
    bad = np.flatnonzero((ratio < f_lo) | (ratio > f_hi))
    assert not len(bad), (f"variances differ in cells {bad.tolist()[:10]}: ratio {ratio[bad][:10]} "
                          f"outside [{f_lo:.3f}, {f_hi:.3f}]")
