"""Amplification by shuffling and subsampling: reference values (some from the official code
of Feldman, McMillan, Talwar, FOCS 2021: apple/ml-shuffling-amplification), limiting cases,
monotonicity, and the numerical clone bound against brute-force enumeration."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data import datasets
from dpcore.theory.amplification import (
    BOUNDS,
    SEARCH_TOL,
    SUBSAMPLING_CONDITIONS,
    NotCertified,
    blanket_delta,
    blanket_epsilon,
    blanket_max_epsilon0,
    clone_delta,
    clone_delta_interval,
    clone_epsilon,
    clone_max_epsilon0,
    clone_probability,
    fmt21_epsilon,
    fmt21_max_epsilon0,
    fmt21_validity_limit,
    local_budget,
    shuffle_guarantee,
    subsampling_amplification,
    subsampling_inverse,
)

# (n, ε₀, δ, FMT21 closed form, clone numeric) — independently computed values, to the digits
# they were given in; the numeric ones fall inside the official code's brackets (test below).
SHUFFLE_TABLE = [
    (10_000, 1.0, 1e-6, 0.214, 0.0530),
    (100_000, 4.0, 1e-6, 0.535, 0.170),
    (1_000_000, 2.0, 1e-8, 0.0712, 0.0176),
]


def _half_unit(reference: float) -> float:
    """Half a unit in the last digit the reference prints (3 significant digits)."""
    return 0.5 * 10 ** (math.floor(math.log10(reference)) - 2)


# --------------------------------------------------------------------------- reference values
@pytest.mark.parametrize("n, eps0, delta, closed, numeric", SHUFFLE_TABLE)
def test_closed_form_reference_values(n, eps0, delta, closed, numeric):
    assert fmt21_epsilon(n, eps0, delta) == pytest.approx(closed, abs=_half_unit(closed))


@pytest.mark.parametrize("n, eps0, delta, closed, numeric", SHUFFLE_TABLE)
def test_clone_numeric_reference_values(n, eps0, delta, closed, numeric):
    assert clone_epsilon(n, eps0, delta) == pytest.approx(numeric, abs=_half_unit(numeric))


def test_clone_numeric_inside_official_code_intervals():
    # The authors' code (apple/ml-shuffling-amplification) brackets the truth: [0.0530, 0.0550]
    # and [0.1695, 0.1751].
    assert 0.0530 - 5e-5 <= clone_epsilon(10_000, 1.0, 1e-6) <= 0.0550
    assert 0.1695 <= clone_epsilon(100_000, 4.0, 1e-6) <= 0.1751


def test_official_closed_form_value():
    assert fmt21_epsilon(10_000, 1.0, 1e-6, "official") == pytest.approx(0.2333, abs=5e-5)


def test_grr_clone_probability_reference_value():
    assert clone_epsilon(10_000, 1.0, 1e-6, grr=True) == pytest.approx(0.0432, abs=5e-5)


@pytest.mark.parametrize("bound, expected", [
    ("fmt21", 3.84), ("blanket", 4.84), ("clone", 5.92), ("clone_grr", 6.60)])
def test_inverse_reference_values(bound, expected):
    # Independently computed: target ε = 0.5, δ = 1e-6, n = 1e5 (k = 10 for the blanket).
    result = local_budget(bound, 100_000, 0.5, 1e-6, k=10)
    assert result.epsilon0 == pytest.approx(expected, abs=0.005)
    assert result.bound == bound and result.name == BOUNDS[bound]


# ----------------------------------------------------------------------- consistency and order
@pytest.mark.parametrize("n, delta", [(10_000, 1e-6), (100_000, 1e-6), (1_000_000, 1e-8)])
def test_numeric_never_exceeds_closed_form(n, delta):
    for eps0 in np.linspace(0.25, fmt21_validity_limit(n, delta, "official"), 7):
        numeric = clone_epsilon(n, eps0, delta)
        assert numeric <= fmt21_epsilon(n, eps0, delta)
        assert clone_epsilon(n, eps0, delta, grr=True) <= numeric
        assert fmt21_epsilon(n, eps0, delta) <= fmt21_epsilon(n, eps0, delta, "official")
        assert numeric <= eps0


def test_clone_delta_monotone_in_epsilon_and_epsilon0():
    n = 20_000
    eps = np.linspace(0.0, 1.0, 21)
    deltas = [clone_delta(n, 1.0, e) for e in eps]
    assert (np.diff(deltas) <= 0).all() and deltas[-1] == 0.0
    by_eps0 = [clone_delta(n, e0, 0.1) for e0 in np.linspace(0.2, 6.0, 21)]
    # Up to the mass outside the summed window (≈1e-36 here), which moves with ε₀.
    assert (np.diff(by_eps0) >= -1e-30).all()
    assert (np.diff([clone_epsilon(n, e0, 1e-6) for e0 in (0.5, 1, 2, 3, 4)]) > 0).all()
    closed = fmt21_epsilon(n, np.linspace(0.1, 3, 30), 1e-6)
    assert (np.diff(closed) > 0).all()


def test_clone_probabilities():
    assert clone_probability(0.0) == 1.0 and clone_probability(0.0, grr=True) == 1.0
    assert clone_probability(1.0) == pytest.approx(math.exp(-1))
    assert clone_probability(1.0, grr=True) == pytest.approx(2 / (math.e + 1))
    assert (clone_probability(np.linspace(0.1, 5, 10), grr=True)
            > clone_probability(np.linspace(0.1, 5, 10))).all()


def _clone_pair(n, eps0, p_clone):
    """Exact P and Q of FMT21's clone reduction over (c, first count), enumerated."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    P, Q = [], []
    for c in range(n):
        weight = stats.binom.pmf(c, n - 1, p_clone)
        b = stats.binom.pmf(np.arange(c + 2), c, 0.5)          # b(a), a = 0..c+1
        b_prev = np.concatenate([[0.0], b[:-1]])                # b(a − 1)
        P.append(weight * (alpha * b_prev + (1 - alpha) * b))
        Q.append(weight * (alpha * b + (1 - alpha) * b_prev))
    return np.concatenate(P), np.concatenate(Q)


