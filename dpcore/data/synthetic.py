"""Deterministic generator of the bundled synthetic commuting datasets.

The real 2016 POWSCAR matrix is not bundled; what is bundled is *synthetic*, generated here from
published margins (``data/calibration``, copied from the 2016 census figures, rounded to 10) with a
fixed seed, so that it looks and behaves like the real data (size, margins, sparsity, tail of
small cells) without being it. ``scripts/generate_datasets.py`` writes the files in ``data/``.

County level (``ireland_county``, 31 origins × 35 destinations)
    1. The diagonal (residents working in their own county) is the published ``same_zone``.
    2. Special destinations ("No fixed place of work", "Work/school from home", "Northern
       Ireland", "Overseas") get ``row total × published share``; a share published as 0.000
       (below 0.0005, only Northern Ireland) becomes ``0.0005 · exp(−d / 50 km)`` with d the
       distance from the county town to the border at Newry. Each special column is then scaled to
       its published total (the shares are rounded to 0.001, so the scaling stays within rounding).
    3. The other county → county cells come from a gravity model: a seed matrix
       ``(d² + (10 km)²)^(−2.5/2)`` between county towns (zero diagonal) fitted by iterative
       proportional fitting (IPF) to the residual row totals (row total − diagonal − specials)
       and column totals (workplace total − diagonal).
    4. Integerisation keeps every row total exact: each row's cells are floored and the remaining
       people are placed by one multinomial draw in proportion to the fractional parts. Cells
       expected below 1 (far pairs, Northern Ireland from the south) become 0 or small, which gives
       the real data's few empty cells and its tail of small ones. Column totals move by a few
       people only.

Electoral-division level (``ireland_ed``, 3,126 EDs; destinations the same EDs + the 4 specials)
    1. Each county has a fixed number of EDs (:data:`COUNTY_LAYOUT`: Dublin City 162, Cavan +
       Leitrim 162 as in the thesis, 3,126 in all; the others shaped like the real division, rural
       counties many small EDs, Dublin's suburbs few large ones).
    2. Positions: within a disk around the county town of radius ``sqrt(area / π)`` (approximate
       county areas in :data:`COUNTY_LAYOUT`), at distance ``radius · u^0.8`` (u uniform, so denser
       near the town) and a uniform angle; a point falling inside the disk of a *smaller* county
       (e.g. Dublin City inside South Dublin's disk, Galway City inside Galway County's) is drawn
       again, so city EDs are not mixed with their surrounding county's. EDs are numbered by
       distance from their county town: "Cavan 001" is the ED nearest Cavan town. Points may fall
       in the sea; these are synthetic positions.
    3. Weights: residents ~ lognormal(σ = 0.6); jobs ~ lognormal(σ = 1.3) × (1 + 10·exp(−r /
       (0.15 · radius))) for distance r from the town, so jobs cluster in town centres.
    4. Every county → county count of the county level is spread over its ED pairs by one
       multinomial draw with probabilities ∝ residents(origin) × pull(destination) ×
       (distance + 1 km)^(−2). The pull is jobs within a county and jobs^2.5 across counties
       (long-distance commuters head for the big employment centres). The distance from an ED to
       itself is the mean distance between two points of a disk of the county's average ED area.
       Counts to a special destination are spread over the origin EDs ∝ residents. The ED matrix
       therefore aggregates *exactly* to the county matrix.
    These constants were tuned once (not per run) so that the sparsity resembles the real data:
    ≈ 290 k non-zero cells and ≈ 140 k cells of count 1 (real: 287,116 and 135,771).

Toy town (``toy_town``)
    Seven invented zones and an invented, hand-written matrix (:func:`toy_town`): no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix, ZoneSet

#: The one seed of the bundled data; each dataset draws from its own stream of it.
SEED = 2016
COUNTY_STREAM, ED_STREAM = 1, 2

EARTH_RADIUS_KM = 6371.0

# County level: gravity seed (d² + core²)^(−exponent/2) between county towns.
GRAVITY_EXPONENT = 2.5
GRAVITY_CORE_KM = 10.0
#: Published shares are rounded to 0.001; a share shown as 0 is below this.
SHARE_ROUNDING_BOUND = 0.0005
NORTHERN_IRELAND = "Northern Ireland"
#: Border crossing used for the distance of unpublished (rounded-to-zero) Northern Ireland shares.
BORDER_AT_NEWRY = (54.18, -6.34)
BORDER_DECAY_KM = 50.0
IPF_TOLERANCE = 1e-12
IPF_MAX_ITERATIONS = 10_000

# ED level.
#: county -> (number of EDs, approximate area in km²). Dublin City 162 and Cavan + Leitrim 162 as
#: in the thesis (§5.5); 3,126 EDs in all.
COUNTY_LAYOUT = {
    "Carlow": (48, 897), "Dublin City": (162, 118), "South Dublin": (43, 223),
    "Fingal": (37, 455), "Dún-Laoghaire Rathdown": (59, 127), "Kildare": (79, 1695),
    "Kilkenny": (100, 2073), "Laois": (86, 1720), "Longford": (67, 1091), "Louth": (55, 826),
    "Meath": (128, 2342), "Offaly": (78, 2001), "Westmeath": (98, 1840), "Wexford": (110, 2367),
    "Wicklow": (74, 2027), "Clare": (140, 3450), "Cork City": (65, 40),
    "Cork County": (250, 7460), "Kerry": (147, 4807), "Limerick City and County": (146, 2756),
    "Tipperary": (176, 4305), "Waterford City and County": (111, 1857), "Galway City": (19, 51),
    "Galway County": (190, 6100), "Leitrim": (74, 1590), "Mayo": (133, 5588),
    "Roscommon": (97, 2548), "Sligo": (71, 1838), "Cavan": (88, 1932), "Donegal": (138, 4861),
    "Monaghan": (57, 1295),
}
ED_RADIAL_POWER = 0.8
RESIDENT_SIGMA = 0.6
JOB_SIGMA = 1.3
JOB_CENTRE_BOOST = 10.0
JOB_CENTRE_SCALE = 0.15
ED_DECAY_EXPONENT = 2.0
ED_DECAY_OFFSET_KM = 1.0
CROSS_COUNTY_JOB_POWER = 2.5
#: Mean distance between two uniform points of a unit disk (128 / 45π).
MEAN_DISK_DISTANCE = 128 / (45 * np.pi)


@dataclass(frozen=True)
class Calibration:
    """Published county margins: ``counties`` (zone, lat, lon, residents_commuting,
    workplace_total, same_zone), ``specials`` (zone, workplace_total) and ``shares`` (origin
    county × special destination, indexed like ``counties``)."""

    counties: pd.DataFrame
    specials: pd.DataFrame
    shares: pd.DataFrame


def read_calibration(directory: Path) -> Calibration:
    """Read the two calibration CSVs (see ``data/calibration/README.md``)."""
    margins = pd.read_csv(Path(directory) / "ireland_county_2016_margins.csv")
    shares = pd.read_csv(Path(directory) / "ireland_county_2016_special_destination_shares.csv")
    counties = margins[margins["kind"] == "county"].reset_index(drop=True)
    specials = margins[margins["kind"] == "destination_only"].reset_index(drop=True)
    shares = shares.set_index("origin").loc[counties["zone"], list(specials["zone"])]
    return Calibration(counties, specials, shares)


def haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    """Great-circle distance in km between points given in degrees (broadcasting)."""
    lat1, lon1, lat2, lon2 = (np.radians(np.asarray(a, dtype=float))
                              for a in (lat1, lon1, lat2, lon2))
    h = (np.sin((lat2 - lat1) / 2) ** 2
         + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(h))


# ------------------------------------------------------------------------------------ county level
def county_zones(calibration: Calibration) -> tuple[ZoneSet, ZoneSet]:
    """Origins (the 31 counties at their main town) and destinations (+ the 4 specials)."""
    c, s = calibration.counties, calibration.specials
    origins = ZoneSet.from_ids(c["zone"], lat=c["lat"], lon=c["lon"])
    destinations = ZoneSet.from_ids(pd.concat([c["zone"], s["zone"]]),
                                    lat=pd.concat([c["lat"], s["lat"]]),
                                    lon=pd.concat([c["lon"], s["lon"]]))
    return origins, destinations


def special_expectations(calibration: Calibration) -> np.ndarray:
    """Expected counts origin county × special destination, scaled to the published totals."""
    c = calibration.counties
    shares = calibration.shares.to_numpy(dtype=float).copy()
    ni = list(calibration.specials["zone"]).index(NORTHERN_IRELAND)
    to_border = haversine_km(c["lat"], c["lon"], *BORDER_AT_NEWRY)
    unpublished = shares[:, ni] == 0
    shares[unpublished, ni] = (SHARE_ROUNDING_BOUND
                               * np.exp(-to_border[unpublished] / BORDER_DECAY_KM))
    expected = c["residents_commuting"].to_numpy(dtype=float)[:, None] * shares
    return expected * (calibration.specials["workplace_total"].to_numpy() / expected.sum(axis=0))


def ipf(seed: np.ndarray, row_totals: np.ndarray, col_totals: np.ndarray) -> np.ndarray:
    """Iterative proportional fitting of a non-negative seed matrix to consistent margins.

    Ends on a row step, so row totals are met to machine precision.
    """
    fitted = seed.astype(float).copy()
    for _ in range(IPF_MAX_ITERATIONS):
        fitted *= (col_totals / fitted.sum(axis=0))[None, :]
        fitted *= (row_totals / fitted.sum(axis=1))[:, None]
        if np.max(np.abs(fitted.sum(axis=0) / col_totals - 1)) < IPF_TOLERANCE:
            return fitted
    raise RuntimeError("IPF did not converge: are the row and column totals consistent?")


def integerise_rows(expected: np.ndarray, row_totals: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """Integer matrix with exactly ``row_totals``: floors plus one multinomial draw per row over
    the fractional parts (so each cell's expectation is kept)."""
    floors = np.floor(expected)
    out = floors.astype(np.int64)
    for i, fractions in enumerate(expected - floors):
        remaining = int(row_totals[i] - out[i].sum())
        if remaining:
            out[i] += rng.multinomial(remaining, fractions / fractions.sum())
    return out


def county_matrix(calibration: Calibration, rng: np.random.Generator) -> ODMatrix:
    """The synthetic county-level matrix (model in the module docstring)."""
    c = calibration.counties
    rows = c["residents_commuting"].to_numpy(dtype=np.int64)
    cols = c["workplace_total"].to_numpy(dtype=float)
    diagonal = c["same_zone"].to_numpy(dtype=np.int64)
    specials = special_expectations(calibration)

    distance = haversine_km(c["lat"].to_numpy()[:, None], c["lon"].to_numpy()[:, None],
                            c["lat"].to_numpy()[None, :], c["lon"].to_numpy()[None, :])
    seed = (distance ** 2 + GRAVITY_CORE_KM ** 2) ** (-GRAVITY_EXPONENT / 2)
    np.fill_diagonal(seed, 0.0)
    residual_rows = rows - diagonal - specials.sum(axis=1)
    residual_cols = cols - diagonal
    # The published margins are rounded to 10: share the few people of difference out.
    residual_cols *= residual_rows.sum() / residual_cols.sum()
    between = ipf(seed, residual_rows, residual_cols)

    off_diagonal = integerise_rows(np.hstack([between, specials]), rows - diagonal, rng)
    counts = off_diagonal + np.hstack([np.diag(diagonal), np.zeros_like(specials, dtype=np.int64)])
    origins, destinations = county_zones(calibration)
    return ODMatrix.from_dense("Ireland, counties (synthetic)", origins, destinations, counts,
                               "Synthetic county-level commuting matrix calibrated to published "
                               "2016 census margins.")


# ---------------------------------------------------------------------------------------- ED level
def place_eds(counties: ZoneSet, rng: np.random.Generator) -> pd.DataFrame:
    """ED positions around each county town (module docstring, ED level step 2).

    Returns one row per ED: county, number (1 = nearest the town), lat, lon, distance to the town.
    """
    names = list(counties.ids)
    if set(names) != set(COUNTY_LAYOUT):
        raise ValueError("COUNTY_LAYOUT must name exactly the counties of the calibration")
    radius = np.array([np.sqrt(COUNTY_LAYOUT[n][1] / np.pi) for n in names])
    km_per_deg_lat = np.pi * EARTH_RADIUS_KM / 180
    frames = []
    for k, name in enumerate(names):
        wanted, lat0, lon0 = COUNTY_LAYOUT[name][0], counties.lat[k], counties.lon[k]
        smaller = radius < radius[k]
        kept = np.empty((0, 2))
        while len(kept) < wanted:
            batch = 4 * wanted
            r = radius[k] * rng.random(batch) ** ED_RADIAL_POWER
            theta = 2 * np.pi * rng.random(batch)
            lat = lat0 + r * np.sin(theta) / km_per_deg_lat
            lon = lon0 + r * np.cos(theta) / (km_per_deg_lat * np.cos(np.radians(lat0)))
            inside_smaller = (haversine_km(lat[:, None], lon[:, None], counties.lat[None, smaller],
                                           counties.lon[None, smaller])
                              < radius[None, smaller]).any(axis=1)
            kept = np.vstack([kept, np.column_stack([lat, lon])[~inside_smaller]])
        kept = kept[:wanted]
        to_town = haversine_km(kept[:, 0], kept[:, 1], lat0, lon0)
        order = np.argsort(to_town, kind="stable")
        frames.append(pd.DataFrame({
            "county": name, "number": np.arange(1, wanted + 1), "lat": kept[order, 0],
            "lon": kept[order, 1], "to_town_km": to_town[order], "radius_km": radius[k]}))
    return pd.concat(frames, ignore_index=True)


def ed_id(county: str, number: int) -> str:
    """The synthetic ED name: county and rank by distance from the county town."""
    return f"{county} {number:03d}"


def ed_zones(county: ODMatrix, eds: pd.DataFrame) -> tuple[ZoneSet, ZoneSet]:
    """ED origins and destinations (EDs + the specials), nested in the county zone sets."""
    ids = [ed_id(c, n) for c, n in zip(eds["county"], eds["number"])]
    lat, lon = eds["lat"].round(5).to_numpy(), eds["lon"].round(5).to_numpy()
    origins = ZoneSet(ids=ids, labels=ids, lat=lat, lon=lon, parent=eds["county"],
                      parent_zones=county.origins)
    special = county.destinations.ids[len(county.origins):]
    destinations = ZoneSet(
        ids=np.concatenate([ids, special]), labels=np.concatenate([ids, special]),
        lat=np.concatenate([lat, np.full(len(special), np.nan)]),
        lon=np.concatenate([lon, np.full(len(special), np.nan)]),
        parent=np.concatenate([eds["county"].to_numpy(dtype=str), special]),
        parent_zones=county.destinations)
    return origins, destinations


def ed_matrix(county: ODMatrix, rng: np.random.Generator) -> ODMatrix:
    """The synthetic ED-level matrix, aggregating exactly to ``county`` (module docstring)."""
    eds = place_eds(county.origins, rng)
    origins, destinations = ed_zones(county, eds)
    residents = rng.lognormal(0.0, RESIDENT_SIGMA, len(eds))
    jobs = rng.lognormal(0.0, JOB_SIGMA, len(eds)) * (
        1 + JOB_CENTRE_BOOST * np.exp(-eds["to_town_km"] / (JOB_CENTRE_SCALE * eds["radius_km"])))
    jobs = jobs.to_numpy()
    # Within one ED: the mean distance between two points of a disk of the ED's average size.
    own_distance = MEAN_DISK_DISTANCE * np.sqrt(
        eds["county"].map({c: a / (k * np.pi) for c, (k, a) in COUNTY_LAYOUT.items()}).to_numpy())
    members = [np.flatnonzero(eds["county"].to_numpy() == c) for c in county.origins.ids]
    n_counties, n_eds = len(county.origins), len(eds)
    county_counts = county.to_dense().reshape(county.n_origins, county.n_destinations)

    rows, cols, counts = [], [], []
    for a, from_eds in enumerate(members):
        distance = haversine_km(origins.lat[from_eds, None], origins.lon[from_eds, None],
                                origins.lat[None, :], origins.lon[None, :])
        distance[np.arange(len(from_eds)), from_eds] = own_distance[from_eds]
        decay = (distance + ED_DECAY_OFFSET_KM) ** -ED_DECAY_EXPONENT
        pull = np.where(eds["county"].to_numpy() == county.origins.ids[a], jobs,
                        jobs ** CROSS_COUNTY_JOB_POWER)
        weight = residents[from_eds, None] * pull[None, :] * decay
        for b in np.flatnonzero(county_counts[a]):
            if b < n_counties:
                to_eds = members[b]
                p = weight[:, to_eds].ravel()
                drawn = rng.multinomial(county_counts[a, b], p / p.sum())
                hit = np.flatnonzero(drawn)
                rows.append(from_eds[hit // len(to_eds)])
                cols.append(to_eds[hit % len(to_eds)])
            else:  # special destination: spread over the origin EDs by residents
                p = residents[from_eds]
                drawn = rng.multinomial(county_counts[a, b], p / p.sum())
                hit = np.flatnonzero(drawn)
                rows.append(from_eds[hit])
                cols.append(np.full(len(hit), n_eds + b - n_counties))
            counts.append(drawn[hit])
    return ODMatrix.from_pairs("Ireland, electoral divisions (synthetic)", origins, destinations,
                               np.concatenate(rows), np.concatenate(cols), np.concatenate(counts),
                               "Synthetic ED-level commuting matrix; aggregates exactly to the "
                               "synthetic county matrix calibrated to published 2016 census "
                               "margins.")


# ---------------------------------------------------------------------------------------- toy town
#: Invented zones of an invented town: id -> (lat, lon). Positions are made up (a town about 4 km
#: across); "Work from home" is a destination only, without a position.
TOY_ZONES = {
    "Harbour": (52.9950, -7.0180), "Old Town": (53.0010, -7.0100),
    "Station": (53.0040, -7.0000), "University": (53.0120, -7.0150),
    "Hospital": (53.0090, -6.9920), "Business Park": (52.9960, -6.9850),
    "Hillside": (53.0160, -7.0020),
}
TOY_WORK_FROM_HOME = "Work from home"
#: Commuters, origin (row) → destination (column, in TOY_ZONES order then "Work from home").
TOY_COUNTS = [
    [18, 12, 3, 4, 6, 9, 1, 5],    # Harbour
    [5, 26, 7, 10, 8, 12, 2, 6],   # Old Town
    [2, 9, 6, 5, 4, 11, 0, 3],     # Station
    [1, 4, 2, 21, 2, 1, 0, 2],     # University
    [0, 3, 1, 2, 12, 2, 1, 1],     # Hospital
    [1, 2, 1, 0, 1, 7, 0, 1],      # Business Park
    [3, 14, 6, 9, 11, 16, 9, 8],   # Hillside
]


def toy_town() -> ODMatrix:
    """A town of seven zones and a few hundred commuters, small enough to read every number."""
    names = list(TOY_ZONES)
    lat = [TOY_ZONES[n][0] for n in names]
    lon = [TOY_ZONES[n][1] for n in names]
    origins = ZoneSet.from_ids(names, lat=lat, lon=lon)
    destinations = ZoneSet.from_ids(names + [TOY_WORK_FROM_HOME], lat=lat + [np.nan],
                                    lon=lon + [np.nan])
    return ODMatrix.from_dense("Toy town (invented)", origins, destinations,
                               np.array(TOY_COUNTS), "Invented classroom example.")


# ------------------------------------------------------------------------------------------ all
def generate_county(calibration: Calibration) -> ODMatrix:
    """The county level with the bundled seed."""
    return county_matrix(calibration, np.random.default_rng([SEED, COUNTY_STREAM]))


def generate_ed(county: ODMatrix) -> ODMatrix:
    """The ED level with the bundled seed, nested in ``county``."""
    return ed_matrix(county, np.random.default_rng([SEED, ED_STREAM]))
