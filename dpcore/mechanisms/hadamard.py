"""Hadamard response (HR) and the Hadamard mechanism with t coefficients (HM), plus the fast
Walsh–Hadamard transform (FWHT) both servers need.

Both are local mechanisms whose server decodes with one FWHT of a histogram of the reports, so the
fast ``release`` draws that histogram exactly and transforms it once — unlike shortcuts through
each cell's support count, which for these mechanisms get each count's law right but not the joint
law (one report's support indicators are tied together by the Hadamard structure). HR samples every
commuter's report (vectorised): O(n + K log K). HM draws its histograms from their exact laws,
report by report or as multinomial counts, whichever is cheaper (see
:meth:`HadamardMechanism.release`): at most O(min(nt, cells·D) + D log D).

The Sylvester–Hadamard matrix is never built: its entry H[i, j] = (−1)^popcount(i & j).

References: [ASZ19] J. Acharya, Z. Sun, H. Zhang, "Hadamard response: estimating distributions
privately, efficiently, and with little communication", AISTATS 2019, as implemented in pure-LDP
(``k2k_hadamard.py``); [CMM21] G. Cormode, S. Maddock, C. Maple, "Frequency estimation under local
differential privacy", PVLDB 14(11), 2021, and pure-LDP's ``HadamardMech{Client,Server}``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

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
from dpcore.mechanisms.local import _as_counts, _as_items  # shared input checks

#: People (HR) or reports (HM) per batch in ``release``: bounds the temporaries (a few arrays of
#: this length).
RELEASE_CHUNK = 1 << 22
#: Largest t the Hadamard mechanism accepts; at ε = 20 (the largest ε allowed) the best t is ~24.
MAX_COEFFICIENTS = 32
#: Columns of one block of the uniform reports' draws (:meth:`HadamardMechanism._fair_keys`:
#: 1 MB of int32 column sums, which stays in the CPU cache while the block is tallied).
FAIR_BLOCK = 1 << 18
#: Reports tallied by one bincount (int32 indices: 128 MB); more are tallied in rounds.
TALLY_BUFFER = 1 << 25
#: Domains from this size on are shuffled bucket by bucket (see :func:`uniform_permutation`).
SHUFFLE_BUCKETED_FROM = 1 << 20
SHUFFLE_BUCKETS = 256
#: Elements the FWHT transforms at a time while they stay in the CPU cache (1 MB of int32).
FWHT_CACHE_ELEMENTS = 1 << 18
#: A histogram is drawn as multinomial counts (one binomial per bin) instead of report by report
#: when it has at most 1/MULTINOMIAL_COST bins per report: a binomial draw costs about as much as
#: this many reports (drawn, signed and tallied).
MULTINOMIAL_COST = 12
#: Cells × columns of the largest per-cell multinomial table drawn at once (32 MB of int64).
MULTINOMIAL_BLOCK = 1 << 22


# ---------------------------------------------------------------------------------------- helpers
def _butterfly_passes(src: np.ndarray, dst: np.ndarray, length: int, trailing: int) -> np.ndarray:
    """Transform an axis of ``length`` elements (each followed by ``trailing`` contiguous ones).

    Constant-geometry radix-2 passes: each reads adjacent pairs and writes their sums to the first
    half and their differences to the second half of the other buffer; after log₂ length passes the
    order is natural again. Returns whichever buffer holds the result.
    """
    lead, half = src.size // (length * trailing), length // 2
    for _ in range(length.bit_length() - 1):
        pairs = src.reshape(lead, half, 2, trailing)
        halves = dst.reshape(lead, 2, half, trailing)
        np.add(pairs[:, :, 0], pairs[:, :, 1], out=halves[:, 0])
        np.subtract(pairs[:, :, 0], pairs[:, :, 1], out=halves[:, 1])
        src, dst = dst, src
    return src


def fwht(values: np.ndarray, *, overwrite: bool = False, first: int | None = None) -> np.ndarray:
    """Unnormalised Walsh–Hadamard transform along the last axis, in Sylvester order:
    ``out[..., i] = Σ_j (−1)^popcount(i & j) values[..., j]``; with ``first``, only
    ``out[..., :first]``.

    Butterflies only (adds and subtracts into preallocated buffers), so integer input stays integer
    and the result is exact as long as the sum of |values| along the axis fits the dtype — every
    partial sum of a histogram of n reports is at most n in absolute value, so int32 is exact below
    2³¹. Low-order bits are transformed in cache-sized pieces, the rest in streaming passes over
    contiguous runs (H_n = H_{n/c} ⊗ H_c). ``overwrite=True`` lets it use ``values`` as a buffer.
    ``first`` skips the outputs nobody reads (:func:`_leading`): the Hadamard mechanism pads
    9,784,380 ED cells to 2²⁴ and needs 58 % of the transform's work. Integer results are the
    full transform's, to the bit; floating-point ones may differ in rounding (other sums).
    """
    data = np.ascontiguousarray(values) if overwrite else np.array(values, order="C")
    size = data.shape[-1] if data.ndim else 0
    if size < 1 or size & (size - 1):
        raise ValueError(f"fwht needs a power-of-two length along the last axis, got {size}")
    wanted = size if first is None else int(first)
    if not 1 <= wanted <= size:
        raise ValueError(f"fwht's first must be between 1 and the length {size}, got {first}")
    rows = data.reshape(-1, size)
    if wanted == size:
        return _transform(rows).reshape(data.shape)
    return np.ascontiguousarray(_leading(rows, wanted)).reshape(data.shape[:-1] + (wanted,))


def _transform(rows: np.ndarray) -> np.ndarray:
    """The whole transform of each row of a C-contiguous 2-D array (overwritten; the result is
    in it or in a new array)."""
    size = rows.shape[-1]
    low = min(size, FWHT_CACHE_ELEMENTS)
    pieces = rows.reshape(-1, low)
    per_batch = max(1, FWHT_CACHE_ELEMENTS // low)
    scratch = np.empty(min(len(pieces), per_batch) * low, dtype=rows.dtype)
    for start in range(0, len(pieces), per_batch):
        batch = pieces[start:start + per_batch]
        result = _butterfly_passes(batch, scratch[:batch.size], low, 1)
        if result is not batch:
            batch[...] = result.reshape(batch.shape)
    if size == low:
        return rows
    return _butterfly_passes(rows, np.empty_like(rows), size // low, low).reshape(rows.shape)


def _leading(rows: np.ndarray, wanted: int) -> np.ndarray:
    """The first ``wanted`` outputs of each row's transform (rows C-contiguous, overwritten).

    With H_{2h} = [[H_h, H_h], [H_h, −H_h]] and the row split into halves a, b: the first h
    outputs are H_h(a + b), the next h are H_h(a − b). Only the half (or both) holding wanted
    outputs is transformed, and a half needed only in part is pruned the same way, so the work is
    about Σ over the set bits of ``wanted`` instead of log₂(size) passes over all of it.
    """
    size = rows.shape[-1]
    if wanted == size:
        return _transform(rows)
    half = size // 2
    lower, upper = rows[:, :half], rows[:, half:]
    if wanted <= half:                    # only H_h(a + b) is read
        if len(rows) == 1:
            np.add(lower, upper, out=lower)
            return _leading(lower, wanted)
        return _leading(lower + upper, wanted)
    difference = lower - upper            # the upper outputs' input, before a + b overwrites a
    np.add(lower, upper, out=lower)
    out = rows[:, :wanted]                # the wanted outputs, written over the consumed input
    summed = _transform(lower if len(rows) == 1 else np.ascontiguousarray(lower))
    if len(rows) > 1 or not np.may_share_memory(summed, lower):
        out[:, :half] = summed
    out[:, half:] = _leading(difference, wanted - half)
    return out


def uniform_permutation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of range(d).

    Large domains use the Rao–Sandelius shuffle: every index draws one of SHUFFLE_BUCKETS buckets,
    a stable (radix) sort groups them by bucket, and each bucket — small enough to stay in cache —
    is shuffled in place. Uniform: an arrangement arises from exactly one bucket assignment per
    vector of bucket sizes (k_i), so its probability is Σ_k B^{-d} Π 1/k_i! = 1/d!. About a third
    faster than ``rng.permutation`` at ten million cells, whose swaps miss the cache.
    """
    if d < SHUFFLE_BUCKETED_FROM:
        return rng.permutation(d)
    bucket = rng.integers(0, SHUFFLE_BUCKETS, size=d, dtype=np.uint8)
    order = np.argsort(bucket, kind="stable")
    for segment in np.split(order, np.cumsum(np.bincount(bucket, minlength=SHUFFLE_BUCKETS))[:-1]):
        rng.shuffle(segment)
    return order


