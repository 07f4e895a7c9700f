"""Computed reasons for the thesis's central items and its stated zero counts.

When no protocol difference explains a "differs" of figures 5.2, 5.3 (the central mechanisms'
RMSE and maximum error), 5.4, 5.9 and 5.11 (the zeros the thesis counts), what remains is the
data. This module says *what of the data*, computed: each release's law evaluated on this run's
true counts predicts the quantity the figure shows, the prediction is set beside the run's own
measurement, and the part of the data that decides it is named (the cells just above the
stability histogram's threshold, the empty cells, the cells of a few commuters).

The laws, per cell of true count c, noise scale b = 2/ε (substitution, as both protocols use):

* Laplace, maximum error: continuous Laplace (as written) has E[max] = b·H_d over d cells
  (H the harmonic number, ≈ b(ln d + γ)); OpenDP's discrete Laplace with negatives set to 0
  (as run) is summed exactly, an empty cell erring only upwards (≈ b(ln(d/2) + γ)).
* Stability histogram [KKMN09, Vad17 §3]: a non-empty cell is dropped when c + Lap(b) < τ, its
  whole count then being its error; the maximum error is found by integrating the exact law of
  every cell's error, and its size is set by the cells a few b above τ (≈ τ + b·ln k for k of
  them). RMSE: the exact truncated-Laplace moments of
  :class:`~dpcore.mechanisms.central.StabilityHistogram` (OpenDP's final rounding ignored).
* Zeros of a local release after Base-Pro: P(estimate < ½) per cell (< 1 for local hashing as
  run, whose estimates were int()-truncated). The estimate is normal with the mechanism's own
  mean and variance (Hadamard Response's given its public permutation, then averaged over
  permutations); for the support-count protocols (randomised response, unary encoding,
  local hashing: C = Bin(c, p*) + Bin(n − c, q*)) the normal is taken of the support count with
  a continuity correction. Expected zeros sum these probabilities over the cells.

The thesis's own printed numbers (:data:`THESIS_PRINTED`) are facts read from its public
notebooks, set beside the predictions.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from dpcore import mechanisms
from dpcore.evaluation.thesis import as_run
from dpcore.mechanisms.count_profile import CountProfile
from dpcore.mechanisms.sparse_vector import PRESENT_AT

#: The thesis's ED domain: 9,796,900 commutes as its text states; its code listed the 8,699,658
#: ED commutes of its aggregate file as the categories. (At county level both are 1,085.)
THESIS_D = {"ed": 9_796_900, "ed_code": 8_699_658}

#: Numbers the thesis's code printed, ε = 0.5, 1, …, 5 (Thesis_DP: central_dp_laplace.ipynb,
#: central_dp_stability_histogram.ipynb): maximum errors in commuters at ED level; RMSE at both
#: levels of its last run, and the RMSE its figure 5.2 plots (typed in from an earlier run).
THESIS_PRINTED = {
    "max ED laplace": (68, 29, 20, 14, 12, 11, 8, 8, 6, 5),
    "max ED stability_histogram": (84, 44, 30, 22, 19, 16, 13, 11, 10, 10),
    "rmse ED laplace": (4.004, 1.992, 1.314, 0.969, 0.758, 0.615, 0.511, 0.431, 0.368, 0.316),
    "rmse ED stability_histogram": (1.898, 1.189, 0.884, 0.716, 0.610, 0.535, 0.481, 0.438,
                                    0.404, 0.374),
    "plotted rmse ED stability_histogram": (0.811, 0.429, 0.300, 0.233, 0.193, 0.166, 0.145,
                                            0.129, 0.118, 0.108),
    "rmse County stability_histogram": (21.07, 10.29, 6.60, 4.90, 3.55, 2.91, 2.29, 1.85, 1.48,
                                        1.21),
    "plotted rmse County stability_histogram": (5.74, 2.85, 1.85, 1.48, 1.11, 0.96, 0.87, 0.73,
                                                0.64, 0.61),
    "plotted rmse County laplace": (5.45, 2.85, 1.78, 1.28, 1.07, 0.82, 0.73, 0.59, 0.51, 0.41),
}
THESIS_EPSILONS = tuple(0.5 * k for k in range(1, 11))
#: Width of the band above τ whose cells set the stability histogram's maximum error, in b.
BAND_WIDTH = 4
#: Count bands of the zero tables.
BANDS = ((0, 0), (1, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 200), (201, 500),
         (501, 1_000), (1_001, None))


# ------------------------------------------------------------------------ central mechanisms
def scale(epsilon: float) -> float:
    """b = Δ₁/ε with Δ₁ = 2 (substitution): both protocols' noise scale."""
    return 2.0 / epsilon


