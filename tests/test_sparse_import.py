"""Huge domains through the importers: limits on zones and non-zero cells, not on the domain."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore import mechanisms, seeding
from dpcore.data.importers import ImportFailed, import_od
from dpcore.data.importing import building
from dpcore.data.od import DENSE_CELL_LIMIT, ZONE_LIMIT
from dpcore.mechanisms import sparse_release as sr
from dpcore.scoring import sparse_metrics

TRACTS = 8_000   # a large state: 8,000 × 8,000 = 64 M cells, above the dense limit
ROWS = 30_000


def lodes_state() -> bytes:
    """A LODES "od" file of one large state: block pairs in TRACTS home and work tracts."""
    rng = seeding.generator(7, "test-lodes-state")
    home = rng.integers(0, TRACTS, ROWS)
    work = (home + rng.integers(-20, 21, ROWS)) % TRACTS
    work[:TRACTS] = np.arange(TRACTS)    # every tract is a workplace somewhere
    home[:TRACTS] = np.arange(TRACTS)    # and a home
    block = rng.integers(1000, 1100, ROWS)
    lines = [f"06{w:09d}{b:04d},06{h:09d}{b:04d},{1 + r % 7},0,0,0,0,0,0,0,0,0,20230101"
             for h, w, b, r in zip(home, work, block, range(ROWS))]
    header = "w_geocode,h_geocode,S000,SA01,SA02,SA03,SE01,SE02,SE03,SI01,SI02,SI03,createdate"
    return ("\n".join([header, *lines]) + "\n").encode()


def test_large_state_at_tract_level_imports_sparse_and_releases():
    data = lodes_state()
    with pytest.raises(ImportFailed) as caught:      # the dense default keeps its cap …
        import_od(data, "ca_od.csv", level="tract")
    assert caught.value.code == "domain_too_large"
    result = import_od(data, "ca_od.csv", level="tract", sparse=True)   # … the sparse one not
    od = result.matrix
    assert od.n_origins == od.n_destinations == TRACTS
    assert od.domain_size > DENSE_CELL_LIMIT and not od.fits_dense
    codes = [notice.code for notice in result.notices]
    assert "sparse_domain" in codes and "domain_too_large" not in codes
    draw = sr.draw(od, mechanisms.build("laplace", epsilon=1.0),
                   seeding.generator(7, "release", "laplace", 1.0, 0))
    assert draw.zeros.count == od.domain_size - od.nonzero
    assert sparse_metrics.score(draw)["rmse"] > 0


def test_auto_level_of_a_sparse_import_is_the_finest_whose_zones_fit():
    result = import_od(lodes_state(), "ca_od.csv", sparse=True)
    assert result.level == "block"      # every block fits the zone limit
    assert result.matrix.n_origins <= ZONE_LIMIT


def test_too_many_zones_is_refused_with_the_limit(monkeypatch):
    monkeypatch.setattr(building, "ZONE_LIMIT", 100)
    with pytest.raises(ImportFailed) as caught:
        import_od(lodes_state(), "ca_od.csv", level="tract", sparse=True)
    assert caught.value.code == "too_many_zones" and "at most 100 zones" in str(caught.value)


def test_too_many_flows_is_refused_with_the_limit(monkeypatch):
    monkeypatch.setattr(building, "NONZERO_LIMIT", 1000)
    with pytest.raises(ImportFailed) as caught:
        import_od(lodes_state(), "ca_od.csv", level="tract", sparse=True)
    assert caught.value.code == "too_many_flows" and "at most 1,000" in str(caught.value)


def test_the_data_pages_import_is_dense_when_it_fits_and_sparse_beyond_in_one_pass():
    from dpcore.data.importers import import_dense_or_sparse

    data = lodes_state()
    beyond = import_dense_or_sparse(data, "ca_od.csv", level="tract")
    sparse = import_od(data, "ca_od.csv", level="tract", sparse=True)
    assert np.array_equal(beyond.matrix.flat_index, sparse.matrix.flat_index)
    assert [n.code for n in beyond.notices] == [n.code for n in sparse.notices]
    automatic = import_dense_or_sparse(data, "ca_od.csv")   # the finest level that fits densely
    dense = import_od(data, "ca_od.csv")
    assert automatic.level == dense.level == "county" and automatic.matrix.fits_dense
    assert np.array_equal(automatic.matrix.counts, dense.matrix.counts)
    assert [str(n) for n in automatic.notices] == [str(n) for n in dense.notices]
