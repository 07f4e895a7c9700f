"""Central mechanisms: a trusted curator counts every commute exactly, then randomises the counts.

Five mechanisms, all over the dense domain of origin × destination cells (each class lists its
papers in ``references``):

* :class:`Laplace` — ``c + Lap(Δ₁/ε)`` on every cell, ε-DP (the thesis's central baseline);
* :class:`DiscreteLaplace` — the same with two-sided geometric noise, so outputs stay integers;
* :class:`Gaussian` — ``c + N(0, σ²)`` with σ from the exact (analytic) calibration, (ε, δ)-DP;
* :class:`StabilityHistogram` — Laplace noise on the non-zero cells only, released only above a
  threshold τ, (ε, δ)-DP (the thesis's second central mechanism);
* :class:`TopK` — private selection of the k busiest commutes (one-shot Gumbel top-k) plus Laplace
  counts for them, ε-DP.

Neighbouring datasets are selectable (``neighbours``): *substitution* — one person's commute
changes, so two cells move by one (L1 sensitivity 2, L2 √2; the thesis) — or *add/remove* — one
person joins or leaves, so one cell moves by one (sensitivity 1).

Every release is exact in distribution up to floating point. Floating-point noise samplers leak
through their low-order bits (Mironov, CCS 2012): this is a simulation tool for studying utility.
A production release should use vetted samplers such as OpenDP's, which are deliberately not
seedable.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from dpcore.mechanisms import register
from dpcore.mechanisms.base import (
    ADD_REMOVE,
    DELTA,
    EPSILON,
    NEIGHBOURS,
    SUBSTITUTION,
    CentralMechanism,
    Param,
    occupied_cells,
)

TEXTBOOK, TIGHT = "textbook", "tight"

THRESHOLD_RULE = Param(
    "threshold", "Threshold rule", TEXTBOOK, str, choices=(TEXTBOOK, TIGHT),
    help="Textbook: τ = 1 + b·ln(2/δ), the thesis's rule (δ is 4× conservative). "
         "Tight: τ = 1 + b·ln(1/(2δ)), the smallest τ that still gives (ε, δ)-DP.")
TOP_K = Param("k", "k (commutes to select)", 10, int, low=1, high=1000,
              help="How many of the busiest commutes to select and release; all others are 0.")

_NEIGHBOURS_TEXT = {SUBSTITUTION: "one person's commute is replaced by another (two cells change)",
                    ADD_REMOVE: "one person is added or removed (one cell changes)"}


def l1_sensitivity(neighbours: str) -> float:
    """L1 sensitivity of the count vector: 2 under substitution (one cell −1, another +1), 1 under
    add/remove (one cell ±1)."""
    return 2.0 if neighbours == SUBSTITUTION else 1.0


def l2_sensitivity(neighbours: str) -> float:
    """L2 sensitivity of the count vector: √2 under substitution (one cell −1, another +1), 1 under
    add/remove (one cell ±1)."""
    return float(np.sqrt(2.0)) if neighbours == SUBSTITUTION else 1.0


def _as_counts(counts) -> np.ndarray:
    """The true counts as a 1-D non-negative array, or a ValueError saying what is wrong."""
    counts = np.asarray(counts)
    if counts.ndim != 1:
        raise ValueError(f"counts must be a one-dimensional vector over the domain; "
                         f"got an array of shape {counts.shape}.")
    if not (np.issubdtype(counts.dtype, np.integer) or np.issubdtype(counts.dtype, np.floating)):
        raise ValueError(f"counts must be numbers; got dtype {counts.dtype}.")
    if counts.dtype.kind == "f" and not np.isfinite(counts).all():
        raise ValueError("counts must be finite; found NaN or infinity.")
    if counts.size and counts.min() < 0:
        raise ValueError(f"counts must be non-negative; cell {int(np.argmin(counts))} "
                         f"is {counts.min()}.")
    return counts


def analytic_gaussian_sigma(epsilon: float, delta: float, l2: float = 1.0) -> float:
    """Smallest σ for which ``f(D) + N(0, σ²)`` is (ε, δ)-DP at L2 sensitivity ``l2`` [BW18].

    Solves the exact privacy profile of Balle, Wang, "Improving the Gaussian mechanism for
    differential privacy", ICML 2018, Thm 8: ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) = δ``, whose
    left side decreases in σ, by Brent's method, then nudges σ up until the inequality holds in
    floating point, so the returned σ is never below the exact requirement.
    """
    if not (epsilon > 0 and 0 < delta < 1 and l2 > 0):
        raise ValueError(f"need epsilon > 0, 0 < delta < 1 and l2 > 0; "
                         f"got epsilon={epsilon}, delta={delta}, l2={l2}.")

    def excess(s):  # σ/Δ = s; the privacy profile at ε minus δ
        return (special.ndtr(0.5 / s - epsilon * s)
                - np.exp(epsilon + special.log_ndtr(-0.5 / s - epsilon * s)) - delta)

    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    lo = hi
    while excess(lo) <= 0:
        lo /= 2.0
    s = optimize.brentq(excess, lo, hi, xtol=1e-300, rtol=1e-14, maxiter=500)
    while excess(s) > 0:
        s = np.nextafter(s, np.inf) * (1 + 1e-15)
    return float(s * l2)


#: Cells drawn at a time by :func:`laplace_noise`: its passes stay in the CPU cache (512 KB).
NOISE_CHUNK = 1 << 16


def laplace_noise(rng: np.random.Generator, scale: float, size: int, add_to=None) -> np.ndarray:
    """``size`` independent Lap(0, ``scale``) draws (plus ``add_to``, when given), as
    ``scale · E · S`` with E ~ Exp(1) and S a fair random sign: |Lap(b)| is Exp(1/b) and its sign
    independent of it, so this is the Laplace law exactly (up to floating point, as NumPy's own
    sampler). NumPy's ``Generator.laplace`` takes a logarithm per draw; its ziggurat exponential
    and one random bit per sign are about 3× faster (9.8 M cells, the ED level: 0.19 → 0.06 s of
    CPU, ``bench/bench_ed_change_profile.py``). Drawn a cache-sized chunk at a time, the signs'
    bits first (one byte per cell), then the chunk's exponentials."""
    out = np.empty(size)
    signs = np.unpackbits(np.frombuffer(rng.bytes((size + 7) // 8), dtype=np.uint8), count=size)
    factor = np.empty(min(size, NOISE_CHUNK))
    for start in range(0, size, NOISE_CHUNK):
        part = out[start:start + NOISE_CHUNK]
        sign = factor[:part.size]
        rng.standard_exponential(out=part)
        np.multiply(signs[start:start + NOISE_CHUNK], -2.0 * scale, out=sign)
        sign += scale                          # scale for a 0 bit, −scale for a 1 bit: exact
        part *= sign
        if add_to is not None:
            part += add_to[start:start + NOISE_CHUNK]
    return out


class _NeighbourAware(CentralMechanism):
    """Shared description of the neighbouring relation for the mechanisms that declare it."""

    def _neighbours_line(self) -> str:
        return (f"Neighbouring datasets: **{self.neighbours.replace('_', '/')}** — "
                f"{_NEIGHBOURS_TEXT[self.neighbours]}.")


@register
class Laplace(_NeighbourAware):
    """Laplace mechanism on the histogram [DMNS06]: ``ĉ_v = c_v + Lap(b)``, ``b = Δ₁/ε``.

    ε-DP with ``b = 2/ε`` under substitution (the thesis) or ``b = 1/ε`` under add/remove.
    Unbiased, independent cells, ``Var = 2b²``.

    Drawn by :func:`laplace_noise`. Floating-point caveat (Mironov, CCS 2012): a floating-point
    Laplace sampler (this one, as NumPy's) leaks through the low-order bits of its output, so releasing these floats verbatim is not ε-DP in practice. This
    tool simulates the mechanism's *utility*; a real release should use OpenDP's vetted (snapped or
    discrete) samplers, which are not seedable and hence not used here.
    """

    key = "laplace"
    name = "Laplace"
    params = (EPSILON, NEIGHBOURS)
    references = ("[DMNS06] Dwork, McSherry, Nissim, Smith. Calibrating noise to sensitivity in "
                  "private data analysis. TCC 2006.",
                  "[Mir12] Mironov. On significance of the least significant bits for "
                  "differential privacy. CCS 2012.")

    @property
    def scale(self) -> float:
        """The Laplace scale b = Δ₁/ε."""
        return l1_sensitivity(self.neighbours) / self.epsilon

    def release(self, counts, rng):
        counts = _as_counts(counts)
        return laplace_noise(rng, self.scale, counts.size, add_to=counts)

    def variance(self, counts, n=None, d=None):
        return np.full(np.shape(counts), 2 * self.scale ** 2)

    def explain(self):
        b = self.scale
        return (
            "**Laplace mechanism.** The curator counts every commute exactly and adds independent "
            "Laplace noise to every cell of the matrix, including the empty ones.\n\n"
            f"$$\\hat c_v = c_v + Z_v,\\quad Z_v \\sim \\mathrm{{Lap}}(b),\\quad "
            f"b = \\Delta_1/\\varepsilon = {l1_sensitivity(self.neighbours):g}/{self.epsilon:g}"
            f" = {b:.4g}$$\n\n"
            f"Each released count is unbiased with variance $2b^2 = {2 * b * b:.4g}$ "
            f"(standard deviation {np.sqrt(2) * b:.3g} commuters). "
            f"{self._neighbours_line()} Guarantee: ε-DP with ε = {self.epsilon:g}.\n\n"
            "In plain words: every number you see is the true number plus or minus a random amount "
            f"that is typically about {b:.3g} commuters, whatever the size of the flow.")


@register
class DiscreteLaplace(_NeighbourAware):
    """Discrete Laplace (two-sided geometric) mechanism [GRS09]: integer noise, ε-DP.

    ``P[Z = z] = (1−α)/(1+α) · α^|z|`` with ``α = e^{−ε/Δ₁}``; ``Var = 2α/(1−α)²``. Sampled as the
    difference of two independent geometric variables on {0, 1, …}, each drawn as ``⌊E/λ⌋`` with
    ``E ~ Exp(1)`` and ``λ = ε/Δ₁`` (``P[⌊E/λ⌋ ≥ k] = e^{−λk} = α^k``), which is exactly
    Geometric(1 − α) and twice as fast as NumPy's geometric sampler. Exact in distribution up to
    floating point; the output is integer-valued (returned as float64).
    """

    key = "discrete_laplace"
    name = "Discrete Laplace (geometric)"
    params = (EPSILON, NEIGHBOURS)
    references = ("[GRS09] Ghosh, Roughgarden, Sundararajan. Universally utility-maximizing "
                  "privacy mechanisms. STOC 2009.",)

    @property
    def alpha(self) -> float:
        """α = e^{−ε/Δ₁}, the ratio of successive probabilities of the noise."""
        return float(np.exp(-self.epsilon / l1_sensitivity(self.neighbours)))

    def release(self, counts, rng):
        counts = _as_counts(counts)
        rate = self.epsilon / l1_sensitivity(self.neighbours)
        up = np.floor(rng.standard_exponential(counts.size) / rate)
        down = np.floor(rng.standard_exponential(counts.size) / rate)
        return counts + (up - down)

    def variance(self, counts, n=None, d=None):
        a = self.alpha
        return np.full(np.shape(counts), 2 * a / (1 - a) ** 2)

    def explain(self):
        a = self.alpha
        return (
            "**Discrete Laplace (two-sided geometric) mechanism.** Like Laplace, but the noise is "
            "a whole number, so released counts stay whole numbers.\n\n"
            f"$$P[Z = z] = \\frac{{1-\\alpha}}{{1+\\alpha}}\\,\\alpha^{{|z|}},\\quad "
            f"\\alpha = e^{{-\\varepsilon/\\Delta_1}} = {a:.4g}$$\n\n"
            f"Unbiased, variance $2\\alpha/(1-\\alpha)^2 = {2 * a / (1 - a) ** 2:.4g}$ "
            f"(close to the continuous $2b^2$ for small ε). {self._neighbours_line()} "
            f"Guarantee: ε-DP with ε = {self.epsilon:g}.\n\n"
            "In plain words: every count moves up or down by a random whole number of commuters; "
            "small moves are much more likely than large ones.")


@register
class Gaussian(_NeighbourAware):
    """Gaussian mechanism with the analytic calibration of Balle & Wang [BW18]: (ε, δ)-DP.

    ``σ`` is the smallest value satisfying the exact privacy profile [BW18, Thm 8]
    at L2 sensitivity ``Δ₂ = √2`` (substitution) or 1 (add/remove). It is valid for every ε, unlike
    the classic ``Δ₂√(2 ln(1.25/δ))/ε`` (only for ε < 1, and loose there). ``Var = σ²``, unbiased.
    The same floating-point caveat as :class:`Laplace` applies.
    """

    key = "gaussian"
    name = "Gaussian (analytic)"
    uses_delta = True
    params = (EPSILON, DELTA, NEIGHBOURS)
    references = ("[BW18] Balle, Wang. Improving the Gaussian mechanism for differential privacy: "
                  "analytical calibration and optimal denoising. ICML 2018.",)

    def __init__(self, **values):
        super().__init__(**values)
        self._sigma = analytic_gaussian_sigma(self.epsilon, self.delta,
                                              l2_sensitivity(self.neighbours))

    @property
    def sigma(self) -> float:
        """The calibrated noise standard deviation σ (commuters)."""
        return self._sigma

    @property
    def classic_sigma(self) -> float:
        """The textbook σ = Δ₂√(2 ln(1.25/δ))/ε, for comparison only. Its proof [DR14, Thm A.1]
        covers ε < 1 only: beyond, it is unproven, not "not private" — against the exact condition
        [BW18, Thm 8] it stays private up to ε ≈ 8.4 at δ = 10⁻⁵
        (:func:`dpcore.theory.privacy_theory.classic_gaussian_limit`), where it falls below the
        analytic σ (``explain`` says which holds at this ε)."""
        return (l2_sensitivity(self.neighbours) * np.sqrt(2 * np.log(1.25 / self.delta))
                / self.epsilon)

    @property
    def _laplace_sd(self) -> float:
        """The standard deviation √2·Δ₁/ε of :class:`Laplace` at this ε and neighbours."""
        return math.sqrt(2) * l1_sensitivity(self.neighbours) / self.epsilon

    @property
    def laplace_ratio(self) -> float:
        """σ over Laplace's standard deviation at the same ε and neighbours: about 2–2.5 at
        δ = 10⁻⁶ and ε from 0.5 to 5 (more for smaller δ, below 1 only for a large δ)."""
        return self.sigma / self._laplace_sd

    def release(self, counts, rng):
        counts = _as_counts(counts)
        return counts + rng.normal(0.0, self.sigma, counts.size)

    def variance(self, counts, n=None, d=None):
        return np.full(np.shape(counts), self.sigma ** 2)

    def explain(self):
        return (
            "**Gaussian mechanism (analytic calibration).** Normal noise on every cell, with the "
            "smallest standard deviation σ that meets the exact (ε, δ) privacy condition:\n\n"
            "$$\\Phi\\!\\left(\\frac{\\Delta_2}{2\\sigma} - \\frac{\\varepsilon\\sigma}{\\Delta_2}"
            "\\right) - e^{\\varepsilon}\\,\\Phi\\!\\left(-\\frac{\\Delta_2}{2\\sigma} - "
            "\\frac{\\varepsilon\\sigma}{\\Delta_2}\\right) \\le \\delta$$\n\n"
            f"Here $\\Delta_2 = {l2_sensitivity(self.neighbours):.4g}$, so "
            f"σ = {self.sigma:.4g} (the classic formula would give {self.classic_sigma:.4g}, which "
            f"is {'loose' if self.classic_sigma >= self.sigma else 'NOT private'} here). "
            f"Unbiased, variance σ² = {self.sigma ** 2:.4g}. {self._neighbours_line()} "
            f"Guarantee: (ε, δ)-DP with ε = {self.epsilon:g}, δ = {self.delta:.3g}.\n\n"
            f"In plain words: bell-curve noise whose standard deviation is "
            f"{self.laplace_ratio:.2g}× Laplace's at the same ε and neighbours (σ = "
            f"{self.sigma:.4g} against √2·Δ₁/ε = {self._laplace_sd:.4g}), with lighter tails, "
            "in exchange for a slack δ: any outcome may become e^ε times "
            "likelier, plus δ. δ is not the chance that the ε bound fails: the privacy loss "
            "exceeds ε more often than that (Learn → Groups and budgets computes how often).")


@register
class StabilityHistogram(_NeighbourAware):
    """Stability-based histogram [KKMN09, BNS16, Vad17 §3]: (ε, δ)-DP, noise on non-zero cells only.

    Each non-zero cell gets ``Lap(b)``, ``b = Δ₁/ε``, and is released only if ``c + Z ≥ τ``; every
    other cell (including every true zero) is published as 0. The only non-ε loss is the chance that
    a cell which exists only because of one person (count 1) crosses τ: ``½e^{−(τ−1)/b}``. Hence

    * ``textbook`` (the thesis): ``τ = 1 + b·ln(2/δ)`` — for substitution ``2 ln(2/δ)/ε + 1``; the
      actual δ is δ/4, i.e. 4× conservative;
    * ``tight``: ``τ = 1 + b·ln(1/(2δ))`` — the actual δ equals the requested δ (needs δ < ½).

    δ: the thesis used ``δ = 1/(2n)`` (see :meth:`thesis_delta`); n is only known with the data, so
    the parameter keeps the shared default and callers (the UI) may pass ``1/(2n)``.

    Not unbiased: small counts are suppressed. :meth:`expected` and :meth:`variance` give the exact
    mean and variance of each cell's estimate (0 for true zeros), from truncated Laplace moments.
    Runtime touches only the non-zero cells (plus one scan to find them).
    """

    key = "stability_histogram"
    name = "Stability histogram"
    uses_delta = True
    params = (EPSILON, DELTA, NEIGHBOURS, THRESHOLD_RULE)
    references = ("[KKMN09] Korolova, Kenthapadi, Mishra, Ntoulas. Releasing search queries and "
                  "clicks privately. WWW 2009.",
                  "[BNS16] Bun, Nissim, Stemmer. Simultaneous private learning of multiple "
                  "concepts. ITCS 2016.",
                  "[Vad17] Vadhan. The complexity of differential privacy. 2017, §3.")

    def __init__(self, **values):
        super().__init__(**values)
        if self.threshold == TIGHT and self.delta >= 0.5:
            raise ValueError(f"The 'delta' parameter of {type(self).__name__} must be below 0.5 "
                             f"with the tight threshold rule (τ = 1 + b·ln(1/(2δ)) would be "
                             f"below 1). Got {self.delta!r} instead.")

    @staticmethod
    def thesis_delta(n: int) -> float:
        """The thesis's choice δ = 1/(2n), inside the recommended range (0, 1/n)."""
        return 1.0 / (2.0 * n)

    @property
    def scale(self) -> float:
        """The Laplace scale b = Δ₁/ε of the noise on present cells."""
        return l1_sensitivity(self.neighbours) / self.epsilon

    @property
    def tau(self) -> float:
        """The release threshold τ in commuters (a cell is published iff its noisy count ≥ τ)."""
        log_term = np.log(2 / self.delta) if self.threshold == TEXTBOOK else -np.log(2 * self.delta)
        return 1.0 + self.scale * float(log_term)

    @property
    def exact_delta(self) -> float:
        """The δ actually spent: the chance that a count-1 cell is released, ½e^{−(τ−1)/b}."""
        return 0.5 * float(np.exp(-(self.tau - 1) / self.scale))

    def release(self, counts, rng):
        counts = _as_counts(counts)
        present, people = occupied_cells(counts)
        noisy = people + rng.laplace(0.0, self.scale, present.size)
        out = np.zeros(counts.size)
        keep = noisy >= self.tau
        out[present[keep]] = noisy[keep]
        return out

    def _moments(self, counts):
        """Per cell: P[release], E[Y] − c and E[(Y − c)²] for Y the published value (c > 0)."""
        c = np.asarray(counts, dtype=float)
        b, t = self.scale, self.tau - c  # released iff Z ≥ t
        s = np.abs(t)
        tail = 0.5 * np.exp(-s / b)  # P[Z ≥ s] for s ≥ 0
        m1 = tail * (s + b)  # E[Z; Z ≥ s]
        m2 = tail * (s * s + 2 * b * s + 2 * b * b)  # E[Z²; Z ≥ s]
        above = t >= 0
        p = np.where(above, tail, 1 - tail)
        first = m1  # E[Z; Z ≥ t]: m1(t) above; for t < 0 it is 0 − E[Z; Z < t] = m1(−t)
        second = np.where(above, m2, 2 * b * b - m2)
        bias = first - c * (1 - p)
        mean_square = second + c * c * (1 - p)
        return p, bias, mean_square

    def release_probability(self, counts) -> np.ndarray:
        """P[a cell is published] per cell: 0 for true zeros, ``P[c + Lap(b) ≥ τ]`` otherwise."""
        p, _, _ = self._moments(counts)
        return np.where(np.asarray(counts) > 0, p, 0.0)

    def expected(self, counts) -> np.ndarray:
        """Exact mean of each published value (biased: suppression pulls small counts to 0)."""
        _, bias, _ = self._moments(counts)
        return np.where(np.asarray(counts) > 0, np.asarray(counts, dtype=float) + bias, 0.0)

    def variance(self, counts, n=None, d=None):
        """Exact variance of each published value, suppression included (0 for true zeros).

        Far above τ it is the noise variance 2b²; near τ it mixes "published" and "0".
        Computed on the non-zero cells only (Base-Cut asks it of a stand-in over the whole domain,
        9.8 M cells at ED level, for each ε).
        """
        counts = np.asarray(counts)
        present = counts > 0
        _, bias, mean_square = self._moments(counts[present])
        out = np.zeros(counts.shape)
        out[present] = mean_square - bias * bias
        return out

    def explain(self):
        b, tau = self.scale, self.tau
        rule = ("textbook rule $\\tau = 1 + b\\ln(2/\\delta)$ (the thesis; the δ actually spent is "
                "δ/4)" if self.threshold == TEXTBOOK else
                "tight rule $\\tau = 1 + b\\ln(1/(2\\delta))$ (the δ spent is exactly δ)")
        return (
            "**Stability histogram.** Only commutes that actually occur get noise; a commute is "
            "published only if its noisy count reaches a threshold τ, otherwise it shows as 0. "
            "Empty cells are never published, so the noise does not grow with the size of the "
            "map.\n\n"
            f"$$\\hat c_v = \\begin{{cases}} c_v + Z_v & c_v > 0 \\text{{ and }} "
            f"c_v + Z_v \\ge \\tau"
            f"\\\\ 0 & \\text{{otherwise}}\\end{{cases}},\\quad Z_v \\sim \\mathrm{{Lap}}(b),\\ "
            f"b = \\Delta_1/\\varepsilon = {b:.4g}$$\n\n"
            f"Threshold by the {rule}: τ = {tau:.4g} commuters. The only way privacy can fail is "
            f"that a commute made by a single person gets published: probability "
            f"$\\tfrac12 e^{{-(\\tau-1)/b}}$ = {self.exact_delta:.3g}. {self._neighbours_line()} "
            f"Guarantee: (ε, δ)-DP with ε = {self.epsilon:g}, δ = {self.delta:.3g}.\n\n"
            f"In plain words: flows smaller than about {tau:.3g} commuters mostly disappear; the "
            "published ones are off by a Laplace amount like the Laplace mechanism's. Not "
            "unbiased: small flows are pulled towards 0.")


@register
class TopK(_NeighbourAware):
    """Private top-k busiest commutes: one-shot Gumbel top-k selection, then Laplace counts. ε-DP.

    Budget split (pure sequential composition):

    * ε/2 selects k cells. Adding i.i.d. ``Gumbel(b_sel)`` to every count and taking the k largest
      (in order) has exactly the distribution of k rounds of the exponential mechanism with
      ``P[i] ∝ exp(c_i/b_sel)``, removing each winner [DR19]. Each round gets ε/(2k), so
      ``b_sel = d_range·2k/ε`` with range sensitivity ``d_range`` = 1 (add/remove) or 2
      (substitution, which moves one count up and another down, so two scores' gap can change
      by 2). Only the chosen indices are used, never the Gumbel scores.
    * ε/2 publishes the counts of the k chosen cells with ``Lap(b_cnt)``, ``b_cnt = 2Δ₁/ε``
      (the restricted count vector has L1 sensitivity ≤ Δ₁ whatever cells were chosen).

    Every other cell is published as 0 (post-processing of the selection). Estimates are not
    unbiased and their variance depends on the whole vector through the selection, so
    :meth:`variance` returns None.
    """

    key = "topk"
    name = "Top-k busiest commutes (Gumbel)"
    params = (EPSILON, NEIGHBOURS, TOP_K)
    references = ("[MT07] McSherry, Talwar. Mechanism design via differential privacy. FOCS 2007.",
                  "[DR19] Durfee, Rogers. Practical differentially private top-k selection with "
                  "pay-what-you-get composition. NeurIPS 2019.")

    @property
    def selection_scale(self) -> float:
        """Gumbel scale b_sel = d_range / (ε/(2k)) of the selection."""
        return l1_sensitivity(self.neighbours) * 2 * self.k / self.epsilon

    @property
    def count_scale(self) -> float:
        """Laplace scale b_cnt = Δ₁ / (ε/2) of the published counts of the chosen cells."""
        return l1_sensitivity(self.neighbours) * 2 / self.epsilon

    def select(self, counts, rng) -> np.ndarray:
        """Indices of the k selected cells, most likely-busiest first (uses ε/2 of the budget)."""
        counts = _as_counts(counts)
        if self.k > counts.size:
            raise ValueError(f"The 'k' parameter of {type(self).__name__} must not exceed the "
                             f"number of cells ({counts.size}). Got {self.k} instead.")
        scores = counts + rng.gumbel(0.0, self.selection_scale, counts.size)
        top = np.argpartition(scores, counts.size - self.k)[counts.size - self.k:]
        return top[np.argsort(-scores[top])]

    def release(self, counts, rng):
        counts = _as_counts(counts)
        chosen = self.select(counts, rng)
        out = np.zeros(counts.size)
        out[chosen] = counts[chosen] + rng.laplace(0.0, self.count_scale, self.k)
        return out

    def variance(self, counts, n=None, d=None):
        """None: a data-dependent selection mixed with Laplace noise has no closed form."""
        return None

    def explain(self):
        eps, k = self.epsilon, self.k
        return (
            f"**Top-{k} busiest commutes.** The budget ε = {eps:g} is split in two halves.\n\n"
            f"1. *Choose* {k} commutes (ε/2): add Gumbel noise of scale "
            f"$b_{{sel}} = d_{{range}}\\cdot 2k/\\varepsilon = {self.selection_scale:.4g}$ to "
            f"every count and keep the {k} largest. This is exactly {k} rounds of the exponential "
            "mechanism, $P[i] \\propto e^{c_i/b_{sel}}$, each with ε/(2k) "
            f"= {eps / (2 * k):.3g}, removing each winner.\n"
            f"2. *Count* them (ε/2): publish $c_v + \\mathrm{{Lap}}(b_{{cnt}})$ for the chosen "
            f"cells, $b_{{cnt}} = 2\\Delta_1/\\varepsilon = {self.count_scale:.4g}$. All other "
            "commutes are published as 0.\n\n"
            f"Total: ε/2 + ε/2 = ε by sequential composition. {self._neighbours_line()} "
            f"Guarantee: ε-DP with ε = {eps:g}.\n\n"
            f"In plain words: you learn which {k} commutes are (very probably) the busiest and "
            "roughly how busy, and nothing about the rest. The larger k, the noisier the choice.")
