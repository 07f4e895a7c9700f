"""A national-scale synthetic tract dataset, generated on demand into a cache folder.

``python3 -m dpcore datasets --make us_tracts`` writes ≈ 85,000 tract-like zones nested in
≈ 3,100 county-like parents, ≈ 150 M commuters and a few million non-zero flows: a domain of
≈ 7·10⁹ cells, the size of LODES at tract level for the whole United States. It is synthetic (no
real geography or counts) and is not committed: it is regenerated deterministically from
:data:`SEED` into :func:`cache_dir` (``$DPCORE_CACHE``, default ``~/.cache/dpcore``).

The model (constants below, chosen once, not fitted):

1. Counties: positions uniform over a 57° × 24° box (roughly the contiguous United States);
   populations Zipf-like (``u^{-1/ZIPF_EXPONENT}``), tracts per county ∝ population (≥ 1).
2. Tracts: around their county seat at distance ``radius · u^0.8`` (denser near the seat), the
   radius growing with the square root of the county's tract count; resident workers lognormal
   around :data:`WORKERS_PER_TRACT`; jobs lognormal × a seat bonus ``1 + 10·exp(−r/(0.15·radius))``,
   as in the Irish ED model of :mod:`dpcore.data.synthetic`.
3. Flows, in blocks of origins: each origin tract's workers go, by one multinomial draw, to its
   :data:`CANDIDATES` nearest tracts with probability ∝ jobs × (distance + 1 km)^−2 (distance
   decay, as the Irish model), except a share :data:`LONG_DISTANCE_SHARE` who work anywhere in
   the country ∝ jobs^1.5 (the long commutes of real LODES data). So every origin has a few
   dozen non-zero destinations.

Randomness goes through :func:`dpcore.seeding.generator` (purpose ``"synthetic-national"``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import spatial

from dpcore import seeding
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.data.synthetic import haversine_km

KEY = "us_tracts"
TITLE = "United States, tracts (synthetic, national scale)"
#: The one seed of the national dataset.
SEED = 20261124
COUNTIES = 3_100
TRACTS = 85_000
WORKERS_PER_TRACT = 1_765          # ≈ 150 M commuters over 85,000 tracts
ZIPF_EXPONENT = 1.1
CANDIDATES = 150
DECAY_EXPONENT = 2.0
#: (origin, candidate) pairs per multinomial block: bounds memory for the largest counties.
ORIGIN_BLOCK_CELLS = 1 << 21
LONG_DISTANCE_SHARE = 0.01
KM_PER_TRACT_RADIUS = 2.5
BOX = ((-124.0, -67.0), (25.0, 49.0))   # (lon range, lat range)
FORMAT_VERSION = 1


def cache_dir() -> Path:
    """Where generated datasets live: ``$DPCORE_CACHE`` or ``~/.cache/dpcore``."""
    return Path(os.environ.get("DPCORE_CACHE", Path.home() / ".cache" / "dpcore"))


def cache_path(scale: float = 1.0) -> Path:
    suffix = "" if scale == 1.0 else f"_scale{scale:g}"
    return cache_dir() / f"{KEY}{suffix}_v{FORMAT_VERSION}.npz"


def _counties(rng, n_counties: int, n_tracts: int) -> pd.DataFrame:
    (lon0, lon1), (lat0, lat1) = BOX
    population = rng.random(n_counties) ** (-1 / ZIPF_EXPONENT)
    tracts = np.maximum(1, np.floor(population / population.sum() * n_tracts)).astype(int)
    short = n_tracts - tracts.sum()    # hand out the rounding remainder to the largest
    tracts[np.argsort(-population)[:max(short, 0)]] += 1
    while tracts.sum() > n_tracts:      # rare: the floor of 1 overshoots on tiny sizes
        tracts[np.argmax(tracts)] -= 1
    return pd.DataFrame({"lon": rng.uniform(lon0, lon1, n_counties),
                         "lat": rng.uniform(lat0, lat1, n_counties), "tracts": tracts})


def _tracts(rng, counties: pd.DataFrame) -> pd.DataFrame:
    county = np.repeat(np.arange(len(counties)), counties["tracts"].to_numpy())
    radius_km = KM_PER_TRACT_RADIUS * np.sqrt(counties["tracts"].to_numpy())[county]
    r = radius_km * rng.random(county.size) ** 0.8
    angle = rng.uniform(0, 2 * np.pi, county.size)
    lat = counties["lat"].to_numpy()[county] + r * np.sin(angle) / 111.0
    lon = (counties["lon"].to_numpy()[county]
           + r * np.cos(angle) / (111.0 * np.cos(np.radians(lat))))
    workers = rng.lognormal(np.log(WORKERS_PER_TRACT) - 0.18, 0.6, county.size)
    jobs = rng.lognormal(0.0, 1.3, county.size) * (1 + 10 * np.exp(-r / (0.15 * radius_km)))
    return pd.DataFrame({"county": county, "lat": lat, "lon": lon, "workers": workers,
                         "jobs": jobs})


def _unit_vectors(lat, lon) -> np.ndarray:
    lat, lon = np.radians(lat), np.radians(lon)
    return np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def _flows(rng, tracts: pd.DataFrame):
    """(origin, destination, count) arrays: each origin's workers by one multinomial draw over
    its :data:`CANDIDATES` nearest tracts, plus the long-distance share over the country."""
    lat, lon, jobs = (tracts[c].to_numpy() for c in ("lat", "lon", "jobs"))
    k = min(CANDIDATES, len(tracts))
    nearest = spatial.cKDTree(_unit_vectors(lat, lon)).query(_unit_vectors(lat, lon), k=k)[1]
    nearest = nearest.reshape(len(tracts), k)
    workers = np.rint(tracts["workers"].to_numpy()).astype(np.int64)
    far = rng.binomial(workers, LONG_DISTANCE_SHARE)
    near = workers - far
    rows, cols, counts = [], [], []
    block = max(1, ORIGIN_BLOCK_CELLS // k)
    for first in range(0, len(tracts), block):
        origins = np.arange(first, min(first + block, len(tracts)))
        candidates = nearest[origins]
        distance = haversine_km(lat[origins, None], lon[origins, None], lat[candidates],
                                lon[candidates])
        weight = jobs[candidates] * (distance + 1.0) ** -DECAY_EXPONENT
        draws = rng.multinomial(near[origins], weight / weight.sum(axis=1, keepdims=True))
        o, j = np.nonzero(draws)
        rows.append(origins[o])
        cols.append(candidates[o, j])
        counts.append(draws[o, j])
    pull = jobs ** 1.5
    far_destinations = rng.choice(len(tracts), size=int(far.sum()), p=pull / pull.sum())
    rows.append(np.repeat(np.arange(len(tracts)), far))
    cols.append(far_destinations)
    counts.append(np.ones(far_destinations.size, dtype=np.int64))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(counts)


def generate(scale: float = 1.0) -> ODMatrix:
    """The dataset at ``scale`` × the national size (tests use a small scale)."""
    n_counties = max(2, int(round(COUNTIES * scale)))
    n_tracts = max(n_counties, int(round(TRACTS * scale)))
    rng = seeding.generator(SEED, "synthetic-national", float(scale))
    counties = _counties(rng, n_counties, n_tracts)
    tracts = _tracts(rng, counties)
    rows, cols, counts = _flows(rng, tracts)
    county_ids = np.array([f"{i + 1:05d}" for i in range(n_counties)])
    within = tracts.groupby("county").cumcount().to_numpy() + 1
    tract_ids = np.char.add(county_ids[tracts["county"].to_numpy()],
                            np.char.zfill((within * 100).astype(str), 6))
    parents = ZoneSet.from_ids(county_ids, labels=np.char.add("County ", county_ids),
                               lat=counties["lat"].to_numpy(), lon=counties["lon"].to_numpy())
    zones = ZoneSet.from_ids(tract_ids, labels=np.char.add("Tract ", tract_ids),
                             lat=tracts["lat"].to_numpy(), lon=tracts["lon"].to_numpy(),
                             parent=county_ids[tracts["county"].to_numpy()],
                             parent_zones=parents)
    return ODMatrix.from_pairs(TITLE, zones, zones, rows, cols, counts,
                               "Synthetic national tract-level commuting data (not real data).")


def save(od: ODMatrix, path: Path) -> Path:
    """Write ``od`` (zones and non-zero cells) as one compressed-free ``.npz`` for fast loading."""
    path.parent.mkdir(parents=True, exist_ok=True)
    zones, parents = od.origins, od.origins.parent_zones
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, rows=od.rows.astype(np.int32), cols=od.cols.astype(np.int32),
             counts=od.counts.astype(np.int32), ids=zones.ids.astype("U"),
             lat=zones.lat, lon=zones.lon, parent=zones.parent.astype("U"),
             parent_ids=parents.ids.astype("U"), parent_lat=parents.lat,
             parent_lon=parents.lon, version=FORMAT_VERSION)
    tmp.replace(path)
    return path


def make(scale: float = 1.0, path: Path | None = None) -> tuple[Path, float]:
    """Generate and save the dataset; returns the file and the seconds it took."""
    started = time.perf_counter()
    path = save(generate(scale), path or cache_path(scale))
    return path, time.perf_counter() - started


def load(path: Path | None = None) -> ODMatrix:
    """The generated dataset (a clear message saying how to make it when it is missing)."""
    path = Path(path or cache_path())
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: generate the national synthetic dataset "
                                f"with `python3 -m dpcore datasets --make {KEY}` (about "
                                f"20 s, ≈ 100 MB; set DPCORE_CACHE to choose the folder)")
    with np.load(path) as data:
        if int(data["version"]) != FORMAT_VERSION:
            raise ValueError(f"{path} was written by another version of the generator; "
                             f"regenerate it with `python3 -m dpcore datasets --make {KEY}`")
        parent_ids = data["parent_ids"].astype(object)
        parents = ZoneSet.from_ids(parent_ids, labels=np.char.add("County ", data["parent_ids"]),
                                   lat=data["parent_lat"], lon=data["parent_lon"])
        ids = data["ids"]
        zones = ZoneSet.from_ids(ids.astype(object), labels=np.char.add("Tract ", ids),
                                 lat=data["lat"], lon=data["lon"],
                                 parent=data["parent"].astype(object), parent_zones=parents)
        rows, cols = data["rows"].astype(np.int64), data["cols"].astype(np.int64)
        counts = data["counts"].astype(np.int64)
    # Saved sorted and without duplicates by ODMatrix itself: no need to normalise again.
    return ODMatrix(TITLE, zones, zones, rows, cols, counts,
                    "Synthetic national tract-level commuting data (not real data).")
