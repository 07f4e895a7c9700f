"""The 95 % interval of a sum of released cells, from the mechanism's law alone.

Every analysis answer is a sum Σ_S ĉ_v over a set S of m cells whose true total is t_S. For an
unbiased release its variance is Σ_S Var ĉ_v + Σ_{u≠v∈S} Cov(ĉ_u, ĉ_v), and for the mechanisms
covered here it has a closed form in (m, t_S, n, d) (reference: MECHANISMS.md §2–§4):

* **Independent cells** — Laplace, discrete Laplace, Gaussian (independent noise per cell,
  §2.1–2.3); SUE and OUE (a report's bits are independent across cells, Cov = 0, §3.2–3.3 and
  §4); BLH and OLH (idealised hash: one report's support indicators are independent, §4).
  Every per-cell variance is affine in the cell's count, V(c) = V(0) + c·(V(1) − V(0))
  (``Mechanism.variance``), so Var = m·V(0) + t_S·(V(1) − V(0)).
* **GRR** — one report per person, so cells are negatively correlated (§3.1: Cov(C_u, C_v) =
  −[c_u p q + c_v p q + (n − c_u − c_v) q²]). Summed over S this is the variance of a sum of
  independent per-person indicators "my report lands in S": probability π₁ = p + (m − 1)q for
  the t_S people whose cell is in S and π₀ = m·q for the others, so Var ĉ_S =
  [t_S π₁(1 − π₁) + (n − t_S) π₀(1 − π₀)]/(p − q)² (the covariance sum of §3.1, exactly).

t_S is not public, so the variance is taken at the released answer clipped to [0, n] (plug-in);
the coverage tests measure what that costs. The interval is answer ± z·sd with z = 1.96 (Gaussian
noise; local mechanisms, whose estimates are sums over n people) or z = ln 20/√2 ≈ 2.12 for the
Laplace family: the 95 % quantile of one Laplace over its sd, the heaviest-tailed case (a sum of
several is closer to normal); discrete Laplace adds 1 for its whole-number steps.

A sparse release's answer replaces the empty cells it does not name by their mean released value
(:mod:`dpcore.analyses.sums`), the expected sum given the release: its error variance is at most
the dense one (Rao–Blackwell), so the same interval is conservative there.

Not covered (no interval, and the method says why): post-processed releases other than Base
(clipping, normalisation, WLS and TopDown fits bias the sum by amounts that depend on the
confidential table), the baselines (not unbiased), and the mechanisms whose estimates are coupled
beyond these laws or whose fast release has exact marginals only (HR, HM, dBitFlip, subset
selection, CMS/HCMS, stability histogram, top-k).
"""

from __future__ import annotations

import math

import numpy as np

Z_NORMAL = 1.959963984540054
Z_LAPLACE = math.log(20) / math.sqrt(2)
INDEPENDENT = ("laplace", "discrete_laplace", "gaussian", "sue", "oue", "blh", "olh")
CORRELATED = ("grr",)
COVERED = INDEPENDENT + CORRELATED

METHOD_TRUE = "the true table: exact, no interval"
METHOD_INDEPENDENT = ("closed form: independent cells, Var = Σ per-cell variance at the released "
                      "answer (clipped to [0, n]); ±{z:.2f} sd")
METHOD_GRR = ("closed form: GRR's one report per person makes cells negatively correlated; Var "
              "of the sum from each person's chance of reporting into the set, at the released "
              "answer (clipped to [0, n]); ±1.96 sd")
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
        if key is None:
            self.method = METHOD_TRUE
        elif postprocess != "base":
            self.method = NOT_COVERED_POST.format(post=postprocess)
        elif key not in COVERED:
            self.method = NOT_COVERED.format(key=key)
        elif key in CORRELATED:
            self.method = METHOD_GRR
        else:
            self.method = METHOD_INDEPENDENT.format(z=self.z)
        self.covered = key in COVERED and postprocess == "base"
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
        if self.key == "discrete_laplace":
            half = half + 1.0
        return answers - half, answers + half
