"""How fast is the OnTheMap synthesizer? Release time at county, ED and national level, and its
privacy test.

For each bundled Irish level (county: 1,085 cells; ED: ≈ 9.8 M cells) the median wall time of
``release`` over the repeats, for the ε-DP prior (ε = 1, 8.6) and noisy totals, bound to the
table's destinations as :func:`dpcore.release.check` binds it. Then the national synthetic tract
table (≈ 7·10⁹ cells, 150 M workers, 85,000 workplaces; :mod:`dpcore.data.national`, made in
the cache folder first if missing): the sparse release through the app's pipeline
(:func:`dpcore.release.run`, release + its metrics), median wall and CPU time after a warm-up
run (the warm-up also groups the table's cells by workplace once, a sort kept for the table's
later releases; that first release is reported too). Then the (ε, δ)-probabilistic test:
the priors of prior 'test' for every workplace of the county, ED and national tables
(:meth:`~dpcore.mechanisms.onthemap.OnTheMapSynthesizer.prior_for`, one bisection over all
distinct sizes at once), median over repeats with the cache emptied each time; the releases with
prior 'test' once it is cached; :func:`~dpcore.mechanisms.onthemap.smallest_alpha` for one size;
and Dublin City's α and δ bound beside the ε-DP prior (numbers, not timings).
Targets (issue 37, 2-core machine): county ≤ 50 ms, ED ≤ 2 s per release (prior cached); the ED
priors uncached ≤ 2 s; national: seconds (≤ 10 s, the Laplace sparse release's target with its
metrics is 5 s).

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
TESTED = [dict(epsilon=1.0, prior="test", delta=1e-5), dict(epsilon=8.6, prior="test", delta=1e-5)]
DUBLIN = "Dublin City"
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
        for values in SETTINGS + TESTED:
            mech = build("onthemap", **values).for_destinations(od.n_destinations)
            mech.release(counts, rng)           # warm: the test's priors are cached after this
            wall, _ = timed(lambda _, m=mech: m.release(counts, rng), repeats)
            out.append(row(f"{name} ({od.domain_size:,} cells), {label(values)}: median release"
                           f"{' (prior cached)' * (values.get('prior') == 'test')}",
                           wall, "s", limit=target))
        out += prior_rows(name, od, repeats, limit=2.0 if name == "ireland_ed" else None)
        if name == "ireland_county":
            out += dublin_rows(od)
    if not quick:
        od = national_table()
        out += (national_rows(od, repeats) + prior_rows("national", od, 3)
                + national_rows(od, 1, TESTED))
    for m, k, epsilon, delta in ((1000, 3000, 2.0, 1e-5), (1000, 3000, 8.6, 1e-5),
                                 (300, 3000, 1.0, 1e-5), (432_557, 31, 1.0, 1e-5)):
        onthemap.forget_alphas()
        started = time.perf_counter()
        alpha = onthemap.smallest_alpha(m, k, epsilon, delta)
        out.append(row(f"privacy test m={m:,} k={k:,} ε={epsilon} δ={delta:g} (α = {alpha:.4g}; "
                       f"ε-DP needs {onthemap.pure_alpha(m, epsilon):.4g})",
                       time.perf_counter() - started, "s"))
    return out


def totals(od) -> np.ndarray:
    """Each destination's number of workers."""
    return np.bincount(od.cols, weights=od.counts, minlength=od.n_destinations).astype(np.int64)


def prior_rows(name: str, od, repeats: int, limit: float | None = None) -> list[dict]:
    """The priors of prior 'test' for every destination of ``od``, uncached, median wall time."""
    sizes = totals(od)
    out = []
    for values in TESTED:
        mech = build("onthemap", **values)

        def compute(_, mech=mech):
            onthemap.forget_alphas()
            mech.prior_for(sizes, od.n_origins)
        wall, cpu = timed(compute, repeats)
        what = (f"{name}: prior 'test' for {od.n_destinations:,} destinations "
                f"({np.unique(sizes).size:,} sizes, up to {sizes.max():,} workers, "
                f"{od.n_origins:,} origins), {label(values)}: median, uncached")
        out += [row(f"{what}, wall", wall, "s", limit=limit), row(f"{what}, CPU", cpu, "s")]
    return out


def dublin_rows(od) -> list[dict]:
    """Dublin City's α at δ = 1e-5 and ε = 1, 4, 8.6, its δ bound and the ε-DP prior."""
    m = int(totals(od)[list(od.destinations.ids).index(DUBLIN)])
    out = []
    for epsilon in (1.0, 4.0, 8.6):
        alpha = onthemap.smallest_alpha(m, od.n_origins, epsilon, 1e-5)
        bound = onthemap.pdp_delta_bound(alpha, m, od.n_origins, epsilon)
        out.append(row(f"{DUBLIN} (m = {m:,}, k = {od.n_origins}) ε = {epsilon:g}, δ = 1e-5: "
                       f"prior 'test' α = {alpha:.4g}, δ bound {bound:.3g}; ε-DP prior "
                       f"m/(e^ε − 1) = {onthemap.pure_alpha(m, epsilon):.4g}; α", alpha, ""))
    return out


def national_table():
    """The national synthetic tract table (made in the cache folder first if missing)."""
    path = national.cache_path()
    if not path.exists():
        national.make()
    return national.load(path)


def national_rows(od, repeats: int, settings=SETTINGS) -> list[dict]:
    """The sparse release of the national table through the pipeline, release and metrics
    (after a warm-up: the cells' grouping and the test's priors are then cached)."""
    out = []
    for number, values in enumerate(settings):
        def release(run, values=values):
            spec = releases.ReleaseSpec("onthemap", values["epsilon"],
                                        {k: v for k, v in values.items() if k != "epsilon"},
                                        ("base",), 13, run)
            result = releases.run(od, spec)
            assert result.sparse and result.raw.values.size == od.nonzero
        if number == 0 and settings is SETTINGS:
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
