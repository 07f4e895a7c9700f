"""The analysis layer: selections, sums (dense and sparse alike), and intervals whose coverage
and variance are measured over seeded releases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import mechanisms, release
from dpcore.analyses import answers, intervals, selection as sel, sums
from dpcore.analyses.sums import group_sums
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import margins
from dpcore.interfaces import published_analyses as published
from dpcore.mechanisms import postprocess
from dpcore.mechanisms.sparse_vector import SparseVector

RELEASES = 400
#: The registry's mechanisms with an interval (the published folders' laws are tested apart).
COVERED = [key for key in intervals.COVERED if key not in intervals.PUBLISHED_ONLY]
CLIPPED = [key for key in intervals.CLIPPED if key not in intervals.PUBLISHED_ONLY]
EPSILON = 1.0


def _queries(od: ODMatrix, home: str, work: str) -> list[answers.Query]:
    chosen = sel.zones(od, [work])
    return (answers.flows(od, chosen) + answers.destinations(od, chosen, "work")
            + answers.destinations(od, sel.zones(od, [home]), "home")
            + answers.distance(od, chosen, "work") + answers.direction(od, chosen, "home")
            + answers.paired(od, sel.zones(od, [home]), chosen)
            + answers.paired(od, sel.zones(od, [home, work]), chosen)
            + answers.comparison(od))


# ------------------------------------------------------------------------------------ selection
def test_selections(county, ed):
    dublin = sel.zones(county, ["Dublin City"])
    assert dublin.origins.sum() == 1 and dublin.destinations.sum() == 1
    eds = sel.parent(ed, "Dublin City")
    assert eds.origins.sum() == 162
    near = sel.radius(county, 20.0, zone="Dublin City")
    i = int(county.origins.index_of(["Dublin City"])[0])
    km = sel.distance_km(county.origins.lat[i], county.origins.lon[i], county.origins.lat,
                         county.origins.lon)
    np.testing.assert_array_equal(near.origins, km <= 20.0)
    assert 1 < near.origins.sum() < 31 and "Cork City" not in county.origins.ids[near.origins]
    assert not near.destinations[-4:].any()   # the special destinations have no position
    assert sel.radius(county, 0.0, zone="Cork City").origins.sum() == 1
    with pytest.raises(ValueError, match="unknown zone id 'Atlantis'"):
        sel.zones(county, ["Atlantis"])
    with pytest.raises(ValueError, match="no parent level"):
        sel.parent(county, "Dublin City")


def test_data_without_positions_gets_a_clear_message(toy):
    blank = ZoneSet.from_ids(toy.origins.ids)
    od = ODMatrix.from_dense("no positions", blank, ZoneSet.from_ids(toy.destinations.ids),
                             toy.to_dense())
    chosen = sel.zones(od, [od.destinations.ids[0]])
    for call in (lambda: sel.radius(od, 5.0, zone=od.origins.ids[0]),
                 lambda: answers.distance(od, chosen), lambda: answers.direction(od, chosen)):
        with pytest.raises(ValueError, match="needs the zones' positions"):
            call()
    assert len(answers.flows(od, chosen)) == 5   # analyses without geometry still answer


def test_haversine_and_compass():
    assert sel.distance_km(53.35, -6.26, 51.90, -8.47) == pytest.approx(219.5, abs=1.0)  # Dub–Cork
    assert sel.bearing_degrees(0, 0, 1, 0) == pytest.approx(0.0)
    assert sel.bearing_degrees(0, 0, 0, 1) == pytest.approx(90.0)


# ---------------------------------------------------------------------------------------- sums
def test_flows_add_up(county):
    truth = county.to_dense().astype(float)
    dublin = sel.zones(county, ["Dublin City"])
    frame = answers.evaluate(answers.flows(county, dublin) + answers.distance(county, dublin),
                             truth)
    value = dict(zip(frame.analysis + frame.part, frame.true))
    assert value["jobs"] == value["inflow"] + value["live_and_work"]
    assert value["employed_residents"] == value["outflow"] + value["live_and_work"]
    grid = truth.reshape(county.n_origins, county.n_destinations)
    d = int(county.destinations.index_of(["Dublin City"])[0])
    assert value["jobs"] == grid[:, d].sum()
    bands = frame[frame.analysis == "distance_work"]
    assert bands.true.sum() == grid[:, d].sum() and (bands.low == bands.true).all()


def test_sparse_sums_equal_dense(ed):
    """The truth as a SparseVector (no densifying) gives the dense answers exactly."""
    queries = _queries(ed, "Dublin City 001", "Dublin City 002")
    dense = answers.evaluate(queries, ed.to_dense())
    sparse = answers.evaluate(queries, SparseVector.counts(ed))
    np.testing.assert_array_equal(dense.true.to_numpy(), sparse.true.to_numpy())
    assert dense.true.sum() > 0


def _as_dense(vector: SparseVector, od: ODMatrix) -> np.ndarray:
    """Every cell: the named ones' values, the others at the empty-cell mean (its
    destination's, where the release keeps one per destination)."""
    flat, values = vector.known()
    mean = sums.empty_mean(vector, od)   # per destination for OnTheMap's release
    dense = np.full(vector.size, mean) if np.isscalar(mean) else np.tile(mean, od.n_origins)
    dense[flat] = values
    return dense


