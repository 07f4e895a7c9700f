"""A number question (dpcore/interfaces/classroom/numbers.py): Duchi, Jordan & Wainwright's
one-bit mechanism on [0, B] — its privacy, its unbiased mean, its interval — and number rounds in
the store."""

import math
import secrets

import numpy as np
import pytest

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import ClassroomError, Question, RoomStore, numbers

QUESTION = Question("Where?", ("Harbour", "Old Town"), ("Station",))
B = 120.0


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_one_bit_is_epsilon_private_and_the_mean_unbiased(epsilon):
    values = np.linspace(-10, B + 10, 27)                  # outside [0, B] clamps
    ones = np.array([numbers.one_probability(v, B, epsilon) for v in values])
    assert ones.max() / ones.min() == pytest.approx(math.exp(epsilon))     # the extremes: e^ε
    assert (1 - ones).max() / (1 - ones).min() == pytest.approx(math.exp(epsilon))
    # E[share] = mean of P(1 | v); the estimator maps it back to the clamped class mean exactly
    rng = np.random.default_rng(2)
    answers = rng.uniform(0, B, size=40)
    expected_share = np.mean([numbers.one_probability(v, B, epsilon) for v in answers])
    assert numbers.mean_from_share(expected_share, B, epsilon) == pytest.approx(answers.mean())


def test_the_variance_is_at_most_b_squared_c_squared_over_4n():
    """DJW's bound: Var v̂ ≤ B²C²/(4n), C = (e^ε + 1)/(e^ε − 1), checked by simulation."""
    rng = np.random.default_rng(4)
    epsilon, n, trials = 1.0, 50, 20_000
    answers = rng.uniform(0, B, size=n)
    p = np.array([numbers.one_probability(v, B, epsilon) for v in answers])
    counts = (rng.random((trials, n)) < p).sum(axis=1)
    means = numbers.mean_from_share(counts / n, B, epsilon)
    c = (math.exp(epsilon) + 1) / math.expm1(epsilon)
    assert abs(means.mean() - answers.mean()) < 4 * means.std() / math.sqrt(trials)
    assert means.var() <= B ** 2 * c ** 2 / (4 * n)


@pytest.mark.parametrize("n, epsilon", [(10, 1.0), (30, 2.0), (100, 0.5)])
def test_the_exact_interval_covers_a_mixed_class_at_least_95_percent(n, epsilon):
    """A class of different answers (a Poisson binomial count): coverage by simulation, within
    3 sd of 95 % or above."""
    rng = np.random.default_rng(n)
    answers = np.concatenate([np.full(n // 2, 5.0), rng.uniform(30, B, size=n - n // 2)])
    p = np.array([numbers.one_probability(v, B, epsilon) for v in answers])
    trials = 2_000
    counts = (rng.random((trials, n)) < p).sum(axis=1)
    covered = 0
    for count in counts:
        result = numbers.estimate(int(count), n, B, epsilon)
        covered += result.low <= answers.mean() <= result.high
        assert 0 <= result.low <= result.shown <= result.high <= B
    assert covered / trials >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)


def test_a_number_round_is_stored_with_its_bound_and_told_to_the_phone(tmp_path):
    store = RoomStore(tmp_path)
    code, key = store.create_room(QUESTION, "grr", 1.0)
    store.new_round(code, key, numbers.NUMBER, 2.0, prompt="Minutes?", bound=90)
    round_ = store.current_round(code)
    assert (round_.mechanism, round_.epsilon, round_.prompt, round_.bound) == \
        ("number", 2.0, "Minutes?", 90.0)
    spec = classroom.client_spec(round_, QUESTION.d)
    assert spec["bound"] == 90.0 and spec["slope"] == pytest.approx(numbers.slope(2.0))
    for bit in (1, 0, 1, 1):
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": bit})
    assert [r["y"] for r in store.snapshot(code).reports] == [1, 0, 1, 1]
    with pytest.raises(classroom.ReportRejected, match="bit"):
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": 7})
    for bad in (0, 5000, "lots"):
        with pytest.raises(ClassroomError, match="largest answer"):
            store.new_round(code, key, numbers.NUMBER, 1.0, prompt="Minutes?", bound=bad)
    assert store.current_round(code).bound == 90.0
