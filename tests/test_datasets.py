"""The bundled datasets: catalogue, loaders, every figure issue 2 requires of them, and the
generator that produced them (deterministic, calibrated, nested)."""

import gzip
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore.data import datasets, synthetic
from dpcore.data.od import ODMatrix

SPECIALS = ["No fixed place of work", "Work/school from home", "Northern Ireland", "Overseas"]
WITHIN = 0.01  # issue 2: margins within 1 % of the calibration figures


@pytest.fixture(scope="module")
def calibration():
    return synthetic.read_calibration(datasets.CALIBRATION_DIR)


@pytest.fixture(scope="module")
def county_grid(county):
    return county.to_dense().reshape(county.n_origins, county.n_destinations)


def assert_same_matrix(a: ODMatrix, b: ODMatrix):
    """Same zones (ids, labels, coordinates, parents) and the same counts, cell by cell."""
    for zones_a, zones_b in ((a.origins, b.origins), (a.destinations, b.destinations)):
        assert list(zones_a.ids) == list(zones_b.ids)
        assert list(zones_a.labels) == list(zones_b.labels)
        np.testing.assert_array_equal(zones_a.lat, zones_b.lat)
        np.testing.assert_array_equal(zones_a.lon, zones_b.lon)
        assert (zones_a.parent is None) == (zones_b.parent is None)
        if zones_a.parent is not None:
            assert list(zones_a.parent) == list(zones_b.parent)
    np.testing.assert_array_equal(a.rows, b.rows)
    np.testing.assert_array_equal(a.cols, b.cols)
    np.testing.assert_array_equal(a.counts, b.counts)


# ------------------------------------------------------------------------------------ catalogue
def test_catalogue_lists_the_three_datasets():
    assert list(datasets.DATASETS) == ["ireland_county", "ireland_ed", "toy_town"]
    assert [info.key for info in datasets.list_datasets()] == list(datasets.DATASETS)
    for key, info in datasets.DATASETS.items():
        assert info.key == key and info.title and info.description
        assert all(path.is_file() for path in info.files)


def test_every_dataset_is_labelled_synthetic_with_its_source():
    for key in ("ireland_county", "ireland_ed"):
        info = datasets.DATASETS[key]
        assert info.synthetic
        assert "calibrated to published 2016 census margins" in info.source
    assert datasets.DATASETS["toy_town"].synthetic
    assert "invented" in datasets.DATASETS["toy_town"].source
    assert datasets.DATASETS["ireland_ed"].parent == "ireland_county"


def test_files_are_compact():
    for info in datasets.list_datasets():
        assert info.flows_file.endswith(".gz")
        assert sum(path.stat().st_size for path in info.files) < 3_000_000


def test_unknown_key_names_the_valid_ones():
    with pytest.raises(KeyError,
                       match="unknown dataset 'paris'.*ireland_county, ireland_ed, toy_town"):
        datasets.load("paris")


def test_missing_file_says_how_to_regenerate(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="toy_town.zones.csv is missing.*generate_datasets"):
        datasets.load("toy_town")


