"""The published vector of a sparse release (dpcore.mechanisms.sparse_vector.SparseVector) and the
routing of dpcore.release.run: the views read it exactly as they read the dense vector."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import release
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import flows, summaries
from dpcore.mechanisms import sparse_release
from dpcore.mechanisms.sparse_vector import SparseVector, ZeroCells
from dpcore.scoring import ranks, sparse_metrics
from dpcore.scoring.ranks import PRESENT_AT
from tests.huge import huge_matrix


def as_sparse(od, dense: np.ndarray, keep: int = 50) -> SparseVector:
    """A dense release written as a SparseVector: the empty cells' exact histogram and the top
    ``keep`` present cells (what the sparse release would hold, had it drawn these values)."""
    flat = od.flat_index
    empty = np.setdiff1d(np.arange(dense.size), flat)
    top = ranks.top_cells(dense, keep)
    top = top[dense[top] >= PRESENT_AT]
    full = top.size >= keep
    known_from = float(np.nextafter(dense[top[-1]], np.inf)) if full else PRESENT_AT
    return SparseVector(dense.size, flat, dense[flat],
                        ZeroCells(empty.size, dense[empty], np.ones(empty.size, np.int64)),
                        top, dense[top], known_from)


def same(got, want) -> None:
    """Equal tables (true counts come back as floats from the sparse form)."""
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True),
                                  check_dtype=False)


@pytest.fixture(scope="module")
def county():
    od = datasets.load("ireland_county")
    truth = od.to_dense()
    spec = release.ReleaseSpec("laplace", 0.05, postprocess=("base",), seed=4)
    dense = np.array(release.run(od, spec, true_counts=truth, score=False).released)
    return od, truth, dense, as_sparse(od, dense)


def test_values_top_and_ranks_equal_the_dense_vector(county):
    od, truth, dense, sparse = county
    known = np.union1d(od.flat_index, sparse.top_flat)
    assert np.array_equal(sparse.at(known), dense[known])
    assert np.array_equal(sparse.top(50), ranks.top_cells(dense, 50))
    cells = ranks.top_cells(truth, 200)   # continuous noise: no ties, so every rank is exact
    assert np.array_equal(sparse.ranks(cells), ranks.ordinal_ranks(dense, cells))
    assert sparse.rank_note is None


def test_the_views_read_either_form_the_same(county):
    od, truth, dense, sparse = county
    truth_sparse = SparseVector.counts(od)
    same(ranks.rank_pairs(truth_sparse, sparse, 100), ranks.rank_pairs(truth, dense, 100))
    same(ranks.top_flows(od, truth_sparse, {"laplace": sparse}, 30),
         ranks.top_flows(od, truth, {"laplace": dense}, 30))
    for view in flows.VIEWS:
        got = flows.select(od, truth_sparse, sparse, view=view, top_k=20)
        want = flows.select(od, truth, dense, view=view, top_k=20,
                            min_count=sparse.known_from if view != flows.TRUE else None)
        for group in flows.GROUPS:
            same(getattr(got, group), getattr(want, group))
    table = release.release_table(od, truth_sparse, sparse)
    cells = np.union1d(od.flat_index, sparse.top_flat)
    assert np.array_equal(table["released_count"], dense[cells])
    assert np.array_equal(table["true_count"], truth[cells])


def test_ties_among_empty_cells_are_placed_at_their_expected_position():
    # 10 explicit cells, 90 empty cells of which 30 tie at 2.0: the rank of an explicit cell
    # at 2.0 counts the 20 above it exactly, and the tied empty cells before it by expectation.
    od_flat = np.arange(0, 100, 10)
    values = np.array([5.0, 4.5, 4.0, 3.5, 2.0, 1.5, 2.0, 1.0, 0.5, 0.6])  # cell 60 ties, later
    zeros = ZeroCells(90, [3.0, 2.0, 0.0], [20, 30, 40])
    vector = SparseVector(100, od_flat, values, zeros, np.empty(0, np.int64), np.empty(0))
    (rank,) = vector.ranks([40])
    above = 4 + 20                                # explicit cells above 2.0, empty cells at 3.0
    empty_before = 40 - 4                         # empty cells with a smaller flat index
    assert rank == 1 + above + round(30 * empty_before / 90)
    # an empty cell of the kept top at 3.0: the other 19 empty cells at 3.0 are spread uniformly
    # over the 89 other empty cells, 49 of which come before it (cells 0–54 less 6 explicit)
    kept = SparseVector(100, od_flat, values, zeros, np.array([55]), np.array([3.0]))
    assert kept.at([55, 40, 56]).tolist()[:2] == [3.0, 2.0] and np.isnan(kept.at([56])[0])
    assert kept.ranks([55])[0] == 1 + 4 + round(19 * 49 / 89)
    assert vector.rank_note is not None


def test_band_ranks_use_the_noise_law():
    law = stats.laplace(scale=2.0)
    zeros = ZeroCells(1_000_000, [], [], (sparse_release.Band(0.5, 12.5, 1_000_000, 4e6, 2e7),))
    vector = SparseVector(1_000_001, np.array([0]), np.array([6.0]), zeros, law=law)
    share = (law.sf(6.0) - law.sf(12.5)) / (law.sf(0.5) - law.sf(12.5))
    assert vector.ranks([0])[0] == 1 + round(1_000_000 * share)


def test_run_takes_the_sparse_path_exactly_when_the_domain_does_not_fit():
    od = huge_matrix()
    assert not od.fits_dense
    spec = release.ReleaseSpec("oue", 1.0, postprocess=("base_pos", "base"), seed=2)
    result = release.run(od, spec, k=10, top_n=100)
    assert result.sparse and isinstance(result.released, SparseVector)
    drawn = sparse_release.run(od, spec, keep=release.SPARSE_TOP)   # the same random stream
    assert result.metrics == sparse_metrics.score(drawn, "base_pos", 10, 100)
    assert np.array_equal(result.outputs["base"].released.values, drawn.nonzero)
    assert np.array_equal(result.released.values, np.maximum(drawn.nonzero, 0))
    assert np.array_equal(result.released.top(release.SPARSE_TOP), drawn.top_flat)
    small = datasets.load("toy_town")
    assert not release.run(small, spec).sparse and release.run(small, spec, sparse=True).sparse


@pytest.mark.parametrize("key", sorted(sparse_release.UNSUPPORTED))
def test_refused_mechanisms_and_post_processings_say_why(key):
    od = huge_matrix()
    result = release.attempt(od, release.ReleaseSpec(key, 1.0, seed=1))
    assert result.error and sparse_release.UNSUPPORTED[key] in result.error
    assert "64,000,000 cells" in result.error
    norm = release.attempt(od, release.ReleaseSpec("laplace", 1.0, postprocess=("norm",)))
    assert "base, base_pos, post_pos" in norm.error


def test_approximation_label_travels_with_the_result():
    od = huge_matrix()
    laplace = release.run(od, release.ReleaseSpec("laplace", 1.0, seed=3))
    assert laplace.approximation == sparse_release.CLT_NOTE
    assert release.run(od, release.ReleaseSpec("oue", 1.0, seed=3)).approximation is None


@pytest.mark.slow
def test_sparse_and_dense_ranks_have_the_same_distribution():
    """The released rank of the 5th true commute and the number of invented flows among the
    released top 10, over 300 releases by each path (Laplace, ε = 0.1, county data, where both
    run): two-sample KS tests, each failing falsely with probability 0.001 (0.002 together)."""
    od = datasets.load("ireland_county")
    truth = od.to_dense()
    fifth = ranks.top_cells(truth, 5)[-1:]
    samples = {True: ([], []), False: ([], [])}
    for sparse in samples:
        for trial in range(300):
            spec = release.ReleaseSpec("laplace", 0.1, seed=11, trial=trial)
            result = release.run(od, spec, true_counts=truth, score=False, sparse=sparse)
            samples[sparse][0].append(ranks.ordinal_ranks(result.released, fifth)[0])
            top = ranks.top_cells(result.released, 10)
            samples[sparse][1].append(np.count_nonzero(truth[top] == 0))
    for dense_sample, sparse_sample in zip(samples[False], samples[True]):
        assert stats.ks_2samp(dense_sample, sparse_sample).pvalue > 0.001


def test_ranks_are_exact_at_ten_billion_cells():
    # Counts near 10¹⁰ multiplied in int64 overflow (the national Explore page once showed
    # ranks from −1.1·10⁹ to +1.5·10⁹): every rank here is checked in Python's exact integers.
    d = 10**10
    flat = np.array([5, 9_000_000_000, 9_999_999_999])
    zeros = ZeroCells(d - 3, [0.0, 1.0], [d - 3 - 7, 7])
    vector = SparseVector(d, flat, np.array([0.0, 0.0, 3.0]), zeros)
    got = vector.ranks(flat)
    tied_zeros, others = d - 3 - 7, d - 3
    expected_before = [round(Fraction(tied_zeros * before, others))
                       for before in (5, 9_000_000_000 - 1)]
    assert got.tolist() == [1 + 1 + 7 + expected_before[0],
                            1 + 1 + 7 + 1 + expected_before[1], 1]
    assert got.min() >= 1 and got.max() <= d


def test_released_ranks_of_a_ten_billion_cell_release_lie_in_the_domain():
    # 100,000 × 100,000 zones: GRR releases most of the busiest commutes as 0, tied with ~10¹⁰
    # empty cells; their ranks must be in [1, |X|] and, with more than 10 cells released above
    # 0, outside the top 10 — so the summary sentence cannot count them as staying there.
    zones = ZoneSet.from_ids(np.char.zfill(np.arange(100_000).astype(str), 6))
    rng = np.random.default_rng(5)
    origins, destinations = rng.integers(0, 100_000, 2_000), rng.integers(0, 100_000, 2_000)
    od = ODMatrix.from_pairs("Ten billion cells", zones, zones, origins, destinations,
                             rng.geometric(0.01, 2_000))
    assert od.domain_size == 10**10
    result = release.run(od, release.ReleaseSpec("grr", 1.0, seed=2), k=10, top_n=100)
    pairs = ranks.rank_pairs(SparseVector.counts(od), result.released, 100)
    assert pairs["released_rank"].between(1, od.domain_size).all()
    zero = pairs["released_zero"]
    assert zero.any() and (pairs.loc[zero, "released_rank"] > 10).all()
    sentence = summaries.summary_sentence("GRR", pairs, result.metrics)
    inside = int((pairs.head(10)["released_rank"] <= 10).sum())
    assert inside <= int((~pairs.head(10)["released_zero"]).sum())
    assert (f"and {inside} stayed in the top 10" in sentence) == (inside > int(
        (pairs.head(10)["released_rank"] == pairs.head(10)["true_rank"]).sum()))
