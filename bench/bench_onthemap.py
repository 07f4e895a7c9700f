"""How fast is the OnTheMap synthesizer? Release time at county and ED level, and its privacy test.

For each bundled Irish level (county: 1,085 cells; ED: ≈ 9.8 M cells) the median
wall time of ``release`` over ``--repeats`` draws, for the ε-DP prior (ε = 1, 8.6) and noisy
totals, bound to the table's destinations as :func:`dpcore.release.check` binds it. Then the
(ε, δ)-probabilistic test (:func:`dpcore.mechanisms.onthemap.smallest_alpha`) for one destination
size, uncached. Targets (issue 37, 2-core machine): county ≤ 50 ms, ED ≤ 2 s per release.

Run from the repository root: ``python bench/bench_onthemap.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore.data import datasets  # noqa: E402
from dpcore.mechanisms import build  # noqa: E402
from dpcore.mechanisms import onthemap  # noqa: E402

SETTINGS = [dict(epsilon=1.0), dict(epsilon=8.6), dict(epsilon=1.0, total="noisy")]


def median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print("| level | cells | destinations | n | settings | median release |")
    print("|---|---:|---:|---:|---|---:|")
    for name, target in (("ireland_county", 0.05), ("ireland_ed", 2.0)):
        od = datasets.load(name)
        counts = od.to_dense()
        for values in SETTINGS:
            mech = build("onthemap", **values).for_destinations(od.n_destinations)
            seconds = median_seconds(lambda m=mech: m.release(counts, rng), args.repeats)
            mark = "ok" if seconds <= target else f"over {target:g} s"
            print(f"| {name} | {od.domain_size:,} | {od.n_destinations:,} | {od.n:,} | "
                  f"{values} | {seconds * 1000:,.1f} ms ({mark}) |")
    for m, k, epsilon, delta in ((1000, 3000, 2.0, 1e-5), (1000, 3000, 8.6, 1e-5),
                                 (300, 3000, 1.0, 1e-5)):
        onthemap.smallest_alpha.cache_clear()
        started = time.perf_counter()
        alpha = onthemap.smallest_alpha(m, k, epsilon, delta)
        print(f"privacy test m={m} k={k} ε={epsilon} δ={delta:g}: α = {alpha:.4g} "
              f"(ε-DP needs {onthemap.pure_alpha(m, epsilon):.4g}) in "
              f"{time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
