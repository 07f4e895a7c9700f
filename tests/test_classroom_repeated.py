"""Repeated rounds: a student's total ε, memoized rounds in the store, and the averaging attack
(dpcore/interfaces/classroom/repeated.py)."""

import math
import sqlite3

import numpy as np
import pytest

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import ClassroomError, Question, Round, RoomStore, repeated

QUESTION = Question("Where do you live and work?", ("Harbour", "Old Town"), ("Station",))


def _round(mechanism="grr", epsilon=1.0, memoize=False, number=1):
    return Round("ROOM", number, mechanism, epsilon, None, 0.0, None, memoize)


def test_fresh_rounds_add_and_memoized_rounds_count_once_per_mechanism_and_epsilon():
    assert repeated.total_epsilon([_round(epsilon=1.0) for _ in range(3)]) == pytest.approx(3.0)
    assert repeated.total_epsilon([_round(memoize=True) for _ in range(5)]) == pytest.approx(1.0)
    mixed = [_round("grr", 1.0, True), _round("grr", 1.0, True), _round("oue", 1.0, True),
             _round("grr", 0.5), _round("grr", 2.0, True)]
    assert repeated.total_epsilon(mixed) == pytest.approx(1.0 + 1.0 + 0.5 + 2.0)
    assert repeated.total_epsilon([]) == 0


def test_averaging_reveals_answers_without_memoization_and_stops_with_it():
    """GRR, ε = 1, d = 8: one report names the true cell with probability p = e/(e + 7); the
    memoized class stays there however many rounds (within 4 sd of the binomial), while linking
    20 fresh rounds names far more."""
    d, students, rounds = 8, 400, 20
    attack = repeated.averaging_attack(_round(), d, students, rounds, seed=3)
    p = math.e / (math.e + d - 1)
    sd = math.sqrt(p * (1 - p) / students)
    assert attack.chance == pytest.approx(1 / d)
    assert attack.fresh[0] == attack.memoized[0]                # the same first report
    assert np.all(attack.memoized == attack.memoized[0])        # identical reports, same guess
    assert abs(attack.memoized[0] - p) < 4 * sd
    assert attack.fresh[-1] > attack.memoized[-1] + 10 * sd     # 0.71 vs 0.28 at this seed
    assert np.all(np.diff(attack.fresh[::5]) > 0)               # it keeps climbing


@pytest.mark.parametrize("mechanism, epsilon", [("oue", 1.0), ("hr", 3.0), ("olh", 1.0)])
def test_the_attack_runs_each_mechanisms_own_estimator(mechanism, epsilon):
    attack = repeated.averaging_attack(_round(mechanism, epsilon), 8, 150, 12, seed=1)
    assert np.all(attack.memoized == attack.memoized[0])
    assert attack.fresh[-1] > attack.memoized[-1]
    with pytest.raises(ValueError, match="at least one"):
        repeated.averaging_attack(_round(), 8, 0, 3)


def test_memoized_rounds_are_stored_and_told_to_the_phone(tmp_path):
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "grr", 1.0, memoize=True)
    assert store.current_round(code).memoize
    store.new_round(code, key, "oue", 2.0)
    store.new_round(code, key, "grr", 1.0, memoize=True)
    rounds = store.rounds(code)
    assert [r.memoize for r in rounds] == [True, False, True]
    assert classroom.client_spec(rounds[2], QUESTION.d)["memoize"] is True
    assert classroom.client_spec(rounds[1], QUESTION.d)["memoize"] is False
    assert repeated.total_epsilon(rounds) == pytest.approx(1.0 + 2.0)
    with pytest.raises(ClassroomError, match="OLH cannot be memoized"):
        store.new_round(code, key, "olh", 1.0, memoize=True)


def test_rooms_of_the_layout_before_these_round_kinds_are_dropped(tmp_path):
    """The newest column of rounds (a number round's bound) missing: an older layout."""
    store = RoomStore(tmp_path)
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    with sqlite3.connect(store.path) as db:
        for column in ("bound", "prompt", "memoize"):
            db.execute(f"ALTER TABLE rounds DROP COLUMN {column}")
    fresh = RoomStore(tmp_path)
    with pytest.raises(ClassroomError, match="no room"):
        fresh.room(code)
    assert fresh.create_room(QUESTION, "grr", 1.0)[0]


def test_memoized_hadamard_rounds_keep_the_permutation_a_kept_report_was_drawn_under(tmp_path):
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "hr", 3.0, memoize=True)
    store.new_round(code, key, "hr", 3.0)                       # fresh: its own permutation
    store.new_round(code, key, "hr", 3.0, memoize=True)
    first, fresh, again = store.rounds(code)
    assert first.permutation is not None and again.permutation == first.permutation
    assert fresh.permutation is not None


def test_the_spend_sentence_agrees_in_number():
    """"1 fresh round add their ε" read badly on the teacher's screen."""
    from ui.classroom.repeated import spend_sentence
    one = spend_sentence([_round(epsilon=2.0)])
    assert "answered the round has spent ε = 2 in this room: 1 fresh round adds its ε." in one
    mixed = spend_sentence([_round(number=1), _round(number=2), _round(memoize=True, number=3)])
    assert "2 fresh rounds add their ε; 1 memoized round counts once" in mixed
