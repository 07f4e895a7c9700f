"""The 'choosing a mechanism' table and the local-mechanism recommendation."""

import math

import numpy as np
import pytest

from dpcore import mechanisms
from dpcore.theory.accuracy import (
    DECODE_BUDGET,
    FAILURE,
    compare_mechanisms,
    recommend_local,
)

COUNTY = {"n": 2_750_239, "d": 1_085}
CENTRAL_WITH_VARIANCE = [k for k in mechanisms.names("central")
                         if mechanisms.build(k, epsilon=1.0).variance(np.array([1, 0])) is not None]


@pytest.fixture(scope="module")
def county_table():
    return compare_mechanisms(COUNTY["n"], COUNTY["d"], 1.0, cell_count=5_000).set_index("key")


def test_table_lists_every_histogram_mechanism(county_table):
    expected = {k for k in mechanisms.names("central") + mechanisms.names("local")
                if mechanisms.build(k, epsilon=1.0).variance(np.array([1, 0])) is not None}
    assert set(county_table.index) == expected
    assert "topk" not in county_table.index          # no closed-form variance
    central = county_table["model"] == "central"
    assert county_table.loc[central, "bits_per_user"].isna().all()
    assert (county_table.loc[~central, "bits_per_user"] > 0).all()


def test_variances_come_from_the_mechanisms(county_table):
    # Evaluate each mechanism directly on a full counts vector and compare cell by cell.
    n, d = COUNTY["n"], COUNTY["d"]
    counts = np.zeros(d, dtype=np.int64)
    counts[7], counts[100] = 5_000, n - 5_000
    for key, row in county_table.iterrows():
        mech = mechanisms.build(key, **mechanisms.declared(key, {"epsilon": 1.0, "delta": 1e-6}))
        full = mech.variance(counts)
        assert row["variance_cell"] == pytest.approx(full[7], rel=1e-12), key
        assert row["variance_empty"] == pytest.approx(full[3], rel=1e-12), key
        if mech.model == "local":
            assert row["bits_per_user"] == mech.bits_per_user(d)


@pytest.mark.parametrize("key", CENTRAL_WITH_VARIANCE)
def test_central_variance_does_not_depend_on_the_domain(key):
    # A central mechanism's per-cell variance depends on the cell's own count alone, not on the
    # table's n and d (which its variance accepts and ignores).
    mech = mechanisms.build(key, **mechanisms.declared(key, {"epsilon": 0.7, "delta": 1e-5}))
    short = mech.variance(np.array([40, 0]))
    long = mech.variance(np.array([40, 0, 3, 1000, 0, 0, 9]))
    assert short[0] == pytest.approx(long[0]) and short[1] == pytest.approx(long[1])


def test_known_values_at_county_level(county_table):
    n, d, e = COUNTY["n"], COUNTY["d"], math.e
    # Laplace under substitution: b = 2/ε, Var = 2b² = 8, max error b·ln(d/β).
    assert county_table.loc["laplace", "variance_empty"] == pytest.approx(8.0)
    assert county_table.loc["laplace", "max_error"] == pytest.approx(2 * math.log(d / FAILURE))
    # GRR and OUE leading terms [WBLJ17].
    assert county_table.loc["grr", "variance_empty"] == pytest.approx(
        n * (e + d - 2) / (e - 1) ** 2)
    assert county_table.loc["oue", "variance_empty"] == pytest.approx(4 * n * e / (e - 1) ** 2)
    assert county_table.loc["oue", "variance_cell"] == pytest.approx(
        4 * n * e / (e - 1) ** 2 + 5_000)
    assert county_table.loc["grr", "bits_per_user"] == 11
    assert county_table.loc["oue", "bits_per_user"] == d
    assert county_table.loc["oue", "server_operations"] == n * d
    assert county_table.loc["grr", "server_cost"] == "O(n + d)"


def test_max_error_orders(county_table):
    # Central noise does not grow with n; local noise grows like √n; local ≫ central.
    small = compare_mechanisms(10_000, 1_085, 1.0).set_index("key")
    assert small.loc["laplace", "max_error"] == county_table.loc["laplace", "max_error"]
    ratio = county_table.loc["oue", "max_error"] / small.loc["oue", "max_error"]
    assert ratio == pytest.approx(math.sqrt(COUNTY["n"] / 10_000), rel=0.01)
    assert (county_table.loc[county_table["model"] == "local", "max_error"]
            > 100 * county_table.loc["laplace", "max_error"]).all()
    assert county_table.loc["laplace", "max_error_order"] == "O(log d / ε)"
    assert county_table.loc["olh", "max_error_order"] == "O(√(n·log d) / ε)"


def test_errors_shrink_as_epsilon_grows():
    tables = [compare_mechanisms(100_000, 500, eps).set_index("key") for eps in (0.5, 1, 2, 4)]
    for key in tables[0].index:
        errors = [t.loc[key, "max_error"] for t in tables]
        assert (np.diff(errors) < 0).all(), key


@pytest.mark.parametrize("d, eps, n, expected", [
    (10, 2.0, 1_000, "grr"),             # 10 < 3e² + 2 ≈ 24.2
    (1_085, 6.0, 2_750_239, "grr"),      # 1085 < 3e⁶ + 2 ≈ 1212
    (1_085, 1.0, 2_750_239, "olh"),      # county level: OLH sends 64 bits instead of 1085
    (40, 0.5, 10_000, "oue"),            # small domain: 40 bits are fewer than OLH's hash seed
    (9_796_900, 1.0, 2_750_239, "hm"),   # ED level: O(n·d) decoding is out of reach
])
def test_recommend_local(d, eps, n, expected):
    rec = recommend_local(d, eps, n)
    assert rec.key == expected
    assert rec.name == mechanisms.get(expected).name
    assert f"{d:,}" in rec.reason and len(rec.reason) > 80


def test_grr_rule_matches_the_variances():
    # The rule d < 3e^ε + 2 is exactly where GRR's empty-cell variance drops below OUE's.
    n = 50_000
    for eps in (0.5, 1.0, 2.0):
        threshold = 3 * math.exp(eps) + 2
        for d in (max(3, math.floor(threshold) - 1), math.ceil(threshold) + 1):
            table = compare_mechanisms(n, d, eps).set_index("key")
            grr_better = table.loc["grr", "variance_empty"] < table.loc["oue", "variance_empty"]
            assert grr_better == (d < threshold)
            assert (recommend_local(d, eps, n).key == "grr") == (d < threshold)


def test_huge_domains_get_a_hadamard_mechanism():
    d, n = 4_000_000, 100_000
    assert n * d > DECODE_BUDGET
    rec = recommend_local(d, 2.0, n)
    assert rec.key in ("hm", "hr") and "Walsh–Hadamard" in rec.reason


@pytest.mark.parametrize("kwargs, word", [
    ({"n": 0, "d": 10, "epsilon": 1.0}, "'n'"),
    ({"n": 10, "d": 1, "epsilon": 1.0}, "'d'"),
    ({"n": 10, "d": 10, "epsilon": 0.0}, "'epsilon'"),
    ({"n": 10, "d": 10, "epsilon": 1.0, "cell_count": 11}, "cell_count"),
])
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        compare_mechanisms(**kwargs)
