"""OnTheMap's synthesizer on a table too large for a dense vector: its sparse release
(:meth:`OnTheMapSynthesizer.sparse_release`, :mod:`dpcore.mechanisms.sparse_release`) against the
exact Dirichlet–multinomial and against the dense sampler, and its privacy settings unchanged.

Many identical destinations in one table give many independent draws of one destination's law in
one release, so the joint law of a destination's synthetic counts is checked by chi-square
against the pmf enumerated with ``gammaln`` (tests/mechanisms/test_onthemap.py's helpers).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from dpcore import release
from dpcore.analyses import sums
from dpcore.analyses.sums import group_sums
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.mechanisms import build
from dpcore.mechanisms import onthemap as otm
from dpcore.mechanisms import sparse_release as sr
from tests.mechanisms.stat_checks import assert_fits, assert_unbiased
from tests.mechanisms.test_onthemap import compositions, dm_logpmf

#: One destination's true counts over its origins; the table repeats it ``COPIES`` times.
PATTERN = np.array([3, 1, 0, 0, 0])
COPIES = 4000


def repeated(pattern: np.ndarray, copies: int) -> ODMatrix:
    """A table of ``copies`` destinations, each with the origin counts ``pattern``."""
    rows, cols = np.meshgrid(np.arange(pattern.size), np.arange(copies), indexing="ij")
    counts = np.repeat(pattern, copies)
    zones = [ZoneSet.from_ids([f"{side}{i}" for i in range(size)])
             for side, size in (("o", pattern.size), ("d", copies))]
    return ODMatrix.from_pairs("repeated", *zones, rows.ravel(), cols.ravel(), counts)


def observable(filled: np.ndarray, empty_sorted: np.ndarray) -> tuple:
    """What the sparse release says about one destination: its non-empty origins' counts in
    order, and its empty origins' counts as a multiset (their places are not drawn)."""
    return tuple(filled) + tuple(sorted(empty_sorted, reverse=True))


def exact_law(pattern: np.ndarray, alpha: float, m: int | None = None) -> dict:
    """P[observable] from the Dirichlet–multinomial pmf over every composition of m (default:
    the pattern's total)."""
    law: dict = {}
    outputs = compositions(int(pattern.sum()) if m is None else m, pattern.size)
    for out, logp in zip(outputs, dm_logpmf(outputs, pattern, alpha)):
        key = observable(out[pattern > 0], out[pattern == 0])
        law[key] = law.get(key, 0.0) + float(np.exp(logp))
    return law


def sparse_observables(od: ODMatrix, mech, rng) -> list[tuple]:
    """Each destination's observable in one sparse release."""
    nonzero, (dest, value, number), empty = mech.sparse_release(od, rng)
    filled = nonzero.reshape(-1, od.n_destinations).T          # (destinations, filled origins)
    per = [[] for _ in range(od.n_destinations)]
    for w, v, c in zip(dest, value, number):
        per[w] += [int(v)] * int(c)
    return [observable(filled[w].astype(int), per[w] + [0] * (empty[w] - len(per[w])))
            for w in range(od.n_destinations)]


def codes(observed: list[tuple], law: dict) -> tuple[np.ndarray, np.ndarray]:
    keys = list(law)
    index = {key: i for i, key in enumerate(keys)}
    return np.array([index[o] for o in observed]), np.array([law[k] for k in keys])


# ------------------------------------------------------------------------------ exact in law
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_a_destinations_sparse_release_is_the_exact_dirichlet_multinomial(rng, epsilon):
    od = repeated(PATTERN, COPIES)
    mech = build("onthemap", epsilon=epsilon)
    law = exact_law(PATTERN, otm.pure_alpha(PATTERN.sum(), epsilon))
    assert_fits(*codes(sparse_observables(od, mech, rng), law))


def test_the_sparse_and_the_dense_sampler_agree(rng):
    """The dense sampler's draws of the same table, read the same way, fit the same law, and
    the two samples are alike (contingency chi-square)."""
    od = repeated(PATTERN, COPIES)
    mech = build("onthemap", epsilon=1.0)
    dense = mech.for_destinations(COPIES).release(od.to_dense(), rng).reshape(-1, COPIES).T
    dense_obs = [observable(row[PATTERN > 0].astype(int), row[PATTERN == 0].astype(int))
                 for row in dense]
    sparse_obs = sparse_observables(od, mech, rng)
    law = exact_law(PATTERN, otm.pure_alpha(PATTERN.sum(), 1.0))
    assert_fits(*codes(dense_obs, law))
    keys = sorted(set(dense_obs) | set(sparse_obs))
    table = np.array([[obs.count(key) for key in keys] for obs in (dense_obs, sparse_obs)])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > 1e-4


