"""Unit tests of the OD data model (dpcore/data/od.py) on small hand-made matrices."""

import numpy as np
import pytest

from dpcore.data.od import DENSE_CELL_LIMIT, DomainTooLargeError, ODMatrix, ZoneSet

SPECIAL = "Overseas"


@pytest.fixture
def counties():
    """Parent level: origins A, B; destinations A, B, Overseas."""
    origins = ZoneSet.from_ids(["A", "B"], labels=["County A", "County B"],
                               lat=[53.0, 52.0], lon=[-6.0, -8.0])
    destinations = ZoneSet.from_ids(["A", "B", SPECIAL],
                                    labels=["County A", "County B", SPECIAL],
                                    lat=[53.0, 52.0, np.nan], lon=[-6.0, -8.0, np.nan])
    return origins, destinations


@pytest.fixture
def od(counties):
    """Fine level: EDs a1, a2 in A and b1 in B; destinations the same EDs + Overseas.

    Counts (origin → destination): a1→a1 5, a1→b1 1, a2→a1 3, a2→Overseas 2, b1→a2 4,
    b1→b1 7.
    """
    origins = ZoneSet.from_ids(["a1", "a2", "b1"], labels=["Ash", "Alder", "Birch"],
                               lat=[53.1, 53.2, 52.1], lon=[-6.1, -6.2, -8.1],
                               parent=["A", "A", "B"], parent_zones=counties[0])
    destinations = ZoneSet.from_ids(["a1", "a2", "b1", SPECIAL],
                                    labels=["Ash", "Alder", "Birch", SPECIAL],
                                    lat=[53.1, 53.2, 52.1, np.nan], lon=[-6.1, -6.2, -8.1, np.nan],
                                    parent=["A", "A", "B", SPECIAL], parent_zones=counties[1])
    return ODMatrix.from_pairs("fine", origins, destinations,
                               rows=[2, 0, 0, 1, 1, 2], cols=[1, 0, 2, 0, 3, 2],
                               counts=[4, 5, 1, 3, 2, 7])


# --------------------------------------------------------------------------------------- ZoneSet
def test_zoneset_from_ids_fills_labels_and_missing_coordinates():
    zones = ZoneSet.from_ids(["x", "y"])
    assert list(zones.labels) == ["x", "y"]
    assert np.isnan(zones.lat).all() and np.isnan(zones.lon).all()
    assert not zones.has_coordinates.any()
    assert zones.parent is None and len(zones) == 2


def test_zoneset_rejects_duplicate_ids_naming_them():
    with pytest.raises(ValueError, match="unique.*repeated: x"):
        ZoneSet.from_ids(["x", "y", "x"])


def test_zoneset_rejects_columns_of_the_wrong_length():
    with pytest.raises(ValueError, match="lat has 1 entries, ids has 2"):
        ZoneSet.from_ids(["x", "y"], lat=[1.0], lon=[1.0, 2.0])


def test_zoneset_index_of_and_unknown_id(od):
    assert list(od.destinations.index_of(["b1", SPECIAL, "a1"])) == [2, 3, 0]
    with pytest.raises(KeyError, match="unknown zone id 'zz'"):
        od.origins.index_of(["a1", "zz"])


def test_zoneset_has_coordinates_and_take_keeps_parents(od):
    assert list(od.destinations.has_coordinates) == [True, True, True, False]
    taken = od.origins.take([2, 0])
    assert list(taken.ids) == ["b1", "a1"] and list(taken.parent) == ["B", "A"]
    assert list(taken.labels) == ["Birch", "Ash"] and taken.parent_zones is od.origins.parent_zones
    assert list(od.origins.to_frame().columns) == ["id", "label", "lat", "lon", "parent"]


# ----------------------------------------------------------------------------------- properties
def test_sizes_n_nonzero_domain_and_sparsity(od):
    assert od.n == 22
    assert od.nonzero == 6
    assert (od.n_origins, od.n_destinations, od.domain_size) == (3, 4, 12)
    assert od.sparsity == pytest.approx(0.5)
    assert od.count_at_most(1) == 1 and od.count_at_most(4) == 4
    assert od.has_parent_level


def test_cells_are_sorted_by_flat_index(od):
    assert list(od.flat_index) == [0, 2, 4, 7, 9, 10]
    assert list(od.counts) == [5, 1, 3, 2, 4, 7]


def test_cell_labels_use_zone_labels(od):
    assert list(od.cell_labels()) == ["Ash → Ash", "Ash → Birch", "Alder → Ash",
                                      "Alder → Overseas", "Birch → Alder", "Birch → Birch"]
    assert list(od.cell_labels([11, 1])) == ["Birch → Overseas", "Ash → Alder"]


def test_margins(od):
    assert list(od.origin_totals()) == [6, 5, 11]
    assert list(od.destination_totals()) == [8, 4, 8, 2]


def test_top_orders_by_count_then_flat_index(od):
    top = od.top(3)
    assert list(top["rank"]) == [1, 2, 3]
    assert list(top["count"]) == [7, 5, 4]
    assert list(top["commute"]) == ["Birch → Birch", "Ash → Ash", "Birch → Alder"]
    assert len(od.top(100)) == od.nonzero


def test_summary_reports_headline_figures(od):
    summary = od.summary()
    assert summary["n"] == 22 and summary["domain_size"] == 12 and summary["nonzero"] == 6
    assert summary["cells_count_1"] == 1 and summary["cells_under_10"] == 6


# ----------------------------------------------------------------------------------- conversion
def test_to_dense_places_counts_at_flat_indices(od):
    dense = od.to_dense()
    assert dense.shape == (12,) and dense.sum() == 22
    assert list(dense.reshape(3, 4)[1]) == [3, 0, 0, 2]