def test_sparse_release_answers_on_every_path_equal_the_cell_by_cell_sums(ed):
    """Sparse OUE and OnTheMap releases of the EDs (named empty cells in their kept top; the
    OnTheMap one with an empty-cell mean per workplace): every analysis — blocks found by rows,
    by columns and whole, per-area comparisons of zones and of parents — equals the sums of its
    cells written out one by one; so does the truth of a table with other non-zero cells than
    the one analysed (its cells divided out, not the table's index)."""
    vector, per_workplace = (release.run(ed, release.ReleaseSpec(key, epsilon, seed=5),
                                         score=False, sparse=True).outputs["base"].released
                             for key, epsilon in (("oue", EPSILON), ("onthemap", 3.0)))
    assert vector.top_outside_flat()[0].size > 0 and per_workplace.by_column is not None
    queries = (_queries(ed, "Dublin City 001", "Leitrim 001")
               + answers.flows(ed, sel.parent(ed, "Cork County"))
               + answers.destinations(ed, sel.parent(ed, "Dublin City"), "work")
               + answers.comparison(ed, "parents"))
    for values in (vector, per_workplace, SparseVector.counts(ODMatrix.from_pairs(
            "half", ed.origins, ed.destinations, ed.rows[::2], ed.cols[::2], ed.counts[::2]))):
        found = answers.evaluate(queries, None, values)
        expected = answers.evaluate(queries, None, _as_dense(values, ed))
        np.testing.assert_allclose(found.released, expected.released, rtol=1e-9, atol=1e-6)
        np.testing.assert_array_equal(found.cells, expected.cells)


def test_sparse_release_answers_are_named_cells_plus_the_empty_mean(county):
    spec = release.ReleaseSpec("oue", EPSILON, seed=3)
    vector = release.run(county, spec, score=False, sparse=True).outputs["base"].released
    flat, values = vector.known()
    rows, cols = np.arange(county.n_origins), np.arange(county.n_destinations)
    total, cells = group_sums(vector, county, rows, cols)
    assert cells[0] == county.domain_size
    assert total[0] == pytest.approx(vector.total(), rel=1e-9)   # every cell, once


# ------------------------------------------------------------------------------------ intervals
def _draws(od: ODMatrix, key: str, queries, sparse: bool = False, releases: int = RELEASES,
           post: str = "base", epsilon: float = EPSILON):
    """Per query part: true value, and each release's answer, low and high."""
    truth = od.to_dense()
    mechanism = mechanisms.build(key, epsilon=epsilon)
    rule = intervals.Interval(key, mechanism, post, n=od.n, d=od.domain_size, sparse=sparse)
    true = np.concatenate([q.compute(truth)[0] for q in queries])
    cells = np.concatenate([q.compute(truth)[1] for q in queries])
    answers_, lows, highs = [], [], []
    for seed in range(releases):
        if sparse:
            spec = release.ReleaseSpec(key, epsilon, (), (post,), seed=seed)
            vector = release.run(od, spec, score=False, sparse=True).outputs[post].released
        else:
            vector = postprocess.apply(post, mechanism.release(truth,
                                                               np.random.default_rng(seed)),
                                       od.n)
        answer = np.concatenate([q.compute(vector)[0] for q in queries])
        low, high = rule.bounds(answer, cells)
        answers_.append(answer), lows.append(low), highs.append(high)
    return true, cells, np.array(answers_), np.array(lows), np.array(highs), rule


def _check_coverage(true, cells, low, high):
    """Every answer (with at least one cell) covered at ≥ 95 % up to the binomial spread
    (Bonferroni over the answers checked, 0.1 % family error), and all answers pooled at ≥ 95 %
    within 3 binomial sds."""
    live = cells > 0
    covered = (low[:, live] <= true[live]) & (true[live] <= high[:, live])
    per_answer = covered.sum(axis=0)
    floor = stats.binom.ppf(0.001 / live.sum(), RELEASES, 0.95)
    assert per_answer.min() >= floor, (per_answer.min(), floor, np.argmin(per_answer))
    pooled = covered.mean()
    assert pooled >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / RELEASES), pooled
    return pooled