def symmetric_law(m: int, alpha: float, cells: int) -> dict:
    """P[sorted counts] of a symmetric Dirichlet–multinomial: for each partition of m into at
    most ``cells`` parts, its arrangements × the pmf of one of them."""
    law = {}

    def partitions(left, largest):
        if left == 0:
            yield ()
            return
        for part in range(min(left, largest), 0, -1):
            for rest in partitions(left - part, part):
                yield (part,) + rest

    for parts in partitions(m, m):
        if len(parts) > cells:
            continue
        counts = np.array(parts + (0,) * (cells - len(parts)))
        _, repeats = np.unique(counts, return_counts=True)
        ways = np.exp(gammaln(cells + 1) - gammaln(repeats + 1).sum())
        law[tuple(counts)] = float(ways * np.exp(dm_logpmf(counts, np.zeros(cells), alpha)))
    return law


@pytest.mark.parametrize("m, alpha, cells, narrow", [
    (10, 0.7, 3, False), (12, 0.05, 4, False),           # prior ≤ workers: split over halves
    (8, 1.5, 6, False), (5, 0.3, 20, False),             # prior > workers: Poissonised
    (5, 0.3, 20, True), (6, 40.0, 5, True)])             # …with the tails beyond the window
def test_the_empty_cells_histogram_is_exact(rng, monkeypatch, m, alpha, cells, narrow):
    """:func:`symmetric_profile` against the enumerated law of the sorted counts, also with the
    window shrunk so that values are drawn from the tails beyond it (``narrow``)."""
    if narrow:
        monkeypatch.setattr(otm, "WINDOW_SDS", -3.0)
    runs = 6000
    rows, values, numbers = otm.symmetric_profile(np.full(runs, m), np.full(runs, alpha),
                                                  np.full(runs, cells), rng)
    assert np.array_equal(np.bincount(rows, weights=values * numbers, minlength=runs),
                          np.full(runs, m))
    per = [[] for _ in range(runs)]
    for r, v, c in zip(rows, values, numbers):
        per[r] += [int(v)] * int(c)
    observed = [tuple(sorted(p + [0] * (cells - len(p)), reverse=True)) for p in per]
    law = symmetric_law(m, alpha, cells)
    assert abs(sum(law.values()) - 1) < 1e-9
    assert_fits(*codes(observed, law))


def test_a_subsets_minimum_follows_its_law(rng):
    """The smallest of a uniform 3-subset of [0, 12): P[min ≥ x] = C(12 − x, 3)/C(12, 3)."""
    draws = sr.subset_minimum(np.full(20000, 12), np.full(20000, 3), rng)
    exact = np.array([stats.hypergeom.pmf(0, 12, x, 3) - stats.hypergeom.pmf(0, 12, x + 1, 3)
                      for x in range(10)])
    assert_fits(draws, exact)


# --------------------------------------------------------------------- the release pipeline
def test_the_pipeline_releases_it_sparsely_with_totals_and_places_per_destination(rng):
    """Through :func:`dpcore.release.run` (sparse path forced): the total is n; every named
    cell of the released top that the table leaves empty is an empty origin of its own
    destination; with every present cell kept, each destination's named cells add up to it."""
    table = rng.integers(0, 4, size=(30, 12)) * (rng.random((30, 12)) < 0.3)
    zones = [ZoneSet.from_ids([f"{side}{i}" for i in range(size)])
             for side, size in (("o", 30), ("d", 12))]
    od = ODMatrix.from_dense("small", *zones, table.ravel())
    spec = release.ReleaseSpec("onthemap", 3.0, {}, ("base",), 7)
    result = release.run(od, spec, sparse=True, k=10)
    raw = result.raw
    assert result.sparse and result.approximation is None
    assert raw.values.sum() + raw.zeros.total() == od.n
    drawn = sr.draw(od, spec.build(), spec.generator(), keep=od.domain_size)
    named = np.zeros(od.domain_size)
    named[drawn.top_flat] = drawn.top_values
    named[od.flat_index] = drawn.nonzero
    np.testing.assert_array_equal(named.reshape(30, 12).sum(axis=0), table.sum(axis=0))
    empty_named = np.setdiff1d(drawn.top_flat, od.flat_index)
    assert empty_named.size == drawn.zeros.count_at_least(0.5) > 0
    assert np.all(table.ravel()[empty_named] == 0)
    # the planner's sums fill each workplace's unnamed empty cells with its own mean, so each
    # workplace's inflow is its (exact) total, and a single unnamed cell its workplace's mean
    inflow, cells = group_sums(raw, od, np.arange(30), np.arange(12), "col")
    np.testing.assert_allclose(inflow, table.sum(axis=0))
    assert np.all(cells == 30)
    rows, cols = np.arange(30), np.arange(30) % 12
    pairs, _ = group_sums(raw, od, rows, cols, "pairs")
    unnamed = np.isnan(raw.at(rows * 12 + cols))
    assert unnamed.any()
    np.testing.assert_allclose(pairs[unnamed], sums.empty_mean(raw, od)[cols][unnamed])


