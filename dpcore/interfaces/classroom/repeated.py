"""Repeated rounds: what a student spends over a room's rounds, and what averaging their reports
reveals with and without memoization.

A student who answers T rounds of an ε-LDP question with fresh randomness spends T·ε (basic
composition): an observer who links their reports — the same browser, a one-time join code —
can take the cell their reports support most often, which tends to the true answer as T grows.
With *memoization* (RAPPOR's permanent randomised response [EPK14]; the memoized dBitFlip of
[DKY17]) the phone draws its report once and sends that same report in every round asking the
same question with the same mechanism and ε: T identical reports tell exactly what one does, so
the student spends ε for the whole group of rounds, however many there are. (Memoization holds
only while the answer does not change: a student whose answer changes and re-draws spends ε
again; the phone reuses its first report whatever the student picks.)

:func:`total_epsilon` is the spend the teacher's screen states; :func:`averaging_attack`
simulates the attack (seeded) on a class, each student's rounds linked.

References: [EPK14] Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014 (permanent randomised
response); [DKY17] Ding, Kulkarni, Yekhanin, "Collecting telemetry data privately", NeurIPS 2017
(memoization, the thesis draft in ../shared/seeds/000's dBitFlip).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.interfaces.classroom.reports import Round
from dpcore.mechanisms.hadamard import HadamardResponse


def memo_group(round_: Round) -> tuple[str, float] | None:
    """The rounds that share a memoized report: same mechanism and ε (the room fixes the
    question); None for a round drawn fresh."""
    return (round_.mechanism, float(round_.epsilon)) if round_.memoize else None


def total_epsilon(rounds: list[Round]) -> float:
    """The ε one student spends by answering every round in ``rounds``: fresh rounds add their ε,
    memoized rounds count once per (mechanism, ε) group — the report is drawn once."""
    fresh = sum(float(r.epsilon) for r in rounds if not r.memoize)
    return fresh + sum(epsilon for _, epsilon in {memo_group(r) for r in rounds if r.memoize})


@dataclass(frozen=True)
class Attack:
    """Share of students whose true cell the attack names, after 1 … T linked rounds."""

    rounds: np.ndarray            # 1 … T
    fresh: np.ndarray             # fresh randomness in every round
    memoized: np.ndarray          # the first report reused
    chance: float                 # naming a cell at random: 1/d


def _guess(mech, reports: dict, d: int, extra: dict, priority: np.ndarray) -> int:
    """The cell one student's linked reports support most: the mechanism's own unbiased estimate
    from those reports, arg-maxed; ties go to the cell of highest ``priority`` (a random order
    drawn once per student, so the same reports always get the same guess)."""
    n = len(next(iter(reports.values())))
    support = mech.estimate(mech.accumulate(reports, d), n, d, **extra)
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
            fresh[t - 1] += _guess(mech, {k: v[:t] for k, v in reports.items()}, d, extra,
                                  priority) == cell
            repeated = {k: np.repeat(v, t, axis=0) for k, v in first.items()}
            memoized[t - 1] += _guess(mech, repeated, d, extra, priority) == cell
    return Attack(np.arange(1, rounds + 1), fresh / students, memoized / students, 1 / d)
