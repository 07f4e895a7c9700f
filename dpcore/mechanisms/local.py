"""Local frequency oracles: every commuter randomises their own cell before it leaves the phone.

Seven mechanisms over the dense domain of d origin × destination cells (each class lists its
papers in ``references``):

* :class:`GRR` — generalised randomised response (direct encoding): report the true cell or another;
* :class:`SUE`, :class:`OUE` — unary encoding: a d-bit vector with every bit flipped independently
  (SUE = basic RAPPOR; OUE optimises the two flip probabilities);
* :class:`BLH`, :class:`OLH` — local hashing: hash the cell into g buckets with a personal hash
  function, then randomised response over the buckets (g = 2, or g = round(e^ε) + 1);
* :class:`SubsetSelection` — report a random set of k cells that contains the true one more often;
* :class:`DBitFlip` — Microsoft's dBitFlip with the cells as buckets: d_b randomly chosen cells, one
  randomised bit each.

All but dBitFlip are *pure protocols* [WBLJ17]: a report supports a set of cells, the true cell with
probability p*, any other with q*, and the server inverts ``ĉ_v = (C_v − n q*)/(p* − q*)`` where C_v
counts the reports supporting v. Each class derives (p*, q*) in exactly one place,
:meth:`support_probabilities`, which the client (``perturb``), the server (``estimate``), the fast
release and the variance all read.

The fast ``release`` draws the server's support counts directly instead of simulating every person.
Because people randomise independently, each count is a sum of independent Bernoulli indicators, so
every cell's law is exact; the joint law is exact only when one report's indicators are independent
across cells, or when a mechanism-specific sampler restores the dependence. That holds for GRR (the
"keep or uniform" sampler), SUE, OUE and — under an idealised, fully random hash family — BLH and
OLH; for subset selection and dBitFlip only each cell's law is exact (see their ``approximation``).
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from dpcore.mechanisms import register
from dpcore.mechanisms.base import (
    EPSILON,
    SIMULATION_CHUNK,
    LocalMechanism,
    Param,
    occupied_cells,
    table_size,
)

#: The Mersenne prime 2³¹ − 1 of the universal hash family ((a·x + b) mod P) mod g: with a, x < 2³¹
#: every intermediate fits an int64, and the domain must be smaller than P.
HASH_PRIME = (1 << 31) - 1
#: Bits of public seed per local-hashing report: a and b, 31 bits each.
HASH_SEED_BITS = 62
#: Elements per temporary block in per-user simulation (64 MB of float64 or int64).
BLOCK_ELEMENTS = 1 << 23
#: Bytes of reports per batch in ``simulate`` (64 MB), whatever the size of one report.
REPORT_BATCH_BYTES = 1 << 26


# ---------------------------------------------------------------------------------------- helpers
def _as_counts(counts) -> np.ndarray:
    """True counts as int64, or a ValueError saying what is wrong with them."""
    counts = np.asarray(counts)
    if counts.ndim != 1:
        raise ValueError(f"counts must be a one-dimensional vector over the domain; "
                         f"got an array of shape {counts.shape}.")
    if not np.issubdtype(counts.dtype, np.number) or np.issubdtype(counts.dtype, np.complexfloating):
        raise ValueError(f"counts must be numbers; got dtype {counts.dtype}.")
    if counts.dtype.kind in "iu":   # the usual case: one pass instead of four over 10⁷ cells
        if counts.size and counts.min() < 0:
            cell = int(np.argmin(counts))
            raise ValueError(f"counts must be non-negative whole numbers; cell {cell} holds "
                             f"{counts[cell]!r}.")
        return counts.astype(np.int64, copy=False)
    bad = ~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))
    if bad.any():
        cell = int(np.flatnonzero(bad)[0])
        raise ValueError(f"counts must be non-negative whole numbers; cell {cell} holds "
                         f"{counts[cell]!r}.")
    return counts.astype(np.int64)


def _as_items(items, d: int) -> np.ndarray:
    """One cell index per person as int64, or a ValueError naming the first bad one."""
    items = np.asarray(items)
    if items.ndim != 1:
        raise ValueError(f"items must be a one-dimensional array (one cell index per person); "
                         f"got shape {items.shape}.")
    if items.size and not np.issubdtype(items.dtype, np.integer):
        raise ValueError(f"items must be whole-number cell indices; got dtype {items.dtype}.")
    items = items.astype(np.int64, copy=False)
    bad = (items < 0) | (items >= d)
    if bad.any():
        person = int(np.flatnonzero(bad)[0])
        raise ValueError(f"item {items[person]} of person {person} is outside the domain [0, {d}).")
    return items


def _check_domain(d, owner: str) -> int:
    """The domain size as an int ≥ 2: with one cell there is nothing to hide or estimate."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"{owner} needs a domain of at least 2 cells; got d = {d!r}.")
    return int(d)


