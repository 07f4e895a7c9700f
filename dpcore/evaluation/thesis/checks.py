"""What every check shares: the verdict's form, the curves' means, the thesis's stated numbers and
single draws judged against this run's trials, the empty cell's noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore import mechanisms
from dpcore.evaluation.thesis.protocol import _params, Verdict
from dpcore.mechanisms import postprocess


def empty_cell_sd(key: str, epsilon: float, n: int, d: int) -> float:
    """Standard deviation (commuters) of the estimate of an empty cell: the mechanism's own
    variance formula (chapter 3's Theorem 2 for the local ones), public given ε, n and d."""
    mechanism = mechanisms.build(key, epsilon=epsilon, **_params(key, n))
    variance = postprocess.zero_cell_variance(mechanism, n, max(d, 2))
    return float("nan") if variance is None else float(np.sqrt(variance))


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _rows(data: pd.DataFrame, where: dict) -> pd.DataFrame:
    mask = np.ones(len(data), dtype=bool)
    for column, value in where.items():
        mask &= data[column].to_numpy() == value
    return data[mask]


def _curve(data: pd.DataFrame, **where) -> pd.Series:
    return _rows(data, where).groupby("epsilon")["mean"].mean().sort_index()


#: Two noisy curves are told apart only by more than this many standard errors of their
#: difference (each point's s.e.: the trials' s.d. / √trials); within it, a comparison counts as
#: the thesis's way. With no spread (one trial, or a release without noise) the comparison is
#: strict.
NOISE_SE = 2.0
TOLERANCE_TEXT = (f"two curves within {NOISE_SE:g} standard errors of their difference (from the "
                  f"trials' spread) count as in the thesis's order")


def _curve_se(data: pd.DataFrame, **where) -> pd.Series:
    """Standard error of :func:`_curve` (a mean of the matching rows' means), by ε."""
    rows = _rows(data, where)
    sd = rows["sd"].fillna(0.0).to_numpy() if "sd" in rows else np.zeros(len(rows))
    se2 = pd.Series(sd ** 2
                    / np.maximum(rows["trials"].to_numpy(), 1), index=rows["epsilon"].to_numpy())
    grouped = se2.groupby(level=0)
    return (grouped.sum() ** 0.5 / grouped.count()).sort_index()


def _below(a, b, se_a, se_b):
    """``a`` below ``b`` up to the noise (:data:`NOISE_SE`): strictly below, or above by at
    most :data:`NOISE_SE` standard errors of the difference (never when neither has spread)."""
    tol = NOISE_SE * np.sqrt(np.asarray(se_a, dtype=float) ** 2
                             + np.asarray(se_b, dtype=float) ** 2)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return (a < b) | ((tol > 0) & (a - b <= tol))


def _gap_se(a, b, se_a, se_b) -> str:
    """How many standard errors of their difference ``a`` lies above ``b``, as text ("" when
    neither has spread)."""
    se = float(np.hypot(se_a, se_b))
    return "" if not se > 0 else f", {(a - b) / se:.1f} standard errors"


def _verdict(item, thesis_text, criterion, ours, agrees, reason="", **extra) -> Verdict:
    """A judge's verdict; ``reason`` is a computed fact about this run's data or the mechanisms'
    formulas that bears on a difference (the reason shown is computed later by toggling the
    protocol differences: :func:`explain`)."""
    agrees = None if agrees is None else bool(agrees)
    return Verdict(item.ref, thesis_text, criterion, ours, agrees,
                   reason if agrees is None else "", data_note=reason if agrees is False else "",
                   **extra)


def _stated(values, stated: float, what: str) -> tuple[bool, str]:
    """Is the thesis's single number a plausible draw of this run? Within the trials' mean ± 3
    s.d. (s.d. at least 1: the numbers are whole counts)."""
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        return False, f"{what}: no trials"
    sd = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    mean, tolerance = float(values.mean()), 3 * max(sd, 1.0)
    ok = abs(stated - mean) <= tolerance
    return ok, (f"{what} {mean:,.1f} ± {tolerance:,.1f} (3 s.d. over {len(values)} trials; "
                f"thesis {stated:,.0f}{'' if ok else ', outside'})")


def _upper(hits: int, trials: int) -> float:
    """95 % upper confidence bound of a probability seen ``hits`` times in ``trials``
    (Clopper–Pearson)."""
    from scipy import stats

    return 1.0 if hits >= trials else float(stats.beta.ppf(0.975, hits + 1, trials - hits))