@pytest.mark.parametrize("n, eps0, grr", [(2, 1.0, False), (30, 1.0, False), (60, 2.5, True)])
def test_clone_delta_matches_brute_force_enumeration(n, eps0, grr):
    P, Q = _clone_pair(n, eps0, clone_probability(eps0, grr))
    for eps in (0.0, 0.2, 0.6, eps0 * 0.95):
        exact = np.maximum(P - math.exp(eps) * Q, 0).sum()
        reverse = np.maximum(Q - math.exp(eps) * P, 0).sum()
        lower, upper = clone_delta_interval(n, eps0, eps, grr, block_fraction=0)
        assert upper == pytest.approx(exact, rel=1e-9, abs=1e-15)
        assert lower == pytest.approx(exact, rel=1e-9, abs=1e-15)
        assert reverse == pytest.approx(exact, rel=1e-9, abs=1e-15)  # symmetric in P and Q


def test_block_summation_brackets_the_exact_sum():
    for n, eps0, eps in ((10_000, 1.0, 0.05), (2_750_000, 0.5, 0.01), (100_000, 6.0, 0.5)):
        exact = clone_delta_interval(n, eps0, eps, block_fraction=0)[1]
        lower, upper = clone_delta_interval(n, eps0, eps)
        assert lower <= exact * (1 + 1e-9) and exact <= upper * (1 + 1e-9)
        assert upper <= 1.05 * exact


def _shuffled_grr_delta(eps0, k, n_others_by_value, eps):
    """Exact δ(ε) of the histogram of n shuffled k-RR reports when user 1 holds 0 vs 1 and the
    others hold the given values (dynamic programming over histograms)."""
    e = math.exp(eps0)

    def report(x):
        probs = np.full(k, 1 / (e + k - 1))
        probs[x] = e / (e + k - 1)
        return probs

    n = 1 + sum(n_others_by_value.values())
    base = np.zeros((n + 1,) * (k - 1))
    base[(0,) * (k - 1)] = 1.0

    def add(dist, probs):
        out = probs[k - 1] * dist
        for v in range(k - 1):
            shifted = np.roll(dist, 1, axis=v)
            index = [slice(None)] * (k - 1)
            index[v] = 0
            shifted[tuple(index)] = 0
            out = out + probs[v] * shifted
        return out

    for value, count in n_others_by_value.items():
        for _ in range(count):
            base = add(base, report(value))
    P, Q = add(base, report(0)).ravel(), add(base, report(1)).ravel()
    return max(np.maximum(P - math.exp(eps) * Q, 0).sum(),
               np.maximum(Q - math.exp(eps) * P, 0).sum())


@pytest.mark.parametrize("k, others", [
    (2, {0: 40}), (2, {1: 40}), (2, {0: 20, 1: 20}),
    (3, {2: 14}), (3, {0: 7, 2: 7}), (4, {2: 6, 3: 6})])