def universal_hash(a, b, x, g: int) -> np.ndarray:
    """``((a·x + b) mod P) mod g`` elementwise (broadcasting), P = :data:`HASH_PRIME`.

    With a uniform in [1, P) and b in [0, P) the family is universal: for x ≠ v the pair
    (a·x + b, a·v + b) mod P is uniform over distinct pairs, so (H(x), H(v)) is uniform over [g]²
    up to O(g/P). It is only pairwise independent — three or more hash values of one function are
    structured — which is all the marginal law of every support count needs: for x ≠ v, H(v) is
    then uniform and independent of the report, which is local hashing's q* = 1/g [WBLJ17].
    """
    h = np.multiply(np.asarray(a, dtype=np.int64), np.asarray(x, dtype=np.int64))
    h += np.asarray(b, dtype=np.int64)
    h %= HASH_PRIME
    h %= g
    return h


def random_subsets(rows: int, universe: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` independent uniform samples of k distinct values of [0, universe), shape (rows, k).

    Each row is an *ordered* sample without replacement, so any fixed set of its columns is itself a
    uniform subset (the clients below rely on this). Small k (k² ≤ universe): i.i.d. draws, rows with
    a repeat redrawn — conditioning on distinctness gives exactly the uniform law, and a row is
    accepted with probability ≥ 1/2. Larger k: a partial Fisher–Yates shuffle, vectorised over rows.
    """
    if not 1 <= k <= universe:
        raise ValueError(f"cannot draw {k} distinct values out of {universe}")
    if k * k <= universe:
        out = rng.integers(0, universe, size=(rows, k))
        todo = np.arange(rows)
        while len(todo) and k > 1:
            ordered = np.sort(out[todo], axis=1)
            todo = todo[(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)]
            out[todo] = rng.integers(0, universe, size=(len(todo), k))
        return out
    out = np.empty((rows, k), dtype=np.int64)
    block = max(1, BLOCK_ELEMENTS // universe)
    for start in range(0, rows, block):
        m = min(block, rows - start)
        pool = np.tile(np.arange(universe, dtype=np.int64), (m, 1))
        row = np.arange(m)
        for i in range(k):
            j = rng.integers(i, universe, size=m)
            out[start:start + m, i] = pool[row, j]
            pool[row, j] = pool[row, i]
    return out


class LocalOracle(LocalMechanism):
    """Per-user simulation in batches sized by the report, so memory stays bounded for any d."""

    def report_bytes(self, d: int) -> int:
        """Memory one person's report occupies in ``perturb``'s output."""
        return 8

    def simulate(self, items, d, rng, chunk=None):
        if chunk is None:
            per_person = max(1, self.report_bytes(_check_domain(d, type(self).__name__)))
            chunk = min(SIMULATION_CHUNK, max(1, REPORT_BATCH_BYTES // per_person))
        return super().simulate(items, d, rng, chunk=chunk)


# ---------------------------------------------------------------------------------- pure protocols
class PureProtocol(LocalOracle):
    """A pure LDP protocol [WBLJ17]: reports support cells with probability p* (the sender's own
    cell) or q* (any other), so ``C_v ~ Bin(c_v, p*) + Bin(n − c_v, q*)`` and
    ``ĉ_v = (C_v − n q*)/(p* − q*)`` is unbiased with the exact variance
    ``n q*(1−q*)/(p*−q*)² + c_v (1−p*−q*)/(p*−q*)``: the variance of the two independent binomials
    divided by (p* − q*)²."""

    @abstractmethod
    def support_probabilities(self, d: int) -> tuple[float, float]:
        """(p*, q*) on a domain of d cells: the only place the randomisation strength is derived."""

    def _probabilities(self, d) -> tuple[int, float, float]:
        d = _check_domain(d, type(self).__name__)
        return (d, *self.support_probabilities(d))

    def invert(self, support, n, d):
        """ĉ_v = (C_v − n q*)/(p* − q*) from the support counts C_v."""
        _, p, q = self._probabilities(d)
        estimates = np.array(support, dtype=np.float64)  # one new array, then in place
        estimates -= n * q
        estimates /= p - q
        return estimates

    def estimate(self, statistic, n, d):
        """The statistic is the support counts themselves (a sketch server overrides this)."""
        return self.invert(statistic, n, d)

    def release(self, counts, rng):
        """Support counts drawn as independent ``Bin(c_v, p*) + Bin(n − c_v, q*)`` per cell.

        Every cell's law is exact; the joint law is exact when one report's support indicators are
        independent across cells (unary encoding; local hashing with an idealised hash).
        """
        counts = _as_counts(counts)
        d, p, q = self._probabilities(len(counts))
        live, people = occupied_cells(counts)
        n = int(people.sum())
        # Most cells are empty: one scalar-parameter draw for all of them (faster than an array of
        # parameters), then the non-empty cells are redrawn with their own parameters.
        support = rng.binomial(n, q, size=d)
        support[live] = rng.binomial(n - people, q) + rng.binomial(people, p)
        return self.invert(support, n, d)

    def variance(self, counts, n=None, d=None):
        counts = _as_counts(counts).astype(np.float64)
        n, d = table_size(counts, n, d)
        _, p, q = self._probabilities(d)
        return n * q * (1 - q) / (p - q) ** 2 + counts * (1 - p - q) / (p - q)


@register
class GRR(PureProtocol):
    """Generalised randomised response / direct encoding [War65, KBR16, WBLJ17].

    Client: report the true cell with probability ``p = e^ε/(e^ε + d − 1)``, otherwise one of the
    other d − 1 cells uniformly (each ``q = 1/(e^ε + d − 1)``); p* = p, q* = q. The estimates sum to
    exactly n. The fast release uses the equivalent "keep or uniform" form: keep
    the true cell with probability p − q, otherwise report a uniform cell of all d — so
    ``K_v ~ Bin(c_v, p − q)``, ``R = n − ΣK``, ``U ~ Multinomial(R, 1/d…)``, ``C = K + U``: exactly
    the joint (multinomial) law of per-user GRR, including the negative covariance between cells
    that independent binomials would miss.
    """

    key = "grr"
    name = "Generalised randomised response (direct encoding)"
    references = ("[War65] Warner. Randomized response. JASA 1965.",
                  "[KBR16] Kairouz, Bonawitz, Ramage. Discrete distribution estimation under local "
                  "privacy. ICML 2016.",
                  "[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for "
                  "frequency estimation. USENIX Security 2017.")

    def support_probabilities(self, d):
        e = math.exp(self.epsilon)
        return e / (e + d - 1), 1 / (e + d - 1)

    def perturb(self, items, d, rng):
        """Each person's report: one cell index ``y`` (``{"y": array}``)."""
        d, p, _ = self._probabilities(d)
        items = _as_items(items, d)
        other = rng.integers(0, d - 1, size=len(items))
        other += other >= items           # uniform over the d − 1 cells other than one's own
        return {"y": np.where(rng.random(len(items)) < p, items, other)}

    def accumulate(self, reports, d):
        return np.bincount(np.asarray(reports["y"], dtype=np.int64), minlength=d)

    def release(self, counts, rng):
        """Exact "keep or uniform" sampler of the support counts (see the class docstring)."""
        counts = _as_counts(counts)
        d, p, q = self._probabilities(len(counts))
        live, people = occupied_cells(counts)
        n = int(people.sum())
        support = np.zeros(d, dtype=np.int64)
        support[live] = rng.binomial(people, p - q)
        uniform = n - int(support.sum())
        if d <= uniform:   # d binomials …
            support += rng.multinomial(uniform, np.full(d, 1.0 / d))
        else:              # … or one draw per uniform reporter, whichever is fewer
            support += np.bincount(rng.integers(0, d, size=uniform), minlength=d)
        return self.invert(support, n, d)

    def covariance(self, counts, u: int, v: int) -> float:
        """Cov(ĉ_u, ĉ_v) for u ≠ v: −[c_u p q + c_v p q + (n − c_u − c_v) q²]/(p − q)², the sum of
        each person's multinomial covariance −P[report u]·P[report v], divided by (p − q)²."""
        counts = _as_counts(counts).astype(np.float64)
        _, p, q = self._probabilities(len(counts))
        cu, cv, n = counts[u], counts[v], counts.sum()
        return float(-(cu * p * q + cv * p * q + (n - cu - cv) * q * q) / (p - q) ** 2)

    def bits_per_user(self, d):
        return float(math.ceil(math.log2(_check_domain(d, "GRR"))))

    def explain(self):
        e = math.exp(self.epsilon)
        return (
            "**Generalised randomised response (direct encoding).** Each commuter sends one cell: "
            "their true commute with probability $p$, otherwise one of the other $d-1$ cells at "
            "random.\n\n"
            "$$p = \\frac{e^\\varepsilon}{e^\\varepsilon + d - 1},\\quad "
            "q = \\frac{1}{e^\\varepsilon + d - 1},\\quad "
            "\\hat c_v = \\frac{C_v - nq}{p - q}$$\n\n"
            "$$\\operatorname{Var}[\\hat c_v] = n\\,\\frac{e^\\varepsilon + d - 2}{(e^\\varepsilon-1)^2}"
            " + c_v\\,\\frac{d-2}{e^\\varepsilon-1}$$\n\n"
            f"Here $e^\\varepsilon = {e:.4g}$. The estimates always add up to $n$. "
            f"Communication: $\\lceil\\log_2 d\\rceil$ bits. Guarantee: ε-LDP with ε = {self.epsilon:g}."
            "\n\nIn plain words: the true answer only gets a head start of $e^\\varepsilon$ over each "
            "other cell, so with a thousand cells almost every report is random unless ε is large; "
            "it is the best choice when $d < 3e^\\varepsilon + 2$.")


class UnaryEncoding(PureProtocol):
    """Unary encoding: one-hot encode the cell in d bits and flip every bit independently; the true
    bit is 1 with probability p, every other bit with probability q (C_v = number of 1s in column v).
    Bits are independent across cells, so the fast release of independent binomials is exact jointly.
    """

    def perturb(self, items, d, rng):
        """Each person's report: a row of d bits (``{"bits": bool array (people, d)}``)."""
        d, p, q = self._probabilities(d)
        items = _as_items(items, d)
        m = len(items)
        bits = np.empty((m, d), dtype=bool)
        rows = max(1, BLOCK_ELEMENTS // d)
        for start in range(0, m, rows):
            block = bits[start:start + rows]
            np.less(rng.random(block.shape), q, out=block)
        bits[np.arange(m), items] = rng.random(m) < p
        return {"bits": bits}

    def accumulate(self, reports, d):
        return np.asarray(reports["bits"]).sum(axis=0, dtype=np.int64)

    def report_bytes(self, d):
        return d

    def bits_per_user(self, d):
        return float(_check_domain(d, type(self).__name__))

    def _explain(self, title, probabilities, variance, plain):
        p, q = self.support_probabilities(2)
        return (
            f"**{title}** Each commuter sends a row of $d$ bits, one per cell: the bit of their "
            "true commute is 1 with probability $p$, every other bit with probability $q$, all "
            "independently.\n\n"
            f"$${probabilities},\\quad \\hat c_v = \\frac{{C_v - nq}}{{p - q}}$$\n\n"
            f"$$\\operatorname{{Var}}[\\hat c_v] = {variance}$$\n\n"
            f"Here $p = {p:.4g}$, $q = {q:.4g}$; $C_v$ counts the 1s reported for cell $v$. "
            f"Communication: $d$ bits. Guarantee: ε-LDP with ε = {self.epsilon:g}.\n\n"
            f"In plain words: {plain}")


@register
class SUE(UnaryEncoding):
    """Symmetric unary encoding = basic RAPPOR [EPK14, WBLJ17]:
    ``p = e^{ε/2}/(e^{ε/2} + 1)``, ``q = 1 − p``; ``Var[ĉ_v] = n e^{ε/2}/(e^{ε/2} − 1)²``."""

    key = "sue"
    name = "Symmetric unary encoding (basic RAPPOR)"
    references = ("[EPK14] Erlingsson, Pihur, Korolova. RAPPOR: randomized aggregatable "
                  "privacy-preserving ordinal response. CCS 2014.",
                  "[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for "
                  "frequency estimation. USENIX Security 2017.")

    def support_probabilities(self, d):
        half = math.exp(self.epsilon / 2)
        return half / (half + 1), 1 / (half + 1)

    def explain(self):
        return self._explain(
            "Symmetric unary encoding (basic RAPPOR).",
            "p = \\frac{e^{\\varepsilon/2}}{e^{\\varepsilon/2}+1},\\quad q = 1 - p",
            "n\\,\\frac{e^{\\varepsilon/2}}{(e^{\\varepsilon/2}-1)^2}",
            "every bit is a coin that lands on the truth a bit more often than not; changing the "
            "commute changes two bits, each worth half the budget.")


@register
class OUE(UnaryEncoding):
    """Optimised unary encoding [WBLJ17]: ``p = 1/2``, ``q = 1/(e^ε + 1)``;
    ``Var[ĉ_v] = 4n e^ε/(e^ε − 1)² + c_v``. The true bit is drawn afresh (not OR-ed with the noise
    bit: the pure-LDP library's ``UEClient`` did that before its commit fc622e3, "Fix perturb bug
    in UEClient", which raised the true privacy loss to ln(e^ε + 2))."""

    key = "oue"
    name = "Optimised unary encoding"
    references = ("[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for "
                  "frequency estimation. USENIX Security 2017.",)

    def support_probabilities(self, d):
        return 0.5, 1 / (math.exp(self.epsilon) + 1)

    def explain(self):
        return self._explain(
            "Optimised unary encoding.",
            "p = \\tfrac12,\\quad q = \\frac{1}{e^\\varepsilon+1}",
            "\\frac{4n\\,e^\\varepsilon}{(e^\\varepsilon-1)^2} + c_v",
            "the true bit is a fair coin, but the thousands of other bits are rarely switched on, so "
            "the false support that the server must subtract is small.")


class LocalHashing(PureProtocol):
    """Local hashing [BS15, WBLJ17]: each person draws a hash function H: [d] → [g] with a seed of
    their own, runs GRR over [g] on H(x) (keep with p = e^ε/(e^ε + g − 1), else one of the other
    g − 1 buckets) and sends (seed, y). A report supports {v : H(v) = y}: p* = p, q* = 1/g.

    Exactness. ``release`` draws ``Bin(c_v, p) + Bin(n − c_v, 1/g)`` independently per cell, which is
    the exact joint law under an *idealised, fully random* hash family drawn independently by each
    person (one report's support indicators are then independent). ``perturb``/``simulate`` use
    a real seeded family, :func:`universal_hash` with per-person (a, b): it is only (approximately)
    pairwise independent, so the per-user simulation reproduces every cell's law (up to O(g/2³¹))
    but not the higher-order dependence of the idealised protocol — it is the
    protocol as deployable, the fast release the protocol as analysed.
    """

    references = ("[BS15] Bassily, Smith. Local, private, efficient protocols for succinct "
                  "histograms. STOC 2015.",
                  "[WBLJ17] Wang, Blocki, Li, Jha. Locally differentially private protocols for "
                  "frequency estimation. USENIX Security 2017.")

    @property
    @abstractmethod
    def hash_range(self) -> int:
        """g, the number of buckets the cells are hashed into."""

    def support_probabilities(self, d):
        e, g = math.exp(self.epsilon), self.hash_range
        return e / (e + g - 1), 1 / g

    def perturb(self, items, d, rng):
        """Each person's report: their hash seed (``a``, ``b``) and bucket ``y`` (arrays). Only
        this deployable hash limits the domain (cell indices below 2³¹ − 1); the protocol as
        analysed — the fast and sparse releases, the variance — has no such limit."""
        d, p, _ = self._probabilities(d)
        if d >= HASH_PRIME:
            raise ValueError(f"{type(self).__name__} hashes cell indices modulo {HASH_PRIME}; the "
                             f"domain of {d} cells is too large for the per-user protocol.")
        items = _as_items(items, d)
        m, g = len(items), self.hash_range
        a = rng.integers(1, HASH_PRIME, size=m)
        b = rng.integers(0, HASH_PRIME, size=m)
        bucket = universal_hash(a, b, items, g)
        other = rng.integers(0, g - 1, size=m)
        other += other >= bucket          # uniform over the g − 1 other buckets
        return {"a": a, "b": b, "y": np.where(rng.random(m) < p, bucket, other)}

    def accumulate(self, reports, d):
        """C_v = #{reports with H(v) = y}: every report hashed against every cell, in blocks of
        at most :data:`BLOCK_ELEMENTS` (report, cell) pairs — O(n·d) work, O(block) memory."""
        a, b, y = (np.asarray(reports[key], dtype=np.int64) for key in ("a", "b", "y"))
        support = np.zeros(d, dtype=np.int64)
        cols = min(d, BLOCK_ELEMENTS)
        rows = max(1, BLOCK_ELEMENTS // cols)
        for c0 in range(0, d, cols):
            cells = np.arange(c0, min(c0 + cols, d), dtype=np.int64)
            for r0 in range(0, len(y), rows):
                r = slice(r0, r0 + rows)
                hits = universal_hash(a[r, None], b[r, None], cells, self.hash_range) == y[r, None]
                support[c0:c0 + len(cells)] += np.count_nonzero(hits, axis=0)
        return support

    def report_bytes(self, d):
        return 24

    def bits_per_user(self, d):
        _check_domain(d, type(self).__name__)
        return float(math.ceil(math.log2(self.hash_range)) + HASH_SEED_BITS)

    def _explain(self, title, plain):
        e, g = math.exp(self.epsilon), self.hash_range
        p = e / (e + g - 1)
        return (
            f"**{title}** Each commuter picks a random hash function that maps the $d$ cells onto "
            f"$g = {g}$ buckets, hashes their commute, and reports the bucket by randomised response "
            "over the $g$ buckets, together with the seed of their hash function. A report supports "
            "every cell that hashes to the reported bucket.\n\n"
            f"$$p = \\frac{{e^\\varepsilon}}{{e^\\varepsilon + g - 1}} = {p:.4g},\\quad "
            f"q^* = \\frac1g = {1 / g:.4g},\\quad "
            "\\hat c_v = \\frac{C_v - n/g}{p - 1/g}$$\n\n"
            "$$\\operatorname{Var}[\\hat c_v] = n\\,\\frac{(e^\\varepsilon+g-1)^2}"
            "{(e^\\varepsilon-1)^2(g-1)} + c_v\\,\\frac{(g-1)^2 - e^\\varepsilon}"
            "{(e^\\varepsilon-1)(g-1)}$$\n\n"
            f"Communication: $\\lceil\\log_2 g\\rceil$ bits plus a {HASH_SEED_BITS}-bit seed. The "
            "server must hash every cell for every report ($O(nd)$), which is why the fast release "
            "draws the counts directly (exact for an idealised random hash). "
            f"Guarantee: ε-LDP with ε = {self.epsilon:g}.\n\n"
            f"In plain words: {plain}")


@register
class BLH(LocalHashing):
    """Binary local hashing [BS15]: g = 2; ``Var[ĉ_v] = n(e^ε + 1)²/(e^ε − 1)² − c_v``."""

    key = "blh"
    name = "Binary local hashing"

    @property
    def hash_range(self):
        return 2

    def explain(self):
        return self._explain("Binary local hashing.",
                             "each commuter says only 'heads' or 'tails' for a coin that their "
                             "commute flipped; one bit is cheap to send but carries little signal.")


@register
class OLH(LocalHashing):
    """Optimised local hashing [WBLJ17]: g = round(e^ε) + 1 (as pure-LDP and multi-freq-ldpy);
    at g = e^ε + 1 the variance equals OUE's, 4n e^ε/(e^ε − 1)² + c_v."""

    key = "olh"
    name = "Optimised local hashing"

    @property
    def hash_range(self):
        return int(round(math.exp(self.epsilon))) + 1

    def explain(self):
        return self._explain("Optimised local hashing.",
                             "the number of buckets grows with ε so that the answer keeps as much "
                             "signal as unary encoding while sending only a few bits.")


@register
class SubsetSelection(PureProtocol):
    """k-subset selection [WHWNXYLQ16, YB18]: k = max(1, round(d/(e^ε + 1))); the report is a set of
    k cells, P[S] ∝ e^ε if it contains the true cell and 1 otherwise. Equivalently: with probability
    p* = k e^ε/(k e^ε + d − k) the true cell plus k − 1 uniform others, else k uniform others.
    ``q* = [k(k−1)e^ε + k(d−k)] / [(d−1)(k e^ε + d − k)]``; variance by eq. (1).
    """

    key = "ss"
    name = "Subset selection"
    approximation = ("The fast release draws each cell's support count independently: every cell's "
                     "estimate has exactly the right distribution, but the negative correlation "
                     "between cells (each report names exactly k cells) is not reproduced, so sums "
                     "over several cells vary slightly differently than in the real protocol.")
    references = ("[WHWNXYLQ16] Wang, Huang, Wang, Nie, Xu, Yang, Li, Qiao. Mutual information "
                  "optimally local private discrete distribution estimation. arXiv:1607.08025, 2016.",
                  "[YB18] Ye, Barg. Optimal schemes for discrete distribution estimation under "
                  "locally differential privacy. IEEE Trans. Inf. Theory 2018.")

    def subset_size(self, d: int) -> int:
        """k, the number of cells in each report."""
        return max(1, int(round(d / (math.exp(self.epsilon) + 1))))

    def support_probabilities(self, d):
        e, k = math.exp(self.epsilon), self.subset_size(d)
        total = k * e + d - k
        return k * e / total, (k * (k - 1) * e + k * (d - k)) / ((d - 1) * total)

    def protocol_sum_variance(self, cells, total, n, d) -> np.ndarray:
        """Var of Σ_{v∈S} ĉ_v under the real protocol (``perturb``), over a set S of ``cells`` = m
        cells holding ``total`` = t people: Σ over people of Var K_j/(p* − q*)², K_j the number
        of the report's cells in S. With probability p* the report is the own cell plus k − 1
        uniform others of the d − 1, else k of them; the others in S are hypergeometric
        (a = m − 1 of the d − 1 in S for an owner in S, a = m otherwise). Smaller than the
        independent-cell sum of the fast release (``release``), whose cells do not share a
        report: the k cells of one report are negatively correlated."""
        d, p, q = self._probabilities(d)
        k, others = self.subset_size(d), d - 1
        m = np.asarray(cells, dtype=float)
        t = np.asarray(total, dtype=float)

        def moments(draws, a):   # E H, E H² of a hypergeometric count
            share = a / others
            spread = (others - draws) / (others - 1) if others > 1 else 0.0
            mean = draws * share
            return mean, draws * share * (1 - share) * spread + mean ** 2

        def report_variance(a, own):
            short, short2 = moments(k - 1, a)
            full, full2 = moments(k, a)
            mean = p * (own + short) + (1 - p) * full
            second = p * (own + 2 * own * short + short2) + (1 - p) * full2
            return second - mean ** 2

        inside, outside = report_variance(m - 1, 1.0), report_variance(m, 0.0)
        return (t * inside + (n - t) * outside) / (p - q) ** 2

    def perturb(self, items, d, rng):
        """Each person's report: k distinct cells (``{"subset": int array (people, k)}``)."""
        d, p, _ = self._probabilities(d)
        items = _as_items(items, d)
        k = self.subset_size(d)
        subset = random_subsets(len(items), d - 1, k, rng)     # k of the d − 1 other cells, ordered
        subset += subset >= items[:, None]
        with_own = rng.random(len(items)) < p
        subset[with_own, 0] = items[with_own]                 # own cell + the other k − 1
        return {"subset": subset}

    def accumulate(self, reports, d):
        return np.bincount(np.asarray(reports["subset"], dtype=np.int64).ravel(), minlength=d)

    def report_bytes(self, d):
        return 8 * self.subset_size(d)

    def bits_per_user(self, d):
        d = _check_domain(d, "SubsetSelection")
        k = self.subset_size(d)
        log_choose = (math.lgamma(d + 1) - math.lgamma(k + 1) - math.lgamma(d - k + 1)) / math.log(2)
        return float(math.ceil(log_choose - 1e-9))

    def explain(self):
        e = math.exp(self.epsilon)
        return (
            "**Subset selection.** Each commuter sends a set of $k$ cells; sets that contain their "
            "true commute are $e^\\varepsilon$ times as likely as sets that do not.\n\n"
            f"$$k = \\max\\!\\left(1, \\operatorname{{round}}\\frac{{d}}{{e^\\varepsilon+1}}\\right)"
            f" = \\max(1, \\operatorname{{round}}(d/{e + 1:.4g})),\\quad "
            "p^* = \\frac{k e^\\varepsilon}{k e^\\varepsilon + d - k},\\quad "
            "q^* = \\frac{k(k-1)e^\\varepsilon + k(d-k)}{(d-1)(k e^\\varepsilon + d - k)}$$\n\n"
            "$$\\hat c_v = \\frac{C_v - nq^*}{p^* - q^*},\\quad \\operatorname{Var}[\\hat c_v] = "
            "\\frac{nq^*(1-q^*)}{(p^*-q^*)^2} + c_v\\frac{1-p^*-q^*}{p^*-q^*}$$\n\n"
            "Communication: $\\lceil\\log_2\\binom dk\\rceil$ bits. "
            f"Guarantee: ε-LDP with ε = {self.epsilon:g}. Fast release: {self.approximation}\n\n"
            "In plain words: hiding the commute inside a crowd of $k$ cells lets small ε keep more "
            "signal than naming a single cell; near-optimal accuracy for every ε.")


# -------------------------------------------------------------------------------------- dBitFlip
@register
class DBitFlip(LocalOracle):
    """Microsoft's dBitFlip [DKY17] with one bucket per cell (k_b = d).

    Each person samples d_b distinct cells uniformly and sends, for each, a bit that is 1 with
    probability a/(a + 1) (a = e^{ε/2}) for their own cell and 1/(a + 1) for any other. The
    server estimates ``ĉ_v = (d/d_b) Σ_{reports sampling v} (b(a+1) − 1)/(a − 1)``, unbiased with
    ``Var = n (d/d_b) a/(a − 1)² + c_v (d/d_b − 1)``: one sampled bit's term (b(a+1) − 1)/(a − 1)
    has variance a/(a − 1)² and mean 1 for the person's own cell, 0 otherwise; sampling the cell
    with probability d_b/d and scaling by d/d_b multiplies the variance by d/d_b and adds
    d/d_b − 1 for each owner. d_b = d is SUE.
    With d_b = 1 only one bit can ever depend on the commute, so the loss is ε/2, not ε.

    Statistic: ``[ones, sampled]`` (shape (2, d)), the 1-bits and the reports per cell.
    """

    key = "dbitflip"
    name = "dBitFlip (Microsoft)"
    params = (EPSILON,
              Param("d_b", "Cells reported per commuter (d_b)", 1, int, low=1, high=10_000_000,
                    help="How many randomly chosen cells each commuter reports one bit for "
                         "(1 ≤ d_b ≤ d). Variance scales with d/d_b; d_b = d is symmetric unary "
                         "encoding. Low-population experiments with dBitFlip used d_b = 1, 2 "
                         "and 4."))
    approximation = ("The fast release draws each cell's counts independently: every cell's estimate "
                     "has exactly the right distribution, but the correlation between cells (each "
                     "commuter samples exactly d_b cells) is not reproduced, so sums over several "
                     "cells vary slightly differently than in the real protocol.")
    references = ("[DKY17] Ding, Kulkarni, Yekhanin. Collecting telemetry data privately. "
                  "NeurIPS 2017.",)

    def bit_probabilities(self) -> tuple[float, float]:
        """(probability of a 1 for one's own cell, for any other cell): a/(a+1), 1/(a+1)."""
        a = math.exp(self.epsilon / 2)
        return a / (a + 1), 1 / (a + 1)

    def _sampling(self, d) -> tuple[int, float]:
        """(d, d_b/d) after checking that d_b fits the domain."""
        d = _check_domain(d, "DBitFlip")
        if self.d_b > d:
            raise ValueError(f"The 'd_b' parameter of DBitFlip ({self.d_b}) exceeds the number of "
                             f"cells d = {d}: each commuter reports at most one bit per cell. "
                             f"Choose d_b between 1 and {d}.")
        return d, self.d_b / d

    def perturb(self, items, d, rng):
        """Each person's report: sampled cells ``j`` and their bits (arrays (people, d_b))."""
        d, _ = self._sampling(d)
        items = _as_items(items, d)
        own, other = self.bit_probabilities()
        j = random_subsets(len(items), d, self.d_b, rng)
        bits = rng.random(j.shape) < np.where(j == items[:, None], own, other)
        return {"j": j, "bits": bits}

    def accumulate(self, reports, d):
        j, bits = np.asarray(reports["j"], dtype=np.int64), np.asarray(reports["bits"], dtype=bool)
        return np.stack([np.bincount(j[bits], minlength=d), np.bincount(j.ravel(), minlength=d)])

    def report_bytes(self, d):
        return 9 * self.d_b

    def estimate(self, statistic, n, d):
        d, _ = self._sampling(d)
        ones, sampled = np.asarray(statistic, dtype=np.float64)
        a = math.exp(self.epsilon / 2)
        return (d / self.d_b) * (ones * (a + 1) - sampled) / (a - 1)

    def release(self, counts, rng):
        """Per cell: reports sampling it ``Bin(c_v, d_b/d) + Bin(n − c_v, d_b/d)``, and their 1s
        ``Bin(N_own, a/(a+1)) + Bin(N_other, 1/(a+1))`` — exact marginals, not the joint law (each
        person samples exactly d_b cells)."""
        counts = _as_counts(counts)
        d, rate = self._sampling(len(counts))
        own, other = self.bit_probabilities()
        live, people = occupied_cells(counts)
        n = int(people.sum())
        sampled = rng.binomial(n, rate, size=d)     # as if every cell were empty, then
        sampled[live] = rng.binomial(n - people, rate)  # the non-empty cells are redrawn
        ones = rng.binomial(sampled, other)
        sampled_own = rng.binomial(people, rate)
        ones[live] += rng.binomial(sampled_own, own)
        sampled[live] += sampled_own
        return self.estimate(np.stack([ones, sampled]), n, d)

    def variance(self, counts, n=None, d=None):
        counts = _as_counts(counts).astype(np.float64)
        n, d = table_size(counts, n, d)
        d, rate = self._sampling(d)
        a = math.exp(self.epsilon / 2)
        return n / rate * a / (a - 1) ** 2 + counts * (1 / rate - 1)

    def bits_per_user(self, d):
        d, _ = self._sampling(d)
        return float(self.d_b * (1 + math.ceil(math.log2(d))))

    def explain(self):
        a = math.exp(self.epsilon / 2)
        return (
            "**dBitFlip (Microsoft).** Each commuter picks $d_b$ cells at random and sends one bit "
            "for each: 1 with probability $\\frac{a}{a+1}$ if it is their own commute, "
            f"$\\frac{{1}}{{a+1}}$ otherwise, with $a = e^{{\\varepsilon/2}} = {a:.4g}$; here "
            f"$d_b = {self.d_b}$.\n\n"
            "$$\\hat c_v = \\frac{d}{d_b}\\sum_{\\text{reports sampling } v}\\frac{b\\,(a+1) - 1}{a-1},"
            "\\quad \\operatorname{Var}[\\hat c_v] = n\\,\\frac{d}{d_b}\\,\\frac{a}{(a-1)^2} + "
            "c_v\\left(\\frac{d}{d_b} - 1\\right)$$\n\n"
            "Communication: $d_b$ bits plus the $d_b$ cell indices. "
            f"Guarantee: ε-LDP with ε = {self.epsilon:g} (ε/2 when $d_b = 1$). "
            f"Fast release: {self.approximation}\n\n"
            "In plain words: each commuter answers 'is this my commute?' for a few random cells, "
            "with a fib now and then; few bits to send, but each cell hears from only a fraction "
            "$d_b/d$ of commuters, so the noise grows with $d/d_b$.")
