"""Variances of a sum of estimates over a cell set S (the analyses' intervals,
dpcore/analyses/intervals.py): each closed form checked exactly against enumeration of the
mechanism's output law on tiny domains, and against the per-user protocol (``simulate``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcore import mechanisms
from dpcore.analyses import intervals
from dpcore.mechanisms.hadamard import _xor_zero_triples, closed_triples


def _hr_exact(mech, counts, chosen, permutation) -> float:
    """Var ĉ_S by enumerating every output y's probability for every sender's cell."""
    d = len(counts)
    lay, uniform, scale = mech.constants(d)
    symbol = np.arange(d) if permutation is None else np.asarray(permutation)
    reads = np.zeros(lay.outputs)          # g(y) = Σ_{s∈S} ĉ_s's coefficient of y, / scale
    for s in chosen:
        for y in range(lay.outputs):
            if lay.supports(symbol[s], y):
                reads[y] += 1
            elif y // lay.block_size == symbol[s] // lay.items_per_block:
                reads[y] -= 1
    total = 0.0
    for x in np.flatnonzero(counts):
        law = np.full(lay.outputs, uniform / lay.outputs)
        law += [(1 - uniform) * 2 / lay.block_size * lay.supports(symbol[x], y)
                for y in range(lay.outputs)]
        total += counts[x] * ((law * reads ** 2).sum() - (law * reads).sum() ** 2)
    return scale ** 2 * total


def test_closed_triples_by_brute_force():
    for bound in range(40):
        assert _xor_zero_triples(bound) == sum(
            1 for a in range(bound + 1) for b in range(bound + 1) if a ^ b <= bound)
    for epsilon, d in ((1.2, 5), (1.5, 10), (1.2, 13), (3.0, 40), (3.0, 300)):
        lay = mechanisms.build("hr", epsilon=epsilon).layout(d)
        rows = [s % lay.items_per_block + 1 for s in range(d)]
        block = [s // lay.items_per_block for s in range(d)]
        assert closed_triples(lay) == sum(
            1 for a, b, c in itertools.permutations(range(d), 3)
            if block[a] == block[b] == block[c] and rows[a] ^ rows[b] ^ rows[c] == 0)


@pytest.mark.parametrize("epsilon,d", [(1.2, 5), (1.2, 6), (3.0, 6)])
def test_hr_blocked_sum_variance_is_the_average_over_permutations(epsilon, d):
    """Blocked form: the closed form equals the exact variance averaged over every permutation."""
    mech = mechanisms.build("hr", epsilon=epsilon)
    rng = np.random.default_rng(7)
    assert mech.layout(d).blocked
    for m in range(1, d + 1):
        counts = rng.integers(0, 5, d).astype(float)
        chosen = rng.choice(d, m, replace=False)
        exact = np.mean([_hr_exact(mech, counts, chosen, p)
                         for p in itertools.permutations(range(d))])
        theory = mech.sum_variance(m, counts[chosen].sum(), counts.sum(), d)
        assert theory == pytest.approx(exact, rel=1e-12)
    # one cell: the per-cell variance of a run that draws its permutation
    assert mech.sum_variance(1, counts[0], counts.sum(), d) == pytest.approx(
        mech.variance(counts, n=counts.sum(), d=d)[0], rel=1e-12)


@pytest.mark.parametrize("epsilon,d", [(1.0, 6), (0.5, 7), (0.2, 9)])
def test_hr_unblocked_sum_variance_bounds_the_exact_one(epsilon, d):
    """ε ≤ 1: the closed form is an upper bound, reached for one cell and for sets whose rows'
    XORs leave the domain empty; never above the bound (2 − u)× the W = 0 variance."""
    mech = mechanisms.build("hr", epsilon=epsilon)
    _, uniform, scale = mech.constants(d)
    rng = np.random.default_rng(3)
    for m in range(1, d + 1):
        counts = rng.integers(0, 5, d).astype(float)
        n, chosen = counts.sum(), rng.choice(d, m, replace=False)
        t = counts[chosen].sum()
        exact = _hr_exact(mech, counts, chosen, None)
        bound = mech.sum_variance(m, t, n, d)
        lowest = scale ** 2 * n * m - t
        assert exact <= bound * (1 + 1e-12) and lowest <= exact * (1 + 1e-12)
        assert bound <= (2 - uniform) * lowest + 1e-9
        if m == 1:
            assert bound == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("epsilon,d", [(0.1, 5), (0.5, 7), (1.0, 8), (2.0, 6)])
def test_subset_selection_protocol_sum_variance_by_enumeration(epsilon, d):
    """The k-subset protocol's law enumerated over every subset: the closed form is exact and
    no larger than the independent-cell sum the fast release has."""
    mech = mechanisms.build("ss", epsilon=epsilon)
    k, e = mech.subset_size(d), math.exp(epsilon)
    _, p, q = mech._probabilities(d)
    subsets = list(itertools.combinations(range(d), k))
    rng = np.random.default_rng(5)
    for m in range(1, d + 1):
        chosen = set(rng.choice(d, m, replace=False).tolist())
        counts = rng.integers(0, 4, d).astype(float)
        n, t = counts.sum(), counts[list(chosen)].sum()
        hits = np.array([len(chosen.intersection(s)) for s in subsets], dtype=float)
        exact = 0.0
        for x in range(d):
            law = np.array([e if x in s else 1.0 for s in subsets])
            law /= law.sum()
            exact += counts[x] * ((law * hits ** 2).sum() - (law * hits).sum() ** 2)
        exact /= (p - q) ** 2
        assert mech.protocol_sum_variance(m, t, n, d) == pytest.approx(exact, rel=1e-10, abs=1e-8)
        rule = intervals.Interval("ss", mech, n=n, d=d)
        assert mech.protocol_sum_variance(m, t, n, d) <= rule.variance(m, t) * (1 + 1e-12)


RUNS = 1500


@pytest.mark.parametrize("key,epsilon", [("hm", 3.0), ("dbitflip", 1.0), ("hr", 1.5),
                                         ("ss", 1.0)])
def test_protocol_sums_match_the_closed_form(key, epsilon):
    """The per-user protocol (``simulate``, a fresh permutation per run for HR) on a small
    table: the sample variance of sums over several sets within chi-square bounds of the closed
    form (HM and dBitFlip: Cov = 0 in the protocol itself; SS: the protocol's own law)."""
    d = 24
    params = {"d_b": 3} if key == "dbitflip" else {}
    mech = mechanisms.build(key, epsilon=epsilon, **params)
    counts = np.random.default_rng(1).integers(0, 6, d)
    items = np.repeat(np.arange(d), counts)
    n = len(items)
    sets = [np.arange(1), np.arange(5), np.arange(2, 14), np.arange(d - 1)]
    rng = np.random.default_rng(11)
    sums = np.array([[est[s].sum() for s in sets]
                     for est in (mech.simulate(items, d, rng) for _ in range(RUNS))])
    rule = intervals.Interval(key, mech, n=n, d=d)
    for column, chosen in enumerate(sets):
        m, t = len(chosen), counts[chosen].sum()
        theory = (mech.protocol_sum_variance(m, t, n, d) if key == "ss"
                  else rule.variance(m, t))
        assert sums[:, column].mean() == pytest.approx(t, abs=5 * math.sqrt(theory / RUNS))
        ratio = sums[:, column].var(ddof=1) / theory
        k = RUNS - 1
        assert (stats.chi2.ppf(0.0005 / len(sets), k) / k <= ratio
                <= stats.chi2.ppf(1 - 0.0005 / len(sets), k) / k), (column, ratio)
