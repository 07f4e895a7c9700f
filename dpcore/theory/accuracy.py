"""Choosing a mechanism: error, communication and server cost side by side (thesis tables 3.1–3.3).

For a population of n commuters over d OD cells at privacy ε, :func:`compare_mechanisms` lists every
central and local mechanism with

* its per-cell variance at an empty cell (for pure local protocols, the leading term
  n q*(1−q*)/(p*−q*)²) and at a cell holding ``cell_count`` commuters — both from the
  mechanism's own ``variance()``, so no formula is repeated here;
* the order of its maximum error over all cells and a number for it (a 95% bound);
* bits each commuter sends (``bits_per_user()``) and the server's decoding cost, as an order and as
  an operation count.

:func:`recommend_local` picks the local mechanism for this d and ε and says why, following [WBLJ17]
(GRR for small domains, OUE/OLH otherwise) and the thesis (Hadamard when decoding O(n·d) is out of
reach). [WBLJ17] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private protocols for
frequency estimation", USENIX Security 2017.

Units: counts are commuters per cell, variances commuters². The thesis states its orders for
frequencies (counts / n); here they are for counts, so they carry one more factor n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from dpcore import mechanisms
from dpcore.mechanisms.base import CENTRAL, LOCAL, SUBSTITUTION, Mechanism
from dpcore.theory.privacy_theory import checked_array, whole_number

#: Probability that some cell's error exceeds the "max error" column (a union bound over cells).
FAILURE = 0.05
#: Decoding work (elementary operations) beyond which O(n·d) decoders are not recommended: about a
#: minute of compiled code, and hours for the thesis's NumPy implementation at ED level (≈ 3·10¹³).
DECODE_BUDGET = 1e11

#: The rule :func:`recommend_local` follows, in words for the Learn page (markdown). It is written
#: here as data, not read from the docstring, so that developer notes never become page text.
RECOMMENDATION_RULE = (
    "1. **Small domains: GRR.** When the number of cells d is below 3e^ε + 2, generalised "
    "randomised response is the most accurate local mechanism: its variance n(e^ε+d−2)/(e^ε−1)² "
    "is then below the 4ne^ε/(e^ε−1)² of optimised unary encoding (OUE) and optimised local "
    "hashing (OLH). It also sends only ⌈log₂ d⌉ bits per person and the server decodes in "
    "O(n + d) (Wang, Blocki, Li, Jha, USENIX Security 2017).\n"
    "2. **Otherwise, if the server can afford to decode: OUE or OLH.** Decoding checks each of "
    f"the n reports against each of the d cells, n·d operations; up to {DECODE_BUDGET:,.0f} "
    "(about a minute of compiled code) that is affordable. The two have the same variance; OLH "
    "is chosen when its hashed report is shorter than OUE's d bits, else OUE.\n"
    "3. **Otherwise (huge domains):** the Hadamard mechanism or Hadamard response, whichever has "
    "the smaller variance. Both are slightly noisier, but the server decodes them with one fast "
    "Walsh–Hadamard transform.")

# Max-error orders for counts (thesis Tables 3.1–3.2 times n). The thesis's RR row, |X|√(log|X|)/ε√n
# in frequency, comes from a Hoeffding bound; the variance n(e^ε+d−2)/(e^ε−1)² gives √(n d log d)/ε.
_ORDERS = {
    "laplace": "O(log d / ε)",
    "discrete_laplace": "O(log d / ε)",
    "gaussian": "O(√(log d · log(1/δ)) / ε)",
    "stability_histogram": "O(log(1/δ) / ε)",
    "grr": "O(√(n·d·log d) / ε)",
    "dbitflip": "O(√(n·(d/d_b)·log d) / ε)",
}
_LOCAL_ORDER = "O(√(n·log d) / ε)"

# Server decoding cost: the order, and the operation count it stands for.
_COSTS: dict[str, tuple[str, Callable[[Mechanism, int, int], float]]] = {
    "laplace": ("O(n + d)", lambda m, n, d: n + d),
    "discrete_laplace": ("O(n + d)", lambda m, n, d: n + d),
    "gaussian": ("O(n + d)", lambda m, n, d: n + d),
    "stability_histogram": ("O(n + non-empty cells)", lambda m, n, d: n + min(n, d)),
    "grr": ("O(n + d)", lambda m, n, d: n + d),
    "sue": ("O(n·d)", lambda m, n, d: n * d),
    "oue": ("O(n·d)", lambda m, n, d: n * d),
    "blh": ("O(n·d) hashes", lambda m, n, d: n * d),
    "olh": ("O(n·d) hashes", lambda m, n, d: n * d),
    "ss": ("O(n·k + d)", lambda m, n, d: n * m.subset_size(d) + d),
    "dbitflip": ("O(n·d_b + d)", lambda m, n, d: n * m.d_b + d),
    "hr": ("O(n + K log K)",
           lambda m, n, d: n + m.layout(d).outputs * math.log2(m.layout(d).outputs)),
    "hm": ("O(n·t + D log D)",
           lambda m, n, d: n * m.coefficients(d) + m.padded(d) * math.log2(m.padded(d))),
    # [Apple17]: add n m-bit vectors (CMS) or n bits and one FWHT per row (HCMS); read k entries
    # per cell.
    "cms": ("O(n·m + k·d)", lambda m, n, d: n * m.m + m.k * d),
    "hcms": ("O(n + k·m log m + k·d)", lambda m, n, d: n + m.k * m.m * math.log2(m.m) + m.k * d),
}


def _check(n, d, epsilon, cell_count=0):
    n, d = whole_number("n", n, 1), whole_number("d", d, 2, " (number of cells)")
    cell_count = whole_number("cell_count", cell_count, 0)
    epsilon = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    if cell_count > n:
        raise ValueError(f"'cell_count' ({cell_count}) cannot exceed the number of commuters "
                         f"n = {n}.")
    return int(n), int(d), float(epsilon), int(cell_count)


def _cell_variances(mech: Mechanism, n: int, d: int, cell_count: int) -> tuple[float, float] | None:
    """(variance at an empty cell, at a cell of ``cell_count``) in a table of n people and d cells,
    from ``mech.variance``; None if it has no closed form."""
    out = mech.variance(np.array([0, cell_count]), n=n, d=d)
    return None if out is None else (float(out[0]), float(out[1]))


def _max_error(mech: Mechanism, n: int, d: int, variance: float) -> float:
    """A (1 − FAILURE) bound on the largest error over the d cells (union bound).

    Laplace noise (Var = 2b²): b·ln(d/β). Stability histogram: τ + b·ln(m/β) over the m ≤ min(n, d)
    non-empty cells (a suppressed cell errs by its count < τ + |Z|). Gaussian noise and local
    estimates (sums of n independent reports, normal by the CLT): σ·z_{1−β/(2d)}.
    """
    if mech.key == "stability_histogram":
        return mech.tau + mech.scale * math.log(min(n, d) / FAILURE)
    if mech.key in ("laplace", "discrete_laplace"):
        return math.sqrt(variance / 2) * math.log(d / FAILURE)
    return math.sqrt(variance) * float(-special.ndtri(FAILURE / (2 * d)))


def _default_mechanisms(epsilon: float, delta: float, neighbours: str) -> list[Mechanism]:
    keys = mechanisms.names(CENTRAL) + mechanisms.names(LOCAL)
    shared = {"epsilon": epsilon, "delta": delta, "neighbours": neighbours}
    return [mechanisms.build(k, **mechanisms.declared(k, shared)) for k in keys]


def compare_mechanisms(n: int, d: int, epsilon: float, *, delta: float = 1e-6,
                       cell_count: int = 0, neighbours: str = SUBSTITUTION,
                       candidates: Sequence[Mechanism] | None = None) -> pd.DataFrame:
    """One row per mechanism: variance, max error, communication and decoding cost at (n, d, ε).

    Parameters
    ----------
    n : number of commuters; d : number of OD cells (|X|), at least 2.
    epsilon : privacy budget (natural log); delta : used by (ε, δ) mechanisms only.
    cell_count : commuters in the cell whose variance is shown beside the empty-cell one.
    neighbours : neighbouring relation for central mechanisms (substitution, as the thesis).
    candidates : built mechanisms to compare (default: every registered central and local one
        at this ε and δ). Mechanisms without a closed-form variance (top-k selection) are left out.

    Returns
    -------
    DataFrame with columns key, name, model, guarantee, variance_empty, variance_cell, std_empty,
    max_error (commuters, 95% over all cells), max_error_order, bits_per_user (NaN for central:
    people hand over their data), server_cost, server_operations.
    """
    n, d, epsilon, cell_count = _check(n, d, epsilon, cell_count)
    if candidates is None:
        candidates = _default_mechanisms(epsilon, delta, neighbours)
    rows = []
    for mech in candidates:
        variances = _cell_variances(mech, n, d, cell_count)
        if variances is None:
            continue
        empty, cell = variances
        cost, operations = _COSTS.get(mech.key, ("—", lambda m, n, d: math.nan))
        bits = mech.bits_per_user(d) if mech.model == LOCAL else None
        rows.append({
            "key": mech.key, "name": mech.name, "model": mech.model, "guarantee": mech.guarantee,
            "variance_empty": empty, "variance_cell": cell, "std_empty": math.sqrt(empty),
            "max_error": _max_error(mech, n, d, max(empty, cell)),
            "max_error_order": _ORDERS.get(mech.key, _LOCAL_ORDER if mech.model == LOCAL else "—"),
            "bits_per_user": math.nan if bits is None else float(bits),
            "server_cost": cost, "server_operations": float(operations(mech, n, d)),
        })
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Recommendation:
    """The local mechanism to use for a domain, and the reasoning in plain words."""

    key: str
    name: str
    reason: str


def recommend_local(d: int, epsilon: float, n: int) -> Recommendation:
    """The recommended local mechanism for d cells, n commuters and ε, with the reason.

    1. ``d < 3e^ε + 2``: GRR — its variance n(e^ε+d−2)/(e^ε−1)² is then below OUE/OLH's
       4ne^ε/(e^ε−1)², it sends ⌈log₂ d⌉ bits and decodes in O(n + d) [WBLJ17].
    2. Otherwise, if O(n·d) decoding fits :data:`DECODE_BUDGET`: OUE or OLH (the same variance);
       OLH when its hash report is shorter than OUE's d bits, else OUE.
    3. Otherwise (huge domains): the Hadamard mechanism or Hadamard response, whichever has the
       smaller variance — slightly noisier, but decoded with a fast Walsh–Hadamard transform.

    The same rule for users is :data:`RECOMMENDATION_RULE`; keep the two in step.
    """
    n, d, epsilon, _ = _check(n, d, epsilon)
    e = math.exp(epsilon)
    build = {k: mechanisms.build(k, epsilon=epsilon) for k in ("grr", "oue", "olh", "hm", "hr")}
    var = {k: _cell_variances(m, n, d, 0)[0] for k, m in build.items()
           if k in ("grr", "oue", "olh") or d * n > DECODE_BUDGET}
    bits = {k: m.bits_per_user(d) for k, m in build.items()}
    fmt = "{:.3g}".format
    if d < 3 * e + 2:
        key = "grr"
        reason = (f"With d = {d:,} cells and ε = {epsilon:g}, d < 3e^ε + 2 = {3 * e + 2:.3g}, so "
                  f"GRR is the most accurate local mechanism: variance {fmt(var['grr'])} per empty "
                  f"cell against {fmt(var['oue'])} for OUE. It sends only {bits['grr']:.0f} bits "
                  f"and the server decodes in O(n + d).")
    elif n * d <= DECODE_BUDGET:
        key = "olh" if bits["olh"] < bits["oue"] else "oue"
        other = "oue" if key == "olh" else "olh"
        reason = (f"With d = {d:,} ≥ 3e^ε + 2 = {3 * e + 2:.3g}, GRR's variance "
                  f"({fmt(var['grr'])}) grows with d while OUE and OLH stay near 4ne^ε/(e^ε−1)² "
                  f"({fmt(var['oue'])} and {fmt(var['olh'])}). {build[key].name} sends "
                  f"{bits[key]:,.0f} bits against {bits[other]:,.0f} for {build[other].name}; "
                  f"both decode in O(n·d) = {fmt(n * d)} operations, which is affordable.")
    else:
        key = min(("hm", "hr"), key=lambda k: var[k])
        reason = (f"With d = {d:,} cells GRR is far too noisy (variance {fmt(var['grr'])}), and "
                  f"OUE/OLH would need O(n·d) = {fmt(n * d)} operations to decode (OUE also "
                  f"{bits['oue']:,.0f} bits per person). {build[key].name} decodes with a fast "
                  f"Walsh–Hadamard transform in O(n + d log d), sends {bits[key]:,.0f} bits, and "
                  f"its variance {fmt(var[key])} is "
                  f"{100 * (var[key] / var['oue'] - 1):.0f}% above OUE's {fmt(var['oue'])}.")
    return Recommendation(key, build[key].name, reason)
