"""The experiments of the thesis's results chapter: every figure and table, and a verdict on each,
as the thesis is written and as its code ran (:mod:`dpcore.evaluation.thesis_as_run`).

Finnegan, *Local Differential Privacy Mechanisms for Frequency Estimation with Application to
Mobility Data* (2023/24), chapter 5: two central mechanisms (Laplace, the stability histogram with
δ = 1/(2n)) and four local ones (randomised response, unary encoding, optimised local hashing, the
Hadamard mechanism as chapter 3 defines it: one coefficient per person, t = 1), ε = 0.5, 1, …, 5,
ten trials each, at county and electoral-division (ED) level, with the thesis's three
post-processings (Base, Base-Pro = Base-Pos, and its own Base-Cut: :func:`postprocess.base_cut`).

:func:`run` makes, in the thesis's order, its seventeen figures and four tables
(:data:`ITEMS`), a running-time table made as the thesis made it (every user simulated, on a
stated subsample with a linear extrapolation checked on two sizes) beside our aggregate
release, and for each item a :class:`Verdict`: does the run agree with what the thesis says
about that item (an ordering, a trend, a crossing, a zero count, a rank list)? Verdicts are
computed from the item's data by :data:`JUDGES` — never written in — and say why when they
differ (different data, the thesis's own formula predicts otherwise, a protocol difference).

The error curves are one :func:`dpcore.evaluation.experiment.run` grid (in this process, on a
process pool — every core by default — or on a Dask cluster, with the same numbers); the bars,
orderings and rank tables come from trial 0 of the same releases. This module makes data only;
the ``report`` package draws it.

Two protocols (:data:`thesis_as_run.PROTOCOLS`): as written and as run, each a setting of five
named switches. Every item is built and judged under each; a "differs" gets its reason by
rebuilding the item with one switch toggled at a time (:func:`explain`). The thesis's stated
numbers are judged against the trials' spread and its rank tables as probabilities over trials.

Where this departs from the thesis, on purpose: the subsets are swept over the whole ε grid (the
thesis fixed ε = 5); at ED level, as there, only the central mechanisms, randomised response and
Hadamard run.
"""

from __future__ import annotations

import concurrent.futures as futures
import math
import multiprocessing
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from dpcore import limits, mechanisms, release
from dpcore.data import ordinal, views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import experiment, ranks, summaries
from dpcore.evaluation import thesis_as_run as as_run
from dpcore.evaluation import thesis_reasons as reasons
from dpcore.evaluation.experiment import Scenario
from dpcore.interfaces import confidential, export, grids
from dpcore.mechanisms import postprocess
from dpcore.mechanisms.count_profile import CountProfile

CENTRAL = ("laplace", "stability_histogram")
LOCAL = ("grr", "oue", "olh", "hm")
MECHANISMS = CENTRAL + LOCAL
#: Chapter 3's Hadamard mechanism: each person sends one Hadamard coefficient.
HM_COEFFICIENTS = 1
POSTPROCESS = ("base", "base_pos", "base_cut")
#: The post-processing of the thesis's LDP analysis ("Base-Pro": negative counts set to 0).
MAIN_POSTPROCESS = "base_pos"
#: Post-processings scored at the finer levels: what their figures use (Base for the central
#: mechanisms of 5.2/5.3, Base-Pos for the rest; figure 5.10, the only one with Base-Cut, is at
#: county level). Saves a sort of 9.8 M cells per ED release.
FINE_POSTPROCESS = ("base", "base_pos")
#: ε of the rank tables and of the bars and orderings: the thesis's least and most private.
LOW_EPSILON, HIGH_EPSILON = 0.5, 5.0
RANK_EPSILONS = (LOW_EPSILON, HIGH_EPSILON)
RANK_TOP = 10
BAR_TOP = 30
ED_ORDER_TOP = 100
TRIALS = 10
#: What the error figures show (the thesis's RMSE and maximum error): the cheap cell-error metrics.
METRICS = ("rmse", "max_error_freq")
#: Per-user simulation for the running times: people in the first of the two timed subsamples
#: (drawn at random, with replacement) grows from this until one simulation takes TIMING_FLOOR
#: CPU seconds (or a quarter of the population).
TIMING_START, TIMING_FLOOR = 2_000, 0.02

#: The thesis's items in its order: reference, title.
ITEMS = (
    ("Figure 5.1", "Top 30 commutes after the Laplace mechanism, ε = 0.5"),
    ("Figure 5.2", "RMSE of the central mechanisms"),
    ("Figure 5.3", "Maximum error of the central mechanisms (relative frequency)"),
    ("Figure 5.4", "Ordering of the central mechanisms at county level, ε = 5"),
    ("Figure 5.5", "Top 30 commutes of the local mechanisms, ε = 0.5"),
    ("Figure 5.6", "Top 30 commutes of the local mechanisms, ε = 5"),
    ("Figure 5.7", "RMSE of the local mechanisms"),
    ("Figure 5.8", "Maximum error of the local mechanisms at county level (relative frequency)"),
    ("Table 5.1", "Top 10 commutes at county level, ε = 0.5"),
    ("Table 5.2", "Top 10 commutes at county level, ε = 5"),
    ("Figure 5.9", "Ordering of the local mechanisms at county level, ε = 5 (Base-Pos)"),
    ("Figure 5.10", "RMSE by post-processing, local mechanisms, county level"),
    ("Figure 5.11", "Ordering of the Hadamard mechanism by post-processing, county level, ε = 5"),
    ("Figure 5.12", "Top 30 commutes at ED level, ε = 5"),
    ("Figure 5.13", "RMSE of the local mechanisms, county against ED level"),
    ("Figure 5.14", "Maximum error of the local mechanisms at ED level (relative frequency)"),
    ("Table 5.3", "Top 10 commutes at ED level, ε = 0.5"),
    ("Table 5.4", "Top 10 commutes at ED level, ε = 5"),
    ("Figure 5.15", "Hadamard mechanism: ordering of the top 100 ED commutes, ε = 5"),
    ("Figure 5.16", "The two ED subsets"),
    ("Figure 5.17", "RMSE of the local mechanisms on the two ED subsets"),
    ("Running times", "Every user simulated, beside our aggregate release"),
)


def label(key: str) -> str:
    """A mechanism column's name as every legend shows it. "Hadamard" is chapter 3's mechanism
    with t = 1 as written and Hadamard Response as run (each protocol's section says which)."""
    return "Hadamard" if key == "hm" else mechanisms.get(key).name


@dataclass(frozen=True)
class Levels:
    """The scenarios of a dataset: its coarse and fine level (either may be missing) and the ED
    subsets of figure 5.17 found in it."""

    coarse: Scenario | None
    fine: Scenario | None
    subsets: tuple[Scenario, ...]

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        return tuple(s for s in (self.coarse, self.fine) if s is not None) + self.subsets

    @property
    def whole(self) -> tuple[Scenario, ...]:
        return tuple(s for s in (self.coarse, self.fine) if s is not None)


def levels(od: ODMatrix) -> Levels:
    """County and ED level of data with a parent level (ED data rolls up to counties), else the
    data as loaded; the subsets Dublin City and Cavan + Leitrim where those parent zones exist.
    Only the county level is scored after Base-Cut (figure 5.10); the others after
    :data:`FINE_POSTPROCESS`."""
    irish = "ireland" in od.name.lower()
    coarse_name, fine_name = ("County", "ED") if irish else ("Parent zones", "Zones")
    if not od.has_parent_level:
        label_ = "County" if irish else "As loaded"
        return Levels(Scenario(label_, views.View()), None, ())
    present = set(views.areas(od))
    subsets = tuple(Scenario(f"{' and '.join(areas)} ({fine_name})",
                             views.View(views.LEVEL_AS_LOADED, areas), FINE_POSTPROCESS)
                    for areas in views.THESIS_SUBSETS if present.issuperset(areas))
    return Levels(Scenario(coarse_name, views.View(views.LEVEL_PARENT)),
                  Scenario(fine_name, views.View(), FINE_POSTPROCESS), subsets)


def _params(key: str, n: int) -> dict:
    params = {"delta": 1 / (2 * n)} if mechanisms.get(key).uses_delta else {}
    return params | ({"t": HM_COEFFICIENTS} if key == "hm" else {})


def mechanism_specs(od: ODMatrix) -> list[tuple[str, dict]]:
    """The six mechanisms: the stability histogram with the thesis's δ = 1/(2n), the Hadamard
    mechanism with chapter 3's t = 1."""
    return [(key, _params(key, od.n)) for key in MECHANISMS]


# ------------------------------------------------------------------------------- the items
@dataclass(frozen=True)
class Verdict:
    """Does the run agree with what the thesis says about one item? ``agrees`` is None when the
    item could not be checked on this data (``reason`` says why)."""

    ref: str
    thesis: str
    criterion: str
    ours: str
    agrees: bool | None
    reason: str = ""
    #: "claim" (what the thesis found) or "data" (a fact about the data the thesis ran on:
    #: agreeing says the data is like the thesis's, not that a mechanism behaves like its)
    kind: str = "claim"
    #: computed facts about this run's data that bear on the check (shown when no protocol
    #: difference explains a difference)
    data_note: str = ""
    protocol: str = ""
    #: the separate ways the run departs from the check, each (key, computed text); a key is
    #: (place, relation), e.g. (("olh", 4.0), "Base-Cut < Base-Pos"): :func:`explain` names the
    #: protocol differences whose toggling removes each one
    findings: tuple = ()

    @property
    def word(self) -> str:
        if self.kind == "data" and self.agrees is not None:
            return "data alike" if self.agrees else "data differ"
        return {True: "agrees", False: "differs", None: "not checked"}[self.agrees]


@dataclass(frozen=True)
class Figure:
    """The data of one figure. ``kind``: ``lines`` (mean over trials with its 95 % interval
    against ε, per series), ``bars`` (true and released counts of the busiest commutes),
    ``ordering`` (true rank against released rank), ``map`` (zones by subset)."""

    ref: str
    title: str
    caption: str
    data: pd.DataFrame
    kind: str = "lines"
    metric: str = "rmse"
    colour: str = "mechanism"
    dash: str | None = None
    facet: str | None = None
    log_y: bool = True
    #: one y-axis per panel (panels differing by orders of magnitude)
    independent_y: bool = False
    context: dict = field(default_factory=dict)
    verdict: Verdict | None = None


@dataclass(frozen=True)
class Table:
    ref: str
    title: str
    caption: str
    data: pd.DataFrame
    context: dict = field(default_factory=dict)
    verdict: Verdict | None = None


@dataclass
class Chapter:
    """What :func:`run` made: the tidy table, the items in the thesis's order, the settings."""

    dataset: str
    settings: dict
    table: pd.DataFrame
    items: list = field(default_factory=list)
    #: protocol name → its items (:func:`explain`); ``items`` is the last protocol's
    by_protocol: dict = field(default_factory=dict)
    #: the as-run and rounded releases (:class:`Variants`)
    variants: object = None
    #: what of the data decides the zero counts (:func:`data_facts`)
    data_facts: str = ""
    seconds: float = float("nan")
    #: the bundled dataset's description (None: the user's own data)
    source: object = None

    @property
    def figures(self) -> list[Figure]:
        return [item for item in self.items if isinstance(item, Figure)]

    @property
    def tables(self) -> list[Table]:
        return [item for item in self.items if isinstance(item, Table)]

    @property
    def verdicts(self) -> list[Verdict]:
        """Every protocol's verdicts, protocol by protocol."""
        groups = self.by_protocol.values() if self.by_protocol else [self.items]
        return [item.verdict for items in groups for item in items if item.verdict is not None]


def summary(chapter: Chapter) -> pd.DataFrame:
    """The verdicts as one table: protocol, item, what the thesis says, the check, ours,
    verdict, why."""
    return pd.DataFrame([{"Protocol": v.protocol, "Item": v.ref, "Thesis": v.thesis,
                          "Check": v.criterion, "This run": v.ours, "Verdict": v.word,
                          "Why it differs": v.reason} for v in chapter.verdicts])


def verdict_table(chapter: Chapter) -> pd.DataFrame:
    """One row per item, one verdict column per protocol (the README's and docs' table)."""
    frame = summary(chapter)
    return frame.pivot(index="Item", columns="Protocol", values="Verdict").reindex(
        [ref for ref, _ in ITEMS])[list(chapter.by_protocol)]


# ------------------------------------------------------------------------------- theory helpers
def empty_cell_sd(key: str, epsilon: float, n: int, d: int) -> float:
    """Standard deviation (commuters) of the estimate of an empty cell: the mechanism's own
    variance formula (chapter 3's Theorem 2 for the local ones), public given ε, n and d."""
    mechanism = mechanisms.build(key, epsilon=epsilon, **_params(key, n))
    variance = postprocess.zero_cell_variance(mechanism, n, max(d, 2))
    return float("nan") if variance is None else float(np.sqrt(variance))


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _curve(data: pd.DataFrame, **where) -> pd.Series:
    rows = data
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows.groupby("epsilon")["mean"].mean().sort_index()


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