def test_clone_bounds_hold_for_real_shuffled_grr(k, others):
    # Soundness on the actual protocol, including others holding a third value (the case that
    # fixes the GRR clone probability 2/(e^ε₀+1)).
    n, eps0 = 1 + sum(others.values()), 2.0
    for eps in (0.1, 0.4, 0.8, 1.5):
        exact = _shuffled_grr_delta(eps0, k, others, eps)
        assert exact <= clone_delta(n, eps0, eps, grr=True) + 1e-12
        assert clone_delta(n, eps0, eps, grr=True) <= clone_delta(n, eps0, eps) + 1e-12


# --------------------------------------------------------------------------- validity handling
def test_closed_form_validity_condition():
    n, delta = 10_000, 1e-6
    limit = fmt21_validity_limit(n, delta)
    assert limit == pytest.approx(math.log(n / (16 * math.log(2 / delta))))
    assert fmt21_validity_limit(n, delta, "official") < limit
    assert not math.isnan(fmt21_epsilon(n, limit, delta))
    assert math.isnan(fmt21_epsilon(n, limit + 0.01, delta))
    with pytest.raises(NotCertified, match="certifies nothing"):
        shuffle_guarantee("fmt21", n, limit + 0.01, delta)
    assert shuffle_guarantee("clone", n, limit + 0.01, delta).epsilon < limit + 0.01


def test_inverse_closed_form_round_trip_and_cap():
    n, delta = 100_000, 1e-6
    eps0, capped = fmt21_max_epsilon0(n, 0.5, delta)
    assert not capped and fmt21_epsilon(n, eps0, delta) == pytest.approx(0.5, abs=1e-5)
    assert fmt21_epsilon(n, eps0, delta) <= 0.5
    eps0, capped = fmt21_max_epsilon0(n, 5.0, delta)
    assert capped and eps0 == pytest.approx(fmt21_validity_limit(n, delta))
    assert "capped" in local_budget("fmt21", n, 5.0, delta).note
    with pytest.raises(NotCertified, match="population size"):
        fmt21_max_epsilon0(200, 0.5, delta)


def test_inverse_clone_round_trip():
    n, delta = 50_000, 1e-7
    for target in (0.1, 0.5, 1.0):
        eps0 = clone_max_epsilon0(n, target, delta)
        assert clone_delta(n, eps0, target) <= delta
        assert clone_delta(n, eps0 + 1e-3, target) > delta
        assert clone_epsilon(n, eps0, delta) <= target + 2 * SEARCH_TOL


@pytest.mark.parametrize("epsilon0, expected", [(1.0, 0.019), (2.0, 0.064), (3.0, 0.151)])
def test_blanket_numeric_bound_reproduces_the_authors_figures(epsilon0, expected):
    """n = 10⁵, δ = 10⁻⁶, k = 10 (the reference's comparison table, from the authors' code)."""
    eps = blanket_epsilon(100_000, epsilon0, 1e-6, 10)
    assert eps == pytest.approx(expected, abs=5e-4)
    assert blanket_delta(100_000, epsilon0, eps, 10) <= 1e-6
    assert blanket_delta(100_000, epsilon0, eps - 1e-4, 10) > 1e-6


def test_blanket_on_the_county_data_is_the_numeric_bound_not_the_closed_form():
    """Issue 30: the old closed form certified ε = 0.283 for ε₀ = 1 on the county data
    (n = 2,748,530, k = 1,085, δ = 10⁻⁶); the numeric bound gives about 0.0035."""
    county = datasets.load("ireland_county")
    found = shuffle_guarantee("blanket", county.n, 1.0, 1e-6, k=county.domain_size)
    assert found.epsilon == pytest.approx(0.0035, abs=1e-4)
    assert "numeric" in found.note and "Hoeffding" in found.name


def test_blanket_round_trip_and_validity():
    n, delta, k = 100_000, 1e-6, 10
    eps0 = blanket_max_epsilon0(n, 0.5, delta, k)
    assert blanket_delta(n, eps0, 0.5, k) <= delta < blanket_delta(n, eps0 + 1e-3, 0.5, k)
    assert blanket_epsilon(n, eps0, delta, k) <= 0.5 + 2 * SEARCH_TOL
    assert blanket_max_epsilon0(2, 0.01, delta, k) >= 0.01     # never below ε (no amplification)
    with pytest.raises(NotCertified, match="certifies nothing"):
        shuffle_guarantee("blanket", 1_000, 4.0, delta, k=k)
    with pytest.raises(ValueError, match="'k'"):
        shuffle_guarantee("blanket", n, 1.0, delta)


