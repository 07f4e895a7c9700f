"""The thesis's chapter 5 as its code ran it: each difference from the text a named switch.

The thesis (Finnegan 2023/24) *defines* its mechanisms in chapter 3; its figures were *made* by
its public code (its notebooks calling OpenDP and pure-LDP 1.2, read for facts), which differs
in five ways. Each is a
:class:`Difference` here, so the report can switch one at a time and name the one that moves a
figure:

* ``hadamard_response`` — "Hadamard" in chapter 5 is Hadamard Response [Acharya, Sun, Zhang,
  AISTATS 2019] as pure-LDP 1.2 implements it (our ``hr``), not chapter 3's Hadamard mechanism
  with t = 1; its estimates ``int()``-truncated (towards 0), as the thesis's code read them.
* ``rr_duplicate_report`` — **a defect of the original code**: a truthful person also sends the
  latest liar's false value (the people in cell order), the client fails when its first person
  tells the truth, and the server debiases the n + (number of truthful reports) reports with n.
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
import pandas as pd

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
               "chapter 3's Hadamard mechanism with t = 1; estimates int()-truncated"),
    Difference("rr_duplicate_report", "RR client's duplicate false report", ("grr",),
               "defect of the original code: after each truthful report the client also sends "
               "the latest liar's false value (the data sorted by cell), and fails when its first "
               "person tells the truth (probability e^ε/(e^ε + d − 1)); the server debiases "
               "with n", defect=True),
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


def rr_failure_probability(epsilon: float, d: int) -> float:
    """The chance that one run of the original randomised-response client fails: its first
    person (in cell order) tells the truth, so the false value it sends was never drawn
    (``UnboundLocalError``). That is p = e^ε/(e^ε + d − 1); a failed run made no figure, so
    :func:`rr_as_run` samples the runs that did not fail."""
    return grr_probabilities(epsilon, d)[0]


def rr_as_run(counts: np.ndarray, items: np.ndarray, epsilon: float,
              rng: np.random.Generator) -> np.ndarray:
    """Randomised response as the thesis's client and server ran it (a defect, see above).

    The people go in cell order (the data sorted by cell). Each tells the truth with probability
    p = e^ε/(e^ε + d − 1) and then sends x; a liar draws a false value F uniform over the d − 1
    cells other than its own. The line sending F sits outside the ``else``, so *everyone* sends
    the latest liar's F: a liar its own, a truthful person the one carried over from the last
    liar before it (possibly of another cell — even its own cell — across a cell boundary).
    When the first person is truthful there is no F yet and the client fails
    (:func:`rr_failure_probability`); this samples the runs that did not fail (the first person
    lies: its coin is independent of the others', so conditioning just sets it).
    The server returns (C − nq)/(p − q) with q = 1/(e^ε + d − 1) over the n + (number of
    truthful) reports C. A liar's F is sent by it and by the run of truthful people after it, so
    the false reports come in clusters of geometric size: the mean is as for independent
    draws (≈ n/(d − 1) · e^ε/(e^ε − 1) per empty cell, ≈ +2,550 at county level, ε = 5), the
    variance of a small cell ≈ (1 + p)/(1 − p) times theirs.
    Sampled in O(n): the liars' draws, each counted once per person it reaches (one bincount
    weighted by the gaps between consecutive liars). Exact in distribution.
    """
    counts = np.asarray(counts, dtype=np.int64)
    d = counts.size
    people = np.asarray(items, dtype=np.int64)
    if not (people[1:] >= people[:-1]).all():  # the people in cell order (to_items() is)
        people = np.sort(people)
    n = people.size
    p, q = grr_probabilities(epsilon, d)
    if n == 0:
        return np.zeros(d)
    truthful = rng.random(n) < p
    truthful[0] = False  # the runs that did not fail
    liars = np.flatnonzero(~truthful)
    false = rng.integers(0, d - 1, size=liars.size)
    false += false >= people[liars]  # skip the liar's own cell: uniform over the other d − 1
    reach = np.diff(np.append(liars, n))  # the liar and the truthful people up to the next liar
    support = (np.bincount(people[truthful], minlength=d)
               + np.bincount(false, weights=reach, minlength=d))
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
    if role == "hm":  # int()-truncated, as the original read its estimates
        return np.trunc(mechanisms.build("hr", epsilon=epsilon).release(counts, rng, permutation))
    raise ValueError(f"the thesis's code ran no other release for {role!r}")


def base_pro(estimates: np.ndarray, rounded: bool) -> np.ndarray:
    """Base-Pro: negatives set to 0, then (as run) rounded to whole commuters."""
    out = postprocess.base_pos(estimates, None)
    return np.round(out) if rounded else out


def base_cut(estimates: np.ndarray, n: int, rounded: bool) -> np.ndarray:
    """The thesis's Base-Cut on its Base-Pro (rounded as run)."""
    return postprocess.base_cut(base_pro(estimates, rounded), n)