@pytest.mark.parametrize("key", COVERED)
def test_coverage_county(county, key):
    true, cells, _, low, high, _ = _draws(county, key,
                                          _queries(county, "Meath", "Dublin City"))
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("key", COVERED)
def test_coverage_small_table(toy, key):
    true, cells, _, low, high, _ = _draws(toy, key, _queries(toy, "Harbour", "Station"))
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("table", ["toy", "leitrim"])
def test_coverage_hadamard_response_blocked(request, table):
    """HR's blocked form (ε > 1, a public permutation per release that the interval does not
    see): covered at its exact variance (on the county, 18 s: its variance is checked by
    test_variance_of_sums_is_exact, its coverage measured once, docs/ANALYSES.md)."""
    od = request.getfixturevalue(table)
    home, work = od.origins.ids[0], od.destinations.ids[1]
    true, cells, _, low, high, rule = _draws(od, "hr", _queries(od, home, work), epsilon=3.0)
    assert "averaged over the release's public permutation" in rule.method
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("key", ["hr", "hm", "ss", "dbitflip", "cms"])
def test_coverage_ed_sized(leitrim, key):
    """The EDs of Leitrim (5,476 cells, most of them empty): every zone's flows among them."""
    home, work = leitrim.origins.ids[0], leitrim.destinations.ids[1]
    true, cells, _, low, high, _ = _draws(leitrim, key, _queries(leitrim, home, work))
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("key", ["oue", "grr", "discrete_laplace", "ss"])
def test_coverage_sparse_release(county, key):
    """The sparse path (SparseVector sums, empty cells at their mean) stays covered."""
    true, cells, _, low, high, _ = _draws(county, key, _queries(county, "Meath", "Dublin City"),
                                          sparse=True)
    _check_coverage(true, cells, low, high)


@pytest.fixture(scope="module")
def leitrim(ed):
    """A sparse table: the EDs of one county (most of its commutes empty)."""
    return ed.subset_by_parent(["Leitrim"])


@pytest.mark.parametrize("key", CLIPPED)
@pytest.mark.parametrize("table", ["county", "toy", "leitrim"])
def test_coverage_base_pos(request, key, table):
    """Base-Pos (negatives → 0) on central noise: the bound interval covers at ≥ 95 %, on a
    nearly full table and on a sparse one where clipping biases every empty cell."""
    od = request.getfixturevalue(table)
    work = od.destinations.ids[1]
    home = od.origins.ids[0] if od.origins.ids[0] != work else od.origins.ids[2]
    true, cells, _, low, high, _ = _draws(od, key, _queries(od, home, work), post="base_pos")
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("key", ["discrete_laplace"])
def test_coverage_base_pos_sparse_release(county, key):
    true, cells, _, low, high, _ = _draws(county, key, _queries(county, "Meath", "Dublin City"),
                                          sparse=True, post="base_pos")
    _check_coverage(true, cells, low, high)


@pytest.mark.parametrize("key,epsilon", [("grr", EPSILON), ("oue", EPSILON), ("laplace", EPSILON),
                                         ("hr", 3.0), ("hr", 6.0), ("hm", 3.0), ("ss", EPSILON),
                                         ("dbitflip", EPSILON), ("hcms", EPSILON)])
def test_variance_of_sums_is_exact(county, key, epsilon):
    """At the true totals the formula matches the variance of the released sums (chi-square
    bounds on the sample variance); for GRR the covariances matter: the independent-cell sum
    is far off for the large sets. Blocked HR (ε > 1): every release draws its permutation."""
    queries = _queries(county, "Meath", "Dublin City")
    releases = 150 if key in ("hr", "hm") else RELEASES   # a transform per release
    true, cells, released, _, _, rule = _draws(county, key, queries, epsilon=epsilon,
                                               releases=releases)
    live = cells > 1
    theory = rule.variance(cells[live], true[live])
    sample = released[:, live].var(axis=0, ddof=1)
    ratio = sample / theory
    k = releases - 1
    checks = live.sum()
    low = stats.chi2.ppf(0.0005 / checks, k) / k
    high = stats.chi2.ppf(1 - 0.0005 / checks, k) / k
    assert low <= ratio.min() and ratio.max() <= high, (ratio.min(), ratio.max(), low, high)


