"""Timings of publishing through OpenDP (issue 12): calibration and noise per cell, county, an ED
subset with consistent levels, and a dense 10⁶-cell vector (the whole ED level, 9.8 M cells, is
extrapolated from it: OpenDP's Python binding handles one cell at a time). Then the peak memory
of a publish per cell (issue 20), against the figures ``publish.too_large`` budgets with: the
process's peak resident memory is reset (``/proc/self/clear_refs``) before each publish.

Run from the repository root: ``python bench/bench_publish.py [repeats]`` (default 3).
"""

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.data import datasets, views
from bench.suite import row  # noqa: E402
from dpcore.interfaces import publish, published_domain  # noqa: E402


def timed(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def rows(quick: bool) -> list[dict]:
    return main(1 if quick else 3)


def main(repeats: int = 3) -> list[dict]:
    measured = []
    publish.calibrate(publish.DISCRETE_LAPLACE, 1.0)  # import OpenDP once, outside the timings
    county = datasets.load("ireland_county")
    ed = datasets.load("ireland_ed")
    domain = published_domain.of_dataset("ireland_ed").manifest_entry()
    source = publish.input_entry("ireland_ed", views.View(), domain)
    subset = ed.subset_by_parent(["Cavan", "Leitrim"])
    cells = np.zeros(1_000_000, dtype=np.int64)
    noise = publish.calibrate(publish.DISCRETE_LAPLACE, 1.0)
    cases = [
        ("calibrate discrete Laplace (binary search)",
         lambda: publish.calibrate(publish.DISCRETE_LAPLACE, 1.0)),
        ("calibrate Gaussian (binary search, zCDP → (ε, δ))",
         lambda: publish.calibrate(publish.GAUSSIAN, 1.0, 1e-6)),
        (f"publish county ({county.domain_size:,} cells)",
         lambda: publish.publish(county, publish.DISCRETE_LAPLACE, 1.0, source=source)),
        (f"publish Cavan+Leitrim EDs + counties, consistent ({subset.domain_size:,} + "
         f"{subset.aggregate().domain_size} cells)",
         lambda: publish.publish_levels(subset, publish.DISCRETE_LAPLACE, 1.0, source=source)),
        ("noise on 1,000,000 cells", lambda: publish.noisy(noise, cells)),
    ]
    for label, call in cases:
        seconds = timed(call, repeats)
        print(f"{label:78} {seconds:9.3f} s")
        measured.append(row(f"{label}, median of {repeats}", seconds, "s"))
        if label.startswith("noise"):
            per_cell = seconds / cells.size
            print(f"{'  → per cell':78} {per_cell * 1e6:9.2f} µs; whole ED level "
                  f"({ed.domain_size:,} cells) ≈ {per_cell * ed.domain_size:.0f} s")
            measured.append(row(f"whole ED level ({ed.domain_size:,} cells), extrapolated from "
                                "the 1,000,000", per_cell * ed.domain_size, "s"))
    twelve = ed.subset_by_parent(sorted(set(ed.origins.parent))[:12])
    for levels, budgeted in ((False, publish.PUBLISH_CELL_BYTES),
                             (True, publish.LEVELS_CELL_BYTES)):
        call = publish.publish_levels if levels else publish.publish
        per_cell = peak_bytes(lambda: call(twelve, publish.DISCRETE_LAPLACE, 1.0,
                                           source=source)) / twelve.domain_size
        label = f"peak memory, {'two consistent levels' if levels else 'one level'} " \
                f"({twelve.domain_size:,} fine cells)"
        print(f"{label:78} {per_cell:9.1f} B/cell (budgeted {budgeted})")
        measured.append(row(label, per_cell, "B/cell", limit=budgeted))
    return measured


def _status(key: str) -> int:
    return next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith(key)) * 1024


def peak_bytes(call) -> int:
    """Peak resident memory ``call`` adds to the process (Linux: the peak is reset first)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    before = _status("VmRSS")
    call()
    return _status("VmHWM") - before


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