def test_save_then_load_round_trips(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    toy = synthetic.toy_town()
    datasets.save(toy, datasets.DATASETS["toy_town"])
    assert_same_matrix(datasets.load("toy_town"), toy)


def test_save_needs_origins_first_among_destinations(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    toy = synthetic.toy_town()
    reversed_destinations = toy.destinations.take(np.arange(toy.n_destinations)[::-1])
    odd = ODMatrix.from_pairs("odd", toy.origins, reversed_destinations, [0], [0], [1])
    with pytest.raises(ValueError, match="origins must be the first destinations"):
        datasets.save(odd, datasets.DATASETS["toy_town"])


def test_loader_names_file_row_and_zone_of_an_unknown_zone(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    info = datasets.DATASETS["toy_town"]
    datasets.save(synthetic.toy_town(), info)
    with gzip.open(info.files[1], "at") as flows:
        flows.write("Atlantis,Harbour,3\n")
    with pytest.raises(ValueError, match=r"row 53, column 'origin': zone 'Atlantis' is not in the "
                                         r"zones file"):
        datasets.load("toy_town")


# --------------------------------------------------------------------------------- county level
def test_county_zones(county, calibration):
    counties = list(calibration.counties["zone"])
    assert len(counties) == 31 and county.n_origins == 31 and county.n_destinations == 35
    assert list(county.origins.ids) == counties
    assert list(county.destinations.ids) == counties + SPECIALS
    assert county.domain_size == 1085
    assert county.origins.has_coordinates.all()
    assert not county.destinations.has_coordinates[31:].any()
    np.testing.assert_array_equal(county.origins.lat, calibration.counties["lat"])


def test_county_n_is_about_2_75_million(county, calibration):
    assert county.n == calibration.counties["residents_commuting"].sum()
    assert abs(county.n / 2_750_000 - 1) < WITHIN


def test_county_row_totals_match_calibration(county, calibration):
    published = calibration.counties["residents_commuting"].to_numpy()
    assert np.max(np.abs(county.origin_totals() / published - 1)) < WITHIN


def test_county_column_totals_match_calibration(county, calibration):
    published = np.concatenate([calibration.counties["workplace_total"],
                                calibration.specials["workplace_total"]])
    assert np.max(np.abs(county.destination_totals() / published - 1)) < WITHIN


def test_county_same_county_counts_match_calibration(county_grid, calibration):
    published = calibration.counties["same_zone"].to_numpy()
    assert np.max(np.abs(np.diag(county_grid) / published - 1)) < WITHIN


def test_county_special_destination_shares_match_calibration(county, county_grid, calibration):
    shares = county_grid[:, 31:] / county.origin_totals()[:, None]
    published = calibration.shares[SPECIALS].to_numpy()
    # Within 1 %, or within the publication's rounding to 0.001 for the small shares.
    tolerance = np.maximum(WITHIN * published, synthetic.SHARE_ROUNDING_BOUND)
    assert np.all(np.abs(shares - published) <= tolerance)


def test_county_nonzero_cells_and_tail_of_small_cells(county):
    assert 1070 <= county.nonzero <= 1085
    under_20 = county.count_at_most(19)
    assert 24 <= under_20 <= 200  # "dozens"


def test_county_flows_decay_with_distance(county_grid, county, calibration):
    """Off-diagonal county flows, relative to their margins, fall with distance."""
    lat, lon = county.origins.lat, county.origins.lon
    distance = synthetic.haversine_km(lat[:, None], lon[:, None], lat[None, :], lon[None, :])
    between = county_grid[:, :31].astype(float)
    rows, cols = between.sum(axis=1), between.sum(axis=0)
    off = ~np.eye(31, dtype=bool)
    relative = between[off] / (rows[:, None] * cols[None, :])[off]
    rho = stats.spearmanr(distance[off], relative).statistic
    assert rho < -0.8


def test_county_regenerates_exactly(county, calibration):
    assert_same_matrix(synthetic.generate_county(calibration), county)


# ------------------------------------------------------------------------------------- ED level
def test_ed_zones_and_domain(ed, county):
    assert ed.n_origins == 3126 and ed.n_destinations == 3130
    assert ed.domain_size == 3126 * 3130
    assert list(ed.destinations.ids[:3126]) == list(ed.origins.ids)
    assert list(ed.destinations.ids[3126:]) == SPECIALS
    assert list(ed.destinations.parent[3126:]) == SPECIALS  # specials are their own parents
    assert not ed.destinations.has_coordinates[3126:].any()
    assert ed.origins.has_coordinates.all()
    assert set(ed.origins.parent) == set(county.origins.ids)
    assert list(ed.origins.parent_zones.ids) == list(county.origins.ids)
    assert list(ed.destinations.parent_zones.ids) == list(county.destinations.ids)


def test_ed_names_are_county_and_rank(ed):
    for zone_id, label, parent in zip(ed.origins.ids, ed.origins.labels, ed.origins.parent):
        assert zone_id == label
        assert re.fullmatch(re.escape(parent) + r" \d{3}", zone_id)


def test_ed_counts_per_county_as_in_the_thesis(ed):
    per_county = pd.Series(ed.origins.parent).value_counts()
    assert per_county["Dublin City"] == 162
    assert per_county["Cavan"] + per_county["Leitrim"] == 162
    assert per_county.sum() == 3126


def test_ed_thesis_subsets(ed, county_grid, county):
    dublin = ed.subset_by_parent(["Dublin City"])
    rural = ed.subset_by_parent(["Cavan", "Leitrim"])
    assert dublin.domain_size == rural.domain_size == 26_244
    i = list(county.origins.ids).index("Dublin City")
    assert dublin.n == county_grid[i, i]
    assert abs(dublin.n / 218_860 - 1) < WITHIN


def test_ed_aggregates_exactly_to_the_county_level(ed, county):
    assert_same_matrix(ed.aggregate(), county)


def test_ed_is_as_sparse_as_the_real_data(ed, county):
    assert ed.n == county.n
    assert 250_000 <= ed.nonzero <= 320_000
    assert ed.count_at_most(1) > 100_000


def test_ed_positions_lie_around_their_county_town(ed, county):
    town = pd.DataFrame({"lat": county.origins.lat, "lon": county.origins.lon},
                        index=county.origins.ids)
    parent = ed.origins.parent
    radius = np.array([np.sqrt(synthetic.COUNTY_LAYOUT[p][1] / np.pi) for p in parent])
    to_town = synthetic.haversine_km(ed.origins.lat, ed.origins.lon,
                                     town.loc[parent, "lat"], town.loc[parent, "lon"])
    assert np.all(to_town <= radius * 1.001)
    # Numbered outwards from the town: 001 is the nearest ED of its county.
    frame = pd.DataFrame({"county": parent, "to_town": to_town})
    assert frame.groupby("county", sort=False)["to_town"].apply(
        lambda d: bool(np.all(np.diff(d.to_numpy()) >= -1e-3))).all()
    # Denser near the town: r = radius·u^0.8 puts 42 % of the EDs within half the radius
    # (uniform in the disk: 25 %); rejection near smaller counties moves this a little.
    assert np.mean(to_town < radius / 2) > 0.35


def test_ed_positions_avoid_smaller_counties(ed, county):
    radius = {c: np.sqrt(area / np.pi) for c, (_, area) in synthetic.COUNTY_LAYOUT.items()}
    towns = dict(zip(county.origins.ids, zip(county.origins.lat, county.origins.lon)))
    for name, (lat, lon) in towns.items():
        foreign = ed.origins.parent != name
        bigger = np.array([radius[p] > radius[name] for p in ed.origins.parent])
        inside = synthetic.haversine_km(ed.origins.lat, ed.origins.lon, lat, lon) < radius[name]
        assert not np.any(foreign & bigger & inside), name


def test_ed_regenerates_exactly(ed, county):
    """About 1 s: the whole ED generation is vectorised per origin county."""
    assert_same_matrix(synthetic.generate_ed(county), ed)


# ------------------------------------------------------------------------------------- toy town
def test_toy_town_is_small_and_readable():
    toy = datasets.load("toy_town")
    assert 6 <= toy.n_origins <= 8
    assert toy.origins.has_coordinates.all()
    assert list(toy.destinations.ids[:toy.n_origins]) == list(toy.origins.ids)
    assert list(toy.destinations.ids[toy.n_origins:]) == [synthetic.TOY_WORK_FROM_HOME]
    assert 200 <= toy.n < 1000
    assert toy.count_at_most(1) > 0  # someone is alone on their commute: the privacy lesson
    assert_same_matrix(toy, synthetic.toy_town())


# ------------------------------------------------------------------------------------ generator
def test_county_model_keeps_rows_and_diagonal_exact_for_any_seed(calibration):
    other = synthetic.county_matrix(calibration, np.random.default_rng(7))
    grid = other.to_dense().reshape(31, 35)
    np.testing.assert_array_equal(other.origin_totals(),
                                  calibration.counties["residents_commuting"])
    np.testing.assert_array_equal(np.diag(grid), calibration.counties["same_zone"])
    assert not np.array_equal(other.counts, synthetic.generate_county(calibration).counts)


def test_ipf_fits_consistent_margins_and_rejects_inconsistent_ones():
    seed = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [3.0, 1.0, 0.0]])
    fitted = synthetic.ipf(seed, np.array([10.0, 5.0, 5.0]), np.array([6.0, 6.0, 8.0]))
    np.testing.assert_allclose(fitted.sum(axis=1), [10, 5, 5], rtol=1e-10)
    np.testing.assert_allclose(fitted.sum(axis=0), [6, 6, 8], rtol=1e-10)
    assert np.all(fitted[np.eye(3, dtype=bool)] == 0)  # structural zeros stay zero
    with pytest.raises(RuntimeError, match="did not converge"):
        synthetic.ipf(np.ones((2, 2)), np.array([1.0, 1.0]), np.array([3.0, 3.0]))


def test_integerise_rows_is_exact_on_rows_and_unbiased_per_cell(rng):
    expected = np.array([[0.3, 1.7, 2.0], [4.25, 0.5, 0.25]])
    totals = np.array([4, 5])
    draws = np.stack([synthetic.integerise_rows(expected, totals, rng) for _ in range(4000)])
    assert np.all(draws.sum(axis=2) == totals)
    assert np.all(draws >= np.floor(expected))
    # Each row places one leftover person, so each cell is floor + Bernoulli(fractional part):
    # the mean of 4000 draws has standard error sqrt(f(1−f)/4000) ≤ 0.008; allow 5 of them.
    fraction = expected - np.floor(expected)
    tolerance = 5 * np.sqrt(fraction * (1 - fraction) / len(draws)) + 1e-12
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= tolerance)


def test_haversine_one_degree_of_latitude():
    assert synthetic.haversine_km(53.0, -7.0, 54.0, -7.0) == pytest.approx(111.195, abs=1e-3)
    assert synthetic.haversine_km(53.0, -7.0, 53.0, -7.0) == 0.0
