"""The 95 % interval of a sum of released cells, from the mechanism's law alone.

Every analysis answer is a sum Σ_S ĉ_v over a set S of m cells whose true total is t_S. For an
unbiased release its variance is Σ_S Var ĉ_v + Σ_{u≠v∈S} Cov(ĉ_u, ĉ_v), and for the mechanisms
covered here it has a closed form in (m, t_S, n, d) (each mechanism's variance from the papers its
class cites; the sections below are those of docs/ANALYSES.md's reference):

* **Independent cells** — Laplace, discrete Laplace, Gaussian (independent noise per cell,
  §2.1–2.3); SUE and OUE (a report's bits are independent across cells, Cov = 0, §3.2–3.3 and
  §4); BLH and OLH (idealised hash: one report's support indicators are independent, §4).
  The Hadamard mechanism (HM, [CMM21]): a person's t reports (j_k, s_k) give
  X = Σ_k s_k g(j_k), g(j) = Σ_{v∈S} H[v, j], with j_k uniform whatever their cell, so
  E X² = t·m + b_t·t(t−1)·1[x∈S] and E X = b_t·t·1[x∈S]: Var ĉ_S = n·m/(t b_t²) +
  t_S((t−1)/(t b_t) − 1), the per-cell variances summed — Cov = 0 exactly. dBitFlip
  ([DKY17]): given the d_b cells a person samples, their bits are independent with mean 0 off
  their own cell, so Cov = 0 exactly too (in the protocol, not only in the fast release).
  Subset selection ([WHWNXYLQ16, YB18]), CMS and HCMS ([Apple17]): the product's release draws
  every cell's support count independently (exact per-cell laws, ``approximation`` of the
  class), so the released sums are sums of independent cells, exactly. (The subset-selection
  protocol itself, k distinct cells per report, makes the cells negatively correlated, with a
  smaller sum variance: :meth:`~dpcore.mechanisms.local.SubsetSelection.protocol_sum_variance`;
  the sketch protocol's shared columns couple cells positively by about 1/m per pair, which no
  release here contains.)
  Every per-cell variance is affine in the cell's count, V(c) = V(0) + c·(V(1) − V(0))
  (``Mechanism.variance``), so Var = m·V(0) + t_S·(V(1) − V(0)).
* **GRR** — one report per person, so cells are negatively correlated (§3.1: Cov(C_u, C_v) =
  −[c_u p q + c_v p q + (n − c_u − c_v) q²]). Summed over S this is the variance of a sum of
  independent per-person indicators "my report lands in S": probability π₁ = p + (m − 1)q for
  the t_S people whose cell is in S and π₀ = m·q for the others, so Var ĉ_S =
  [t_S π₁(1 − π₁) + (n − t_S) π₀(1 − π₀)]/(p − q)² (the covariance sum of §3.1, exactly).
* **Hadamard response** ([ASZ19]) — one report per person read by every cell of its block:
  :meth:`~dpcore.mechanisms.hadamard.HadamardResponse.sum_variance` (per person, the second
  moment of the block's ±1 sum over S). Blocked form (ε > 1): exact in (m, t_S, n, d),
  averaged over the release's own public permutation, which the analysis does not see.
  ε ≤ 1: the term that depends on which cells hold the people (pairs of S whose rows XOR to a
  person's row) is taken at its largest: a conservative interval, at most ≈ √(2 − u) ≈ 1.21×
  wider than the exact one at ε = 1, exact for single cells.

t_S is not public, so the variance is taken at the released answer clipped to [0, n] (plug-in);
the coverage tests measure what that costs. The interval is answer ± z·sd with z = 1.96 (Gaussian
noise; local mechanisms, whose estimates are sums over n people) or z = ln 20/√2 ≈ 2.12 for the
Laplace family: the 95 % quantile of one Laplace over its sd, the heaviest-tailed case (a sum of
several is closer to normal); the whole-number noises (discrete Laplace, and OpenDP's discrete
Gaussian of a published folder) add 1 for their steps.

A sparse release's answer replaces the empty cells it does not name by their mean released value
(:mod:`dpcore.analyses.sums`), the expected sum given the release: its error variance is at most
the dense one (Rao–Blackwell), so the same interval is conservative there.

**Base-Pos on central noise** (Laplace, discrete Laplace, Gaussian): a clipped cell
max(c + Z, 0) lies between c + Z and c + Z⁺ (Z⁺ = max(Z, 0), as c ≥ 0), so the clipped sum's
error lies between ΣZ and ΣZ⁺ whatever the table. Hence t_S ≤ answer − ΣZ and t_S ≥ answer − ΣZ⁺:
the upper end is the Base interval's (a one-sided 97.5 % bound on −ΣZ), the lower end subtracts
the 97.5 % quantile of ΣZ⁺ over m cells — a law of public parameters only: simulated with a fixed
public seed (:data:`SIMULATION_DRAWS` draws, an upper 99.9 % confidence bound on the quantile,
:func:`dpcore.evaluation.margins.upper_quantile`) up to :data:`SIMULATED_UP_TO` cells, beyond
that m·E Z⁺ + 2.12·sd(Z⁺)·√m (central limit theorem, Laplace's z for margin). Both ends hold
with 97.5 %, so the interval covers with at least 95 % (union bound), and is conservative
(it allows every cell in S the largest bias an empty cell can get); the lower end is at least 0.

Not covered here (no interval, and the method says why; :mod:`.simulated` simulates one on a
public stand-in where it was measured to cover): other post-processings (clipping of local
estimates, normalisation, WLS and TopDown fits bias the sum by amounts that depend on the
confidential table), the baselines (not unbiased), and the mechanisms whose estimates are coupled
beyond these laws (stability histogram, top-k). A published folder's WLS and TopDown levels get
bounds from their manifest instead (:mod:`dpcore.interfaces.published_analyses`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpcore.evaluation.margins import discrete_gaussian, upper_quantile

Z_NORMAL = 1.959963984540054
Z_LAPLACE = math.log(20) / math.sqrt(2)
#: "discrete_gaussian" is OpenDP's noise in a published folder (:mod:`dpcore.interfaces.published_analyses`).
INDEPENDENT = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian", "sue", "oue", "blh",
               "olh", "hm", "dbitflip", "ss", "cms", "hcms")
#: Noise laws of published folders only (not a mechanism of the registry).
PUBLISHED_ONLY = ("discrete_gaussian",)
#: Whole-number noises: the half-width gains 1 for their steps.
DISCRETE = ("discrete_laplace", "discrete_gaussian")
CORRELATED = ("grr",)
#: Hadamard response: correlated within a block (:meth:`HadamardResponse.sum_variance`).
HADAMARD = ("hr",)
COVERED = INDEPENDENT + CORRELATED + HADAMARD
#: Mechanisms whose Base-Pos sums get the bound interval (module docstring).
CLIPPED = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")
#: The attribute holding each clipped mechanism's noise scale (b, α, σ).
NOISE_SCALE = {"laplace": "scale", "discrete_laplace": "alpha", "gaussian": "sigma",
               "discrete_gaussian": "sigma"}
SIMULATED_UP_TO = 256
SIMULATION_DRAWS = 20_000
#: The seed of the clipped-noise simulation: public (it draws no privacy noise).
SIMULATION_SEED = 20_261_129

METHOD_TRUE = "the true table: exact, no interval"
METHOD_INDEPENDENT = ("closed form: independent cells, Var = Σ per-cell variance at the released "
                      "answer (clipped to [0, n]); ±{z:.2f} sd")
METHOD_GRR = ("closed form: GRR's one report per person makes cells negatively correlated; Var "
              "of the sum from each person's chance of reporting into the set, at the released "
              "answer (clipped to [0, n]); ±1.96 sd")
METHOD_HR = ("closed form: Hadamard response's one report per person is read by every cell of "
             "its block; Var of the sum from each person's second moment over the set, at the "
             "released answer (clipped to [0, n]){how}; ±1.96 sd")
HR_BLOCKED = ", averaged over the release's public permutation"
HR_BOUNDED = (", the part that depends on where the people are taken at its largest "
              "(conservative)")
METHOD_CLIPPED = ("bound: Base-Pos moves a sum's error between ΣZ and ΣZ⁺ (noise Z, its positive "
                  "part Z⁺); high = answer + the Base half-width (±{z:.2f} sd), low = answer − "
                  "the 97.5 % quantile of ΣZ⁺ (simulated with a public seed up to "
                  f"{SIMULATED_UP_TO} cells, normal beyond), at least 0; conservative")
SPARSE_NOTE = "; sparse release: unnamed empty cells at their mean value (conservative)"
NOT_COVERED_POST = ("no interval: post-processing '{post}' biases a sum by an amount that depends "
                    "on the confidential table, and no closed form is implemented here")
NOT_COVERED = "no interval: no closed form for sums of {key} estimates is implemented here"


class Interval:
    """The 95 % interval rule of one release: ``bounds(answers, cells)`` → (low, high) arrays
    (NaN when not covered) and ``method``, the sentence each answer carries."""

    def __init__(self, key: str | None, mechanism=None, postprocess: str = "base",
                 n: float = 0.0, d: int = 0, sparse: bool = False):
        self.key, self.mechanism, self.n, self.d = key, mechanism, float(n), int(d)
        #: Whether :meth:`variance` is the exact one (HR with ε ≤ 1: an upper bound).
        self.exact = key not in HADAMARD or mechanism.layout(self.d).blocked
        if key is None:
            self.method = METHOD_TRUE
        elif postprocess == "base_pos" and key in CLIPPED:
            self.method = METHOD_CLIPPED.format(z=self.z)
        elif postprocess != "base":
            self.method = NOT_COVERED_POST.format(post=postprocess)
        elif key not in COVERED:
            self.method = NOT_COVERED.format(key=key)
        elif key in HADAMARD:
            self.method = METHOD_HR.format(how=HR_BLOCKED if self.exact else HR_BOUNDED)
        elif key in CORRELATED:
            self.method = METHOD_GRR
        else:
            self.method = METHOD_INDEPENDENT.format(z=self.z)
        self.clipped = postprocess == "base_pos" and key in CLIPPED
        self.covered = key in COVERED and postprocess == "base" or self.clipped
        if self.covered and sparse:
            self.method += SPARSE_NOTE
        if self.covered and key in INDEPENDENT:
            zero, one = np.broadcast_to(np.asarray(
                mechanism.variance(np.array([0.0, 1.0]), n=self.n, d=self.d), dtype=float), 2)
            self.intercept, self.slope = float(zero), float(one - zero)

    @property
    def z(self) -> float:
        return Z_LAPLACE if self.key in ("laplace", "discrete_laplace") else Z_NORMAL

    def variance(self, cells, total) -> np.ndarray:
        """Var of the released sum over ``cells`` cells whose true total is ``total``."""
        cells = np.asarray(cells, dtype=float)
        total = np.clip(np.asarray(total, dtype=float), 0.0, self.n)
        if self.key in HADAMARD:
            return self.mechanism.sum_variance(cells, total, self.n, self.d)
        if self.key in CORRELATED:
            _, p, q = self.mechanism._probabilities(self.d)
            inside = p + (cells - 1) * q
            outside = cells * q
            return (total * inside * (1 - inside)
                    + (self.n - total) * outside * (1 - outside)) / (p - q) ** 2
        return cells * self.intercept + total * self.slope

    def bounds(self, answers, cells) -> tuple[np.ndarray, np.ndarray]:
        answers = np.asarray(answers, dtype=float)
        if not self.covered:
            nan = np.full(answers.shape, np.nan)
            return (answers.copy(), answers.copy()) if self.key is None else (nan, nan.copy())
        half = self.z * np.sqrt(np.maximum(self.variance(cells, answers), 0.0))
        if self.key in DISCRETE:
            half = half + 1.0
        if self.clipped:
            lift = np.array([_positive_part_quantile(self.key, self._noise_scale(), int(m))
                             for m in np.asarray(cells).ravel()]).reshape(np.shape(answers))
            return np.maximum(answers - lift, 0.0), answers + half
        return answers - half, answers + half

    def _noise_scale(self) -> float:
        return float(getattr(self.mechanism, NOISE_SCALE[self.key]))


def _positive_part_draws(key: str, scale: float, rng, size) -> np.ndarray:
    """Draws of Z⁺ = max(Z, 0) for the mechanism's noise (``scale``: b, α or σ)."""
    if key == "laplace":
        z = rng.laplace(0.0, scale, size)
    elif key == "gaussian":
        z = rng.normal(0.0, scale, size)
    elif key == "discrete_gaussian":
        z = discrete_gaussian(rng, scale, int(np.prod(size))).reshape(size).astype(float)
    else:   # two-sided geometric: difference of two geometric counts of failures
        p = 1.0 - scale
        z = (rng.geometric(p, size) - rng.geometric(p, size)).astype(float)
    return np.maximum(z, 0.0)


