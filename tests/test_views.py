"""Unit tests of dpcore.data.views: levels, area subsets and subsamples."""


import numpy as np
import pytest

from dpcore.data import views


# ----------------------------------------------------------------------------- level and subset
def test_roll_up_equals_the_county_dataset(ed, county):
    rolled = views.select(ed, views.View(views.LEVEL_PARENT))
    assert np.array_equal(rolled.to_dense(), county.to_dense())
    assert ed.has_parent_level and not county.has_parent_level


def test_thesis_subsets_have_the_thesis_domain(ed):
    dublin = views.select(ed, views.View(areas=["Dublin City"]))
    rural = views.select(ed, views.View(areas=["Cavan", "Leitrim"]))
    assert dublin.domain_size == rural.domain_size == 26_244  # thesis §5.5: 162 × 162
    assert dublin.n == ed.subset_by_parent(["Dublin City"]).n
    assert rural.n < dublin.n


def test_areas_are_parents_when_there_is_a_parent_level(ed, toy):
    areas = views.areas(ed)
    assert "Dublin City" in areas and "Overseas" in areas and len(areas) == 35
    assert views.areas(ed, rolled_up=True) == areas
    assert list(views.areas(toy)) == [str(z) for z in toy.destinations.ids]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in areas.items())


def test_zone_subset_without_parent_level(toy):
    small = views.select(toy, views.View(areas=["Harbour", "Station"]))
    assert small.domain_size == 4
    expected = toy.subset(["Harbour", "Station"], ["Harbour", "Station"])
    assert np.array_equal(small.to_dense(), expected.to_dense())


def test_view_without_areas_is_the_matrix_itself(toy):
    assert views.select(toy, views.View()) is toy


@pytest.mark.parametrize("areas, message", [(["Nowhere"], "unknown area"),
                                            (["Work from home"], "choose more areas")])
def test_bad_subsets_say_what_is_wrong(toy, areas, message):
    with pytest.raises(ValueError, match=message):
        views.select(toy, views.View(areas=areas))


def test_roll_up_of_a_matrix_without_parents_is_refused(toy):
    with pytest.raises(ValueError, match="no parent level"):
        views.areas(toy, rolled_up=True)


# ---------------------------------------------------------------------------------- subsampling
def test_subsample_keeps_zones_and_draws_without_replacement(county, rng):
    small = views.subsample(county, 10_000, rng)
    assert small.n == 10_000 and small.domain_size == county.domain_size
    assert np.all(small.to_dense() <= county.to_dense())


def test_subsample_keeps_each_commuter_with_equal_chance(toy, seed):
    """Mean kept count per cell is c·m/n; tolerance from the hypergeometric variance."""
    rng = np.random.default_rng(seed)
    m, draws = 100, 2000
    truth = toy.to_dense()
    kept = np.mean([views.subsample(toy, m, rng).to_dense() for _ in range(draws)], axis=0)
    n = toy.n
    p = truth / n
    variance = m * p * (1 - p) * (n - m) / (n - 1)
    assert np.all(np.abs(kept - truth * m / n) <= 5 * np.sqrt(variance / draws) + 1e-12)


@pytest.mark.parametrize("n", [0, 10**9])
def test_subsample_size_must_fit(toy, rng, n):
    with pytest.raises(ValueError, match="between 1 and n"):
        views.subsample(toy, n, rng)
