"""How fast is the OnTheMap synthesizer? Release time at county, ED and national level, and its
privacy test.

For each bundled Irish level (county: 1,085 cells; ED: ≈ 9.8 M cells) the median wall time of
``release`` over the repeats, for the ε-DP prior (ε = 1, 8.6) and noisy totals, bound to the
table's destinations as :func:`dpcore.release.check` binds it. Then the national synthetic tract
table (≈ 7·10⁹ cells, 150 M workers, 85,000 workplaces; :mod:`dpcore.data.national`, made in
the cache folder first if missing): the sparse release through the app's pipeline
(:func:`dpcore.release.run`, release + its metrics), median wall and CPU time after a warm-up
run (the warm-up also groups the table's cells by workplace once, a sort kept for the table's
later releases; that first release is reported too). Then the (ε, δ)-probabilistic test
(:func:`dpcore.mechanisms.onthemap.smallest_alpha`) for one destination size, uncached.
Targets (issue 37, 2-core machine): county ≤ 50 ms, ED ≤ 2 s per release; national: seconds
(≤ 10 s, the Laplace sparse release's target with its metrics is 5 s).

Run from the repository root: ``python3 -m bench --only onthemap [--quick]`` (quick: no
national table, 3 repeats) or ``python bench/bench_onthemap.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.suite import row  # noqa: E402
from dpcore import release as releases  # noqa: E402
from dpcore.data import datasets, national  # noqa: E402
from dpcore.mechanisms import build  # noqa: E402
from dpcore.mechanisms import onthemap  # noqa: E402

SETTINGS = [dict(epsilon=1.0), dict(epsilon=8.6), dict(epsilon=1.0, total="noisy")]
NATIONAL_LIMIT = 10.0


def timed(action, repeats: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of ``action(run)`` over ``repeats`` runs."""
    walls, cpus = [], []
    for run in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        action(run)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def label(values: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def rows(quick: bool) -> list[dict]:
    repeats = 3 if quick else 5
    rng = np.random.default_rng(1)
    out = []
    for name, target in (("ireland_county", 0.05), ("ireland_ed", 2.0)):
        od = datasets.load(name)
        counts = od.to_dense()
        for values in SETTINGS:
            mech = build("onthemap", **values).for_destinations(od.n_destinations)
            wall, _ = timed(lambda _, m=mech: m.release(counts, rng), repeats)
            out.append(row(f"{name} ({od.domain_size:,} cells), {label(values)}: median release",
                           wall, "s", limit=target))
    if not quick:
        out += national_rows(repeats)
    for m, k, epsilon, delta in ((1000, 3000, 2.0, 1e-5), (1000, 3000, 8.6, 1e-5),
                                 (300, 3000, 1.0, 1e-5)):
        onthemap.smallest_alpha.cache_clear()
        started = time.perf_counter()
        alpha = onthemap.smallest_alpha(m, k, epsilon, delta)
        out.append(row(f"privacy test m={m} k={k} ε={epsilon} δ={delta:g} (α = {alpha:.4g}; "
                       f"ε-DP needs {onthemap.pure_alpha(m, epsilon):.4g})",
                       time.perf_counter() - started, "s"))
    return out


def national_rows(repeats: int) -> list[dict]:
    """The sparse release of the national table through the pipeline, release and metrics."""
    path = national.cache_path()
    if not path.exists():
        national.make()
    od = national.load(path)
    out = []
    for number, values in enumerate(SETTINGS):
        def release(run, values=values):
            spec = releases.ReleaseSpec("onthemap", values["epsilon"],
                                        {k: v for k, v in values.items() if k != "epsilon"},
                                        ("base",), 13, run)
            result = releases.run(od, spec)
            assert result.sparse and result.raw.values.size == od.nonzero
        if number == 0:
            first, _ = timed(release, 1)
            out.append(row(f"national ({od.domain_size:,} cells, {od.n:,} workers), "
                           f"{label(values)}: first release of the table (groups its cells "
                           "by workplace)", first, "s"))
        else:
            release(0)
        wall, cpu = timed(release, repeats)
        name = f"national ({od.domain_size:,} cells), {label(values)}: median release + metrics"
        out += [row(f"{name}, wall", wall, "s", limit=NATIONAL_LIMIT),
                row(f"{name}, CPU", cpu, "s")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for measured in rows(args.quick):
        mark = "" if measured["met"] is None else (" ok" if measured["met"] else " OVER")
        print(f"{measured['name']}: {measured['measured']:.3f} {measured['unit']}"
              f"{' (' + measured['target'] + mark + ')' if measured['target'] else ''}")


if __name__ == "__main__":
    main()
