"""Shares: the part A of a selection's commutes B = A + C, as a fraction, with a 95 % interval.

A share is a ratio of two released sums over disjoint cell sets, A and the rest C:
R = A/(A + C). Two are answered: the share of the selection's commutes (work side: its
workers; home side: its residents) shorter than a distance (commutes with a zone without position
left out of both), and the share of its jobs (work side) or of its employed residents (home side)
held by people who live and work in it (C: the inflow, or the outflow).

**Interval: the delta method (first order, not exact).** With ∂R/∂A = C/B² and ∂R/∂C = −A/B²,
Var R ≈ (C²·Var A + A²·Var C − 2AC·Cov(A, C))/B⁴, taken at the released A and C clipped to
[0, n] (plug-in, as :mod:`.intervals` does for sums); R ± z·sd, cut to [0, 1]. The released share
is A/B cut to [0, 1] as well.

* Independent-cells laws (:data:`.intervals.INDEPENDENT`): A and C share no cell, Cov = 0.
* GRR: each person sends one report, so with X_i = [report in A], Y_i = [report in C]
  (disjoint sets, X_i·Y_i = 0) Cov(X_i, Y_i) = −P(X_i)·P(Y_i), and summed over the n independent
  people (m_A, m_C cells; p, q GRR's probabilities):
  Cov(Â, Ĉ) = −[t_A·(p + (m_A − 1)q)·m_C q + t_C·m_A q·(p + (m_C − 1)q)
  + (n − t_A − t_C)·m_A q·m_C q]/(p − q)².

"No share" when the released B is not clearly positive: Fieller's g = z²·Var B/B² is 0.05 or
more (Finney's rule of thumb for when the first-order interval stands in for Fieller's exact one;
B's relative sd above ≈ 11 %), which includes B ≤ 0 and every B whose interval reaches 0.

**Offered for the central noises only** (:data:`OFFERED`: Laplace, discrete Laplace, Gaussian,
OpenDP's discrete Gaussian). For the local laws (SUE, OUE, BLH, OLH, GRR) the same interval was
measured on the county data and fell short of 95 % (docs/ANALYSES.md, "Shares": 92–94 % pooled
where offered at ε = 1 and 3; their sums are noisy enough that the ratio is far from linear, and
offering only when B̂ is clearly positive selects draws whose noise inflates B), so they get the
released share without an interval; HR, HM, dBitFlip, subset selection, CMS and HCMS (whose sums'
closed forms came later) were not measured and get it without an interval too, saying so; so do releases without a closed-form sum interval
(post-processed, simulated) and Base-Pos's bound interval (one-sided in a way the delta method
does not follow). :func:`sd` keeps the covariance for every closed-form law: the tests check it
against simulated ratios, GRR's included.

**A published folder's WLS and TopDown levels: the share's range (exact, conservative).** Their
rules bound sums rather than give a law (:mod:`dpcore.interfaces.published_analyses`), and give
bounds [A⁻, A⁺], [C⁻, C⁺] that hold for A and C together with ≥ 95 % (``joint_bounds``). The
share A/(A + C) rises with A and falls with C, and the true A, C are ≥ 0, so on that event it
lies in [A⁻/(A⁻ + C⁺), A⁺/(A⁺ + C⁻)] (:func:`ranged`; every bound taken at least 0): no
linearisation, only the sums' bounds.
A flat folder's noise (OpenDP's discrete Laplace or Gaussian, Base) gets the delta method above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpcore.analyses import selection as sel
from dpcore.analyses.answers import COLUMNS, block_ends, commute_block
from dpcore.analyses import synthesized
from dpcore.analyses.intervals import CORRELATED, METHOD_TRUE, Interval
from dpcore.analyses.sums import group_sums

METHOD = ("delta method (first order, not exact): Var(A/B) ≈ (C²·Var A + A²·Var C − 2AC·Cov)/B⁴ "
          "from the sums' closed forms ({law}) at the released A, C (clipped to [0, n]); "
          "±{z:.2f} sd, cut to [0, 1]; no share unless B is clearly above 0 (Fieller's g < 0.05)")
LAW_INDEPENDENT = "independent cells, Cov = 0"
#: Fieller's g = z²·Var B/B² below which the first-order (delta) interval of a ratio is a good
#: approximation of Fieller's exact one (Finney's rule of thumb: g < 0.05; B's relative sd
#: then at most √0.05/z ≈ 11 %).
FIELLER_G = 0.05
NO_INTERVAL = "no share interval: {why}"
SHORT = ("the delta method's measured coverage for {key} fell short of 95 %, so no interval is "
         "offered (docs/ANALYSES.md, Shares)")
#: The local laws whose share interval was measured and fell short (module docstring).
MEASURED_SHORT = ("sue", "oue", "blh", "olh", "grr")
UNMEASURED = ("the delta method's coverage was not measured for {key} (its sums' closed form is "
              "newer than the shares' coverage runs), so no interval is offered")
#: The laws whose share interval was measured to cover (module docstring).
OFFERED = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")
NO_SHARE = "no share: the released total is not clearly above 0"
CLIPPED = ("Base-Pos bounds its sums one-sidedly (clipping at 0 lifts them by an amount that "
           "depends on the empty cells), which the delta method does not follow; a Base release "
           "(or folder) gets share intervals")
METHOD_RANGE = ("range: the share A/(A + C) over the bounds of A and C that hold together with "
                "≥ 95 % ({how}): from A⁻/(A⁻ + C⁺) to A⁺/(A⁺ + C⁻); exact, conservative")


@dataclass(frozen=True)
class Share:
    """A share of one selection: ``compute(values)`` → ((A, C), (cells of A, cells of C))."""

    analysis: str
    selection: str
    part: str
    compute: Callable


def within(od, chosen: sel.Selection, side: str = "work", km: float = 10.0) -> Share:
    """The share of the selection's commutes (with known distance) shorter than ``km``."""
    if not np.isfinite(km) or km <= 0:
        raise ValueError(f"the distance of a share must be a positive number of km; got {km!r}")
    rows, cols = commute_block(od, chosen, side)
    distance = sel.distance_km(*block_ends(od, rows, cols))
    labels = np.where(np.isnan(distance), -1, (distance >= km).astype(np.int64))
    return Share(f"share_within_{side}", chosen.name, f"under {km:g} km",
                 lambda values: group_sums(values, od, rows, cols, labels, 2))