def stability(epsilon: float, n: int, opendp: bool):
    """The stability histogram of either protocol, δ = 1/(2n). As run, OpenDP's threshold
    2·ln(2/δ)/ε + 1/n is the textbook rule's 1 + b·ln(2/δ') at δ' = δ·e^{(1 − 1/n)/b}."""
    delta = 1 / (2 * n)
    if opendp:
        delta *= math.exp((1 - 1 / n) / scale(epsilon))
    return mechanisms.build("stability_histogram", epsilon=epsilon, delta=delta)


def threshold(epsilon: float, n: int, opendp: bool) -> float:
    return as_run.stability_threshold(epsilon, n) if opendp else stability(epsilon, n, False).tau


def laplace_max(profile: CountProfile, epsilon: float, opendp: bool) -> tuple[float, float]:
    """Mean and standard deviation of the Laplace release's largest |error| over the profile's
    cells."""
    b, d = scale(epsilon), profile.d
    if not opendp:  # max of d Exp(b): mean b·H_d, variance b²·Σ 1/i²
        mean = b * float(special.digamma(d + 1) + np.euler_gamma)
        return mean, b * math.sqrt(float(special.polygamma(1, 1) - special.polygamma(1, d + 1)))
    alpha = math.exp(-1 / b)  # discrete Laplace: P(X = k) ∝ α^|k|
    k = np.arange(1, int(b * (math.log(d) + 50)) + 2, dtype=float)[:, None]
    up = alpha ** k / (1 + alpha)  # P(X ≥ k); an empty cell errs only upwards (clamped)
    v = profile.values[None, :]
    tail = np.where(v == 0, up, np.where(k <= v, 2 * up, up))  # |error| ≥ k
    log_below = (profile.cells * np.log1p(-np.minimum(tail, 1 - 1e-300))).sum(axis=1)
    at_least = -np.expm1(log_below)  # P(max ≥ k)
    mean = float(at_least.sum())
    return mean, math.sqrt(max(float(((2 * k[:, 0] - 1) * at_least).sum()) - mean ** 2, 0.0))


def _laplace_cdf(x, b):
    """P(Lap(b) ≤ x)."""
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / b),
                    1 - 0.5 * np.exp(-np.maximum(x, 0) / b))


def stability_max(profile: CountProfile, epsilon: float, n: int, opendp: bool
                  ) -> tuple[float, float]:
    """Mean and standard deviation of the stability histogram's largest error, from
    P(max > t) = 1 − Π P(error < t) and the exact law of each non-empty cell's error (its count
    when dropped, its noise when released); empty cells err by 0."""
    b, tau = scale(epsilon), threshold(epsilon, n, opendp)
    present = profile.values > 0
    v, m = profile.values[present].astype(float), profile.cells[present]
    if not v.size:
        return 0.0, 0.0
    top = min(float(v.max()), tau + 60 * b) + 60 * b
    t = np.linspace(0.0, top, 4_000)[:, None]
    kept_small = np.clip(_laplace_cdf(t, b) - _laplace_cdf(np.maximum(tau - v, -t), b), 0, 1)
    below = kept_small + np.where(v < t, _laplace_cdf(tau - v, b), 0.0)  # P(error < t)
    log_below = (m * np.log(np.clip(below, 1e-300, 1.0))).sum(axis=1)
    above, t = -np.expm1(log_below), t[:, 0]  # P(max > t)
    mean = float(np.trapezoid(above, t))
    return mean, math.sqrt(max(float(np.trapezoid(2 * t * above, t)) - mean ** 2, 0.0))


def band_above(profile: CountProfile, epsilon: float, n: int, opendp: bool) -> int:
    """Non-empty cells with τ ≤ c < τ + BAND_WIDTH·b: those that can be dropped whole."""
    b, tau = scale(epsilon), threshold(epsilon, n, opendp)
    inside = (profile.values >= tau) & (profile.values < tau + BAND_WIDTH * b)
    return int(profile.cells[inside].sum())


