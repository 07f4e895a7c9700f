"""Which zones an OD heat map shows, and in which order (dpcore.evaluation.heatmap)."""

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.data.od import ZoneSet
from dpcore.evaluation import heatmap


@pytest.fixture(scope="module")
def ed():
    od = datasets.load("ireland_ed")
    return od, od.to_dense().astype(float)


def test_order_groups_by_parent_largest_first_then_by_size():
    zones = ZoneSet.from_ids(["a1", "b1", "a2", "b2", "c1"],
                             parent=["A", "B", "A", "B", "C"])
    totals = [5, 10, 7, 30, 1]  # B = 40, A = 12, C = 1
    order = heatmap.zone_order(zones, totals)
    assert list(zones.ids[order]) == ["b2", "b1", "a2", "a1", "c1"]
    flat = heatmap.zone_order(ZoneSet.from_ids(["x", "y", "z"]), [1, 3, 3])
    assert list(flat) == [1, 2, 0]  # ties keep the data's order


def test_a_small_matrix_is_shown_whole_in_order():
    od = datasets.load("ireland_county")
    true = od.to_dense().astype(float)
    grid = heatmap.grid(od, true, true + 1)
    assert grid.true.shape == (od.n_origins, od.n_destinations)
    assert grid.true.sum() == od.n
    residents = grid.true.sum(axis=1)
    assert np.all(np.diff(residents) <= 0)  # no parents: largest origin first
    np.testing.assert_array_equal(grid.difference, np.ones_like(grid.true))
    frame = grid.to_frame()
    assert len(frame) == grid.true.size and frame["true"].sum() == od.n
    assert list(frame.columns) == ["origin_id", "origin", "destination_id", "destination",
                                   "true", "released", "difference"]


def test_busiest_block_takes_the_largest_origins_and_destinations(ed):
    od, true = ed
    assert heatmap.needs_choice(od)
    grid = heatmap.grid(od, true, None, choice=heatmap.BUSIEST, size=25)
    assert grid.true.shape == (25, 25) and grid.released is None
    residents = true.reshape(od.n_origins, -1).sum(axis=1)
    chosen = od.origins.index_of(grid.origin_ids)
    assert residents[chosen].min() >= np.sort(residents)[-25]
    parents = od.origins.parent[chosen]
    # grouped: each parent's zones are contiguous
    runs = [p for i, p in enumerate(parents) if i == 0 or parents[i - 1] != p]
    assert len(runs) == len(set(parents))
    assert "busiest 25 origins" in grid.note


def test_parent_level_counts_every_commuter(ed):
    od, true = ed
    grid = heatmap.grid(od, true, true * 2, choice=heatmap.PARENT)
    parent = od.aggregate()
    assert grid.true.shape == (parent.n_origins, parent.n_destinations)
    assert grid.true.sum() == od.n and grid.released.sum() == 2 * od.n
    with pytest.raises(ValueError, match="choice must be one of"):
        heatmap.grid(od, true, None, choice="nonsense")


def test_a_subset_rolled_up_shows_only_its_parents(ed):
    od, _ = ed
    dublin = od.subset_by_parent(["Dublin City"])
    true = dublin.to_dense().astype(float)
    grid = heatmap.grid(dublin, true, true + 0.5, choice=heatmap.PARENT, max_side=100)
    assert grid.true.shape[0] == 1 and list(grid.origin_ids) == ["Dublin City"]
    assert grid.true.sum() == dublin.n
