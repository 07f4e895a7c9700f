"""TopDown (InfTDA): the package's exact output for the same noise, levels that add up,
non-negative integers on every level, zero parents not expanded, and the privacy accounting
checked against OpenDP's own."""

import math

import numpy as np
import pandas as pd
import pytest
from InfTDA import differential_privacy as reference_dp
from InfTDA import mechanism as reference
from InfTDA.optimization import int_opt as reference_int_opt

from dpcore.data import datasets, views
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.interfaces import publish, published_domain
from dpcore.mechanisms import topdown
from dpcore.mechanisms.base import ADD_REMOVE, SUBSTITUTION
from dpcore.mechanisms.central import l2_sensitivity

#: The manifest's input entry: a bundled dataset's public geography.
SOURCE = publish.input_entry("test", views.View(), {"source": published_domain.BUNDLED})


def three_levels(rng) -> ODMatrix:
    """Regions → districts → blocks, 2 × 3 × 2 zones per side (144 cells), sparse counts."""
    regions = ZoneSet.from_ids(["R0", "R1"])
    districts = ZoneSet.from_ids([f"D{i}" for i in range(6)],
                                 parent=[f"R{i // 3}" for i in range(6)], parent_zones=regions)
    blocks = ZoneSet.from_ids([f"B{i}" for i in range(12)],
                              parent=[f"D{i // 2}" for i in range(12)], parent_zones=districts)
    dense = rng.poisson(20, 144) * (rng.random(144) < 0.4)
    return ODMatrix.from_dense("blocks", blocks, blocks, dense)


class Stream:
    """One stream of integer noise, consumed in call order by both implementations."""

    def __init__(self, rng, sigma: float, size: int = 200_000):
        self.values = np.rint(rng.normal(0, sigma, size)).astype(np.int64)
        self.used = 0

    def take(self, counts) -> np.ndarray:
        counts = np.asarray(counts, dtype=np.int64)
        part = self.values[self.used:self.used + counts.size]
        self.used += counts.size
        return counts + part


def reference_release(levels, sigma, seed, monkeypatch) -> dict[int, int]:
    """``InfTDA.inf_tda`` on the same hierarchy (MultiIndex: each level's cell id), its OpenDP
    sampler replaced by the shared noise stream; the finest level's non-zero cells."""
    stream = Stream(np.random.default_rng(seed), sigma)
    monkeypatch.setattr(reference, "make_gaussian_noise",
                        lambda d_in, rho: lambda values: stream.take(values))
    ids = [np.arange(levels[-1].od.domain_size)]
    for level in levels[:0:-1]:
        ids.insert(0, level.parent[ids[0]])
    index = pd.MultiIndex.from_arrays(ids)
    data = pd.Series(levels[-1].od.to_dense(), index=index)
    out = reference.inf_tda(data, (1.0, 1e-6), 1)
    return {key[-1]: int(value) for key, value in out.items()}


def ours(levels, sigma, seed) -> list[np.ndarray]:
    stream = Stream(np.random.default_rng(seed), sigma)
    return topdown.topdown(levels, levels[-1].od.n, lambda number, counts: stream.take(counts))


def test_int_opt_is_the_package_s_and_a_valid_fit(rng):
    for _ in range(2000):
        m = int(rng.integers(1, 80))
        truth = rng.poisson(rng.choice([0.5, 5, 50]), m) * (rng.random(m) < 0.5)
        x = truth + np.rint(rng.normal(0, rng.choice([1, 4, 25]), m)).astype(np.int64)
        c = max(0, int(truth.sum() + rng.integers(-15, 15)))
        y = topdown.int_opt(x, c)
        np.testing.assert_array_equal(y, np.asarray(reference_int_opt(x.copy(), c), dtype=int))
        assert y.dtype == np.int64 and y.min() >= 0 and y.sum() == c


@pytest.mark.parametrize("sigma", [0.7, 3.0, 40.0])
def test_topdown_is_the_package_s_for_the_same_noise(sigma, seed, monkeypatch, rng):
    for od in (datasets.load("ireland_ed").subset_by_parent(["Leitrim", "Sligo"]),
               three_levels(rng)):
        levels = topdown.hierarchy(od)
        expected = reference_release(levels, sigma, seed, monkeypatch)
        fine = ours(levels, sigma, seed)[-1]
        assert {int(c): int(fine[c]) for c in np.flatnonzero(fine)} == expected


def test_every_level_adds_up_is_whole_and_non_negative_and_zeros_stay_closed(rng):
    od = three_levels(rng)
    levels = topdown.hierarchy(od)
    assert len(levels) == 3 and [lv.od.domain_size for lv in levels] == [4, 36, 144]
    noised = []

    def noise(number, counts):
        noised.append(counts.size)
        return counts + np.rint(rng.normal(0, 15, counts.size)).astype(np.int64)
    released = topdown.topdown(levels, od.n, noise)
    assert topdown.consistent(levels, released) == [True, True]
    assert released[0].sum() == od.n
    for values in released:
        assert values.dtype == np.int64 and values.min() >= 0
    for number in (1, 2):  # a parent published as 0 has only zeros below it, never noised
        closed = released[number - 1][levels[number].parent] == 0
        assert np.all(released[number][closed] == 0)
        assert noised[number] == np.count_nonzero(~closed)
    assert noised[0] == 4