def force_parity(y: np.ndarray, row: np.ndarray, flip_bit: np.ndarray, parity: int | np.ndarray):
    """Return y, or y with ``flip_bit`` toggled, so that popcount(y & row) has the given parity.

    ``flip_bit`` must be a bit that is set in ``row``: toggling it flips the parity, so
    y ↦ y ^ flip_bit is a bijection between the two parity classes, and a uniform y becomes a
    uniform element of the wanted class (each element is hit by exactly two y's). With parity 0
    that class is {y : H[row, y] = +1}.
    """
    wrong = (np.bitwise_count(y & row) & 1) ^ parity
    return y ^ (flip_bit * wrong.astype(y.dtype, copy=False))


def _next_pow2(value: int) -> int:
    """Smallest power of two ≥ value (value ≥ 1), in exact integer arithmetic."""
    return 1 << (int(value) - 1).bit_length()


def _exact_int(values: np.ndarray, bound: int) -> np.ndarray:
    """int32 when every FWHT partial sum (at most ``bound`` in absolute value) fits, else int64."""
    return values.astype(np.int32 if bound < 2**31 else np.int64, copy=False)


def _index_dtype(size: int):
    """The narrowest signed integer dtype holding 0..size (narrow arrays are faster)."""
    for dtype in (np.int16, np.int32):
        if size <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _batches(people: np.ndarray, limit: int):
    """Consecutive slices of the present cells, each with at most ``limit`` people (or one cell)."""
    ends = np.cumsum(people)
    start = 0
    while start < len(people):
        before = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + limit, side="right")))
        yield slice(start, stop)
        start = stop


def _histogram(parts, size: int) -> np.ndarray:
    """Histogram over [size] of the report indices yielded by ``parts``.

    A bincount also costs O(size), so when ``size`` exceeds a batch the batches are gathered in a
    buffer of up to TALLY_BUFFER indices and tallied together.
    """
    total, buffer, filled = None, None, 0

    def tally(indices):
        nonlocal total
        counts = np.bincount(indices, minlength=size)
        if total is None:
            total = counts
        else:
            total += counts

    for part in parts:
        if len(part) >= size or len(part) > TALLY_BUFFER:
            tally(part)
            continue
        if buffer is None:
            buffer = np.empty(TALLY_BUFFER, dtype=part.dtype)
        if filled + len(part) > TALLY_BUFFER:
            tally(buffer[:filled])
            filled = 0
        buffer[filled:filled + len(part)] = part
        filled += len(part)
    if filled:
        tally(buffer[:filled])
    return np.zeros(size, dtype=np.int64) if total is None else total


