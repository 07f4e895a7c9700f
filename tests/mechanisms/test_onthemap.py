"""OnTheMap's synthesizer: its law (totals, the exact Dirichlet–multinomial, the mean) and its
privacy analysis against brute force over every table, output and neighbour of tiny domains.

The brute force uses the Dirichlet–multinomial pmf written out with ``gammaln``; the module's test
uses SciPy's Beta-binomial tails, so the two share no code.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln

from dpcore.mechanisms import build
from dpcore.mechanisms import onthemap as otm
from tests.mechanisms.stat_checks import assert_fits, assert_unbiased, assert_variance_any_law


def compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (lexicographic)."""
    rows = [c for c in itertools.product(range(total + 1), repeat=parts) if sum(c) == total]
    return np.array(rows, dtype=np.int64)


def dm_logpmf(s: np.ndarray, table: np.ndarray, alpha: float) -> np.ndarray:
    """log P[s | table] of the Dirichlet–multinomial with parameters table + α (rows of s)."""
    a = table + alpha
    m = s.sum(axis=-1)
    return (gammaln(m + 1) - gammaln(s + 1).sum(-1) + gammaln(a.sum()) - gammaln(a.sum() + m)
            + (gammaln(a + s) - gammaln(a)).sum(-1))


def neighbours(table: np.ndarray) -> list[np.ndarray]:
    """Tables with one worker's origin moved (same destination, same total)."""
    out = []
    for j, l in itertools.permutations(range(table.size), 2):
        if table[j]:
            moved = table.copy()
            moved[j] -= 1
            moved[l] += 1
            out.append(moved)
    return out


def worst_log_ratio(table: np.ndarray, outputs: np.ndarray, alpha: float) -> np.ndarray:
    """Per output: the largest |log P[s|table] − log P[s|neighbour]| over every neighbour."""
    here = dm_logpmf(outputs, table, alpha)
    return np.max([np.abs(here - dm_logpmf(outputs, other, alpha))
                   for other in neighbours(table)], axis=0)


TINY = [(3, 4), (4, 3), (2, 6)]     # (origins k, workers n = m)


# -------------------------------------------------------------------------------------- the law
def test_every_destination_keeps_its_total(rng):
    table = rng.integers(0, 30, size=(40, 7))          # origins × destinations
    table[:, 3] = 0                                     # an empty workplace
    mech = build("onthemap", epsilon=1.0).for_destinations(7)
    released = mech.release(table.ravel(), rng).reshape(40, 7)
    np.testing.assert_array_equal(released.sum(axis=0), table.sum(axis=0))
    assert (released >= 0).all() and (released == np.rint(released)).all()


@pytest.mark.parametrize("neighbours, rate", [("add_remove", 0.5), ("substitution", 0.25)])
def test_noisy_totals_are_non_negative_whole_numbers_near_the_truth(neighbours, rate, rng):
    """Discrete Laplace with ε·share (add/remove: one total moves) or half of it (substitution:
    two totals move); mean and variance 2a/(1−a)², a = e^−rate, per destination (totals far from
    0, so no clipping)."""
    table = rng.integers(0, 30, size=(40, 7))
    mech = build("onthemap", epsilon=1.0, total="noisy", total_share=0.5,
                 neighbours=neighbours).for_destinations(7)
    totals = np.stack([mech.release(table.ravel(), rng).reshape(40, 7).sum(axis=0)
                       for _ in range(1000)])
    assert (totals >= 0).all() and (totals == np.rint(totals)).all()
    a = math.exp(-rate)
    assert_unbiased(totals, table.sum(axis=0), np.full(7, 2 * a / (1 - a) ** 2))
    assert_variance_any_law(totals, np.full(7, 2 * a / (1 - a) ** 2))
    expected = 1.0 * 0.5 / (2 if neighbours == "substitution" else 1)
    assert mech.synthesis_epsilon == pytest.approx(expected)