def laplace_rmse(profile: CountProfile, epsilon: float, opendp: bool) -> float:
    """RMSE of the Laplace release: b√2 (continuous) or, as run, OpenDP's discrete Laplace with
    negatives set to 0 — a cell of count c errs by X if X ≥ −c, else by −c."""
    b = scale(epsilon)
    if not opendp:
        return b * math.sqrt(2)
    alpha = math.exp(-1 / b)
    variance = 2 * alpha / (1 - alpha) ** 2
    # E[error²] = Var − Σ_{k > c} (k² − c²)·P(X = k): the noise below −c is cut to −c
    k = profile.values[None, :].astype(float) + np.arange(1, int(b * 60) + 2)[:, None]
    c = profile.values[None, :].astype(float)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** k
    second = variance - ((k ** 2 - c ** 2) * pmf).sum(axis=0)
    return math.sqrt(profile.mean(second))


def stability_rmse(profile: CountProfile, epsilon: float, n: int, opendp: bool) -> float:
    """RMSE of the stability histogram: E[(Y − c)²] = Var + bias² from its exact moments."""
    mechanism = stability(epsilon, n, opendp)
    values = profile.values
    bias = mechanism.expected(values) - values
    return math.sqrt(profile.mean(mechanism.variance(values) + bias ** 2))


def dropped_mass(profile: CountProfile, epsilon: float, n: int, opendp: bool
                 ) -> tuple[float, float]:
    """Expected number of non-empty cells the stability histogram drops, and E[Σ c² over them]
    (the squared error they add)."""
    mechanism = stability(epsilon, n, opendp)
    present = profile.values > 0
    values, cells = profile.values[present], profile.cells[present]
    dropped = 1 - mechanism.release_probability(values)
    return (float(np.dot(cells, dropped)),
            float(np.dot(cells, dropped * values.astype(float) ** 2)))


# ------------------------------------------------------------------------------ zero counts
def _support_law(role: str, variant: str, epsilon: float, d: int):
    """(p_own, p_other, p*, q*) of a support-count release, None for the Hadamard ones: a
    report supports its sender's cell with p_own and any other with p_other, and the server
    debiases with (p*, q*). As run, randomised response's duplicate false report supports every
    other cell with 1/(d − 1) while the server still debiases with q*."""
    if role == "hm":
        return None
    p, q = mechanisms.build(role, epsilon=epsilon).support_probabilities(d)
    if role == "grr" and variant == "run":
        return p, 1 / (d - 1), p, q
    return p, q, p, q


def _local(role: str, variant: str, truth, below: float):
    """The cells, n, d and threshold a local release is read with: local hashing and Hadamard
    Response as run int()-truncate their estimates (0 means estimate < 1), and local hashing
    reads cell 0 from an empty slot."""
    truth = np.asarray(truth, dtype=float)
    n = float(truth.sum())  # every person reports, cell 0's too
    if role in ("olh", "hm") and variant == "run":
        below = max(below, 1.0)
    if role == "olh" and variant == "run":
        truth = truth.copy()
        truth[0] = 0.0
    return truth, n, truth.size, below


#: Public permutations over which Hadamard Response's laws are averaged (blocked form, ε > 1):
#: a cell's variance depends on which cells share its block, so its zero probability is the
#: mean over permutations of the conditional one (Jensen: the averaged variance overstates the
#: zeros by ≈ 2 % at county level). Seeded, so the notes are reproducible.
PERMUTATIONS, PERMUTATION_SEED = 64, 20240528


def _hadamard(variant: str, epsilon: float):
    return (mechanisms.build("hr", epsilon=epsilon) if variant == "run" else
            mechanisms.build("hm", epsilon=epsilon, t=1))


def _permutations(role: str, variant: str, epsilon: float, d: int) -> list:
    """The public permutations a law is averaged over: [None] unless blocked Hadamard Response."""
    if role != "hm" or variant != "run" or not _hadamard(variant, epsilon).blocked:
        return [None]
    rng = np.random.default_rng(PERMUTATION_SEED)
    mechanism = _hadamard(variant, epsilon)
    return [mechanism.draw_permutation(d, rng) for _ in range(PERMUTATIONS)]