def test_publish_topdown_with_opendp():
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    result = publish.publish_topdown(od, 1.0, delta=1e-6, source=SOURCE)
    levels = topdown.hierarchy(od)
    released = list(result.released.values())
    assert topdown.consistent(levels, released) == [True]
    assert all(v.min() >= 0 and v.dtype == np.int64 for v in released)
    # levels named by role in the release and the manifest, never by the data's name
    assert [lv["name"] for lv in result.manifest["levels"]] == ["parent level", "fine level"]
    assert set(result.table["level"]) <= {"parent level", "fine level"}
    assert "Chebyshev" in result.manifest["post_processing"]
    assert len(result.manifest["levels"]) == 2
    # A subset of areas: a commute replaced by one leaving the areas changes its n.
    assert "not published exactly" in result.manifest["total"]["how"]


def test_the_whole_table_under_substitution_keeps_n(monkeypatch):
    """n is the same in every neighbouring table of the whole table under substitution: the top
    level is fitted to it (the paper's bounded setting). Otherwise the top level is its noisy
    counts clipped at 0, never n exactly."""
    od = datasets.load("toy_town")
    whole = publish.publish_topdown(od, 1.0, delta=1e-6, whole_table=True, source=SOURCE)
    assert whole.released[od.name].sum() == od.n
    assert "true number of commuters" in whole.manifest["total"]["how"]
    levels = topdown.hierarchy(od)
    assert len(levels) == 1  # a single level: a non-negative integer release
    shift = np.arange(levels[0].od.domain_size) % 5 - 2
    released = topdown.topdown(levels, None, lambda number, counts: counts + shift)
    np.testing.assert_array_equal(released[0], np.maximum(od.to_dense() + shift, 0))
    for options in ({"neighbours": ADD_REMOVE, "whole_table": True}, {"whole_table": False}):
        calls = []

        def fake(levels, root, noise, progress=None, calls=calls):
            calls.append(root)
            return [lv.od.to_dense() for lv in levels]
        with monkeypatch.context() as patch:
            patch.setattr(topdown, "topdown", fake)
            result = publish.publish_topdown(od, 1.0, delta=1e-6, source=SOURCE, **options)
        assert calls == [None]
        assert "not published exactly" in result.manifest["total"]["how"]


@pytest.mark.parametrize("neighbours", [SUBSTITUTION, ADD_REMOVE])
@pytest.mark.parametrize("epsilon,delta,shares", [(1.0, 1e-6, [0.5, 0.5]),
                                                  (0.3, 1e-9, [0.2, 0.3, 0.5])])
def test_accounting_against_opendp(epsilon, delta, shares, neighbours):
    names = [f"level {i}" for i in range(len(shares))]
    rho, levels = publish.topdown_budget(epsilon, delta, shares, names, neighbours)
    d_in = l2_sensitivity(neighbours)
    for level, share in zip(levels, shares):
        assert level.rho == pytest.approx(rho * share, rel=1e-6)
        assert level.rho <= rho * share * (1 + 1e-12)  # OpenDP's map certifies the share
        assert level.scale == pytest.approx(d_in / math.sqrt(2 * rho * share), rel=1e-6)
        assert level.measurement.map(d_in) == level.rho
    assert sum(level.rho for level in levels) <= rho * (1 + 1e-9)
    # OpenDP's own composition and zCDP → (ε, δ) conversion certify the whole budget.
    assert publish.certified_epsilon(levels, delta, neighbours) <= epsilon * (1 + 1e-9)
    assert publish.certified_epsilon(levels, delta, neighbours) == pytest.approx(epsilon,
                                                                                 rel=1e-4)
    # The package's conversion (Bun & Steinke) is looser: less ρ for the same (ε, δ).
    assert reference_dp.get_rho_from_budget((epsilon, delta)) < rho


def test_bad_shares_are_refused():
    with pytest.raises(ValueError, match="adding up to 1"):
        publish.topdown_budget(1.0, 1e-6, [0.5, 0.6], ["a", "b"])
    with pytest.raises(ValueError, match="one per level"):
        publish.topdown_budget(1.0, 1e-6, [1.0], ["a", "b"])


def test_error_within_the_bound(rng):
    """Max absolute error per level within :func:`topdown.error_bound` at β = 10⁻³ (the test can
    fail with probability ≤ 10⁻³ for this seed's draw; the discrete Gaussian here is drawn
    exactly from its probability mass function)."""
    from dpcore.interfaces.publish_compare import discrete_gaussian
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim", "Sligo"])
    levels = topdown.hierarchy(od)
    sigma = 8.0
    released = topdown.topdown(levels, od.n, lambda number, counts:
                               counts + discrete_gaussian(rng, sigma, counts.size))
    bounds = topdown.error_bound([sigma, sigma], [lv.od.domain_size for lv in levels], 1e-3)
    for level, values, bound in zip(levels, released, bounds):
        assert np.abs(values - level.od.to_dense()).max() <= bound


def test_threaded_noise_fills_every_chunk_in_order():
    """Two threads draw the chunks: every cell gets its own count plus noise (a count of 10⁹
    per cell, far from 0, shows an unfilled or misplaced chunk), progress reaches the end."""
    noise = publish.calibrate(publish.GAUSSIAN, 1.0, 1e-6)
    counts = (np.arange(publish.CHUNK * 3 + 17) * 1_000_000_000).astype(np.int64)
    seen = []
    out = publish.noisy(noise, counts, lambda done, total: seen.append((done, total)), workers=2)
    assert np.abs(out - counts).max() < 30 * noise.scale
    assert seen[-1] == (counts.size, counts.size) and len(seen) == 4
