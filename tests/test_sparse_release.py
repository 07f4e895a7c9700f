"""The sparse release against the dense one.

Exact checks: every empty cell is accounted for; with the empty cells all drawn explicitly the
sparse metrics equal :func:`dpcore.scoring.metrics.compute` on the same vector; the sampler of the
smallest elements of a random subset has the exact law.

Statistical checks (marked slow): for each mechanism and domain, R seeded releases on each path,
and a two-sample Kolmogorov–Smirnov test per statistic (RMSE, max error, number of invented flows
in the top 10). The family-wise false-failure rate is at most FAMILY_ALPHA = 10⁻³ (Bonferroni over
every KS test in the module; KS is conservative for the discrete statistic, which only lowers the
rate). A power check shows the same test rejects a 15 % change of ε.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import mechanisms, release, seeding
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.mechanisms import postprocess
from dpcore.mechanisms import sparse_release as sr
from dpcore.scoring import metrics, sparse_metrics
from dpcore.scoring.ranks import PRESENT_AT, top_cells

SEED = 20261124
FAMILY_ALPHA = 1e-3
RUNS = 150
K = 10
#: (mechanism, ε): local mechanisms at a larger ε so the top flows are a mix of true and invented.
CASES = [("laplace", 1.0), ("discrete_laplace", 0.5), ("gaussian", 1.0), ("grr", 8.0),
         ("oue", 4.0), ("sue", 4.0), ("olh", 4.0), ("ss", 4.0), ("cms", 4.0), ("hcms", 4.0)]
STATISTICS = ("rmse", "max_error", "invented_top")
DOMAINS = ("county", "zipf_90k")
N_TESTS = len(CASES) * len(STATISTICS) * len(DOMAINS)


def zipf_domain(side: int = 300, cells: int = 4000, seed: int = SEED) -> ODMatrix:
    """A 90,000-cell domain with ``cells`` non-zero counts of a heavy-tailed law (n ≈ 10⁵)."""
    rng = seeding.generator(seed, "test-domain", side, cells)
    flat = rng.choice(side * side, size=cells, replace=False)
    counts = np.minimum(rng.zipf(1.6, size=cells), 20_000)
    zones = ZoneSet.from_ids([f"z{i}" for i in range(side)])
    return ODMatrix.from_pairs("zipf", zones, zones, flat // side, flat % side, counts)


@pytest.fixture(scope="module")
def domains():
    return {"county": datasets.load("ireland_county"), "zipf_90k": zipf_domain()}


def dense_statistics(od, truth, mechanism, rng):
    raw = mechanism.release(truth, rng)
    values = metrics.compute(truth, raw, od, k=K)
    present = np.flatnonzero(raw >= PRESENT_AT)
    top = present[top_cells(raw[present], K)]
    return values["rmse"], values["max_error"], int(np.count_nonzero(truth[top] == 0))


def sparse_statistics(od, mechanism, rng):
    draw = sr.draw(od, mechanism, rng)
    values = sparse_metrics.score(draw, k=K)
    return values["rmse"], values["max_error"], sparse_metrics.invented_in_top(draw, K)


# --------------------------------------------------------------------------------- exact checks
@pytest.mark.parametrize("key", sr.SUPPORTED)
def test_every_empty_cell_is_accounted_for(key, domains):
    for od in domains.values():
        mechanism = mechanisms.build(key, epsilon=1.0)
        draw = sr.draw(od, mechanism, seeding.generator(SEED, "accounting", key))
        zeros = draw.zeros
        assert zeros.count == od.domain_size - od.nonzero
        assert int(zeros.multiplicity.sum()) + sum(b.count for b in zeros.bands) == zeros.count
        assert draw.nonzero.shape == (od.nonzero,)
        # the released top: present cells, largest first, distinct, valid flat indices
        assert np.all(draw.top_values >= PRESENT_AT)
        assert np.all(np.diff(draw.top_values) <= 0)
        assert np.unique(draw.top_flat).size == draw.top_flat.size
        assert np.all((draw.top_flat >= 0) & (draw.top_flat < od.domain_size))


@pytest.mark.parametrize("key", sorted(sr.UNSUPPORTED))
def test_coupled_mechanisms_are_refused_with_a_reason(key, domains):
    with pytest.raises(ValueError, match="dense release"):
        sr.draw(domains["county"], mechanisms.build(key, epsilon=1.0),
                seeding.generator(SEED, "refused", key))


def test_metrics_equal_the_dense_metrics_on_the_same_vector(domains):
    """Laplace with every empty cell drawn: place the values (the top cells where drawn, the
    others anywhere) and the sparse metrics must equal metrics.compute on that vector."""
    od = domains["zipf_90k"]
    mechanism = mechanisms.build("laplace", epsilon=0.5)
    rng = seeding.generator(SEED, "same-vector")
    draw = sr.draw(od, mechanism, rng, explicit_limit=10 ** 6)
    assert draw.zeros.exact and draw.approximation is None
    dense = np.zeros(od.domain_size)
    dense[od.flat_index] = draw.nonzero
    empty = np.setdiff1d(np.arange(od.domain_size), od.flat_index)
    invented = ~np.isin(draw.top_flat, od.flat_index)
    placed = draw.top_flat[invented]
    values = list(draw.zeros.values)
    for value in draw.top_values[invented]:
        values.remove(value)
    rest = np.setdiff1d(empty, placed)
    dense[placed] = draw.top_values[invented]
    dense[rest] = rng.permutation(np.array(values))
    truth = od.to_dense()
    for method in sr.METHODS:
        released = postprocess.apply(method, dense, od.n)
        expected = metrics.compute(truth, released, od, k=K,
                                   raw=dense if method == "post_pos" else None)
        got = sparse_metrics.score(draw, method, k=K)
        for name, value in got.items():
            if not math.isnan(value):
                assert value == pytest.approx(expected[name], rel=1e-9, abs=1e-9), (method, name)


def test_stability_histogram_sparse_metrics_are_the_dense_ones(domains):
    """Empty cells are never published, so the sparse release is the dense one exactly."""
    od = domains["county"]
    mechanism = mechanisms.build("stability_histogram", epsilon=1.0, delta=1e-6)
    draw = sr.draw(od, mechanism, seeding.generator(SEED, "stability"))
    dense = np.zeros(od.domain_size)
    dense[od.flat_index] = draw.nonzero
    expected = metrics.compute(od.to_dense(), dense, od, k=K)
    for name, value in sparse_metrics.score(draw, k=K).items():
        if not math.isnan(value):
            assert value == pytest.approx(expected[name], rel=1e-12, abs=1e-12), name


@pytest.mark.parametrize("size", [50, 6000])   # the explicit and the sequential sampler
def test_smallest_of_a_random_subset_has_the_exact_law(size):
    """P[min ≥ x] = C(L − x, s)/C(L, s): chi-square over the distribution of the minimum."""
    universe, runs = 10_000, 4000
    rng = seeding.generator(SEED, "subset", size)
    minima = np.array([sr._smallest_of_subset(universe, size, 2, rng)[0] for _ in range(runs)])
    second = np.array([sr._smallest_of_subset(universe, size, 2, rng) for _ in range(200)])
    assert np.all(np.diff(second, axis=1) > 0)
    edges = np.unique(np.quantile(minima, np.linspace(0, 1, 11)).astype(int))
    edges[-1] = universe

    def survival(x):
        return math.exp(math.lgamma(universe - x + 1) - math.lgamma(universe - x - size + 1)
                        - math.lgamma(universe + 1) + math.lgamma(universe - size + 1)) \
            if x <= universe - size else 0.0

    expected = np.array([survival(a) - survival(b) for a, b in zip(edges[:-1], edges[1:])])
    observed = np.histogram(minima, edges)[0]
    p = stats.chisquare(observed, expected / expected.sum() * runs).pvalue
    assert p > 1e-4


def test_top_tie_break_takes_the_lowest_flat_indices():
    """Discrete ties at the boundary: the lowest flat indices win, as in ranks.top_cells."""
    zones = ZoneSet.from_ids(["a", "b", "c"])
    od = ODMatrix.from_pairs("t", zones, zones, [0, 2], [0, 2], [5, 7])   # flats 0 and 8
    zeros = sr.ZeroCells(7, [1.0, 0.0], [3, 4])
    rng = seeding.generator(SEED, "tie")
    flat, values = sr.released_top(od.flat_index, np.array([1.0, 1.0]), zeros, 2, rng)
    assert values.tolist() == [1.0, 1.0]
    assert flat[0] == 0   # the non-zero cell at flat 0 beats every empty cell
    counts = np.zeros(9, int)
    for _ in range(300):
        flat, _ = sr.released_top(od.flat_index, np.array([1.0, 1.0]), zeros, 2, rng)
        counts[flat[1]] += 1
    # second slot: the smallest of 3 uniform empty cells among flats 1..7 and the cell at 8
    assert counts[0] == 0 and counts[8] == 0
    assert counts[1] > counts[5] and counts[1] > 300 * 0.3


@pytest.mark.parametrize("bins,balls", [(1, 5), (40, 10), (41, 10), (10_000, 30_000),
                                         (1_000_000, 30_000), (50, 0)])
def test_occupancy_profile_by_either_tally_equals_the_sorted_one(bins, balls):
    """GRR's balls-into-empty-cells profile: both routes (a tally of the tally when the bins are
    few beside the balls, else a sort) give exactly the sorted answer, dtypes included."""
    thrown = np.random.default_rng(SEED + bins + balls).integers(0, bins, size=balls)
    levels, cells = sr.occupancy_profile(thrown, bins)
    _, occupancy = np.unique(thrown, return_counts=True)
    expected_levels, expected_cells = np.unique(occupancy, return_counts=True)
    assert levels.tolist() == expected_levels.tolist() and cells.tolist() == expected_cells.tolist()
    assert levels.dtype == expected_levels.dtype and cells.dtype == expected_cells.dtype
    assert int((levels * cells).sum()) == balls and int(cells.sum()) <= bins


def test_balls_thrown_range_by_range_have_the_occupancy_law_of_one_throw(monkeypatch):
    """GRR's uniform reports into the empty cells, drawn a range at a time (ranges of 64 bins,
    the last one partial): every ball lands once, and the numbers of empty and of singly
    occupied bins have the exact means of one throw of all the balls (z-tests, the variances
    exact: for bins i ≠ j both empty with probability (1 − 2/m)^b, both single with
    b(b − 1)/m² (1 − 2/m)^(b − 2))."""
    monkeypatch.setattr(sr, "THROW_RANGE", 64)
    bins, balls, runs = 1037, 700, 400
    rng = np.random.default_rng(SEED)
    empty, single = [], []
    for _ in range(runs):
        levels, cells = sr.thrown_profile(balls, bins, rng)
        assert int((levels * cells).sum()) == balls and int(cells.sum()) <= bins
        empty.append(bins - int(cells.sum()))
        single.append(int(cells[levels == 1].sum()))
    m, b = bins, balls
    p0, p00 = (1 - 1 / m) ** b, (1 - 2 / m) ** b
    p1, p11 = b / m * (1 - 1 / m) ** (b - 1), b * (b - 1) / m ** 2 * (1 - 2 / m) ** (b - 2)
    limit = stats.norm.isf(FAMILY_ALPHA / 4)
    for seen, p, pp in ((empty, p0, p00), (single, p1, p11)):
        mean, variance = m * p, m * p + m * (m - 1) * pp - (m * p) ** 2
        z = (np.mean(seen) - mean) / math.sqrt(variance / runs)
        assert abs(z) < limit, f"mean {np.mean(seen):.2f}, expected {mean:.2f}: z = {z:.2f}"
    nothing = sr.thrown_profile(0, bins, rng), sr.thrown_profile(5, 0, rng)
    assert all(part.size == 0 and part.dtype == np.int64 for pair in nothing for part in pair)


# ---------------------------------------------------------------------------- statistical tests
@pytest.mark.slow
@pytest.mark.parametrize("key,epsilon", CASES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_sparse_matches_dense_in_distribution(key, epsilon, domain, domains):
    od = domains[domain]
    truth = od.to_dense()
    mechanism = mechanisms.build(key, epsilon=epsilon)
    dense = np.array([dense_statistics(od, truth, mechanism,
                                       seeding.generator(SEED, "dense", key, domain, run))
                      for run in range(RUNS)])
    sparse = np.array([sparse_statistics(od, mechanism,
                                         seeding.generator(SEED, "sparse", key, domain, run))
                       for run in range(RUNS)])
    for column, name in enumerate(STATISTICS):
        p = stats.ks_2samp(dense[:, column], sparse[:, column]).pvalue
        assert p > FAMILY_ALPHA / N_TESTS, (key, domain, name, p)


@pytest.mark.slow
def test_the_two_sample_test_detects_a_wrong_epsilon(domains):
    od = domains["zipf_90k"]
    truth = od.to_dense()
    dense = [dense_statistics(od, truth, mechanisms.build("laplace", epsilon=1.15),
                              seeding.generator(SEED, "power-dense", run))[0]
             for run in range(RUNS)]
    sparse = [sparse_statistics(od, mechanisms.build("laplace", epsilon=1.0),
                                seeding.generator(SEED, "power-sparse", run))[0]
              for run in range(RUNS)]
    assert stats.ks_2samp(dense, sparse).pvalue < FAMILY_ALPHA / N_TESTS


def test_run_follows_the_spec_and_its_seed(domains):
    od = domains["zipf_90k"]
    spec = release.ReleaseSpec("gaussian", 1.0, {"delta": 1e-5}, ("base_pos",), seed=3)
    first, again = sr.run(od, spec), sr.run(od, spec)
    assert np.array_equal(first.nonzero, again.nonzero)
    assert np.array_equal(first.top_flat, again.top_flat)
    np.testing.assert_equal(sparse_metrics.score(first, "base_pos"), sparse_metrics.score(again, "base_pos"))
    with pytest.raises(ValueError, match="norm_sub"):
        sr.run(od, spec.with_postprocess(("norm_sub",)))
    # the thesis's Base-Cut sorts the whole domain: refused with the reason, not run wrongly
    for method in ("base_cut", "significance_cut"):
        with pytest.raises(ValueError, match=f"got {method}, which needs every cell"):
            sr.run(od, spec.with_postprocess((method,)))


# ------------------------------------------------------------------------------ routing (pages)
def routed_domain() -> ODMatrix:
    """10⁶ cells, 2 % non-empty, n ≈ 10⁵: shaped like the ED level (9.8 M cells, 3 %)."""
    od = zipf_domain(side=1000, cells=20_000, seed=SEED + 1)
    return ODMatrix.from_pairs("routed", od.origins, od.destinations, od.rows, od.cols,
                               np.minimum(od.counts, 100))


def test_routing_takes_the_sparse_path_where_it_is_exact_and_faster(domains):
    od = routed_domain()
    assert od.fits_dense and od.domain_size >= release.SPARSE_FROM_CELLS

    def route(key, post=("base_pos",), matrix=od):
        return release.sparse_route(matrix, release.ReleaseSpec(key, 1.0, postprocess=post))

    assert all(route(key) for key in sr.EXACT)
    assert not any(route(key) for key in ("laplace", "gaussian", "hm", "hr", "dbitflip", "topk"))
    assert not route("oue", ("base_pos", "norm_sub"))           # a post-processing over all cells
    assert not route("oue", matrix=domains["county"])           # small: dense gives every metric
    crowded = ODMatrix.from_pairs("crowded", od.origins, od.destinations, od.rows, od.cols,
                                  od.counts * 20)               # GRR's work grows with n
    assert crowded.n > release.SPARSE_MAX_WORK * crowded.domain_size
    assert not route("grr", matrix=crowded) and route("oue", matrix=crowded)
    spec = release.ReleaseSpec("olh", 2.0, postprocess=("base_pos",), seed=4)
    routed = release.run(od, spec)
    assert routed.sparse and not release.run(od, spec, sparse=False).sparse
    np.testing.assert_equal(dict(routed.metrics),                          # the same stream
                            dict(release.run(od, spec, sparse=True).metrics))


#: Mechanisms the pages now release sparsely at ED level, at ε where both kinds of top flow occur.
ROUTED = [("stability_histogram", 1.0), ("discrete_laplace", 0.5), ("grr", 8.0), ("oue", 4.0),
          ("olh", 4.0)]
ROUTED_STATISTICS = ("rmse", "max_error", "false_positive_cells", "topk_recall")


@pytest.mark.slow
@pytest.mark.parametrize("key,epsilon", ROUTED)
def test_routed_releases_match_dense_releases_in_distribution(key, epsilon):
    """The release a page gets by default (routed sparse) against the dense release of the same
    settings: KS tests on its scores over 100 trials each, Bonferroni over every test here."""
    od = routed_domain()
    truth = od.to_dense()
    samples = {}
    for sparse in (None, False):
        rows = []
        for trial in range(100):
            spec = release.ReleaseSpec(key, epsilon, postprocess=("base",), seed=SEED,
                                       trial=trial + (0 if sparse is None else 1000))
            result = release.run(od, spec, true_counts=truth, k=K, sparse=sparse)
            assert result.sparse is (sparse is None)
            rows.append([result.metrics[name] for name in ROUTED_STATISTICS])
        samples[sparse] = np.array(rows)
    for column, name in enumerate(ROUTED_STATISTICS):
        routed, dense = samples[None][:, column], samples[False][:, column]
        if np.ptp(np.concatenate([routed, dense])) == 0:   # e.g. the stability histogram's recall
            continue
        p = stats.ks_2samp(routed, dense).pvalue
        assert p > FAMILY_ALPHA / (len(ROUTED) * len(ROUTED_STATISTICS)), (key, name, p)
