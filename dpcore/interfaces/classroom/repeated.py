"""Repeated rounds: what a student spends over a room's rounds, and what averaging their reports
reveals with and without memoization.

A student who answers T rounds of an ε-LDP question with fresh randomness spends T·ε (basic
composition): an observer who links their reports — the same browser, a one-time join code —
can take the cell their reports support most often, which tends to the true answer as T grows.
With *memoization* (RAPPOR's permanent randomised response [EPK14]; the memoized dBitFlip of
[DKY17]) the phone draws its report once and sends that same report in every round of the same
*kind* (:attr:`Round.kind`: the same question asked with the same mechanism and ε — a coins or
number round's question is its prompt): T identical reports tell exactly what one does, so the
student spends ε for the whole group of rounds, however many there are. (Memoization holds only
while the answer does not change: a student whose answer changes and re-draws spends ε again;
the phone reuses its first report whatever the student picks.)

:func:`total_epsilon` is the spend the teacher's screen states; :func:`averaging_attack`
simulates the attack (seeded) on a class, each student's rounds linked; :func:`linked_attack`
runs the same guess on a room's stored reports linked by join code. A coins round is
randomised response over {no, yes} at ε = ln 3 (:func:`as_cells`), so both apply to it; a number
round's answer is a number, not a cell, and is left out of both.

References: [EPK14] Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014 (permanent randomised
response); [DKY17] Ding, Kulkarni, Yekhanin, "Collecting telemetry data privately", NeurIPS 2017
(memoization, the thesis draft in ../shared/seeds/000's dBitFlip).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpcore.interfaces.classroom.coins import COINS
from dpcore.interfaces.classroom.numbers import NUMBER
from dpcore.interfaces.classroom.reports import Round, stack_reports
from dpcore.mechanisms.hadamard import HadamardResponse


def memo_group(round_: Round) -> tuple | None:
    """The rounds that share a memoized report: the same kind (:attr:`Round.kind`); None for a
    round drawn fresh."""
    return round_.kind if round_.memoize else None


def total_epsilon(rounds: list[Round]) -> float:
    """The ε one student spends by answering every round in ``rounds``: fresh rounds add their ε,
    memoized rounds count once per kind — the report is drawn once."""
    fresh = sum(float(r.epsilon) for r in rounds if not r.memoize)
    return fresh + sum(group[1] for group in {memo_group(r) for r in rounds if r.memoize})


def as_cells(round_: Round, d: int) -> tuple[Round, int] | None:
    """The round as a choice among cells, for the attack: a commute round over its ``d`` cells;
    a coins round as what it is, randomised response (GRR) over {no, yes} at ε = ln 3 (a tap is
    true with probability 3/4 = e^ε/(e^ε + 1), and its report ``{"y": 0 or 1}`` is GRR's); None
    for a number round."""
    if round_.mechanism == NUMBER:
        return None
    if round_.mechanism == COINS:
        return replace(round_, mechanism="grr", epsilon=math.log(3), prompt=None), 2
    return round_, d


@dataclass(frozen=True)
class Attack:
    """Share of students whose true cell the attack names, after 1 … T linked rounds."""

    rounds: np.ndarray            # 1 … T
    fresh: np.ndarray             # fresh randomness in every round
    memoized: np.ndarray          # the first report reused
    chance: float                 # naming a cell at random: 1/d


def _guess(mech, batches: list[tuple[dict, dict]], d: int, priority: np.ndarray) -> int:
    """The cell one student's linked reports support most: the sum of the mechanism's own
    unbiased estimates from each batch of reports (``perturb``'s format, with the batch's
    ``estimate`` arguments: Hadamard response's permutation, which fresh rounds each draw anew),
    arg-maxed; ties go to the cell of highest ``priority`` (a random order drawn once per
    student, so the same reports always get the same guess)."""
    support = sum(mech.estimate(mech.accumulate(reports, d),
                                len(next(iter(reports.values()))), d, **extra)
                  for reports, extra in batches)
    best = np.flatnonzero(support >= support.max() - 1e-9)
    return int(best[np.argmax(priority[best])])


def averaging_attack(round_: Round, d: int, students: int, rounds: int,
                     seed: int = 0) -> Attack:
    """Simulate ``students`` students (true cells uniform over ``d``) answering ``rounds`` linked
    rounds of ``round_``'s mechanism and ε, and the attack that names each student's cell from
    their first t reports, for every t: with fresh reports its accuracy climbs towards 1; with
    memoized ones it stays at one report's accuracy."""
    if students < 1 or rounds < 1:
        raise ValueError("The simulation needs at least one student and one round.")
    rng = np.random.default_rng(seed)
    mech = round_.build()
    extra = {}
    if isinstance(mech, HadamardResponse):     # the round's public permutation, or a fresh one
        permutation = round_.permutation_array
        extra["permutation"] = mech.draw_permutation(d, rng) if permutation is None else permutation
    truth = rng.integers(0, d, size=students)
    draws = [mech.perturb(np.full(rounds, cell), d, rng, **extra) for cell in truth]
    fresh, memoized = np.zeros(rounds), np.zeros(rounds)
    for cell, reports in zip(truth, draws):
        first, priority = {k: v[:1] for k, v in reports.items()}, rng.permutation(d)
        for t in range(1, rounds + 1):
            fresh[t - 1] += _guess(mech, [({k: v[:t] for k, v in reports.items()}, extra)], d,
                                  priority) == cell
            repeated = {k: np.repeat(v, t, axis=0) for k, v in first.items()}
            memoized[t - 1] += _guess(mech, [(repeated, extra)], d, priority) == cell
    return Attack(np.arange(1, rounds + 1), fresh / students, memoized / students, 1 / d)


def same_kind(rounds: list[Round], current: Round) -> list[Round]:
    """The rounds an attacker links to ``current``'s: the same kind, all memoized or all fresh
    as ``current`` is."""
    return [r for r in rounds if r.kind == current.kind and r.memoize == current.memoize]


@dataclass(frozen=True)
class Linked:
    """What linking one join code's reports gives: how many, whether all identical, and the
    attack's guess (a cell) from its first report and from all of them. The guesses say something
    about the student's answer: the teacher's screen shows only whether they differ."""

    code: str
    reports: int
    identical: bool
    first: int
    guess: int

    @property
    def moved(self) -> bool:
        """Whether averaging the later reports changed the one-report guess."""
        return self.first != self.guess


def linked_attack(rounds: list[Round], d: int, linked: dict[str, dict[int, dict]],
                  seed: int = 0) -> list[Linked]:
    """The attack of :func:`averaging_attack` run on a room's stored reports: ``linked`` maps each
    join code to its reports ({round number: report}) in ``rounds`` (one kind,
    :func:`same_kind`); per code, the guess from its first report and from all of them (each
    round's own Hadamard permutation). ValueError for a number round (no cell to name)."""
    cells = [as_cells(r, d) for r in rounds]
    if not cells or any(c is None for c in cells):
        raise ValueError("The linking attack names a cell: it needs commute or coins rounds.")
    by_number = {r.number: c for r, c in zip(rounds, cells)}
    rng = np.random.default_rng(seed)
    result = []
    for code in sorted(linked):
        reports = [(by_number[n], linked[code][n]) for n in sorted(linked[code]) if n in by_number]
        if not reports:
            continue
        mech, size = reports[0][0][0].build(), reports[0][0][1]
        batches = [(stack_reports(round_, [report]), _extra(round_)) for (round_, _), report
                   in reports]
        priority = rng.permutation(size)
        first, every = _guess(mech, batches[:1], size, priority), _guess(mech, batches, size,
                                                                         priority)
        result.append(Linked(code, len(reports), all(r == reports[0][1] for _, r in reports),
                             first, every))
    return result


def _extra(round_: Round) -> dict:
    """``estimate``'s extra arguments for one stored round: Hadamard response's permutation."""
    return ({"permutation": round_.permutation_array}
            if isinstance(round_.build(), HadamardResponse) else {})
