"""Consistency post-processing of released counts [WLLSL20] and the thesis's Base-Cut [Fin24].

[Fin24] A. L. Finnegan, *Local Differential Privacy Mechanisms for Frequency Estimation with
Application to Mobility Data*, thesis, University of Padova (2023/24), §2.4.2 and §5.3 — the
product's specification; where it and [WLLSL20] name a method differently, the thesis wins.

[WLLSL20] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Škorić, N. Li, "Locally differentially private
frequency estimation with consistency", NDSS 2020 (arXiv 1905.08320). Most definitions here follow
the authors' released code (github.com/vvv214/LDP_Protocols); the paper text beyond its abstract
was not checked.

Raw DP estimates can be negative and need not add up to the number of commuters ``n``. These methods
turn them into something that looks like a count table. All of them are *post-processing*: they see
only the released estimates and public facts (``n``, the domain size, the mechanism's noise
level), so privacy is unchanged. They must never be given anything computed from the true counts.

Use :func:`apply` with a key of :data:`METHODS`::

    apply("norm_sub", estimates, n)                         # most methods
    apply("significance_cut", estimates, n, variance=var_star)  # needs the noise variance

``variance`` (only the significance cut uses it, see :data:`NEEDS_VARIANCE`) is ``Var*``, the variance of the estimate of a cell whose true
count is 0 — a number that depends on ε, n and d but not on the data. Pass a scalar, a constant
array (e.g. ``laplace.variance(counts)``), or :func:`zero_cell_variance` for mechanisms whose
per-cell variance depends on the cell's count (local ones).

**Post-Pos** concerns *query answers*: answer a query (a sum of cells, e.g. an origin's total, a
sector-matrix cell) from the raw (Base) estimates, then clip the answer at 0 with
:func:`clip_query`. For single cells it equals Base-Pos, which is what ``apply("post_pos", …)``
returns; metrics of aggregates should use ``clip_query(raw.sum over the cells)`` instead of summing
the clipped cells.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy import stats

#: Family-wise false-positive rate of the significance cut: under Gaussian noise of variance Var*, the chance
#: that *any* of the d true-zero cells survives the cut is at most α (Bonferroni). The exact α of
#: WLLSL20 was not checked against the paper text; 0.05 is the conventional choice.
BASE_CUT_ALPHA = 0.05

#: Relative slack when Norm-Cut looks for the running sum first exceeding n, so that an already
#: consistent vector is not cut by floating-point rounding (keeps the method idempotent).
_CUT_SLACK = 1e-9

#: O(d) pruning rounds before Norm-Sub's sort (each one can only remove cells that project to 0).
_PRUNING_ROUNDS = 4


def _as_estimates(estimates) -> np.ndarray:
    x = np.asarray(estimates, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"estimates must be a one-dimensional vector over the domain; "
                         f"got shape {x.shape}.")
    if not np.isfinite(x).all():
        raise ValueError("estimates must be finite; found NaN or infinity.")
    return x


def _check_total(n, estimates: np.ndarray) -> float:
    numeric = isinstance(n, (int, float, np.integer, np.floating)) and not isinstance(n, bool)
    if not numeric or not np.isfinite(n) or n < 0:
        raise ValueError(f"n (the number of commuters) must be a finite number ≥ 0; got {n!r}.")
    if n > 0 and estimates.size == 0:
        raise ValueError("cannot spread a positive total n over an empty domain.")
    return float(n)


def clip_query(total):
    """Post-Pos for a query answer: ``max(total, 0)`` (scalar or array of query answers).

    ``total`` must be computed from the *raw* (Base) estimates, e.g. ``clip_query(raw.sum())`` or
    ``clip_query(origin_totals_of(raw))``; summing Base-Pos cells instead adds every cell's positive
    bias to the answer.
    """
    return np.maximum(total, 0)


def zero_cell_variance(mechanism, n: int, d: int) -> float | None:
    """Var* for the significance cut: the mechanism's variance of a cell whose true count is 0, given n and d.

    ``mechanism.variance`` of one empty cell in a table of n people and d cells: it depends only on
    (ε, n, d), never on the data. None if the mechanism has no closed form.
    """
    if d < 2:
        raise ValueError(f"need at least 2 cells to evaluate a zero cell's variance; got d={d}.")
    v = mechanism.variance(np.zeros(1, dtype=np.int64), n=n, d=d)
    return None if v is None else float(np.asarray(v)[0])


def base(estimates, n, variance=None, *, out=None) -> np.ndarray:
    """Base: the raw unbiased estimates, unchanged (a copy, or ``out``: see :func:`apply`)."""
    x = _as_estimates(estimates)
    if out is None:
        return x.copy()
    if out is not x:
        np.copyto(out, x)
    return out


def base_pos(estimates, n, variance=None, *, out=None) -> np.ndarray:
    """Base-Pos (the thesis's "Base-Pro"): negative estimates become 0. Biased upwards on zeros."""
    return np.maximum(_as_estimates(estimates), 0.0, out=out)


def post_pos(estimates, n, variance=None, *, out=None) -> np.ndarray:
    """Post-Pos per cell, which is Base-Pos; for sums of cells use :func:`clip_query`."""
    return base_pos(estimates, n, out=out)


def base_cut(estimates, n, variance=None) -> np.ndarray:
    """Base-Cut as the thesis defines it [Fin24, §2.4.2; §5.3]: sort the estimates in decreasing
    order, keep them until their running sum first exceeds n, set every later one to 0. No
    rescaling, so the kept cells keep their estimates and the total ends just above n.

    Boundary: the estimate whose addition makes the running sum exceed n is *kept* — the thesis's
    own code adds each estimate while the sum is still below n. Negative estimates are set to 0
    too (the thesis introduces Base-Cut to "solve both negative counts" and the total; its code
    clips them first), which matters only when all the positive estimates together do not exceed
    n. Ties at the cut are broken by position (a stable descending order).

    Not [WLLSL20]'s Base-Cut, which is a significance threshold (:func:`significance_cut`).
    """
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    descending = np.sort(x)[::-1]
    crossed = np.flatnonzero(np.cumsum(descending) > total)
    if not crossed.size:
        return np.maximum(x, 0.0)
    keep_count = crossed[0] + 1
    smallest_kept = descending[crossed[0]]
    kept = x > smallest_kept
    tied = np.flatnonzero(x == smallest_kept)[:keep_count - int(kept.sum())]
    kept[tied] = True
    return np.where(kept & (x > 0), x, 0.0)


def significance_cut(estimates, n, variance=None, alpha: float = BASE_CUT_ALPHA) -> np.ndarray:
    """Significance cut (what [WLLSL20] call Base-Cut): zero every estimate below
    ``θ = Φ⁻¹(1 − α/d)·√Var*``; keep the rest unchanged.

    θ is a Bonferroni significance threshold: a cell with true count 0 and Gaussian noise of
    variance Var* exceeds it with probability α/d, so all d zero cells stay below it with
    probability ≥ 1 − α.
    ``variance`` is Var* (see the module docstring); it is required. Not the thesis's Base-Cut
    (:func:`base_cut`), which cuts at a running sum of n.
    """
    x = _as_estimates(estimates)
    if variance is None:
        raise ValueError("The significance cut needs the mechanism's noise variance Var* "
                         "(variance=...); this mechanism has no closed-form variance, so choose "
                         "another method.")
    v = np.asarray(variance, dtype=float)
    if v.size == 0 or not np.isfinite(v).all() or (v < 0).any():
        raise ValueError(f"variance must be finite and ≥ 0; got {variance!r}.")
    if v.ndim and not np.all(v == v.flat[0]):
        raise ValueError("The significance cut needs one data-independent variance Var*; the "
                         "per-cell variance varies with the true counts (using it would leak "
                         "them). Pass zero_cell_variance(mechanism, n, d) instead.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
    theta = stats.norm.isf(alpha / max(x.size, 1)) * np.sqrt(float(v.flat[0]))
    return np.where(x >= theta, x, 0.0)


def norm(estimates, n, variance=None) -> np.ndarray:
    """Norm: add the same constant to every cell so the total is n. Keeps unbiasedness."""
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    return x + (total - x.sum()) / max(x.size, 1)


def norm_mul(estimates, n, variance=None) -> np.ndarray:
    """Norm-Mul: zero the negatives, then scale the rest by ``n / Σ max(ĉ, 0)``.

    If no estimate is positive there is nothing to scale; the total is then spread evenly (n/d per
    cell), which is also what the projection (Norm-Sub) returns for such an input.
    """
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    positive = np.maximum(x, 0.0)
    mass = positive.sum()
    if mass <= 0:
        return np.full(x.size, total / max(x.size, 1))
    return positive * (total / mass)


def norm_cut(estimates, n, variance=None) -> np.ndarray:
    """Norm-Cut: keep the largest estimates until their running sum first exceeds n, zero the rest,
    and scale the kept ones to total n (as in the authors' released code for [WLLSL20]).

    The cell at which the sum crosses n is kept. If even all positive estimates together do not
    exceed n, the authors' code would rescale everything, negatives included; here negatives are
    zeroed and the positives scaled up to n (Norm-Mul), so the output is always non-negative. The
    thesis's Base-Cut (:func:`base_cut`) is the same cut without the final rescaling.
    """
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    descending = np.sort(x)[::-1]
    running = np.cumsum(descending)
    crossed = np.flatnonzero(running > total * (1 + _CUT_SLACK))
    if not crossed.size:
        return norm_mul(x, total)
    keep_count = crossed[0] + 1
    # The kept cells are the keep_count largest; among cells tied at the smallest kept value, the
    # first ones by position (a stable descending order), found without a full argsort.
    smallest_kept = descending[crossed[0]]
    kept = x > smallest_kept
    tied = np.flatnonzero(x == smallest_kept)[:keep_count - int(kept.sum())]
    kept[tied] = True
    return np.where(kept, x * (total / running[crossed[0]]), 0.0)


def norm_sub(estimates, n, variance=None) -> np.ndarray:
    """Norm-Sub: the Euclidean projection onto ``{c ≥ 0, Σc = n}``: ``max(ĉ_v + θ, 0)``, Σ = n.

    O(d log d) (Duchi et al. 2008): sort descending, prefix sums ``S_j``, ``ρ = max{j : u_(j) +
    (n − S_j)/j > 0}``, ``θ = (n − S_ρ)/ρ``. The least-squares estimate under both constraints.
    A few O(d) rounds of Michelot's pruning first discard cells that must end at 0, so the sort
    only sees the plausible ones (about 3× faster at 9.8 M cells; the result is the same).
    """
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    if total == 0:
        return np.zeros(x.size)
    candidates = x
    for _ in range(_PRUNING_ROUNDS):
        # Michelot's bound: the shift θ is at most (n − Σ_S x)/|S| for any S containing the cells
        # that stay positive, so cells at or below −that are 0 in the projection; drop them first.
        bound = (candidates.sum() - total) / candidates.size
        survivors = candidates[candidates > bound]
        if survivors.size == candidates.size:
            break
        candidates = survivors
    u = np.sort(candidates)[::-1]
    running = np.cumsum(u)
    rho = np.flatnonzero(u + (total - running) / np.arange(1, u.size + 1) > 0)[-1] + 1
    theta = (total - running[rho - 1]) / rho
    return np.maximum(x + theta, 0.0)


def round_total(estimates, n, variance=None) -> np.ndarray:
    """Whole numbers ≥ 0 that add up to exactly n: Norm-Sub, then largest-remainder rounding.

    Each cell gets the floor of its projected value; the ``n − Σ floor`` missing units go to the
    cells with the largest fractional parts (ties by position). Every cell ends within 1 of its
    Norm-Sub value. ``n`` must be a whole number. Returned as float64 like every other method.
    """
    x = _as_estimates(estimates)
    total = _check_total(n, x)
    if total != int(total):
        raise ValueError(f"n must be a whole number of commuters to round to; got {n!r}.")
    projected = norm_sub(x, total)
    whole = np.floor(projected)
    missing = int(round(total - whole.sum()))
    if missing > 0:
        candidates = np.flatnonzero(projected > whole)  # only these have a fractional part
        fraction = projected[candidates] - whole[candidates]
        whole[candidates[np.argsort(-fraction, kind="stable")[:missing]]] += 1
    return whole


class Method(NamedTuple):
    """A post-processing: its display name, its function and a one-line definition (the help
    text of every page that offers it)."""

    name: str
    function: Callable[..., np.ndarray]
    definition: str


#: key -> :class:`Method`, in display order: the one declaration of the methods the pages offer.
METHODS: dict[str, Method] = {
    "base": Method("Base (raw estimates)", base,
                   "the unbiased estimates as released; some may be negative."),
    "base_pos": Method("Base-Pos (negatives → 0)", base_pos,
                       "negative estimates set to 0 (the thesis's Base-Pro)."),
    "post_pos": Method("Post-Pos (clip query answers)", post_pos,
                       "sums of cells answered from the raw estimates, then clipped at 0."),
    "base_cut": Method("Base-Cut (keep largest until the sum exceeds n)", base_cut,
                       "sorted largest first, estimates kept until their running sum first "
                       "exceeds n, every later one set to 0, no rescaling (the thesis's rule)."),
    "significance_cut": Method("Significance cut (Wang et al.'s Base-Cut)", significance_cut,
                               "estimates below Φ⁻¹(1 − α/d)·√Var* (α = 0.05) set to 0: what a "
                               "zero cell's noise rarely reaches (Wang et al., NDSS 2020)."),
    "norm": Method("Norm (shift to total n)", norm,
                   "the same amount added to every cell so that the total is n."),
    "norm_mul": Method("Norm-Mul (clip, then scale to n)", norm_mul,
                       "negatives set to 0, the rest scaled to total n."),
    "norm_sub": Method("Norm-Sub (projection onto counts summing to n)", norm_sub,
                       "the nearest table of non-negative counts summing to n."),
    "norm_cut": Method("Norm-Cut (keep largest up to n, scale)", norm_cut,
                       "Base-Cut, then the kept cells scaled to total exactly n."),
    "round": Method("Rounded (whole numbers, total n)", round_total,
                    "Norm-Sub rounded to whole numbers that add up to n."),
}

#: Methods that act on each cell alone and can write their result over the estimates
#: (``overwrite=`` of :func:`apply`).
IN_PLACE = frozenset({"base", "base_pos", "post_pos"})
#: Methods that need the mechanism's zero-cell variance Var* (``variance=`` of :func:`apply`).
NEEDS_VARIANCE = frozenset({"significance_cut"})


def definitions(keys=None) -> str:
    """"Name: definition" of each method (all by default), one per line: a widget's help text."""
    return "\n\n".join(f"**{METHODS[k].name}**: {METHODS[k].definition}"
                        for k in (METHODS if keys is None else keys))


#: Methods that are Euclidean projections onto a convex set holding every possible true table
#: (cells ≥ 0, or Σ = n, or both), so they never increase a release's squared error: the
#: raw release's expected RMSE is an upper bound on theirs. Base is the raw release itself.
NEVER_WORSE_THAN_RAW = frozenset({"base", "base_pos", "post_pos", "norm", "norm_sub"})


def apply(key: str, estimates, n, variance=None, *, overwrite: bool = False) -> np.ndarray:
    """Post-process ``estimates`` with method ``key``; returns a new float64 array, and never
    modifies ``estimates`` unless ``overwrite``: then a method of :data:`IN_PLACE` writes its
    result into them when they are a writeable float64 vector (a caller that keeps only the
    post-processed release: at ED level one 78 MB vector instead of two).

    ``n`` is the public number of commuters; ``variance`` is Var*, used only by the methods of :data:`NEEDS_VARIANCE`.
    """
    try:
        method = METHODS[key].function
    except KeyError:
        raise ValueError(f"unknown post-processing method {key!r}; valid keys: "
                         f"{', '.join(METHODS)}") from None
    _check_total(n, np.asarray(estimates))
    if (overwrite and key in IN_PLACE and isinstance(estimates, np.ndarray)
            and estimates.dtype == np.float64 and estimates.ndim == 1
            and estimates.flags.writeable):
        return method(estimates, n, variance, out=estimates)
    return method(estimates, n, variance)  # every method checks the estimates (one pass, not two)