@pytest.mark.parametrize("alpha_mode", [otm.EPSILON_DP, otm.TEST])
def test_release_follows_the_exact_dirichlet_multinomial(alpha_mode, seed):
    """All releases of two destinations (k = 5 origins, 3 and 4 workers) against the exact pmf of
    every joint output (chi-square, false-failure rate 1e-4): exact in distribution, both
    destinations drawn independently, the recursion over halves of the origins included."""
    k, runs = 5, 20000
    table = np.array([[1, 0], [0, 2], [2, 0], [0, 1], [0, 1]])   # origins × destinations
    mech = build("onthemap", epsilon=1.5, delta=0.05, prior=alpha_mode).for_destinations(2)
    alphas = mech.prior_for(table.sum(axis=0), k)
    rng = np.random.default_rng(seed)
    draws = np.stack([mech.release(table.ravel(), rng).reshape(k, 2) for _ in range(runs)])
    support = [compositions(int(m), k) for m in table.sum(axis=0)]
    logp = [dm_logpmf(s, table[:, d], alphas[d]) for d, s in enumerate(support)]
    joint = np.exp(logp[0][:, None] + logp[1][None, :]).ravel()
    codes = [np.array([np.flatnonzero((s == draw).all(axis=1))[0] for draw in draws[:, :, d]])
             for d, s in enumerate(support)]
    assert_fits(codes[0] * len(support[1]) + codes[1], joint)


