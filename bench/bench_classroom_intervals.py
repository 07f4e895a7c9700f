"""Time the Classroom's exact intervals (dpcore.interfaces.classroom_stats) per teacher refresh.

    python3 bench/bench_classroom_intervals.py [--sizes 4 30 60 200 500 1000 2000]

A refresh after a new report meets a new n, so the law's tail tables are computed afresh (they
are cached per (mechanism, ε, d, n, block sharing) after that). Prints, per mechanism and class
size on the toy town's 50 cells, the seconds of one cold ``estimate_round`` (tables computed) and
one warm one (cached), and of the resolution sentence. Reports come from the mechanism's own
Python client. Then a coins and a number round's estimate with its exact (Clopper–Pearson)
interval, which has no table: what their teacher screen computes per refresh. The sizes reach
the room's cap, ``classroom.MAX_REPORTS``: one round may take every report.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore.interfaces import classroom, classroom_stats  # noqa: E402
from dpcore.interfaces.classroom import coins, numbers  # noqa: E402
from dpcore.mechanisms.hadamard import uniform_permutation  # noqa: E402

D = 50
SETTINGS = [("grr", 5.0), ("oue", 2.0), ("olh", 3.0), ("hr", 0.5), ("hr", 3.0)]
SIZES = [4, 30, 60, 200, 500, 1000, 2000]


def reports(round_, n, rng):
    mech = round_.build()
    items = rng.integers(0, D, size=n)
    extra = {"permutation": round_.permutation_array} if round_.mechanism == "hr" else {}
    batch = mech.perturb(items, D, rng, **extra)
    if round_.mechanism == "oue":
        return [{"bits": "".join("1" if b else "0" for b in row)} for row in batch["bits"]]
    return [{k: int(v[i]) for k, v in batch.items()} for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    measure(parser.parse_args().sizes)


def rows(quick: bool) -> list[dict]:
    return measure(SIZES[:3] if quick else SIZES)


def measure(sizes: list[int]) -> list[dict]:
    measured = []
    rng = np.random.default_rng(0)
    for mechanism, epsilon in SETTINGS:
        mech = classroom.mechanisms.build(mechanism, epsilon=epsilon)
        permutation = None
        if mechanism == "hr" and mech.blocked:
            permutation = tuple(int(x) for x in uniform_permutation(D, rng))
        round_ = classroom.Round("BENCH", 1, mechanism, epsilon, permutation, 0.0, None)
        for n in sizes:
            batch = reports(round_, n, rng)
            classroom_stats._spectra.cache_clear()
            classroom_stats._row.cache_clear()
            classroom_stats.resolution.cache_clear()
            classroom_stats.stand_out.cache_clear()
            start = time.perf_counter()
            classroom_stats.estimate_round(round_, D, batch)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            classroom_stats.estimate_round(round_, D, batch)
            warm = time.perf_counter() - start
            print(f"{mechanism} ε={epsilon:g} n={n}: estimate_round cold {cold:.3f} s "
                  f"(resolution included), warm {warm:.4f} s")
            what = f"{mechanism} ε = {epsilon:g}, {n} students: estimate_round"
            measured += [row(f"{what}, cold (tables computed)", cold, "s"),
                         row(f"{what}, warm", warm, "s")]
    for n in sizes:
        for kind, estimate in (("coins", lambda: coins.estimate(n // 3, n)),
                               ("number", lambda: numbers.estimate(n // 2, n, 90.0, 1.0))):
            start = time.perf_counter()
            estimate()
            took = time.perf_counter() - start
            print(f"{kind} n={n}: estimate with its exact interval {took:.4f} s")
            measured.append(row(f"{kind} round, {n} students: estimate and interval", took, "s"))
    return measured


if __name__ == "__main__":
    main()
