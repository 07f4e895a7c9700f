"""The thesis's chapter 5 as its code ran it: each difference from the text a named switch.

The thesis (Finnegan 2023/24) *defines* its mechanisms in chapter 3; its figures were *made* by
its public code (its notebooks calling OpenDP and pure-LDP 1.2, read for facts), which differs
in five ways. Each is a
:class:`Difference` here, so the report can switch one at a time and name the one that moves a
figure:

* ``hadamard_response`` — "Hadamard" in chapter 5 is Hadamard Response [Acharya, Sun, Zhang,
  AISTATS 2019] as pure-LDP 1.2 implements it (our ``hr``), not chapter 3's Hadamard mechanism
  with t = 1.
* ``rr_duplicate_report`` — **a defect of the original code**: after each truthful report the
  randomised-response client also sends the last false value it drew, and the server debiases
  the n + (number of truthful reports) reports with n.
* ``olh_lost_cell_0`` — **a defect of the original code**: pure-LDP's local-hashing client and
  server were given items 0 … d − 1 while their default index mapper is x ↦ x − 1, so cell 0 is
  never credited and is read from an empty slot; estimates were ``int()``-truncated.
* ``central_opendp`` — the central releases through OpenDP: discrete Laplace of scale 2/ε with
  negative counts set to 0 before scoring; the stability histogram over the non-empty keys with
  threshold 2·ln(2/δ)/ε + 1/n, δ = 1/(2n), released values rounded.
* ``base_pro_rounded`` — the local figures' Base-Pro set negatives to 0 *and rounded*.

The two defects live here and only here: they are samplers of what the original code computed,
exact in distribution, kept to reproduce the thesis's numbers — never mechanisms to use (they
are not registered in :mod:`dpcore.mechanisms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore import mechanisms
from dpcore.mechanisms import postprocess


@dataclass(frozen=True)
class Difference:
    """One way the thesis's code departs from its text: the roles (the thesis's mechanism
    columns) it changes, and what it is."""

    key: str
    title: str
    roles: tuple[str, ...]
    what: str
    defect: bool = False


DIFFERENCES: dict[str, Difference] = {d.key: d for d in (
    Difference("hadamard_response", "Hadamard Response for \"Hadamard\"", ("hm",),
               "chapter 5's \"Hadamard\" is pure-LDP's Hadamard Response [ASZ19] (our hr), not "
               "chapter 3's Hadamard mechanism with t = 1"),
    Difference("rr_duplicate_report", "RR client's duplicate false report", ("grr",),
               "defect of the original code: after each truthful report the client also sends "
               "the last false value it drew; the server debiases with n", defect=True),
    Difference("olh_lost_cell_0", "OLH's lost cell 0", ("olh",),
               "defect of the original code: items 0…d−1 fed to pure-LDP's local hashing whose "
               "index mapper is x ↦ x − 1, so cell 0 is never credited and read from an empty "
               "slot; estimates int()-truncated", defect=True),
    Difference("central_opendp", "central releases as OpenDP ran them",
               ("laplace", "stability_histogram"),
               "discrete Laplace of scale 2/ε, negatives set to 0 before scoring; stability "
               "histogram over the non-empty keys, threshold 2·ln(2/δ)/ε + 1/n, rounded"),
    Difference("base_pro_rounded", "Base-Pro rounds", ("grr", "oue", "olh", "hm"),
               "the local figures' Base-Pro sets negatives to 0 and rounds to whole commuters"),
)}
ROUNDING = "base_pro_rounded"


@dataclass(frozen=True)
class Protocol:
    """A setting of the thesis pipeline: which of :data:`DIFFERENCES` are on."""

    name: str
    switches: frozenset

    def variant(self, role: str) -> str:
        """``"run"`` when a switch that replaces this role's release is on, else ``"written"``."""
        return "run" if any(role in DIFFERENCES[s].roles for s in self.switches
                            if s != ROUNDING) else "written"

    @property
    def rounded(self) -> bool:
        return ROUNDING in self.switches

    def toggled(self, key: str) -> Protocol:
        switches = self.switches ^ {key}
        verb = "without" if key in self.switches else "with"
        return Protocol(f"{self.name} {verb} {key}", frozenset(switches))