def live_and_work(od, chosen: sel.Selection, side: str = "work") -> Share:
    """Work side: the share of the selection's jobs held by its residents (C: the inflow); home
    side: the share of its employed residents working in it (C: the outflow)."""
    inside_o, inside_d = np.flatnonzero(chosen.origins), np.flatnonzero(chosen.destinations)
    if side == "work":
        rest, part = (np.flatnonzero(~chosen.origins), inside_d), "of jobs"
    elif side == "home":
        rest, part = (inside_o, np.flatnonzero(~chosen.destinations)), "of employed residents"
    else:
        raise ValueError(f"the side must be work or home; got {side!r}")

    def compute(values):
        a, a_cells = group_sums(values, od, inside_o, inside_d)
        c, c_cells = group_sums(values, od, *rest)
        return np.concatenate([a, c]), np.concatenate([a_cells, c_cells])
    return Share(f"share_live_and_work_{side}", chosen.name, part, compute)


def share_of(a: float, c: float) -> float:
    """A/(A + C) cut to [0, 1]; NaN when A + C ≤ 0."""
    return float(np.clip(a / (a + c), 0.0, 1.0)) if a + c > 0 else np.nan


def method(rule) -> str:
    """The sentence every share of this release carries."""
    if isinstance(rule, Interval) and rule.key is None:
        return METHOD_TRUE
    if _offered(rule):
        return METHOD.format(law=LAW_INDEPENDENT, z=rule.z)
    if _ranged(rule):
        return METHOD_RANGE.format(how=rule.joint)
    if isinstance(rule, Interval) and rule.covered and not rule.clipped:
        why = SHORT if rule.key in MEASURED_SHORT else UNMEASURED
        return NO_INTERVAL.format(why=why.format(key=rule.key))
    if isinstance(rule, Interval) and rule.clipped:
        return NO_INTERVAL.format(why=CLIPPED)
    if isinstance(rule, synthesized.Synthesized):
        return NO_INTERVAL.format(why=synthesized.NO_SHARE)
    why = getattr(rule, "method", "no closed form for this release")
    return NO_INTERVAL.format(why=why.removeprefix("no interval: "))


def _offered(rule) -> bool:
    return isinstance(rule, Interval) and rule.key in OFFERED and rule.covered \
        and not rule.clipped


def _ranged(rule) -> bool:
    """A rule whose sums' bounds hold for two sums together (a published WLS or TopDown level)."""
    return bool(getattr(rule, "joint", "")) and rule.covered


