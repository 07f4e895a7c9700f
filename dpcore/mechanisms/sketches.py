"""Apple's sketch frequency oracles: Count-Mean-Sketch (CMS) and Hadamard Count-Mean-Sketch (HCMS).

[Apple17] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine Learning
Journal 1(8), 2017. The server publishes k hash functions h_1..h_k: [d] → [m]; every phone hashes
its commute with one of them, chosen at random, and sends a randomised m-bit vector (CMS) or a
single randomised bit of its Hadamard transform (HCMS). The server adds the reports into a k × m
sketch and reads a cell's count from its k hashed positions ([Apple17], sections "Count Mean
Sketch" and "Hadamard Count Mean Sketch").

Both are *pure protocols* [WBLJ17] under an idealised hash (each report's hash values uniform and
independent of everything else). Call a report *supporting* cell v when its randomised entry at
v's hashed position reads +1 (CMS: the bit ṽ[h_j(v)]; HCMS: β·H_m[h_j(x), l]·H_m[h_j(v), l] = +1).
It supports the sender's own cell with probability p and another cell with
``q* = q + (p − q)/m`` (the two cells' hashes collide with probability 1/m), where

* CMS: p = e^{ε/2}/(1 + e^{ε/2}), q = 1 − p (each of the m bits flipped with probability q);
* HCMS: p = e^ε/(1 + e^ε), q = 1/2 (distinct Hadamard rows agree on half the columns).

Apple's estimate ``f̂(x) = (m/(m−1))((1/k) Σ_l M[l, h_l(x)] − n/m)`` is exactly the pure-protocol
inversion ``(C_v − n q*)/(p − q*)`` of the support count C_v, so its variance is the pure
protocol's [WBLJ17, Thm. 2], ``n q*(1 − q*)/(p − q*)² + c_v(1 − p − q*)/(p − q*)``, which equals these
closed forms with r = m/(m−1), c_CMS = (e^{ε/2}+1)/(e^{ε/2}−1) and c_HCMS = (e^ε+1)/(e^ε−1):

* CMS:  ``r²[c_v(c²−1)/4 + (n−c_v)(c² − (1−2/m)²)/4]``;
* HCMS: ``r²[c_v(c²−1) + (n−c_v)(c² − 1/m²)]``.

What is exact. ``release`` draws the support counts as independent ``Bin(c_v, p) + Bin(n − c_v,
q*)``: every cell's law is exact under the idealised hash, and the cost is O(d) whatever k and m.
The joint law is not (see ``approximation``): in the real protocol a report's entry is shared by
all cells hashed to the same column, and a *fixed* public family makes each estimate biased given
the family, with the extra variance :meth:`SketchOracle.collision_variance`,
``(Σ_{x≠v} c_x² − (n − c_v))/(k(m−1))`` averaged over families (derived here: the conditional
mean of a report given the family is r(φ − 1/m), φ the share of rows where h(x) = h(v), whose
variance over a 3-wise independent family is (1/k)(1/m)(1 − 1/m)). ``perturb``/``simulate`` run
the real protocol with a real seeded family (:class:`HashFamily`, drawn once per run), and the
statistical tests compare the two.

Parameters. m = 1,024 columns as in [Apple17]'s deployments; k = 1,024 rows by default — k only
scales the fixed-family collision term, which at k = m = 1,024 is below 10⁻⁴ of the variance for
Irish ED data (heaviest cells ~10⁴ commuters), and the real server's query costs O(k) per cell.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from dpcore.mechanisms import register
from dpcore.mechanisms.base import EPSILON, Param
from dpcore.mechanisms.hadamard import fwht
from dpcore.mechanisms.local import (
    BLOCK_ELEMENTS,
    HASH_PRIME,
    REPORT_BATCH_BYTES,
    PureProtocol,
    _as_counts,
    _as_items,
    _check_domain,
)

#: Largest k and m offered: 65,536 rows × 65,536 columns is already a 4-billion-entry sketch.
MAX_ROWS = MAX_COLUMNS = 1 << 16
#: People per batch in ``simulate``: each batch costs O(k·m) on top of its people (CMS draws a
#: binomial per sketch entry), so batches are larger than the base's SIMULATION_CHUNK; a million
#: people hold about 50 MB of temporaries.
SKETCH_CHUNK = 1 << 20
#: HCMS needs m a power of two (the Hadamard transform): 2, 4, …, 65,536.
POWERS_OF_TWO = tuple(1 << i for i in range(1, 17))

REFERENCES = (("[Apple17] Apple Differential Privacy Team. Learning with privacy at scale. Apple "
               "Machine Learning Journal 1(8), 2017."),
              ("[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for "
               "frequency estimation. USENIX Security 2017 (the pure-protocol view)."))

APPROXIMATION = ("The fast release draws each cell's support count independently, which is every "
                 "cell's exact law under an idealised hash. Left out: cells hashed to the same "
                 "column share each report's entry (a positive correlation of about 1/m per pair, "
                 "so sums over many cells vary more than here), and a fixed hash family biases "
                 "each estimate given the family, adding (Σ_{x≠v} c_x² − (n − c_v))/(k(m−1)) to "
                 "its variance on average — negligible at the default k = m = 1,024.")


@dataclass(frozen=True)
class HashFamily:
    """k public hash functions h_l(x) = ((a_l x² + b_l x + c_l) mod P) mod m, P = 2³¹ − 1.

    A random polynomial of degree 2 over the prime field is 3-wise independent: the values at any
    three distinct cells are independent and uniform on [P], so reduced mod m they are independent
    and uniform up to O(m/P). Three is what the variance above needs (a report's collision with v
    and with another cell x' must be uncorrelated); pairwise independence alone would not give it.
    Every product stays below 2⁶² (operands < 2³¹), so int64 arithmetic is exact.
    """

    coefficients: np.ndarray   # (k, 3): a, b, c per row
    m: int

    @classmethod
    def draw(cls, k: int, m: int, rng: np.random.Generator) -> HashFamily:
        return cls(rng.integers(0, HASH_PRIME, size=(k, 3), dtype=np.int64), int(m))

    @property
    def k(self) -> int:
        return len(self.coefficients)

    def __call__(self, rows, items) -> np.ndarray:
        """h_row(item), elementwise with broadcasting."""
        a, b, c = (self.coefficients[np.asarray(rows), i] for i in range(3))
        x = np.asarray(items, dtype=np.int64)
        h = a * x
        h %= HASH_PRIME
        h += b
        h %= HASH_PRIME
        h *= x
        h %= HASH_PRIME
        h += c
        h %= HASH_PRIME
        h %= self.m
        return h

    def gather(self, table: np.ndarray, d: int) -> np.ndarray:
        """``Σ_l table[l, h_l(v)]`` for every cell v of [d]: the server's query, O(k·d), in blocks
        of at most :data:`BLOCK_ELEMENTS` (row, cell) pairs."""
        rows = np.arange(self.k)[:, None]
        out = np.empty(d, dtype=table.dtype)
        width = max(1, BLOCK_ELEMENTS // self.k)
        for start in range(0, d, width):
            cells = np.arange(start, min(start + width, d), dtype=np.int64)
            out[start:start + len(cells)] = table[rows, self(rows, cells[None, :])].sum(axis=0)
        return out


def _rows_param(default: int) -> Param:
    return Param("k", "Hash functions (k, sketch rows)", default, int, low=1, high=MAX_ROWS,
                 help="How many public hash functions the server publishes; each phone uses one "
                      "at random. More rows make hash collisions average out (the real server's "
                      "query costs O(k) per cell).")


class SketchOracle(PureProtocol):
    """A Count-Mean-Sketch oracle: the pure-protocol view (release, variance) plus the real
    sketch protocol with a public hash family (perturb, accumulate, estimate, simulate)."""

    approximation = APPROXIMATION
    references = REFERENCES

    @abstractmethod
    def bit_probabilities(self) -> tuple[float, float]:
        """(p, q): probability that a report supports the sender's own cell, and a cell whose
        hash does not collide with it."""

    def support_probabilities(self, d):
        p, q = self.bit_probabilities()
        return p, q + (p - q) / self.m

    def collision_variance(self, counts) -> np.ndarray:
        """Extra variance of the real protocol with a fixed, freshly drawn 3-wise independent
        family, averaged over families: (Σ_{x≠v} c_x² − (n − c_v))/(k(m−1)) (module docstring)."""
        counts = _as_counts(counts).astype(np.float64)
        others = float(np.sum(counts * counts)) - counts * counts
        return (others - (counts.sum() - counts)) / (self.k * (self.m - 1))

    # ------------------------------------------------------------------------ public family
    def draw_family(self, d: int, rng: np.random.Generator) -> HashFamily:
        """The server's k public hash functions for a domain of d cells."""
        d = _check_domain(d, type(self).__name__)
        if d >= HASH_PRIME:
            raise ValueError(f"{self.name} hashes cell indices modulo {HASH_PRIME:,}; the domain "
                             f"of {d:,} cells is too large for the per-person protocol (the fast "
                             f"release has no such limit).")
        return HashFamily.draw(self.k, self.m, rng)

    def _family(self, family, d, rng) -> HashFamily:
        if family is None:
            return self.draw_family(d, rng)
        if not isinstance(family, HashFamily) or family.k != self.k or family.m != self.m:
            raise ValueError(f"{self.name} needs a HashFamily of k = {self.k} functions onto "
                             f"m = {self.m} columns (draw_family makes one).")
        return family

    # ------------------------------------------------------------------------ whole runs
    def estimate(self, statistic, n, d, family=None):
        """Apple's estimate from the k × m sketch, given the public family the phones used."""
        if family is None:
            raise ValueError(f"{self.name}'s server needs the public hash family the phones used: "
                             "pass family=... (simulate draws one for you).")
        d = _check_domain(d, type(self).__name__)
        return self.invert(self.support(np.asarray(statistic), n, d, family), n, d)

    def simulate(self, items, d, rng, chunk=None, family=None):
        """The real protocol in batches; one public family for the whole run."""
        d = _check_domain(d, type(self).__name__)
        items = _as_items(items, d)
        family = self._family(family, d, rng)
        if chunk is None:
            chunk = min(SKETCH_CHUNK, max(1, REPORT_BATCH_BYTES // self.report_bytes(d)))
        sketch = np.zeros((self.k, self.m), dtype=np.int64)
        read = self.read_positions(d, family)
        for start in range(0, len(items), chunk):
            sketch += self.sketch(items[start:start + chunk], d, rng, family, read)
        return self.estimate(sketch, len(items), d, family)

    def read_positions(self, d: int, family: HashFamily) -> np.ndarray | None:
        """The flat sketch positions the server's query for [d] reads, when the sketch's
        entries are independent given the people's rows and hashes (None: every entry)."""
        return None

    def sketch(self, items, d, rng, family: HashFamily, read=None) -> np.ndarray:
        """The server's (k, m) sketch of these people's reports: ``accumulate(perturb(…))``."""
        return self.accumulate(self.perturb(items, d, rng, family), d)

    @abstractmethod
    def support(self, sketch: np.ndarray, n: int, d: int, family: HashFamily) -> np.ndarray:
        """C_v, the number of reports whose entry at v's hashed position reads +1."""

    def _explain(self, title, client, server, variance, plain):
        p, q_star = self.support_probabilities(2)
        return (
            f"**{title}** The server publishes $k = {self.k:,}$ hash functions onto "
            f"$m = {self.m:,}$ columns. {client}\n\n{server}\n\n"
            "$$\\hat c_v = \\frac{m}{m-1}\\Big(\\frac1k\\sum_{l=1}^k M[l, h_l(v)] - \\frac nm\\Big)"
            " = \\frac{C_v - n q^*}{p - q^*},\\quad "
            f"p = {p:.4g},\\ q^* = q + \\frac{{p - q}}{{m}} = {q_star:.4g}$$\n\n"
            f"$$\\operatorname{{Var}}[\\hat c_v] = {variance},\\quad r = \\frac{{m}}{{m-1}}$$\n\n"
            f"(idealised hash; $C_v$ counts the reports whose entry at $v$'s column reads +1). "
            f"Communication: {self.bits_per_user(2):,.0f} bits. Guarantee: ε-LDP with "
            f"ε = {self.epsilon:g}. Fast release: {self.approximation}\n\n"
            f"In plain words: {plain}")


@register
class CMS(SketchOracle):
    """Apple's Count-Mean-Sketch [Apple17], the client and server of its "Count Mean Sketch" section.

    Client: row j uniform on [k]; the ±1 vector v with +1 at h_j(x) and −1 elsewhere; every entry
    flipped with probability 1/(1 + e^{ε/2}); send (ṽ, j). Two inputs' vectors differ in two
    entries, each worth e^{ε/2}: ε-LDP. Server: ``M[j] += k((c/2)ṽ + ½)``, c = (e^{ε/2}+1)/(e^{ε/2}−1);
    the sketch kept here is the count of +1 entries per (row, column), from which
    (1/k)Σ_l M[l, h_l(v)] = c·C_v − n(c − 1)/2. Variance (idealised hash):
    ``r²[c_v(c²−1)/4 + (n−c_v)(c² − (1−2/m)²)/4]`` ≈ n e^{ε/2}/(e^{ε/2}−1)² + (n − c_v)/(m − 1).
    """

    key = "cms"
    name = "Apple CMS"
    params = (EPSILON, _rows_param(1024),
              Param("m", "Sketch columns (m)", 1024, int, low=2, high=MAX_COLUMNS,
                    help="Length of each phone's bit vector, as in Apple's deployments (1,024). "
                         "Cells hashed to the same column blur together: about (n − c_v)/(m − 1) "
                         "of extra variance."))

    def bit_probabilities(self):
        half = math.exp(self.epsilon / 2)
        return half / (1 + half), 1 / (1 + half)

    def perturb(self, items, d, rng, family=None):
        """Each person's report: row ``j`` and the randomised vector as booleans ``bits`` (True =
        +1), shape (people, m)."""
        items = _as_items(items, d)
        family = self._family(family, d, rng)
        p, q = self.bit_probabilities()
        rows = rng.integers(0, self.k, size=len(items))
        bits = rng.random((len(items), self.m)) < q          # a −1 entry reads +1 after a flip
        bits[np.arange(len(items)), family(rows, items)] = rng.random(len(items)) < p
        return {"j": rows, "bits": bits}

    def accumulate(self, reports, d):
        """Per (row, column), how many reports read +1: a (k, m) integer sketch."""
        rows, bits = np.asarray(reports["j"], dtype=np.int64), np.asarray(reports["bits"], bool)
        sketch = np.zeros((self.k, self.m), dtype=np.int64)
        if len(rows):
            order = np.argsort(rows, kind="stable")
            present, starts = np.unique(rows[order], return_index=True)
            sketch[present] = np.add.reduceat(bits[order], starts, axis=0, dtype=np.int64)
        return sketch

    def sketch(self, items, d, rng, family, read=None):
        """``accumulate(perturb(…))`` in distribution without writing out each person's m bits:
        every person's row and hash are drawn, and since the bits are independent, the +1 entries
        of column i in row l are exactly ``Bin(A, p) + Bin(N − A, q)`` (N people in row l, A of
        them hashed to i). O(people + k·m) instead of O(people·m). With ``read`` (flat
        positions, :meth:`read_positions`) only those entries are drawn, O(people + k·d), the
        rest left 0: the entries are independent given the rows and hashes, so whatever reads
        only them has the same law (``simulate`` at k = m = 1,024 spent 99 % of its time on
        entries no query reads)."""
        items = _as_items(items, d)
        p, q = self.bit_probabilities()
        rows = rng.integers(0, self.k, size=len(items))
        own = np.bincount(rows * self.m + family(rows, items), minlength=self.k * self.m)
        people = np.bincount(rows, minlength=self.k)
        sketch = np.zeros(self.k * self.m, dtype=np.int64)
        if read is None:
            read = np.flatnonzero(np.repeat(people > 0, self.m))
        sketch[read] = (rng.binomial(own[read], p)
                        + rng.binomial(people[read // self.m] - own[read], q))
        return sketch.reshape(self.k, self.m)

    def read_positions(self, d, family):
        """(l, h_l(v)) for every row l and cell v: all that :meth:`support`'s query reads (None
        from d = m on, where they would be as many as the sketch's entries)."""
        if d >= self.m:
            return None
        rows = np.arange(self.k)[:, None]
        return np.unique(rows * self.m + family(rows, np.arange(d, dtype=np.int64)[None, :]))

    def support(self, sketch, n, d, family):
        return family.gather(sketch, d)

    def report_bytes(self, d):
        """Per person in ``simulate``'s batches, which go through :meth:`sketch` (row, column and
        key as integers), not through ``perturb``'s m bits."""
        return 24

    def bits_per_user(self, d):
        _check_domain(d, "CMS")
        return float(self.m + math.ceil(math.log2(self.k)))

    def explain(self):
        return self._explain(
            "Apple Count-Mean-Sketch (CMS).",
            "Each phone picks one hash function $h_j$ at random, writes its commute as $m$ entries "
            "(+1 at column $h_j(x)$, −1 elsewhere), flips every entry with probability "
            "$1/(1+e^{\\varepsilon/2})$, and sends the vector with $j$.",
            "The server adds $k\\big(\\tfrac c2\\tilde v + \\tfrac12\\big)$ to row $j$ of the "
            "$k\\times m$ sketch $M$, $c = \\frac{e^{\\varepsilon/2}+1}{e^{\\varepsilon/2}-1}$.",
            "r^2\\Big[c_v\\frac{c^2-1}{4} + (n-c_v)\\frac{c^2-(1-2/m)^2}{4}\\Big]",
            "like basic RAPPOR, but on a short hashed vector of m bits instead of one bit per "
            "cell: the size of a report no longer grows with the number of commutes, at the cost "
            "of about (n − c_v)/(m − 1) extra variance from cells that share a column.")


@register
class HCMS(SketchOracle):
    """Apple's Hadamard Count-Mean-Sketch [Apple17], its "Hadamard Count Mean Sketch" section.

    Client: row j uniform on [k], column l uniform on [m] (m a power of two); send
    (β·H_m[h_j(x), l], j, l) with β = −1 with probability 1/(1 + e^ε): one bit of randomised
    response, ε-LDP. Server: ``M[j, l] += k·c·bit``, c = (e^ε+1)/(e^ε−1), then ``M ← M H_mᵀ``
    (one FWHT per row); the sketch kept here is the sum of the bits per (row, column), so that
    (1/k)Σ_l M[l, h_l(v)] = c(2C_v − n). Variance (idealised hash):
    ``r²[c_v(c²−1) + (n−c_v)(c² − 1/m²)]`` ≈ n(e^ε+1)²/(e^ε−1)².
    """

    key = "hcms"
    name = "Apple HCMS"
    params = (EPSILON, _rows_param(1024),
              Param("m", "Sketch columns (m, a power of 2)", 1024, int, choices=POWERS_OF_TWO,
                    help="Hadamard order of each row, as in Apple's deployments (1,024); a report "
                         "is one bit plus log₂ k + log₂ m bits of indices whatever m is."))

    def bit_probabilities(self):
        e = math.exp(self.epsilon)
        return e / (1 + e), 0.5

    def perturb(self, items, d, rng, family=None):
        """Each person's report: row ``j``, column ``l`` and the randomised sign ``bit`` (±1)."""
        items = _as_items(items, d)
        family = self._family(family, d, rng)
        p, _ = self.bit_probabilities()
        rows = rng.integers(0, self.k, size=len(items))
        cols = rng.integers(0, self.m, size=len(items))
        sign = 1 - 2 * (np.bitwise_count(family(rows, items) & cols) & 1).astype(np.int8)
        sign[rng.random(len(items)) >= p] *= -1                         # β = −1
        return {"j": rows, "l": cols, "bit": sign}

    def accumulate(self, reports, d):
        """Per (row, column), the sum of the ±1 bits sent: a (k, m) integer sketch."""
        key = (np.asarray(reports["j"], dtype=np.int64) * self.m
               + np.asarray(reports["l"], dtype=np.int64))
        negative = np.asarray(reports["bit"]) < 0
        size = self.k * self.m
        total = (np.bincount(key[~negative], minlength=size)
                 - np.bincount(key[negative], minlength=size))
        return total.reshape(self.k, self.m)

    def support(self, sketch, n, d, family):
        """C_v = (n + Σ_l (M H_m)[l, h_l(v)])/2: each report adds ±1 to the transformed row."""
        return (n + family.gather(fwht(sketch), d)) // 2

    def report_bytes(self, d):
        return 17

    def bits_per_user(self, d):
        _check_domain(d, "HCMS")
        return float(1 + math.ceil(math.log2(self.k)) + math.log2(self.m))

    def explain(self):
        return self._explain(
            "Apple Hadamard Count-Mean-Sketch (HCMS).",
            "Each phone picks one hash function $h_j$ and one column $l$ at random and sends a "
            "single entry of the Hadamard transform of its hashed commute, "
            "$H_m[h_j(x), l] = \\pm1$, flipped with probability $1/(1+e^\\varepsilon)$, "
            "with $j$ and $l$.",
            "The server adds $k\\,c\\cdot\\text{bit}$ to $M[j, l]$, "
            "$c = \\frac{e^\\varepsilon+1}{e^\\varepsilon-1}$, and transforms every row once: "
            "$M \\leftarrow M H_m^\\top$.",
            "r^2\\Big[c_v(c^2-1) + (n-c_v)\\big(c^2-\\tfrac{1}{m^2}\\big)\\Big]",
            "each phone sends one randomised bit plus two indices, so a report is tiny; the price "
            "is the variance of one-bit randomised response, about n(e^ε+1)²/(e^ε−1)².")
