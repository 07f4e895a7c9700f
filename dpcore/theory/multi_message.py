"""One message or many per phone in the shuffle model: what sending more messages buys.

The shuffle-model cheat sheet in the seeds (001 l.69–85) defines a shuffler over *all* messages of
all users ("three users each sending two messages, 6! permutations") and points to Ghazi,
Golowich, Kumar, Pagh, Velingker, *On the power of multiple anonymous messages* (arXiv
1908.11358; EUROCRYPT 2021 as "…: Frequency Estimation and Selection in the Shuffle Model of
Differential Privacy", doi 10.1007/978-3-030-77883-5_16).

What is taken from that paper, and from where. Only its abstract could be read (the ar5iv.org
copy of 1908.11358, and Google Research's publication page, both through the team's search
tool; the stored copies reach no further than the abstract and the introduction's first
paragraphs): for frequency estimation over a domain of size B (here d, the possible commutes)
with n users, any single-message shuffled protocol errs by Ω̃(min(n^{1/4}, √B)), "nearly
tight", so amplification by shuffling is essentially optimal among single-message protocols;
multi-message protocols reach polylog(B) error with poly(log B, log n) bits of communication per
user; for selection, single-message protocols need Ω(B) users. The theorem statements — their
numbers, constants, log factors and the multi-message protocols' messages per user — were not
available, so none is given here: the bound is shown as the order min(n^{1/4}, √d)
(:func:`single_message_order`), not as a number of commuters any protocol must err by.

The comparison computed on the current table, both at central (ε, δ) under substitution:

* **single message**: each phone sends one GRR report over the d cells at the ε₀ the product's
  numerical clone bound allows (:func:`dpcore.theory.learn.shuffled_local_epsilon`); an empty
  cell's estimate has variance ``n q(1 − q)/(p − q)²``, p = e^ε₀/(e^ε₀ + d − 1),
  q = 1/(e^ε₀ + d − 1);
* **one bit per cell** (d messages per phone, message j = (j, bit)): bit j is binary randomised
  response of "my commute is cell j". The shuffled messages of cell j are n shuffled binary
  reports, and replacing one person's commute changes two cells' bits, so each cell's protocol
  gets (ε/2, δ/2) and the two compose to (ε, δ); the clone bound gives ε₀′ per bit and an
  estimate's variance ``n p′(1 − p′)/(2p′ − 1)²``, p′ = e^ε₀′/(1 + e^ε₀′): independent of d.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.theory import learn


def grr_variance(n: int, epsilon0: float, d: int) -> float:
    """Variance of an empty cell's GRR estimate from n reports."""
    denominator = math.exp(epsilon0) + d - 1
    p, q = math.exp(epsilon0) / denominator, 1 / denominator
    return n * q * (1 - q) / (p - q) ** 2


def bit_variance(n: int, epsilon0: float) -> float:
    """Variance of one cell's count from n binary randomised-response bits (any true count: the
    bits of people in and out of the cell have the same p′(1 − p′))."""
    p = 1 / (1 + math.exp(-epsilon0))
    return n * p * (1 - p) / (2 * p - 1) ** 2


def compare(n: int, d: int, epsilon: float, delta: float) -> pd.DataFrame:
    """Single-message GRR, one bit per cell, and the central Laplace mechanism (substitution,
    scale 2/ε) at the same central (ε, δ): ε₀ per message, messages per phone, RMSE per cell."""
    single = learn.shuffled_local_epsilon(n, epsilon, delta)
    per_bit = learn.shuffled_local_epsilon(n, epsilon / 2, delta / 2)
    return pd.DataFrame([
        {"protocol": "Shuffled, one message (GRR)", "epsilon0": single, "messages": 1,
         "rmse": math.sqrt(grr_variance(n, single, d))},
        {"protocol": "Shuffled, one bit per cell", "epsilon0": per_bit, "messages": d,
         "rmse": math.sqrt(bit_variance(n, per_bit))},
        {"protocol": "Central Laplace (trusted office)", "epsilon0": math.nan, "messages": 1,
         "rmse": math.sqrt(2) * 2 / epsilon},
    ])


def single_message_order(n: int, d):
    """min(n^{1/4}, √d): the order of the abstract's single-message lower bound Ω̃(min(n^{1/4},
    √B)) (constants and log factors unknown here, see the module docstring); ``d`` may be an
    array."""
    return np.minimum(n ** 0.25, np.sqrt(d))


def across_domains(n: int, epsilon: float, delta: float, domains) -> pd.DataFrame:
    """RMSE per cell of the single-message and one-bit-per-cell protocols for each domain size,
    beside the paper's orders n^{1/4} and √d (single-message lower bound, up to constants)."""
    single = learn.shuffled_local_epsilon(n, epsilon, delta)
    per_bit = math.sqrt(bit_variance(n, learn.shuffled_local_epsilon(n, epsilon / 2, delta / 2)))
    d = np.asarray(domains, dtype=np.int64)
    return pd.DataFrame({"domain": d,
                         "single_message_rmse": [math.sqrt(grr_variance(n, single, int(k)))
                                                 for k in d],
                         "one_bit_per_cell_rmse": per_bit,
                         "single_message_lower_order": single_message_order(n, d)})
