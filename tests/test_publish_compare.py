"""The side-by-side comparison: its discrete Gaussian has the law it claims, every method's
release has the properties it promises, and the table and intervals are what they say."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data import datasets
from dpcore.interfaces import publish, publish_compare
from dpcore.mechanisms import topdown

ALPHA = 1e-4


@pytest.mark.parametrize("sigma", [0.6, 3.0, 25.0])
def test_discrete_gaussian_has_its_variance(sigma, rng):
    """Sample variance against the exact variance of N_Z(0, σ²) (summed over its support), within
    the z-bound of the sample variance's standard error (kurtosis from the same exact law)."""
    z = np.arange(-int(40 * sigma) - 5, int(40 * sigma) + 6)
    p = np.exp(-z.astype(float) ** 2 / (2 * sigma ** 2))
    p /= p.sum()
    variance = float(np.sum(p * z ** 2))
    kurtosis = float(np.sum(p * z ** 4)) / variance ** 2 - 3
    n = 200_000
    draws = publish_compare.discrete_gaussian(rng, sigma, n)
    assert draws.dtype.kind == "i"
    bound = stats.norm.isf(ALPHA / 4)
    assert abs(draws.mean()) <= bound * math.sqrt(variance / n)
    assert abs(draws.var(ddof=1) / variance - 1) <= bound * math.sqrt(2 / (n - 1) + kurtosis / n)


def test_each_method_keeps_its_promises(rng):
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    levels = topdown.hierarchy(od)
    for method in publish_compare.methods_for(levels):
        sigmas = publish_compare.scales(method, 1.0, 1e-6, (0.5, 0.5), "substitution")
        released = publish_compare.release(method, levels, sigmas, rng)
        assert [r.size for r in released] == [lv.od.domain_size for lv in levels]
        assert topdown.consistent(levels, released) == [True]
        rows = publish_compare.measure(levels, released)
        assert [row["consistent"] for row in rows] == [1.0, 1.0]
        if method != publish.WLS:  # flat clips, TopDown fits: no negative count
            assert all(row["negative"] == 0 for row in rows)
    # Flat's only level gets the whole budget; WLS halves it; TopDown splits ρ.
    flat = publish_compare.scales(publish.FLAT, 1.0, 1e-6, (0.5, 0.5), "substitution")
    assert flat[0] == pytest.approx(publish.calibrate(publish.GAUSSIAN, 1.0, 1e-6).scale)


def test_compare_table_and_intervals():
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    results = publish_compare.compare(od, [0.5, 2.0], 1e-6, trials=4, seed=3)
    assert set(results["method"]) == {"flat", "wls", "topdown"}
    assert (results["low"] <= results["mean"]).all() and (results["mean"] <= results["high"]).all()
    assert len(results) == 3 * 2 * 2 * len(publish_compare.METRICS)
    again = publish_compare.compare(od, [0.5, 2.0], 1e-6, trials=4, seed=3)
    assert results.equals(again)  # seeded: a comparison can be repeated
    table = publish_compare.table(results, 2.0)
    assert list(table.columns) == ["method", "level", *publish_compare.METRICS]
    assert len(table) == 6
    fine = table[table["level"] == od.name].set_index("method")
    # TopDown's fit sends most noisy empty cells to 0: by far the fewest invented commutes.
    assert fine.loc["topdown", "invented"] < fine.loc["wls", "invented"] / 5
    assert fine.loc["topdown", "invented"] < fine.loc["flat", "invented"] / 5


def test_a_comparisons_releases_come_from_the_one_seeding_rule():
    """compare()'s release of (method, ε, trial) is the one drawn from
    dpcore.seeding.generator(seed, "publish comparison", method, ε, trial): measured the same, and
    unchanged when other methods or ε values run beside it (the old per-job seed shifted with
    the job list)."""
    from dpcore import seeding

    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    levels = topdown.hierarchy(od)
    seed, epsilon = 11, 2.0
    together = publish_compare.compare(od, [0.5, epsilon], 1e-6, trials=1, seed=seed,
                                       whole_table=True)
    alone = publish_compare.compare(od, [epsilon], 1e-6, trials=1, seed=seed,
                                    methods=[publish.TOPDOWN], whole_table=True)
    for method in publish_compare.methods_for(levels):
        sigmas = publish_compare.scales(method, epsilon, 1e-6, (0.5, 0.5), "substitution")
        rng = seeding.generator(seed, publish_compare.PURPOSE, method, epsilon, 0)
        expected = publish_compare.measure(levels, publish_compare.release(
            method, levels, sigmas, rng, exact_total=True))
        got = together[(together["method"] == method) & (together["epsilon"] == epsilon)]
        for number, level in enumerate(levels):
            row = got[got["level"] == level.name].set_index("metric")["mean"]
            assert {m: row[m] for m in publish_compare.METRICS} == \
                {m: expected[number][m] for m in publish_compare.METRICS}
    assert (together[(together["method"] == publish.TOPDOWN) & (together["epsilon"] == epsilon)]
            ["mean"].tolist() == alone["mean"].tolist())
