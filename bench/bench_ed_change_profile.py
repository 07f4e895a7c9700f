"""Where one ED ε change on Explore spends its time (issue 32): the calls Explore makes through
:mod:`ui.components.runs` — each default mechanism's release, its one-line-summary metrics, the
bars and the ordering of the top 100 — in one thread under cProfile (the page runs them in two),
printing the median CPU seconds per step over ``--repeat`` changes (ε, ε + 0.1, …, after one
warm-up change, as on a server whose truth is already loaded) and the costliest functions. Run
from the repository root:

    python bench/bench_ed_change_profile.py [--epsilon 1.5] [--repeat 3] [--dataset ireland_ed] [--top 25]
                                            [--blas-threads]

BLAS runs one thread, as in the server (:mod:`dpcore.blas`, set by ``ui/components/startup.py``);
``--blas-threads`` leaves OpenBLAS its default thread per core, whose spinning between dot
products this CPU time counts. Quote the load average printed on the first line: on a loaded
machine the figures are upper bounds.

Measured 2026-11-27 (``--repeat 5``, the machine shared with other engineers' work): total CPU
per change 1.22 s on the quiet machine before the third pass of issue 32 (commit a6923a7, BLAS
threads as OpenBLAS starts them); at 18:39 UTC, load average 5.7–5.9, a6923a7 1.37 s (1.13 s
with one BLAS thread) and this code 0.71–0.84 s (one BLAS thread or OpenBLAS's default: the hot
paths no longer call BLAS). The per-step figures are in docs/SHARED_SERVER.md.
"""

from __future__ import annotations

import argparse
import cProfile
import collections
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dpcore import blas, mechanisms, release  # noqa: E402
from dpcore.data import datasets  # noqa: E402
from dpcore.evaluation import summaries  # noqa: E402
from dpcore.scoring import ranks

DEFAULTS = ("laplace", "stability_histogram", "grr", "oue", "olh", "hm")   # Explore's
SETTINGS = {"delta": 1e-6, "neighbours": mechanisms.SUBSTITUTION}
DENSE = ("laplace", "hm")    # at ED level the others take the sparse path (release.sparse_route)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--epsilon", type=float, default=1.5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--blas-threads", action="store_true",
                        help="leave OpenBLAS a thread per core (the server runs one)")
    args = parser.parse_args()
    if not args.blas_threads:
        blas.one_thread()
    print(f"load average {os.getloadavg()[0]:.1f}; BLAS threads: "
          f"{'OpenBLAS default' if args.blas_threads else 'one, as the server'}")
    od = datasets.load(args.dataset)
    truth = release.true_values(od)
    truth.flags.writeable = False
    steps = collections.defaultdict(list)
    profile = cProfile.Profile()
    for change in range(args.repeat + 1):      # change 0 warms up: not counted
        epsilon = args.epsilon + 0.1 * change
        seconds = one_change(od, truth, epsilon, profile if change else None)
        for step, spent in seconds.items():
            if change:
                steps[step].append(spent)
    for step, spent in steps.items():
        print(f"{step:32s} {statistics.median(spent):6.3f} s CPU")
    totals = [sum(spent[i] for spent in steps.values()) for i in range(args.repeat)]
    print(f"{'total (median of the changes)':32s} {statistics.median(totals):6.3f} s CPU")
    # The page's two threads at ED (ui/components/runs.py): the dense releases one after another
    # (two at once would pass a session's memory budget), the sparse ones beside them.
    dense = [statistics.median(spent) for step, spent in steps.items()
             if step.split()[0] in ("release", "metrics") and step.split()[1] in DENSE]
    print(f"{'dense releases (one thread)':32s} {sum(dense):6.3f} s CPU")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.top:
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


def one_change(od, truth, epsilon, profile) -> dict[str, float]:
    """CPU seconds of each step of one ε change (under ``profile`` when given)."""
    steps = collections.Counter()

    def timed(step, function, *arguments, **options):
        started = time.process_time()
        if profile:
            profile.enable()
        result = function(*arguments, **options)
        if profile:
            profile.disable()
        steps[step] += time.process_time() - started
        return result

    released = {}
    for key in DEFAULTS:
        spec = release.ReleaseSpec(key, epsilon, mechanisms.declared(key, SETTINGS),
                                   ("base_pos",), 0, 0)
        result = timed(f"release {key}", release.attempt, od, spec, true_counts=truth, k=10,
                       top_n=100, score=release.sparse_route(od, spec))
        if not result.sparse:
            result = timed(f"metrics {key}", release.scored, result, od, true_counts=truth,
                           k=10, top_n=100, only=summaries.SENTENCE_METRICS)
        released[key] = result.released
    timed("bars", ranks.top_flows, od, truth, released, 30)
    top = ranks.top_cells(truth, 100)           # cached per view by ui/components/runs.py
    for key, vector in released.items():
        timed(f"ordering {key}", ranks.rank_pairs, truth, vector, 100, cells=top)
    return steps


if __name__ == "__main__":
    main()