def test_grr_covariances_matter_on_large_sets(county):
    """GRR's estimates add up to n: the whole domain's sum has variance 0 (the formula says so),
    where independent cells would give d·Var ĉ; half the origins: well below the independent sum."""
    truth = county.to_dense()
    mechanism = mechanisms.build("grr", epsilon=EPSILON)
    rule = intervals.Interval("grr", mechanism, n=county.n, d=county.domain_size)
    half = np.arange(county.n_origins // 2)
    every = np.arange(county.n_destinations)
    total, cells = group_sums(truth, county, half, every)
    sums = [group_sums(mechanism.release(truth, np.random.default_rng(seed)), county, half,
                       every)[0][0] for seed in range(RELEASES)]
    independent = cells[0] * mechanism.variance(np.zeros(1), n=county.n, d=county.domain_size)[0]
    theory = rule.variance(cells, total)[0]
    k = RELEASES - 1
    assert (stats.chi2.ppf(0.0005, k) / k <= np.var(sums, ddof=1) / theory
            <= stats.chi2.ppf(0.9995, k) / k)
    assert theory < 0.8 * independent
    assert rule.variance([county.domain_size], [county.n])[0] == pytest.approx(0.0, abs=1e-6)


def test_not_covered_says_so(county):
    truth = county.to_dense()
    chosen = sel.zones(county, ["Dublin City"])
    mechanism = mechanisms.build("hr", epsilon=EPSILON)
    for key, post in (("topk", "base"), ("oue", "base_pos"), ("laplace", "norm_sub")):
        rule = intervals.Interval(key, mechanism, post, n=county.n, d=county.domain_size)
        frame = answers.evaluate(answers.flows(county, chosen), truth, truth, rule)
        assert frame.low.isna().all() and frame.high.isna().all()
        assert frame.method.str.startswith("no interval").all()


# ------------------------------------------------------------------------- published folders
def _opendp_like(key: str, scale: float, size: int, rng) -> np.ndarray:
    """Noise of the law a flat publish states (OpenDP's discrete Laplace or Gaussian), seeded."""
    if key == "discrete_gaussian":
        return margins.discrete_gaussian(rng, scale, size).astype(float)
    p = 1.0 - math.exp(-1.0 / scale)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(float)


@pytest.mark.parametrize("key,scale", [("discrete_laplace", 2.0), ("discrete_gaussian", 3.0),
                                       ("discrete_gaussian", 0.6)])
@pytest.mark.parametrize("post", ["base", "base_pos"])
def test_coverage_of_a_published_folders_noise(leitrim, key, scale, post):
    """The rule a published folder's answers get (from its manifest alone) covers at ≥ 95 % on
    releases drawn with the law the manifest states (seeded here; OpenDP's own are not)."""
    truth = leitrim.to_dense().astype(float)
    variance = (2 * math.exp(-1 / scale) / (1 - math.exp(-1 / scale)) ** 2
                if key == "discrete_laplace" else float(np.var(_opendp_like(
                    key, scale, 400_000, np.random.default_rng(0)))))
    rule = intervals.Interval(key, published.PublishedNoise(key, scale, variance), post,
                              n=leitrim.n, d=leitrim.domain_size)
    queries = _queries(leitrim, leitrim.origins.ids[0], leitrim.destinations.ids[1])
    true = np.concatenate([q.compute(truth)[0] for q in queries])
    cells = np.concatenate([q.compute(truth)[1] for q in queries])
    lows, highs = [], []
    for seed in range(RELEASES):
        vector = truth + _opendp_like(key, scale, truth.size, np.random.default_rng(seed))
        vector = postprocess.apply(post, vector, leitrim.n)
        low, high = rule.bounds(np.concatenate([q.compute(vector)[0] for q in queries]), cells)
        lows.append(low), highs.append(high)
    _check_coverage(true, cells, np.array(lows), np.array(highs))


def test_parent_comparison_equals_the_parent_table(county, ed):
    """The ED data adds up exactly to the county data: comparing the EDs' parent areas gives
    the county table's own inflow, outflow and live-and-work, zone by zone."""
    by_parent = answers.evaluate(answers.comparison(ed, "parents"), ed.to_dense())
    by_zone = answers.evaluate(answers.comparison(county, "zones"), county.to_dense())
    parents = by_parent.set_index(["analysis", "selection"]).true
    zones = by_zone[by_zone.part.isin(county.origins.ids)].set_index(["analysis", "part"]).true
    zones.index.names = parents.index.names
    assert len(parents) == 3 * 31
    pd.testing.assert_series_equal(parents.sort_index(), zones.sort_index(), check_names=False)


def test_too_large_a_distance_block_is_refused(county, monkeypatch):
    monkeypatch.setattr(answers, "GEOMETRY_CELL_LIMIT", 100)
    chosen = sel.zones(county, ["Dublin City", "Meath", "Kildare", "Wicklow"])
    with pytest.raises(ValueError, match="select a smaller area for distance and direction"):
        answers.distance(county, chosen)
    assert answers.distance(county, sel.zones(county, ["Dublin City"]))   # 31 × 1: fine