WRITTEN = Protocol("as written", frozenset())
RUN = Protocol("as run", frozenset(DIFFERENCES))
PROTOCOLS = {"written": WRITTEN, "run": RUN}


# -------------------------------------------------------------------- what the code computed
def grr_probabilities(epsilon: float, d: int) -> tuple[float, float]:
    e = math.exp(epsilon)
    return e / (e + d - 1), 1 / (e + d - 1)


def rr_as_run(counts: np.ndarray, items: np.ndarray, epsilon: float,
              rng: np.random.Generator) -> np.ndarray:
    """Randomised response as the thesis's client and server ran it (a defect, see above).

    Each person draws a false value F uniform over the d − 1 cells other than their own x and
    reports F; with probability p = e^ε/(e^ε + d − 1) they also report x. So every person sends
    exactly one uniform-other value whatever the coin says, and the support counts are
    ``C = T + M``: ``T_x ~ Bin(n_x, p)`` independently per cell, and ``M`` the histogram of n
    independent uniform-other draws (independent of T). The server returns (C − nq)/(p − q) with
    q = 1/(e^ε + d − 1): E[C_x] = p·n_x + (n − n_x)/(d − 1), so each cell is biased by
    ((n − n_x)/(d − 1) − q·(n − n_x))/(p − q) ≈ n/(d − 1) · e^ε/(e^ε − 1) when n_x ≪ n (≈ +2,550
    per county cell at ε = 5).
    Sampled per person in one vectorised draw (O(n)), exact in distribution.
    """
    counts = np.asarray(counts, dtype=np.int64)
    d, n = counts.size, int(counts.sum())
    p, q = grr_probabilities(epsilon, d)
    truthful = rng.binomial(counts, p)
    false = rng.integers(0, d - 1, size=items.size)
    false += false >= items  # skip the person's own cell: uniform over the other d − 1
    support = truthful + np.bincount(false, minlength=d)
    return (support - n * q) / (p - q)


