"""Huge domains (issue 13): the national synthetic tract data and the sparse release.

Targets: national synthetic (≈ 7·10⁹ cells) loads in ≤ 20 s; one Laplace or OUE release with its
metrics in ≤ 5 s; PEM top-100 over its 150 M commuters in ≤ 60 s; peak memory ≤ 4 GB; on the
Irish ED data the sparse release + metrics at least 3× faster than the dense release + metrics,
measured in the same run.

Every release goes through the app's one pipeline (:func:`dpcore.release.run`, which takes the
sparse path on a domain beyond the dense limit, or when asked), and the national figures include
what Explore and the Flow map then compute from the release: the ordering of the top 1,000 true
commutes, the busiest-commute bars and the flow selection.

Run from the repository root: ``python bench/bench_huge.py [repeats]`` (makes the national data in
the cache folder first if it is missing, and says so). Figures are medians over the repeats, in
wall-clock and CPU seconds (CPU time is steadier on a shared machine); the first run of each
path is a warm-up and not counted. The dense metrics are all of :func:`dpcore.scoring.metrics.compute`
(trip lengths, sectors and self-containment included); the sparse ones are the subset
:func:`dpcore.scoring.sparse_metrics.score` computes (the others need every cell's position).
"""

import dataclasses
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore import mechanisms
from dpcore import release as releases  # noqa: E402
from dpcore.data import datasets, national
from dpcore.evaluation import flows, heavy_hitters  # noqa: E402
from dpcore.scoring import ranks  # noqa: E402

SEED = 13


def timed(function, repeats: int, warm_up: bool = True):
    """(median wall s, median CPU s, last result) over ``repeats`` runs after a warm-up."""
    if warm_up:
        function(0)
    walls, cpus, result = [], [], None
    for run in range(1, repeats + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function(run)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def pipeline_run(od, key: str, epsilon: float = 1.0, truth=None, sparse=None):
    """One release with its metrics through :func:`dpcore.release.run` (``sparse``: force the
    path; None: the pipeline's own choice)."""
    mechanisms.get(key)

    def run(trial):
        spec = releases.ReleaseSpec(key, epsilon, seed=SEED, trial=trial)
        return releases.run(od, spec, true_counts=truth, sparse=sparse)
    return run


def views_run(od, truth, result):
    """What the pages compute from one release: ordering, bars and the flow map's selection
    (on a fresh copy of the vector each time, so its one-off sort for ranks is counted)."""
    def run(_):
        released = dataclasses.replace(result.released)
        ranks.rank_pairs(truth, released, 1000)
        ranks.top_flows(od, truth, {result.mechanism: released}, 30)
        flows.select(od, truth, released, view=flows.RELEASED, top_k=250)
    return run


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20   # KB on Linux


def rows(quick: bool) -> list[dict]:
    return main(2 if quick else 5)


def main(repeats: int = 5) -> list[dict]:
    path = national.cache_path()
    if not path.exists():
        made, seconds = national.make()
        print(f"made {made} in {seconds:.1f} s (once; not part of the load figure)")
    wall, cpu, od = timed(lambda _: national.load(path), repeats, warm_up=False)
    print(f"national synthetic: {od.n_origins:,} × {od.n_destinations:,} zones, "
          f"{od.domain_size:,} cells, {od.nonzero:,} non-zero, n = {od.n:,}")
    print(f"{'step':44} {'wall (s)':>9} {'CPU (s)':>8} {'target':>8}")
    print(f"{'load':44} {wall:9.2f} {cpu:8.2f} {'≤ 20':>8}")
    each = f"median of {repeats}"
    measured = [row(f"national synthetic ({od.domain_size:,} cells): load, {each}", wall, "s",
                    limit=20)]
    truth = releases.true_values(od)
    for key in ("laplace", "oue"):
        wall, cpu, result = timed(pipeline_run(od, key), repeats)
        assert result.sparse
        print(f"{key + ' release + metrics (release.run)':44} {wall:9.2f} {cpu:8.2f} "
              f"{'≤ 5':>8}")
        measured.append(row(f"national {key}: release + metrics, {each}", wall, "s", limit=5))
        wall, cpu, _ = timed(views_run(od, truth, result), repeats)
        print(f"{key + ' views (ordering, bars, map)':44} {wall:9.2f} {cpu:8.2f}")
        measured.append(row(f"national {key}: views (ordering, bars, map), {each}", wall, "s"))
    wall, cpu, found = timed(lambda trial: heavy_hitters.pem(
        od, 4.0, 100, releases.generator(SEED, "pem", trial)), repeats, warm_up=False)
    label = f"PEM top-100, ε = 4, n = {od.n / 1e6:.0f} M (recall {found.recall(od):.2f})"
    print(f"{label:44} {wall:9.2f} {cpu:8.2f} {'≤ 60':>8}")
    print(f"{'peak memory so far (GB)':44} {peak_gb():9.2f} {'':8} {'≤ 4':>8}")
    measured += [row(f"national {label}, {each}", wall, "s", limit=60),
                 row("national: peak memory of the process", peak_gb(), "GB", limit=4)]
    del od

    ed = datasets.load("ireland_ed")
    truth = ed.to_dense()
    print(f"\nIrish EDs: {ed.domain_size:,} cells, {ed.nonzero:,} non-zero")
    for key in ("laplace", "oue"):
        dense_wall, dense_cpu, _ = timed(pipeline_run(ed, key, truth=truth, sparse=False),
                                         repeats)
        sparse_wall, sparse_cpu, _ = timed(pipeline_run(ed, key, sparse=True), repeats)
        print(f"{key + ' dense release + metrics':44} {dense_wall:9.2f} {dense_cpu:8.2f}")
        print(f"{key + ' sparse release + metrics':44} {sparse_wall:9.2f} {sparse_cpu:8.2f}")
        print(f"{key + ' speed-up (wall / CPU)':44} {dense_wall / sparse_wall:8.1f}× "
              f"{dense_cpu / sparse_cpu:7.1f}× {'≥ 3×':>8}")
        measured.append(row(f"Irish EDs {key}: dense / sparse release + metrics, wall, {each}",
                            dense_wall / sparse_wall, "×", minimum=3))
    print(f"{'peak memory of the whole run (GB)':44} {peak_gb():9.2f}")
    return measured


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
