"""Apple's CMS and HCMS [Apple17] beyond the registry-wide contract.

Exact checks: the variance equals MECHANISMS.md §3.9's closed forms; the server's estimate from the
sketch equals Apple's own formula (sketch M built as the paper writes it); the hash family's int64
arithmetic equals exact integer arithmetic at its extremes; clear errors.

Statistical checks (fixed seeds; each call's false-failure rate 1e-4, see ``stat_checks``): with a
small sketch (k = 4, m = 8) the per-user protocol — a fresh public family per run — is unbiased and
its variance is the idealised one plus :meth:`collision_variance` (three times the idealised one
here, so the check has power against a simulation that ignores the fixed family); the aggregated
CMS sketch has the law of the per-person reports.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from dpcore import mechanisms
from dpcore.mechanisms.local import HASH_PRIME
from dpcore.mechanisms.sketches import HashFamily
from tests.mechanisms.stat_checks import (
    assert_same_moments,
    assert_unbiased,
    assert_variance_any_law,
)

KEYS = ("cms", "hcms")


def closed_form(key, epsilon, m, counts):
    """MECHANISMS.md §3.9, written out independently of the pure-protocol form."""
    counts = np.asarray(counts, dtype=float)
    n, r = counts.sum(), m / (m - 1)
    if key == "cms":
        a = math.exp(epsilon / 2)
        c = (a + 1) / (a - 1)
        return r * r * (counts * (c * c - 1) / 4 + (n - counts) * (c * c - (1 - 2 / m) ** 2) / 4)
    e = math.exp(epsilon)
    c = (e + 1) / (e - 1)
    return r * r * (counts * (c * c - 1) + (n - counts) * (c * c - 1 / m**2))


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("m", [2, 8, 1024])
def test_variance_is_the_closed_form(key, epsilon, m):
    counts = np.array([0, 3, 0, 1200, 57, 0, 9])
    mech = mechanisms.build(key, epsilon=epsilon, m=m, k=16)
    np.testing.assert_allclose(mech.variance(counts), closed_form(key, epsilon, m, counts),
                               rtol=1e-12)


def apple_estimate(mech, reports, n, d, family):
    """The server as [Apple17] writes it: CMS adds k((c/2)ṽ + ½) to row j; HCMS adds k·c·bit to
    M[j, l] and transforms M ← M H_mᵀ; f̂(x) = (m/(m−1))((1/k) Σ_l M[l, h_l(x)] − n/m)."""
    k, m = mech.k, mech.m
    M = np.zeros((k, m))
    if mech.key == "cms":
        a = math.exp(mech.epsilon / 2)
        c = (a + 1) / (a - 1)
        signs = np.where(reports["bits"], 1.0, -1.0)
        np.add.at(M, reports["j"], k * (c / 2 * signs + 0.5))
    else:
        e = math.exp(mech.epsilon)
        c = (e + 1) / (e - 1)
        np.add.at(M, (reports["j"], reports["l"]), k * c * reports["bit"])
        M = M @ hadamard(m).T
    rows = np.arange(k)[:, None]
    read = M[rows, family(rows, np.arange(d)[None, :])].mean(axis=0)
    return m / (m - 1) * (read - n / m)


@pytest.mark.parametrize("key", KEYS)
def test_estimate_is_apples_server_formula(key, rng):
    mech, d = mechanisms.build(key, epsilon=1.3, k=8, m=16), 40
    items = rng.integers(0, d, size=700)
    family = mech.draw_family(d, rng)
    reports = mech.perturb(items, d, rng, family=family)
    ours = mech.estimate(mech.accumulate(reports, d), len(items), d, family=family)
    np.testing.assert_allclose(ours, apple_estimate(mech, reports, len(items), d, family),
                               rtol=1e-9, atol=1e-6)


def test_hash_family_int64_arithmetic_is_exact_at_the_extremes():
    coefficients = np.array([[HASH_PRIME - 1] * 3, [HASH_PRIME - 2, 1, 0], [0, 0, HASH_PRIME - 1]],
                            dtype=np.int64)
    family = HashFamily(coefficients, 1000)
    cells = np.array([0, 1, HASH_PRIME - 2, HASH_PRIME - 3, 123_456_789])
    got = family(np.arange(3)[:, None], cells[None, :])
    expected = [[((int(a) * x * x + int(b) * x + int(c)) % HASH_PRIME) % 1000 for x in map(int, cells)]
                for a, b, c in coefficients]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("key", KEYS)
def test_server_needs_the_matching_public_family(key, rng):
    mech = mechanisms.build(key, k=4, m=8)
    with pytest.raises(ValueError, match="public hash family"):
        mech.estimate(np.zeros((4, 8), dtype=np.int64), 10, 5)
    with pytest.raises(ValueError, match="k = 4 functions onto m = 8"):
        mech.simulate(np.zeros(3, dtype=np.int64), 5, rng,
                      family=mechanisms.build(key, k=4, m=16).draw_family(5, rng))
    with pytest.raises(ValueError, match="too large"):
        mech.draw_family(HASH_PRIME, rng)
    assert "idealised hash" in mech.approximation


#: Heavy cells and empty ones: with k = 4, m = 8 the fixed family's collisions dominate.
SMALL_COUNTS = np.array([400, 300, 0, 0, 50, 0, 200, 0, 0, 10])
SIM_RUNS = 2000


@pytest.mark.parametrize("key", KEYS)
def test_per_user_variance_is_the_formula_plus_the_collision_term(key, seed):
    mech = mechanisms.build(key, epsilon=1.0, k=4, m=8)
    d, rng = len(SMALL_COUNTS), np.random.default_rng(seed)
    items = np.repeat(np.arange(d), SMALL_COUNTS)
    samples = np.stack([mech.simulate(items, d, rng) for _ in range(SIM_RUNS)])
    idealised = mech.variance(SMALL_COUNTS)
    total = idealised + mech.collision_variance(SMALL_COUNTS)
    assert (total[SMALL_COUNTS == 0] > 2.5 * idealised[SMALL_COUNTS == 0]).all()   # power
    assert_unbiased(samples, SMALL_COUNTS, total)
    assert_variance_any_law(samples, total)


def test_aggregated_cms_sketch_has_the_law_of_the_per_person_reports(seed):
    mech, d = mechanisms.build("cms", epsilon=1.0, k=2, m=8), 5
    rng = np.random.default_rng(seed)
    family = mech.draw_family(d, rng)
    items = np.repeat(np.arange(d), [30, 0, 12, 5, 1])
    per_person = np.stack([mech.accumulate(mech.perturb(items, d, rng, family), d).ravel()
                           for _ in range(1500)])
    aggregated = np.stack([mech.sketch(items, d, rng, family).ravel() for _ in range(1500)])
    assert_same_moments(per_person.astype(float), aggregated.astype(float))
