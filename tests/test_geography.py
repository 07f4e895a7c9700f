"""Background geography and approximate zone areas (dpcore.data.geography)."""

import numpy as np
import pytest
import shapely

from dpcore.data import datasets, geography

DUBLIN, IRISH_SEA, TOKYO = (53.35, -6.26), (53.5, -5.3), (35.68, 139.69)


def land_geometry(bounds):
    return shapely.from_geojson(__import__("json").dumps(geography.background(bounds)["land"]))


def test_bundled_file_is_small_public_domain_natural_earth():
    assert geography.GEOGRAPHY_FILE.stat().st_size <= 2_000_000
    source = geography.world().source
    assert "Natural Earth" in source["name"] and "public domain" in source["licence"]
    assert len(geography.world().countries) > 200


@pytest.mark.parametrize("bounds, on_land, at_sea", [
    ([[51.4, -10.5], [55.4, -5.4]], DUBLIN, IRISH_SEA),
    ([[35.0, 139.0], [36.2, 140.5]], TOKYO, (35.2, 140.0 + 0.45)),
])
def test_background_has_the_land_of_the_view_and_not_the_sea(bounds, on_land, at_sea):
    land = land_geometry(bounds)
    assert land.covers(shapely.Point(on_land[1], on_land[0]))
    assert not land.covers(shapely.Point(at_sea[1], at_sea[0]))


def test_background_of_ireland_includes_the_border_with_northern_ireland():
    borders = shapely.from_geojson(__import__("json").dumps(
        geography.background([[51.4, -10.5], [55.4, -5.4]])["borders"]))
    assert borders.length > 2  # degrees: the border runs ~360 km
    assert borders.distance(shapely.Point(-7.3, 54.1)) < 0.3  # near Clones, on the border


def test_background_far_from_land_is_empty_not_an_error():
    found = geography.background([[-40.0, -130.0], [-39.0, -129.0]])  # South Pacific
    assert found == {"land": None, "borders": None}


@pytest.fixture(scope="module")
def irish_points():
    rng = np.random.default_rng(7)
    land = geography.home_land([53.3], [-7.5])  # Ireland
    lat, lon = rng.uniform(51.6, 55.2, 400), rng.uniform(-10.2, -6.1, 400)
    inside = shapely.contains_xy(land, lon, lat)
    return lat[inside][:150], lon[inside][:150], land


def test_voronoi_cells_contain_their_points_and_do_not_overlap(irish_points):
    lat, lon, _ = irish_points
    cells = geography.voronoi_cells(lat, lon)
    assert len(cells) == len(lat)
    assert all(cell.covers(shapely.Point(x, y)) for cell, x, y in zip(cells, lon, lat))
    total = sum(cell.area for cell in cells)
    assert total == pytest.approx(shapely.union_all(cells).area, rel=1e-6)  # no overlaps


def test_voronoi_cells_of_points_on_land_stay_on_land(irish_points):
    lat, lon, land = irish_points
    cells = geography.voronoi_cells(lat, lon)
    outside = sum(cell.difference(land).area for cell in cells)
    assert outside < 1e-9
    # ... and together they cover the island's land around the points
    assert shapely.union_all(cells).area > 0.5 * land.area


def test_each_point_gets_the_nearest_land_not_a_far_cell(irish_points):
    lat, lon, _ = irish_points
    cells = geography.voronoi_cells(lat, lon)
    rng = np.random.default_rng(3)
    for i in rng.choice(len(lat), 20, replace=False):
        probe = shapely.point_on_surface(cells[i])
        scale = np.cos(np.radians(lat.mean()))
        nearest = np.argmin(((lon - probe.x) * scale) ** 2 + (lat - probe.y) ** 2)
        assert nearest == i


def test_points_off_the_coast_keep_a_disc_and_duplicates_share_a_cell():
    lat = np.array([53.35, 53.35, 53.30, IRISH_SEA[0]])
    lon = np.array([-6.26, -6.26, -6.60, IRISH_SEA[1]])
    cells = geography.voronoi_cells(lat, lon)
    assert cells[0].equals(cells[1])
    assert cells[3].covers(shapely.Point(IRISH_SEA[1], IRISH_SEA[0])) and cells[3].area > 0
    assert geography.voronoi_cells([], []).size == 0
    [alone] = geography.voronoi_cells([TOKYO[0]], [TOKYO[1]])
    assert alone.covers(shapely.Point(TOKYO[1], TOKYO[0]))


@pytest.mark.parametrize("key", ["ireland_county", "ireland_ed", "toy_town"])
def test_every_placed_zone_of_the_bundled_data_has_an_area_around_its_point(key):
    od = datasets.load(key)
    areas = geography.zone_areas(od)
    for zones in (od.origins, od.destinations):
        for zone_id, y, x, has in zip(zones.ids, zones.lat, zones.lon, zones.has_coordinates):
            polygon = areas.polygon(zone_id)
            assert (polygon is not None) == bool(has), zone_id
            if has:
                assert polygon.covers(shapely.Point(x, y)), zone_id


def test_parent_areas_are_the_union_of_their_zones():
    od = datasets.load("ireland_ed")
    areas = geography.zone_areas(od)
    assert set(areas.parent_areas) == set(od.origins.parent)
    county = od.origins.parent[0]
    members = od.origins.ids[od.origins.parent == county]
    union = shapely.union_all([areas.areas[m] for m in members])
    assert areas.polygon(county).symmetric_difference(union).area < 1e-9
    for member in members:
        assert areas.polygon(county).buffer(1e-9).covers(areas.areas[member])
    features = areas.features([members[0], county, "no such zone"])
    assert features[0]["type"] in ("Polygon", "MultiPolygon") and features[2] is None
