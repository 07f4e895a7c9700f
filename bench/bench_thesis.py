"""Wall time of ``reproduce-thesis`` as a user runs it with no flags (issues 22 and 28: ≤ 3 min on
two cores; both protocols, the default), with 1 and with 2 worker processes (the default is one
per core), and the CPU seconds of all its processes (on a loaded machine the wall time includes
waiting for the cores; CPU / cores bounds the idle machine's wall time from below).

Each run is what the command does: the chapter's sweep on a process pool, its trial-0 releases
(bars, orderings, rank tables), the per-user running-time simulation, the verdicts
(:func:`dpcore.evaluation.thesis.run`), then the HTML report and the CSVs. Printed: the wall
time, the phases' share (sweep, running times, report), releases, the load average before
and after, and the extra trials at the finer level (tables 5.3, 5.4 and figure 5.15: an
outcome not seen in the first trials) with their CPU seconds — on a machine shared with other work the wall time includes waiting for the cores, so
a figure taken under load is an upper bound.

Run from the repository root: ``python bench/bench_thesis.py [--dataset ireland_ed]
[--trials 10] [--workers 1,2] [--repeats 1] [--keep DIR]``.
"""

import argparse
import os
import threading
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore import grids
from dpcore.data import datasets
from dpcore.evaluation import thesis
from report import thesis_html


class TreeCPU:
    """CPU seconds of this process and every process under it (the sweep's workers live under
    a forkserver that outlives the run, so their time never reaches RUSAGE_CHILDREN): sampled
    every half second with psutil, the last sample of each process kept."""

    def __init__(self):
        import psutil

        self.me, self.seen, self.stop = psutil.Process(), {}, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _sample(self):
        for process in [self.me] + self.me.children(recursive=True):
            try:
                times = process.cpu_times()
                self.seen[process.pid] = times.user + times.system
            except Exception:  # ended between listing and reading
                pass

    def _watch(self):
        while not self.stop.wait(0.5):
            self._sample()

    def __enter__(self):
        self._sample()
        self.start = dict(self.seen)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self._sample()
        self.seconds = sum(v - self.start.get(pid, 0.0) for pid, v in self.seen.items())


def once(od, source, workers: int, trials: int, keep: Path | None = None
         ) -> tuple[float, float, thesis.Chapter]:
    """Wall time of the whole command (both protocols, the default), and of the report alone
    (written to ``keep`` when given, e.g. for the verdict table in
    docs/SWEEPS_AND_THESIS_REPORT.md, else thrown away)."""
    started = time.perf_counter()
    chapter = thesis.run(od, trials=trials, n_jobs=workers, source=source)
    written = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        thesis_html.write(chapter, keep or Path(out))
    done = time.perf_counter()
    return done - started, done - written, chapter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--trials", type=int, default=thesis.TRIALS)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the last run's report and CSVs here (verdicts.csv: "
                             "python3 -m report.thesis_markdown DIR)")
    args = parser.parse_args()
    od = datasets.load(args.dataset)
    print(f"{args.dataset}: {len(grids.THESIS_EPSILONS)} ε × {args.trials} trials, "
          f"{len(thesis.MECHANISMS)} mechanisms; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f}")
    for workers in [int(w) for w in args.workers.split(",")]:
        times, reports, cpus = [], [], []
        for _ in range(args.repeats):
            with TreeCPU() as cpu:
                seconds, report, chapter = once(od, datasets.DATASETS.get(args.dataset),
                                                workers, args.trials, args.keep)
            times.append(seconds)
            reports.append(report)
            cpus.append(cpu.seconds)
        cpu = statistics.median(cpus)
        verdicts = {protocol: rows["Verdict"].value_counts().to_dict() for protocol, rows in
                    thesis.summary(chapter).groupby("Protocol", sort=False)}
        print(f"{workers} worker(s): median {statistics.median(times):.1f} s over {len(times)} "
              f"run(s) (min {min(times):.1f} s) for {chapter.table.attrs['jobs_done']:,} "
              f"written releases (+ the as-run ones); of which report "
              f"{statistics.median(reports):.1f} s; CPU {cpu:.0f} s per run (all processes: "
              f"≥ {cpu / os.cpu_count():.0f} s of wall time on {os.cpu_count()} idle cores); "
              f"verdicts {verdicts}; load average now {os.getloadavg()[0]:.1f}"
              + ("  ✓ ≤ 3 min" if statistics.median(times) <= 180 else "  ✗ > 3 min"))
        if chapter.variants is not None and chapter.variants.extra:  # the last run's
            print(f"  extra trials at the finer level (last run): "
                  f"{chapter.variants.extra_text()}")


if __name__ == "__main__":
    main()