def test_mean_is_m_times_the_posterior_share(seed):
    """E[s_i] = m (n_i + α)/(n + kα) per destination, per cell (z with the Dirichlet–multinomial
    variance, Bonferroni, false-failure rate 1e-4)."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 40, size=(30, 4)) * (rng.random((30, 4)) < 0.4)
    mech = build("onthemap", epsilon=2.0).for_destinations(4)
    samples = np.stack([mech.release(table.ravel(), rng) for _ in range(3000)])
    expected, variance = np.empty((30, 4)), np.empty((30, 4))
    for d in range(4):
        m = table[:, d].sum()
        alpha = otm.pure_alpha(m, 2.0)
        expected[:, d] = otm.destination_mean(table[:, d], alpha, m)
        variance[:, d] = otm.destination_variance(table[:, d], alpha, m)
        np.testing.assert_allclose(expected[:, d], m * (table[:, d] + alpha) / (m + 30 * alpha))
    assert_unbiased(samples, expected.ravel(), variance.ravel())


def test_no_table_variance_so_the_planner_never_treats_the_table_as_one_workplace():
    assert build("onthemap").variance(np.ones(9)) is None
    assert not hasattr(build("onthemap"), "expected")


def test_destination_variance_matches_many_draws(seed):
    """The Dirichlet–multinomial variance of one destination (k = 6) against 4,000 draws (sample
    variance per cell inside its fourth-moment interval, false-failure rate 1e-4)."""
    counts = np.array([0, 3, 9, 0, 1, 27])
    rng = np.random.default_rng(seed)
    mech = build("onthemap", epsilon=1.0)
    samples = np.stack([mech.release(counts, rng) for _ in range(4000)])
    alpha = otm.pure_alpha(40, 1.0)
    assert_unbiased(samples, otm.destination_mean(counts, alpha, 40),
                    otm.destination_variance(counts, alpha, 40))
    assert_variance_any_law(samples, otm.destination_variance(counts, alpha, 40))


def test_test_prior_runs_for_large_workplaces_and_is_refused_with_noisy_totals(rng):
    released = build("onthemap", prior="test").release(np.array([250_000, 0, 7]), rng)
    assert released.sum() == 250_007
    with pytest.raises(ValueError, match="'prior'.*noisy"):
        build("onthemap", prior="test", total="noisy")


# ---------------------------------------------------------------------------- privacy: ε-DP
@pytest.mark.parametrize("k, n", TINY)
def test_worst_ratio_over_all_tables_is_one_plus_m_over_alpha(k, n):
    outputs = compositions(n, k)
    for alpha in (0.05, 0.7, 3.0, 40.0):
        worst = max(worst_log_ratio(table, outputs, alpha).max() for table in compositions(n, k))
        assert worst == pytest.approx(math.log(otm.max_ratio(alpha, n)), rel=1e-10)


@pytest.mark.parametrize("k, n", TINY)
def test_adding_or_removing_a_worker_changes_the_ratio_by_at_most_one_plus_m_over_alpha(k, n):
    """The synthesis of m workers (m fixed: a noisy total, already released) from a table of n
    and from that table with one more worker: the worst ratio is exactly
    max((1 + m/α)·A/(A + m), (A + m)/A), A = n + kα, so below 1 + m/α (sufficient, not tight)."""
    outputs = compositions(n, k)
    for alpha in (0.05, 0.7, 3.0):
        worst = 0.0
        for table in compositions(n, k):
            here = dm_logpmf(outputs, table, alpha)
            for j in range(k):
                grown = table + np.eye(k, dtype=np.int64)[j]
                worst = max(worst, np.abs(here - dm_logpmf(outputs, grown, alpha)).max())
        total = n + k * alpha
        exact = max(math.log(otm.max_ratio(alpha, n) * total / (total + n)),
                    math.log((total + n) / total))
        assert worst == pytest.approx(exact, rel=1e-10)
        assert worst < math.log(otm.max_ratio(alpha, n))


@pytest.mark.parametrize("k, n", TINY)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_pure_alpha_is_exactly_the_epsilon_dp_prior(k, n, epsilon):
    """At α = m/(e^ε − 1) the worst privacy loss is ε (attained); 1% less prior exceeds it."""
    outputs, tables = compositions(n, k), compositions(n, k)
    alpha = otm.pure_alpha(n, epsilon)
    loss = max(worst_log_ratio(t, outputs, alpha).max() for t in tables)
    assert loss == pytest.approx(epsilon, rel=1e-10)
    assert max(worst_log_ratio(t, outputs, alpha * 0.99).max() for t in tables) > epsilon


# ------------------------------------------------------------------- privacy: probabilistic DP
def brute_force_delta(k: int, n: int, alpha: float, epsilon: float) -> tuple[float, float]:
    """(exact δ: the largest probability, over tables, of an output whose worst ratio against a
    neighbour exceeds e^ε; the test's bound recomputed by enumeration: k times the largest
    P[s_i > threshold(n_i)] over every table and cell)."""
    outputs = compositions(n, k)
    exact = bound = 0.0
    for table in compositions(n, k):
        p = np.exp(dm_logpmf(outputs, table, alpha))
        bad = worst_log_ratio(table, outputs, alpha) > epsilon + 1e-12
        flagged = outputs > math.expm1(epsilon) * (alpha + np.maximum(table - 1, 0))
        assert not (bad & ~flagged.any(axis=1)).any(), "a bad output the test does not count"
        exact = max(exact, float(p[bad].sum()))
        bound = max(bound, k * float((p[:, None] * flagged).sum(axis=0).max()))
    return exact, min(bound, 1.0)


@pytest.mark.parametrize("k, n", TINY)
@pytest.mark.parametrize("epsilon", [1.0, 2.5])
def test_probabilistic_test_equals_brute_force_and_bounds_the_exact_delta(k, n, epsilon):
    for alpha in (0.02, 0.1, 0.4, 1.5):
        exact, enumerated = brute_force_delta(k, n, alpha, epsilon)
        test = otm.pdp_delta(alpha, n, k, epsilon)
        assert test == pytest.approx(enumerated, rel=1e-9, abs=1e-15)
        assert exact <= test * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("m, k, epsilon", [(40, 12, 2.0), (100, 500, 2.0), (300, 50, 1.0),
                                           (1000, 3000, 2.0), (1000, 3000, 8.6)])
def test_probabilistic_test_is_monotone_in_alpha(m, k, epsilon):
    grid = otm.pure_alpha(m, epsilon) * np.logspace(-6, 0, 60)
    deltas = np.array([otm.pdp_delta(a, m, k, epsilon) for a in grid])
    assert (np.diff(deltas) <= 0).all(), deltas
    assert deltas[-1] == 0.0 and deltas[0] > deltas[-1]


def test_probabilistic_test_is_not_monotone_for_a_tiny_workplace():
    """Six workers over three origins: between two jumps of the integer threshold ⌊(e − 1)α⌋,
    δ rises with α (0.547 at α = 1.2, 0.593 at 1.7, then 0.211 at 1.75); so "smallest α" is the
    bisection's, which still passes."""
    at = [otm.pdp_delta(a, 6, 3, 1.0) for a in (1.2, 1.7, 1.75)]
    assert at == pytest.approx([0.5466, 0.5931, 0.2107], abs=1e-4)
    alpha = otm.smallest_alpha(6, 3, 1.0, 0.58)
    assert otm.pdp_delta(alpha, 6, 3, 1.0) <= 0.58


