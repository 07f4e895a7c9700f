"""Wall time of ``reproduce-thesis`` as a user runs it with no flags (issue 22: ≤ 3 min on two
cores), with 1 and with 2 worker processes (the default is one per core).

Each run is what the command does: the chapter's sweep on a process pool, its trial-0 releases
(bars, orderings, rank tables), the per-user running-time simulation, the verdicts
(:func:`dpcore.evaluation.thesis.run`), then the HTML report and the CSVs. Printed: the wall
time, the phases' share (sweep, running times, report), releases, and the load average before
and after — on a machine shared with other work the wall time includes waiting for the cores, so
a figure taken under load is an upper bound.

Run from the repository root: ``python bench/bench_thesis.py [--dataset ireland_ed]
[--trials 10] [--workers 1,2] [--repeats 1]``.
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
from dpcore.evaluation import thesis
from dpcore.interfaces import grids
from report import thesis_html


def once(od, source, workers: int, trials: int) -> tuple[float, float, thesis.Chapter]:
    """Wall time of the whole command, and of writing the report alone."""
    started = time.perf_counter()
    chapter = thesis.run(od, trials=trials, n_jobs=workers, source=source)
    written = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        thesis_html.write(chapter, Path(out))
    done = time.perf_counter()
    return done - started, done - written, chapter


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
        times, reports = [], []
        for _ in range(args.repeats):
            seconds, report, chapter = once(od, datasets.DATASETS.get(args.dataset), workers,
                                            args.trials)
            times.append(seconds)
            reports.append(report)
        timing = chapter.tables[-1].data
        simulated = timing["seconds at m"].sum() + timing["seconds at 2m"].sum()
        verdicts = thesis.summary(chapter)["Verdict"].value_counts().to_dict()
        print(f"{workers} worker(s): median {statistics.median(times):.1f} s over {len(times)} "
              f"run(s) (min {min(times):.1f} s) for {chapter.table.attrs['jobs_done']:,} "
              f"releases; of which report {statistics.median(reports):.1f} s, per-user "
              f"simulation ≈ {simulated:.1f} s; verdicts {verdicts}; load average now "
              f"{os.getloadavg()[0]:.1f}"
              + ("  ✓ ≤ 3 min" if statistics.median(times) <= 180 else "  ✗ > 3 min"))


if __name__ == "__main__":
    main()