# ------------------------------------------------------------------------------- the judges
def _judge_5_1(f: Figure) -> Verdict:
    thesis_text = ("The two levels' counts differ greatly (the busiest ED commute is 5,871, 0.21 % "
                   "of n); Laplace noise at ε = 0.5 leaves the top 30 nearly unchanged.")
    data, n = f.data, f.context["n"]
    change = float((data["released"] - data["true"]).abs().div(data["true"]).max())
    tops = data[data["rank"] == 1].set_index("panel")["true"]
    criterion = "every top-30 count within 5 % of its true value"
    ours = f"largest relative change in the top 30: {change:.2%}"
    agrees = change <= 0.05
    if len(tops) == 2:
        coarse, fine = tops.iloc[0], tops.iloc[1]
        criterion += "; busiest coarse commute ≥ 10 × the busiest fine one"
        ours += (f"; busiest commutes {_fmt(coarse)} and {_fmt(fine)} ({fine / n:.2%} of n), "
                 f"ratio {coarse / fine:.0f}")
        agrees = agrees and coarse >= 10 * fine
    return _verdict(f, thesis_text, criterion, ours, agrees,
                    "different data: the counts here are not spread like the thesis's")


def _central_order(f: Figure, thesis_text: str, what: str, coarse_below: bool) -> Verdict:
    """The thesis's order of the two central curves: at the coarse level the stability
    histogram below Laplace (``coarse_below``) or above it, the other way at the fine level."""
    lv = f.context["levels"]
    first, second = ("below", "above") if coarse_below else ("above", "below")
    criterion = (f"{what}: stability histogram {first} Laplace at {lv[0]} level at most ε"
                 + (f", {second} it at {lv[1]} level at most ε" if len(lv) > 1 else ""))
    parts, agrees = [], True
    for level, below in zip(lv, (coarse_below, not coarse_below)):
        lap = _curve(f.data, mechanism="laplace", scenario=level)
        stab = _curve(f.data, mechanism="stability_histogram", scenario=level)
        share = float(((stab < lap) if below else (stab > lap)).mean())
        word = "below" if below else "above"
        parts.append(f"{level}: stability histogram {word} Laplace at {share:.0%} of ε "
                     f"(ratio {stab.iloc[0] / lap.iloc[0]:.2f} at ε = {lap.index[0]:g}, "
                     f"{stab.iloc[-1] / lap.iloc[-1]:.2f} at ε = {lap.index[-1]:g})")
        agrees = agrees and share >= 0.5
    note = reasons.central_note(f.metric, f.context.get("profiles", {}),
                                f.context.get("opendp", False), f.data)
    return _verdict(f, thesis_text, criterion, "; ".join(parts), agrees, note)


def _judge_5_2(f):
    return _central_order(f, "The stability histogram beats Laplace at county level; Laplace wins "
                             "at ED level, the two converging as ε grows.", "RMSE", True)


def _judge_5_3(f):
    return _central_order(
        f, "The stability histogram has the higher maximum error at county level, Laplace at ED "
           "level; they get closer as ε grows.", "maximum error", False)


def _rank_agreement(frame: pd.DataFrame, top: int) -> float:
    """Spearman correlation of true and released ranks among the ``top`` true commutes."""
    head = frame[frame["true_rank"] <= top]
    if len(head) < 3:
        return float("nan")
    return float(head["true_rank"].corr(head["released_rank"], method="spearman"))


def _judge_5_4(f: Figure) -> Verdict:
    data, d = f.data, f.context["d"]
    head = min(600, d)
    parts, agrees = [], True
    for key in CENTRAL:
        frame = data[data["mechanism"] == key]
        rho = _rank_agreement(frame, head)
        zeros = int(frame["released_zero"].sum())
        part = f"{label(key)}: rank correlation over the top {head} {rho:.3f}, {zeros} zeros"
        if key == "stability_histogram" and zeros:
            lowest = int(frame.loc[frame["released_zero"], "true_rank"].min())
            part += f" (all at true rank ≥ {lowest} of {d})"
            agrees = agrees and lowest > d - 2 * zeros
        parts.append(part)
        agrees = agrees and rho >= 0.99
    trials = f.context["trials"]
    stab = trials[trials["mechanism"] == "stability_histogram"]["zeros"]
    stated, text = _stated(stab, 96, "stability histogram zeros")
    note = reasons.stability_zeros_note(f.context["true_counts"], trials, 96, HIGH_EPSILON)
    return _verdict(f, "Both follow the true order almost perfectly for about the first 600 "
                       "commutes; the stability histogram sets 96 commutes to 0, all among the "
                       "least popular.",
                    f"rank correlation ≥ 0.99 over the top {head} for both; every zeroed commute "
                    f"in the bottom 2 × (number of zeros); the thesis's 96 zeros within the "
                    f"trials' spread", "; ".join(parts) + "; " + text, agrees and stated, note)


def _value_agreement(frame: pd.DataFrame) -> float:
    """Spearman correlation of true and released counts over the bars' commutes."""
    return float(frame["true"].corr(frame["released"], method="spearman"))


def _bar_error(frame: pd.DataFrame) -> float:
    return float((frame["released"] - frame["true"]).abs().mean())


def _judge_bars_local(f: Figure) -> Verdict:
    data, eps = f.data, f.context["epsilon"]
    errors = {key: _bar_error(data[data["mechanism"] == key]) for key in LOCAL
              if (data["mechanism"] == key).any()}
    ours = "; ".join(f"{label(k)} mean |error| {_fmt(v)}" for k, v in errors.items())
    if eps == LOW_EPSILON:
        worst = max(errors, key=errors.get)
        return _verdict(f, "At ε = 0.5 the counts are much noisier; randomised response performs "
                           "worst.", "randomised response has the largest mean |error| over the "
                                     "top 30", ours, worst == "grr",
                        f"{label(worst)} is worse here: with this domain and n its variance "
                        f"formula exceeds randomised response's")
    rhos = {key: _value_agreement(data[data["mechanism"] == key]) for key in errors}
    ours += "; rank correlation " + ", ".join(f"{label(k)} {v:.2f}" for k, v in rhos.items())
    return _verdict(f, "At ε = 5 the noisy counts roughly follow the true order of the 30 most "
                       "popular commutes.", "rank correlation of true and released counts over "
                                            "the top 30 ≥ 0.8 for every local mechanism",
                    ours, all(v >= 0.8 for v in rhos.values()),
                    "the noise is large against the gaps between these 30 counts here: "
                    + ", ".join(f"{label(k)} s.d. {_fmt(empty_cell_sd(k, eps, f.context['n'], f.context['d']))}"
                                for k, v in rhos.items() if v < 0.8))


#: Figure 5.7's text: "Unary Encoding performs the best overall. OLH follows the same trajectory
#: until ε = 3, at which point it switches order with the Hadamard Mechanism." Same trajectory:
#: within :data:`SIMILAR` of unary encoding up to ε = 3; the switch (the first ε from which local
#: hashing stays above Hadamard) within one grid step (0.5) of either reading of its figure —
#: the text's ε = 3 and the issue's ≈ 3.5.
OLH_SWITCH, SWITCH_WINDOW, SIMILAR = 3.0, (2.5, 4.0), 1.5


def _switch(above: pd.Series) -> float | None:
    """The ε from which ``above`` (local hashing above Hadamard, by ε) holds to the end, when it
    goes from False to True exactly once; else None."""
    flags = above.to_numpy(dtype=bool)
    if flags.size < 2 or flags[0] or not flags[-1] or np.count_nonzero(np.diff(flags)) != 1:
        return None
    return float(above.index[int(np.argmax(flags))])


def _cell_0_note(f: Figure, curves: dict) -> str:
    """How much of local hashing's excess over unary encoding its lost cell 0 (a defect of the
    original code) explains, from the run's RMSE without that cell; "" when this protocol's local
    hashing does not lose it."""
    without = f.context.get("without_cell_0")
    if without is None or without.empty or "olh" not in set(without["mechanism"]):
        return ""
    olh_wo = without[without["mechanism"] == "olh"].set_index("epsilon")["mean"].sort_index()
    olh, oue, hm = curves["olh"], curves["oue"], curves["hm"]
    last, first = float(olh.index[-1]), float(olh.index[0])
    d, count = f.context["d"], f.context["cell_0"]

    def share(e):  # cell 0's part of local hashing's mean squared error at ε = e (mean curves)
        return 1 - (d - 1) * olh_wo[e] ** 2 / (d * olh[e] ** 2)
    ratio, ratio_wo = olh[last] / oue[last], olh_wo[last] / oue[last]
    text = (f"OLH's lost cell 0 (a defect of the original code; true count {count:,}): without "
            f"that cell OLH's RMSE at ε = {last:g} is {_fmt(olh_wo[last])}, {ratio_wo:.2f} × "
            f"unary encoding's ({ratio:.2f} × with it); the cell's squared error is "
            f"{share(last):.0%} of OLH's mean squared error at ε = {last:g} (≈ count²/d = "
            f"{_fmt(count ** 2 / d)} of {_fmt(olh[last] ** 2)}) and {share(first):.0%} at ε = "
            f"{first:g}")
    if ratio > 1:
        text += (f", so it explains {min(max((ratio - ratio_wo) / (ratio - 1), 0), 1):.0%} of "
                 f"OLH's excess over unary encoding at ε = {last:g}")
    wo_switch = _switch(olh_wo > hm)
    text += ("; without it OLH would " + (f"still switch order with Hadamard at ε = {wo_switch:g}"
                                          if wo_switch is not None else
                                          "not switch order with Hadamard once as the thesis "
                                          "says (above it at " + (", ".join(
                                              f"{e:g}" for e in olh_wo.index[
                                                  (olh_wo > hm).to_numpy()]) or "no ε") + ")"))
    return text + ". The thesis's figure was made with this defect"


def _judge_5_7(f: Figure) -> Verdict:
    data = f.data
    curves = {key: _curve(data, mechanism=key) for key in LOCAL}
    others = pd.concat([curves[k] for k in ("oue", "olh", "hm")], axis=1, keys=("oue", "olh", "hm"))
    rr_worst = curves["grr"] > others.max(axis=1)
    best = min(("oue", "olh", "hm"), key=lambda k: curves[k].mean())
    trajectory = (curves["olh"] / curves["oue"])[curves["olh"].index <= OLH_SWITCH]
    follows = bool((trajectory <= SIMILAR).all())
    above = curves["olh"] > curves["hm"]
    switch = _switch(above)
    crosses = switch is not None and SWITCH_WINDOW[0] <= switch <= SWITCH_WINDOW[1]
    where = ("above Hadamard at no ε" if not above.any() else
             f"above Hadamard from ε = {switch:g}, below it before" if switch is not None else
             "above Hadamard at ε = " + ", ".join(f"{e:g}" for e in above.index[above.to_numpy()]))
    ours = (f"randomised response the largest at {rr_worst.mean():.0%} of ε; lowest on average: "
            f"{label(best)}; local hashing / unary encoding up to ε = {OLH_SWITCH:g}: at most "
            + (f"{trajectory.max():.2f} (ε = {trajectory.idxmax():g})" if len(trajectory)
               else "no ε") + f"; local hashing {where}")
    note = _cell_0_note(f, curves)
    if note:
        ours += "; " + note
    reasons = []
    if not rr_worst.all():
        at = float(rr_worst.index[~rr_worst.to_numpy()][0])
        reasons.append(f"at ε = {at:g} {label(others.loc[at].idxmax())} exceeds randomised "
                       f"response")
    if best != "oue":
        reasons.append(f"{label(best)} is lowest on average")
    if not follows:
        e = float(trajectory.idxmax())
        reasons.append(f"local hashing is {trajectory.max():.2f} × unary encoding at ε = {e:g}, "
                       f"before ε = {OLH_SWITCH:g}")
    if not crosses:
        reasons.append(f"local hashing is {where}"
                       + (f", outside ε = {SWITCH_WINDOW[0]:g}–{SWITCH_WINDOW[1]:g}"
                          if switch is not None else ""))
    return _verdict(f, "Randomised response has a much larger RMSE; unary encoding, local "
                       "hashing and Hadamard are similar, unary encoding best overall; local "
                       "hashing follows unary encoding until ε = 3, then switches order with "
                       "Hadamard.",
                    f"randomised response the largest at every ε; unary encoding lowest on "
                    f"average; local hashing within {SIMILAR:g} × unary encoding up to ε = "
                    f"{OLH_SWITCH:g}; local hashing below Hadamard, then above it from one ε on, "
                    f"that ε within {SWITCH_WINDOW[0]:g}–{SWITCH_WINDOW[1]:g} (the thesis: ε = 3)",
                    ours, rr_worst.all() and best == "oue" and follows and crosses,
                    "; ".join(reasons + ([note] if note else [])))


