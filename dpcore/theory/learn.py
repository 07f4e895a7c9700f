"""Classroom demonstrations for the Learn page, computed on the current OD matrix.

* :func:`exposure` — how many people an exact table singles out, and the most striking example;
* :func:`differencing_attack` — two exact releases a month apart reveal a newcomer's commute; the
  same two releases through the Laplace mechanism leave the attacker guessing (with the Bayesian
  bound that ε guarantees);
* :func:`baseline_differencing` — the same attack on today's disclosure control (suppression,
  rounding, cell-key perturbation): how often it finds the newcomer with certainty;
* :func:`phone_report` — what one commuter's phone encodes and sends, step by step, from the
  mechanism's own client code (``perturb``), so what is shown is what the protocol does;
* :func:`crowd_estimate` — a crowd of such reports aggregated by the mechanism's own per-user
  simulation into an unbiased estimate;
* :func:`trust_models` — central vs local vs shuffled at the same ε on the current dataset.

The formulas live elsewhere (:mod:`dpcore.theory.privacy_theory`, :mod:`dpcore.theory.amplification`,
:mod:`dpcore.theory.accuracy`); this module puts them to work on data. Zone names are untrusted, so text
that names cells takes a ``label`` function from the caller, which escapes them for its medium.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dpcore import mechanisms
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.mechanisms.base import ADD_REMOVE, BASELINE, LocalMechanism, Mechanism
from dpcore.mechanisms.baselines import KEY_RANGE, CellKey, RandomRounding
from dpcore.mechanisms.central import l2_sensitivity
from dpcore.scoring import ranks
from dpcore.mechanisms.hadamard import (
    HadamardMechanism,
    HadamardResponse,
    hm_probabilities,
)
from dpcore.mechanisms.local import (
    GRR,
    HASH_PRIME,
    DBitFlip,
    LocalHashing,
    PureProtocol,
    SubsetSelection,
    UnaryEncoding,
    universal_hash,
)
from dpcore.mechanisms.sketches import CMS, HCMS, HashFamily, SketchOracle
from dpcore.theory import accuracy, amplification
from dpcore.theory import privacy_theory
from dpcore.theory.privacy_theory import posterior_bound

#: Largest domain the per-user crowd runs on: unary encoding sends d bits per person, and local
#: hashing's server hashes every cell for every report (crowd × d work).
CLASSROOM_CELLS = 5_000
#: Largest crowd of per-user reports (10,000 × 5,000 unary bits = 50 MB at most).
CROWD_MAX = 10_000
#: Cells named in a step-by-step report before "and N more".
LISTED = 8

Label = Callable[[int], str]


# ------------------------------------------------------------------------------------- exposure
@dataclass(frozen=True)
class Exposure:
    """Small cells of an exact table, and the example cell the lesson tells the story of.

    ``example`` is the flat index of a cell holding exactly one commuter between two different
    zones (None when there is none); ``origin_total``/``destination_total`` are the commuters who
    live in its origin and who work in its destination — the crowd that person is *not* hidden in.
    """

    n: int
    domain_size: int
    nonzero: int
    cells_single: int
    cells_under_10: int
    people_under_10: int
    example: int | None
    origin_total: int
    destination_total: int


def exposure(od: ODMatrix) -> Exposure:
    """The re-identification exposure of an exact release of ``od`` (thesis §4).

    The example is the single-person commute whose two ends are busiest (largest smaller total of
    residents and workers), so the lesson shows that a big crowd at each end does not hide someone
    whose *combination* is unique. Commutes between two different places with coordinates are
    preferred (not "Work from home", not within one zone). Ties go to the lower cell index.
    """
    single = od.counts == 1
    between = single & (od.origins.ids[od.rows] != od.destinations.ids[od.cols])
    placed = (between & od.origins.has_coordinates[od.rows]
              & od.destinations.has_coordinates[od.cols])
    candidates = np.flatnonzero(next((c for c in (placed, between, single) if c.any()), single))
    origin_totals, destination_totals = od.origin_totals(), od.destination_totals()
    example, o_total, d_total = None, 0, 0
    if len(candidates):
        crowd = np.minimum(origin_totals[od.rows[candidates]],
                           destination_totals[od.cols[candidates]])
        best = candidates[np.argmax(crowd)]   # argmax takes the first of equal values
        example = int(od.flat_index[best])
        o_total = int(origin_totals[od.rows[best]])
        d_total = int(destination_totals[od.cols[best]])
    small = od.counts < 10
    return Exposure(od.n, od.domain_size, od.nonzero, int(single.sum()), int(small.sum()),
                    int(od.counts[small].sum()), example, o_total, d_total)


# ---------------------------------------------------------------------------- differencing attack
@dataclass(frozen=True)
class DifferencingAttack:
    """Two releases of one origin's row, before and after a newcomer moved in.

    ``exact_changed`` lists the destinations whose exact count changed (the newcomer's alone).
    With Laplace noise of scale ``scale`` on each release, ``posterior`` is the attacker's belief
    in each destination (uniform prior over ``destinations``, likelihood of the observed
    difference), ``true_posterior`` and ``true_rank`` those of the real destination, and ``bound``
    the most any outcome can give it. Month 1 is the same under every hypothesis; in month 2 the
    tables for "the newcomer works in v" and "in w" differ in two cells (by one each), so that
    one ε-DP release (add/remove, sensitivity 1 per cell) bounds their likelihood ratio by e^{2ε}
    — group privacy of two changes within one release, not the composition of two releases. The
    cap for one changed cell, e^ε, is ``one_cell_bound``: the belief can exceed it.
    """

    destination: int
    destinations: int
    exact_changed: np.ndarray
    epsilon: float
    scale: float
    noisy_difference: np.ndarray
    posterior: np.ndarray
    true_posterior: float
    true_rank: int
    prior: float
    bound: float
    one_cell_bound: float

    def top(self, k: int = 5) -> np.ndarray:
        """The k destinations the attacker believes most, most believed first."""
        return ranks.top_cells(self.posterior, k)


def _log_difference_density(z: np.ndarray, scale: float) -> np.ndarray:
    """log density of L₁ − L₂ for independent Laplace(0, b): (1 + |z|/b) e^{−|z|/b} / (4b)."""
    u = np.abs(z) / scale
    return np.log1p(u) - u - math.log(4 * scale)


def origin_row(od: ODMatrix, origin: int) -> np.ndarray:
    """Counts from one origin (position) to every destination: what the attack's tables publish."""
    row = np.zeros(od.n_destinations, dtype=np.int64)
    mine = od.rows == origin
    row[od.cols[mine]] = od.counts[mine]
    return row


def differencing_attack(row_before, destination: int, epsilon: float,
                        rng: np.random.Generator) -> DifferencingAttack:
    """The differencing attack on one origin's row of counts (length = number of destinations).

    Month 1 publishes ``row_before``; month 2 the same row with one more commuter in
    ``destination``. Subtracting exact tables finds that destination with certainty. Each noisy
    release is the registered Laplace mechanism at ``epsilon`` with add/remove neighbours (one
    person joins: sensitivity 1, scale 1/ε).
    """
    before = np.asarray(row_before, dtype=np.int64)
    if before.ndim != 1 or before.size < 2:
        raise ValueError("the row must list at least two destinations.")
    if not 0 <= destination < before.size:
        raise ValueError(f"destination {destination} is outside the row's {before.size} "
                         "destinations.")
    after = before.copy()
    after[destination] += 1
    laplace = mechanisms.build("laplace", epsilon=epsilon, neighbours=ADD_REMOVE)
    difference = laplace.release(after, rng) - laplace.release(before, rng)
    # Hypothesis "the newcomer works in v" shifts only D_v by one: its likelihood, relative to
    # "nobody joined", is f(D_v − 1)/f(D_v); with a uniform prior that is the posterior weight.
    weights = (_log_difference_density(difference - 1, laplace.scale)
               - _log_difference_density(difference, laplace.scale))
    posterior = np.exp(weights - weights.max())
    posterior /= posterior.sum()
    true = posterior[destination]
    prior = 1.0 / before.size
    return DifferencingAttack(
        destination, before.size, np.flatnonzero(after - before), float(laplace.epsilon),
        float(laplace.scale), difference, posterior, float(true),
        int(np.count_nonzero(posterior > true)) + 1, prior,
        float(posterior_bound(prior, 2 * laplace.epsilon)),
        float(posterior_bound(prior, laplace.epsilon)))


@dataclass(frozen=True)
class DeltaMeaning:
    """What δ is, computed for the product's Gaussian (analytic calibration) at (ε, δ): its σ,
    the probability ``loss_exceeds`` that the privacy loss exceeds ε, and its ratio to δ."""

    epsilon: float
    delta: float
    sigma: float
    loss_exceeds: float

    @property
    def ratio(self) -> float:
        return self.loss_exceeds / self.delta

    @property
    def sentence(self) -> str:
        return (f"δ is the profile's slack, not the chance that the guarantee fails: the "
                f"product's Gaussian at ε = {self.epsilon:g}, δ = {self.delta:g} (σ = "
                f"{self.sigma:.3g}) has a privacy loss above ε with probability "
                f"{self.loss_exceeds:.2g}, {self.ratio:.3g} times δ. (ε, δ)-DP only promises that "
                "no outcome becomes more than e^ε times likelier, plus δ.")


def delta_meaning(epsilon: float, delta: float = 1e-6) -> DeltaMeaning:
    """:class:`DeltaMeaning` of the registered Gaussian mechanism at (ε, δ), substitution
    neighbours (its default), by :func:`privacy_theory.gaussian_loss_exceeds`."""
    gaussian = mechanisms.build("gaussian", epsilon=epsilon, delta=delta)
    return DeltaMeaning(float(epsilon), float(delta), float(gaussian.sigma),
                        float(privacy_theory.gaussian_loss_exceeds(
                            epsilon, gaussian.sigma, l2_sensitivity(gaussian.neighbours))))


@dataclass(frozen=True)
class YearlyBudget:
    """Equal releases within one total ε: what basic and advanced composition allow each."""

    total: float
    releases: int
    delta_slack: float
    basic: float
    advanced: float
    helps_from: int

    @property
    def sentence(self) -> str:
        start = (f"To stay within ε = {self.total:g} for the year, each of the {self.releases} "
                 f"releases may use **{self.basic:.3g}** (basic composition: budgets add up, "
                 "and ε-DP releases make an ε-DP year)")
        slack = f"(ε, δ′) = ({self.total:g}, {self.delta_slack:g})"
        if self.advanced > self.basic:
            middle = (f" or **{self.advanced:.3g}** (advanced composition, Dwork–Rothblum–Vadhan; "
                      f"the year is then {slack}-DP, no longer pure ε-DP).")
        else:
            middle = (f". Advanced composition does not help here: for the year to be {slack}-DP "
                      f"it allows only {self.advanced:.3g} per release; it pays from "
                      f"{self.helps_from} releases on.")
        return (start + middle + " Releases about *different* people (one per county) compose "
                f"in parallel: each may use the full {self.total:g}.")


def yearly_budget(total: float, releases: int, delta_slack: float = 1e-6) -> YearlyBudget:
    """Per-release ε of ``releases`` equal releases within ``total`` by basic composition and by
    the advanced composition theorem alone [DRV10], with where the latter starts to help."""
    return YearlyBudget(float(total), int(releases), float(delta_slack),
                        privacy_theory.per_query_epsilon(total, releases),
                        privacy_theory.per_query_epsilon(total, releases, delta_slack),
                        privacy_theory.advanced_helps_from(total, delta_slack))


def _change_probabilities(mech: Mechanism, before: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each cell of a row: P(its published value changes when one commuter joins it), and
    P(it stays the same when nobody joins), between two monthly tables.

    Deterministic methods and cell-key perturbation are *consistent*: an unchanged cell is
    published identically (same people, same cell key), so only the newcomer's cell can move.
    Random rounding draws again every month, so any cell may move.
    """
    before = np.asarray(before, dtype=np.int64)
    values, inverse = np.unique(before, return_inverse=True)
    if isinstance(mech, RandomRounding):
        def up(c):  # P(rounded up) of a count c
            return (c % mech.base) / mech.base
        p, q = up(values), up(values + 1)
        # c and c + 1 share their lower multiple unless c + 1 is one: then "down" differs.
        same_floor = (values + 1) % mech.base != 0
        same = np.where(same_floor, p * q + (1 - p) * (1 - q), (1 - p) * q)
        return (1 - same)[inverse], (p * p + (1 - p) * (1 - p))[inverse]
    if isinstance(mech, CellKey):
        # Month 1: cell key k (uniform); month 2: k + r, r the newcomer's record key (uniform).
        keys = np.arange(KEY_RANGE)
        changed = np.empty(values.size)
        for i, c in enumerate(values):
            first = np.zeros(KEY_RANGE) if c == 0 else mech.perturb(np.full(KEY_RANGE, c), keys)
            second = mech.perturb(np.full(KEY_RANGE, c + 1), keys)  # (k + r) is uniform too
            changed[i] = np.mean(first[:, None] != second[None, :])
        return changed[inverse], np.ones(before.size)
    first, second = mech.release(values, None), mech.release(values + 1, None)
    return (first != second).astype(float)[inverse], np.ones(before.size)


#: Releases of one table an attacker averages, in the Learn page's sentence on random rounding.
AVERAGED_RELEASES = (5, 25, 100)


def rounding_recovery(releases: int, base: int = 5) -> float:
    """The chance that averaging ``releases`` independent unbiased random roundings of one count
    to ``base`` (:class:`~dpcore.mechanisms.baselines.RandomRounding`) and rounding the mean to
    the nearest whole number gives the exact count back, for the hardest counts (the least over
    remainders r = 1 … base − 1; a multiple of the base is never moved). The mean is
    qb + b·B/m with B ~ Bin(m, r/b): exact when |b·B/m − r| < 1/2 (a mean exactly halfway
    counts as a miss, so the chance is a floor whatever the attacker does with ties)."""
    ups = np.arange(releases + 1)
    chances = []
    for remainder in range(1, base):
        exact = np.abs(base * ups / releases - remainder) < 0.5
        chances.append(float(stats.binom.pmf(ups, releases, remainder / base)[exact].sum()))
    return min(chances)


def baseline_differencing(row_before, destination: int,
                          keys: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The two-month attack on each baseline (not DP), exactly.

    The attacker finds the newcomer *with certainty* when the newcomer's cell is the only one
    whose published value changed. Columns: ``mechanism`` (key), ``name``, ``found_here`` (that
    probability for a newcomer to ``destination``), ``found_typical`` (for a newcomer who commutes
    like the origin's current commuters: the average over destinations weighted by their counts).
    """
    before = np.asarray(row_before, dtype=np.int64)
    rows = []
    for key in keys or mechanisms.names(BASELINE):
        mech = mechanisms.build(key)
        changes, stays = _change_probabilities(mech, before)
        others = np.exp(np.log(stays).sum() - np.log(stays))  # every other cell unchanged
        found = changes * others
        weights = before / before.sum() if before.sum() else np.full(before.size, 1 / before.size)
        rows.append((key, mech.name, float(found[destination]), float(found @ weights)))
    return pd.DataFrame(rows, columns=["mechanism", "name", "found_here", "found_typical"])


# --------------------------------------------------------------------------- classroom domain
def classroom_matrix(od: ODMatrix) -> tuple[ODMatrix, str | None]:
    """``od`` at a size the per-user crowd can run on (≤ :data:`CLASSROOM_CELLS` cells).

    Rolled up to the parent level when that is small enough, otherwise restricted to the busiest
    origins and destinations. The second value says what was done (None when nothing was).
    """
    if od.domain_size <= CLASSROOM_CELLS:
        return od, None
    if od.has_parent_level and od.aggregate().domain_size <= CLASSROOM_CELLS:
        rolled = od.aggregate()
        return rolled, (f"rolled up to the parent level ({rolled.n_origins:,} × "
                        f"{rolled.n_destinations:,} = {rolled.domain_size:,} cells)")
    side = max(2, math.isqrt(CLASSROOM_CELLS))
    origins = od.origins.ids[ranks.top_cells(od.origin_totals(), side)]
    destinations = od.destinations.ids[ranks.top_cells(od.destination_totals(), side)]
    small = od.subset(origins, destinations, name=f"{od.name} (busiest zones)")
    return small, (f"restricted to the {small.n_origins:,} busiest origins and "
                   f"{small.n_destinations:,} busiest destinations ({small.domain_size:,} cells, "
                   f"{small.n:,} commuters)")


def busiest_commutes(od: ODMatrix, limit: int = 200) -> dict[int, int]:
    """Cell index → count of the ``limit`` busiest commutes, busiest first (ties by index): the
    commutes a class picks from."""
    order = np.lexsort((od.flat_index, -od.counts))[:limit]
    return {int(cell): int(count) for cell, count in zip(od.flat_index[order], od.counts[order])}


# ------------------------------------------------------------------------------ one phone
@dataclass(frozen=True)
class PhoneReport:
    """What one phone did: markdown steps, the report it sent and what the server can read off it.

    ``p``/``q`` are the probabilities that the report supports the sender's own cell / any other
    cell (None where the mechanism is not a pure protocol); ``supports_own`` whether this report
    does, and ``support_size`` how many cells it supports.
    """

    key: str
    item: int
    steps: tuple[str, ...]
    sent: str
    bits: float
    p: float | None
    q: float | None
    supports_own: bool | None
    support_size: int | None


def tex_number(number: float) -> str:
    """A whole number with thousands separators for LaTeX ({,} keeps the comma unspaced)."""
    return f"{number:,.0f}".replace(",", "{,}")


def _named(cells, label: Label) -> str:
    """'cell A, cell B, … and N more' for a list of cell indices."""
    cells = [int(c) for c in cells]
    shown = ", ".join(f"#{c} {label(c)}" for c in cells[:LISTED])
    more = len(cells) - LISTED
    return shown + (f" and {more:,} more" if more > 0 else "") if cells else "none"


def _grr_rule(mech: GRR, d) -> list[str]:
    p, q = mech.support_probabilities(d)
    return [f"Keep the true commute with probability $p = e^\\varepsilon/(e^\\varepsilon + d - 1) "
            f"= {p:.4g}$; otherwise pick one of the other $d - 1 = {d - 1:,}$ commutes, each with "
            f"$q = {q:.4g}$. The truth gets a head start of $p/q = e^\\varepsilon$ over each other "
            "commute, no more."]


def _grr_steps(mech: GRR, item, d, report, label):
    y = int(report["y"][0])
    kept = y == item
    return ([*_grr_rule(mech, d),
             "This time the phone " + ("**kept the truth**." if kept else
                                       "**picked another commute** at random.")],
            f"cell #{y} {label(y)}", kept, 1)


def _unary_rule(mech: UnaryEncoding, d) -> list[str]:
    p, q = mech.support_probabilities(d)
    return [f"Randomise every bit independently: the commute's own bit is 1 with probability "
            f"$p = {p:.4g}$, every other bit with probability $q = {q:.4g}$ (about "
            f"{(d - 1) * q:,.1f} of them are expected to be 1)."]


def _unary_steps(mech: UnaryEncoding, item, d, report, label):
    bits = report["bits"][0]
    ones = np.flatnonzero(bits)
    return ([f"Write the commute as $d = {tex_number(d)}$ bits, all 0 except bit #{item}.",
             *_unary_rule(mech, d),
             f"This time the own bit came out **{int(bits[item])}**, and {len(ones):,} bits are 1 "
             f"in all: {_named(ones, label)}."],
            f"a row of bits, {len(ones):,} of them 1", bool(bits[item]), len(ones))


def _hash_function(mech: LocalHashing, seed: str) -> str:
    return (f"Draw a personal hash function with seed {seed}: $H(x) = ((a x + b) \\bmod "
            f"{tex_number(HASH_PRIME)}) \\bmod g$ with $g = {mech.hash_range}$ buckets.")


def _bucket_response(mech: LocalHashing, d, bucket: str) -> str:
    p, _ = mech.support_probabilities(d)
    return (f"Randomised response over the {mech.hash_range} buckets: keep bucket {bucket} with "
            f"probability $p = {p:.4g}$, otherwise send one of the other {mech.hash_range - 1} "
            "uniformly.")


def _hashing_rule(mech: LocalHashing, d) -> list[str]:
    return [_hash_function(mech, "$(a, b)$ drawn at random"), "Hash the commute: $H(x)$.",
            _bucket_response(mech, d, "$H(x)$"),
            "The server cannot invert the hash: the report supports every cell $v$ with "
            "$H(v)$ equal to the bucket sent, about $d/g$ of them."]


def _hashing_steps(mech: LocalHashing, item, d, report, label):
    a, b, y = (int(report[k][0]) for k in ("a", "b", "y"))
    g = mech.hash_range
    bucket = int(universal_hash(a, b, item, g))
    supported = np.flatnonzero(universal_hash(a, b, np.arange(d), g) == y)
    return ([_hash_function(mech, f"$(a, b) = ({tex_number(a)}, {tex_number(b)})$"),
             f"Hash the commute: $H({item}) = {bucket}$.",
             _bucket_response(mech, d, str(bucket)) + " This time it "
             + ("**kept** it." if y == bucket else f"**sent bucket {y}** instead."),
             f"The server cannot invert the hash: the report supports every cell $v$ with "
             f"$H(v) = {y}$ — {len(supported):,} of the {d:,} cells (about $d/g$): "
             f"{_named(supported, label)}."],
            f"seed $(a, b)$ and bucket {y}", y == bucket, len(supported))


def _subset_steps(mech: SubsetSelection, item, d, report, label):
    subset = np.sort(report["subset"][0])
    p, q = mech.support_probabilities(d)
    k = mech.subset_size(d)
    own = bool(np.isin(item, subset))
    return ([f"Choose a set of $k = {tex_number(k)}$ commutes: with probability $p^* = {p:.4g}$ it "
             "contains "
             "the true commute (plus others at random), otherwise it is $k$ other commutes. Each "
             f"other commute is in the set with probability $q^* = {q:.4g}$.",
             "This time the set " + ("**contains** the true commute: " if own else
                                     "**does not contain** the true commute: ")
             + _named(subset, label) + "."],
            f"a set of {k:,} cells", own, k)


def _dbitflip_steps(mech: DBitFlip, item, d, report, label):
    cells, bits = report["j"][0], report["bits"][0]
    own, other = mech.bit_probabilities()
    rows = "; ".join(f"#{int(c)} {label(int(c))} → **{int(b)}**" for c, b in
                     zip(cells[:LISTED], bits[:LISTED]))
    mine = bool(np.isin(item, cells))
    return ([f"Pick $d_b = {mech.d_b}$ of the {d:,} cells at random (the commute's own cell is "
             "among them only by chance: " + ("this time it is" if mine else "this time it is not")
             + ").",
             f"For each picked cell send one bit: 1 with probability {own:.4g} if it is the own "
             f"commute, {other:.4g} otherwise: {rows}."],
            f"{mech.d_b} cell indices and {mech.d_b} bits", None, None)


def _hr_rule(mech: HadamardResponse, d, place: str) -> list[str]:
    lay, uniform, _ = mech.constants(d)
    return [f"The answers are $K = {tex_number(lay.outputs)}$ numbers"
            + (f" in {lay.blocks:,} blocks of {lay.block_size:,}" if lay.blocked else "")
            + f". Each commute owns one row of a {lay.block_size:,} × {lay.block_size:,} Hadamard "
            "(±1) table" + (" inside its block" if lay.blocked else "")
            + f"; the commute's set $C$ is where its row is +1 (half of its "
              f"{lay.block_size:,} entries).",
            place,
            f"With probability {uniform:.4g} send a uniformly random number of all $K$, "
            "otherwise a "
            "random number from $C$: numbers in $C$ come out $e^\\varepsilon$ times as often."]


def _hr_steps(mech: HadamardResponse, item, d, report, label, permutation):
    lay, _, _ = mech.constants(d)
    y = int(report["y"][0])
    symbol = item if permutation is None else int(permutation[item])
    block, row = divmod(symbol, lay.items_per_block)
    row += 1
    in_set = lay.supports(symbol, y)
    steps = [*_hr_rule(mech, d, "A public random permutation (drawn once for everyone) places the "
                       f"commute in block {block}, row {row}." if lay.blocked
                       else f"The commute owns row {row}."),
             f"This time it sent **{y:,}**, which is " + ("in" if in_set else "not in") + " $C$."]
    return steps, f"the number {y:,}", in_set, None


def _hm_steps(mech: HadamardMechanism, item, d, report, label):
    columns, signs = report["j"][0], report["s"][0]
    t = mech.coefficients(d)
    keep, _ = hm_probabilities(mech.epsilon, t)
    true = 1 - 2 * (np.array([bin(item & int(j)).count("1") for j in columns]) % 2)
    rows = "; ".join(f"column {int(j):,}: true {int(s):+d}, sent **{int(r):+d}**"
                     for j, s, r in zip(columns[:LISTED], true[:LISTED], signs[:LISTED]))
    kept = bool((true == signs).all())
    return ([f"Pad the {d:,} cells to $D = {tex_number(mech.padded(d))}$ and pick $t = {t}$ random "
             "columns "
             "of the $D \\times D$ Hadamard table; the commute's row gives one true sign (±1) per "
             "column.",
             f"Keep the pattern of {t} signs with probability $e^\\varepsilon/(e^\\varepsilon + "
             f"2^t - 1) = {keep:.4g}$, otherwise send one of the other $2^t - 1$ patterns. This "
             "time it " + ("**kept** them" if kept else "**changed** them") + f": {rows}."],
            f"{t} column indices and {t} signs", kept, None)


def _sketch_choice(mech: SketchOracle, item, row, family: HashFamily) -> str:
    column = int(family(row, item))
    return (f"The server has published $k = {tex_number(mech.k)}$ hash functions onto "
            f"$m = {tex_number(mech.m)}$ columns. The phone picks function #{row} at random and "
            f"hashes the commute: $h_{{{row}}}({item}) = {column}$.")


def _sketch_support(d, supported, label) -> str:
    return (f"The report supports every cell whose entry reads +1 at its own column of row $j$ "
            f"— {len(supported):,} of the {d:,} cells: {_named(supported, label)}.")


def _cms_steps(mech: CMS, item, d, report, label, family: HashFamily):
    row, bits = int(report["j"][0]), report["bits"][0]
    own = bool(bits[int(family(row, item))])
    supported = np.flatnonzero(bits[family(row, np.arange(d))])
    p, q = mech.bit_probabilities()
    return ([_sketch_choice(mech, item, row, family),
             f"Write $m = {tex_number(mech.m)}$ entries, +1 at that column and −1 elsewhere, and "
             f"flip each with probability $1/(1+e^{{\\varepsilon/2}}) = {q:.4g}$: this time the "
             f"own entry came out **{'+1' if own else '−1'}**, and {int(bits.sum()):,} entries "
             "read +1.",
             _sketch_support(d, supported, label)],
            f"row {row} and {mech.m:,} signs, {int(bits.sum()):,} of them +1", own, len(supported))


def _hcms_steps(mech: HCMS, item, d, report, label, family: HashFamily):
    row, column, bit = (int(report[key][0]) for key in ("j", "l", "bit"))

    def entry(cells):   # H_m[h_j(v), l] = (−1)^popcount(h_j(v) & l)
        return 1 - 2 * (np.bitwise_count(family(row, cells) & column) & 1).astype(np.int64)

    true = int(entry(item))
    p, _ = mech.bit_probabilities()
    supported = np.flatnonzero(bit * entry(np.arange(d)) > 0)
    return ([_sketch_choice(mech, item, row, family),
             f"Pick column $l = {column}$ of the {mech.m:,} × {mech.m:,} Hadamard table at random: "
             f"the true entry is $H[{int(family(row, item))}, {column}] = {true:+d}$.",
             f"Send it with probability $e^\\varepsilon/(1+e^\\varepsilon) = {p:.4g}$, flipped "
             f"otherwise: this time the phone sent **{bit:+d}** ("
             + ("kept" if bit == true else "flipped") + ").",
             _sketch_support(d, supported, label)],
            f"one bit ({bit:+d}) with row {row} and column {column}", bit == true, len(supported))


def phone_report(mech: LocalMechanism, item: int, d: int, rng: np.random.Generator,
                 label: Label = str) -> PhoneReport:
    """One commuter's report, step by step, drawn with the mechanism's own client (``perturb``).

    ``item`` is the commute's flat cell index in a domain of ``d`` cells; ``label(cell)`` names a
    cell in the caller's medium (escaped). Local mechanisms only.
    """
    if not isinstance(mech, LocalMechanism):
        raise ValueError(f"{mech.name} is not a local mechanism: people send it their true data.")
    if not 0 <= item < d:
        raise ValueError(f"commute {item} is outside the domain of {d:,} cells.")
    items = np.array([item], dtype=np.int64)
    if isinstance(mech, HadamardResponse):
        permutation = mech.draw_permutation(d, rng)
        report = mech.perturb(items, d, rng, permutation=permutation)
        steps, sent, own, size = _hr_steps(mech, item, d, report, label, permutation)
    elif isinstance(mech, SketchOracle):   # the server's public hash family, drawn per round
        family = mech.draw_family(d, rng)
        report = mech.perturb(items, d, rng, family=family)
        explain = _cms_steps if isinstance(mech, CMS) else _hcms_steps
        steps, sent, own, size = explain(mech, item, d, report, label, family)
    else:
        report = mech.perturb(items, d, rng)
        explain = {GRR: _grr_steps, UnaryEncoding: _unary_steps, LocalHashing: _hashing_steps,
                   SubsetSelection: _subset_steps, DBitFlip: _dbitflip_steps,
                   HadamardMechanism: _hm_steps}
        kind = next((k for k in explain if isinstance(mech, k)), None)
        if kind is None:
            raise ValueError(f"no step-by-step walkthrough for {mech.name}.")
        steps, sent, own, size = explain[kind](mech, item, d, report, label)
    p, q = mech.support_probabilities(d) if isinstance(mech, PureProtocol) else (None, None)
    first = f"The commute is cell #{item} of $d = {tex_number(d)}$: {label(item)}."
    return PhoneReport(mech.key, item, (first, *steps), sent, float(mech.bits_per_user(d)),
                       p, q, own, size)


def device_rules(mech: LocalMechanism, d: int) -> list[str]:
    """What a phone will do with any commute (markdown), before it has one: the wording of
    :func:`phone_report` without the outcome, for a page that must not learn the commute.
    GRR, unary encoding, local hashing and Hadamard response."""
    if isinstance(mech, GRR):
        return _grr_rule(mech, d)
    if isinstance(mech, UnaryEncoding):
        return [f"Write the commute as $d = {tex_number(d)}$ bits, all 0 except its own.",
                *_unary_rule(mech, d)]
    if isinstance(mech, LocalHashing):
        return _hashing_rule(mech, d)
    if isinstance(mech, HadamardResponse):
        place = ("A public random permutation (drawn once for the round, the same for everyone) "
                 "places each commute in a block and a row." if mech.blocked else
                 "Commute number $x$ owns row $x + 1$.")
        return _hr_rule(mech, d, place)
    raise ValueError(f"no device description for {mech.name}.")


# ------------------------------------------------------------------------------------ the crowd
@dataclass(frozen=True)
class CrowdEstimate:
    """A crowd's reports aggregated by the server (the mechanism's per-user simulation).

    ``truth``/``estimate`` are over the whole (classroom) domain; ``cell`` is the commute being
    followed, ``support`` its support count C_v (pure protocols; None otherwise) and ``sd`` the
    theoretical standard deviation of its estimate (None without a closed form).
    """

    people: int
    cell: int
    truth: np.ndarray
    estimate: np.ndarray
    support: float | None
    sd: float | None
    rmse: float
    rmse_theory: float | None

    def table(self, k: int = 10) -> pd.DataFrame:
        """The k busiest commutes of the crowd: cell, true count, estimate, error."""
        cells = ranks.top_cells(self.truth, k)
        return pd.DataFrame({"cell": cells, "true": self.truth[cells],
                             "estimate": self.estimate[cells],
                             "error": self.estimate[cells] - self.truth[cells]})


def crowd_estimate(mech: LocalMechanism, od: ODMatrix, people: int, cell: int,
                   rng: np.random.Generator) -> CrowdEstimate:
    """``people`` commuters drawn from ``od`` (at most :data:`CROWD_MAX`) each send one report;
    the server turns them into estimates. ``od`` must be a classroom-sized matrix."""
    if od.domain_size > CLASSROOM_CELLS:
        raise ValueError(f"the crowd demonstration runs on at most {CLASSROOM_CELLS:,} cells; "
                         f"{od.name} has {od.domain_size:,} (use classroom_matrix).")
    people = min(int(people), od.n, CROWD_MAX)
    if people < 1:
        raise ValueError("the crowd needs at least one commuter.")
    crowd = views.subsample(od, people, rng) if people < od.n else od
    d = od.domain_size
    truth = crowd.to_dense()
    estimate = mech.simulate(crowd.to_items(), d, rng)
    support = None
    if isinstance(mech, PureProtocol):   # C_v, recovered from ĉ_v = (C_v − n q*)/(p* − q*)
        p, q = mech.support_probabilities(d)
        support = float(round(estimate[cell] * (p - q) + people * q))
    variance = mech.variance(truth)
    return CrowdEstimate(
        people, int(cell), truth, estimate, support,
        None if variance is None else float(math.sqrt(variance[cell])),
        float(np.sqrt(np.mean((estimate - truth) ** 2))),
        None if variance is None else float(math.sqrt(np.mean(variance))))


# ------------------------------------------------------------------------------ trust models
SHUFFLE_BOUND = "clone_grr"


def shuffled_local_epsilon(n: int, epsilon: float, delta: float) -> float:
    """The ε₀ each phone may use so that n shuffled GRR reports are (ε, δ)-DP (numerical clone
    bound of FMT21 with GRR's clone probability). Never below ε: without amplification a phone may
    still spend ε, since the shuffled view is at least as private as one report."""
    return max(epsilon, amplification.local_budget(SHUFFLE_BOUND, n, epsilon, delta).epsilon0)


def shuffle_table(n: int, epsilon: float, delta: float, k: int) -> pd.DataFrame:
    """Every amplification bound both ways: the ε₀ a phone may use for a central ``epsilon``
    (inverse), and the central ε of phones using ε₀ = ``epsilon`` (forward); NaN with the reason
    where a bound certifies nothing. Columns: bound, phone_epsilon0, central_epsilon, note."""
    rows = []
    for bound, label in amplification.BOUNDS.items():
        row, notes, found = {"bound": label}, [], None
        for column, solve in (("phone_epsilon0", amplification.local_budget),
                              ("central_epsilon", amplification.shuffle_guarantee)):
            try:
                found = solve(bound, n, epsilon, delta, k=k)
                row[column] = found.epsilon0 if column == "phone_epsilon0" else found.epsilon
            except amplification.NotCertified as reason:
                row[column] = math.nan
                notes.append(str(reason))
        row["note"] = " ".join(dict.fromkeys(notes)) or found.note
        rows.append(row)
    return pd.DataFrame(rows)


def shuffle_choice(table: pd.DataFrame, epsilon: float) -> tuple[str, float]:
    """The bound the lessons' shuffled GRR uses (:data:`SHUFFLE_BOUND`) and the ε₀ it lets a phone
    use, read from :func:`shuffle_table`'s own row, so a sentence quoting it quotes a listed
    bound (as :func:`shuffled_local_epsilon`, never below ε)."""
    label = amplification.BOUNDS[SHUFFLE_BOUND]
    row = table[table["bound"] == label].iloc[0]
    return label, max(epsilon, float(row["phone_epsilon0"]))


def trust_models(od: ODMatrix, epsilon: float, delta: float,
                 rng: np.random.Generator) -> pd.DataFrame:
    """Central Laplace, the recommended local mechanism, and shuffled GRR, all at central ε.

    One release of each on ``od`` (dense), with its RMSE and the theoretical RMSE (square root of
    the mean per-cell variance). Columns: model, key, mechanism, epsilon_local (ε each phone uses;
    NaN for central), guarantee, rmse, rmse_theory, seconds.
    """
    counts = od.to_dense()
    n, d = od.n, od.domain_size
    pick = accuracy.recommend_local(d, epsilon, n)
    epsilon0 = shuffled_local_epsilon(n, epsilon, delta)
    runs = [("central", mechanisms.build("laplace", epsilon=epsilon), math.nan,
             f"ε = {epsilon:g}-DP"),
            ("local", mechanisms.build(pick.key, epsilon=epsilon), epsilon,
             f"ε = {epsilon:g}-LDP"),
            ("shuffled", mechanisms.build("grr", epsilon=epsilon0), epsilon0,
             f"({epsilon:g}, {delta:g})-DP after shuffling")]
    rows = []
    for model, mech, local_epsilon, guarantee in runs:
        released, seconds = _timed_release(mech, counts, rng)
        variance = mech.variance(counts)
        rows.append({"model": model, "key": mech.key, "mechanism": mech.name,
                     "epsilon_local": local_epsilon, "guarantee": guarantee,
                     "rmse": float(np.sqrt(np.mean((released - counts) ** 2))),
                     "rmse_theory": math.nan if variance is None
                     else float(np.sqrt(np.mean(variance))),
                     "seconds": seconds})
    return pd.DataFrame(rows)


def _timed_release(mech: Mechanism, counts: np.ndarray, rng: np.random.Generator):
    """A release and the seconds it took."""
    start = time.perf_counter()
    released = mech.release(counts, rng)
    return released, time.perf_counter() - start