def ranged(rule, a, a_cells, c, c_cells, compute=None):
    """(share, low, high) arrays from bounds on A and C that hold together (module docstring).
    The share is NaN where the released total A + C is not above 0; the range holds there too
    (it needs only the bounds), so it is given. ``compute``: the share's (values → ((A, C), …)),
    for a rule whose bounds need the sums' cells, not only their numbers (a TopDown level's
    per-parent bound, :class:`dpcore.interfaces.published_analyses.ParentBound`)."""
    a, c = np.asarray(a, dtype=float), np.asarray(c, dtype=float)
    if compute is not None and hasattr(rule, "half_widths"):
        low, high = rule.joint_bounds(np.concatenate([a, c]),
                                      np.concatenate([a_cells, c_cells]), compute)
        (a_low, c_low), (a_high, c_high) = np.split(low, 2), np.split(high, 2)
    else:
        a_low, a_high = rule.joint_bounds(a, a_cells)
        c_low, c_high = rule.joint_bounds(c, c_cells)
    a_low, a_high, c_low, c_high = (np.maximum(x, 0.0) for x in (a_low, a_high, c_low, c_high))
    shown = a + c > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(shown, np.clip(a / (a + c), 0.0, 1.0), np.nan)
        low = np.where(a_low + c_high > 0, a_low / (a_low + c_high), 0.0)
        high = np.where(a_high + c_low > 0, a_high / (a_high + c_low), 1.0)
    return share, low, high


def covariance(rule: Interval, a_cells, a_total, c_cells, c_total) -> np.ndarray:
    """Cov of two released sums over disjoint cell sets (0 but for GRR; module docstring)."""
    if rule.key not in CORRELATED:
        return np.zeros(np.broadcast(a_total, c_total).shape)
    _, p, q = rule.mechanism._probabilities(rule.d)
    a_in, c_in = p + (a_cells - 1) * q, p + (c_cells - 1) * q
    a_out, c_out = a_cells * q, c_cells * q
    return -(a_total * a_in * c_out + c_total * a_out * c_in
             + (rule.n - a_total - c_total) * a_out * c_out) / (p - q) ** 2


def sd(rule: Interval, a, a_cells, c, c_cells) -> np.ndarray:
    """The delta method's sd of A/(A + C) at A, C clipped to [0, n] (NaN where B is 0)."""
    a_plug = np.clip(np.asarray(a, dtype=float), 0.0, rule.n)
    c_plug = np.clip(np.asarray(c, dtype=float), 0.0, rule.n - a_plug)
    a_cells, c_cells = np.asarray(a_cells, dtype=float), np.asarray(c_cells, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (c_plug ** 2 * rule.variance(a_cells, a_plug)
               + a_plug ** 2 * rule.variance(c_cells, c_plug)
               - 2 * a_plug * c_plug * covariance(rule, a_cells, a_plug, c_cells, c_plug)
               ) / (a_plug + c_plug) ** 4
    return np.sqrt(np.maximum(var, 0.0))


def bounds(rule: Interval, a, a_cells, c, c_cells):
    """(share, low, high) arrays for released sums A and C: NaN where no share (Fieller's g)."""
    a, c = np.asarray(a, dtype=float), np.asarray(c, dtype=float)
    total, cells = a + c, np.asarray(a_cells, dtype=float) + np.asarray(c_cells, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        fieller = rule.z ** 2 * rule.variance(cells, total) / total ** 2
        shown = (total > 0) & (fieller < FIELLER_G)
        share = np.where(shown, a / total, np.nan)
    half = rule.z * sd(rule, a, a_cells, c, c_cells)
    low = np.where(shown, np.clip(share - half, 0.0, 1.0), np.nan)
    high = np.where(shown, np.clip(share + half, 0.0, 1.0), np.nan)
    return np.clip(share, 0.0, 1.0), low, high


def evaluate(shares: list[Share], truth, released=None, rule=None) -> pd.DataFrame:
    """One row per share in :data:`.answers.COLUMNS` (``cells``: those of B): true share (NaN
    for a published folder), released share and its interval, NaN where none (``method``)."""
    rule = rule or Interval(None)
    rows = []
    for share in shares:
        true = np.nan
        if truth is not None:
            (ta, tc), cells = share.compute(truth)
            true = share_of(ta, tc)
        values = released if released is not None else truth
        (a, c), (ma, mc) = share.compute(values)
        if released is None:
            low = high = answer = share_of(a, c)
            sentence = method(rule)
        elif _offered(rule):
            answer, low, high = (float(x[0]) for x in bounds(rule, [a], [ma], [c], [mc]))
            sentence = method(rule) if np.isfinite(answer) else NO_SHARE
        elif _ranged(rule):
            answer, low, high = (float(x[0]) for x in ranged(rule, [a], [ma], [c], [mc],
                                                             share.compute))
            sentence = method(rule) if np.isfinite(answer) else f"{NO_SHARE}; {method(rule)}"
        else:
            answer, low, high, sentence = share_of(a, c), np.nan, np.nan, method(rule)
        rows.append((share.analysis, share.selection, share.part, np.nan, true, answer, low,
                     high, ma + mc, sentence))
    return pd.DataFrame(rows, columns=COLUMNS)
