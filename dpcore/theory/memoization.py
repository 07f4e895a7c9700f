"""Repeated collection: fresh randomised response every month vs a memoized (permanent) answer.

One yes/no question ("do you work in X?") is asked every month with binary randomised response
at ε per answer (keep the truth with probability p = e^ε/(1 + e^ε)). With fresh randomness each
month, T answers of one person compose to T·ε, and an attacker who sees them all can average
them out. With memoization (RAPPOR's permanent randomised response, Erlingsson et al. CCS 2014;
the memoization of Ding, Kulkarni, Yekhanin, NeurIPS 2017 that the thesis draft 000 l.243 uses
for repeated collection and l.290 proposes for other algorithms), a person draws their noisy
answer once and resends it while their true answer stays the same: the loss stays ε, however
many months.

The attacker here is Bayes-optimal: with prior share π of "yes" and k "yes" reports out of T
independent ones, the log posterior odds are ``ln(π/(1−π)) + (2k − T)ε``; it guesses "yes" when
they are positive (ties broken towards "yes").
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.theory.privacy_theory import checked_array, whole_number


def keep_probability(epsilon: float) -> float:
    """p = e^ε/(1 + e^ε): binary randomised response reports the truth with this probability."""
    eps = float(checked_array("epsilon", epsilon, low=0.0, low_open=True))
    return 1.0 / (1.0 + math.exp(-eps))


def _guesses_yes(yes_reports, months, prior: float, epsilon: float):
    return (math.log(prior / (1 - prior)) + (2 * np.asarray(yes_reports) - months) * epsilon
            >= 0)


def attack_accuracy(prior: float, epsilon: float, months: int, memoized: bool) -> float:
    """Exact chance the Bayes attacker names a person's true answer after ``months`` reports."""
    prior = float(checked_array("prior", prior, low=0.0, high=1.0, low_open=True,
                                high_open=True))
    months = whole_number("months", months)
    fresh = 1 if memoized else months
    p = keep_probability(epsilon)
    k = np.arange(fresh + 1)
    guess = _guesses_yes(k, fresh, prior, epsilon)
    right_if_yes = stats.binom.pmf(k, fresh, p)[guess].sum()
    right_if_no = stats.binom.pmf(k, fresh, 1 - p)[~guess].sum()
    return float(prior * right_if_yes + (1 - prior) * right_if_no)


def simulate_attack(truth: np.ndarray, epsilon: float, months: int,
                    rng: np.random.Generator) -> pd.DataFrame:
    """Each person answers ``months`` times, fresh and memoized; after every month, the share
    of people whose true answer the attacker names, the exact chance, and the guarantee spent
    (T·ε fresh, ε memoized). The attacker's prior is the population's true share."""
    truth = np.asarray(truth, dtype=bool)
    months = whole_number("months", months)
    prior = float(truth.mean())
    if not 0 < prior < 1:
        raise ValueError("The question must have both answers in the crowd.")
    p = keep_probability(epsilon)
    kept = rng.random((truth.size, months)) < p
    fresh_yes = np.cumsum(np.where(kept, truth[:, None], ~truth[:, None]), axis=1)
    first = np.where(kept[:, 0], truth, ~truth)   # the memoized answer: the first month's
    rows = []
    for t in range(1, months + 1):
        fresh_right = _guesses_yes(fresh_yes[:, t - 1], t, prior, epsilon) == truth
        # The attacker knows the answers are memoized: t copies weigh as one.
        memo_right = _guesses_yes(first.astype(int), 1, prior, epsilon) == truth
        rows.append({"months": t, "fresh_simulated": fresh_right.mean(),
                     "fresh_exact": attack_accuracy(prior, epsilon, t, False),
                     "memoized_simulated": memo_right.mean(),
                     "memoized_exact": attack_accuracy(prior, epsilon, t, True),
                     "epsilon_fresh": t * epsilon, "epsilon_memoized": epsilon})
    return pd.DataFrame(rows)
