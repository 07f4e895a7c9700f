"""CPU time of one job of ``reproduce-thesis`` at ED level (issue 14), by mechanism and by phase.

The default thesis run is 2,400 releases, and the 600 ED jobs (9.8 M cells each) are most of its
time. This runs the chapter's ED jobs in this process, as a worker runs them
(``experiment._Data.execute``: one release, Base/Base-Pos/Base-Cut, each scored on the figures'
metrics), and prints the mean CPU seconds (``time.process_time``) of a job per mechanism, split into
the release, the post-processing and the scoring (cProfile, CPU clock). The data (and any
variance a post-processing needs) are prepared by a warm-up pass first, as on a worker that has
run the first trial.

Each run is a fresh process with a Dask worker's environment (one BLAS thread: a multi-threaded
``np.dot`` costs three times the CPU). CPU time, not wall time, so that runs on a machine shared
with other work can be compared.
``--against DIR`` also runs the same jobs with the code in DIR (e.g. ``git worktree add /tmp/base
BASE``), alternating the two in fresh processes, so both are measured under the same load.

Run from the repository root: ``python bench/bench_thesis_job.py [--dataset ireland_ed]
[--trials 1] [--rounds 2] [--against DIR]``.
"""

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Functions whose cumulative CPU time makes up a phase (file suffix, function name).
PHASES = {"release": [("mechanisms/central.py", "release"), ("mechanisms/local.py", "release"),
                      ("mechanisms/hadamard.py", "release")],
          "post-processing": [("mechanisms/postprocess.py", "apply")],
          "scoring": [("scoring/metrics.py", "compute")]}


def measure(root: Path, dataset: str, trials: int) -> dict:
    """Mean CPU seconds per ED job, per mechanism and phase, with the code under ``root``."""
    sys.path.insert(0, str(root))
    from dpcore import grids
    from dpcore.data import datasets
    from dpcore.evaluation import experiment, thesis

    od = datasets.load(dataset)
    lv = thesis.levels(od)
    fine = lv.fine or lv.coarse
    jobs = experiment.plan(thesis.mechanism_specs(od), grids.THESIS_EPSILONS,
                           postprocess=thesis.POSTPROCESS, trials=trials, scenarios=[fine])
    scoring = {"k": 10, "top_n": 100, "only": thesis.METRICS}
    data = experiment._Data(od)
    for job in jobs[:len(jobs) // trials]:  # warm-up: views, dense counts
        data.execute(job, scoring)
    per_job: dict[str, list[float]] = {}
    profile = cProfile.Profile(time.process_time)
    for job in jobs:
        started = time.process_time()
        profile.runcall(data.execute, job, scoring)
        per_job.setdefault(job.spec.mechanism, []).append(time.process_time() - started)
    stats = pstats.Stats(profile).stats
    phases = {}
    for phase, functions in PHASES.items():
        phases[phase] = sum(row[3] for (file, _, name), row in stats.items()
                            if any(file.endswith(f) and name == n for f, n in functions))
    return {"scenario": fine.label, "cells": data.whole(fine.view)[0].domain_size,
            "jobs": len(jobs), "per_job": {k: statistics.mean(v) for k, v in per_job.items()},
            "mean": statistics.mean(t for v in per_job.values() for t in v),
            "phases": {k: v / len(jobs) for k, v in phases.items()}}


def worker_environment() -> dict:
    """The environment a Dask worker process starts with (one BLAS thread, glibc's trim
    threshold; ``distributed.nanny.pre-spawn-environ``), so jobs cost here what they cost there."""
    import dask.config
    import distributed  # noqa: F401  (registers the distributed.* defaults)

    spawn = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    return {**os.environ, **{key: str(value) for key, value in spawn.items()}}


def child(root: Path, dataset: str, trials: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(root), "--dataset", dataset,
                          "--trials", str(trials)], check=True, capture_output=True, text=True,
                         cwd=root, env=worker_environment())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.dataset, args.trials)))
        return
    roots = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    results: dict[str, list[dict]] = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            results[name].append(child(root, args.dataset, args.trials))
    first = results["this"][0]
    print(f"{args.dataset}, {first['scenario']} level ({first['cells']:,} cells): {first['jobs']} "
          f"jobs per run, {args.rounds} run(s) per version; load average "
          f"{os.getloadavg()[0]:.1f}. CPU seconds per job (median over runs):")
    mechanisms = list(first["per_job"])
    print(f"{'version':10s}" + "".join(f"{m:>22s}" for m in mechanisms)
          + f"{'all':>8s}" + "".join(f"{p:>17s}" for p in PHASES))
    for name, runs in results.items():
        cells = [statistics.median(r["per_job"][m] for r in runs) for m in mechanisms]
        phases = [statistics.median(r["phases"][p] for r in runs) for p in PHASES]
        mean = statistics.median(r["mean"] for r in runs)
        print(f"{name:10s}" + "".join(f"{c:22.3f}" for c in cells) + f"{mean:8.3f}"
              + "".join(f"{p:17.3f}" for p in phases))
    if args.against:
        this = statistics.median(r["mean"] for r in results["this"])
        other = statistics.median(r["mean"] for r in results["against"])
        print(f"this / against: {this / other:.2f} ({100 * (1 - this / other):.0f} % less CPU "
              f"per ED job)")


if __name__ == "__main__":
    main()
