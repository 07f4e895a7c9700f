"""Statistical checks shared by the mechanism tests, with tolerances derived from theory.

* :func:`assert_exact_ldp` — recipe A of MECHANISMS.md §10: from an exact output distribution
  ``P[x, y]`` the largest log-likelihood ratio equals ε (not more: private; not less: no waste).
* :func:`assert_fits` — a real client's reports against that exact distribution (chi-square).
* :func:`assert_unbiased` — recipe C: each cell's mean within a Bonferroni-corrected z bound of the
  truth, using the exact variance.
* :func:`assert_variance` — recipe D: each cell's sample variance inside the two-sided chi-square
  interval of the theoretical one (Bonferroni over cells).
* :func:`assert_same_distribution` — recipe E: fast release vs per-user simulation, per cell, means by
  a Welch z bound and variances by an F-test.
* :func:`assert_variance_any_law`, :func:`assert_same_moments` — the same checks for samples of any
  law (Laplace tails, mostly-zero noise): the spread of a sample variance is σ²√(2/(R−1) + κ/R)
  with the excess kurtosis κ estimated from the samples (pooled over cells as a floor), so no
  normal-theory interval is assumed. Asymptotic (R in the thousands): the stated rate holds up to
  the normal approximation of s², which is poor only for cells that are rare-event mixtures.

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


def assert_fits(codes, probabilities, alpha: float = ALPHA):
    """Chi-square goodness of fit of observed output codes to exact probabilities, pooling every
    output whose expected count is below 5 into one cell (recipe A.6); impossible outputs fail."""
    codes = np.asarray(codes)
    observed = np.bincount(codes, minlength=len(probabilities))
    assert len(observed) == len(probabilities), "an output code outside the enumeration"
    assert observed[probabilities == 0].sum() == 0, "the client produced an impossible output"
    expected = probabilities * len(codes)
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp_ = np.append(expected[~small], expected[small].sum())
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    p = stats.chisquare(obs, exp_).pvalue
    assert p > alpha, f"chi-square p = {p:.2e} over {len(obs)} cells"


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


def _assert_same_means(a: np.ndarray, b: np.ndarray, alpha: float):
    """Welch z per cell (Bonferroni); two deterministic cells must be equal."""
    cells = a.shape[1]
    va, vb = a.var(axis=0, ddof=1), b.var(axis=0, ddof=1)
    assert ((va > 0) == (vb > 0)).all(), "one sampler is deterministic where the other is not"
    se = np.sqrt(va / len(a) + vb / len(b))
    live = se > 0
    fixed = np.flatnonzero(~live)
    assert (a[0, fixed] == b[0, fixed]).all(), f"deterministic cells {fixed.tolist()[:10]} differ"
    z = np.zeros(cells)
    z[live] = (a.mean(axis=0) - b.mean(axis=0))[live] / se[live]
    bound = _bonferroni_z(alpha, cells)
    bad = np.flatnonzero(np.abs(z) > bound)
    assert not len(bad), f"means differ in cells {bad.tolist()[:10]}: z = {z[bad][:10]}"
    return va, vb


def _kurtosis_floor_pooled(samples: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """Per column: the excess kurtosis m₄/σ⁴ − 3 estimated from the sample about σ² = ``variance``,
    but never below the average over the columns (pooled, hence stable where one column's own
    estimate is not: a sample that lacks its rare tail events also lacks their fourth powers)."""
    centred = samples - samples.mean(axis=0)
    kurtosis = (centred ** 4).mean(axis=0) / variance ** 2 - 3
    return np.maximum(kurtosis, kurtosis.mean())


def _variance_ratio_error(kurtosis: np.ndarray, runs: int) -> np.ndarray:
    """Standard deviation of s²/σ² over ``runs`` samples: √(2/(R − 1) + κ/R) (exact to O(R⁻²))."""
    return np.sqrt(2 / (runs - 1) + kurtosis / runs)


def assert_variance_any_law(samples: np.ndarray, variance: np.ndarray, alpha: float = ALPHA):
    """Each cell's sample variance, and their total, against the theoretical per-cell ``variance``.

    Per cell: z = (s²/σ² − 1)/√(2/(R − 1) + κ/R), with the theoretical σ² (not s², which would make
    z over-reject on samples short of tail events) and κ from :func:`_kurtosis_floor_pooled`. Total
    over the cells: Σ s² = Σ_r Q_r/(R − 1) with Q_r = Σ_v (x_rv − x̄_v)², whose standard error
    sd(Q)/√R includes every covariance between cells, so correlated estimates (multinomial,
    Hadamard) are handled. Bonferroni over the cells and the total: family-wise false-failure rate
    ``alpha`` up to the normal approximation of s². Cells of theoretical variance 0 must not vary.
    """
    samples = np.asarray(samples, dtype=float)
    runs, cells = samples.shape
    variance = np.broadcast_to(np.asarray(variance, dtype=float), (cells,))
    s2 = samples.var(axis=0, ddof=1)
    fixed = variance == 0
    assert (s2[fixed] == 0).all(), f"cells {np.flatnonzero(fixed & (s2 > 0))[:10]} should not vary"
    live = np.flatnonzero(~fixed)
    ratio = s2[live] / variance[live]
    spread = _variance_ratio_error(_kurtosis_floor_pooled(samples[:, live], variance[live]), runs)
    z = (ratio - 1) / spread
    bound = _bonferroni_z(alpha, cells + 1)
    bad = np.abs(z) > bound
    assert not bad.any(), (f"variance ratios {ratio[bad][:10]} of cells {live[bad].tolist()[:10]}: "
                           f"z = {z[bad][:10]} beyond ±{bound:.2f} ({runs} runs)")
    centred = samples[:, live] - samples[:, live].mean(axis=0)
    q = (centred ** 2).sum(axis=1)
    total, expected = q.sum() / (runs - 1), variance[live].sum()
    z_total = (total - expected) / (q.std(ddof=1) / np.sqrt(runs))
    assert abs(z_total) <= bound, (f"total variance {total:.6g} vs {expected:.6g} (ratio "
                                   f"{total / expected:.4f}): z = {z_total:.2f} beyond "
                                   f"±{bound:.2f} ({runs} runs)")


def assert_same_moments(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA):
    """Two sets of runs agree per cell in mean (Welch z) and variance, for samples of any law.

    Variances: z = (s²_a − s²_b)/(σ̂² √(Σ 2/(R − 1) + κ/R)) with σ̂² and κ pooled from both samples
    (the same law under the hypothesis; κ as in :func:`_kurtosis_floor_pooled`). Bonferroni over
    cells; false-failure rate ``alpha`` for means and variances together.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    va, vb = _assert_same_means(a, b, alpha / 2)
    live = np.flatnonzero(va > 0)
    pooled = (va[live] * (len(a) - 1) + vb[live] * (len(b) - 1)) / (len(a) + len(b) - 2)
    both = np.concatenate([a[:, live] - a[:, live].mean(axis=0),
                           b[:, live] - b[:, live].mean(axis=0)])
    kurtosis = _kurtosis_floor_pooled(both, pooled)
    spread = np.hypot(_variance_ratio_error(kurtosis, len(a)), _variance_ratio_error(kurtosis, len(b)))
    z = (va[live] - vb[live]) / (pooled * spread)
    bound = _bonferroni_z(alpha / 2, a.shape[1])
    bad = np.abs(z) > bound
    assert not bad.any(), (f"variances differ in cells {live[bad].tolist()[:10]}: "
                           f"{va[live][bad][:10]} vs {vb[live][bad][:10]}, z = {z[bad][:10]}")


def assert_same_distribution(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA):
    """Two sets of runs (rows) of the same estimator agree per cell in mean and variance."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    cells = a.shape[1]
    va, vb = _assert_same_means(a, b, alpha)
    f_lo = stats.f.ppf(alpha / (2 * cells), len(a) - 1, len(b) - 1)
    f_hi = stats.f.isf(alpha / (2 * cells), len(a) - 1, len(b) - 1)
    ratio = np.ones(cells)
    both = (va > 0) & (vb > 0)
    ratio[both] = va[both] / vb[both]
    bad = np.flatnonzero((ratio < f_lo) | (ratio > f_hi))
    assert not len(bad), (f"variances differ in cells {bad.tolist()[:10]}: ratio {ratio[bad][:10]} "
                          f"outside [{f_lo:.3f}, {f_hi:.3f}]")
