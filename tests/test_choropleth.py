"""Per-zone figures and colour classes of the zone choropleth (dpcore.evaluation.choropleth)."""

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import choropleth


@pytest.fixture(scope="module")
def toy():
    od = datasets.load("toy_town")
    true = od.to_dense().astype(float)
    released = true + np.random.default_rng(5).normal(0, 3, true.shape)
    return od, true, released


def test_totals_and_self_containment_match_the_matrix(toy):
    od, true, released = toy
    figures = choropleth.zone_figures(od, true, released).set_index("id")
    grid, noisy = true.reshape(od.n_origins, -1), released.reshape(od.n_origins, -1)
    for i, zone in enumerate(od.origins.ids):
        assert figures.loc[zone, "residents_true"] == grid[i].sum()
        assert figures.loc[zone, "residents_released"] == pytest.approx(noisy[i].sum())
        j = list(od.destinations.ids).index(zone)
        assert figures.loc[zone, "self_containment_true"] == pytest.approx(grid[i, j]
                                                                           / grid[i].sum())
        assert figures.loc[zone, "self_containment_released"] == pytest.approx(
            noisy[i, j] / noisy[i].sum())
    for j, zone in enumerate(od.destinations.ids):
        assert figures.loc[zone, "jobs_true"] == grid[:, j].sum()


def test_error_and_relative_error(toy):
    od, true, released = toy
    figures = choropleth.zone_figures(od, true, released)
    error = choropleth.values(figures, "residents", "error")
    np.testing.assert_allclose(error, figures["residents_released"] - figures["residents_true"])
    relative = choropleth.values(figures, "jobs", "relative")
    jobs = figures["jobs_true"].to_numpy()
    expected = np.where(jobs != 0, (figures["jobs_released"] - jobs) / np.where(jobs, jobs, 1),
                        np.nan)
    np.testing.assert_allclose(relative, expected)
    assert np.isnan(relative[jobs == 0]).all()  # zones without jobs have no relative error
    assert choropleth.unit("residents", "error") == "commuters"
    assert choropleth.unit("self_containment", "error") == "percentage points"
    with pytest.raises(ValueError, match="measure must be one of"):
        choropleth.values(figures, "nonsense", "true")


def test_without_a_release_released_columns_are_empty(toy):
    od, true, _ = toy
    figures = choropleth.zone_figures(od, true)
    assert figures["residents_released"].isna().all()


def test_a_destination_only_zone_has_no_self_containment():
    zones = ZoneSet.from_ids(["a", "b"])
    work = ZoneSet.from_ids(["a", "office"])
    od = ODMatrix.from_pairs("t", zones, work, [0, 1, 1], [0, 0, 1], [5, 3, 2])
    figures = choropleth.zone_figures(od, od.to_dense()).set_index("id")
    assert figures.loc["a", "self_containment_true"] == 1.0
    assert figures.loc["b", "self_containment_true"] == 0.0  # b is no destination: nobody stays
    assert np.isnan(figures.loc["office", "self_containment_true"])


def test_diverging_classes_are_symmetric_around_zero():
    values = np.random.default_rng(1).normal(0, 100, 500)
    breaks = choropleth.class_breaks(values, diverging=True)
    np.testing.assert_allclose(breaks, -breaks[::-1])
    classes = choropleth.classify([0.0, -1e9, 1e9, np.nan], breaks)
    middle = (len(breaks) - 2) // 2
    assert list(classes) == [middle, 0, len(breaks) - 2, -1]


def test_sequential_classes_start_at_zero_and_cover_the_bulk():
    values = np.random.default_rng(2).lognormal(5, 1.5, 1000)
    breaks = choropleth.class_breaks(values, diverging=False)
    assert breaks[0] == 0 and np.all(np.diff(breaks) > 0)
    assert np.mean(values <= breaks[-1]) >= 0.98
    assert choropleth.class_breaks([np.nan], diverging=False)[-1] == 1.0  # no data: no error
