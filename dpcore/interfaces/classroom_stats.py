"""What a class's reports can and cannot tell, at any class size: exact intervals from the law of
the report counts.

Why exact. With a handful of reports the normal approximation (estimate ± 1.96 sd) has no coverage
guarantee: a class of 4 at ε = 1.5 showed "95 %" intervals wider than the class around commutes
nobody took. Here every interval comes from the exact law of the one number the server's estimate
of a cell is a function of, inverted for every possible true count (Neyman's construction,
equal-tailed, as Clopper & Pearson 1934 for one binomial):

* GRR, OUE, OLH (pure protocols [WBLJ17]): the support count ``C_x = Bin(n_x, p*) + Bin(n − n_x,
  q*)`` (each cell's law exact; GRR's cells are dependent, each is exact marginally; OLH's up to
  the universal hash's O(g/2³¹)).
* Hadamard response [ASZ19]: the signed count ``T_s = Σ_reports ±1`` (+1 in C_s, −1 elsewhere in
  s's block, 0 outside it). A student on s gives +1 with probability (1 − u) + u/(2B), −1 with
  u/(2B); a classmate on another cell of s's block ±1 with (1 − u)/2 + u/(2B) each; one in another
  block ±1 with u/(2B) each (u the uniform-report probability, B blocks). With one block (ε ≤ 1)
  every classmate is in s's block: the law is exact. With several (ε > 1) the number m of
  classmates sharing s's block is not observed: it is *plugged in* (the block's other estimates,
  clipped), so these intervals are not guaranteed — the coverage test checks them by simulation.

For every whole n_x ∈ {0, …, n} the law is a convolution of per-student kernels; the interval is
the equal-tailed Neyman (Clopper–Pearson) inversion: n_x is kept when the observed count is in
neither of its α/2 tails. Coverage ≥ 1 − α for every n_x, at every n. Each cell's interval is
95 % on its own (not simultaneous over the d cells).

*One student from none.* A commute with c students is **distinguishable from an empty one** when
its interval excludes 0 at the 10 % quantile of its count's law — i.e. in at least 9 classes of
10 (:data:`POWER`, "at typical answers"). :func:`resolution` is the fewest such c; :func:`propose` chooses the class
defaults so that the class's most common commute, assumed to hold :func:`most_common` students
(a fifth of the class, at least 2), is distinguishable.

References: [WBLJ17] Wang, Blocki, Li, Jha, USENIX Security 2017; [ASZ19] Acharya, Sun, Zhang,
AISTATS 2019; Clopper & Pearson, Biometrika 26 (1934) for the equal-tailed inversion.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpcore import mechanisms
from dpcore.interfaces.classroom import EPSILONS, MAX_REPORTS, MECHANISMS, Round, stack_reports
from dpcore.mechanisms.hadamard import HadamardResponse

#: Confidence of every interval on the teacher's screen.
CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
#: "At typical answers": a commute counts as distinguishable from an empty one when its interval
#: excludes 0 in at least this share of classes (9 in 10).
POWER = 0.9


# ------------------------------------------------------------------------------- the exact law
@dataclass(frozen=True)
class CountLaw:
    """One cell's count as a sum of independent per-student contributions.

    Each kernel is a probability vector over one student's contribution, shifted to start at 0
    (pure protocols: {0, 1}; Hadamard response: {−1, 0, +1} as {0, 1, 2}); ``own`` for a student
    on the cell, ``same`` for a classmate sharing its block (Hadamard response), ``other`` for
    everyone else. ``offset`` is the lowest contribution (0 or −1); ``scale`` maps the count to
    the server's estimate: ``estimate = scale·(count − n·centre)``.
    """

    own: tuple[float, ...]
    same: tuple[float, ...]
    other: tuple[float, ...]
    offset: int
    scale: float
    centre: float

    def estimate(self, count: int, n: int) -> float:
        return self.scale * (count - n * self.centre)

    def count(self, estimate: float, n: int) -> int:
        """The integer count an estimate came from (inverting :meth:`estimate`)."""
        return int(round(estimate / self.scale + n * self.centre))


def count_law(round_: Round, d: int) -> CountLaw:
    """The per-student kernels of ``round_``'s mechanism on d cells (see the module docstring)."""
    mech = round_.build()
    if isinstance(mech, HadamardResponse):
        lay, u, scale = mech.constants(d)
        edge = u / (2 * lay.blocks)
        own = (edge, u - 2 * edge, 1 - u + edge)
        same = ((1 - u) / 2 + edge, u - 2 * edge, (1 - u) / 2 + edge)
        other = (edge, 1 - 2 * edge, edge)
        return CountLaw(own, same, other, -1, scale, 0.0)
    p, q = mech.support_probabilities(d)
    return CountLaw((1 - p, p), (1 - q, q), (1 - q, q), 0, 1 / (p - q), q)


