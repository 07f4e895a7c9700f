"""Timings of the ε planner (issue 12): a closed-form answer should take ≤ 50 ms, a searched one
at county level ≤ 10 s. Prints the median and minimum of several runs.

Run from the repository root: ``python bench/bench_planner.py [repeats]`` (default 3).
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.data import datasets
from dpcore.evaluation import planner  # noqa: E402

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
COUNTY = datasets.load("ireland_county")
CASES = [  # (label, dataset, mechanism, target, trials)
    ("closed form, RMSE ≤ 5", COUNTY, "laplace", planner.Target("rmse", 5.0), 20),
    ("closed form, RMSE ≤ 5", COUNTY, "grr", planner.Target("rmse", 5.0), 20),
    ("closed form, RMSE ≤ 100", COUNTY, "olh", planner.Target("rmse", 100.0), 20),
    ("closed form, MAE ≤ 50 (normal approx.)", COUNTY, "oue", planner.Target("mae", 50.0), 20),
    ("search, GEH < 5 on ≥ 85 %, p = 0.9", COUNTY, "laplace",
     planner.Target("geh_pass_share", 0.85), 20),
    ("search, GEH < 5 on ≥ 85 %, p = 0.9", COUNTY, "olh",
     planner.Target("geh_pass_share", 0.85), 20),
    ("search, top-10 recall ≥ 0.9, p = 0.9", COUNTY, "hm",
     planner.Target("topk_recall", 0.9), 20),
    ("search, every planner check, p = 0.9", COUNTY, "gaussian", planner.Target("checks"), 20),
]


def main():
    truth = COUNTY.to_dense()
    print(f"{'case':42} {'mechanism':10} {'ε found':>9} {'median':>10} {'min':>10}  target")
    for label, od, key, target, trials in CASES:
        times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            answer = planner.plan(od, [key], target, truth=truth, trials=trials)[0]
            times.append(time.perf_counter() - started)
        limit = 10.0 if answer.method == planner.SEARCH else 0.05
        median = statistics.median(times)
        print(f"{label:42} {key:10} {answer.epsilon:9.4g} {median * 1e3:8.1f} ms "
              f"{min(times) * 1e3:8.1f} ms  ≤ {limit * 1e3:g} ms {'✓' if median <= limit else '✗'}")


if __name__ == "__main__":
    main()
