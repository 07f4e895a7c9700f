"""Gaussian releases over time: zCDP beside basic and advanced composition, and the classic σ
beside the analytic one, for the Learn page.

* ρ-zCDP [BS16, Bun & Steinke, TCC 2016]: ``N(0, σ²)`` noise on a query of L2 sensitivity Δ is
  ρ-zCDP with ``ρ = Δ²/(2σ²)`` (Prop. 1.6); ρ's add under composition (Lemma 1.7); ρ-zCDP implies
  ``(ρ + 2√(ρ ln(1/δ)), δ)``-DP for every δ > 0 (Prop. 1.3); a pure ε-DP release (e.g. the
  discrete Laplace) is ε²/2-zCDP (Prop. 1.4), so it composes with Gaussian ones in ρ. Zero-concentrated DP is a bound on the
  Rényi divergences of every order α > 1 (Rényi DP [Mir17]), which is why it composes by adding.
* The classic Gaussian σ = Δ√(2 ln(1.25/δ))/ε [DR14, Thm A.1] is proven for ε < 1 only; the
  analytic σ [BW18] is the smallest σ meeting the exact (ε, δ) condition
  (:func:`dpcore.mechanisms.central.analytic_gaussian_sigma`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.mechanisms.central import analytic_gaussian_sigma
from dpcore.theory import privacy_theory
from dpcore.theory.privacy_theory import checked_array, unwrap


def gaussian_rho(sigma, l2_sensitivity=1.0):
    """ρ = Δ²/(2σ²) of one Gaussian release."""
    s = checked_array("sigma", sigma, low=0.0, low_open=True)
    l2 = checked_array("l2_sensitivity", l2_sensitivity, low=0.0, low_open=True)
    return unwrap(l2 ** 2 / (2 * s ** 2))


def zcdp_epsilon(rho, delta):
    """The ε of ρ-zCDP at δ: ρ + 2√(ρ ln(1/δ))."""
    r = checked_array("rho", rho, low=0.0)
    d = checked_array("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return unwrap(r + 2 * np.sqrt(r * np.log(1 / d)))


def pure_rho(epsilon):
    """ρ = ε²/2 of a pure ε-DP release [BS16, Prop. 1.4]."""
    return unwrap(checked_array("epsilon", epsilon, low=0.0) ** 2 / 2)


def classic_gaussian_sigma(epsilon, delta, l2_sensitivity=1.0):
    """σ = Δ√(2 ln(1.25/δ))/ε, the classic calibration (proof valid for ε < 1 only)."""
    eps = checked_array("epsilon", epsilon, low=0.0, low_open=True)
    d = checked_array("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return unwrap(l2_sensitivity * np.sqrt(2 * np.log(1.25 / d)) / eps)


def gaussian_sigmas(epsilons, delta: float, l2_sensitivity: float = 1.0) -> pd.DataFrame:
    """σ of the classic and the analytic calibration at every ε, their ratio, and whether the
    classic σ is proven (ε < 1), unproven but private (up to
    :func:`~dpcore.theory.privacy_theory.classic_gaussian_limit`) or not private."""
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    classic = np.atleast_1d(classic_gaussian_sigma(eps, delta, l2_sensitivity))
    analytic = np.array([analytic_gaussian_sigma(float(e), delta, l2_sensitivity) for e in eps])
    limit = privacy_theory.classic_gaussian_limit(delta)
    status = np.where(eps < 1, "proven", np.where(eps <= limit, "unproven, private",
                                                  "not private"))
    return pd.DataFrame({"epsilon": eps, "classic_sigma": classic, "analytic_sigma": analytic,
                         "ratio": classic / analytic, "classic_status": status})


def monthly_gaussian(epsilon: float, delta: float, months: int = 12,
                     delta_slack: float = 1e-6) -> pd.DataFrame:
    """Total ε after k = 1…``months`` releases, each the analytic Gaussian at (ε, δ) on a
    sensitivity-1 query, under three accountings, all stated at the same total δ where they can:

    * basic: (kε, kδ);
    * advanced [DRV10]: (ε√(2k ln(1/δ′)) + kε(e^ε − 1), kδ + δ′);
    * zCDP: ρ = k/(2σ²), stated at the advanced total δ = kδ + δ′ (Gaussian noise only).
    """
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    months = privacy_theory.whole_number("months", months)
    sigma = analytic_gaussian_sigma(eps, delta)
    k = np.arange(1, months + 1)
    rows = []
    for releases in k:
        advanced, advanced_delta = privacy_theory.advanced_composition(eps, int(releases), delta,
                                                                       delta_slack)
        rho = releases * float(gaussian_rho(sigma))
        rows.append({"releases": int(releases), "basic": releases * eps,
                     "basic_delta": releases * delta, "advanced": float(advanced),
                     "advanced_delta": float(advanced_delta), "rho": rho,
                     "zcdp": float(zcdp_epsilon(rho, advanced_delta)), "sigma": sigma})
    return pd.DataFrame(rows)