# --------------------------------------------------------- the thesis's per-person operations
def per_person(role: str, items: np.ndarray, d: int, epsilon: float,
               rng: np.random.Generator) -> np.ndarray:
    """What the thesis timed, operation for operation: a Python loop over the people doing what
    its code did for each one (client, then server), then the estimates (those of the protocol
    as run). Randomised response — its own client: the ``categories.index`` list scan, one
    ``random.random()``, a false value picked from the other categories and sent whatever the
    coin (a first truthful person, where the original fails, sends nothing), the reports counted
    by pandas ``value_counts``. Unary encoding — its own client: one ``random.random()`` per bit,
    the bit list added to the server's NumPy sums. Local hashing and Hadamard Response —
    pure-LDP 1.2's own clients and servers (xxhash, its server's loop over the d cells; Hadamard
    Response's ``k2k_hadamard`` encoder and decoder), items fed and estimates ``int()``-read as
    the thesis's code did. Central: every row counted, then released. ``rng`` draws only the
    central releases: the loops use the libraries' own (``random``, NumPy's global) generators.

    Not reproduced: the thesis's cells were labelled by strings (an origin–destination pair),
    here by ints — the list scan compares ints; the machine and Python version.
    """
    import random

    n = len(items)
    if role == "grr":
        p, q = grr_probabilities(epsilon, d)
        categories = list(range(d))
        reports, false = [], None
        for x in np.sort(items).tolist():
            own = categories.index(x)
            if random.random() < p:
                reports.append(x)
            else:
                other = random.randrange(d - 1)
                false = categories[other + (other >= own)]
            reports.append(false)
        support = pd.Series(reports).value_counts().reindex(categories, fill_value=0)
        return (support.to_numpy() - n * q) / (p - q)
    if role == "oue":
        q = 1 / (math.exp(epsilon) + 1)
        support = np.zeros(d)
        for x in items.tolist():
            support += [random.random() < (0.5 if i == x else q) for i in range(d)]
        return (support - n * q) / (0.5 - q)
    if role in ("olh", "hm"):
        return _pure_ldp_loop(role, items, d, epsilon)
    counts = [0] * d
    for x in items.tolist():
        counts[x] += 1
    return release(role, np.array(counts), items, epsilon, rng)


def _pure_ldp_loop(role: str, items: np.ndarray, d: int, epsilon: float) -> np.ndarray:
    """pure-LDP's client and server for each person, as the thesis's code called them: local
    hashing fed items 0…d−1 (its index mapper x ↦ x − 1 loses cell 0), Hadamard Response fed
    x + 1 and read back at x + 1; every estimate ``int()``-truncated."""
    import warnings

    from pure_ldp.frequency_oracles.hadamard_response import (HadamardResponseClient,
                                                              HadamardResponseServer)
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

    shift = 1 if role == "hm" else 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pure-LDP warns on every estimate read
        if role == "olh":
            client, server = LHClient(epsilon, d, use_olh=True), LHServer(epsilon, d, use_olh=True)
        else:
            server = HadamardResponseServer(epsilon, d)
            client = HadamardResponseClient(epsilon, d, server.get_hash_funcs())
        for x in items.tolist():
            server.aggregate(client.privatise(x + shift))
        return np.array([int(server.estimate(i + shift)) for i in range(d)], dtype=float)
