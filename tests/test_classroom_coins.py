"""Coins mode (dpcore/interfaces/classroom/coins.py): Warner's two-coin randomised response, its
estimate q = 2p − 1/2 and exact interval, and coins rounds in the store."""

import math
import secrets

import numpy as np
import pytest
from scipy import stats

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import ClassroomError, Question, ReportRejected, RoomStore, coins

QUESTION = Question("Where?", ("Harbour", "Old Town"), ("Station",))


def flip_two_coins(truth: np.ndarray, rng) -> np.ndarray:
    """What students tap: first coin heads → the truth; tails → the second coin (heads: yes)."""
    first, second = rng.integers(0, 2, size=(2, len(truth)))
    return np.where(first == 1, truth, second)


def test_two_real_coins_are_ln3_private_and_the_estimate_is_unbiased():
    assert coins.EPSILON == pytest.approx(math.log(3))
    assert coins.yes_probability(1) / coins.yes_probability(0) == pytest.approx(3)
    assert (1 - coins.yes_probability(0)) / (1 - coins.yes_probability(1)) == pytest.approx(3)
    rng = np.random.default_rng(7)
    n, q = 200_000, 0.3
    taps = flip_two_coins(rng.random(n) < q, rng)
    sd = math.sqrt(coins.yes_probability(q) * (1 - coins.yes_probability(q)) / n)
    assert abs(taps.mean() - coins.yes_probability(q)) < 4 * sd
    assert abs(coins.estimate(int(taps.sum()), n).share - q) < 8 * sd     # 2p̂ − 1/2: sd doubles
    # unbiased exactly: E[2·Y/n − 1/2] over the binomial law of Y
    n = 25
    law = stats.binom.pmf(np.arange(n + 1), n, coins.yes_probability(q))
    shares = [coins.estimate(y, n).share for y in range(n + 1)]
    assert float(np.dot(law, shares)) == pytest.approx(q)


@pytest.mark.parametrize("n", [5, 20, 60])
def test_the_exact_interval_covers_every_share_at_least_95_percent(n):
    """Coverage summed over the exact binomial law of the taps, at shares across [0, 1]."""
    intervals = [coins.estimate(y, n) for y in range(n + 1)]
    for q in np.linspace(0, 1, 41):
        law = stats.binom.pmf(np.arange(n + 1), n, coins.yes_probability(q))
        covered = sum(p for p, e in zip(law, intervals) if e.low - 1e-12 <= q <= e.high + 1e-12)
        assert covered >= 0.95 - 1e-9, (n, q, covered)
    assert all(0 <= e.low <= e.shown <= e.high <= 1 for e in intervals)
    assert intervals[n // 2].high - intervals[n // 2].low < intervals[0].high + 1  # finite width


def test_the_estimate_refuses_impossible_counts():
    with pytest.raises(ValueError, match="0 ≤ yes ≤ n"):
        coins.estimate(3, 2)


def test_a_coins_round_takes_only_yes_or_no(tmp_path):
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "grr", 1.0)
    store.new_round(code, key, coins.COINS, 5.0, prompt="Did you cycle this week?")
    round_ = store.current_round(code)
    assert (round_.mechanism, round_.prompt) == ("coins", "Did you cycle this week?")
    assert round_.epsilon == pytest.approx(math.log(3))             # whatever ε was asked
    spec = classroom.client_spec(round_, QUESTION.d)
    assert spec["prompt"] == "Did you cycle this week?" and spec["mechanism"] == "coins"
    for answer in (1, 0, 1):
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": answer})
    assert [r["y"] for r in store.snapshot(code).reports] == [1, 0, 1]
    for bad, reason in (({"y": 2}, "out of range"), ({"y": True}, "malformed"),
                        ({"bits": "01"}, "wrong fields")):
        with pytest.raises(ReportRejected) as refused:
            store.submit(store.ticket(code, secrets.token_hex(16)), bad)
        assert refused.value.reason == reason
    with pytest.raises(ClassroomError, match="needs a question to ask"):
        store.new_round(code, key, coins.COINS, 1.0, prompt="  ")
    with pytest.raises(ClassroomError, match="at most 200"):
        store.new_round(code, key, coins.COINS, 1.0, prompt="x" * 201)
