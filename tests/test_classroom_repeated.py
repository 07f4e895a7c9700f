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


def test_coins_and_number_rounds_open_a_room_and_memoize_by_their_question(tmp_path):
    """A room can start with a coins or a number round; memoized rounds share a report only when
    they ask the same prompt (and bound) the same way: the phone's storage key says so."""
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "coins", 1.0, prompt="Cycled?", memoize=True)
    first = store.current_round(code)
    assert (first.mechanism, first.prompt, first.memoize) == ("coins", "Cycled?", True)
    assert first.epsilon == pytest.approx(math.log(3))
    store.new_round(code, key, "coins", 1.0, prompt="Cycled?", memoize=True)
    store.new_round(code, key, "coins", 1.0, prompt="Walked?", memoize=True)
    same, other = store.rounds(code)[1:]
    spec = lambda r: classroom.client_spec(r, QUESTION.d)    # noqa: E731
    assert spec(first)["memo"] == spec(same)["memo"] != spec(other)["memo"]
    assert repeated.total_epsilon(store.rounds(code)) == pytest.approx(2 * math.log(3))
    number, key = store.create_room(QUESTION, "number", 2.0, prompt="Minutes?", bound=60,
                                    memoize=True)
    store.new_round(number, key, "number", 2.0, prompt="Minutes?", bound=90, memoize=True)
    kept, wider = store.rounds(number)
    assert (kept.mechanism, kept.bound, kept.epsilon) == ("number", 60.0, 2.0)
    assert spec(kept)["memo"] != spec(wider)["memo"]            # another range: another kind
    assert repeated.total_epsilon([kept, wider]) == pytest.approx(4.0)
    with pytest.raises(ClassroomError, match="needs a question"):
        store.create_room(QUESTION, "number", 1.0, bound=60)


def _linked_class(mechanism, epsilon, rounds, memoize, students, seed):
    """``students`` phones answering ``rounds`` rounds of one kind with their true cells (seeded),
    drawn by the mechanism's own ``perturb`` (memoized: once), as the store stores them and
    ``RoomStore.linked_reports`` hands them over; Hadamard response's fresh rounds each with their
    own public permutation, memoized ones sharing the first."""
    from dpcore.interfaces.classroom.reports import parse_report
    rng = np.random.default_rng(seed)
    mech = Round("ROOM", 1, mechanism, epsilon, None, 0.0, None).build()
    draw = getattr(mech, "draw_permutation", lambda d, rng: None)
    permutation = None
    truth = {f"CODE{k:03d}": int(c) for k, c in enumerate(rng.integers(0, QUESTION.d,
                                                                       size=students))}
    linked, kept, rounds_ = {c: {} for c in truth}, {}, []
    for number in range(1, rounds + 1):
        if permutation is None or not memoize:
            permutation = draw(QUESTION.d, rng)
        round_ = Round("ROOM", number, mechanism, epsilon,
                       None if permutation is None else tuple(permutation.tolist()), 0.0, None,
                       memoize)
        extra = {} if permutation is None else {"permutation": permutation}
        for code, cell in truth.items():
            if code not in kept or not memoize:
                drawn = mech.perturb(np.array([cell]), QUESTION.d, rng, **extra)
                kept[code] = {k: (v[0].tolist() if k != "bits" else
                                  "".join("1" if b else "0" for b in v[0]))
                              for k, v in drawn.items()}
            linked[code][number] = parse_report(round_, QUESTION.d, kept[code])
        rounds_.append(round_)
    return rounds_, linked, truth


