"""Choosing privately: the exponential mechanism beside report-noisy-max, for the Learn page.

The question: which destination do most commuters of one origin go to? Its score is each
destination's count ``c_v``; one person changes any count by at most 1 (add/remove or
substitution), so the score's sensitivity is ``Δu = 1``.

* The exponential mechanism [MT07] names ``v`` with ``P[v] ∝ exp(ε c_v / (2Δu))``: ε-DP.
* Report-noisy-max with Laplace noise [DR14, §3.3] adds ``Lap(2Δu/ε)`` to every count and names
  the largest: ε-DP for any score of sensitivity Δu (``Lap(Δu/ε)`` suffices for monotone scores).
  Its probabilities have no closed form; :func:`noisy_max_probabilities` integrates them.
* Report-noisy-max with *Gumbel* noise of scale ``2Δu/ε`` names ``v`` with exactly the exponential
  mechanism's probabilities (the Gumbel-max trick), and repeating it without the winners is the
  product's Gumbel top-k (:class:`dpcore.mechanisms.central.TopK`).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from dpcore.theory.privacy_theory import checked_array

#: Integration range beyond the scores, in Laplace scales: the density there is e^-40 ≈ 4e-18
#: of its peak.
WINDOW_SCALES = 40.0
#: Grid steps per Laplace scale of the integration.
STEPS_PER_SCALE = 200


def exponential_probabilities(scores, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """``P[v] = exp(ε u_v/(2Δu)) / Σ_w exp(ε u_w/(2Δu))``, computed stably (softmax)."""
    u = checked_array("scores", scores)
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    du = float(checked_array("sensitivity", sensitivity, low=0.0, low_open=True))
    return special.softmax(eps * np.atleast_1d(u).astype(float) / (2.0 * du))


def _laplace_logcdf(z: np.ndarray, scale: float) -> np.ndarray:
    return np.where(z < 0, np.log(0.5) + np.minimum(z, 0) / scale,
                    np.log1p(-0.5 * np.exp(-np.maximum(z, 0) / scale)))


def noisy_max_probabilities(scores, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """P[v is named] of report-noisy-max with ``Lap(2Δu/ε)`` noise, by numerical integration.

    ``P[v] = ∫ f(x − u_v) Π_{w≠v} F(x − u_w) dx`` (f, F: the Laplace density and CDF), by the
    trapezoid rule on one grid of :data:`STEPS_PER_SCALE` steps per scale b from 40 b below the
    lowest to 40 b above the highest score taken into account; equal scores share one integral.
    Scores more than 80 b below the largest get probability 0 (each below e^-40). The result is
    normalised; tests/test_learn_tools.py checks it against a closed form and a simulation.
    """
    u = np.atleast_1d(checked_array("scores", scores)).astype(float)
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    du = float(checked_array("sensitivity", sensitivity, low=0.0, low_open=True))
    b = 2.0 * du / eps
    values, inverse, multiplicity = np.unique(u, return_inverse=True, return_counts=True)
    near = values >= values.max() - 2 * WINDOW_SCALES * b
    v, m = values[near], multiplicity[near]
    low, high = v.min() - WINDOW_SCALES * b, v.max() + WINDOW_SCALES * b
    x = np.linspace(low, high, int(np.ceil((high - low) / b * STEPS_PER_SCALE)) + 1)
    log_cdf = _laplace_logcdf(x[None, :] - v[:, None], b)          # one row per distinct score
    log_all = (m[:, None] * log_cdf).sum(axis=0)                   # log Π_w F(x − u_w)
    density = np.exp(-np.abs(x[None, :] - v[:, None]) / b) / (2 * b)
    probability = np.zeros(values.size)
    probability[near] = np.trapezoid(np.exp(log_all[None, :] - log_cdf) * density, x, axis=1)
    per_score = probability[inverse]
    return per_score / per_score.sum()


def noisy_max_frequencies(scores, epsilon: float, draws: int, rng: np.random.Generator,
                          noise: str = "laplace", sensitivity: float = 1.0) -> np.ndarray:
    """How often each score is named in ``draws`` runs of report-noisy-max with ``Lap(2Δu/ε)`` or
    ``Gumbel(2Δu/ε)`` noise: a simulation to set beside the exact probabilities."""
    u = np.atleast_1d(checked_array("scores", scores)).astype(float)
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    b = 2.0 * sensitivity / eps
    sample = rng.laplace if noise == "laplace" else rng.gumbel
    counts = np.zeros(u.size)
    for start in range(0, draws, 1_000):
        rows = min(1_000, draws - start)
        winners = np.argmax(u + sample(0.0, b, (rows, u.size)), axis=1)
        counts += np.bincount(winners, minlength=u.size)
    return counts / draws


def epsilon_for(scores, probability: float, sensitivity: float = 1.0) -> float:
    """The ε at which the exponential mechanism names the (unique) top score with the given
    probability: P[top] rises from 1/|scores| at ε → 0 to 1, so the root is unique."""
    u = np.atleast_1d(checked_array("scores", scores)).astype(float)
    target = float(checked_array("probability", probability, low=1.0 / u.size, high=1.0,
                                 low_open=True, high_open=True))
    top = int(np.argmax(u))
    if np.sum(u == u[top]) > 1:
        raise ValueError("The largest score is tied: no ε names one of them for sure.")
    gap = u[top] - np.sort(u)[-2]

    def excess(log_eps):
        return exponential_probabilities(u, np.exp(log_eps), sensitivity)[top] - target
    # P[top] ≥ target once exp(ε·gap/2Δu) ≥ target·(|u| − 1)/(1 − target): bracket around it.
    high = np.log(2 * sensitivity * np.log(target * u.size / (1 - target)) / gap) + 1.0
    return float(np.exp(optimize.brentq(excess, high - 40.0, high, xtol=1e-12)))
