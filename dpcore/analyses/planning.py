"""The planner's targets on analyses: the smallest ε at which every answer of a family meets a
margin ("inflow of every county within ±2 % at 95 %", "each county pair's flow within ±50").

A target names a family of answers (:data:`FAMILIES`: inflow, outflow or live-and-work of every
zone, or every OD pair's flow) and an allowed 95 % half-width, in commuters or as a share of each
true answer. At an ε, the half-width of every answer is the one its 95 % interval has at the true
total (:class:`dpcore.analyses.intervals.Interval`, covariances included, the whole-number step
of the discrete noises too); the *worst* answer, relative to what it is allowed, decides. Every
half-width falls as ε grows (the noise scales and the local mechanisms' variances all do), so the
worst one does too and bisection on log ε finds the smallest ε that meets the target, to a
relative precision of :data:`PRECISION` (the ε returned meets it; one a factor 1 − PRECISION
below does not).

Only the raw releases of the mechanisms with a closed form are planned here; the others have no
interval for sums (their method says so). OnTheMap's synthesizer is planned on its debiased
interval (:mod:`dpcore.analyses.synthesized`): its raw answers are biased, and the half-width
planned is the one the Places page's interval has around the estimate s·A/m − |S|α. A relative
target leaves out answers whose true value is 0 (no margin is a share of 0). The answers are
summed from the true table: like the ε planner, the answer is computed from confidential data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore import mechanisms
from dpcore.analyses import answers, synthesized
from dpcore.analyses.intervals import COVERED, PUBLISHED_ONLY, Interval
from dpcore.data.od import ODMatrix
from dpcore.evaluation.planner import EPSILON_RANGE
from dpcore.mechanisms.sparse_vector import SparseVector

FAMILIES = {"inflow": "inflow of every zone", "outflow": "outflow of every zone",
            "live_and_work": "live-and-work of every zone", "pairs": "every OD pair's flow"}
#: Relative precision of the ε found.
PRECISION = 1e-4
COLUMNS = ["mechanism", "family", "within", "relative", "epsilon", "method", "worst_answer",
           "worst_half_width", "answers"]
CLOSED = "closed form: the worst 95 % interval half-width over the answers, bisection on ε"
SYNTHESIZED = ("OnTheMap's law: the worst half-width of the debiased 95 % interval (around "
               "s·A/m − |S|α, not the raw synthetic answer) at the true table, bisection on ε")
UNREACHABLE = f"not met for any ε ≤ {EPSILON_RANGE[1]:g}"
NO_THEORY = "no closed form for sums of {key} estimates: not planned here"


@dataclass(frozen=True)
class Target:
    """Every answer of ``family`` within ± ``within`` at 95 %: commuters, or a share of the
    true answer when ``relative`` (0.02 = ±2 %)."""

    family: str
    within: float
    relative: bool = False

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family of answers {self.family!r}; valid: "
                             f"{', '.join(FAMILIES)}")
        if not (math.isfinite(self.within) and self.within > 0):
            raise ValueError(f"the margin must be a number above 0; got {self.within!r}")

    def describe(self) -> str:
        margin = f"±{self.within * 100:g} %" if self.relative else f"±{self.within:g} commuters"
        return f"{FAMILIES[self.family]} within {margin} at 95 %"


def parse_target(family: str, within: str) -> Target:
    """A target from text: ``within`` in commuters ("50") or a share of each answer ("2%")."""
    text = str(within).strip()
    relative = text.endswith("%")
    try:
        value = float(text[:-1] if relative else text)
    except ValueError:
        raise ValueError(f"the margin must be a number of commuters (50) or a percentage (2%); "
                         f"got {within!r}") from None
    return Target(family, value / 100 if relative else value, relative)


@dataclass(frozen=True)
class Answers:
    """The family's answers at the truth: names, true totals and cells summed (one per answer)."""

    names: np.ndarray
    totals: np.ndarray
    cells: np.ndarray


def family_query(od: ODMatrix, family: str) -> answers.Query:
    """The family as one query: the area comparison's, or every OD pair as its own part."""
    if family == "pairs":
        names = tuple(f"{o} → {d}" for o in od.origins.ids for d in od.destinations.ids)
        return answers.Query("pairs", "every OD pair", names,
                             lambda values: (np.asarray(values, dtype=float),
                                             np.ones(od.domain_size, dtype=np.int64)))
    (query,) = [q for q in answers.comparison(od) if q.analysis == family]
    return query


def family_answers(od: ODMatrix, truth, family: str) -> Answers:
    """The true answers of a family. ``pairs``: one per distinct true count (every cell is a sum
    of one cell, so equal counts have equal half-widths), named by one of its cells."""
    if family == "pairs":
        if isinstance(truth, SparseVector):
            values = np.unique(np.append(truth.values, 0.0) if truth.zeros.count
                               else truth.values)
        else:
            values = np.unique(np.asarray(truth, dtype=float))
        names = np.array([f"a pair of {v:g} commuters" for v in values])
        return Answers(names, values, np.ones(values.size, dtype=np.int64))
    query = family_query(od, family)
    totals, cells = query.compute(truth)
    live = np.asarray(cells) > 0
    return Answers(np.asarray(query.parts)[live], np.asarray(totals, float)[live],
                   np.asarray(cells)[live])


def half_widths(rule: Interval, found: Answers) -> np.ndarray:
    """Each answer's 95 % half-width at its true total (the larger side, should a rule be
    asymmetric)."""
    low, high = rule.bounds(found.totals, found.cells)
    return np.maximum(found.totals - low, high - found.totals)