@pytest.mark.parametrize("m, k, epsilon, delta", [(5, 3, 1.0, 0.1), (200, 40, 2.0, 1e-3),
                                                  (1000, 3000, 8.6, 1e-5)])
def test_smallest_alpha_passes_and_a_smaller_one_does_not(m, k, epsilon, delta):
    alpha = otm.smallest_alpha(m, k, epsilon, delta)
    assert alpha <= otm.pure_alpha(m, epsilon)
    assert otm.pdp_delta(alpha, m, k, epsilon) <= delta
    assert otm.pdp_delta(alpha / 1.01, m, k, epsilon) > delta


# The bounded test (any m) against the exact sums (m ≤ 1,000, and single counts beyond).
def exact_smallest_alpha(m: int, k: int, epsilon: float, delta: float) -> float:
    """The smallest α passing the exact test (m ≤ 1,000), bisected to 1e-4 like the module's."""
    low, high = otm.pure_alpha(m, epsilon) * 1e-9, otm.pure_alpha(m, epsilon)
    while high / low > 1 + 1e-4:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if otm.pdp_delta(middle, m, k, epsilon) <= delta \
            else (middle, high)
    return high


@pytest.mark.parametrize("m, k", [(6, 3), (40, 12), (100, 500), (300, 31), (1000, 3000)])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 2.5, 8.6])
def test_bound_is_never_below_the_exact_delta_and_at_most_one_percent_above(m, k, epsilon):
    """On a grid of α around the ε-DP prior: exact δ ≤ bound ≤ 1.01 × exact δ (+1e-300)."""
    for alpha in otm.pure_alpha(m, epsilon) * np.logspace(-5, 0, 8):
        exact = otm.pdp_delta(alpha, m, k, epsilon)
        bound = otm.pdp_delta_bound(alpha, m, k, epsilon)
        assert exact <= bound <= exact * 1.01 + 1e-300, (alpha, exact, bound)


@pytest.mark.parametrize("alpha, epsilon", [(0.01, 1.0), (0.5, 0.7), (5.0, 0.7), (50.0, 0.3)])
def test_each_tail_bound_is_never_below_its_exact_sum(alpha, epsilon):
    """Every count x = 0…m of a destination of m = 1,000 over k = 31 origins, each tail apart
    (including those near the centre, where blocks rather than single terms are summed): never
    below, and within 1 % wherever the tail is below 0.9."""
    m, k = 1000, 31
    x = np.arange(m + 1)
    threshold = np.floor(otm._threshold(x.astype(float), alpha, epsilon))
    exact = otm.cell_tail(x, alpha, m, m, k, epsilon)
    bound = otm.tail_bound(m, x + alpha, m - x + (k - 1) * alpha, threshold)
    assert (bound >= np.minimum(exact, 1.0)).all() and (bound <= 1.0).all()
    tight = (exact > 1e-12) & (exact < 0.9)       # above 0.9 a tail makes δ = 1 anyway
    assert tight.sum() > 5 and (bound[tight] <= 1.01 * exact[tight]).all()


@pytest.mark.parametrize("m, k, epsilon", [(100_000, 3126, 8.6), (10_000, 3126, 4.0)])
def test_bound_is_above_the_exact_sum_for_large_workplaces(m, k, epsilon):
    """Beyond 1,000 workers the exact sum is affordable where few counts have a non-empty tail
    (large ε): around the chosen α (δ from 1e-8 to 1e-3 here) the bound is never below it and
    at most 1 % above."""
    for alpha in otm.smallest_alpha(m, k, epsilon, 1e-5) * np.array([0.8, 1.0, 1.25]):
        x = np.arange(m + 1)
        x = x[otm._threshold(x, alpha, epsilon) < m]
        exact = k * otm.cell_tail(x, alpha, m, m, k, epsilon).max()
        assert 1e-9 < exact < 1e-2
        assert exact <= otm.pdp_delta_bound(alpha, m, k, epsilon) <= 1.01 * exact


