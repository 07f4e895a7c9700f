"""Exact output distributions P[x → y] of the local randomisers, written from each mechanism's
published definition independently of dpcore's sampling code, and one registry-level way to get them.

:func:`output_distribution` looks a mechanism up by its exact class in :data:`BY_CLASS` and returns
the matrix over an enumerable report space together with the privacy loss the mechanism is known to
attain. A local mechanism without an entry makes it raise, so a new local randomiser cannot skip
the ε-LDP audit of the contract tests: its author adds its definition here.

Definitions: GRR [War65, KBR16]; unary encoding and local hashing [WBLJ17] (local hashing over a
fully random hash family, as analysed); subset selection [WHWNXYLQ16, YB18]; dBitFlip [DKY17];
Hadamard response [ASZ19] and the Hadamard mechanism [CMM21], the Hadamard matrices taken from
``scipy.linalg.hadamard``; Apple's CMS and HCMS [Apple17] given their public hash family.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations, product
from math import comb, exp

import numpy as np
from scipy.linalg import hadamard

from dpcore.mechanisms.hadamard import HadamardMechanism, HadamardResponse
from dpcore.mechanisms.local import BLH, GRR, OLH, OUE, SUE, DBitFlip, SubsetSelection
from dpcore.mechanisms.sketches import CMS, HCMS


# ------------------------------------------------------------------------ frequency oracles
def grr_distribution(eps, d):
    """Codes: the reported cell."""
    e = exp(eps)
    return np.where(np.eye(d, dtype=bool), e / (e + d - 1), 1 / (e + d - 1))


def ue_bit_probabilities(key, eps):
    if key == "sue":
        a = exp(eps / 2)
        return a / (a + 1), 1 / (a + 1)
    return 0.5, 1 / (exp(eps) + 1)


def ue_distribution(key, eps, d):
    """Codes: the bit vector as an integer (bit j = cell j), probabilities as per-bit products."""
    p, q = ue_bit_probabilities(key, eps)
    bits = (np.arange(2**d)[:, None] >> np.arange(d)) & 1        # (codes, cells)
    other = np.prod(np.where(bits == 1, q, 1 - q), axis=1)
    own = np.where(bits == 1, p, 1 - p) / np.where(bits == 1, q, 1 - q)
    return other[None, :] * own.T                                 # (x, code)


def hash_range(key, eps):
    return 2 if key == "blh" else int(round(exp(eps))) + 1


def lh_distribution(key, eps, d):
    """Fully random hash family: codes = (every function H: [d] → [g], reported bucket y)."""
    e, g = exp(eps), hash_range(key, eps)
    functions = np.array(list(product(range(g), repeat=d)))       # (g^d, d)
    y = np.arange(g)
    keep = functions[:, :, None] == y[None, None, :]              # (H, x, y): y == H(x)
    grr = np.where(keep, e / (e + g - 1), 1 / (e + g - 1)) / g**d
    return grr.transpose(1, 0, 2).reshape(d, -1), functions


def ss_subset_size(eps, d):
    return max(1, round(d / (exp(eps) + 1)))


def ss_distribution(eps, d):
    """Codes: the reported subset as a bit mask; P[S | x] ∝ e^ε if x ∈ S, 1 otherwise."""
    e, k = exp(eps), ss_subset_size(eps, d)
    P = np.zeros((d, 2**d))
    for subset in combinations(range(d), k):
        mask = sum(1 << j for j in subset)
        for x in range(d):
            P[x, mask] = e if x in subset else 1.0
    return P / P.sum(axis=1, keepdims=True)


def dbitflip_distribution(eps, d, d_b):
    """Codes: (sampled cells J as a mask) · 2^d + (mask of the cells of J whose bit is 1)."""
    a = exp(eps / 2)
    P = np.zeros((d, 4**d))
    for sampled in combinations(range(d), d_b):
        jmask = sum(1 << j for j in sampled)
        for ones in product((0, 1), repeat=d_b):
            bmask = sum(1 << j for j, b in zip(sampled, ones) if b)
            for x in range(d):
                prob = 1 / comb(d, d_b)
                for j, b in zip(sampled, ones):
                    one = a / (a + 1) if j == x else 1 / (a + 1)
                    prob *= one if b else 1 - one
                P[x, jmask * 2**d + bmask] = prob
    return P


# --------------------------------------------------------------------------------- Hadamard
def pow2_at_least(value):
    k = 1
    while k < value:
        k *= 2
    return k


def hr_blocks(d, epsilon):
    """(B, b) of the blocked form, by counting powers of two rather than taking logarithms."""
    limit = min(2 * d, math.exp(epsilon))
    blocks = 1
    while 2 * blocks <= limit:
        blocks *= 2
    return blocks, pow2_at_least(d / blocks + 1)


def hr_small_matrix(d, epsilon):
    """P[x, y] of the ε ≤ 1 form: 2E/(K(1+E)) where H_K[x+1, y] = +1, 2/(K(1+E)) elsewhere."""
    e, K = math.exp(epsilon), pow2_at_least(d + 1)
    plus = hadamard(K)[1:d + 1] == 1
    return np.where(plus, 2 * e / (K * (1 + e)), 2 / (K * (1 + e)))


def hr_block_matrix(d, epsilon, permutation):
    """P[x, y] of the blocked form given the permutation: 2E/(bZ) on C_{π(x)}, 2/(bZ) elsewhere."""
    e = math.exp(epsilon)
    B, b = hr_blocks(d, epsilon)
    z = 2 * B - 1 + e
    P = np.full((d, B * b), 2 / (b * z))
    Hb = hadamard(b)
    for x in range(d):
        block, row = divmod(permutation[x], b - 1)
        in_block = slice(block * b, (block + 1) * b)
        P[x, in_block] = np.where(Hb[row + 1] == 1, 2 * e / (b * z), 2 / (b * z))
    return P


def hm_outputs(D, t):
    """Every report (j_1..j_t, s_1..s_t) in a fixed order; the index of report (j, s) is
    (Σ_k j_k D^k)·2^t + Σ_k [s_k = −1] 2^k."""
    js = np.array(list(itertools.product(range(D), repeat=t)))[:, ::-1]       # j_1 varies fastest
    bits = (np.arange(2**t)[:, None] >> np.arange(t)) & 1
    j = np.repeat(js, 2**t, axis=0)
    s = 1 - 2 * np.tile(bits, (len(js), 1))
    return j, s


def hm_index(j, s, D):
    t = j.shape[1]
    return (j * D ** np.arange(t)).sum(axis=1) * 2**t + ((s < 0) * 2 ** np.arange(t)).sum(axis=1)


def hm_matrix(d, epsilon, t):
    """P[x, (j, s)] = D^{-t} (p_t if s is x's true sign pattern at j, else (1 − p_t)/(2^t − 1))."""
    D = pow2_at_least(d)
    e = math.exp(epsilon)
    keep = e / (e + 2**t - 1)
    j, s = hm_outputs(D, t)
    H = hadamard(D)
    truth = np.stack([(H[x][j] == s).all(axis=1) for x in range(d)])
    return np.where(truth, keep, (1 - keep) / (2**t - 1)) / D**t


# --------------------------------------------------------------------------- Apple sketches
def sketch_hash_table(coefficients, m, d):
    """h_l(v) = ((a v² + b v + c) mod (2³¹ − 1)) mod m for every row l and cell v, in exact Python
    integers (rows × cells)."""
    prime = 2**31 - 1
    return np.array([[((int(a) * v * v + int(b) * v + int(c)) % prime) % m for v in range(d)]
                     for a, b, c in coefficients], dtype=np.int64)


def cms_matrix(eps, d, table):
    """P[x, (j, w)] of CMS given the public hashes ``table`` (k × d): w is the d-bit pattern of the
    sent vector at the columns h_j(0), …, h_j(d−1) (bit v = 1 when ṽ[h_j(v)] = +1).

    The sent vector's other m − |{h_j(v)}| entries are i.i.d. Bernoulli(1/(1+e^{ε/2})) for every x
    and independent of these, so summing them out leaves every ratio P[x→y]/P[x'→y] unchanged:
    this matrix attains exactly the largest ratio of the full (j, ṽ) report space."""
    a = exp(eps / 2)
    p, q = a / (a + 1), 1 / (a + 1)
    k = len(table)
    patterns = (np.arange(2**d)[:, None] >> np.arange(d)) & 1          # (w, v)
    P = np.zeros((d, k, 2**d))
    for j, row in enumerate(table):
        columns = np.unique(row)
        first = np.array([np.flatnonzero(row == u)[0] for u in columns])
        # w must give one value per column: cells sharing a column see the same entry
        consistent = (patterns == patterns[:, first][:, np.searchsorted(columns, row)]).all(axis=1)
        plus = patterns[:, first] == 1                                  # (w, column)
        for x in range(d):
            own = columns == row[x]
            prob = np.where(plus, np.where(own, p, q), np.where(own, 1 - p, 1 - q))
            P[x, j] = np.where(consistent, prob.prod(axis=1), 0.0) / k
    return P.reshape(d, -1)


def hcms_matrix(eps, d, table, m):
    """P[x, (j, s, b)] of HCMS given the public hashes: s is the sign pattern
    (H_m[h_j(v), l])_v of the column l sent, b the bit sent. Columns l with the same pattern have
    the same probability under every x, so merging them keeps every ratio:
    P = N_{j,s}/(k m) · (e^ε/(1+e^ε) if b = s_x else 1/(1+e^ε))."""
    e = exp(eps)
    k, H = len(table), hadamard(m)
    P = np.zeros((d, k, 2**d, 2))
    for j, row in enumerate(table):
        code = ((H[row] < 0).astype(np.int64) << np.arange(d)[:, None]).sum(axis=0)   # per l
        share = np.bincount(code, minlength=2**d) / (k * m)
        minus = (np.arange(2**d)[:, None] >> np.arange(d)) & 1          # s_v = −1
        for x in range(d):
            agree_plus = minus[:, x] == 0                               # b = +1 equals s_x
            P[x, j, :, 0] = share * np.where(agree_plus, e, 1) / (1 + e)
            P[x, j, :, 1] = share * np.where(agree_plus, 1, e) / (1 + e)
    return P.reshape(d, -1)


# ------------------------------------------------------------------------- registry-level view
@dataclass(frozen=True)
class Definition:
    """A local mechanism on d cells as its definition states it.

    ``P[x, y]``: probability that a person in cell x sends report y; ``loss``: the largest
    ln P[x→y]/P[x'→y] the mechanism is known to attain; ``encode``: a code for each report its real
    client (``perturb``, given the public randomness ``public``) returns — the report's column of P,
    or, when ``columns`` is given, a coarser code, ``columns[y]`` being the code of column y (for a
    client that is only meant to match part of P's law).
    """

    P: np.ndarray
    loss: float
    encode: Callable[[dict], np.ndarray]
    public: dict = field(default_factory=dict)
    columns: np.ndarray | None = None

    def code_probabilities(self) -> np.ndarray:
        """P[x, code]: P itself, or P summed over the columns sharing a code."""
        if self.columns is None:
            return self.P
        size = int(self.columns.max()) + 1
        return np.stack([np.bincount(self.columns, weights=row, minlength=size) for row in self.P])


def bits_to_codes(bits) -> np.ndarray:
    """A row of d bits as the integer with bit j = cell j."""
    bits = np.asarray(bits, dtype=np.int64)
    return (bits << np.arange(bits.shape[1])).sum(axis=1)


#: Seed of the public permutation of blocked Hadamard response in the audit (any fixed one: the
#: mechanism is ε-LDP for every permutation, which is public and independent of the data).
HR_PERMUTATION_SEED = 5
def _unary(key):
    return lambda m, d: Definition(ue_distribution(key, m.epsilon, d), m.epsilon,
                                   lambda r: bits_to_codes(r["bits"]))


def _hashing(key):
    """The deployable hash family ((a·x + b) mod (2³¹ − 1)) mod g is only pairwise independent, so
    the real client is held to the joint law of (H(v), y) for the last cell v, which every sender's
    (H(x), H(v)) pair fixes — not to the fully random family's law of the whole function."""
    def definition(m, d):
        g = hash_range(key, m.epsilon)
        P, functions = lh_distribution(key, m.epsilon, d)
        columns = (functions[:, d - 1, None] * g + np.arange(g)).ravel()   # (H, y) → H(v)·g + y

        def encode(r):
            a, b = np.asarray(r["a"], dtype=np.int64), np.asarray(r["b"], dtype=np.int64)
            return (a * (d - 1) + b) % (2**31 - 1) % g * g + np.asarray(r["y"])
        return Definition(P, m.epsilon, encode, columns=columns)
    return definition


def _dbitflip(m, d):
    def encode(r):
        j, bits = np.asarray(r["j"], dtype=np.int64), np.asarray(r["bits"])
        return (1 << j).sum(axis=1) * 2**d + ((1 << j) * bits).sum(axis=1)
    # With one sampled cell only one bit can depend on the commute: the loss is ε/2 [DKY17].
    loss = m.epsilon / 2 if m.d_b == 1 else m.epsilon
    return Definition(dbitflip_distribution(m.epsilon, d, m.d_b), loss, encode)


def _hr(m, d):
    if not m.blocked:
        return Definition(hr_small_matrix(d, m.epsilon), m.epsilon, lambda r: r["y"])
    permutation = np.random.default_rng(HR_PERMUTATION_SEED).permutation(d)
    return Definition(hr_block_matrix(d, m.epsilon, permutation), m.epsilon, lambda r: r["y"],
                      {"permutation": permutation})


def _hm(m, d):
    return Definition(hm_matrix(d, m.epsilon, m.coefficients(d)), m.epsilon,
                      lambda r: hm_index(r["j"], r["s"], pow2_at_least(d)))


#: Seed of the public hash family of the sketches in the audit (any fixed one: the mechanisms are
#: ε-LDP for every family, which is public and independent of the data).
SKETCH_FAMILY_SEED = 11


def _cms(m, d):
    """Codes (j, w); the client is held to the law of w (summed over j) — 2^d codes, enough
    reports per code for the chi-square at k = 1,024 rows."""
    family = m.draw_family(d, np.random.default_rng(SKETCH_FAMILY_SEED))
    table = sketch_hash_table(family.coefficients, m.m, d)

    def encode(r):
        j, bits = np.asarray(r["j"], dtype=np.int64), np.asarray(r["bits"])
        w = bits[np.arange(len(j))[:, None], table[j]]                  # (people, v)
        return (w.astype(np.int64) << np.arange(d)).sum(axis=1)

    return Definition(cms_matrix(m.epsilon, d, table), m.epsilon, encode, {"family": family},
                      columns=np.arange(m.k * 2**d) % 2**d)


def _hcms(m, d):
    """Codes (j, s, b); the client is held to the law of the pattern (b·s_v = +1)_v."""
    family = m.draw_family(d, np.random.default_rng(SKETCH_FAMILY_SEED))
    table = sketch_hash_table(family.coefficients, m.m, d)
    H = hadamard(m.m)

    def encode(r):
        j, l, b = (np.asarray(r[key], dtype=np.int64) for key in ("j", "l", "bit"))
        agrees = b[:, None] * H[table[j], l[:, None]] > 0                # (people, v)
        return (agrees.astype(np.int64) << np.arange(d)).sum(axis=1)

    minus = (np.arange(2**d)[:, None] >> np.arange(d)) & 1              # s as bits, (s, v)
    agree = np.stack([1 - minus, minus])                                # b = +1 / b = −1
    per_code = (agree << np.arange(d)).sum(axis=2).T                    # (s, b)
    columns = np.tile(per_code.ravel(), m.k)
    return Definition(hcms_matrix(m.epsilon, d, table, m.m), m.epsilon, encode,
                      {"family": family}, columns=columns)


#: Exact class → (mechanism, d) ↦ Definition. Exact classes, not isinstance: a subclass (a variant)
#: must state its own distribution.
BY_CLASS = {
    GRR: lambda m, d: Definition(grr_distribution(m.epsilon, d), m.epsilon, lambda r: r["y"]),
    SUE: _unary("sue"),
    OUE: _unary("oue"),
    BLH: _hashing("blh"),
    OLH: _hashing("olh"),
    SubsetSelection: lambda m, d: Definition(ss_distribution(m.epsilon, d), m.epsilon,
                                             lambda r: (1 << np.asarray(r["subset"])).sum(axis=1)),
    DBitFlip: _dbitflip,
    HadamardResponse: _hr,
    HadamardMechanism: _hm,
    CMS: _cms,
    HCMS: _hcms,
}


def output_distribution(mechanism, d: int) -> Definition:
    """The :class:`Definition` of a local mechanism instance on d cells, looked up by its class."""
    try:
        definition = BY_CLASS[type(mechanism)]
    except KeyError:
        raise LookupError(f"no exact output distribution for the local mechanism "
                          f"{mechanism.key!r} ({type(mechanism).__name__}): add its definition to "
                          f"tests/mechanisms/output_distributions.py so that the ε-LDP audit of "
                          f"the contract tests covers it") from None
    return definition(mechanism, d)