def test_an_empty_hit_lands_on_a_uniform_empty_origin(rng):
    """One destination whose synthetic worker lands on an empty origin: over seeds, which
    empty origin is named is uniform (chi-square over the 6 empty origins)."""
    table = np.zeros((8, 1), dtype=np.int64)
    table[[1, 4], 0] = 1                                   # 2 filled, 6 empty origins
    zones = [ZoneSet.from_ids([f"{side}{i}" for i in range(size)])
             for side, size in (("o", 8), ("d", 1))]
    od = ODMatrix.from_dense("one", *zones, table.ravel())
    mech = build("onthemap", epsilon=0.05)                 # the prior dominates: most land empty
    hits = []
    for _ in range(800):       # one named empty cell per release: independent draws
        named = np.setdiff1d(sr.draw(od, mech, rng, keep=8).top_flat, od.flat_index)
        if named.size:
            hits.append(rng.choice(named))
    empty_origins = np.array([0, 2, 3, 5, 6, 7])
    codes_ = np.searchsorted(empty_origins, hits)
    assert np.array_equal(empty_origins[codes_], hits)
    assert_fits(codes_, np.full(6, 1 / 6))


# ------------------------------------------------------------------------------ the privacy
def test_the_sparse_release_uses_the_dense_releases_prior(rng):
    """Per cell, E[s_i] = m(n_i + α)/(n + kα) with the same α as the dense release (the ε-DP
    prior; the probabilistic test's smallest α for a workplace of ≤ 1,000 workers), within a
    z bound from the Dirichlet–multinomial variance."""
    od = repeated(PATTERN, COPIES)
    for settings, alpha in ((dict(epsilon=2.0), otm.pure_alpha(4, 2.0)),
                            (dict(epsilon=2.0, delta=0.05, prior="test"),
                             otm.smallest_alpha(4, 5, 2.0, 0.05))):
        nonzero, (dest, value, number), empty = build("onthemap", **settings).sparse_release(
            od, rng)
        filled = nonzero.reshape(-1, COPIES).T
        in_empty = np.bincount(dest, weights=value * number, minlength=COPIES)
        samples = np.column_stack([filled, in_empty])
        mean = otm.destination_mean(PATTERN, alpha, 4)
        variance = otm.destination_variance(PATTERN, alpha, 4)
        # the empty block's total is Beta-binomial(m; 3α, n + 2α): its variance
        q = 3 * alpha / (4 + 5 * alpha)
        A = 4 + 5 * alpha
        block = 4 * q * (1 - q) * (A + 4) / (A + 1)
        assert_unbiased(samples, np.append(mean[:2], mean[2:].sum()),
                        np.append(variance[:2], block))


def test_the_sparse_path_keeps_the_refusals_and_the_noisy_totals(rng):
    big = repeated(np.array([250_000, 0, 0]), 2)
    nonzero, (dest, value, number), _ = build("onthemap", prior="test").sparse_release(big, rng)
    np.testing.assert_array_equal(
        nonzero.reshape(-1, 2).sum(axis=0) + np.bincount(dest, weights=value * number,
                                                         minlength=2), [250_000, 250_000])
    with pytest.raises(ValueError, match="'parent', which has no sparse release"):
        build("onthemap", candidates="parent").sparse_release(big, rng)
    od = repeated(PATTERN, 50)
    mech = build("onthemap", epsilon=1.0, total="noisy")
    seed_rng = np.random.default_rng(11)
    nonzero, (dest, value, number), _ = mech.sparse_release(od, seed_rng)
    sizes = mech.sizes(np.full(50, 4), np.random.default_rng(11))   # the same first draws
    per_destination = (nonzero.reshape(-1, 50).sum(axis=0)
                       + np.bincount(dest, weights=value * number, minlength=50))
    np.testing.assert_array_equal(per_destination, sizes)
    assert not np.all(sizes == 4)