@pytest.mark.parametrize("m, k, epsilon, delta", [(100, 500, 1.0, 1e-5), (100, 31, 8.6, 1e-5),
                                                  (1000, 3000, 2.0, 1e-5),
                                                  (1000, 31, 0.5, 1e-3)])
def test_the_bounded_alpha_passes_the_exact_test_and_is_barely_larger(m, k, epsilon, delta):
    """The α chosen on the bound passes the exact test, and is at most 1 % above the exact
    test's smallest α (measured: 1.0001–1.0009, the bisections' tolerance)."""
    alpha = otm.smallest_alpha(m, k, epsilon, delta)
    assert otm.pdp_delta(alpha, m, k, epsilon) <= otm.pdp_delta_bound(alpha, m, k, epsilon) \
        <= delta
    assert 1 - 2e-3 <= alpha / exact_smallest_alpha(m, k, epsilon, delta) <= 1.01


@pytest.mark.parametrize("m, k, epsilon", [(2000, 31, 1.0), (50_000, 3126, 2.0),
                                           (432_557, 31, 8.6), (100_000, 31, 0.7)])
def test_bound_is_monotone_in_alpha(m, k, epsilon):
    grid = otm.pure_alpha(m, epsilon) * np.logspace(-6, 0, 30)
    deltas = np.array([otm.pdp_delta_bound(a, m, k, epsilon) for a in grid])
    assert (np.diff(deltas) <= 0).all(), deltas
    assert deltas[-1] == 0.0 and deltas[0] > deltas[-1]


def test_the_prior_of_every_county_workplace_passes_its_bound(county):
    """Prior 'test' on the county table (35 workplaces, 3,533 to 432,557 workers): one α per
    size, each below the ε-DP prior and passing the reported bound; the release keeps totals."""
    mech = build("onthemap", epsilon=1.0, delta=1e-5, prior="test").for_destinations(
        county.n_destinations)
    counts = county.to_dense()
    table = mech._table(counts)
    m = table.sum(axis=1)
    alphas = mech.prior_for(m, table.shape[1])
    for size, alpha in zip(m, alphas):
        assert alpha < otm.pure_alpha(size, 1.0)
        assert otm.pdp_delta(alpha, int(size), table.shape[1], 1.0) <= 1e-5
    released = mech.release(counts, np.random.default_rng(3))
    np.testing.assert_array_equal(mech._table(released).sum(axis=1), m)


def test_labels_name_the_guarantee_and_what_it_does_not_promise():
    text = build("onthemap", prior="test").explain()
    assert "probabilistic DP" in text and "not DP" in text and "exactly" in text
    assert build("onthemap", prior="test").guarantee == "(ε, δ)-probabilistic DP, exact totals"
    assert build("onthemap", total="noisy").guarantee == "ε-DP"
    assert "(ε, δ)-probabilistic DP" in build("onthemap", prior="test").describe()


# ------------------------------------------------------------------------- domain shrinking
AREAS_OF_ORIGINS = np.array(["a", "a", "b", "b", "b", "c"])
AREAS_OF_DESTINATIONS = np.array(["a", "b", "b", "c"])


def shrunk(**settings):
    return build("onthemap", candidates="parent", **settings).for_destinations(
        4, AREAS_OF_ORIGINS, AREAS_OF_DESTINATIONS)


def test_shrinking_keeps_each_workplaces_total_and_its_in_area_count(rng):
    table = rng.integers(0, 30, size=(6, 4))                  # origins × destinations
    released = shrunk(epsilon=1.0).release(table.ravel(), rng).reshape(6, 4)
    np.testing.assert_array_equal(released.sum(axis=0), table.sum(axis=0))
    inside = AREAS_OF_ORIGINS[:, None] == AREAS_OF_DESTINATIONS[None, :]
    np.testing.assert_array_equal((released * inside).sum(axis=0), (table * inside).sum(axis=0))