@functools.lru_cache(maxsize=256)
def _spectra(law: CountLaw, n: int) -> tuple[int, int, list[np.ndarray]]:
    """(size, transform length, the kernels' log-transforms) for sums of n contributions."""
    size = (len(law.own) - 1) * n + 1
    length = 1 << (size - 1).bit_length()
    logs = [np.log(np.where(f == 0, 1e-300, f))           # a zero's power: 1 at 0, else ≈ 0
            for f in (np.fft.rfft(kernel, length) for kernel in (law.own, law.same, law.other))]
    return size, length, logs


def _pmf(law: CountLaw, n: int, m: int | None, k: int) -> np.ndarray:
    """The law of the shifted count W for k students on the cell, ``m`` classmates sharing its
    block (None: all the others do), through the discrete Fourier transform: the law of a sum of
    independent contributions is the product of their transforms, so it is the inverse
    transform of own^k · same^(sharing) · other^(rest), exact up to rounding (~10⁻¹⁵, far below
    the α/2 the tails are compared with)."""
    size, length, logs = _spectra(law, n)
    sharing = n - k if m is None else min(m, n - k)
    spectrum = np.exp(k * logs[0] + sharing * logs[1] + (n - k - sharing) * logs[2])
    return np.clip(np.fft.irfft(spectrum, length)[:size], 0.0, None)


def _classmates_in_block(round_: Round, d: int, n: int, c: int) -> int | None:
    """The ``m`` of :func:`_row` for a cell with c students when the other n − c spread evenly
    over the other cells: 0 without blocks (pure protocols), None when every classmate shares the
    one block (Hadamard response, ε ≤ 1), else the expected number in the cell's block."""
    mech = round_.build()
    if not isinstance(mech, HadamardResponse):
        return 0
    lay = mech.layout(d)
    if lay.blocks == 1:
        return None
    return int(round((n - c) * lay.same_block_pairs() / (d * (d - 1))))


