"""Timings of the ε planner (issue 12): a closed-form answer should take ≤ 50 ms at any level (ED
level: 9.8 M cells), a searched one at county level ≤ 10 s; (issue 32) Plan & publish's Find ε for
its six default mechanisms and default target (GEH < 5 on ≥ 85 % of cells in 90 % of 20 draws)
≤ 5 s at county level. Prints the median and minimum wall
time of several runs and the median CPU time (process time: what load on a shared machine
inflates least). The ED matrix is loaded once; building its count profile is part of each answer.

Run from the repository root: ``python bench/bench_planner.py [repeats]`` (default 3).
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore.data import datasets
from dpcore.evaluation import planner  # noqa: E402

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
COUNTY = datasets.load("ireland_county")
#: Plan & publish's default mechanisms (ui/components/controls.py DEFAULT_MECHANISMS, with their defaults).
DEFAULTS = ("laplace", "stability_histogram", "grr", "oue", "olh", "hm")
ED = datasets.load("ireland_ed")
CASES = [  # (label, dataset, mechanism, target, trials)
    ("ED closed form, RMSE ≤ 5", ED, "laplace", planner.Target("rmse", 5.0), 20),
    ("ED closed form, RMSE ≤ 5", ED, "grr", planner.Target("rmse", 5.0), 20),
    ("ED closed form, RMSE ≤ 100", ED, "olh", planner.Target("rmse", 100.0), 20),
    ("ED closed form, MAE ≤ 50 (normal approx.)", ED, "oue", planner.Target("mae", 50.0), 20),
    ("ED closed form, RMSE ≤ 5 (not DP)", ED, "cell_key", planner.Target("rmse", 5.0), 20),
    ("county closed form, RMSE ≤ 5", COUNTY, "laplace", planner.Target("rmse", 5.0), 20),
    ("county closed form, RMSE ≤ 5", COUNTY, "grr", planner.Target("rmse", 5.0), 20),
    ("county closed form, RMSE ≤ 100", COUNTY, "olh", planner.Target("rmse", 100.0), 20),
    ("county closed form, MAE ≤ 50 (normal approx.)", COUNTY, "oue",
     planner.Target("mae", 50.0), 20),
    ("county search, GEH < 5 on ≥ 85 %, p = 0.9", COUNTY, "laplace",
     planner.Target("geh_pass_share", 0.85), 20),
    ("county search, GEH < 5 on ≥ 85 %, p = 0.9", COUNTY, "olh",
     planner.Target("geh_pass_share", 0.85), 20),
    ("county search, top-10 recall ≥ 0.9, p = 0.9", COUNTY, "hm",
     planner.Target("topk_recall", 0.9), 20),
    ("county search, every planner check, p = 0.9", COUNTY, "gaussian",
     planner.Target("checks"), 20),
    ("county Find ε, six defaults, GEH, p = 0.9", COUNTY, DEFAULTS,
     planner.Target("geh_pass_share", 0.85), 20),
]
#: Limit per case: a closed form, one searched mechanism, Plan & publish's six defaults.
LIMITS = {planner.SEARCH: 10.0, "six": 5.0}


def main(repeats: int = REPEATS) -> list[dict]:
    measured = []
    print(f"{'case':46} {'mechanism':10} {'ε found':>9} {'median':>11} {'min':>11} "
          f"{'CPU':>11}  target")
    for label, od, key, target, trials in CASES:
        times, cpu = [], []
        for _ in range(repeats):
            started, started_cpu = time.perf_counter(), time.process_time()
            keys = list(key) if isinstance(key, tuple) else [key]
            answers = planner.plan(od, keys, target, trials=trials)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        answer = answers[0]
        limit = (LIMITS["six"] if isinstance(key, tuple) else
                 LIMITS[planner.SEARCH] if answer.method == planner.SEARCH else 0.05)
        median = statistics.median(times)
        shown = "six" if isinstance(key, tuple) else key
        found = (" ".join(f"{a.epsilon:.3g}" for a in answers) if isinstance(key, tuple)
                 else f"{answer.epsilon:9.4g}")
        print(f"{label:46} {shown:10} {found:>9} {median * 1e3:9.1f} ms "
              f"{min(times) * 1e3:9.1f} ms {statistics.median(cpu) * 1e3:9.1f} ms  "
              f"≤ {limit * 1e3:g} ms {'✓' if median <= limit else '✗'}")
        measured.append(row(f"{label}, {shown} (ε found {found.strip()}), median of {repeats}",
                            median * 1e3, "ms", limit=limit * 1e3))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(1 if quick else 3)


if __name__ == "__main__":
    main()
