"""Baselines (not DP): each method against its definition, the cell-key method against the ONS
package itself, and their place in the release pipeline (ε ignored, labelled "not DP")."""

import numpy as np
import pandas as pd
import pytest
from cell_key_perturbation.create_perturbed_table import create_perturbed_table

from dpcore import mechanisms, release
from dpcore.data import datasets
from dpcore.mechanisms import BASELINE, NOT_DP
from dpcore.mechanisms.baselines import (
    KEY_RANGE,
    NOISY_14,
    ONS_10_5,
    CellKey,
    ptable,
    ptable_row,
)
from tests.mechanisms.stat_checks import assert_unbiased, assert_variance

KEYS = ["suppression", "rounding", "random_rounding", "cell_key"]
SMALL = np.array([0, 1, 2, 3, 4, 7, 9, 10, 11, 12, 13, 14, 22, 499, 750, 751, 1000, 12345])


@pytest.mark.parametrize("key", KEYS)
def test_registered_as_baseline_and_labelled_not_dp(key):
    cls = mechanisms.get(key)
    assert cls.model == BASELINE and not cls.uses_epsilon
    assert cls().guarantee == NOT_DP and "not DP" in cls.name
    assert "Not differentially private" in cls().explain()
    assert key in mechanisms.names(BASELINE)


@pytest.mark.parametrize("key", KEYS)
def test_epsilon_changes_nothing(key):
    od = datasets.load("toy_town")
    a = release.run(od, release.ReleaseSpec(key, 0.1, seed=3)).raw
    b = release.run(od, release.ReleaseSpec(key, 8.0, seed=3)).raw
    np.testing.assert_array_equal(a, b)


def test_suppression_and_rounding_exact():
    out = mechanisms.build("suppression").release(SMALL, None)
    np.testing.assert_array_equal(out, np.where(SMALL >= 10, SMALL, 0))
    out = mechanisms.build("rounding", base=5).release(SMALL, None)
    np.testing.assert_array_equal(out, [0, 0, 0, 5, 5, 5, 10, 10, 10, 10, 15, 15, 20, 500, 750,
                                        750, 1000, 12345])
    out = mechanisms.build("rounding", base=3).release(np.array([1, 2, 4, 5]), None)
    np.testing.assert_array_equal(out, [0, 3, 3, 6])


def test_random_rounding_unbiased_with_its_variance():
    mech = mechanisms.build("random_rounding", base=5)
    rng = np.random.default_rng(7)
    samples = np.stack([mech.release(SMALL, rng) for _ in range(4000)])
    assert (samples % 5 == 0).all()
    assert_unbiased(samples, SMALL, mech.variance(SMALL))
    spread = mech.variance(SMALL) > 0
    assert_variance(samples[:, spread], mech.variance(SMALL)[spread])


@pytest.mark.parametrize("which", [NOISY_14, ONS_10_5])
def test_cell_key_matches_the_ons_package(which):
    """Microdata with record keys through the ONS package's create_perturbed_table; the same
    counts and cell keys through CellKey.perturb give the same published counts."""
    rng = np.random.default_rng(11)
    counts = np.array([1, 3, 9, 10, 11, 12, 13, 40, 260, 751, 1003])
    people = pd.DataFrame({"cell": np.repeat(np.arange(counts.size), counts)})
    people["record_key"] = rng.integers(0, KEY_RANGE, len(people))
    table = ptable(which)
    rows, keys = np.meshgrid(np.arange(1, table.shape[0]), np.arange(KEY_RANGE), indexing="ij")
    frame = pd.DataFrame({"pcv": rows.ravel(), "ckey": keys.ravel(),
                          "pvalue": table[1:].ravel()})
    theirs = create_perturbed_table(people, frame, geog=[], tab_vars=["cell"],
                                    record_key="record_key", threshold=10)
    theirs = theirs.sort_values("cell")
    cell_keys = people.groupby("cell")["record_key"].sum().to_numpy() % KEY_RANGE
    ours = CellKey(ptable=which).perturb(counts, cell_keys)
    np.testing.assert_array_equal(theirs["ckey"], cell_keys)
    np.testing.assert_array_equal(theirs["count"].fillna(0).to_numpy(dtype=float), ours)


def test_shipped_ons_table_is_threshold_and_base_5():
    mech = CellKey(ptable=ONS_10_5)
    out = mech.release(SMALL, np.random.default_rng(0))
    expected = np.where(SMALL >= 10, 5 * np.floor(SMALL / 5 + 0.5), 0)
    # Rows beyond 750 are reused from 501–750, so a large count is rounded by its row's rule.
    small = SMALL <= 750
    np.testing.assert_array_equal(out[small], expected[small])
    assert mech.variance(SMALL).max() == 0


def test_noisy_table_changes_about_14_percent_unbiased_above_threshold():
    table = ptable(NOISY_14)
    assert np.mean(table[100] != 0) == pytest.approx(36 / 256)
    assert table[100].mean() == 0 and (table[1:] + np.arange(1, 751)[:, None] >= 0).all()
    np.testing.assert_array_equal(ptable_row(np.array([1, 750, 751, 1000, 1001])),
                                  [1, 750, 501, 750, 501])
    mech = CellKey()
    counts = np.repeat([5, 10, 12, 50, 2000], 20)
    rng = np.random.default_rng(5)
    samples = np.stack([mech.release(counts, rng) for _ in range(3000)])
    assert_unbiased(samples, mech.expected(counts), mech.variance(counts))
    # Far above the threshold the published count is c + perturbation: check its variance with
    # the perturbation's own (large) excess kurtosis, the chi-square interval widened for it.
    noise = table[100].astype(float)
    kurtosis = np.mean(noise ** 4) / np.mean(noise ** 2) ** 2 - 3
    far = counts >= 50
    assert_variance(samples[:, far], mech.variance(counts)[far], excess_kurtosis=kurtosis)
    np.testing.assert_allclose(mech.expected(counts)[-20:], 2000)
    np.testing.assert_allclose(mech.variance(counts)[-20:], 72 / 256)


def test_cell_key_simulation_is_the_same_method():
    """Per person (record keys) and fast (uniform cell keys) agree in distribution."""
    mech = CellKey()
    counts = np.array([0, 4, 12, 30])
    items = np.repeat(np.arange(counts.size), counts)
    rng = np.random.default_rng(9)
    slow = np.stack([mech.simulate(items, counts.size, rng) for _ in range(3000)])
    assert (slow[:, 0] == 0).all() and (slow[:, 1] == 0).all()
    assert_unbiased(slow, mech.expected(counts), mech.variance(counts))


@pytest.mark.parametrize("key", KEYS)
def test_contract_shape_determinism(key):
    mech = mechanisms.build(key)
    counts = datasets.load("toy_town").to_dense()
    a = mech.release(counts, np.random.default_rng(1))
    b = mech.release(counts, np.random.default_rng(1))
    assert a.shape == counts.shape and a.dtype == np.float64 and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)
    assert (a >= 0).all()
