"""Time of the analyses for one selection on one release (issue 36: ≤ 0.5 s per release on the
ED data), and of the area comparison over every zone (≤ 2 s).

    python bench/bench_analyses.py [--dataset ireland_ed] [--parent "Dublin City"] [--repeat 5]

Per mechanism: one release is drawn (not timed: the release is the mechanism's cost, not the
analyses'), then flows, both destination rankings, distance bands, directions and a paired area
for the parent area's zones are answered with their intervals (:func:`answers.evaluate`), and
the comparison of every zone separately. The median of ``--repeat`` runs is printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from dpcore import release  # noqa: E402
from dpcore.analyses import answers, intervals, selection as sel  # noqa: E402
from dpcore.data import datasets  # noqa: E402


def one_selection(od, chosen, other) -> list[answers.Query]:
    return (answers.flows(od, chosen) + answers.destinations(od, chosen, "work")
            + answers.destinations(od, chosen, "home") + answers.distance(od, chosen, "work")
            + answers.direction(od, chosen, "work") + answers.paired(od, other, chosen))


def timed(call, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--parent", default="Dublin City")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mechanisms", default="laplace,oue,grr")
    args = parser.parse_args()
    od = datasets.load(args.dataset)
    truth = release.true_values(od)
    chosen = (sel.parent(od, args.parent) if od.origins.parent is not None
              else sel.zones(od, [args.parent]))
    other = sel.zones(od, [od.origins.ids[0]])
    print(f"{od.name}: {od.domain_size:,} cells; selection {chosen.name!r} "
          f"({int(chosen.destinations.sum())} workplaces)")
    for key in args.mechanisms.split(","):
        spec = release.ReleaseSpec(key, 1.0, seed=1)
        result = release.run(od, spec, score=False)
        released = result.outputs["base"].released
        rule = intervals.Interval(key, spec.build(), n=od.n, d=od.domain_size,
                                  sparse=result.sparse)
        selection_s = timed(lambda: answers.evaluate(one_selection(od, chosen, other), truth,
                                                     released, rule, limit=20), args.repeat)
        compare_s = timed(lambda: answers.evaluate(answers.comparison(od), truth, released,
                                                   rule), args.repeat)
        print(f"{key:>10} ({'sparse' if result.sparse else 'dense'} release): one selection's "
              f"analyses {selection_s:.3f} s; comparison of every zone {compare_s:.3f} s")


if __name__ == "__main__":
    main()
