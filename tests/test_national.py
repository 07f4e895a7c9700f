"""The national synthetic generator, on a small scale (the full size is made by the command)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data import national
from dpcore.data.synthetic import haversine_km
from dpcore.interfaces import cli

SCALE = 0.01   # 850 tracts, 31 counties, ≈ 1.5 M commuters


@pytest.fixture(scope="module")
def small():
    return national.generate(SCALE)


def test_sizes_scale_with_the_national_targets(small):
    assert small.n_origins == small.n_destinations == round(national.TRACTS * SCALE)
    assert len(small.origins.parent_zones) == round(national.COUNTIES * SCALE)
    per_tract = small.n / small.n_origins
    assert 0.9 * national.WORKERS_PER_TRACT < per_tract < 1.1 * national.WORKERS_PER_TRACT
    # sparse: a few dozen destinations per origin, far below the domain
    assert 10 < small.nonzero / small.n_origins < national.CANDIDATES
    assert small.origins.has_coordinates.all()


def test_deterministic_from_the_documented_seed(small):
    again = national.generate(SCALE)
    assert np.array_equal(again.flat_index, small.flat_index)
    assert np.array_equal(again.counts, small.counts)


def test_distance_decay_most_commutes_are_short(small):
    """Distance decay: the median commute is far shorter than the median distance between
    two random tracts."""
    lat, lon = small.origins.lat, small.origins.lon
    trip = haversine_km(lat[small.rows], lon[small.rows], lat[small.cols], lon[small.cols])
    weighted_median = np.median(np.repeat(trip, small.counts))
    random_pairs = haversine_km(lat[::7, None], lon[::7, None], lat[None, ::5], lon[None, ::5])
    assert weighted_median < 0.05 * np.median(random_pairs)


def test_tracts_nest_in_counties(small):
    rolled = small.aggregate()
    assert rolled.n == small.n
    assert all(tract.startswith(county) for tract, county in
               zip(small.origins.ids[:50], small.origins.parent[:50]))


def test_save_and_load_round_trip(small, tmp_path):
    path = national.save(small, tmp_path / "small.npz")
    loaded = national.load(path)
    assert np.array_equal(loaded.flat_index, small.flat_index)
    assert np.array_equal(loaded.counts, small.counts)
    assert np.array_equal(loaded.origins.ids, small.origins.ids)
    assert np.array_equal(loaded.origins.parent, small.origins.parent)
    assert loaded.aggregate().n == small.n


def test_missing_file_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="datasets --make us_tracts"):
        national.load(tmp_path / "absent.npz")


def test_command_makes_it_in_the_cache_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPCORE_CACHE", str(tmp_path))
    assert cli.main(["datasets", "--make", "us_tracts", "--scale", str(SCALE)]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "us_tracts" in out
    assert national.cache_path(SCALE).parent == tmp_path
    assert national.cache_path(SCALE).exists()
