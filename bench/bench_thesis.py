"""Wall time of ``reproduce-thesis`` (issue 14: the default run ≤ 3 min with ``--scheduler local``
on two cores), on a LocalCluster of 1 and of 2 workers.

Each run is what the command does: start the cluster, run the chapter's sweep and its rank tables
(:func:`dpcore.evaluation.thesis.run`), write the HTML report and the CSVs. Also printed: releases, seconds of
worker time per release at each level, the load average before and after, and the CPU-bound time
(the busiest worker's CPU seconds plus this process's): on a machine shared with other work the
wall time includes waiting for the cores, the CPU-bound time does not.

Run from the repository root: ``python bench/bench_thesis.py [--trials 10] [--repeats 1]
[--dataset ireland_ed] [--workers 1,2]``. The default run (ireland_ed: both levels, 6 mechanisms,
10 ε, 10 trials) is 1,200 releases and takes minutes per repeat, so one repeat is the default;
with several, the median is printed.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.data import datasets
from dpcore.evaluation import cluster, summaries, thesis
from dpcore.interfaces import grids  # noqa: E402
from report import thesis_html  # noqa: E402


def once(od, workers: int, trials: int) -> tuple[float, float, thesis.Chapter]:
    """Wall time of one run, and its CPU-bound time: the busiest worker's CPU seconds plus this
    process's (rank tables, report), what the run would take on otherwise idle cores."""
    started, own = time.perf_counter(), time.process_time()
    client = cluster.connect(cluster.LOCAL, workers=workers)
    try:
        before = client.run(time.process_time)
        chapter = thesis.run(od, trials=trials, scheduler=client)
        after = client.run(time.process_time)
    finally:
        client.close()
    with tempfile.TemporaryDirectory() as out:
        thesis_html.write(chapter, Path(out))
    busiest = max(after[w] - before.get(w, 0.0) for w in after)
    return time.perf_counter() - started, busiest + time.process_time() - own, chapter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--trials", type=int, default=thesis.TRIALS)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    od = datasets.load(args.dataset)
    print(f"{args.dataset}: {len(grids.THESIS_EPSILONS)} ε × {args.trials} trials, "
          f"{len(thesis.MECHANISMS)} mechanisms; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f}")
    for workers in [int(w) for w in args.workers.split(",")]:
        times, cpu = [], []
        for _ in range(args.repeats):
            seconds, bound, chapter = once(od, workers, args.trials)
            times.append(seconds)
            cpu.append(bound)
        per_release = summaries.release_times(chapter.table).groupby("scenario")["seconds"].mean()
        jobs = chapter.table.drop_duplicates(["scenario", "mechanism", "epsilon", "trial"])
        per_level = ", ".join(f"{label} {count:,}" for label, count in
                              jobs["scenario"].value_counts(sort=False).items())
        print(f"{workers} worker(s): median {statistics.median(times):.1f} s over {len(times)} "
              f"run(s) (min {min(times):.1f} s; CPU-bound {statistics.median(cpu):.1f} s) for "
              f"{chapter.table.attrs['jobs_done']:,} releases "
              f"({per_level}); mean release time "
              + ", ".join(f"{k} {v:.3f} s" for k, v in per_release.items())
              + f"; load average now {os.getloadavg()[0]:.1f}"
              + ("  ✓ ≤ 3 min" if statistics.median(times) <= 180 else "  ✗ > 3 min"))


if __name__ == "__main__":
    main()