@pytest.mark.parametrize("epsilon0, k", [(0.5, 2), (1.0, 10), (3.0, 1085)])
def test_grr_clone_probability_decomposes_every_report_distribution(epsilon0, k):
    """FMT23's GRR clone probability: R(x) ≥ (p_c/2)(R(x¹⁰) + R(x¹¹)) for every input x and
    output y, with equality at y = x¹⁰ for x outside {x¹⁰, x¹¹} (so no larger p_c works)."""
    p_c = clone_probability(epsilon0, grr=True)
    z = math.exp(epsilon0) + k - 1
    report = lambda x, y: (math.exp(epsilon0) if x == y else 1.0) / z
    outputs = range(min(k, 4))
    for x in range(min(k, 4)):
        for y in outputs:
            assert report(x, y) >= p_c / 2 * (report(0, y) + report(1, y)) - 1e-15
    if k > 2:
        assert report(2, 0) == pytest.approx(p_c / 2 * (report(0, 0) + report(1, 0)))


def test_dispatchers_and_bad_input():
    for bound in BOUNDS:
        result = shuffle_guarantee(bound, 100_000, 1.0, 1e-6, k=10)
        assert 0 < result.epsilon < 1.0 and result.note and result.name == BOUNDS[bound]
    with pytest.raises(ValueError, match="unknown amplification bound"):
        shuffle_guarantee("nope", 100, 1.0, 1e-6)
    with pytest.raises(ValueError, match="'n'"):
        clone_epsilon(0, 1.0, 1e-6)
    with pytest.raises(ValueError, match="'delta'"):
        clone_epsilon(100, 1.0, 0.0)
    assert clone_epsilon(100, 0.0, 1e-6) == 0.0


# ---------------------------------------------------------------------------------- subsampling
def test_subsampling_formula_and_small_epsilon_limit():
    eps, delta = subsampling_amplification(1.0, 1e-6, 0.1)
    assert eps == pytest.approx(math.log(1 + 0.1 * (math.e - 1)), rel=1e-12)
    assert eps == pytest.approx(0.15857, abs=5e-6) and delta == pytest.approx(1e-7)
    assert subsampling_amplification(1e-4, 0, 0.01)[0] == pytest.approx(1e-6, rel=1e-3)
    assert subsampling_amplification(2.0, 1e-6, 1.0) == (pytest.approx(2.0), pytest.approx(1e-6))
    values = subsampling_amplification(np.linspace(0, 5, 11), 0.0, 0.3)[0]
    assert (np.diff(values) > 0).all() and (values <= np.linspace(0, 5, 11)).all()


@pytest.mark.parametrize("epsilon, rate", [(0.5, 0.1), (2.0, 0.05), (4.0, 0.5)])
def test_subsampling_bound_is_attained_by_poisson_sampling_under_add_remove(epsilon, rate):
    """The conditions the lesson states: Poisson sampling, add/remove neighbours. Randomised
    response on "is the person in the sample" is ε-DP under add/remove; after Poisson sampling
    its likelihood ratio between the tables with and without the person is exactly
    1 + γ(e^ε − 1), the theorem's e^{ε′} (tight)."""
    yes_if_in, yes_if_out = math.exp(epsilon) / (1 + math.exp(epsilon)), 1 / (1 + math.exp(epsilon))
    with_person = rate * yes_if_in + (1 - rate) * yes_if_out
    ratio = with_person / yes_if_out
    assert math.log(ratio) == pytest.approx(subsampling_amplification(epsilon, 0.0, rate)[0],
                                            rel=1e-12)
    assert "Poisson" in SUBSAMPLING_CONDITIONS and "add/remove" in SUBSAMPLING_CONDITIONS
    assert "without replacement" in SUBSAMPLING_CONDITIONS


def test_subsampling_inverse_round_trip():
    rates = np.array([0.001, 0.05, 0.5, 1.0])
    base_eps, base_delta = subsampling_inverse(0.5, 1e-7, rates)
    eps, delta = subsampling_amplification(base_eps, base_delta, rates)
    np.testing.assert_allclose(eps, 0.5, rtol=1e-12)
    np.testing.assert_allclose(delta, 1e-7, rtol=1e-12)
    assert subsampling_inverse(0.5, 0.1, 0.01)[1] == 1.0     # any δ is fine then
    with pytest.raises(ValueError, match="'rate'"):
        subsampling_amplification(1.0, 0.0, 0.0)
