"""The chapter's protocol: its mechanisms (with the thesis's δ and t), levels, ε, post-processings
and trial counts, its items in order, and the data classes the trials, checks and report share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math

import pandas as pd

from dpcore import mechanisms
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation.experiment import Scenario

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
    #: the planted breaks the check cannot tell from this release (:mod:`.planted`): the
    #: verdict is then "cannot tell" instead of "agrees"
    blind: tuple = ()

    @property
    def word(self) -> str:
        if self.blind:
            return "cannot tell"
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


@dataclass(frozen=True)
class Snapshot:
    """What the bars, orderings and rank tables need of one release (trial 0 of the sweep's):
    the true top-30 commutes with its counts, the ranks it gives the true top 10, and where an
    ordering figure needs it, true against released rank per post-processing."""

    top: pd.DataFrame
    pairs: pd.DataFrame
    ordering: dict


#: The mechanisms the thesis ran at its finer (ED) level; unary encoding and local hashing ran at
#: county level and on the subsets only (their per-user simulation would have taken days).
FINE_MECHANISMS = CENTRAL + ("grr", "hm")


#: Trials of the as-run releases at the finer level (ED: 9.8 M cells; a Hadamard Response
#: release there takes ~1.6 s): fewer than the coarse level's, the curves' intervals say so.
FINE_RUN_TRIALS = 3
#: Trials at county level and ε = 0.5, 5 for the thesis's stated numbers (zeros of 5.4, 5.9,
#: 5.11) and the rank tables' probabilities: enough that a probability ≈ 0 is told from one
#: of a few per cent (0 of 80 puts the 95 % upper bound at 4.5 %).
STATED_TRIALS = 80
#: …and at the finer level (ED: a Hadamard Response release takes ~0.9 s there), to begin with:
#: an outcome of the thesis's ED tables (5.3, 5.4) or of figure 5.15 not seen in these gets
#: more trials of that mechanism alone (:data:`DECIDING_TRIALS`, :func:`.variants._undecided`).
FINE_STATED_TRIALS = FINE_RUN_TRIALS
#: A single draw of the thesis (its tables, its zero counts) is implausible under a protocol
#: when the 95 % upper confidence bound of its probability is below this.
PLAUSIBLE = 0.05
#: Trials after which an outcome never seen is ruled out: 0 hits in 72 put the 95 %
#: Clopper–Pearson upper bound at 1 − 0.025^(1/72) = 4.99 % < :data:`PLAUSIBLE` (71: 5.1 %).
#: An outcome seen at least once is plausible at any trial count up to 111, so only the unseen
#: ones need these.
DECIDING_TRIALS = math.ceil(math.log(0.025) / math.log(1 - PLAUSIBLE))