def _judge_5_8(f: Figure) -> Verdict:
    data, n, d = f.data, f.context["n"], f.context["d"]
    curves = {key: _curve(data, mechanism=key) for key in LOCAL}
    falling = {k: bool(c.iloc[-1] < c.iloc[0]) for k, c in curves.items()}
    olh = curves["olh"]
    if 3.0 not in olh.index or olh.index[-1] <= 3.0:
        return _verdict(f, "Maximum error falls with ε (steeply before ε = 3); local hashing's "
                           "stops falling after ε = 3.", "needs ε = 3 and a larger ε in the grid",
                        "grid without ε = 3 and beyond", None, "not checkable on this ε grid")
    drop = float(olh.iloc[-1] / olh.loc[3.0])
    plateau = drop >= 0.9
    ours = ("falls from first to last ε: " + ", ".join(f"{label(k)} {'yes' if v else 'no'}"
                                                        for k, v in falling.items())
            + f"; local hashing at ε = {olh.index[-1]:g} is {drop:.2f} × its value at ε = 3")
    last = float(olh.index[-1])
    sd3, sd_last = empty_cell_sd("olh", 3.0, n, d), empty_cell_sd("olh", last, n, d)
    return _verdict(f, "Maximum error falls with ε (steeply before ε = 3); local hashing's stops "
                       "falling after ε = 3.",
                    "every curve lower at the last ε than at the first; local hashing's at the "
                    "last ε ≥ 0.9 × its value at ε = 3", ours, all(falling.values()) and plateau,
                    f"local hashing's variance 4n·e^ε/(e^ε − 1)² keeps falling after ε = 3 "
                    f"(s.d. {_fmt(sd3)} at ε = 3, {_fmt(sd_last)} at ε = {last:g}), and so does "
                    f"its maximum here; the thesis's plateau is not what its formula predicts")


def _rank_columns(t: Table) -> dict[str, pd.Series]:
    return {key: t.data[label(key)] for key in MECHANISMS if label(key) in t.data}


def _exact(series: pd.Series) -> bool:
    return list(series) == list(range(1, len(series) + 1))


#: What each rank table of the thesis shows (one draw): per mechanism, the outcome it drew, as
#: (description, test of a trial's worst rank and exactness). Keys: (fine level, ε).
def _exactly(worst, exact):
    return exact


THESIS_TABLES = {
    (False, LOW_EPSILON): (
        "Central mechanisms keep the top 10 in order; unary encoding, local hashing and "
        "Hadamard place them well (worst rank 16); randomised response does not (ranks up to "
        "560).",
        {"laplace": ("exact order", _exactly), "stability_histogram": ("exact order", _exactly),
         "grr": ("worst rank > 16", lambda w, e: w > 16),
         **{k: ("worst rank ≤ 16", lambda w, e: w <= 16) for k in ("oue", "olh", "hm")}}),
    (False, HIGH_EPSILON): (
        "At ε = 5 every mechanism keeps the exact order except randomised response, which only "
        "moves the 10th commute to 11th.",
        {**{k: ("exact order", _exactly) for k in ("laplace", "stability_histogram", "oue",
                                                    "olh", "hm")},
         "grr": ("not exact, worst rank ≤ 15", lambda w, e: not e and w <= 15)}),
    (True, LOW_EPSILON): (
        "At ED level and ε = 0.5 the central mechanisms keep the order; randomised response and "
        "Hadamard lose it (ranks in the millions).",
        {"laplace": ("exact order", _exactly), "stability_histogram": ("exact order", _exactly),
         "grr": ("worst rank > 1,000", lambda w, e: w > 1000),
         "hm": ("worst rank > 1,000", lambda w, e: w > 1000)}),
    (True, HIGH_EPSILON): (
        "At ED level and ε = 5 the central mechanisms keep the order, randomised response does "
        "not; the Hadamard mechanism identifies the top 10 (ranks 1–10).",
        {"laplace": ("exact order", _exactly), "stability_histogram": ("exact order", _exactly),
         "grr": ("worst rank > 1,000", lambda w, e: w > 1000),
         "hm": ("worst rank ≤ 10", lambda w, e: w <= 10)}),
}


def _judge_table(t: Table) -> Verdict:
    """The thesis's table is one draw: is it a plausible draw of this run? For each mechanism the
    probability, over the trials, of the outcome the thesis drew; implausible when its 95 %
    upper bound is below :data:`PLAUSIBLE`. Also P(exact order) per mechanism."""
    text, events = THESIS_TABLES[(t.context["fine"], t.context["epsilon"])]
    trials = t.context["trials"]
    parts, plausible, missing, unseen = [], True, [], []
    for key, (what, test) in events.items():
        rows = trials[trials["mechanism"] == key]
        if rows.empty:
            missing.append(label(key))
            continue
        hits = int(sum(test(w, e) for w, e in zip(rows["worst_rank"], rows["exact"])))
        m, upper = len(rows), _upper(hits, len(rows))
        plausible = plausible and upper >= PLAUSIBLE
        if hits == 0 and upper >= PLAUSIBLE:  # too few trials to rule an unseen outcome out
            unseen.append(f"{label(key)} ({what}: 0 of {m})")
        parts.append(f"{label(key)}: P({what}) = {hits}/{m} (95 % upper bound {upper:.2f}), "
                     f"P(exact order) = {int(rows['exact'].sum())}/{m}, median worst rank "
                     f"{rows['worst_rank'].median():,.0f}")
    if missing:
        parts.append("not run here: " + ", ".join(missing))
    word = "plausible" if plausible else "implausible"
    ours = "; ".join(parts) + (f"; the thesis's draw is {word} (a probability whose upper bound "
                               f"is below {PLAUSIBLE:.0%} rules it out)")
    counts = t.context["top_counts"]
    gap = float(np.min(-np.diff(counts)))
    criterion = ("the thesis's single draw plausible: for every mechanism the outcome it shows "
                 "has probability ≥ 5 % (95 % upper bound) over this run's trials")
    if plausible and unseen and not missing:  # decided once every outcome is seen, or one is
        return _verdict(t, text, criterion, ours, None,  # ruled out
                        f"an outcome never seen in fewer than {DECIDING_TRIALS} trials cannot "
                        f"be ruled out (its probability could still be below {PLAUSIBLE:.0%}): "
                        + ", ".join(unseen))
    return _verdict(t, text, criterion, ours, plausible and not missing,
                    f"the smallest gap between consecutive top-{RANK_TOP + 1} true counts is "
                    f"{_fmt(gap)} commuters")


def _zeros(frame: pd.DataFrame) -> int:
    return int(frame["released_zero"].sum())


#: The thesis's zero counts of figure 5.9 (Base-Pro, county, ε = 5).
THESIS_ZEROS_5_9 = {"grr": 0, "oue": 329, "olh": 338, "hm": 363}


def _judge_5_9(f: Figure) -> Verdict:
    trials = f.context["trials"]
    texts, ok = [], True
    for key, stated in THESIS_ZEROS_5_9.items():
        found = trials[trials["mechanism"] == key]["zeros"]
        good, text = _stated(found, stated, f"{label(key)} zeros")
        ok, texts = ok and good, texts + [text]
    note = reasons.local_zeros_note(f.context["true_counts"], trials, THESIS_ZEROS_5_9,
                                    HIGH_EPSILON, reasons.SHORT_NAMES)
    return _verdict(f, "Randomised response sets no commute to 0; unary encoding, local hashing "
                       "and Hadamard set 329, 338 and 363 to 0 (Hadamard the most).",
                    "each of the thesis's zero counts within the trials' spread (trial-0 "
                    "release drawn)", "; ".join(texts), ok, note)


def _above(low: float, high: float) -> str:
    """How far ``low`` is above (or at) ``high``, relatively."""
    if low == high:
        return "equal"
    excess = low / high - 1 if high else float("inf")
    return f"{100 * excess:+.2f} %" if abs(excess) >= 1e-4 else f"{100 * excess:+.2g} %"


def _judge_5_10(f: Figure) -> Verdict:
    """Each break of Base-Cut < Base-Pos < Base is a finding of its own, with the curves' values
    and the relative gap (:func:`explain` adds which protocol difference removes it)."""
    data, findings, failing = f.data, [], []
    gains = {}
    names = {"base": "Base", "base_pos": "Base-Pos", "base_cut": "Base-Cut"}
    for key in LOCAL:
        curve = {m: _curve(data, mechanism=key, postprocess=m) for m in names}
        for e in curve["base"].index:
            broken = False
            for low, high in (("base_cut", "base_pos"), ("base_pos", "base")):
                a, b = float(curve[low][e]), float(curve[high][e])
                if not a < b:
                    broken = True
                    findings.append((((key, float(e)), f"{names[low]} < {names[high]}"),
                                     f"{label(key)} at ε = {e:g}: {names[low]} {_fmt(a)} not "
                                     f"below {names[high]} {_fmt(b)} ({_above(a, b)})"))
            if broken:
                failing.append(f"{label(key)} at ε = {e:g}")
        base, cut = curve["base"], curve["base_cut"]
        gains[key] = (float((base.iloc[0] - cut.iloc[0]) / base.iloc[0]),
                      float((base.iloc[-1] - cut.iloc[-1]) / base.iloc[-1]))
        first, last = gains[key]
        if last > first:
            findings.append((((key, None), "gain shrinks"),
                             f"{label(key)}: Base-Cut's gain over Base grows from {first:.0%} "
                             f"to {last:.0%}"))
    ours = ("Base-Cut < Base-Pos < Base everywhere" if not failing
            else "order broken for " + ", ".join(failing[:6]) + ("…" if len(failing) > 6 else ""))
    ours += "; Base-Cut's gain over Base " + ", ".join(
        f"{label(k)} {a:.0%} → {b:.0%}" for k, (a, b) in gains.items())
    return _verdict(f, "Base-Cut < Base-Pos < Base in RMSE for all four local mechanisms at every "
                       "ε; little difference at ε = 5.",
                    "Base-Cut < Base-Pos < Base at every ε for every local mechanism; Base-Cut's "
                    "relative gain smaller at the last ε than at the first",
                    ours, not findings, "; ".join(text for _, text in findings),
                    findings=tuple(findings))


def _judge_5_11(f: Figure) -> Verdict:
    data = f.data
    cut = data[data["postprocess"] == "base_cut"]
    kept, dropped = cut[~cut["released_zero"]], cut[cut["released_zero"]]
    popular = bool(len(kept) and len(dropped)
                   and kept["true_rank"].median() < dropped["true_rank"].median())
    trials = f.context["trials"]
    hm = trials[trials["mechanism"] == "hm"]
    pos_ok, pos = _stated(hm["zeros"], 363, "zeros after Base-Pos")
    cut_ok, cut_text = _stated(hm["zeros_cut"], 782, "after Base-Cut")
    ours = (f"{pos}; {cut_text}; trial 0: median true rank of the kept commutes "
            f"{kept['true_rank'].median():.0f}, of the zeroed {dropped['true_rank'].median():.0f}")
    return _verdict(f, "Moving from Base-Pos to Base-Cut, the zeroed commutes go from 363 to 782; "
                       "the kept ones are the most frequented.",
                    "363 and 782 within the trials' spread; the kept commutes have the lower "
                    "(more popular) median true rank", ours, pos_ok and cut_ok and popular,
                    reasons.base_cut_note(f.context.get("true_counts", ()), trials, (363, 782),
                                          HIGH_EPSILON))


def _judge_5_12(f: Figure) -> Verdict:
    data = f.data
    rhos = {key: _value_agreement(data[data["mechanism"] == key])
            for key in ("grr", "hm") if (data["mechanism"] == key).any()}
    errors = {key: _bar_error(data[data["mechanism"] == key]) for key in rhos}
    ours = "; ".join(f"{label(k)} rank correlation {rhos[k]:.2f}, mean |error| "
                     f"{_fmt(errors[k])}" for k in rhos)
    ok = errors["grr"] > errors["hm"]
    return _verdict(f, "At ED level randomised response loses all utility on the top 30; the "
                       "Hadamard mechanism keeps some.",
                    "randomised response's mean |error| over the top 30 larger than Hadamard's",
                    ours, ok, "different data")


def _judge_5_13(f: Figure) -> Verdict:
    data, (coarse, fine) = f.data, f.context["levels"]
    ratio = {key: _curve(data, mechanism=key, scenario=fine) / _curve(data, mechanism=key,
                                                                       scenario=coarse)
             for key in LOCAL if ((data["mechanism"] == key) & (data["scenario"] == fine)).any()}
    rr_worse = bool((ratio["grr"] > 2).all())
    hm_stable = bool(((ratio["hm"] > 0.5) & (ratio["hm"] < 2)).all())
    ours = ", ".join(f"{label(k)} ED / county {r.min():.2f}–{r.max():.2f}"
                     for k, r in ratio.items())
    return _verdict(f, "Randomised response's RMSE is much worse at ED level than at county "
                       "level; Hadamard's stays about the same.",
                    "randomised response's ED RMSE > 2 × its county RMSE at every ε; Hadamard's "
                    "ratio within 0.5–2 at every ε", ours, rr_worse and hm_stable,
                    "different data")