def _positive_part_moments(key: str, scale: float) -> tuple[float, float]:
    """E Z⁺ and Var Z⁺ (Laplace b: b/2, 3b²/4; Gaussian σ: σ/√(2π), σ²(1/2 − 1/(2π));
    discrete Laplace α: α/((1+α)(1−α)), α/(1−α)² − (E Z⁺)²; discrete Gaussian: numerically)."""
    if key == "laplace":
        return scale / 2, 0.75 * scale ** 2
    if key == "gaussian":
        return scale / math.sqrt(2 * math.pi), scale ** 2 * (0.5 - 1 / (2 * math.pi))
    if key == "discrete_gaussian":   # from its mass function over |z| ≤ 12σ + 2
        support = np.arange(0, math.ceil(12 * scale) + 3, dtype=float)
        mass = np.exp(-support ** 2 / (2 * scale ** 2))
        mass /= 2 * mass.sum() - mass[0]
        mean = float((support * mass).sum())
        return mean, float((support ** 2 * mass).sum()) - mean ** 2
    mean = scale / ((1 + scale) * (1 - scale))
    return mean, scale / (1 - scale) ** 2 - mean ** 2


@lru_cache(maxsize=4096)
def _positive_part_quantile(key: str, scale: float, cells: int) -> float:
    """The 97.5 % quantile of ΣZ⁺ over ``cells`` cells (module docstring)."""
    if cells == 0:
        return 0.0
    if cells > SIMULATED_UP_TO:
        mean, var = _positive_part_moments(key, scale)
        return cells * mean + Z_LAPLACE * math.sqrt(cells * var)
    rng = np.random.default_rng([SIMULATION_SEED, cells])
    sums = _positive_part_draws(key, scale, rng, (SIMULATION_DRAWS, cells)).sum(axis=1)
    return upper_quantile(sums, 0.975)
