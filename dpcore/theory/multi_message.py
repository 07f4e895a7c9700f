"""One message or many per phone in the shuffle model: what sending more messages buys.

The shuffle-model cheat sheet in the seeds (001 l.69–85) defines a shuffler over *all* messages of
all users ("three users each sending two messages, 6! permutations") and points to Ghazi,
Golowich, Kumar, Pagh, Velingker, *On the power of multiple anonymous messages* (EUROCRYPT 2021,
arXiv 1908.11358). That paper proves, for frequency estimation over a domain of size d with n
users, an error lower bound of Ω̃(min(n^{1/4}, √d)) for any single-message protocol, and
multi-message protocols with polylog(d) error — constants and log factors unspecified, so they
are shown here as orders of magnitude only.

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
                         "single_message_lower_order": np.minimum(n ** 0.25, np.sqrt(d))})