def _judge_5_14(f: Figure) -> Verdict:
    data, n, d = f.data, f.context["n"], f.context["d"]
    rr, hm = _curve(data, mechanism="grr"), _curve(data, mechanism="hm")
    rr_change = float(rr.iloc[0] / rr.iloc[-1])
    stable, falling = rr_change < 1.5, bool(hm.iloc[-1] < hm.iloc[0])
    first, last = float(rr.index[0]), float(rr.index[-1])
    return _verdict(f, "Randomised response's maximum error stays stable for every ε; "
                       "Hadamard's falls with ε.",
                    "randomised response's maximum error at the first ε < 1.5 × its value at the "
                    "last; Hadamard's lower at the last ε",
                    f"randomised response falls {rr_change:.1f}× from ε = {first:g} to {last:g}; "
                    f"Hadamard {'falls' if falling else 'does not fall'}", stable and falling,
                    f"randomised response's s.d. √(n(e^ε + d − 2))/(e^ε − 1) (chapter 3) falls "
                    f"from {_fmt(empty_cell_sd('grr', first, n, d))} at ε = {first:g} to "
                    f"{_fmt(empty_cell_sd('grr', last, n, d))} at ε = {last:g}: its formula "
                    f"predicts no plateau")


def _judge_5_15(f: Figure) -> Verdict:
    """The thesis's figure is one draw, judged like its rank tables: the probability over this
    run's trials of the outcome it shows (:func:`_ordered_well`), plausible when its 95 % upper
    bound is at least :data:`PLAUSIBLE`; not decided while that outcome is unseen in fewer than
    :data:`DECIDING_TRIALS` trials. The figure drawn is trial 0."""
    thesis_text = ("The Hadamard mechanism ranks the top 40 well, then loses the order; some of "
                   "the top 100 are ranked below 200 (e.g. 1,631st, 686,843rd).")
    criterion = (f"the thesis's single draw plausible: P(more than half of the true top "
                 f"{TOP_WELL} released among the top {TOP_WELL}, and at least one of the top "
                 f"{TOP_FAR} released below rank {FAR_RANK}) ≥ {PLAUSIBLE:.0%} (95 % upper "
                 f"bound) over this run's trials. “More than half”: the weakest reading of "
                 f"“performs well for the top 40” that the thesis's own draw allows (it "
                 f"released its 24th commute 1,631st)")
    data = f.data
    share0 = float((data.loc[data["true_rank"] <= TOP_WELL, "released_rank"] <= TOP_WELL).mean())
    far0 = int((data["released_rank"] > FAR_RANK).sum())
    ours = (f"trial 0 (drawn): {share0:.0%} of the top {TOP_WELL} released among the top "
            f"{TOP_WELL}, {far0} of the top {TOP_FAR} below rank {FAR_RANK}")
    trials = f.context.get("trials", pd.DataFrame())
    rows = (trials[(trials["mechanism"] == "hm")].dropna(subset=["top40_within_40"])
            if len(trials) else trials)
    if rows.empty:
        return _verdict(f, thesis_text, criterion, ours, None, "no per-trial ranks of the top "
                                                               f"{TOP_FAR} in this run")
    share, far = rows["top40_within_40"], rows["top100_below_200"]
    hits = int(sum(_ordered_well(a, b) for a, b in zip(share, far)))
    m, upper = len(rows), _upper(hits, len(rows))
    ours += (f"; over {m} trials: share of the top {TOP_WELL} among the top {TOP_WELL} median "
             f"{share.median():.0%} (range {share.min():.0%}–{share.max():.0%}), top {TOP_FAR} "
             f"below rank {FAR_RANK} median {far.median():.0f} (range {far.min():.0f}–"
             f"{far.max():.0f}); P(the thesis's outcome) = {hits}/{m} (95 % upper bound "
             f"{upper:.2f})")
    if hits == 0 and upper >= PLAUSIBLE:
        return _verdict(f, thesis_text, criterion, ours, None,
                        f"an outcome never seen in fewer than {DECIDING_TRIALS} trials cannot be "
                        f"ruled out (0 of {m})")
    well = float(np.mean(share > TOP_WELL_SHARE))
    some_far = float(np.mean(far >= 1))
    return _verdict(f, thesis_text, criterion, ours, upper >= PLAUSIBLE,
                    f"over {m} trials more than half of the top {TOP_WELL} are released among "
                    f"the top {TOP_WELL} in {well:.0%} of them and some of the top {TOP_FAR} "
                    f"fall below rank {FAR_RANK} in {some_far:.0%}")


def _judge_5_16(f: Figure) -> Verdict:
    sizes = f.context["subsets"]
    (d_label, d_n, d_x), (r_label, r_n, r_x) = sizes
    ok = d_x == r_x == 26_244 and d_n == 218_860 and r_n == 38_630
    return _verdict(f, "Subset D (Dublin City) has 218,860 commuters and subset R (Cavan and "
                       "Leitrim) 38,630 (16 % of D), both with |X| = 26,244.",
                    "a fact about the data: the same n and |X| as the thesis's subsets",
                    f"{d_label}: n = {d_n:,}, |X| = {d_x:,}; {r_label}: n = {r_n:,} "
                    f"({r_n / d_n:.0%} of D), |X| = {r_x:,}", ok,
                    f"this data's subsets have n = {d_n:,} and {r_n:,}", kind="data")


def _judge_5_17(f: Figure) -> Verdict:
    data, (dublin, rural) = f.data, f.context["levels"]
    eps = float(data["epsilon"].max())
    at = data[data["epsilon"] == eps]
    lower = {key: float(_curve(at, mechanism=key, scenario=rural).iloc[0])
             < float(_curve(at, mechanism=key, scenario=dublin).iloc[0]) for key in LOCAL}
    ours = f"ε = {eps:g}: RMSE lower on {rural} for " + (
        ", ".join(label(k) for k, v in lower.items() if v) or "none")
    return _verdict(f, "At ε = 5 every mechanism has a lower RMSE on R (fewer commuters) than on "
                       "D.", "a fact about the data: every local mechanism's RMSE lower on R at "
                             "the largest ε (count errors grow as √n: it holds whenever R has "
                             "fewer commuters)", ours,
                    all(lower.values()), "the subsets' n here: " + ", ".join(
                        f"{s} {n:,}" for s, n in f.context["sizes"].items()), kind="data")


def _ratios(seconds: pd.Series) -> str:
    return (f"OLH/UE {seconds.get('olh', np.nan) / seconds.get('oue', np.nan):.1f}×, "
            f"UE/Hadamard {seconds.get('oue', np.nan) / seconds.get('hm', np.nan):.1f}×")


def _judge_times(t: Table) -> Verdict:
    """The thesis's order of its per-person times (RR, Hadamard ≪ UE < OLH), checked on the
    per-person times of the protocol shown; the ratios of both protocols beside the thesis's."""
    rows = t.data.set_index("key")
    column = ("as run: per-person loop, all n (s)" if t.context.get("as_run")
              else "per-user, all n (s)")
    per_user = rows[column]
    fast = max(per_user.get("grr", np.nan), per_user.get("hm", np.nan))
    unary, hashing = per_user.get("oue", np.nan), per_user.get("olh", np.nan)
    apart, ordered = fast * 10 < min(unary, hashing), unary < hashing
    thesis_seconds = pd.Series({k: v[0] for k, v in THESIS_SECONDS.items()})
    ours = (", ".join(f"{label(k)} {_fmt(v)} s" for k, v in per_user.items())
            + f" ({column}); ratios: thesis {_ratios(thesis_seconds)}; per-person loop "
              f"(as run) {_ratios(rows['as run: per-person loop, all n (s)'])}; vectorised "
              f"per-user simulation {_ratios(rows['per-user, all n (s)'])}; aggregate release "
              f"{_ratios(rows['aggregate release (s)'])}")
    return _verdict(t, "Simulating every user at county level: randomised response 9 s, "
                       "Hadamard 20 s, unary encoding 274 s, local hashing 2,296 s (RR, HM ≪ UE "
                       "< OLH).", "randomised response and Hadamard < 1/10 of unary encoding and "
                                  "local hashing; unary encoding < local hashing",
                    ours, apart and ordered,
                    "running times depend on the code and the machine: ours are not the "
                    "thesis's (an Intel i5, pure-LDP and its own Python)")


JUDGES: dict[str, Callable] = {
    "Figure 5.1": _judge_5_1, "Figure 5.2": _judge_5_2, "Figure 5.3": _judge_5_3,
    "Figure 5.4": _judge_5_4, "Figure 5.5": _judge_bars_local, "Figure 5.6": _judge_bars_local,
    "Figure 5.7": _judge_5_7, "Figure 5.8": _judge_5_8, "Table 5.1": _judge_table,
    "Table 5.2": _judge_table, "Figure 5.9": _judge_5_9, "Figure 5.10": _judge_5_10,
    "Figure 5.11": _judge_5_11, "Figure 5.12": _judge_5_12, "Figure 5.13": _judge_5_13,
    "Figure 5.14": _judge_5_14, "Table 5.3": _judge_table, "Table 5.4": _judge_table,
    "Figure 5.15": _judge_5_15, "Figure 5.16": _judge_5_16, "Figure 5.17": _judge_5_17,
    "Running times": _judge_times,
}


def judge(item):
    """``item`` with its verdict computed from its data (:data:`JUDGES`)."""
    from dataclasses import replace

    return replace(item, verdict=JUDGES[item.ref](item))


def _judged(item):
    """:func:`judge`, or a "not checked" verdict when the ε grid is too short for a trend."""
    from dataclasses import replace

    if isinstance(item, Figure) and item.kind == "lines" and item.data["epsilon"].nunique() < 2:
        return replace(item, verdict=Verdict(item.ref, "", "", "one ε only", None,
                                             "needs at least two ε to compare curves"))
    return judge(item)


@dataclass(frozen=True)
class Absent:
    """A thesis item this data cannot give (e.g. ED-level items on county-level data)."""

    ref: str
    title: str
    why: str
    protocol: str = ""

    @property
    def verdict(self) -> Verdict:
        return Verdict(self.ref, "", "", "not in this run", None, self.why,
                       protocol=self.protocol)


# --------------------------------------------------------------------------- trial-0 releases
@dataclass(frozen=True)
class Snapshot:
    """What the bars, orderings and rank tables need of one release (trial 0 of the sweep's):
    the true top-30 commutes with its counts, the ranks it gives the true top 10, and where an
    ordering figure needs it, true against released rank per post-processing."""

    top: pd.DataFrame
    pairs: pd.DataFrame
    ordering: dict


def _snapshots(od: ODMatrix, lv: Levels, specs, seed: int,
               stop: threading.Event | None = None) -> dict:
    """(level label, ε, mechanism) → :class:`Snapshot`, for ε = 0.5 and 5 at each whole level.
    Returns what it has made when ``stop`` is set (checked before each release)."""
    out = {}
    for scenario in lv.whole:
        matrix = views.select(od, scenario.view)
        truth = matrix.to_dense()
        coarse = scenario == lv.coarse
        methods = scenario.methods(POSTPROCESS)
        for epsilon in RANK_EPSILONS:
            for key, params in specs:
                if stop is not None and stop.is_set():
                    return out
                if scenario == lv.fine and key not in FINE_MECHANISMS:
                    continue
                spec = release.ReleaseSpec(key, epsilon, params, methods, seed, 0)
                outputs = release.run(matrix, spec, true_counts=truth, score=False).outputs
                made = {m: outputs[m].released for m in methods}
                shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
                ordering = {}
                if epsilon == HIGH_EPSILON and coarse:
                    wanted = (("base",) if key in CENTRAL
                              else POSTPROCESS if key == "hm" else (MAIN_POSTPROCESS,))
                    ordering = {m: ranks.rank_pairs(truth, made[m]) for m in wanted}
                elif epsilon == HIGH_EPSILON and key == "hm":
                    ordering = {MAIN_POSTPROCESS: ranks.rank_pairs(
                        truth, made[MAIN_POSTPROCESS], ED_ORDER_TOP)}
                out[(scenario.label, epsilon, key)] = Snapshot(
                    ranks.top_flows(matrix, truth, {key: shown}, BAR_TOP),
                    ranks.rank_pairs(truth, made[MAIN_POSTPROCESS], RANK_TOP), ordering)
                del outputs, made, shown
    return out


# ------------------------------------------------------------------------------ running times
#: The thesis's running times, seconds (sections 5.1.2, 5.2.2, 5.4.3): county, ED.
THESIS_SECONDS = {"laplace": (4, 328.69), "stability_histogram": (5, 18), "grr": (9, 7),
                  "oue": (274, 154_272), "olh": (2_296, None), "hm": (20, 32)}


#: The time at 2m over the time at m that counts as linear, and how often larger sizes are tried.
LINEAR_RATIO, LINEAR_RETRIES = (1.6, 2.5), 3
#: Timings per subsample size; the smallest is kept (other work on the machine only adds).
TIMING_REPEATS = 3