def test_to_dense_refuses_domains_over_the_limit_with_advice(od):
    with pytest.raises(DomainTooLargeError,
                       match=r"12 cells .*3 origins × 4 destinations.*Roll up"):
        od.to_dense(limit=11)
    assert len(od.to_dense(limit=12)) == 12
    assert DENSE_CELL_LIMIT == 50_000_000


def test_to_items_gives_one_flat_index_per_person(od):
    items = od.to_items()
    assert len(items) == od.n
    assert np.array_equal(np.bincount(items, minlength=od.domain_size), od.to_dense())


def test_from_dense_round_trips(od):
    again = ODMatrix.from_dense("again", od.origins, od.destinations, od.to_dense())
    assert np.array_equal(again.flat_index, od.flat_index)
    assert np.array_equal(again.counts, od.counts)
    with pytest.raises(ValueError, match="dense vector has 5 cells, the domain has 12"):
        ODMatrix.from_dense("bad", od.origins, od.destinations, np.ones(5))


def test_to_frame_lists_ids_labels_and_counts(od):
    frame = od.to_frame()
    assert list(frame.columns) == ["origin", "destination", "origin_label",
                                   "destination_label", "count"]
    assert frame.iloc[3].tolist() == ["a2", SPECIAL, "Alder", SPECIAL, 2]


def test_with_counts_rounds_and_clips(od):
    released = np.zeros(12)
    released[[0, 5, 11]] = [2.6, -3.0, 0.4]
    new = od.with_counts(released, name="released")
    assert new.name == "released"
    assert list(new.flat_index) == [0] and list(new.counts) == [3]


# ---------------------------------------------------------------------------------- from_pairs
def test_from_pairs_sums_duplicates_and_drops_zeros(counties):
    origins, destinations = counties
    od = ODMatrix.from_pairs("dup", origins, destinations, rows=[1, 0, 1, 0],
                             cols=[2, 1, 2, 0], counts=[2, 0, 3, 4])
    assert list(od.flat_index) == [0, 5]
    assert list(od.counts) == [4, 5]
    assert od.n == 9 and od.nonzero == 2


@pytest.mark.parametrize("rows, cols, counts, message", [
    ([0], [0], [-1], "non-negative"),
    ([2], [0], [1], "origin position is outside"),
    ([-1], [0], [1], "origin position is outside"),
    ([0], [3], [1], "destination position is outside"),
    ([0, 1], [0], [1, 1], "same length"),
])
def test_from_pairs_validates(counties, rows, cols, counts, message):
    with pytest.raises(ValueError, match=message):
        ODMatrix.from_pairs("bad", *counties, rows=rows, cols=cols, counts=counts)


def test_from_pairs_accepts_an_empty_matrix(counties):
    od = ODMatrix.from_pairs("empty", *counties, rows=[], cols=[], counts=[])
    assert od.n == 0 and od.nonzero == 0 and od.domain_size == 6


# ------------------------------------------------------------------------------- restructuring
def test_aggregate_sums_into_parents(od):
    county = od.aggregate()
    assert list(county.origins.ids) == ["A", "B"]
    assert list(county.destinations.ids) == ["A", "B", SPECIAL]
    # A→A: 5 + 3, A→B: 1, A→Overseas: 2, B→A: 4, B→B: 7
    assert list(county.to_dense()) == [8, 1, 2, 4, 7, 0]
    assert county.n == od.n
    assert list(county.cell_labels())[0] == "County A → County A"


def test_aggregate_needs_a_parent_level(counties):
    flat = ODMatrix.from_pairs("flat", *counties, rows=[0], cols=[0], counts=[1])
    with pytest.raises(ValueError, match="no parent level"):
        flat.aggregate()


def test_aggregate_needs_parent_zone_sets(od):
    orphans = ZoneSet.from_ids(od.origins.ids, parent=od.origins.parent)
    matrix = ODMatrix.from_pairs("orphan", orphans, od.destinations, od.rows, od.cols, od.counts)
    assert not matrix.has_parent_level
    with pytest.raises(ValueError, match="no parent level"):
        matrix.aggregate()


def test_subset_renumbers_and_keeps_counts(od):
    sub = od.subset(origins=["b1", "a2"], destinations=["a1", "a2", SPECIAL])
    assert list(sub.origins.ids) == ["a2", "b1"]  # kept in the original order
    assert list(sub.destinations.ids) == ["a1", "a2", SPECIAL]
    assert sub.domain_size == 6
    assert list(sub.to_dense()) == [3, 0, 2, 0, 4, 0]
    assert sub.origins.parent is not None


def test_subset_of_destinations_only_keeps_all_origins(od):
    sub = od.subset(destinations=[SPECIAL])
    assert sub.n_origins == 3 and sub.n == 2


def test_subset_rejects_unknown_zones(od):
    with pytest.raises(KeyError, match="unknown zone id 'nowhere'"):
        od.subset(origins=["nowhere"])


def test_subset_by_parent_keeps_one_county_without_specials(od):
    county_a = od.subset_by_parent(["A"])
    assert list(county_a.origins.ids) == ["a1", "a2"]
    assert list(county_a.destinations.ids) == ["a1", "a2"]
    assert list(county_a.to_dense()) == [5, 0, 3, 0]
    both = od.subset_by_parent(["A", "B"])
    assert both.domain_size == 9 and both.n == od.n - 2  # only the 2 to Overseas are left out


def test_subset_by_parent_needs_a_parent_level(counties):
    flat = ODMatrix.from_pairs("flat", *counties, rows=[0], cols=[0], counts=[1])
    with pytest.raises(ValueError, match="no parent level"):
        flat.subset_by_parent(["A"])
