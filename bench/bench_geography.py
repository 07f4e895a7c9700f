"""Zone choropleth and OD heat map (issue 15): choropleth of the 3,130-zone ED level ≤ 1 s to build
and send; heat map of the 31 × 35 county matrix ≤ 0.3 s.

Choropleth, on the ED level of the bundled Irish data (3,126 placed zones), Laplace ε = 1, the
page's default 250 flow lines (true view), zones coloured by residents' error, median of repeats:

* ``areas``   — :func:`dpcore.data.geography.zone_areas` for the dataset, once (the app caches it per
  bundled dataset: paid by the first visitor only), and the first background clip of a view;
* ``figures`` — :func:`dpcore.evaluation.choropleth.zone_figures`;
* ``layer``   — :func:`ui.maps.choropleth.layer` (colour classes, 3,126 GeoJSON features);
* ``build``   — :func:`ui.maps.layers.flow_map` with the areas (background, areas, lines, zones, legends);
* ``send``    — what ``st_folium`` serialises before handing the map to the browser (as in
  ``bench_flowmap.py``);
* ``total``   — figures + layer + build + send: the page's cost per choropleth drawn.

Heat map, on the county level (31 × 35), true | released | difference with hover text: ``grid``
(:func:`dpcore.evaluation.heatmap.grid`), ``figure`` (:func:`ui.explore.heatmap.figure`) and ``json`` (the figure as
JSON, what Streamlit sends); also the ED level's parent matrix and busiest 40 × 40 block.

Run from the repository root: ``python bench/bench_geography.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.bench_flowmap import st_folium_serialisation, timed  # noqa: E402
from bench.suite import row  # noqa: E402
from dpcore import mechanisms
from dpcore.data import datasets, geography
from dpcore.evaluation import choropleth, flows, heatmap  # noqa: E402
from ui.maps import choropleth as area_layers  # noqa: E402
from ui.explore import heatmap as heat_figures  # noqa: E402
from ui.maps import layers as maps  # noqa: E402


def choropleth_once(od, true, released, areas):
    figures_s, _, figures = timed(choropleth.zone_figures, od, true, released)
    names = maps.zone_tooltips(figures)
    layer_s, _, layer = timed(area_layers.layer, figures, areas, "residents", "error", names)
    selection = flows.select(od, true, released, view=flows.TRUE, top_k=250)
    breaks = flows.width_breaks(selection.lines["shown"].max())
    zones = flows.zones(od, true, keep_empty=False)
    build_s, _, built = timed(maps.flow_map, selection, zones, breaks, areas=layer)
    send_s, _, script = timed(st_folium_serialisation, built.map, render=False)
    return (figures_s, layer_s, build_s, send_s, figures_s + layer_s + build_s + send_s), script


def heatmap_once(od, true, released, **choice):
    grid_s, _, grid = timed(heatmap.grid, od, true, released, **choice)
    figure_s, _, fig = timed(heat_figures.figure, grid, "Laplace", False, "bench")
    json_s, _, text = timed(fig.to_json)
    return (grid_s, figure_s, json_s, grid_s + figure_s + json_s), grid.true.shape, len(text)


def release(od):
    true = od.to_dense()
    noisy = mechanisms.build("laplace", epsilon=1.0).release(true, np.random.default_rng(1))
    return true.astype(float), noisy


def main(repeats: int = 5) -> list[dict]:
    od = datasets.load("ireland_ed")
    true, released = release(od)
    start = time.perf_counter()
    areas = geography.zone_areas(od)
    areas_s = time.perf_counter() - start
    first = timed(geography.background, [[51.3, -10.7], [55.5, -5.9]])[0]
    print(f"Choropleth, ED level ({len(areas.areas):,} zone areas): areas once {areas_s:.2f} s "
          f"(cached per dataset), first background clip {first:.3f} s; median of {repeats} runs")
    runs = [choropleth_once(od, true, released, areas) for _ in range(repeats)]
    median = [statistics.median(column) for column in zip(*(run[0] for run in runs))]
    print(f"{'figures':>8} {'layer':>7} {'build':>7} {'send':>7} {'total':>7} {'script MB':>9}")
    print(" ".join(f"{value:{w}.3f}" for value, w in zip(median, (8, 7, 7, 7, 7)))
          + f" {runs[-1][1] / 1e6:9.2f}   target total ≤ 1 s: "
          + ("met" if median[-1] <= 1 else "MISSED"))
    measured = [row("ED zone areas, once per dataset", areas_s, "s"),
                row(f"ED choropleth (3,126 areas, 250 lines): figures + layer + build + send, "
                    f"median of {repeats}", median[-1], "s", limit=1.0)]

    county = datasets.load("ireland_county")
    cases = [("county 31 × 35", county, *release(county), {}),
             ("ED, parent level", od, true, released, {"choice": heatmap.PARENT}),
             ("ED, busiest 40 × 40", od, true, released, {"choice": heatmap.BUSIEST, "size": 40})]
    print(f"\nHeat map, true | released | difference; median of {repeats} runs (seconds)")
    print(f"{'matrix':>20} {'shape':>9} {'grid':>7} {'figure':>7} {'json':>7} {'total':>7} "
          f"{'JSON MB':>8}")
    for label, matrix, t, r, choice in cases:
        runs = [heatmap_once(matrix, t, r, **choice) for _ in range(repeats)]
        median = [statistics.median(column) for column in zip(*(run[0] for run in runs))]
        shape, size = runs[-1][1], runs[-1][2]
        verdict = ("   target ≤ 0.3 s: " + ("met" if median[-1] <= 0.3 else "MISSED")
                   if label.startswith("county") else "")
        print(f"{label:>20} {shape[0]:>4}×{shape[1]:<4} " + " ".join(
            f"{value:7.3f}" for value in median) + f" {size / 1e6:8.2f}" + verdict)
        measured.append(row(f"heat map {label}: grid + figure + JSON, median of {repeats}",
                            median[-1], "s", limit=0.3 if label.startswith("county") else None))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(3 if quick else 5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