def _cpu_seconds(work, repeats: int = TIMING_REPEATS) -> float:
    """CPU seconds of ``work()`` in this process, the least of ``repeats`` runs, so that other
    work on the machine does not count."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def _extrapolated(work, items: np.ndarray, rng) -> tuple[int, int, float, float, float]:
    """CPU seconds of ``work(people)`` for all n people, from two subsamples m and 2m (drawn at
    random, with replacement) and the straight line through them: m doubles from
    :data:`TIMING_START` until one run takes :data:`TIMING_FLOOR` s (or a quarter of n); when
    2m / m is not near 2 (fixed costs), larger sizes are tried. Returns m, 2m, the two times
    and the time for all n."""
    n = len(items)
    work(items[:100])  # warm-up (imports, caches)
    size, cap = min(TIMING_START, max(n // 4, 1)), max(n // 4, 1)
    while True:  # one run per size while searching: jump to the size that should take long
        probe = _cpu_seconds(lambda: work(items[rng.integers(0, n, size)]), 1)
        if probe >= TIMING_FLOOR or size >= cap:
            break
        size = min(cap, size * int(np.clip(TIMING_FLOOR / max(probe, 1e-6), 2, 16)))
    first = _cpu_seconds(lambda: work(items[rng.integers(0, n, size)]))
    for attempt in range(LINEAR_RETRIES):
        double = min(2 * size, n)
        second = _cpu_seconds(lambda: work(items[rng.integers(0, n, double)]))
        if (LINEAR_RATIO[0] <= second / max(first, 1e-9) <= LINEAR_RATIO[1]
                or 2 * double > n or attempt == LINEAR_RETRIES - 1):
            break
        size, first = double, second
    slope = max(second - first, 0.0) / max(double - size, 1)
    return size, double, first, second, second + slope * (n - double)


def _linear(first: float, second: float) -> str:
    return "yes" if LINEAR_RATIO[0] <= second / max(first, 1e-9) <= LINEAR_RATIO[1] else "no"


def running_times(matrix: ODMatrix, specs, seed: int, epsilon: float = HIGH_EPSILON
                  ) -> pd.DataFrame:
    """Running times at this level under both protocols, each extrapolated from two subsample
    sizes (:func:`_extrapolated`): as written, each mechanism's per-user ``simulate`` (every
    report made and aggregated, vectorised over people); as run, the thesis's Python loop over
    the people (:func:`thesis_as_run.per_person`); beside them the CPU time of our aggregate
    release of the same counts (one exact draw)."""
    items = matrix.to_items()
    d, n = matrix.domain_size, matrix.n
    counts = matrix.to_dense()
    rng = release.generator(seed, "thesis-running-times")
    rows = []
    for key, params in specs:
        mechanism = mechanisms.build(key, epsilon=epsilon, **params)
        m, m2, first, second, full = _extrapolated(
            lambda people, m_=mechanism: m_.simulate(people, d, rng), items, rng)
        loop = _extrapolated(lambda people, k=key: as_run.per_person(k, people, d, epsilon, rng),
                             items, rng)
        agg = _cpu_seconds(lambda m_=mechanism: m_.release(counts, rng))
        county, ed = THESIS_SECONDS.get(key, (None, None))
        rows.append({"key": key, "Mechanism": label(key), "model": mechanism.model,
                     "timed people m, 2m": f"{m:,}, {m2:,}",
                     "seconds at m": first, "seconds at 2m": second,
                     "2m / m (2 = linear)": second / first if first > 0 else np.nan,
                     "linear": _linear(first, second),
                     "per-user, all n (s)": full,
                     "as run: loop m, 2m": f"{loop[0]:,}, {loop[1]:,}",
                     "as run: loop 2m / m": loop[3] / loop[2] if loop[2] > 0 else np.nan,
                     "as run: per-person loop, all n (s)": loop[4],
                     "aggregate release (s)": agg,
                     "per-user / aggregate": full / agg if agg > 0 else np.nan,
                     "thesis, county (s)": county, "thesis, ED (s)": ed})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ items
def _map_data(od: ODMatrix, lv: Levels) -> tuple[pd.DataFrame, dict | None]:
    """Fine-level zones with their position and subset; the land around them (offline)."""
    from dpcore.data import geography

    zones = od.origins.to_frame()
    names = {}
    for tag, scenario in zip(("D", "R"), lv.subsets):
        for area in scenario.view.areas:
            names[area] = f"{tag}: {scenario.label}"
    zones["subset"] = pd.Series(zones.get("parent", pd.Series(dtype=str))).map(names).fillna(
        "other zones")
    zones = zones[np.isfinite(zones["lat"]) & np.isfinite(zones["lon"])]
    if zones.empty:
        return zones, None
    bounds = [[zones["lat"].min(), zones["lon"].min()], [zones["lat"].max(), zones["lon"].max()]]
    return zones[["id", "label", "lat", "lon", "subset"]], geography.background(bounds)["land"]


@dataclass(frozen=True)
class Shared:
    """What every protocol's items share (made once per run): the levels' matrices, the coarse
    level's true counts, the top counts of each whole level, the running times, the map, and
    each whole level's count profile (the computed reasons of figures 5.2 and 5.3)."""

    matrices: dict
    truth: np.ndarray
    tops: dict
    times: pd.DataFrame
    map: tuple | None
    profiles: dict = field(default_factory=dict)


def shared(od: ODMatrix, lv: Levels, times: pd.DataFrame) -> Shared:
    matrices = {s.label: views.select(od, s.view) for s in lv.scenarios}
    tops = {s.label: -np.sort(-np.partition(matrices[s.label].to_dense(), -(RANK_TOP + 1))[
        -(RANK_TOP + 1):]).astype(float) for s in lv.whole}
    return Shared(matrices, matrices[lv.coarse.label].to_dense(), tops, times,
                  _map_data(od, lv) if len(lv.subsets) == 2 else None,
                  {s.label: CountProfile.of_matrix(matrices[s.label]) for s in lv.whole})


