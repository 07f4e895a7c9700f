"""The floor of one ε change (issue 32): the Hadamard mechanism's release and the ranking of a dense
release, at ED level (9.8 M cells, D = 2²⁴) and county level.

For each ε: the median over ``--repeat`` releases of the Hadamard mechanism's ``release`` (CPU
seconds: process time, what other load on a shared machine inflates least), and of
``ranks.ordinal_ranks`` of the 100 true top flows in that release (Explore's "Ordering" and
"What happened"). Run from the repository root:

    python bench/bench_floor.py [--levels ed county] [--epsilons 1 5 20] [--repeat 3]

Quote the load average printed on the first and last lines: on a loaded machine the figures are
upper bounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.suite import row  # noqa: E402
from dpcore import mechanisms, release  # noqa: E402
from dpcore.data import datasets  # noqa: E402
from dpcore.scoring import ranks  # noqa: E402

LEVELS = {"county": "ireland_county", "ed": "ireland_ed"}


def cpu_seconds(function, *arguments):
    """(CPU seconds, result) of one call."""
    started = time.process_time()
    result = function(*arguments)
    return time.process_time() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", choices=list(LEVELS), default=["ed", "county"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 5.0, 20.0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    measure(args.levels, args.epsilons, args.repeat)


def rows(quick: bool) -> list[dict]:
    return measure(["county"] if quick else ["ed", "county"], [1.0, 5.0, 20.0], 3)


def measure(levels: list[str], epsilons: list[float], repeat: int) -> list[dict]:
    measured = []
    print(f"load average {os.getloadavg()[0]:.1f}")
    for level in levels:
        od = datasets.load(LEVELS[level])
        truth = release.true_values(od)
        truth.flags.writeable = False          # as the server holds it
        top = ranks.top_cells(truth, 100)
        for epsilon in epsilons:
            mechanism = mechanisms.build("hm", epsilon=epsilon)
            mechanism.release(truth, np.random.default_rng(0))      # warm-up
            draws, orders = [], []
            for seed in range(1, repeat + 1):
                seconds, released = cpu_seconds(mechanism.release, truth,
                                                 np.random.default_rng(seed))
                draws.append(seconds)
                orders.append(cpu_seconds(ranks.ordinal_ranks, released, top)[0])
            print(f"{level:6s} ε = {epsilon:<5g} t = {mechanism.coefficients(od.domain_size):2d}: "
                  f"Hadamard mechanism release {statistics.median(draws):.3f} s CPU, "
                  f"ranks of the top 100 {statistics.median(orders):.3f} s CPU", flush=True)
            what = f"{level} ε = {epsilon:g}"
            measured += [row(f"{what}: Hadamard mechanism release, CPU, median of {repeat}",
                             statistics.median(draws), "s"),
                         row(f"{what}: ranks of the true top 100 in it, CPU, median of {repeat}",
                             statistics.median(orders), "s")]
    print(f"load average {os.getloadavg()[0]:.1f}")
    return measured


if __name__ == "__main__":
    main()
