"""Before and after (dpcore/interfaces/classroom/guesses.py): the class's guess is taken only
before the round's first report, the truth at any time, and the comparison says which is nearer."""

import secrets

import pytest

from dpcore.interfaces.classroom import ClassroomError, Question, RoomStore, coins, guesses, numbers

QUESTION = Question("Where?", ("Harbour", "Old Town"), ("Station",))


def test_the_guess_comes_before_the_first_report_and_the_truth_any_time(tmp_path):
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "grr", 1.0)
    with pytest.raises(ClassroomError, match="coins or number round"):
        store.record_guess(code, key, "guess", 0.5)
    store.new_round(code, key, numbers.NUMBER, 1.0, prompt="Minutes?", bound=60)
    number = store.current_round(code).number
    assert store.guess(code, number) == (None, None)
    store.record_guess(code, key, "guess", 25)
    store.record_guess(code, key, "guess", 20)                  # changed before any report
    store.submit(store.ticket(code, secrets.token_hex(16)), {"y": 1})
    with pytest.raises(ClassroomError, match="guess comes first"):
        store.record_guess(code, key, "guess", 40)
    store.record_guess(code, key, "truth", 31.5)
    assert store.guess(code, number) == (20.0, 31.5)
    for field, value, message in (("truth", 61, "between 0 and 60"), ("truth", "x", "a number"),
                                  ("truth", float("nan"), "between"), ("mood", 1, "Unknown")):
        with pytest.raises(ClassroomError, match=message):
            store.record_guess(code, key, field, value)
    with pytest.raises(ClassroomError, match="teacher key"):
        store.record_guess(code, "wrong", "truth", 1)
    store.new_round(code, key, coins.COINS, 1.0, prompt="Cycled?")
    with pytest.raises(ClassroomError, match="between 0 and 1"):
        store.record_guess(code, key, "guess", 40)              # a share, not a percentage
    store.record_guess(code, key, "guess", 0.4)
    assert store.guess(code, number + 1) == (0.4, None)
    assert store.guess(code, number) == (20.0, 31.5)            # each round its own


def test_the_comparison_says_which_is_nearer_and_whether_the_interval_holds_the_truth():
    compared = guesses.Comparison(guess=20, estimate=29, low=22, high=36, truth=31.5)
    assert compared.closer() == "estimate" and compared.covered is True
    assert guesses.Comparison(30, 20, 10, 25, 31).closer() == "guess"
    assert guesses.Comparison(30, 20, 10, 25, 31).covered is False
    assert guesses.Comparison(20, 30, 10, 40, 25).closer() == "tie"
    assert guesses.Comparison(None, 30, 10, 40, None).closer() is None
    assert guesses.Comparison(None, 30, 10, 40, None).covered is None