def olh_as_run(counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Optimised local hashing as the thesis ran pure-LDP's (a defect, see above).

    The people of cell 0 hash the index −1, which no server slot stands for: to the estimates
    they are people outside the domain (each supports any slot with probability 1/g, as anyone
    not in that cell). Slot x − 1 credits cell x for x ≥ 1; cell 0 is read from slot d − 1,
    which stands for an item nobody has. So: a correct OLH release of d + 1 cells in which cell
    0's people sit in an extra cell and cell 0 is empty, truncated to its first d cells and
    ``int()``-truncated (towards 0).
    """
    counts = np.asarray(counts, dtype=np.int64)
    moved = np.append(counts, counts[0])
    moved[0] = 0
    estimates = mechanisms.build("olh", epsilon=epsilon).release(moved, rng)[:counts.size]
    return np.trunc(estimates)


def laplace_as_run(counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """OpenDP's discrete Laplace of scale 2/ε (substitution, Δ₁ = 2) on every count, negative
    counts set to 0 before scoring (as the thesis's code did)."""
    noisy = mechanisms.build("discrete_laplace", epsilon=epsilon,
                             neighbours="substitution").release(counts, rng)
    return np.maximum(noisy, 0.0)


def stability_threshold(epsilon: float, n: int) -> float:
    """The threshold the thesis's code gave OpenDP: 2·ln(2/δ)/ε + 1/n with δ = 1/(2n)."""
    return 2 * math.log(2 / (1 / (2 * n))) / epsilon + 1 / n


def stability_as_run(counts: np.ndarray, epsilon: float, rng: np.random.Generator
                     ) -> np.ndarray:
    """OpenDP's Laplace threshold over the non-empty keys (scale 2/ε, :func:`stability_threshold`),
    released values rounded; keys not released read as 0."""
    counts = np.asarray(counts)
    present = np.flatnonzero(counts)
    noisy = counts[present] + rng.laplace(0.0, 2 / epsilon, present.size)
    out = np.zeros(counts.size)
    keep = noisy >= stability_threshold(epsilon, int(counts.sum()))
    out[present[keep]] = np.round(noisy[keep])
    return out


def release(role: str, counts: np.ndarray, items: np.ndarray, epsilon: float,
            rng: np.random.Generator, permutation: np.ndarray | None = None) -> np.ndarray:
    """The raw estimates the thesis's code produced for ``role`` (a mechanism column of its
    figures) from these counts; ``items`` is one entry per person (randomised response only);
    ``permutation``: Hadamard Response's public permutation, when the caller draws it."""
    if role == "grr":
        return rr_as_run(counts, items, epsilon, rng)
    if role == "olh":
        return olh_as_run(counts, epsilon, rng)
    if role == "laplace":
        return laplace_as_run(counts, epsilon, rng)
    if role == "stability_histogram":
        return stability_as_run(counts, epsilon, rng)
    if role == "hm":
        return mechanisms.build("hr", epsilon=epsilon).release(counts, rng, permutation)
    raise ValueError(f"the thesis's code ran no other release for {role!r}")


def base_pro(estimates: np.ndarray, rounded: bool) -> np.ndarray:
    """Base-Pro: negatives set to 0, then (as run) rounded to whole commuters."""
    out = postprocess.base_pos(estimates, None)
    return np.round(out) if rounded else out


def base_cut(estimates: np.ndarray, n: int, rounded: bool) -> np.ndarray:
    """The thesis's Base-Cut on its Base-Pro (rounded as run)."""
    return postprocess.base_cut(base_pro(estimates, rounded), n)


# ------------------------------------------------------------------ the thesis's per-person loop
def per_person(role: str, items: np.ndarray, d: int, epsilon: float,
               rng: np.random.Generator) -> np.ndarray:
    """What the thesis timed: a Python loop over the people, each one's report made and
    aggregated on its own (client + server, the original code's structure), then the estimates.

    Randomised response: its own client (as run, with the duplicate false report). Unary
    encoding: its own client, d bits per person drawn as one NumPy vector. Local hashing:
    pure-LDP's server, which loops in Python over all d cells hashing each under the person's
    seed (here CRC-32 seeded with it stands in for xxhash, same loop). Hadamard Response: one
    report per person (a uniform output, or a uniform +1 entry of its row drawn by rejection),
    counted, then one transform. Central: every row counted, then released.
    For timing: the estimates are those of the respective protocol as run.
    """
    import random
    import zlib

    n = len(items)
    if role == "grr":
        p, q = grr_probabilities(epsilon, d)
        support = [0] * d
        for x in items.tolist():
            false = random.randrange(d - 1)
            false += false >= x
            support[false] += 1
            if random.random() < p:
                support[x] += 1
        return (np.array(support) - n * q) / (p - q)
    if role == "oue":
        q = 1 / (math.exp(epsilon) + 1)
        support = np.zeros(d)
        for x in items.tolist():
            bits = rng.random(d) < q
            bits[x] = rng.random() < 0.5
            support += bits
        return (support - n * q) / (0.5 - q)
    if role == "olh":
        g = int(round(math.exp(epsilon))) + 1
        p = math.exp(epsilon) / (math.exp(epsilon) + g - 1)
        support = [0] * d
        for x in items.tolist():
            seed = random.getrandbits(32)
            y = zlib.crc32(str(x - 1).encode(), seed) % g
            if random.random() > p - 1 / g:
                y = random.randrange(g)
            for i in range(d):
                if zlib.crc32(str(i).encode(), seed) % g == y:
                    support[i] += 1
        return np.trunc((g * np.array(support) - n) / (p * g - 1))
    if role == "hm":
        hr = mechanisms.build("hr", epsilon=epsilon)
        lay, uniform, _ = hr.constants(d)
        permutation = hr.draw_permutation(d, rng)
        symbols = (items if permutation is None else permutation[items]).tolist()
        histogram = [0] * lay.outputs
        per_block = lay.items_per_block
        for s in symbols:  # one person's report at a time: uniform, or a +1 entry of its row
            if random.random() < uniform:
                y = random.randrange(lay.outputs)
            else:
                block, row = divmod(s, per_block)
                offset = random.randrange(lay.block_size)
                while ((row + 1) & offset).bit_count() % 2:
                    offset = random.randrange(lay.block_size)
                y = block * lay.block_size + offset
            histogram[y] += 1
        return hr.estimate(np.array(histogram), n, d, permutation)
    counts = [0] * d
    for x in items.tolist():
        counts[x] += 1
    return release(role, np.array(counts), items, epsilon, rng)
