"""Server-side cost of a flow map with 100, 1,000 and 5,000 lines (issue 5: 1,000 well under 1 s).

For each size, the median over repeats of

* ``select``  — :func:`dpcore.evaluation.flows.select` on the dense domain (top k of each group);
* ``build``   — :func:`ui.maps.layers.flow_map`: folium elements, grouped lines, zones, legend;
* ``render``  — ``m.get_root().render()``, what a standalone HTML download costs on top of build;
* ``st_folium`` — the serialisation ``st_folium`` does before handing the map to the browser
  (with ``render=False``, as the page calls it: one render pass of the map, then the header, the
  HTML and the Leaflet script), without Streamlit;
* ``total``   — build + st_folium: the page's cost per map drawn (wall clock, and the CPU time
  of this process, which a busy shared machine inflates less).

The ED level of the bundled Irish data is used (3,126 zone points are drawn under every map),
with a Laplace release (ε = 1) in the difference view, which has the most style groups. Run from
the repository root: ``python bench/bench_flowmap.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import streamlit_folium  # noqa: E402

from bench.suite import row  # noqa: E402
from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.evaluation import flows  # noqa: E402
from ui.maps import layers as maps  # noqa: E402

SIZES = (100, 1_000, 5_000)


def st_folium_serialisation(m, render: bool = True) -> int:
    """What ``streamlit_folium.st_folium`` computes from a map before calling the component
    (``render`` is its argument of that name); returns the size of the Leaflet script in bytes."""
    if render:
        m.get_root().render()
    m.render()
    streamlit_folium._get_html(m)
    streamlit_folium._get_header(m)
    return len(streamlit_folium._get_map_string(m))


def timed(function, *args, **kwargs):
    """(wall seconds, CPU seconds of this process, value)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    value = function(*args, **kwargs)
    return time.perf_counter() - start, time.process_time() - start_cpu, value


def once(od, true, released, zones, outlines, size: int):
    """One measurement: (seconds per stage, lines drawn, flow layers, script bytes)."""
    select_s, _, selection = timed(flows.select, od, true, released, view=flows.DIFFERENCE,
                                   top_k=size, cap=size)
    breaks = flows.width_breaks(selection.lines["shown"].max())
    build_s, build_cpu, built = timed(maps.flow_map, selection, zones, breaks,
                                      parent_outlines=outlines)
    fresh = maps.flow_map(selection, zones, breaks, parent_outlines=outlines)
    render_s, _, _ = timed(fresh.map.get_root().render)
    serial_s, serial_cpu, script = timed(st_folium_serialisation, built.map, render=False)
    seconds = (select_s, build_s, render_s, serial_s, build_s + serial_s, build_cpu + serial_cpu)
    return seconds, len(selection.lines), built.flow_layers, script


#: Issue 5: a map of 1,000 lines well under a second (build + st_folium, the page's cost).
TARGET = {1_000: 1.0}


def main(repeats: int = 5) -> list[dict]:
    measured = []
    od = datasets.load("ireland_ed")
    true = od.to_dense()
    released = mechanisms.build("laplace", epsilon=1.0).release(true, np.random.default_rng(1))
    outlines = maps.outlines(od.origins)
    zones = flows.zones(od, true, keep_empty=False)
    print(f"ED level: {len(zones):,} zones, {od.domain_size:,} cells; difference view; "
          f"median of {repeats} runs (seconds)")
    print(f"{'lines':>6} {'layers':>6} {'select':>7} {'build':>7} {'render':>7} "
          f"{'st_folium':>9} {'total':>7} {'total CPU':>9} {'script MB':>9}")
    for size in SIZES:
        runs = [once(od, true, released, zones, outlines, size) for _ in range(repeats)]
        median = [statistics.median(column) for column in zip(*(run[0] for run in runs))]
        _, lines, layers, script = runs[-1]
        print(f"{lines:6,} {layers:6} " + " ".join(
            f"{value:{width}.3f}" for value, width in zip(median, (7, 7, 7, 9, 7, 9)))
            + f" {script / 1e6:9.2f}")
        measured.append(row(f"{lines:,} lines, ED level, difference view: build + st_folium, "
                            f"median of {repeats}", median[4], "s", limit=TARGET.get(size)))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(3 if quick else 5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
