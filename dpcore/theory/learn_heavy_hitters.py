"""One commuter's device under the heavy-hitter protocols PEM and TreeHist, for the Learn page.

:func:`device_report` draws what one phone does, with the same choices the simulation in
:mod:`dpcore.evaluation.heavy_hitters` makes in law: the cell written in L = ⌈log₂ d⌉ bits, a
uniformly chosen level (PEM: the commuter's group), the prefix of that level's length, and one
optimised-local-hashing (OLH) report of it drawn by the OLH mechanism's own client code
(:meth:`dpcore.mechanisms.local.LocalHashing.perturb`). PEM [WLJ+19] spends the whole ε on that
report; TreeHist [BNST17] splits it, ε/2 for the prefix (a padded prefix of length s is its own
item, index 2^s + prefix, so prefixes of different levels never collide) and ε/2 for a report of
the whole cell. :func:`supported_candidates` is what the server can read off the report: which of
the prefixes it is estimating at that level the report counts for.

The per-user hash is the app's seeded universal family modulo the 31-bit prime, so the walkthrough
needs the prefixes to stay below it (domains up to 2³⁰ cells for PEM, 2²⁹ for TreeHist); the
server's walk (:func:`dpcore.evaluation.heavy_hitters.walk`) has no such limit.

[BNST17] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta. Practical locally private heavy hitters.
NeurIPS 2017.
[WLJ+19] T. Wang, N. Li, S. Jha et al. Locally differentially private heavy hitter
identification. IEEE TDSC 2019 (arXiv:1708.06674).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore import mechanisms
from dpcore.evaluation import heavy_hitters
from dpcore.mechanisms.local import HASH_PRIME, HASH_SEED_BITS, universal_hash


@dataclass(frozen=True)
class OLHReport:
    """One OLH report: the public hash seed (a, b), the bucket sent, and the item it encodes."""

    a: int
    b: int
    bucket: int
    item: int
    domain: int
    epsilon: float
    hash_range: int
    p: float
    kept: bool

    @property
    def own_bucket(self) -> int:
        """H(item): the bucket the phone would send if it kept the truth."""
        return int(universal_hash(self.a, self.b, self.item, self.hash_range))

    @property
    def bits(self) -> int:
        """Bits sent: the 62-bit hash seed and the bucket."""
        return HASH_SEED_BITS + max(1, math.ceil(math.log2(self.hash_range)))

    def supports(self, items: np.ndarray) -> np.ndarray:
        """Which of ``items`` (in this report's encoding) hash to the bucket sent."""
        return universal_hash(self.a, self.b, np.asarray(items, dtype=np.int64),
                              self.hash_range) == self.bucket


@dataclass(frozen=True)
class DeviceReport:
    """What one commuter's phone did under ``protocol`` ("pem" or "treehist").

    ``level`` is 1-based of ``levels``; ``prefix`` holds the first ``prefix_length`` of the cell's
    ``bits`` bits; ``prefix_report`` is the OLH report of it and ``cell_report`` TreeHist's second
    report of the whole cell (None under PEM).
    """

    protocol: str
    cell: int
    bits: int
    level: int
    levels: int
    prefix_length: int
    prefix: int
    prefix_report: OLHReport
    cell_report: OLHReport | None

    @property
    def cell_bits(self) -> str:
        return format(self.cell, f"0{self.bits}b")

    @property
    def prefix_bits(self) -> str:
        return self.cell_bits[:self.prefix_length]

    def encoded(self, prefixes: np.ndarray) -> np.ndarray:
        """Prefixes of this report's length as the items its OLH report encodes."""
        prefixes = np.asarray(prefixes, dtype=np.int64)
        return prefixes | (1 << self.prefix_length) if self.protocol == "treehist" else prefixes


def _olh(epsilon: float, item: int, domain: int, rng: np.random.Generator) -> OLHReport:
    """One report of ``item`` by the OLH mechanism's own client."""
    mech = mechanisms.build("olh", epsilon=epsilon)
    sent = mech.perturb(np.array([item], dtype=np.int64), domain, rng)
    a, b, y = (int(sent[key][0]) for key in ("a", "b", "y"))
    p, _ = mech.support_probabilities(domain)
    g = mech.hash_range
    return OLHReport(a, b, y, item, domain, epsilon, g, p,
                     int(universal_hash(a, b, item, g)) == y)


def device_report(protocol: str, domain_size: int, cell: int, epsilon: float, k: int,
                  rng: np.random.Generator) -> DeviceReport:
    """What the phone of a commuter in ``cell`` sends under ``protocol`` at ε, for a server
    looking for the top k (the level plan of :func:`heavy_hitters.prefix_lengths`). ValueError
    with a message for a cell outside the domain or a domain too large for the walkthrough."""
    if protocol not in heavy_hitters.PROTOCOLS:
        raise ValueError(f"unknown heavy-hitter protocol {protocol!r}.")
    if not 0 <= cell < domain_size:
        raise ValueError(f"commute {cell} is outside the domain of {domain_size:,} cells.")
    bits = heavy_hitters.cell_bits(domain_size)
    tree = protocol == "treehist"
    if 2 ** (bits + tree) >= HASH_PRIME:
        raise ValueError(f"The phone's walkthrough hashes prefixes modulo a 31-bit prime; cells of "
                         f"this {domain_size:,}-cell domain need {bits} bits, too many. Choose a "
                         "smaller level or subset of the data to follow one phone.")
    lengths = heavy_hitters.prefix_lengths(protocol, domain_size, k)
    level = int(rng.integers(len(lengths)))
    length = lengths[level]
    prefix = cell >> (bits - length)
    if tree:
        prefix_report = _olh(epsilon / 2, prefix | (1 << length), 2 ** (bits + 1), rng)
        cell_report = _olh(epsilon / 2, cell, domain_size, rng)
    else:
        prefix_report, cell_report = _olh(epsilon, prefix, 2 ** length, rng), None
    return DeviceReport(protocol, cell, bits, level + 1, len(lengths), length, prefix,
                        prefix_report, cell_report)


def supported_candidates(report: DeviceReport, found: heavy_hitters.HeavyHitters) -> np.ndarray:
    """The prefixes the server estimated at the report's level (in ``found``, a run of the same
    protocol) that this report supports: its whole contribution to the server's counts."""
    if (len(found.levels) != report.levels
            or found.levels[report.level - 1].length != report.prefix_length):
        raise ValueError("the server's run used another level plan (another k or protocol).")
    candidates = found.levels[report.level - 1].candidates
    return candidates[report.prefix_report.supports(report.encoded(candidates))]