def _signed_sums(parts, size: int, bound: int) -> np.ndarray:
    """A[j] = (+1 reports) − (−1 reports) in column j, from the report keys yielded by ``parts``
    (j for a +1 report, D + j for a −1 one: :meth:`HadamardMechanism._report_keys`), added
    straight into one D-long array, int32 when every partial sum of the later FWHT (at most
    ``bound``) fits (:func:`_exact_int`). A histogram over the 2D bins and its difference cost
    0.43 s at ED level (D = 2²⁴: 400 MB written); this writes 67 MB, once."""
    total = np.zeros(size, dtype=np.int32 if bound < 2**31 else np.int64)
    shift = size.bit_length() - 1
    for part in parts:
        sign = (part >> shift).astype(total.dtype)     # 1 for a −1 report, else 0
        sign *= -2
        sign += 1
        np.add.at(total, part & (size - 1), sign)
    return total


def _xor_zero_triples(bound: int) -> int:
    """#{(a, b, c) ∈ [0, bound]³ : a ⊕ b ⊕ c = 0}, by a digit walk from the top bit (a state
    per "still equal to bound's prefix" flag of each of a, b, c)."""
    states = {(True, True, True): 1}
    for bit in reversed(range(bound.bit_length())):
        top = (bound >> bit) & 1
        nxt: dict = {}
        for tight, count in states.items():
            for digits in ((0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)):
                if any(t and digit > top for t, digit in zip(tight, digits)):
                    continue
                key = tuple(t and digit == top for t, digit in zip(tight, digits))
                nxt[key] = nxt.get(key, 0) + count
        states = nxt
    return sum(states.values())


def closed_triples(layout: "HRLayout") -> int:
    """T: ordered triples of distinct symbols in one block whose rows XOR to 0. A full block has
    rows 1..b−1, every non-zero row: (b − 1)(b − 2); the last one rows 1..R: the triples of
    [0, R]³ with XOR 0 less the 3R + 1 that contain a 0 (then the other two are equal; a row 0
    is no symbol's, and triples without 0 are distinct)."""
    full, rest = divmod(layout.d, layout.items_per_block)
    size = layout.items_per_block
    triples = full * size * (size - 1)
    if rest:
        triples += _xor_zero_triples(rest) - (3 * rest + 1)
    return triples