def test_shrinking_spreads_the_prior_over_the_area_only(seed):
    """E[s_i] = m_in (n_i + α)/(n_in + k_in α), α = m_in/(e^ε − 1), over the k_in origins of the
    workplace's area (and the same over the other origins with their own m and k), per cell (z
    with the Dirichlet–multinomial variance, Bonferroni, false-failure rate 1e-4)."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 25, size=(6, 4))
    samples = np.stack([shrunk(epsilon=2.0).release(table.ravel(), rng) for _ in range(3000)])
    expected, variance = np.empty((6, 4)), np.empty((6, 4))
    for d in range(4):
        for part in (AREAS_OF_ORIGINS == AREAS_OF_DESTINATIONS[d],
                     AREAS_OF_ORIGINS != AREAS_OF_DESTINATIONS[d]):
            counts, m = table[part, d], table[part, d].sum()
            alpha = otm.pure_alpha(m, 2.0)
            expected[part, d] = m * (counts + alpha) / (m + part.sum() * alpha)
            variance[part, d] = otm.destination_variance(counts, alpha, m)
    assert_unbiased(samples, expected.ravel(), variance.ravel())


def test_shrinking_follows_the_exact_dirichlet_multinomial_per_part(seed):
    """One workplace in area a (origins a, a, b, b): 2 workers from a over its 2 origins, 1 from
    b over the other 2; every joint output against the product of the two exact pmfs
    (chi-square, false-failure rate 1e-4)."""
    mech = build("onthemap", epsilon=1.0, candidates="parent").for_destinations(
        1, np.array(["a", "a", "b", "b"]), np.array(["a"]))
    counts = np.array([1, 1, 0, 1])
    rng = np.random.default_rng(seed)
    draws = np.stack([mech.release(counts, rng) for _ in range(20000)]).astype(np.int64)
    inside, outside = compositions(2, 2), compositions(1, 2)
    joint = np.exp(dm_logpmf(inside, counts[:2], otm.pure_alpha(2, 1.0))[:, None]
                   + dm_logpmf(outside, counts[2:], otm.pure_alpha(1, 1.0))[None, :]).ravel()
    assert joint.sum() == pytest.approx(1.0)
    codes = [np.array([np.flatnonzero((s == draw).all(axis=1))[0] for draw in part])
             for s, part in ((inside, draws[:, :2]), (outside, draws[:, 2:]))]
    assert_fits(codes[0] * len(outside) + codes[1], joint)


def test_shrinking_needs_areas_and_exact_totals(rng):
    with pytest.raises(ValueError, match="needs a table whose zones name their parent area"):
        build("onthemap", candidates="parent").for_destinations(2).release(np.ones(6), rng)
    with pytest.raises(ValueError, match="cannot be 'parent' with noisy totals"):
        build("onthemap", candidates="parent", total="noisy")
    mech = build("onthemap", candidates="parent")
    assert mech.guarantee == "ε-DP residences, exact totals and in-area counts"
    assert otm.PLAIN_SHRUNK in mech.explain()


def test_a_release_of_a_table_with_a_parent_level_shrinks_by_it(ed):
    """Through ``release.run`` on the ED table restricted to two counties: the areas come from
    the table's own geography, so no synthetic worker of a workplace crosses between its county
    and the rest, in either direction, more than the real ones did."""
    from dpcore import release
    keep = ed.origins.ids[np.isin(ed.origins.parent, ["Carlow", "Laois"])]
    od = ed.subset(origins=keep, destinations=keep)
    spec = release.ReleaseSpec("onthemap", 1.0, {"candidates": "parent"}, ("base",), 3)
    released = release.run(od, spec, score=False).released.reshape(od.n_origins,
                                                                   od.n_destinations)
    true = od.to_dense().reshape(od.n_origins, od.n_destinations)
    inside = od.origins.parent[:, None] == od.destinations.parent[None, :]
    np.testing.assert_array_equal((released * inside).sum(axis=0), (true * inside).sum(axis=0))
    np.testing.assert_array_equal(released.sum(axis=0), true.sum(axis=0))