def estimate_law(role: str, variant: str, truth, epsilon: float, permutation=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each cell's estimate (the Hadamard ones: unbiased, their
    own variance, given the public ``permutation`` for Hadamard Response's blocked form; the
    support-count ones: from the two binomials)."""
    truth, n, d, _ = _local(role, variant, truth, PRESENT_AT)
    law = _support_law(role, variant, epsilon, d)
    if law is None:
        extra = {"permutation": permutation} if permutation is not None else {}
        variance = _hadamard(variant, epsilon).variance(truth, n=int(round(n)), d=d, **extra)
        return truth, np.sqrt(np.maximum(variance, 0.0))
    p_own, p_other, p, q = law
    mean = truth * p_own + (n - truth) * p_other
    sd = np.sqrt(truth * p_own * (1 - p_own) + (n - truth) * p_other * (1 - p_other))
    return (mean - n * q) / (p - q), sd / (p - q)


def zero_probabilities(role: str, variant: str, truth, epsilon: float, below: float = PRESENT_AT
                       ) -> np.ndarray:
    """Per cell, P(the release shows 0 after Base-Pro) = P(estimate < ``below``), for the local
    mechanism ``role`` as written or as run (``variant``); rounded or not, a Base-Pro value is
    shown as 0 exactly when the estimate is below ½."""
    _, n, d, below = _local(role, variant, truth, below)
    law = _support_law(role, variant, epsilon, d)
    if law is None:
        return np.mean([stats.norm.cdf((below - mean) / np.maximum(sd, 1e-12))
                        for mean, sd in (estimate_law(role, variant, truth, epsilon, permutation)
                                         for permutation in _permutations(role, variant,
                                                                          epsilon, d))], axis=0)
    mean, sd = estimate_law(role, variant, truth, epsilon)
    p, q = law[2:]
    most = np.ceil(n * q + below * (p - q)) - 1  # estimate < below ⟺ support ≤ most
    support_mean, support_sd = mean * (p - q) + n * q, sd * (p - q)
    return stats.norm.cdf((most + 0.5 - support_mean) / np.maximum(support_sd, 1e-12))


def base_cut_zeros(role: str, variant: str, truth, epsilon: float) -> tuple[float, float]:
    """Expected zeros after Base-Cut and the cut level L: for many cells the kept prefix is the
    estimates above the L at which the expected mass above L is n, so Σ P(estimate < L) cells
    are zeroed (averaged over the public permutations where there are some)."""
    truth = np.asarray(truth, dtype=float)
    n, outcomes = float(truth.sum()), []
    for permutation in _permutations(role, variant, epsilon, truth.size):
        mean, sd = estimate_law(role, variant, truth, epsilon, permutation)
        sd = np.maximum(sd, 1e-12)

        def excess(level, mean=mean, sd=sd):
            a = (level - mean) / sd
            return float(np.sum(mean * stats.norm.sf(a) + sd * stats.norm.pdf(a))) - n

        if excess(PRESENT_AT) <= 0:  # the positive estimates hold no more than n: no cut
            return float(zero_probabilities(role, variant, truth, epsilon).sum()), PRESENT_AT
        level = optimize.brentq(excess, PRESENT_AT, float(mean.max() + 50 * sd.max()))
        outcomes.append((float(stats.norm.cdf((level - mean) / sd).sum()), level))
    zeros, level = np.mean(outcomes, axis=0)
    return float(zeros), float(level)


def stability_zero_probabilities(truth, epsilon: float, opendp: bool) -> np.ndarray:
    """Per cell, P(the stability histogram shows 0): 1 for an empty cell, else P(c + Lap < τ)
    (a released value is at least τ > ½)."""
    truth = np.asarray(truth)
    mechanism = stability(epsilon, int(truth.sum()), opendp)
    return np.where(truth > 0, 1 - mechanism.release_probability(truth), 1.0)


def expected(probabilities) -> tuple[float, float]:
    """Expected number of zeros and its standard deviation (cells taken as independent)."""
    probabilities = np.asarray(probabilities, dtype=float)
    return (float(probabilities.sum()),
            float(math.sqrt(np.sum(probabilities * (1 - probabilities)))))


def by_band(truth, probabilities: dict) -> pd.DataFrame:
    """Cells and expected zeros per count band (rows), one column per mechanism."""
    truth = np.asarray(truth)
    rows = []
    for low, high in BANDS:
        inside = (truth >= low) & ((truth <= high) if high is not None else True)
        if not inside.any():
            continue
        name = (f"{low}" if low == high else f"{low:,}–{high:,}" if high is not None
                else f"{low:,}+")
        rows.append({"band": name, "cells": int(inside.sum()),
                     **{key: float(p[inside].sum()) for key, p in probabilities.items()}})
    return pd.DataFrame(rows)


def cells_needed(shortfall: float, probability: float) -> float:
    """How many more cells, each shown as 0 with ``probability``, make up ``shortfall`` zeros."""
    return max(shortfall, 0.0) / probability if probability > 0 else math.inf


# -------------------------------------------------------------------------------- the notes
#: The thesis's county table as its notebooks print it (central_dp.ipynb): n = 2,750,239 over
#: 1,085 cells, 6 empty, 170 of 1–10 commuters, 90 non-empty below the stability histogram's
#: threshold at ε = 5 (≈ 6.5).
THESIS_COUNTY_CELLS = {"empty": 6, "1–10": 170, "below τ at ε = 5": 90}
#: Short names of the local mechanisms in the zero notes.
SHORT_NAMES = {"grr": "RR", "oue": "UE", "olh": "OLH", "hm": "Hadamard"}
#: A run's mean is said not to follow a law when it is more than this many standard errors away.
FOLLOWS_SE = 4
NOT_FOLLOWED = "does not follow its law"


def _num(value: float) -> str:
    if not np.isfinite(value):
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:#.3g}"


def _against(prediction: float, mean: float, se: float, slack: float = 0.0,
             trials: int = 0) -> str:
    """The run's mean beside a prediction: flagged when it is more than FOLLOWS_SE standard
    errors (plus ``slack``, a bound on what the law leaves out) away — the release then does
    not behave as its law says, and the law explains nothing about it. ``trials`` > 0: the s.e.
    was estimated from that many trials, so the bound is Student's t quantile of the same tail
    probability (a 4 s.d. bound on 10 trials' own s.d. would flag one run in a few hundred)."""
    if not np.isfinite(mean):
        return "not run"
    text = _num(mean)
    bound = FOLLOWS_SE
    if trials > 1:
        bound = float(stats.t.isf(stats.norm.sf(FOLLOWS_SE), trials - 1))
    if np.isfinite(se) and abs(mean - prediction) > bound * se + slack:
        text += f" — {NOT_FOLLOWED}"
    return text


@functools.lru_cache(maxsize=256)
def _predicted(kind: str, values: bytes, cells: bytes, epsilon: float, n: int, opendp: bool):
    profile = CountProfile(np.frombuffer(values, dtype=np.int64),
                           np.frombuffer(cells, dtype=np.int64))
    return {"laplace max": lambda: laplace_max(profile, epsilon, opendp)[0],
            "stability_histogram max": lambda: stability_max(profile, epsilon, n, opendp)[0],
            "laplace max sd": lambda: laplace_max(profile, epsilon, opendp)[1],
            "stability_histogram max sd": lambda: stability_max(profile, epsilon, n, opendp)[1],
            "laplace rmse": lambda: laplace_rmse(profile, epsilon, opendp),
            "stability_histogram rmse": lambda: stability_rmse(profile, epsilon, n, opendp),
            "band": lambda: band_above(profile, epsilon, n, opendp),
            "dropped": lambda: dropped_mass(profile, epsilon, n, opendp)}[kind]()


def predicted(kind: str, profile: CountProfile, epsilon: float, n: int, opendp: bool):
    """One prediction (cached: the report judges every item once per protocol setting)."""
    values = np.ascontiguousarray(profile.values, dtype=np.int64).tobytes()
    cells = np.ascontiguousarray(profile.cells, dtype=np.int64).tobytes()
    return _predicted(kind, values, cells, float(epsilon), int(n), bool(opendp))


def _resized(profile: CountProfile, d: int) -> CountProfile:
    """The profile with as many empty cells as make d cells (the thesis's domain size)."""
    empty = profile.values == 0
    nonzero = int(profile.cells[~empty].sum())
    return CountProfile(np.r_[0, profile.values[~empty]].astype(np.int64),
                        np.r_[max(d - nonzero, 0), profile.cells[~empty]].astype(np.int64))


def critical_cells(epsilon: float, n: int, opendp: bool) -> float:
    """The domain size above which Laplace's predicted maximum, b(ln d_eff + γ), passes the
    stability histogram's threshold τ (d_eff = d/2 as run: an empty cell errs only upwards)."""
    reach = math.exp(threshold(epsilon, n, opendp) / scale(epsilon) - np.euler_gamma)
    return 2 * reach if opendp else reach


def central_note(metric: str, profiles: dict, opendp: bool, measured: pd.DataFrame) -> str:
    """The computed facts of figure 5.2 (``metric`` "rmse") or 5.3 ("max_error_freq") for the
    levels in ``profiles`` (label → :class:`CountProfile`, coarse first): each curve predicted
    from its release's law at the first and last ε beside this run's mean (flagged when the run
    does not follow the law), what of the data decides the order, the thesis's own numbers."""
    if measured.empty or not profiles:
        return ""
    epsilons = sorted(set(measured["epsilon"]))
    shown = [epsilons[0]] + ([epsilons[-1]] if len(epsilons) > 1 else [])
    kind = "max" if metric == "max_error_freq" else "rmse"
    parts = [("laws as run (OpenDP's discrete Laplace, negatives set to 0; τ = 2·ln(2/δ)/ε + "
              "1/n; rounding left out, which moves a maximum by at most ½)" if opendp else
              "laws as written (continuous Laplace; τ = 2·ln(2/δ)/ε + 1)")]
    for position, (level, profile) in enumerate(profiles.items()):
        n, d = profile.n, profile.d
        if n < 1 or d < 2:
            continue
        facts = []
        for epsilon in shown:
            rows = measured[(measured["scenario"] == level) & (measured["epsilon"] == epsilon)]
            pairs = []
            for key, name in (("laplace", "Laplace"), ("stability_histogram",
                                                        "stability histogram")):
                row = rows[rows["mechanism"] == key]
                unit = n if kind == "max" else 1
                mean = float(row["mean"].mean()) * unit if len(row) else float("nan")
                trials = int(row["trials"].iloc[0]) if len(row) and "trials" in row else 0
                law = predicted(f"{key} {kind}", profile, epsilon, n, opendp)
                if kind == "max":  # the law's own s.d. of a maximum
                    spread, estimated = predicted(f"{key} max sd", profile, epsilon, n,
                                                  opendp), 0
                else:
                    spread = float(row["sd"].iloc[0]) * unit if "sd" in row and len(row) else 0
                    estimated = trials
                se = spread / math.sqrt(trials) if trials > 1 else float("nan")
                slack = 0.5 if kind == "max" and opendp else 0.0
                pairs.append(f"{name} {_num(law)} (this run "
                             f"{_against(law, mean, se, slack, estimated)})")
            facts.append(f"ε = {epsilon:g}: " + ", ".join(pairs))
        epsilon = shown[0]
        tau = threshold(epsilon, n, opendp)
        if kind == "max":
            band = predicted("band", profile, epsilon, n, opendp)
            why = (f"{band:,} commutes lie within {BAND_WIDTH}b above τ = {_num(tau)} (ε = "
                   f"{epsilon:g}), each dropped whole when the noise pulls it below τ, so the "
                   f"stability histogram's maximum is about τ + b·ln {band:,}; Laplace's, "
                   f"b(ln d{'/2' if opendp else ''} + γ), passes τ only above "
                   f"{_num(critical_cells(epsilon, n, opendp))} cells (here {d:,})")
        else:
            empty = int(profile.cells[profile.values == 0].sum())
            dropped, mass = predicted("dropped", profile, epsilon, n, opendp)
            whole = predicted("laplace rmse", profile, epsilon, n, opendp) ** 2 * d
            one_empty = predicted("laplace rmse", CountProfile(np.array([0]), np.array([1])),
                                  epsilon, 1, opendp) ** 2
            why = (f"at ε = {epsilon:g} Laplace's squared error is paid on every cell, "
                   f"{one_empty * empty / whole:.0%} of it on the {empty:,} empty ones; the "
                   f"stability histogram's mostly on the ≈ {dropped:,.0f} commutes it drops "
                   f"below τ = {_num(tau)} (Σc² ≈ {mass:,.0f})")
        parts.append(f"{level}: " + "; ".join(facts) + f" — {why}")
        parts.append(_thesis_central(kind, profile, opendp, coarse=position == 0,
                                     fine=position == 1))
    return ". ".join(p for p in parts if p) + "."


def _thesis_central(kind: str, profile: CountProfile, opendp: bool, coarse: bool, fine: bool
                    ) -> str:
    """The thesis's own run at its county (``coarse``) or ED (``fine``) level, as its notebooks
    print it (the maximum errors at ED level only)."""
    if kind == "max":
        if not fine:
            return ""
        printed = {k: THESIS_PRINTED[f"max ED {k}"] for k in ("laplace", "stability_histogram")}
        above = sum(s > x for s, x in zip(printed["stability_histogram"], printed["laplace"]))
        at_size = [predicted("laplace max", _resized(profile, THESIS_D[key]), 0.5, profile.n,
                             opendp) for key in ("ed", "ed_code")]
        return (f"The thesis's own run printed ED maximum errors of "
                f"{printed['stability_histogram'][0]} (stability histogram) and "
                f"{printed['laplace'][0]} (Laplace) commuters at ε = 0.5, the stability "
                f"histogram's the higher at {above} of its 10 ε, as predicted here; at its d = "
                f"{THESIS_D['ed']:,} ({THESIS_D['ed_code']:,} categories in its code) Laplace's "
                f"predicted maximum is {_num(at_size[0])} ({_num(at_size[1])}) at ε = 0.5")
    if coarse:
        plotted = THESIS_PRINTED["plotted rmse County stability_histogram"]
        lap = THESIS_PRINTED["plotted rmse County laplace"]
        above = sum(s > x for s, x in zip(plotted, lap))
        return (f"The thesis's own county run printed a stability-histogram RMSE of "
                f"{THESIS_PRINTED['rmse County stability_histogram'][0]} at ε = 0.5; its figure "
                f"5.2 plots an earlier run's {plotted[0]} against Laplace's {lap[0]}, the "
                f"stability histogram the higher at {above} of 10 ε")
    if fine:
        last = THESIS_PRINTED["rmse ED stability_histogram"]
        plotted = THESIS_PRINTED["plotted rmse ED stability_histogram"]
        lap = THESIS_PRINTED["rmse ED laplace"]
        below = [sum(s < x for s, x in zip(run, lap)) for run in (last, plotted)]
        here = sum(predicted("stability_histogram rmse", profile, e, profile.n, opendp)
                   < predicted("laplace rmse", profile, e, profile.n, opendp)
                   for e in THESIS_EPSILONS)
        return (f"At ED level its last run printed {last[0]} (stability histogram) against "
                f"{lap[0]} (Laplace) at ε = 0.5, the stability histogram the lower at the first "
                f"{below[0]} of its 10 ε (predicted here: {here}), and its figure plots an "
                f"earlier run's {plotted[0]}, the lower at {below[1]} of 10: its own numbers "
                f"order the curves as this run does, the reverse of its text")
    return ""


def _trials_of(trials: pd.DataFrame, key: str) -> pd.DataFrame:
    return trials[trials["mechanism"] == key] if "mechanism" in trials else trials.iloc[:0]


def _setting(trials: pd.DataFrame, key: str) -> str:
    """"run" or "written": the release the protocol chose for ``key`` (its trials say)."""
    rows = _trials_of(trials, key)
    return str(rows["variant"].iloc[0]) if len(rows) and "variant" in rows else "written"


def _observed(trials: pd.DataFrame, key: str, prediction: float, sd: float | None = None,
              column: str = "zeros") -> str:
    """The trials' mean of ``column`` beside a prediction whose per-trial s.d. is ``sd`` (the
    trials' own s.d. when None)."""
    rows = _trials_of(trials, key)
    values = (rows[column].dropna().astype(float) if len(rows) and column in rows
              else pd.Series(dtype=float))
    if values.empty:
        return "not run"
    estimated = len(values) if sd is None else 0
    spread = float(values.std(ddof=1)) if sd is None and len(values) > 1 else sd
    if spread is None:
        return f"trials' mean {_num(float(values.mean()))}"
    se = max(spread, 1.0) / math.sqrt(len(values))  # s.d. at least 1: whole counts
    return f"trials' mean {_against(prediction, float(values.mean()), se, 0.0, estimated)}"


def local_zeros_note(truth, trials: pd.DataFrame, stated: dict, epsilon: float,
                     names: dict) -> str:
    """Figure 5.9's computed facts: each local release's expected zeros after Base-Pro from its
    law, beside the trials' mean; the count bands they come from; how many more (or fewer)
    small cells a table needs for the thesis's numbers."""
    truth = np.asarray(truth)
    if truth.size < 2 or truth.sum() < 1:
        return ""
    probabilities = {key: zero_probabilities(key, _setting(trials, key), truth, epsilon)
                     for key in stated}
    expectation = {key: expected(p) for key, p in probabilities.items()}
    small = (truth >= 1) & (truth <= 10)
    parts = [f"expected zeros at ε = {epsilon:g} from each release's law (the estimate normal "
             f"with the mechanism's own variance; support counts with a continuity "
             f"correction): " + ", ".join(
                 f"{names[k]} {m:.1f} ± {s:.1f} ({_observed(trials, k, m, s)})"
                 for k, (m, s) in expectation.items())]
    bands = by_band(truth, probabilities)
    parts.append("by count band (cells → expected zeros, " + "/".join(names[k] for k in stated)
                 + "): " + "; ".join(f"{row['band']}: {row['cells']:,} → " + "/".join(
                     f"{row[k]:.0f}" for k in stated) for _, row in bands.iterrows()))
    needs = []
    for key, target in stated.items():
        mean = expectation[key][0]
        share = float(probabilities[key][small].mean()) if small.any() else 0.0
        if target == 0 and mean >= 0.5 and _setting(trials, key) == "written":
            run = expected(zero_probabilities(key, "run", truth, epsilon))[0]
            needs.append(f"{names[key]}'s 0 needs the original code's defect (as run "
                         f"{run:.1f} expected)" if key == "grr" else
                         f"{names[key]}'s 0 is out of this law's reach")
        elif target > 0 and share > 0:
            needs.append(f"{names[key]} ≈ {cells_needed(abs(target - mean), share):,.0f} "
                         f"{'more' if target > mean else 'fewer'} cells of 1–10 commuters "
                         f"(each shown as 0 with probability {share:.2f})")
    if needs:
        parts.append("the thesis's numbers need: " + ", ".join(needs) + f"; this data has "
                     f"{int(small.sum()):,} cells of 1–10 and {int((truth == 0).sum()):,} empty "
                     f"ones, the thesis's county table (as its notebooks print it) "
                     f"{THESIS_COUNTY_CELLS['1–10']} and {THESIS_COUNTY_CELLS['empty']}")
    return "; ".join(parts)


def stability_zeros_note(truth, trials: pd.DataFrame, stated: float, epsilon: float) -> str:
    """Figure 5.4's computed fact: the stability histogram's expected zeros."""
    truth = np.asarray(truth)
    if truth.size < 2 or truth.sum() < 1:
        return ""
    opendp = _setting(trials, "stability_histogram") == "run"
    tau = threshold(epsilon, int(truth.sum()), opendp)
    mean, sd = expected(stability_zero_probabilities(truth, epsilon, opendp))
    below = int(((truth > 0) & (truth < tau)).sum())
    text = (f"expected zeros of the stability histogram at ε = {epsilon:g}: the "
            f"{int((truth == 0).sum()):,} empty cells plus P(c + Lap(b) < τ = {_num(tau)}) summed "
            f"over the others, {mean:.1f} ± {sd:.1f} "
            f"({_observed(trials, 'stability_histogram', mean, sd)}); {below:,} non-empty "
            f"commutes lie below τ")
    if stated > mean:
        text += (f"; the thesis's {stated:g} needs ≈ {stated - mean:,.0f} more commutes below τ "
                 f"— its county table (as its notebooks print it) has "
                 f"{THESIS_COUNTY_CELLS['empty']} empty and "
                 f"{THESIS_COUNTY_CELLS['below τ at ε = 5']} below τ")
    return text


def base_cut_note(truth, trials: pd.DataFrame, stated: tuple[float, float], epsilon: float,
                  key: str = "hm", name: str = "Hadamard") -> str:
    """Figure 5.11's computed facts: expected zeros after Base-Pos and after Base-Cut."""
    truth = np.asarray(truth)
    if truth.size < 2 or truth.sum() < 1:
        return ""
    variant = _setting(trials, key)
    pos, sd = expected(zero_probabilities(key, variant, truth, epsilon))
    cut, level = base_cut_zeros(key, variant, truth, epsilon)
    below = int((truth < level).sum())
    gap = stated[1] - cut
    return (f"{name}'s expected zeros at ε = {epsilon:g}: {pos:.1f} after Base-Pos "
            f"({_observed(trials, key, pos, sd)}), {cut:.1f} after Base-Cut "
            f"({_observed(trials, key, cut, column='zeros_cut')}), which zeroes the estimates "
            f"below the level L ≈ {_num(level)} holding n above it; {below:,} commutes of this "
            f"data lie below L, the thesis's {stated[1]:g} needs ≈ {abs(gap):,.0f} "
            f"{'more' if gap > 0 else 'fewer'}")