# -------------------------------------------------------------------------------- Hadamard response
@dataclass(frozen=True)
class HRLayout:
    """Output alphabet of Hadamard response for one domain size.

    ``blocks`` blocks of ``block_size`` outputs each (``outputs`` = their product). Symbol s (the
    item after the public permutation, in the blocked form) owns row ``s % (block_size − 1) + 1`` of
    the block's Hadamard matrix in block ``s // (block_size − 1)``; its set C_s is the block's
    outputs where that row is +1. The ε ≤ 1 form is the special case of one block and no
    permutation: item x owns row x + 1 of H_K.
    """

    d: int
    blocked: bool
    blocks: int
    block_size: int

    @property
    def outputs(self) -> int:
        return self.blocks * self.block_size

    @property
    def items_per_block(self) -> int:
        return self.block_size - 1

    def same_block_pairs(self) -> int:
        """Σ_β m_β(m_β − 1): ordered pairs of distinct items sharing a block, m_β the items in
        block β (all blocks full except possibly the last), in O(1) — there can be 2²⁴ blocks."""
        full, rest = divmod(self.d, self.items_per_block)
        return full * self.items_per_block * (self.items_per_block - 1) + rest * (rest - 1)

    def encode(self, symbols: np.ndarray) -> np.ndarray:
        """Rows (first output of the block, Hadamard row, lowest set bit of that row) per symbol."""
        block, row = np.divmod(symbols.astype(_index_dtype(self.outputs)), self.items_per_block)
        row += 1
        return np.stack([block * self.block_size, row, row & -row])

    def supports(self, symbol: int, output: int) -> bool:
        """Whether ``output`` lies in C_symbol: in the symbol's block, where its row is +1."""
        block, row = divmod(int(symbol), self.items_per_block)
        offset = int(output) - block * self.block_size
        return 0 <= offset < self.block_size and ((row + 1) & offset).bit_count() % 2 == 0

    def sample_support(self, code: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniform element of C_s for each encoded symbol: a uniform offset in the block, its
        parity forced so that H_b[row, offset] = +1 (see :func:`force_parity`)."""
        start, row, low = code
        offset = rng.integers(0, self.block_size, size=len(row), dtype=row.dtype)
        return start + force_parity(offset, row, low, 0)


HR_EXPLANATION = r"""**Hadamard response.** Each commuter sends one number: an index into a ±1 table
(a Hadamard matrix) whose row for their true commute is +1 on half the entries. They pick a +1 entry
of their row more often than a −1 entry, by a factor $e^\varepsilon$; the server counts the numbers
and one fast Walsh–Hadamard transform turns the counts into estimates.

* $\varepsilon \le 1$: $K = 2^{\lceil\log_2(d+1)\rceil}$ outputs, $C_x = \{y: H_K[x+1,y]=+1\}$,
  $P[y\mid x] = \frac{2e^\varepsilon}{K(1+e^\varepsilon)}$ on $C_x$ and
  $\frac{2}{K(1+e^\varepsilon)}$ elsewhere;
  $\hat c_x = \frac{e^\varepsilon+1}{e^\varepsilon-1}\sum_y H_K[x+1,y]\,N_y$,
  $\operatorname{Var}[\hat c_x] = n\frac{(e^\varepsilon+1)^2}{(e^\varepsilon-1)^2} - c_x$.
* $\varepsilon > 1$ (blocked): the cells are shuffled by a public random permutation and split into
  $B = 2^{\lfloor\log_2\min(2d, e^\varepsilon)\rfloor}$ blocks of $b-1$ cells,
  $b = 2^{\lceil\log_2(d/B+1)\rceil}$; with probability $2B/Z$, $Z = 2B-1+e^\varepsilon$, the
  commuter sends a uniform index of all $K = Bb$, otherwise a uniform +1 index of their row inside
  their block.
  $\hat c_s = \frac{Z}{e^\varepsilon-1}\sum_{y\in\text{block}(s)} H_b[\text{row}(s),y]\,N_y$,
  $\operatorname{Var}[\hat c_s] =
  \frac{Z\,(2n + (e^\varepsilon-1)\,c_{\text{blk}(s)})}{(e^\varepsilon-1)^2} - c_s$
  with $c_{\text{blk}(s)}$ the commuters in $s$'s block.

Communication: $\log_2 K$ bits. The fast release draws every commuter's report (exact in
distribution) and needs one transform: $O(n + K\log K)$."""


@register
class HadamardResponse(LocalMechanism):
    """Hadamard response [ASZ19] exactly as pure-LDP runs it (and as the thesis used it).

    * ε ≤ 1 (``Hadamard_Rand_high_priv``): K = 2^⌈log₂(d+1)⌉ outputs; item x owns row x+1 of H_K
      and C_x = {y : H_K[x+1, y] = +1}; the client reports a uniform element of C_x with
      probability e^ε/(1+e^ε), else one of its complement. Var[ĉ_x] = n(e^ε+1)²/(e^ε−1)² − c_x.
    * ε > 1 (``Hadamard_Rand_general_original``): B = 2^⌊log₂ min(2d, e^ε)⌋ blocks of size
      b = 2^⌈log₂(d/B + 1)⌉ after a public random permutation of the domain (drawn once per run);
      with probability 2B/Z (Z = 2B − 1 + e^ε) a uniform output of all K = Bb, else a uniform
      element of C_s inside s's block. Var[ĉ_s] = Z(2n + (e^ε−1)c_blk(s))/(e^ε−1)² − c_s, where
      c_blk(s) is the number of people whose item shares s's block — it depends on the permutation.

    The ε ≤ 1 form is sampled as the one-block case of the second description (a uniform report
    with probability 2/(1+e^ε), else one from C_x): the same output distribution. Every integer
    (K, B, b) is computed exactly; pure-LDP uses floating-point logarithms.
    """

    key = "hr"
    name = "Hadamard response"
    params = (EPSILON,)
    references = (("[ASZ19] Acharya, Sun, Zhang. Hadamard response: estimating distributions "
                   "privately, efficiently, and with little communication. AISTATS 2019."),
                  ("pure-LDP (Samuel-Maddock/pure-LDP): HadamardResponseClient/Server, "
                   "k2k_hadamard.py."))

    # ------------------------------------------------------------------------------------ layout
    @property
    def blocked(self) -> bool:
        """pure-LDP's rule: the blocked construction is used exactly when ε > 1."""
        return self.epsilon > 1

    def layout(self, d: int) -> HRLayout:
        """The output alphabet for a domain of d cells."""
        if d < 1:
            raise ValueError(f"the domain must have at least one cell, got d = {d}")
        if not self.blocked:
            return HRLayout(d, False, 1, _next_pow2(d + 1))
        exponent = math.frexp(math.exp(self.epsilon))[1] - 1          # ⌊log₂ e^ε⌋, exactly
        blocks = min(1 << exponent, 1 << ((2 * d).bit_length() - 1))  # 2^⌊log₂ min(2d, e^ε)⌋
        block_size = _next_pow2(-(-d // blocks) + 1)                  # smallest b with (b−1)B ≥ d
        return HRLayout(d, True, blocks, block_size)

    def constants(self, d: int) -> tuple[HRLayout, float, float]:
        """(layout, probability of a uniform report over all K outputs, scale Z/(e^ε−1))."""
        lay = self.layout(d)
        e = math.exp(self.epsilon)
        z = 2 * lay.blocks - 1 + e
        return lay, 2 * lay.blocks / z, z / (e - 1)

    def draw_permutation(self, d: int, rng: np.random.Generator) -> np.ndarray | None:
        """The blocked form's public permutation (item x is sent as ``perm[x]``); None if ε ≤ 1."""
        return uniform_permutation(d, rng) if self.blocked else None

    def _check_permutation(self, permutation, d: int) -> np.ndarray | None:
        """A caller's permutation, validated: required by the blocked form, refused if ε ≤ 1."""
        if not self.blocked:
            if permutation is not None:
                raise ValueError("Hadamard response with ε ≤ 1 uses no permutation; "
                                 "do not pass one.")
            return None
        if permutation is None:
            raise ValueError("Blocked Hadamard response (ε > 1) needs the public permutation the "
                             "clients used: pass permutation=... (simulate and release draw one "
                             "for you).")
        permutation = np.asarray(permutation)
        if (permutation.shape != (d,) or not np.issubdtype(permutation.dtype, np.integer)
                or permutation.min() < 0 or permutation.max() >= d
                or not (np.bincount(permutation, minlength=d) == 1).all()):
            raise ValueError(f"permutation must be a permutation of range({d}) "
                             "(each index exactly once)")
        return permutation

    def _run_permutation(self, permutation, d: int, rng: np.random.Generator) -> np.ndarray | None:
        """The caller's permutation (validated) or, in the blocked form, a fresh one."""
        if self.blocked and permutation is None:
            return self.draw_permutation(d, rng)
        return self._check_permutation(permutation, d)

    # ------------------------------------------------------------------------------------ client
    def perturb(self, items, d, rng, permutation=None):
        """Each person's report: one output index ``y`` in [K] (``{"y": array}``).

        In the blocked form the public permutation is drawn here if not given (one commuter's view);
        the server needs the same one, so pass it when more than one batch is sent.
        """
        permutation = self._run_permutation(permutation, d, rng)
        return {"y": self._reports(_as_items(items, d), d, rng, permutation)}

    def _reports(self, items, d, rng, permutation):
        lay, uniform, _ = self.constants(d)
        y = rng.integers(0, lay.outputs, size=len(items), dtype=_index_dtype(lay.outputs))
        inside = rng.random(len(items)) >= uniform
        symbols = items[inside] if permutation is None else permutation[items[inside]]
        y[inside] = lay.sample_support(lay.encode(symbols), rng)
        return y

    # ------------------------------------------------------------------------------------ server
    def accumulate(self, reports, d):
        """Histogram of the reported outputs (length K)."""
        return np.bincount(np.asarray(reports["y"]), minlength=self.layout(d).outputs)

    def estimate(self, statistic, n, d, permutation=None):
        """ĉ_s = Z/(e^ε−1) · Σ_{y in s's block} H_b[row(s), y] · hist[y]: one FWHT per block."""
        return self._decode(statistic, n, d, self._check_permutation(permutation, d))

    def _decode(self, statistic, n, d, permutation):
        lay, _, scale = self.constants(d)
        hist = _exact_int(np.asarray(statistic), n).reshape(lay.blocks, lay.block_size)
        by_row = fwht(hist, overwrite=True)[:, 1:]                  # drop each block's all-ones row
        by_symbol = np.multiply(by_row, scale, dtype=float).reshape(-1)[:d]
        return by_symbol if permutation is None else by_symbol[permutation]

    # ------------------------------------------------------------------------------- whole runs
    def simulate(self, items, d, rng, chunk=SIMULATION_CHUNK, permutation=None):
        """The real protocol in batches; all batches share one public permutation (blocked form)."""
        items = _as_items(items, d)
        permutation = self._run_permutation(permutation, d, rng)
        reports = (self._reports(items[start:start + chunk], d, rng, permutation)
                   for start in range(0, len(items), chunk))
        return self._decode(_histogram(reports, self.layout(d).outputs), len(items), d, permutation)

    def release(self, counts, rng, permutation=None):
        """Exact fast path: the same per-person protocol, grouped by cell.

        Whether a person reports uniformly (probability 2B/Z) or from C_s is an independent coin, so
        each cell's number of C_s-reporters is Binomial(c_x, 1 − 2B/Z); the uniform reporters'
        outputs do not depend on their cell. Every report is still drawn individually.
        """
        counts = _as_counts(counts)
        d = len(counts)
        permutation = self._run_permutation(permutation, d, rng)
        lay, uniform, _ = self.constants(d)
        present, people = occupied_cells(counts)
        code = lay.encode(present if permutation is None else permutation[present])
        inside = rng.binomial(people, 1.0 - uniform)

        def reports():
            for part in _batches(people, RELEASE_CHUNK):
                y = np.empty(int(people[part].sum()), dtype=code.dtype)
                uniform_count = len(y) - int(inside[part].sum())
                y[:uniform_count] = rng.integers(0, lay.outputs, size=uniform_count, dtype=y.dtype)
                supported = np.repeat(code[:, part], inside[part], axis=1)
                y[uniform_count:] = lay.sample_support(supported, rng)
                yield y

        return self._decode(_histogram(reports(), lay.outputs), int(counts.sum()), d, permutation)

    # ------------------------------------------------------------------------------ theory
    def variance(self, counts, n=None, d=None, permutation=None):
        """Exact per-cell variance of ĉ.

        Blocked form: given ``permutation``, the conditional variance (c_blk from that permutation);
        without it, the variance of a run that draws its own permutation — the average of the
        conditional one over uniform permutations (ĉ is unbiased for every permutation), i.e.
        c_blk(s) replaced by c_s + (n − c_s)·Σ_β m_β(m_β−1)/(d(d−1)), m_β the blocks' item counts.
        """
        counts = _as_counts(counts).astype(float)
        n, d = table_size(counts, n, d)
        lay, _, scale = self.constants(d)
        e = math.exp(self.epsilon)
        if not lay.blocked:
            c_blk = np.full(len(counts), n)
        elif permutation is not None:
            if len(counts) != d:
                raise ValueError("the variance given a permutation needs the whole table's counts")
            block = self._check_permutation(permutation, d) // lay.items_per_block
            c_blk = np.bincount(block, weights=counts, minlength=lay.blocks)[block]
        else:
            share = lay.same_block_pairs() / (d * (d - 1)) if d > 1 else 0.0
            c_blk = counts + (n - counts) * share
        return scale * (2 * n + (e - 1) * c_blk) / (e - 1) - counts

    def sum_variance(self, cells, total, n: float, d: int) -> np.ndarray:
        """Var of ĉ_S = Σ_{s∈S} ĉ_s over a set S of ``cells`` = m cells holding ``total`` = t
        people, with every covariance, for a run that draws its own permutation.

        ĉ_S = scale·Σ_j g(Y_j) with g(y) = Σ_{s∈S} H_b[row(s), y] on s's block, so
        Var = scale²·Σ_j Var g(Y_j) (people are independent) and, as E g(Y_j) = 1[x_j∈S]/scale,
        Var = scale²·Σ_x c_x E[g²|x] − t. A uniform report (probability u = 2B/Z) gives
        E g² = m/B (distinct rows are orthogonal); a report from C_x = {H_b[row(x), ·] = +1}
        gives m_β(x) + N_x: m_β(x) = |S ∩ x's block|, and N_x = #{(s, s') ∈ S², same block as x,
        row(s) ⊕ row(s') = row(x)} (H[a]·H[b] = H[a ⊕ b]; such s, s', x are distinct). So

            Var = scale²·[n·u·m/B + (1 − u)·Σ_x c_x (m_β(x) + N_x)] − t.

        Blocked form (ε > 1): the release draws a uniform public permutation, which the analysis
        does not see; ĉ_S is unbiased given every permutation, so its variance is this averaged
        over permutations: two distinct items share a block with probability ρ = Σ_β m_β(m_β −
        1)/(d(d − 1)) and three form a closed triple (same block, rows XOR to 0) with
        probability τ = T/(d(d − 1)(d − 2)) (:func:`closed_triples`), so Σ_x c_x m_β(x) → t(1 +
        (m−1)ρ) + (n−t)mρ and Σ_x c_x N_x → τ[t(m−1)(m−2) + (n−t)m(m−1)] — exact, in m and t
        alone. m = 1 gives :meth:`variance` without a permutation.

        ε ≤ 1 (one block, item x on row x + 1, no permutation): m_β = m, and Σ_x c_x N_x depends on
        which cells hold the people (a sum over pairs of S of the count at the XOR of their rows:
        one transform of the domain per sum). It is bounded here by its largest value over
        tables: s' is fixed by s and x, the pairs come as (s, s') and (s', s), and neither is x,
        so N_x ≤ 2⌊(m − 1[x ∈ S])/2⌋. An upper bound of the variance, about (2 − u)× the lower
        one (W = 0) at most (1.46× at ε = 1), exact for m = 1.
        """
        m = np.asarray(cells, dtype=float)
        t = np.asarray(total, dtype=float)
        lay, uniform, scale = self.constants(d)
        if lay.blocked:
            rho = lay.same_block_pairs() / (d * (d - 1)) if d > 1 else 0.0
            tau = closed_triples(lay) / (d * (d - 1) * (d - 2)) if d > 2 else 0.0
            blocks = t * (1 + (m - 1) * rho) + (n - t) * m * rho
            triples = tau * (t * (m - 1) * (m - 2) + (n - t) * m * (m - 1))
        else:
            blocks = n * m
            triples = t * 2 * np.floor((m - 1) / 2) + (n - t) * 2 * np.floor(m / 2)
        return scale ** 2 * (n * uniform * m / lay.blocks
                             + (1 - uniform) * (blocks + triples)) - t

    def bits_per_user(self, d):
        return float(math.log2(self.layout(d).outputs))

    def describe(self):
        form = ("ε ≤ 1 form: one block of 2^⌈log₂(d+1)⌉ outputs" if not self.blocked else
                f"blocked form (ε > 1): up to {self.layout(1 << 62).blocks} blocks "
                f"(B = 2^⌊log₂ min(2d, e^ε)⌋), public permutation drawn per run")
        return f"{super().describe()} — {form}"

    def explain(self):
        form = "blocked" if self.blocked else "ε ≤ 1"
        return (f"{HR_EXPLANATION}\n\nThis instance uses the {form} form. "
                f"Guarantee: ε-LDP with ε = {self.epsilon:g}.\n\n"
                "In plain words: each commuter sends one number that is a little more likely to "
                "point at their own commute's half of a ±1 table than elsewhere; one transform "
                "turns everybody's numbers into estimates for all cells at once.")


# --------------------------------------------------------------------------- Hadamard mechanism
def hm_probabilities(epsilon: float, t: int) -> tuple[float, float]:
    """(p_t, b_t): probability of sending the true sign pattern, E/(E + 2^t − 1), and the bias of
    each single sign, b_t = 2p_m − 1 = (E − 1)/(E + 2^t − 1)."""
    e = math.exp(epsilon)
    return e / (e + 2.0**t - 1), (e - 1) / (e + 2.0**t - 1)


def hm_total_variance(epsilon: float, t: int, d: int) -> float:
    """Σ_v Var[ĉ_v] / n over a domain of d cells: d/(t b_t²) + (t−1)/(t b_t) − 1 (uses Σ c_v = n, so
    it does not depend on how the commuters are spread)."""
    b = hm_probabilities(epsilon, t)[1]
    return d / (t * b * b) + (t - 1) / (t * b) - 1


def optimal_coefficients(epsilon: float, d: int) -> int:
    """The t in 1..MAX_COEFFICIENTS minimising the exact total variance (not pure-LDP's rule,
    ⌈log₂(e^ε+1)⌉)."""
    totals = [hm_total_variance(epsilon, t, d) for t in range(1, MAX_COEFFICIENTS + 1)]
    return int(np.argmin(totals)) + 1


HM_EXPLANATION = r"""**Hadamard mechanism.** Each commuter reveals $t$ randomly chosen entries of
their row of a ±1 Hadamard table — the column numbers in the clear, the $t$ signs through randomised
response over all $2^t$ sign patterns. The server adds up the signs per column and one fast
Walsh–Hadamard transform turns the sums into estimates.

* Domain padded to $D = 2^{\lceil\log_2 d\rceil}$; columns $j_1..j_t$ uniform on $[D]$; true signs
  $h_k = H_D[x, j_k] = (-1)^{\mathrm{popcount}(x \,\&\, j_k)}$.
* The true pattern is sent with probability $p_t = \frac{e^\varepsilon}{e^\varepsilon+2^t-1}$,
  otherwise one of the other $2^t-1$ uniformly; each sign is right with probability
  $p_m = \frac{e^\varepsilon+2^{t-1}-1}{e^\varepsilon+2^t-1}$.
* $A_j = \sum s$, $\hat c = \mathrm{FWHT}(A)/(t\,b_t)$ with
  $b_t = 2p_m-1 = \frac{e^\varepsilon-1}{e^\varepsilon+2^t-1}$;
  $\operatorname{Var}[\hat c_v] = \frac{n}{t\,b_t^2} + c_v\left(\frac{t-1}{t\,b_t}-1\right)$.
* `t = auto` minimises the exact total variance $\sum_v \operatorname{Var}[\hat c_v]$ (1 for
  ε ≤ 1, 2 at ε = 2, 3 at ε = 3, 4 at ε = 4 on large domains) — pure-LDP's rule
  $\lceil\log_2(e^\varepsilon+1)\rceil$ picks a larger t with up to ~3× the variance.

Communication: $t(\log_2 D + 1)$ bits. The fast release draws the column sums from their exact
law (each report's sign pattern is all-true with probability $b_t$, else uniform), without
simulating the commuters one by one."""


@register
class HadamardMechanism(LocalMechanism):
    """Hadamard mechanism (Hadamard randomised response, t coefficients) [CMM21], as in pure-LDP.

    The domain is padded to D = 2^⌈log₂ d⌉. Each person samples t columns j_k uniformly from [D]
    (with replacement), computes the true signs h_k = H_D[x, j_k], and sends (j_k, s_k) where the
    sign pattern s is the true one with probability p_t = e^ε/(e^ε + 2^t − 1), else one of the other
    2^t − 1 patterns uniformly. The server adds the signs per column, A[j] = Σ s, and estimates
    ĉ = FWHT(A)/(t·b_t). Var[ĉ_v] = n/(t b_t²) + c_v((t−1)/(t b_t) − 1).
    """

    key = "hm"
    name = "Hadamard mechanism (t coefficients)"
    params = (EPSILON,
              Param("t", "Coefficients per person (t)", "auto", int,
                    choices=("auto",) + tuple(range(1, MAX_COEFFICIENTS + 1)),
                    help="How many Hadamard coefficients each commuter reports. 'auto' picks the t "
                         "with the smallest exact total variance for this ε and domain."))
    references = (("[CMM21] Cormode, Maddock, Maple. Frequency estimation under local "
                   "differential privacy. PVLDB 14(11), 2021."),
                  "pure-LDP (Samuel-Maddock/pure-LDP): HadamardMechClient/Server.")

    def coefficients(self, d: int) -> int:
        """The t used on a domain of d cells (``auto`` resolves per domain)."""
        return optimal_coefficients(self.epsilon, d) if self.t == "auto" else int(self.t)

    @staticmethod
    def padded(d: int) -> int:
        """D = 2^⌈log₂ d⌉, the Hadamard order the domain is padded to."""
        if d < 1:
            raise ValueError(f"the domain must have at least one cell, got d = {d}")
        return _next_pow2(d)

    def _sample(self, items: np.ndarray, d: int, rng: np.random.Generator):
        """The client's randomness: t columns per person and whether each reported sign is −1.

        Arrays are (t, people) — the transpose of the report layout — so every vectorised operation
        runs along the long axis.
        """
        t, size = self.coefficients(d), self.padded(d)
        keep, _ = hm_probabilities(self.epsilon, t)
        columns = rng.integers(0, size, size=(t, len(items)), dtype=_index_dtype(size))
        # Randomised response over the 2^t patterns: keep, or XOR with a uniform non-zero mask.
        mask_dtype = _index_dtype(2**t)
        mask = rng.integers(1, 2**t, size=len(items), dtype=mask_dtype)
        mask[rng.random(len(items)) < keep] = 0
        negative = np.bitwise_count(items.astype(columns.dtype) & columns)  # true sign's parity
        np.bitwise_xor(negative, mask >> np.arange(t, dtype=mask_dtype)[:, None], out=negative,
                       casting="unsafe")                                    # low bit: mask bit k
        negative &= 1
        return columns, negative

    @staticmethod
    def _report_keys(columns: np.ndarray, negative: np.ndarray, size: int) -> np.ndarray:
        """One bin per (column, sign): j for a +1 report, D + j for a −1 report."""
        key = negative.reshape(-1).astype(_index_dtype(2 * size))
        key *= size
        key += columns.reshape(-1)
        return key

    @staticmethod
    def _column_sums(tally: np.ndarray, size: int) -> np.ndarray:
        """A[j] = (+1 reports) − (−1 reports) in column j, from the histogram of the report keys."""
        return tally[:size] - tally[size:]

    # ------------------------------------------------------------------------------------ client
    def perturb(self, items, d, rng):
        """Each person's report: ``{"j": (people, t) column indices, "s": (people, t) signs}``."""
        columns, negative = self._sample(_as_items(items, d), d, rng)
        return {"j": columns.T, "s": (1 - 2 * negative.astype(np.int8)).T}

    # ------------------------------------------------------------------------------------ server
    def accumulate(self, reports, d):
        """A[j] = sum of the signs reported for column j (length D, integer)."""
        size = self.padded(d)
        keys = self._report_keys(np.asarray(reports["j"]), np.asarray(reports["s"]) < 0, size)
        return self._column_sums(np.bincount(keys, minlength=2 * size), size)

    def estimate(self, statistic, n, d):
        t = self.coefficients(d)
        _, b = hm_probabilities(self.epsilon, t)
        return fwht(_exact_int(np.asarray(statistic), n * t), overwrite=True, first=d) / (t * b)

    def simulate(self, items, d, rng, chunk=SIMULATION_CHUNK):
        """The real protocol in batches of reports, tallied together (one D-long tally per
        batch would dominate on large domains)."""
        items, size = _as_items(items, d), self.padded(d)
        batches = (self.perturb(items[start:start + chunk], d, rng)
                   for start in range(0, len(items), chunk))
        keys = (self._report_keys(np.asarray(r["j"]), np.asarray(r["s"]) < 0, size) for r in batches)
        return self.estimate(_signed_sums(keys, size, len(items) * self.coefficients(d)),
                             len(items), d)

    def release(self, counts, rng):
        """Exact fast path: the column sums A drawn from their law without the clients' loop.

        The pattern law "the true one with probability p_t, else one of the 2^t − 1 others" is the
        mixture "with probability b_t all t signs true, else t independent fair signs":
        P[true pattern] = b_t + (1 − b_t)/2^t = p_t and every other (1 − b_t)/2^t. A person of
        the second kind sends t reports uniform over the 2D (column, sign) bins whatever their
        cell: their histogram is one uniform multinomial. A person of the first kind in cell x
        sends t uniform columns j with the true sign H[x, j]: per cell a multinomial over the D
        columns. Each part (each cell, for the second) is drawn as multinomial counts when it has
        few bins beside its reports (:data:`MULTINOMIAL_COST`), else report by report (all of
        those in one tally); then one FWHT. Chosen per cell, not for all cells at once: at county
        level a few large cells carry most reports, and the many small ones drew D binomials
        each (``bench/bench_floor.py``, county at ε = 20: 0.134 s → 0.089 s of CPU).
        """
        counts = _as_counts(counts)
        d, n = len(counts), int(counts.sum())
        t, size = self.coefficients(d), self.padded(d)
        _, bias = hm_probabilities(self.epsilon, t)
        cells, people = occupied_cells(counts)
        true_reports = rng.binomial(people, bias) * t   # from people sending true signs
        fair_reports = n * t - int(true_reports.sum())
        sums, keys = [], []   # the draws in this order: the same seed gives the same release
        if 2 * size * MULTINOMIAL_COST <= fair_reports:
            sums.append(self._column_sums(rng.multinomial(fair_reports, np.full(2 * size,
                                                                                0.5 / size)), size))
        else:
            keys.append(self._fair_keys(fair_reports, size, rng))
        counted = true_reports >= size * MULTINOMIAL_COST     # per cell: the cheaper way
        if counted.any():
            sums.append(self._true_sign_sums(cells[counted], true_reports[counted], size, rng))
        if not counted.all():
            keys.append(self._true_sign_keys(cells[~counted], true_reports[~counted], size, rng))
        total = _signed_sums(itertools.chain(*keys), size, n * t)
        for part in sums:
            total += part
        return self.estimate(total, n, d)

    @staticmethod
    def _fair_keys(reports: int, size: int, rng: np.random.Generator):
        """Report keys (:meth:`_report_keys`' bins) of reports uniform over all 2D bins, in
        batches, a block of :data:`FAIR_BLOCK` columns at a time when D is larger: the reports
        per block are multinomial and uniform within it (over its columns and both signs), which
        is the same law, and each batch's tally then writes into 1 MB of the column sums
        instead of all 64 MB (ED level, 2.9 M such reports: 0.055 → 0.021 s of CPU)."""
        dtype = _index_dtype(2 * size)
        blocks = max(1, size // FAIR_BLOCK)
        width = size // blocks
        per_block = ([reports] if blocks == 1 else
                     rng.multinomial(reports, np.full(blocks, 1.0 / blocks)).tolist())
        for block, count in enumerate(per_block):
            for start in range(0, count, RELEASE_CHUNK):
                key = rng.integers(0, 2 * width, size=min(RELEASE_CHUNK, count - start),
                                   dtype=dtype)        # the block's column, D·(sign is −1)
                negative = key >> (width.bit_length() - 1)
                negative *= size - width
                key += negative
                key += block * width
                yield key

    @staticmethod
    def _true_sign_keys(cells: np.ndarray, reports: np.ndarray, size: int,
                        rng: np.random.Generator):
        """Report keys of ``reports[x]`` uniform columns j from each cell x with the true sign
        H[x, j] (j for +1, D + j for −1), in batches."""
        dtype = _index_dtype(2 * size)
        for part in _batches(reports, RELEASE_CHUNK):
            drawn = rng.integers(0, size, size=int(reports[part].sum()), dtype=dtype)
            sign = np.bitwise_count(np.repeat(cells[part].astype(dtype), reports[part])
                                    & drawn).astype(dtype)
            sign &= 1
            sign *= size
            drawn += sign
            yield drawn

    @staticmethod
    def _true_sign_sums(cells: np.ndarray, reports: np.ndarray, size: int,
                        rng: np.random.Generator) -> np.ndarray:
        """A[j] = Σ_x H[x, j]·m_xj of the same reports, m_x drawn per cell as a multinomial over
        the D columns (cheaper than report by report when cells × D is small beside the
        reports: county level at large ε)."""
        columns = np.arange(size, dtype=_index_dtype(size))
        uniform = np.full(size, 1.0 / size)   # exact: size is a power of two
        total = np.zeros(size, dtype=np.int64)
        rows = max(1, MULTINOMIAL_BLOCK // size)
        for start in range(0, len(cells), rows):
            hits = rng.multinomial(reports[start:start + rows], uniform)
            negative = np.bitwise_count(
                cells[start:start + rows, None].astype(columns.dtype) & columns) & 1
            total += hits.sum(axis=0) - 2 * (hits * negative).sum(axis=0)
        return total

    # ------------------------------------------------------------------------------ theory
    def variance(self, counts, n=None, d=None):
        counts = _as_counts(counts).astype(float)
        n, d = table_size(counts, n, d)
        t = self.coefficients(d)
        _, b = hm_probabilities(self.epsilon, t)
        return n / (t * b * b) + counts * ((t - 1) / (t * b) - 1)

    def bits_per_user(self, d):
        return float(self.coefficients(d) * (math.log2(self.padded(d)) + 1))

    def describe(self):
        if self.t != "auto":
            return super().describe()
        large = optimal_coefficients(self.epsilon, 1 << 20)
        return f"{super().describe()} (auto: t = {large} on large domains, by the exact variance)"

    def explain(self):
        return (f"{HM_EXPLANATION}\n\nThis instance uses t = {self.t}. "
                f"Guarantee: ε-LDP with ε = {self.epsilon:g}.\n\n"
                "In plain words: each commuter reveals a few random ±1 entries of their commute's "
                "row of a table, each sign possibly flipped; the server adds the signs up per "
                "column and one transform turns the sums into counts.")
