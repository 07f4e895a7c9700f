"""A huge sparse OD matrix for the page tests: 8,000 tracts in 80 counties (6.4·10⁷ cells, more
than the dense limit, so every release takes the sparse path) with 100,000 non-empty commutes."""

import functools

import numpy as np

from dpcore.data.od import ODMatrix, ZoneSet

TRACTS, COUNTIES, FLOWS = 8_000, 80, 100_000


@functools.lru_cache(maxsize=1)
def huge_matrix() -> ODMatrix:
    rng = np.random.default_rng(13)
    county = np.repeat(np.arange(COUNTIES), TRACTS // COUNTIES)
    county_ids = np.array([f"{c:03d}" for c in range(COUNTIES)])
    parents = ZoneSet.from_ids(county_ids, labels=np.char.add("County ", county_ids),
                               lat=rng.uniform(30, 45, COUNTIES), lon=rng.uniform(-120, -75,
                                                                                  COUNTIES))
    ids = np.char.add(county_ids[county], np.char.zfill(np.arange(TRACTS).astype(str), 6))
    zones = ZoneSet.from_ids(ids, labels=np.char.add("Tract ", ids),
                             lat=parents.lat[county] + rng.normal(0, 0.1, TRACTS),
                             lon=parents.lon[county] + rng.normal(0, 0.1, TRACTS),
                             parent=county_ids[county], parent_zones=parents)
    origins = rng.integers(0, TRACTS, FLOWS)
    near = (origins + rng.integers(-200, 200, FLOWS)) % TRACTS   # mostly within a county
    counts = rng.geometric(0.02, FLOWS)
    return ODMatrix.from_pairs("Huge synthetic state", zones, zones, origins, near, counts)

