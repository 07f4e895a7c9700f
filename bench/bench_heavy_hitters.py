"""CPU cost of the heavy-hitter sections (issue 13): one PEM or TreeHist run on the bundled data
(Explore computes two, the Learn lesson one), and the Tradeoffs sweep this implies at the page's
defaults (10 ε values × 5 trials × 2 protocols). Prints medians of CPU seconds
(``time.process_time``: steadier than wall time on a shared machine).

Run from the repository root: ``python bench/bench_heavy_hitters.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore import seeding  # noqa: E402
from dpcore.data import datasets  # noqa: E402
from dpcore.evaluation import heavy_hitters  # noqa: E402
from dpcore import grids  # noqa: E402
from dpcore.theory import learn_heavy_hitters  # noqa: E402

SWEEP_POINTS = len(grids.THESIS_EPSILONS) * 5   # the Tradeoffs page's default grid and trials


def cpu(call, repeats: int) -> float:
    times = []
    for trial in range(repeats):
        start = time.process_time()
        call(trial)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(repeats: int = 5) -> list[dict]:
    measured = []
    print(f"{'data':16} {'protocol':9} {'k':>4} {'ε':>4}  CPU s/run  default sweep (CPU s)")
    for key in ("ireland_county", "ireland_ed"):
        od = datasets.load(key)
        sweep = 0.0
        for protocol in heavy_hitters.PROTOCOLS:
            for k in (10, 100):
                for epsilon in (1.0, 4.0):
                    seconds = cpu(lambda t, p=protocol, e=epsilon, k=k, od=od: heavy_hitters.find(
                        p, od, e, k, 0, t), repeats)
                    if k == 10:
                        sweep += seconds / 2 * SWEEP_POINTS   # the mean of the two ε
                    print(f"{key:16} {protocol:9} {k:>4} {epsilon:>4g}  {seconds:9.3f}")
                    measured.append(row(f"{key} {protocol}, top {k}, ε = {epsilon:g}: one run, "
                                        f"CPU, median of {repeats}", seconds, "s"))
        print(f"{key:16} both protocols, k = 10: about {sweep:,.1f} CPU s for the default sweep")
        measured.append(row(f"{key} both protocols, k = 10: the Tradeoffs page's default sweep "
                            "(estimated from the runs)", sweep, "s CPU"))
        cell = int(od.flat_index[od.counts.argmax()])
        seconds = cpu(lambda t, cell=cell, od=od: learn_heavy_hitters.device_report(
            "treehist", od.domain_size, cell, 1.0, 10, seeding.generator(0, "bench", t)),
            repeats)
        print(f"{key:16} one phone's TreeHist report: {seconds * 1e3:.2f} ms CPU")
        measured.append(row(f"{key} one phone's TreeHist report, CPU", seconds * 1e3, "ms"))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(2 if quick else 5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