@functools.lru_cache(maxsize=2048)     # at most 2 × 4,001 floats each: ≤ 128 MB
def _row(law: CountLaw, n: int, m: int | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(P(W ≤ w | k), P(W ≥ w | k)) for every w, W the shifted count and k the students on the
    cell: one row of the tables the intervals invert."""
    pmf = _pmf(law, n, m, k)
    return np.minimum(np.cumsum(pmf), 1.0), np.minimum(np.cumsum(pmf[::-1])[::-1], 1.0)


def _first(test, low: int, high: int) -> int:
    """The first k in [low, high] passing ``test``, which is false then true along k (bisection);
    high + 1 if none does."""
    while low <= high:
        middle = (low + high) // 2
        if test(middle):
            high = middle - 1
        else:
            low = middle + 1
    return low


def interval(law: CountLaw, n: int, count: int, m: int | None,
             alpha: float = ALPHA) -> tuple[int, int]:
    """Equal-tailed exact confidence interval for the students on a cell whose (unshifted) count
    is ``count``: every k ∈ {0 … n} whose law puts the count in neither α/2 tail — from the first
    k with P(W ≥ w | k) > α/2 (n if none) to the last with P(W ≤ w | k) > α/2 (0 if none). If no
    k is kept (possible for a few discrete laws), the two one-sided bounds, which then bracket
    the truth with at least the same probability.

    Both are found by bisection over k, a few rows of the law (:func:`_row`) instead of all n + 1:
    more students on the cell make the count stochastically larger (a student on it contributes
    ``own``, which dominates ``same`` and ``other`` in the usual stochastic order), so
    P(W ≥ w | k) grows and P(W ≤ w | k) falls with k, up to rounding (~10⁻¹⁵) far from α/2.
    Hadamard response's plug-in gives each cell its own m, hence its own law: scanning every k
    meant up to d tables of n + 1 rows per teacher refresh (its cold refresh took 3.1 s at 1,000
    reports, 24 s at 2,000: bench/bench_classroom_intervals.py, docs/CLASSROOM.md)."""
    w = int(np.clip(count - law.offset * n, 0, (len(law.own) - 1) * n))
    low = min(_first(lambda k: _row(law, n, m, k)[1][w] > alpha / 2, 0, n), n)
    high = _first(lambda k: not _row(law, n, m, k)[0][w] > alpha / 2, 0, n) - 1
    high = max(high, 0)
    return (low, high) if low <= high else (high, low)


def _starts_above_zero(law: CountLaw, n: int, m: int | None) -> np.ndarray:
    """Per shifted count w, whether the interval :func:`interval` gives it starts above 0: by the
    same monotonicity, its first kept k is above 0 when k = 0 leaves w in the upper tail, and its
    last is when k = 1 does not leave it in the lower one — two rows for every w at once."""
    return ((_row(law, n, m, 0)[1] <= ALPHA / 2) & (_row(law, n, m, 1)[0] > ALPHA / 2))


def chance_above_zero(law: CountLaw, m: int | None, n: int, k: int) -> float:
    """The probability that a cell with k students gets an interval starting above 0: the mass
    of its count's law on the counts whose interval excludes 0 (k = 0: a false alarm, at most
    α/2; k = 1: one student told from none)."""
    pmf = np.diff(_row(law, n, m, k)[0], prepend=0.0)
    return float(pmf[_starts_above_zero(law, n, m)].sum())


def percent(probability: float) -> str:
    """A probability as the sentences say it: whole percent from 10 %, two significant digits
    below, and never "100 %" or "0 %" for one that is not."""
    value = 100 * probability
    if 99 < value < 100:
        return "over 99 %"
    if 0 < value < 10:
        return f"{value:.2g} %"
    return f"{value:.0f} %"


# ------------------------------------------------------------------------------------ estimates
@dataclass(frozen=True)
class Estimate:
    """A round's estimate per cell: the mechanism's unbiased ``raw`` estimate, the same clipped to
    the possible range [0, n] (``shown``; ``clipped`` marks the cells where that changed it), and
    the exact 95 % interval [``lower``, ``upper``] (whole students). ``empty_band`` is the range an
    empty commute's raw estimate falls in 95 % of the time at this n (what noise alone does), and
    ``resolution`` what this n can tell (:class:`Resolution`)."""

    n: int
    raw: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    empty_band: tuple[float, float]
    resolution: Resolution

    @property
    def shown(self) -> np.ndarray:
        return np.clip(self.raw, 0, self.n)

    @property
    def clipped(self) -> np.ndarray:
        return (self.raw < 0) | (self.raw > self.n)

    @property
    def above_zero(self) -> int:
        """The commutes whose interval starts above 0."""
        return int((self.lower >= 1).sum())

    def reading(self) -> str:
        """What the intervals drawn say, and how many of them chance alone would give: a commute
        nobody takes still gets an interval above 0 with probability ``empty_chance`` (≤ α/2),
        and between d − n and d − 1 commutes are taken by nobody. When chance alone would give
        half or more of the intervals above 0 (at the upper end of that range), the sentence
        does not call them "probably taken": it says how many may be chance — up to the
        number of false alarms chance alone reaches in 19 classes of 20 (:func:`chance_count`)."""
        res, count = self.resolution, self.above_zero
        fewest, most = max(res.d - self.n, 0), res.d - 1
        low, high = (f"{res.empty_chance * e:.1f}" for e in (fewest, most))
        if count == 0:
            found = "Here no commute has an interval starting above 0."
        elif 2 * float(high) >= count:   # the number the sentence states, as read
            alarms = chance_count(res.empty_chance, most)
            may = ("it" if count == 1 else "both" if count == 2 <= alarms else
                   f"all {count}" if alarms >= count else f"up to {alarms} of them")
            found = (f"Here {count} commute{'s have' if count != 1 else ' has'} an interval "
                     f"starting above 0, but chance alone gives half as many or more (below): "
                     f"{may} may be chance, not someone's commute — on the commutes nobody takes "
                     f"it gives up to {alarms} in 19 classes of 20.")
        else:
            found = (f"Here {count} commute{'s have' if count != 1 else ' has'} an interval "
                     f"starting above 0: {'each is' if count != 1 else 'it is'} probably taken "
                     "by someone, not certainly.")
        given = f"about {low}" if low == high else f"between {low} and {high}"
        empty = (f"{most}" if fewest == most else f"{fewest} to {most}")
        return (f"{found} A commute nobody takes gets such an interval with probability "
                f"{percent(res.empty_chance)}, so among the {empty} commutes nobody takes here "
                f"chance alone gives {given} of them on average.")


def chance_count(chance: float, empty: int) -> int:
    """How many of ``empty`` commutes nobody takes get an interval above 0 by chance, in 19
    classes of 20 (the 95 % quantile of Binomial(empty, chance): GRR's cells compete for each
    report, so their false alarms are negatively correlated and this bound is conservative)."""
    return int(stats.binom.ppf(CONFIDENCE, empty, chance))


def empty_band(round_: Round, d: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """The estimates an empty commute reads with probability ≥ 1 − α (its count's α/2 and
    1 − α/2 quantiles, mapped through the estimator), with the others on other cells."""
    law = count_law(round_, d)
    below, above = _row(law, n, _classmates_in_block(round_, d, n, 0), 0)
    low = int(np.flatnonzero(below >= alpha / 2)[0])
    high = int(np.flatnonzero(above >= alpha / 2)[-1])
    return (law.estimate(low + law.offset * n, n), law.estimate(high + law.offset * n, n))


def _estimated_sharing(round_: Round, d: int, n: int, raw: np.ndarray) -> np.ndarray:
    """Per cell, the classmates estimated in its block (Hadamard response's blocked form): the
    block's other estimates, clipped at 0, summed, at most n (a plug-in, see the module docstring)."""
    lay = round_.build().layout(d)
    symbol = (np.arange(d) if round_.permutation is None else round_.permutation_array)
    block = symbol // lay.items_per_block
    positive = np.clip(raw, 0, None)
    in_block = np.bincount(block, weights=positive, minlength=lay.blocks)[block]
    return np.minimum(np.round(in_block - positive), n).astype(int)


def estimate_round(round_: Round, d: int, reports: list[dict]) -> Estimate | None:
    """The mechanism's own server (``accumulate`` → ``estimate``) on a round's reports, with each
    cell's exact interval; None when no report has arrived."""
    n = len(reports)
    if n == 0:
        return None
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if isinstance(mech, HadamardResponse) else {}
    raw = np.asarray(mech.estimate(mech.accumulate(stack_reports(round_, reports), d), n, d,
                                   **extra), dtype=float)
    law = count_law(round_, d)
    if isinstance(mech, HadamardResponse) and mech.layout(d).blocks > 1:   # plugged in per cell
        classmates = [int(m) for m in _estimated_sharing(round_, d, n, raw)]
    else:
        classmates = [_classmates_in_block(round_, d, n, 0)] * d
    bounds = np.array([interval(law, n, law.count(raw[x], n), classmates[x]) for x in range(d)])
    return Estimate(n, raw, bounds[:, 0], bounds[:, 1], empty_band(round_, d, n),
                    resolution(round_.mechanism, round_.epsilon, d, n))


# --------------------------------------------------------------------- what this class can tell
def _round(mechanism: str, epsilon: float) -> Round:
    """A stand-in round (Hadamard response's blocked form: the identity permutation — the law
    below depends on the block sizes, not on which cells share them)."""
    return Round("", 0, mechanism, float(epsilon), None, 0.0, None)


def _law_for(mechanism: str, epsilon: float, d: int, n: int, c: int):
    round_ = _round(mechanism, epsilon)
    return count_law(round_, d), _classmates_in_block(round_, d, n, c)


def distinguishable(mechanism: str, epsilon: float, d: int, n: int, c: int,
                    power: float = POWER) -> bool:
    """Whether a commute taken by c of n students (the others on other commutes) has an interval
    excluding 0 with probability ≥ ``power``: at the (1 − power) quantile of its count, since a
    larger count only raises the interval."""
    if not 0 < c <= n:
        return False
    law, m = _law_for(mechanism, epsilon, d, n, c)
    quantile = int(np.flatnonzero(_row(law, n, m, c)[0] > 1 - power)[0])
    return interval(law, n, quantile + law.offset * n, m)[0] >= 1


@functools.lru_cache(maxsize=4096)
def stand_out(mechanism: str, epsilon: float, d: int, n: int) -> int | None:
    """The fewest students c ≤ n on one commute that are distinguishable from none (None if even
    the whole class is not). Distinguishability grows with c, so a bisection finds it."""
    if not distinguishable(mechanism, epsilon, d, n, n):
        return None
    low, high = 1, n
    while low < high:
        middle = (low + high) // 2
        if distinguishable(mechanism, epsilon, d, n, middle):
            high = middle
        else:
            low = middle + 1
    return low


def _one_from_none(mechanism: str, epsilon: float, d: int, n: int) -> bool:
    """``stand_out(...) == 1``, answered first by the one check it needs to be false: the
    bisection reaches 1 only through ``distinguishable`` at c = 1, so where that fails (most ε
    of a search) the bisection's other steps — each a new law for blocked Hadamard response —
    are not run."""
    return (distinguishable(mechanism, epsilon, d, n, 1)
            and stand_out(mechanism, epsilon, d, n) == 1)


def most_common(students: int) -> int:
    """The students assumed on a class's most common commute, for the defaults: a fifth of the
    class, at least 2 (a class whose commutes all differ has no commute to find)."""
    return max(2, math.ceil(students / 5))


@dataclass(frozen=True)
class Resolution:
    """What n reports at (mechanism, ε) over d cells can tell: ``stand_out`` students on a commute
    are distinguishable from none (None: not even the whole class), and, when one student is not,
    what would help (each None when nothing in range does). ``one_chance`` is the probability
    that one student's commute gets an interval starting above 0, ``empty_chance`` that an empty
    one does (:func:`chance_above_zero`). Then: the smallest ε of :data:`EPSILONS`
    separating one student from none (``epsilon_needed``); and, when the class's most common
    commute (:func:`most_common`) does not stand out, the largest number of possible answers
    (``cells_needed``) at which it would, and the smallest larger class (``students_needed``)
    whose most common commute would."""

    mechanism: str
    epsilon: float
    d: int
    n: int
    stand_out: int | None
    one_chance: float
    empty_chance: float
    epsilon_needed: float | None = None
    cells_needed: int | None = None
    students_needed: int | None = None

    @property
    def one_from_none(self) -> bool:
        return self.stand_out == 1

    def sentence(self) -> str:
        """One sentence: can one student be told from none, and if not, what would."""
        setting = (f"{self.n:,} report{'s' if self.n != 1 else ''} at ε = {self.epsilon:g} "
                   f"({self.mechanism.upper()})")
        chance = percent(self.one_chance)
        if self.one_from_none:
            return (f"With {setting}, even one student on a commute is told from none in at "
                    f"least 9 classes of 10: its interval starts above 0 in {chance} of them.")
        told = (f"one student on a commute is not reliably told from none: its interval starts "
                f"above 0 in {chance} of classes, fewer than 9 in 10")
        if self.stand_out is None:
            need = f"{told}, and not even the whole class on one commute reaches 9 in 10"
        else:
            need = (f"{told}; a commute needs about {self.stand_out} students for its interval "
                    "to exclude 0 that often")
        fixes = []
        if self.epsilon_needed is not None:
            fixes.append(f"ε = {self.epsilon_needed:g} would separate one student from none")
        if self.cells_needed is not None:
            fixes.append(f"at most {self.cells_needed} possible answers (now {self.d}; fewer "
                         f"zones) would let a commute of {most_common(self.n)} students stand out")
        if self.students_needed is not None:
            fixes.append(f"with {self.students_needed} students a commute taken by "
                         f"{most_common(self.students_needed)} of them would stand out")
        elif self.stand_out is not None and self.stand_out > most_common(self.n):
            fixes.append("more students would not help separate one from none (the noise grows "
                         "with the class)")
        return f"With {setting}, {need}." + (f" What would help: {'; '.join(fixes)}."
                                             if fixes else "")


@functools.lru_cache(maxsize=1024)
def resolution(mechanism: str, epsilon: float, d: int, n: int) -> Resolution:
    """:class:`Resolution` for n reports (the searches are over :data:`EPSILONS`, d' ≥ 2 and up
    to :data:`MAX_REPORTS` students, all with the same mechanism)."""
    count = stand_out(mechanism, epsilon, d, n)
    chances = tuple(chance_above_zero(*_law_for(mechanism, epsilon, d, n, c), n=n, k=c)
                    for c in (1, 0))
    if count == 1:
        return Resolution(mechanism, epsilon, d, n, 1, *chances)
    eps = next((e for e in EPSILONS if e > epsilon and _one_from_none(mechanism, e, d, n)), None)
    students = cells = None
    if count is None or count > most_common(n):
        cells = next((k for k in range(d - 1, 1, -1)
                      if distinguishable(mechanism, epsilon, k, n, most_common(n))), None)
        students = next((s for s in _class_sizes(n)
                         if distinguishable(mechanism, epsilon, d, s, most_common(s))), None)
    return Resolution(mechanism, epsilon, d, n, count, *chances, eps, cells, students)


def _class_sizes(n: int):
    """Larger classes to try: n + 5, then growing by a quarter, up to :data:`MAX_REPORTS`."""
    size = n + 5
    while size <= MAX_REPORTS:
        yield size
        size = max(size + 5, int(size * 1.25))


# ------------------------------------------------------------------------------------ defaults
@dataclass(frozen=True)
class Proposal:
    """Settings for a class of about ``students`` over ``d`` cells: with ``mechanism`` at
    ``epsilon``, a commute taken by ``stands_out`` or more students is distinguishable from an
    empty one at typical answers."""

    students: int
    d: int
    mechanism: str
    epsilon: float
    stands_out: int | None

    def expectation(self) -> str:
        name = mechanisms.get(self.mechanism).name
        if self.stands_out is None:
            return (f"With {self.students} students at ε = {self.epsilon:g} ({name}), not even "
                    "the whole class on one commute stands out from the noise.")
        return (f"With {self.students} students at ε = {self.epsilon:g} ({name}), a commute "
                f"taken by {self.stands_out} or more students stands out from an empty one (its "
                "95 % interval excludes 0 in at least 9 classes of 10).")


def propose(students: int, d: int) -> Proposal:
    """The rule: the most private (smallest) ε of :data:`EPSILONS` at which, for some mechanism,
    the class's most common commute (:func:`most_common` students) is distinguishable from an
    empty one at typical answers; there, the mechanism with the fewest students needed (ties: the
    order of :data:`MECHANISMS`). The largest ε and its best mechanism if no ε does."""
    students = max(2, int(students))
    target = most_common(students)
    best = None
    for epsilon in EPSILONS:
        counts = [(stand_out(m, epsilon, d, students), i, m) for i, m in enumerate(MECHANISMS)]
        scored = sorted(c for c in counts if c[0] is not None)
        if scored:
            count, _, mechanism = scored[0]
            best = Proposal(students, d, mechanism, epsilon, count)
            if count <= target:
                return best
    return best or Proposal(students, d, "grr", EPSILONS[-1], None)