def _items(od: ODMatrix, lv: Levels, table: pd.DataFrame, snaps: dict, per_trial: pd.DataFrame,
           common: Shared, settings: str, loop_times: bool = False,
           switches: frozenset = frozenset()) -> list:
    coarse, fine = lv.coarse, lv.fine
    whole = list(lv.whole)
    matrices, times = common.matrices, common.times
    size = {label_: (m.n, m.domain_size) for label_, m in matrices.items()}

    def trials_at(level, epsilon):
        if per_trial.empty:
            return per_trial
        return per_trial[(per_trial["scenario"] == level.label)
                         & (per_trial["epsilon"] == epsilon)]
    bars = "Bars: true count and released count of each of the true busiest commutes (trial 0)."

    def lines(ref, title, metric, keys, scenarios, methods, drawn, **style):
        rows = table[table["mechanism"].isin(keys)
                     & table["scenario"].isin([s.label for s in scenarios])
                     & table["postprocess"].isin(methods)]
        data = summaries.summarise(rows, metric, by=["mechanism", "scenario", "postprocess",
                                                     "epsilon"])
        named = ", ".join(postprocess.METHODS[m].name for m in methods)
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} Mechanisms: "
                   f"{', '.join(label(k) for k in keys)}. Data: "
                   f"{', '.join(s.label for s in scenarios)}. Post-processing: {named}. "
                   f"Each point is the mean over trials; error bars are 95 % confidence "
                   f"intervals of the mean. {settings}")
        first = scenarios[0].label
        context = {"levels": [s.label for s in scenarios], "n": size[first][0],
                   "d": size[first][1], "sizes": {s.label: size[s.label][0] for s in scenarios}}
        return Figure(ref, title, caption, data, "lines", metric, context=context, **style)

    def ordering(ref, title, frames: dict, drawn, context, facet):
        data = pd.concat([frame.assign(**{facet: key}) for key, frame in frames.items()],
                         ignore_index=True) if frames else pd.DataFrame()
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} Each dot is a commute: its true rank "
                   f"(x) against the rank the release gives it (y, 1 = busiest; trial 0); dots "
                   f"released as 0 (less than half a commuter) are marked apart; the diagonal "
                   f"is the true order. {settings}")
        return Figure(ref, title, caption, data, "ordering", facet=facet, context=context)

    def snap(level, epsilon, key):
        return snaps.get((level.label, epsilon, key))

    def top_bars(ref, title, level_list, epsilon, keys, facet, drawn):
        frames = []
        for level in level_list:
            for key in keys:
                found = snap(level, epsilon, key)
                if found is not None:
                    frames.append(found.top.assign(panel=level.label if facet == "panel"
                                                   else label(key)))
        data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        level = level_list[0].label
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} {bars} ε = {epsilon:g}. Data: "
                   f"{', '.join(s.label for s in level_list)}. {settings}")
        return Figure(ref, title, caption, data, "bars", facet="panel",
                      context={"n": od.n, "d": size[level][1], "epsilon": epsilon})

    def top_counts(level):
        return common.tops[level.label]

    def rank_table(ref, title, level, epsilon):
        pairs = {key: snap(level, epsilon, key).pairs for key, _ in mechanism_specs(od)
                 if snap(level, epsilon, key) is not None}
        matrix = matrices[level.label]
        data = ranks.rank_table(matrix, pairs, RANK_TOP, {k: label(k) for k in pairs})
        caption = (f"Thesis {ref.lower()}. The true top {RANK_TOP} commutes of {matrix.name} "
                   f"(|X| = {matrix.domain_size:,}) and the rank each release gives them "
                   f"(1 = busiest; trial 0, Base-Pos). {settings}")
        return Table(ref, title, caption, data, context={
            "epsilon": epsilon, "fine": level == fine, "n": matrix.n, "d": matrix.domain_size,
            "top_counts": top_counts(level), "trials": trials_at(level, epsilon)})

    titles = dict(ITEMS)
    items: list = []
    no_fine = "the data has no finer level (load ED-level data for the ED items)"

    items.append(top_bars("Figure 5.1", titles["Figure 5.1"], whole, LOW_EPSILON, ["laplace"],
                          "panel", "the Laplace mechanism's release, one panel per level."))
    items.append(lines("Figure 5.2", titles["Figure 5.2"], "rmse", CENTRAL, whole, ["base"],
                       "RMSE (commuters per cell) of the raw releases against ε.",
                       dash="scenario" if len(whole) > 1 else None))
    items.append(lines("Figure 5.3", titles["Figure 5.3"], "max_error_freq", CENTRAL, whole,
                       ["base"], "largest error of any cell as a share of n, raw releases.",
                       dash="scenario" if len(whole) > 1 else None))
    for central in items[-2:]:  # figures 5.2, 5.3: the laws their computed reasons evaluate
        central.context.update(profiles=common.profiles,
                               opendp="central_opendp" in switches)
    items.append(ordering("Figure 5.4", titles["Figure 5.4"],
                          {k: snap(coarse, HIGH_EPSILON, k).ordering["base"] for k in CENTRAL
                           if snap(coarse, HIGH_EPSILON, k)},
                          "the central mechanisms' raw releases at ε = 5, county level.",
                          {"d": size[coarse.label][1], "true_counts": common.truth,
                           "trials": trials_at(coarse, HIGH_EPSILON)}, "mechanism"))
    for ref, epsilon in (("Figure 5.5", LOW_EPSILON), ("Figure 5.6", HIGH_EPSILON)):
        items.append(top_bars(ref, titles[ref], [coarse], epsilon, LOCAL, "mechanism",
                              "the local mechanisms' releases (Base-Pos), one panel each."))
    figure_5_7 = lines("Figure 5.7", titles["Figure 5.7"], "rmse", LOCAL, [coarse],
                       [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε, negative "
                       "counts set to 0 (Base-Pos) as in the thesis.")
    without = table[(table["metric"] == "rmse_without_cell_0") & (table["mechanism"] == "olh")
                    & (table["scenario"] == coarse.label)
                    & (table["postprocess"] == MAIN_POSTPROCESS)]
    if "olh_lost_cell_0" in switches and len(without):  # the reason of figure 5.7's local hashing curve
        from dataclasses import replace
        figure_5_7 = replace(figure_5_7, context=figure_5_7.context | {
            "without_cell_0": summaries.summarise(without, "rmse_without_cell_0",
                                                  by=["mechanism", "epsilon"]),
            "cell_0": int(common.truth[0])})
    items.append(figure_5_7)
    items.append(lines("Figure 5.8", titles["Figure 5.8"], "max_error_freq", LOCAL, [coarse],
                       [MAIN_POSTPROCESS], "largest error of any cell as a share of n, "
                       "Base-Pos."))
    items.append(rank_table("Table 5.1", titles["Table 5.1"], coarse, LOW_EPSILON))
    items.append(rank_table("Table 5.2", titles["Table 5.2"], coarse, HIGH_EPSILON))
    items.append(ordering("Figure 5.9", titles["Figure 5.9"],
                          {k: snap(coarse, HIGH_EPSILON, k).ordering[MAIN_POSTPROCESS]
                           for k in LOCAL if snap(coarse, HIGH_EPSILON, k)},
                          "the local mechanisms' releases at ε = 5 after Base-Pos.",
                          {"d": size[coarse.label][1], "true_counts": common.truth,
                           "trials": trials_at(coarse, HIGH_EPSILON)}, "mechanism"))
    items.append(lines("Figure 5.10", titles["Figure 5.10"], "rmse", LOCAL, [coarse],
                       list(POSTPROCESS), "RMSE against ε after Base, Base-Pos and the thesis's "
                       "Base-Cut, one panel (with its own y-axis) per mechanism.",
                       colour="postprocess", facet="mechanism", independent_y=True))
    hm = snap(coarse, HIGH_EPSILON, "hm")
    items.append(ordering("Figure 5.11", titles["Figure 5.11"],
                          hm.ordering if hm else {},
                          "the Hadamard mechanism's release at ε = 5 after each "
                          "post-processing, one panel each.",
                          {"n": size[coarse.label][0], "trials": trials_at(coarse, HIGH_EPSILON),
                           "true_counts": common.truth},
                          "postprocess"))
    if fine:
        items.append(top_bars("Figure 5.12", titles["Figure 5.12"], [fine], HIGH_EPSILON,
                              ("grr", "hm"), "mechanism", "randomised response's and the "
                              "Hadamard mechanism's releases (Base-Pos)."))
        items.append(lines("Figure 5.13", titles["Figure 5.13"], "rmse", LOCAL, whole,
                           [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε at both "
                           "levels (solid: county, dashed: ED), Base-Pos.", dash="scenario"))
        items.append(lines("Figure 5.14", titles["Figure 5.14"], "max_error_freq", LOCAL,
                           [fine], [MAIN_POSTPROCESS], "largest error of any cell as a share "
                           "of n at ED level, Base-Pos."))
        items.append(rank_table("Table 5.3", titles["Table 5.3"], fine, LOW_EPSILON))
        items.append(rank_table("Table 5.4", titles["Table 5.4"], fine, HIGH_EPSILON))
        hm_fine = snap(fine, HIGH_EPSILON, "hm")
        fine_n, fine_d = size[fine.label]
        items.append(ordering("Figure 5.15", titles["Figure 5.15"],
                              {"hm": hm_fine.ordering[MAIN_POSTPROCESS]} if hm_fine else {},
                              f"the Hadamard mechanism's release at ε = 5 (Base-Pos), the true "
                              f"top {ED_ORDER_TOP} ED commutes.",
                              {"epsilon": HIGH_EPSILON, "n": fine_n, "d": fine_d,
                               "top_counts": top_counts(fine),
                               "trials": trials_at(fine, HIGH_EPSILON)}, "mechanism"))
    else:
        items += [Absent(ref, titles[ref], no_fine) for ref in (
            "Figure 5.12", "Figure 5.13", "Figure 5.14", "Table 5.3", "Table 5.4", "Figure 5.15")]
    if len(lv.subsets) == 2:
        zones, land = common.map
        subsets = [(s.label, size[s.label][0], size[s.label][1]) for s in lv.subsets]
        items.append(Figure("Figure 5.16", titles["Figure 5.16"],
                            "Thesis figure 5.16. Drawn: every zone of the finer level at its "
                            "position, coloured by subset (D red, R blue), over the land "
                            "outline (Natural Earth, bundled; no map tiles). " + settings,
                            zones, "map", context={"subsets": subsets, "land": land}))
        items.append(lines("Figure 5.17", titles["Figure 5.17"], "rmse", LOCAL, lv.subsets,
                           [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε on the two "
                           "subsets of equal domain size (solid: D, dashed: R), Base-Pos; the "
                           "thesis fixed ε = 5, here the whole grid.", dash="scenario"))
    else:
        items += [Absent(ref, titles[ref], "the data has no Dublin City and Cavan + Leitrim "
                                           "areas") for ref in ("Figure 5.16", "Figure 5.17")]
    items.append(Table("Running times", titles["Running times"],
                       f"Running times as the thesis measured them (sections 5.1.2, 5.2.2, 5.4.3)"
                       f": every person's report made and aggregated (local; central: every "
                       f"row counted into the histogram, then released) at {coarse.label} level "
                       f"— as written by each mechanism's per-user simulation (vectorised over "
                       f"people), as run by the thesis's Python loop over the people (local "
                       f"hashing: pure-LDP's server loop over all d cells per person, CRC-32 in "
                       f"place of xxhash) — "
                       f"ε = {HIGH_EPSILON:g}, on subsamples of m and 2m people (CPU seconds, "
                       f"least of {TIMING_REPEATS} runs), extrapolated linearly to all n = "
                       f"{size[coarse.label][0]:,}; beside the CPU time of our exact aggregate "
                       f"release of the same counts (one draw from the counts' law, least of "
                       f"{TIMING_REPEATS}). Thesis columns: its times (Intel i5, per-user "
                       f"Python code; no local hashing at ED level). "
                       f"{settings}", times, context={"d": size[coarse.label][1],
                                                      "as_run": loop_times}))
    return [item if isinstance(item, Absent) else _judged(item) for item in items]


def _abandon(pool) -> None:
    """Stop a process pool now (Stop or an error): queued work dropped, running work killed."""
    if pool is None:
        return
    processes = list((pool._processes or {}).values())  # the executor offers no kill
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


#: The mechanisms the thesis ran at its finer (ED) level; unary encoding and local hashing ran at
#: county level and on the subsets only (their per-user simulation would have taken days).
FINE_MECHANISMS = CENTRAL + ("grr", "hm")


def _written_sweep(od, lv: Levels, specs, epsilons, trials, seed, n_jobs, scheduler, progress,
                   cancel) -> pd.DataFrame:
    """The written protocol's sweep (:func:`dpcore.evaluation.experiment.run`): every mechanism
    at the coarse level and on the subsets, :data:`FINE_MECHANISMS` at the finer level — as the
    thesis ran it. Two runs, one progress count."""
    groups = [([s for s in lv.scenarios if s != lv.fine], specs)]
    if lv.fine is not None:
        groups.append(([lv.fine], [(k, p) for k, p in specs if k in FINE_MECHANISMS]))
    sizes = [trials * len(scenarios) * len(keys) * len(epsilons) for scenarios, keys in groups]
    tables, offset = [], 0
    for (scenarios, keys), size in zip(groups, sizes):
        counted = None if progress is None else (
            lambda done, total, o=offset: progress(o + done, sum(sizes)))
        table = experiment.run(od, keys, epsilons, postprocess=POSTPROCESS, trials=trials,
                               seed=seed, n_jobs=n_jobs, metrics=METRICS, scenarios=scenarios,
                               progress=counted, cancel=cancel, scheduler=scheduler)
        tables.append(table)
        offset += size
        if table.attrs.get("cancelled"):
            break
    out = pd.concat(tables, ignore_index=True)
    out.attrs.update(jobs_done=sum(t.attrs["jobs_done"] for t in tables),
                     jobs_total=sum(sizes),
                     cancelled=any(t.attrs.get("cancelled") for t in tables))
    return out


def run(od: ODMatrix, *, epsilons=grids.THESIS_EPSILONS, trials: int = TRIALS, seed: int = 0,
        n_jobs: int = -1, scheduler=None,
        progress: Callable[[int, int], bool | None] | None = None, cancel=None,
        source=None, protocol: str = "both") -> Chapter:
    """Run the chapter on ``od`` under the thesis's protocols: the written sweep, the as-run and
    rounded releases (:func:`variant_sweep`), trial-0 releases, running times, items, verdicts.

    ``protocol``: ``"written"``, ``"run"`` or ``"both"`` (the protocols shown; both are always
    computed, since a difference's reason toggles one switch of the other's). ``n_jobs``,
    ``scheduler``, ``progress`` and ``cancel`` are :func:`dpcore.evaluation.experiment.run`'s.
    ``source``: the bundled dataset's :class:`~dpcore.data.datasets.DatasetInfo`.
    """
    if protocol not in ("written", "run", "both"):
        raise ValueError(f"protocol must be written, run or both; got {protocol!r}")
    shown = [as_run.WRITTEN, as_run.RUN] if protocol == "both" else [as_run.PROTOCOLS[protocol]]
    started = time.perf_counter()
    lv = levels(od)
    specs = mechanism_specs(od)
    epsilons = tuple(float(e) for e in epsilons)
    settings = {"dataset": od.name, "commuters n": f"{od.n:,}",
                "ε grid": ", ".join(f"{e:g}" for e in epsilons), "trials per point": trials,
                "seed": seed, "stability histogram δ": f"1/(2n) = {1 / (2 * od.n):.3g}",
                "protocols": ", ".join(p.name for p in shown),
                "as written": "chapter 3's definitions: Hadamard mechanism t = 1, textbook "
                              "randomised response and local hashing, continuous Laplace, "
                              "stability histogram τ = 2·ln(2/δ)/ε + 1, Base-Pro unrounded",
                "as run": "; ".join(d.title + (" (defect of the original code)" if d.defect
                                               else "") for d in as_run.DIFFERENCES.values())
                          + f"; at {lv.fine.label if lv.fine else 'the finer'} level only what "
                            f"the thesis ran there (central, randomised response, Hadamard), "
                            f"{FINE_RUN_TRIALS} trials",
                "stated numbers and rank tables": f"{STATED_TRIALS} trials at "
                                                  f"{lv.coarse.label} level, ε = 0.5 and 5"
                + (f"; at {lv.fine.label} level {FINE_STATED_TRIALS}, and up to "
                   f"{DECIDING_TRIALS} of a mechanism whose outcome in tables 5.3, 5.4 or "
                   f"figure 5.15 is not yet seen" if lv.fine else ""),
                "data": ", ".join(s.label for s in lv.scenarios),
                "post-processing": ", ".join(postprocess.METHODS[m].name for m in POSTPROCESS)
                + f" (Base-Cut at {lv.coarse.label} level only, as in figure 5.10)"}
    line = (f"Settings: {od.name}, ε ∈ {{{', '.join(f'{e:g}' for e in epsilons)}}}, "
            f"{trials} trial(s) per point, seed {seed}, stability histogram δ = 1/(2n) = "
            f"{1 / (2 * od.n):.3g}.")
    # The trial-0 releases and the as-run releases are made in threads of this process while
    # the sweep runs: here the process mostly waits for the workers (or for NumPy, which
    # releases the GIL).
    stop = threading.Event()
    with futures.ThreadPoolExecutor(2, thread_name_prefix="thesis") as pool:
        # The finer level's as-run releases (the heaviest: 9.8 M cells at ED level) in processes
        # of their own, so that they do not wait for this process's interpreter (unless the run
        # is asked to stay in this process: n_jobs = 1): Hadamard's two variants (each up to
        # DECIDING_TRIALS releases at ε = 5 when its outcome is unseen) apart from the rest.
        in_process = scheduler is None and limits.workers(n_jobs, "n_jobs")[0] == 1
        fine_pool = (futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(
            "forkserver")) if lv.fine is not None and not in_process else None)
        made = pool.submit(_snapshots, od, lv, specs, seed, stop)
        variants = pool.submit(variant_sweep, od, lv, epsilons, trials, seed, stop,
                               None if fine_pool is None else False)
        fine_variants = [fine_pool.submit(variant_sweep, od, lv, epsilons, trials, seed, None,
                                          True, keys, variant_)
                         for keys, variant_ in ((("hm",), "run"), (("hm",), "written"),
                                                (tuple(k for k in MECHANISMS if k != "hm"), None))
                         ] if fine_pool else []
        try:
            table = _written_sweep(od, lv, specs, epsilons, trials, seed, n_jobs, scheduler,
                                   progress, cancel)
        except BaseException:
            stop.set()  # an error or Ctrl-C: do not wait for the remaining releases
            _abandon(fine_pool)
            raise
        chapter = Chapter(od.name, settings, table, source=source)
        if table.attrs.get("cancelled"):
            stop.set()
            _abandon(fine_pool)
            chapter.seconds = time.perf_counter() - started
            return chapter
        snaps, variants = made.result(), variants.result()
        if fine_pool:
            for part in fine_variants:
                variants = variants.merged(part.result())
            fine_pool.shutdown()
    times = running_times(views.select(od, lv.coarse.view), specs, seed)
    common = shared(od, lv, times)
    built: dict = {}

    def build(protocol_) -> list:
        if protocol_.switches not in built:
            composed, composed_snaps, per_trial = compose(protocol_, table, snaps, variants)
            built[protocol_.switches] = _items(od, lv, composed, composed_snaps, per_trial,
                                               common, line,
                                               protocol_.switches == as_run.RUN.switches,
                                               protocol_.switches)
        return built[protocol_.switches]

    chapter.data_facts = data_facts(common.truth, lv.coarse.label)
    chapter.by_protocol = {p.name: explain(p, build) for p in shown}
    chapter.items = chapter.by_protocol[shown[-1].name]
    chapter.variants = variants
    if lv.fine is not None:
        chapter.settings[f"extra trials at {lv.fine.label} level"] = variants.extra_text()
    chapter.seconds = time.perf_counter() - started
    return chapter


def data_facts(truth: np.ndarray, level: str) -> str:
    """What of the data decides the thesis's zero counts (5.4, 5.9, 5.11), computed: its empty and
    small cells at the coarse level. Data without non-empty commutes below the stability
    histogram's threshold (e.g. a published file whose small cells were suppressed) gives it
    nothing to zero."""
    counts = np.asarray(truth)
    present = counts[counts > 0]
    smallest = int(present.min()) if present.size else 0
    tau = as_run.stability_threshold(HIGH_EPSILON, int(counts.sum())) if present.size else 0.0
    small = int(((counts > 0) & (counts <= 10)).sum())
    text = (f"At {level} level: n = {int(counts.sum()):,}, |X| = {counts.size:,}, "
            f"{int((counts == 0).sum()):,} empty cells, {small:,}"
            f" of 1–10 commuters, {int(((counts > 0) & (counts < tau)).sum()):,} non-empty below "
            f"the stability histogram's threshold at ε = 5 (≈ {tau:.1f}); smallest non-zero count "
            f"{smallest:,}.")
    if present.size and not ((counts > 0) & (counts < tau)).any():
        text += (" No non-empty commute lies below the threshold: the stability histogram can "
                 "zero none here, so figure 5.4's 96 zeros cannot be reproduced on this data (as "
                 "on a published file whose small cells were suppressed).")
    return text


def _attributed(findings: tuple, toggles: list) -> str:
    """Each finding with the protocol differences whose toggling alone removes it (and what that
    toggled run finds at the same place instead), or that none does: computed, finding by
    finding."""
    parts = []
    for key, text in findings:
        removed = []
        for name, found in toggles:
            if key not in {k for k, _ in found}:
                instead = [t for k, t in found if k[0] == key[0]]
                removed.append(f"{name} alone removes it" + (
                    f" (that run finds there instead: {'; '.join(instead)})" if instead else ""))
        parts.append(text + " — " + ("; or ".join(removed) if removed
                                     else "no single protocol difference removes it"))
    return "; ".join(parts)


def explain(protocol, build: Callable) -> list:
    """The protocol's items, each "differs" given its computed reason: the item rebuilt with one
    protocol difference toggled at a time (:data:`thesis_as_run.DIFFERENCES`); the ones that flip
    it to "agrees" are named. When none does alone, the other protocol (all switched) is tried;
    when that does not either, no protocol difference explains it and what remains is said
    (the judge's computed facts about the data)."""
    from dataclasses import replace

    items = build(protocol)
    other = as_run.RUN if protocol.switches != as_run.RUN.switches else as_run.WRITTEN
    out = []
    for index, item in enumerate(items):
        verdict = item.verdict
        if isinstance(item, Absent):
            out.append(replace(item, protocol=protocol.name))
            continue
        if verdict is None or verdict.agrees is not False:
            out.append(item if verdict is None else replace(
                item, verdict=replace(verdict, protocol=protocol.name)))
            continue
        flips, toggles = [], []
        for key, difference in as_run.DIFFERENCES.items():
            toggled = build(protocol.toggled(key))[index].verdict
            verb = "switching off" if key in protocol.switches else "switching on"
            name = (f"{verb} “{difference.title}”"
                    + (" (a defect of the original code)" if difference.defect else ""))
            if toggled is not None and toggled.agrees:
                flips.append(name)
            if toggled is not None and toggled.agrees is not None:
                toggles.append((name, toggled.findings))
        if flips:
            reason = "computed: " + " or ".join(flips) + " alone makes it agree"
        elif build(other)[index].verdict.agrees:
            reason = (f"computed: no single difference flips it, all of them together (the "
                      f"{other.name} protocol) do")
        else:
            remains = (_attributed(verdict.findings, toggles) if verdict.findings
                       else verdict.data_note or "the data (no law computed for this item)")
            reason = ("computed: no protocol difference flips it (each toggled alone, and all "
                      "at once); what remains: " + remains)
        out.append(replace(item, verdict=replace(verdict, reason=reason,
                                                 protocol=protocol.name)))
    return out


def slug(ref: str) -> str:
    """A file name for a figure or table reference ("Figure 5.10" → "figure_5.10")."""
    text = ref.lower().replace("thesis ", "")
    return "_".join("".join(c if c.isalnum() or c == "." else " " for c in text).split())


def write_csvs(chapter: Chapter, out: Path, private: bool = False) -> list[Path]:
    """The tidy data behind every figure and table, the verdicts and the whole sweep, as
    formula-safe CSVs (``private``: each under the not-for-publication line,
    :func:`dpcore.interfaces.confidential.write_csv`)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    frames = [("sweep", chapter.table), ("verdicts", summary(chapter))]
    if chapter.variants is not None:
        frames.append(("sweep_as_run_and_rounded", chapter.variants.rows))
    groups = chapter.by_protocol or {"": chapter.items}
    frames += [(slug(f"{protocol} {item.ref}"), item.data) for protocol, items in groups.items()
               for item in items if isinstance(item, (Figure, Table))]
    for name, frame in frames:
        path = out / f"{name}.csv"
        (confidential.write_csv if private else export.write_safe_csv)(frame, path)
        written.append(path)
    return written


# ------------------------------------------------------------------- the thesis's code as run
#: Trials of the as-run releases at the finer level (ED: 9.8 M cells; a Hadamard Response
#: release there takes ~1.6 s): fewer than the coarse level's, the curves' intervals say so.
FINE_RUN_TRIALS = 3
#: Trials at county level and ε = 0.5, 5 for the thesis's stated numbers (zeros of 5.4, 5.9,
#: 5.11) and the rank tables' probabilities: enough that a probability ≈ 0 is told from one
#: of a few per cent (0 of 80 puts the 95 % upper bound at 4.5 %).
STATED_TRIALS = 80
#: …and at the finer level (ED: a Hadamard Response release takes ~0.9 s there), to begin with:
#: an outcome of the thesis's ED tables (5.3, 5.4) or of figure 5.15 not seen in these gets
#: more trials of that mechanism alone (:data:`DECIDING_TRIALS`, :func:`_undecided`).
FINE_STATED_TRIALS = FINE_RUN_TRIALS
#: A single draw of the thesis (its tables, its zero counts) is implausible under a protocol
#: when the 95 % upper confidence bound of its probability is below this.
PLAUSIBLE = 0.05
#: Trials after which an outcome never seen is ruled out: 0 hits in 72 put the 95 %
#: Clopper–Pearson upper bound at 1 − 0.025^(1/72) = 4.99 % < :data:`PLAUSIBLE` (71: 5.1 %).
#: An outcome seen at least once is plausible at any trial count up to 111, so only the unseen
#: ones need these.
DECIDING_TRIALS = math.ceil(math.log(0.025) / math.log(1 - PLAUSIBLE))
#: Figure 5.15 (ED, ε = 5, Hadamard): "performs well for the top 40 counts before the utility
#: decreases" — read as most (more than half) of the true top 40 released among the top 40: the
#: weakest reading of "well" its own draw allows (its 24th commute was released 1,631st, so not
#: all 40) — and "some of the top 100 … ranked lower than 200", its words.
TOP_WELL, TOP_WELL_SHARE, TOP_FAR, FAR_RANK = 40, 0.5, ED_ORDER_TOP, 200


def _ordered_well(share_top_well: float, below_far: float) -> bool:
    """Figure 5.15's outcome in one draw: more than half of the true top 40 released among the top
    40, and at least one of the top 100 released below rank 200."""
    return bool(share_top_well > TOP_WELL_SHARE and below_far >= 1)


def _events(fine: bool, epsilon: float, key: str) -> list[tuple[str, Callable]]:
    """The thesis's single-draw outcomes that involve ``key`` at this level and ε: its rank
    table's (:data:`THESIS_TABLES`) and, at the finer level and ε = 5, figure 5.15's; each a
    (name, test of a per-trial row)."""
    found = []
    table = THESIS_TABLES.get((fine, epsilon))
    if table is not None and key in table[1]:
        what, test = table[1][key]
        found.append((what, lambda row, t=test: t(row["worst_rank"], row["exact"])))
    if fine and epsilon == HIGH_EPSILON and key == "hm":
        found.append(("figure 5.15's ordering", lambda row: _ordered_well(
            row["top40_within_40"], row["top100_below_200"])))
    return found


def _undecided(rows: list[dict], events) -> bool:
    """Whether more trials could still change a verdict on these rows (one mechanism, one setting,
    one rounding): some outcome not seen yet, in fewer than :data:`DECIDING_TRIALS` trials."""
    return len(rows) < DECIDING_TRIALS and any(not any(test(row) for row in rows)
                                               for _, test in events)


@dataclass
class Variants:
    """The releases the pipeline makes beside the written sweep: the as-run ones
    (:mod:`thesis_as_run`), the written local ones rounded (for the Base-Pro switch), and per
    trial at ε = 0.5 and 5 the zeros and top-10 ranks of every release (the stated numbers and
    the rank tables' probabilities).

    ``rows``: tidy rows (mechanism, variant, epsilon, postprocess, trial, metric, value,
    scenario, n); ``per_trial``: one row per (scenario, ε, mechanism, variant, rounded, trial);
    ``snaps``: trial-0 :class:`Snapshot` by (scenario, ε, mechanism, variant, rounded)."""

    rows: pd.DataFrame
    per_trial: pd.DataFrame
    snaps: dict
    #: the extra trials at the finer level (:func:`_undecided`): (scenario, ε, mechanism,
    #: variant) → (trials in all, CPU seconds of the extra ones)
    extra: dict = field(default_factory=dict)

    def merged(self, other: Variants) -> Variants:
        return Variants(pd.concat([self.rows, other.rows], ignore_index=True),
                        pd.concat([self.per_trial, other.per_trial], ignore_index=True),
                        self.snaps | other.snaps, self.extra | other.extra)

    def extra_text(self) -> str:
        """The extra trials, for the settings: which setting ran how many, and their CPU time."""
        if not self.extra:
            return "none needed"
        seconds = sum(cpu for _, cpu in self.extra.values())
        return (", ".join(f"{label(key)} ({variant}) at ε = {epsilon:g}: {trials} trials"
                          for (_, epsilon, key, variant), (trials, _) in sorted(self.extra.items()))
                + f"; {seconds:.1f} s of CPU")


def _written_release(matrix, truth, key, params, epsilon, seed, trial):
    """The written mechanism's raw release: the sweep's own (same seed, same stream, the draw
    :func:`dpcore.release.run` makes, without its copy for the Base post-processing)."""
    spec = release.ReleaseSpec(key, epsilon, params, ("base",), seed, trial)
    return np.asarray(release.check(spec, matrix).release(truth, spec.generator()), dtype=float)


def _made(key, raw, n, coarse, rounded):
    """A release after the post-processings its figures use (central: as released)."""
    if key in CENTRAL:
        return {"base": raw}
    made = {"base": raw, "base_pos": as_run.base_pro(raw, rounded)}
    if coarse:
        made["base_cut"] = as_run.base_cut(raw, n, rounded)
    return made


def _score(truth, released, n, coarse: bool = False) -> dict:
    """RMSE and maximum error; at the coarse level also the RMSE over every cell but cell 0 (the
    cell OLH as run loses: figure 5.7's reason)."""
    error = np.abs(released - truth)
    scores = {"rmse": float(np.sqrt(np.mean(error ** 2))), "max_error_freq": float(error.max() / n)}
    if coarse and error.size > 1:
        scores["rmse_without_cell_0"] = float(np.sqrt(np.mean(error[1:] ** 2)))
    return scores


def _trial_ranks(shown, cells, fine_hm: bool, released=None) -> dict:
    """One release's per-trial rank statistics: the worst rank of the true top 10 and whether they
    keep their order; for the Hadamard release at the finer level and ε = 5 (figure 5.15) also the
    share of the true top 40 released among the top 40 and how many of the top 100 fall below
    rank 200. ``released``: the cells' ranks when already known (:func:`_hr_ranks`)."""
    if released is None:
        released = ranks.ordinal_ranks(shown, cells)
    out = {"worst_rank": int(released[:RANK_TOP].max()),
           "exact": bool(_exact(pd.Series(released[:RANK_TOP]))),
           "top40_within_40": np.nan, "top100_below_200": np.nan}
    if fine_hm:
        out["top40_within_40"] = float(np.mean(released[:TOP_WELL] <= TOP_WELL))
        out["top100_below_200"] = int(np.sum(released[:TOP_FAR] > FAR_RANK))
    return out


@dataclass(frozen=True)
class _Cells:
    """A level's cells as :func:`_hr_ranks` needs them (made once): the non-empty cells and their
    counts, the empty cells, the identity permutation and where the true top cells sit among
    the non-empty ones."""

    present: np.ndarray
    people: np.ndarray
    empty: np.ndarray
    identity: np.ndarray
    top: np.ndarray
    top_at: np.ndarray

    @classmethod
    def of(cls, truth: np.ndarray, top: np.ndarray) -> _Cells | None:
        present = np.flatnonzero(truth)
        if not (truth[top] > 0).all():
            return None
        return cls(present, truth[present], np.flatnonzero(truth == 0),
                   np.arange(truth.size), top, np.searchsorted(present, top))


def _hr_ranks(epsilon: float, cells: _Cells, roundings, rng: np.random.Generator) -> dict:
    """The ranks of the true top cells in one Hadamard Response release (the blocked form, ε > 1),
    by Base-Pro rounding, drawn without arranging the release by cell.

    Hadamard Response sends cell x as symbol π(x), π a uniform permutation, and releases e[π(x)]
    for cell x, e the estimates by symbol (:class:`dpcore.mechanisms.hadamard.HadamardResponse`).
    A rank compares values, so of π only its values at the non-empty cells matter (a uniform
    injection into the symbols), and, where a top cell's value is tied, how many of the cells
    tied with it have a smaller index (ties go to the smaller cell index). So: the counts placed
    at their symbols and released with the identity permutation (the same protocol: e); the
    values above each top cell's counted over e; its ties with non-empty cells counted from the
    injection; and the empty cells behind the symbols tied at each value — a uniform sample
    without replacement of the empty cells, the rest of a uniform π — drawn only as how many fall
    between consecutive top cells' indices (a multivariate hypergeometric draw per tied value,
    from what earlier values left). Exact in distribution for each rounding (each draws its own
    ties). Saves drawing the 9.8 M-long permutation and arranging the release by it."""
    d = cells.identity.size
    symbols = rng.choice(d, size=cells.present.size, replace=False)
    arranged = np.zeros(d, dtype=cells.people.dtype)
    arranged[symbols] = cells.people
    estimates = as_run.release("hm", arranged, None, epsilon, rng, permutation=cells.identity)
    # the empty cells between consecutive top-cell indices (top cells are non-empty)
    bounds = np.sort(cells.top)
    between = np.diff(np.searchsorted(cells.empty, np.concatenate(([0], bounds, [d]))))
    out = {}
    for rounded in roundings:
        shown = as_run.base_pro(estimates, rounded)
        values = shown[symbols[cells.top_at]]
        above, equal = ordinal.above_and_before(shown, values, np.full(values.size, d))
        released = 1 + above
        tied = np.flatnonzero(equal > 1)  # ``equal`` counts the cell itself
        if tied.size:
            levels = np.unique(values[tied])
            present_values = shown[symbols]
            near = np.flatnonzero(np.isin(present_values, levels))
            near_values, near_cells = present_values[near], cells.present[near]
            left = between.copy()
            for level in levels:
                here = tied[values[tied] == level]
                empty_tied = int(equal[here[0]]) - int(np.count_nonzero(near_values == level))
                drawn = rng.multivariate_hypergeometric(left, empty_tied)
                left -= drawn
                below = np.cumsum(drawn)  # empty tied cells below bounds[j]: below[j]
                for i in here:
                    released[i] += (np.count_nonzero((near_values == level)
                                                     & (near_cells < cells.top[i]))
                                    + below[np.searchsorted(bounds, cells.top[i])])
        out[rounded] = released
    return out


def _snapshot(matrix, truth, key, epsilon, made, coarse) -> Snapshot:
    shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
    ordering = {}
    if epsilon == HIGH_EPSILON and coarse:
        wanted = ("base",) if key in CENTRAL else tuple(made) if key == "hm" else (
            MAIN_POSTPROCESS,)
        ordering = {m: ranks.rank_pairs(truth, made[m]) for m in wanted}
    elif epsilon == HIGH_EPSILON and key == "hm":
        ordering = {MAIN_POSTPROCESS: ranks.rank_pairs(truth, shown, ED_ORDER_TOP)}
    return Snapshot(ranks.top_flows(matrix, truth, {key: shown}, BAR_TOP),
                    ranks.rank_pairs(truth, shown, RANK_TOP), ordering)


def _variant_plan(lv: Levels, trials: int) -> list[tuple]:
    """(scenario, mechanism, variant, roundings, trials) of :func:`variant_sweep`: at county level
    every mechanism both ways; at the finer level what the thesis ran there (central, randomised
    response, Hadamard); on the subsets the local ones."""
    plan = []
    for scenario in lv.scenarios:
        coarse = scenario == lv.coarse
        keys = MECHANISMS if coarse else FINE_MECHANISMS if scenario == lv.fine else LOCAL
        count = trials if scenario != lv.fine else min(trials, FINE_RUN_TRIALS)
        for key in keys:
            local = key in LOCAL
            if key != "oue":  # unary encoding ran as written
                plan.append((scenario, key, "run", (False, True) if local else (False,), count))
            if local:
                plan.append((scenario, key, "written", (False, True), count))
            elif scenario in lv.whole:  # for the rank tables' probabilities only
                plan.append((scenario, key, "written", (False,), count))
    return plan


def variant_sweep(od: ODMatrix, lv: Levels, epsilons, trials: int, seed: int,
                  stop: threading.Event | None = None, fine: bool | None = None,
                  keys: tuple | None = None, variant_only: str | None = None) -> Variants:
    """Every release of :func:`_variant_plan` over the ε grid (and :data:`STATED_TRIALS` trials at
    ε = 0.5 and 5 at county level), scored by RMSE and maximum error. The written releases are
    the sweep's own draws; the as-run ones use the stream ``"thesis-as-run"``. ``fine``: only the
    finer level (True), or every other (False); ``keys`` and ``variant_only``: only these
    mechanisms, only this variant (to share the work among processes).

    At the finer level and ε = 0.5 and 5, :data:`FINE_STATED_TRIALS` trials to begin with; while
    an outcome of the thesis's ED tables or figure 5.15 involving this mechanism is unseen in
    some rounding (:func:`_undecided`), further releases of this mechanism alone, up to
    :data:`DECIDING_TRIALS`: the same releases, only more of them."""
    rows, per_trial, snaps, extras = [], [], {}, {}
    matrices, by_symbol = {}, {}
    for scenario, key, variant, roundings, count in _variant_plan(lv, trials):
        if fine is not None and (scenario == lv.fine) != fine:
            continue  # ``fine``: only the finer level (True) or all but it (False)
        if (keys is not None and key not in keys) or variant_only not in (None, variant):
            continue
        if scenario.label not in matrices:
            matrix = views.select(od, scenario.view)
            truth_ = matrix.to_dense().astype(np.int64)
            matrices[scenario.label] = (matrix, truth_, matrix.to_items(),
                                        ranks.top_cells(truth_, TOP_FAR))
        matrix, truth, items, top = matrices[scenario.label]
        coarse, n = scenario == lv.coarse, matrix.n
        params = _params(key, od.n)
        for epsilon in sorted(set(epsilons) | set(RANK_EPSILONS)):  # the tables' ε always
            on_grid = epsilon in epsilons
            if not on_grid and scenario not in lv.whole:
                continue
            if variant == "written" and key in CENTRAL and epsilon not in RANK_EPSILONS:
                continue  # the written central releases are the sweep's: needed per trial only
            extra = (STATED_TRIALS if coarse else FINE_STATED_TRIALS
                     if scenario == lv.fine else count)
            planned = (max(count if on_grid else 1, extra) if epsilon in RANK_EPSILONS
                       else count)
            events = (_events(True, epsilon, key)
                      if scenario == lv.fine and epsilon in RANK_EPSILONS else [])
            mine = {rounded: [] for rounded in roundings}  # this setting's per-trial rows
            trial = -1
            while True:
                trial += 1
                if trial >= planned and not any(_undecided(found, events)
                                                 for found in mine.values()):
                    break
                if stop is not None and stop.is_set():
                    return Variants(pd.DataFrame(rows), pd.DataFrame(per_trial), snaps, extras)
                if trial == planned:
                    extra_started = time.process_time()
                generator = release.generator(seed, "thesis-as-run", key, epsilon, trial,
                                              scenario.label)
                if (trial >= planned and variant == "run" and key == "hm"
                        and mechanisms.build("hr", epsilon=epsilon).blocked):
                    # an extra trial needs only the ranks: drawn by symbol (_hr_ranks)
                    if scenario.label not in by_symbol:
                        by_symbol[scenario.label] = _Cells.of(truth, top)
                    if by_symbol[scenario.label] is not None:
                        fine_hm = scenario == lv.fine and epsilon == HIGH_EPSILON
                        for rounded, released in _hr_ranks(epsilon, by_symbol[scenario.label],
                                                           roundings, generator).items():
                            row = {"scenario": scenario.label, "epsilon": epsilon,
                                   "mechanism": key, "variant": variant, "rounded": rounded,
                                   "trial": trial, "zeros": np.nan, "zeros_cut": np.nan,
                                   **_trial_ranks(None, top, fine_hm, released)}
                            per_trial.append(row)
                            mine[rounded].append(row)
                        continue
                raw = (_written_release(matrix, truth, key, params, epsilon, seed, trial)
                       if variant == "written" else as_run.release(key, truth, items, epsilon,
                                                                   generator))
                for rounded in roundings:
                    made = _made(key, raw, n, coarse, rounded)
                    tag = "_round" if rounded else ""
                    if on_grid and trial < count and (variant == "run" or rounded):
                        for method, values in made.items():
                            if method == "base" and rounded:
                                continue
                            for metric, value in _score(truth, values, n, coarse).items():
                                rows.append({"mechanism": key, "variant": variant,
                                             "epsilon": epsilon, "postprocess": method + tag,
                                             "trial": trial, "metric": metric, "value": value,
                                             "scenario": scenario.label, "n": n})
                    if epsilon in RANK_EPSILONS and scenario in lv.whole:
                        shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
                        fine_hm = (scenario == lv.fine and epsilon == HIGH_EPSILON
                                   and key == "hm")
                        row = {"scenario": scenario.label, "epsilon": epsilon, "mechanism": key,
                               "variant": variant, "rounded": rounded, "trial": trial,
                               "zeros": int((shown < ranks.PRESENT_AT).sum()),
                               "zeros_cut": int((made["base_cut"] < ranks.PRESENT_AT).sum())
                               if "base_cut" in made else np.nan,
                               **_trial_ranks(shown, top[:TOP_FAR if fine_hm else RANK_TOP],
                                              fine_hm)}
                        per_trial.append(row)
                        mine[rounded].append(row)
                        if trial == 0 and not (variant == "written" and not rounded):
                            snaps[(scenario.label, epsilon, key, variant, rounded)] = _snapshot(
                                matrix, truth, key, epsilon, made, coarse)
            if trial > planned:
                extras[(scenario.label, epsilon, key, variant)] = (
                    trial, time.process_time() - extra_started)
    return Variants(pd.DataFrame(rows), pd.DataFrame(per_trial), snaps, extras)


def compose(protocol, written: pd.DataFrame, written_snaps: dict, variants: Variants
            ) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """A protocol's sweep table, trial-0 snapshots and per-trial statistics: for each mechanism
    the written or as-run releases (:meth:`thesis_as_run.Protocol.variant`), the local ones'
    Base-Pos and Base-Cut rounded when Base-Pro rounds. A mechanism without releases in the
    chosen setting at some level (e.g. unary encoding rounded at ED level: the thesis did not run
    it there) is left out of that level."""
    mine = variants.rows
    parts = []
    for key in MECHANISMS:
        variant = protocol.variant(key)
        rounded = protocol.rounded and key in LOCAL
        rows = (written[written["mechanism"] == key].assign(variant="written")
                if variant == "written" else mine[(mine["mechanism"] == key)
                                                  & (mine["variant"] == "run")])
        if rounded:
            raw = rows[rows["postprocess"] == "base"]
            pool = mine[(mine["mechanism"] == key) & (mine["variant"] == variant)]
            kept = pool[pool["postprocess"].str.endswith("_round")].assign(
                postprocess=lambda f: f["postprocess"].str.replace("_round", "", regex=False))
            levels_ = set(kept["scenario"])
            rows = pd.concat([raw[raw["scenario"].isin(levels_)], kept], ignore_index=True)
        else:
            rows = rows[~rows["postprocess"].str.endswith("_round")]
        parts.append(rows)
    table = pd.concat(parts, ignore_index=True)
    snaps = {}
    for (level, epsilon, key), snap in written_snaps.items():
        variant = protocol.variant(key)
        rounded = protocol.rounded and key in LOCAL
        found = snap if variant == "written" and not rounded else variants.snaps.get(
            (level, epsilon, key, variant, rounded))
        if found is not None:
            snaps[(level, epsilon, key)] = found
    for (level, epsilon, key, variant, rounded), snap in variants.snaps.items():
        if variant == protocol.variant(key) and rounded == (protocol.rounded and key in LOCAL):
            snaps.setdefault((level, epsilon, key), snap)
    trials = variants.per_trial
    if len(trials):
        mechanism = trials["mechanism"]
        chosen = (trials["variant"] == mechanism.map(protocol.variant)) & (
            trials["rounded"] == (mechanism.isin(LOCAL) & protocol.rounded))
        trials = trials[chosen]
    return table, snaps, trials