def allowed(target: Target, found: Answers) -> np.ndarray:
    return target.within * found.totals if target.relative else np.full(found.totals.size,
                                                                        target.within)


def smallest_epsilon(worst: Callable[[float], float], low: float = EPSILON_RANGE[0],
                     high: float = EPSILON_RANGE[1], precision: float = PRECISION) -> float:
    """Smallest ε in [low, high] with ``worst(ε) ≤ 1`` (worst falls with ε): ``low`` when it
    already holds, inf when not even at ``high``; else the upper end of a bracket narrower than
    ``precision`` (relative)."""
    if worst(high) > 1:
        return math.inf
    if worst(low) <= 1:
        return low
    while high / low > 1 + precision:
        middle = math.sqrt(low * high)
        if worst(middle) <= 1:
            high = middle
        else:
            low = middle
    return high


@dataclass
class Plan:
    """One mechanism's answer: ε (inf: not met; NaN: not planned), how, and the answer that
    decides (its name and half-width at ε)."""

    mechanism: str
    target: Target
    epsilon: float
    method: str
    worst_answer: str = ""
    worst_half_width: float = float("nan")
    answers: int = 0

    def row(self) -> dict:
        return {"mechanism": self.mechanism, "family": self.target.family,
                "within": self.target.within, "relative": self.target.relative,
                "epsilon": self.epsilon, "method": self.method, "worst_answer": self.worst_answer,
                "worst_half_width": self.worst_half_width, "answers": self.answers}


def usable(target: Target, found: Answers) -> Answers:
    """The answers a target can be planned on: all, or those with a non-zero true value for a
    relative target."""
    keep = found.totals > 0 if target.relative else np.ones(found.totals.size, dtype=bool)
    if not keep.any():
        raise ValueError(f"no answer to plan for: {FAMILIES[target.family]} has no non-zero "
                         "true value")
    return Answers(found.names[keep], found.totals[keep], found.cells[keep])


def decisive(target: Target, found: Answers, rule: Interval) -> tuple[str, float]:
    """The answer furthest from its allowance under ``rule``, and its half-width."""
    widths = half_widths(rule, found)
    i = int(np.argmax(widths / allowed(target, found)))
    return str(found.names[i]), float(widths[i])


def plan_rule(name: str, target: Target, found: Answers, rule_at: Callable[[float], Interval],
              low: float = EPSILON_RANGE[0], high: float = EPSILON_RANGE[1]) -> Plan:
    """The smallest ε at which ``rule_at(ε)``'s half-widths meet the target on every answer."""
    found = usable(target, found)
    limit = allowed(target, found)

    def worst(epsilon: float) -> float:
        return float(np.max(half_widths(rule_at(epsilon), found) / limit))

    epsilon = smallest_epsilon(worst, low, high)
    answer, width = decisive(target, found, rule_at(epsilon if math.isfinite(epsilon) else high))
    return Plan(name, target, epsilon, CLOSED if math.isfinite(epsilon) else UNREACHABLE,
                answer, width, int(found.totals.size))


def plan_synthesized(od: ODMatrix, truth, params: dict, target: Target) -> Plan:
    """OnTheMap's smallest ε for the target: the half-widths of its debiased interval at the
    true table (:class:`dpcore.analyses.synthesized.Theory`), which fall as ε grows (the prior
    α = m/(e^ε − 1) shrinks)."""
    # the family naming every pair is refused on a large table (before naming them); the zone
    # families have the Places page's limit (a term per non-empty cell of a zone's row)
    why = (synthesized.too_large(od, synthesized.bound(od, params, 1.0))
           if target.family == "pairs" else synthesized.too_many_cells(truth))
    if why is not None:
        return Plan(synthesized.KEY, target, float("nan"),
                    "not planned: " + why.removeprefix("; ").removeprefix("no interval: "))
    query = family_query(od, target.family)
    theory = synthesized.Theory(od, truth, params, [query])
    found = usable(target, Answers(np.asarray(query.parts), theory.answers,
                                   np.ones(theory.answers.size)))
    keep = theory.answers > 0 if target.relative else np.ones(theory.answers.size, dtype=bool)
    # (the answers usable() kept)
    limit = allowed(target, found)
    epsilon = smallest_epsilon(lambda e: float(np.max(theory.half_widths(e)[keep] / limit)))
    widths = theory.half_widths(epsilon if math.isfinite(epsilon) else EPSILON_RANGE[1])
    i = int(np.argmax(widths[keep] / limit))
    return Plan(synthesized.KEY, target, epsilon,
                SYNTHESIZED if math.isfinite(epsilon) else UNREACHABLE,
                str(found.names[i]), float(widths[keep][i]), int(found.totals.size))


def plan(od: ODMatrix, truth, mechanism_specs, target: Target) -> list[Plan]:
    """Each mechanism's smallest ε for the target (raw release; closed forms only, OnTheMap's
    debiased law)."""
    found = family_answers(od, truth, target.family)
    plans = []
    for spec in mechanism_specs:
        key, params = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))
        if key == synthesized.KEY:
            plans.append(plan_synthesized(od, truth, params, target))
            continue
        if key not in COVERED or key in PUBLISHED_ONLY:
            plans.append(Plan(key, target, float("nan"), NO_THEORY.format(key=key)))
            continue
        plans.append(plan_rule(key, target, found, lambda e, k=key, p=params: Interval(
            k, mechanisms.build(k, epsilon=e, **p), n=od.n, d=od.domain_size)))
    return plans


def table(plans: list[Plan]) -> pd.DataFrame:
    return pd.DataFrame([p.row() for p in plans], columns=COLUMNS)