@pytest.mark.parametrize("mechanism, epsilon", [("grr", 1.0), ("hr", 2.0)])
def test_the_live_attack_on_linked_reports_does_what_the_simulation_predicts(mechanism, epsilon):
    """Eight fresh rounds linked by join code name more students' true cells than one round does,
    as the seeded simulation predicts (within 4 sd of a binomial over the class of 200 plus the
    simulation's own 4 sd over 1,000); Hadamard response's fresh rounds each use their own
    permutation, which the attack follows (with one permutation for all, its guesses would fall
    towards chance)."""
    students, rounds = 200, 8
    rounds_, linked, truth = _linked_class(mechanism, epsilon, rounds, False, students, seed=3)
    result = repeated.linked_attack(rounds_, QUESTION.d, linked)
    assert len(result) == students and all(r.reports == rounds for r in result)
    first = np.mean([r.first == truth[r.code] for r in result])
    every = np.mean([r.guess == truth[r.code] for r in result])
    simulated = repeated.averaging_attack(rounds_[0], QUESTION.d, 1000, rounds, seed=1)
    for live, p in ((first, simulated.fresh[0]), (every, simulated.fresh[-1])):
        sd = math.sqrt(p * (1 - p) / students) + math.sqrt(p * (1 - p) / 1000)
        assert abs(live - p) < 4 * sd
    assert every > first + 0.15       # 0.55 → 0.82 (GRR), 0.62 → 0.89 (HR; one permutation: 0.32)
    assert sum(r.moved for r in result) > 0


def test_memoized_rounds_linked_by_join_code_stay_at_one_report():
    """Memoized: every code's linked reports are identical, so the guess from all of them is the
    guess from the first — averaging gains nothing."""
    rounds_, linked, _ = _linked_class("hr", 2.0, 5, True, 60, seed=4)
    result = repeated.linked_attack(rounds_, QUESTION.d, linked)
    assert len(result) == 60 and all(r.identical and r.reports == 5 and not r.moved
                                     for r in result)


def test_the_store_links_reports_by_join_code_for_the_teacher_only(tmp_path):
    """A room with join codes keeps the code that sent each report; the teacher gets them per
    code and round (a room without codes links nothing; a wrong key is refused)."""
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="codes", codes=3)
    joined = [c for c, _ in store.join_codes(code, key)]
    for number in (1, 2):
        if number == 2:
            store.new_round(code, key, "grr", 1.0)
        for k, c in enumerate(joined[:2]):
            store.submit(store.ticket(code, f"session-{c}-{number}-xxxxxxxx", None, c),
                         {"y": (k + number) % QUESTION.d})
    assert store.linked_reports(code, key, [1, 2]) == {
        joined[0]: {1: {"y": 1}, 2: {"y": 2}}, joined[1]: {1: {"y": 2}, 2: {"y": 0}}}
    with pytest.raises(ClassroomError, match="teacher key"):
        store.linked_reports(code, "wrong", [1])
    open_room, open_key = store.create_room(QUESTION, "grr", 1.0)
    store.submit(store.ticket(open_room, "s" * 16), {"y": 0})
    assert store.linked_reports(open_room, open_key, [1]) == {}


def test_the_live_attack_names_no_cell_for_a_number_round():
    with pytest.raises(ValueError, match="commute or coins"):
        repeated.linked_attack([Round("R", 1, "number", 1.0, None, 0.0, None, bound=60.0)], 3,
                               {"K": {1: {"y": 1}}})


def test_a_coins_round_is_attacked_as_randomised_response_over_yes_and_no():
    """Warner's two coins are GRR over {no, yes} at ε = ln 3: one tap names the truth 3/4 of the
    time, and the simulation on its GRR stand-in says so (within 4 sd over 4,000 students)."""
    round_, d = repeated.as_cells(Round("R", 1, "coins", math.log(3), None, 0.0, None,
                                        prompt="Cycled?"), 5)
    assert (round_.mechanism, d) == ("grr", 2)
    attack = repeated.averaging_attack(round_, d, 4000, 1, seed=2)
    assert abs(attack.fresh[0] - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 4000)


def test_the_spend_sentence_agrees_in_number():
    """"1 fresh round add their ε" read badly on the teacher's screen."""
    from ui.classroom.repeated import spend_sentence
    one = spend_sentence([_round(epsilon=2.0)])
    assert "answered the round has spent ε = 2 in this room: 1 fresh round adds its ε." in one
    mixed = spend_sentence([_round(number=1), _round(number=2), _round(memoize=True, number=3)])
    assert "2 fresh rounds add their ε; 1 memoized round counts once" in mixed
