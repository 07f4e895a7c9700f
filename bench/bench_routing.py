"""Where the sparse release beats the dense one: the measurement behind the routing rule in
:func:`dpcore.release.sparse_route` (``SPARSE_FROM_CELLS``, ``SPARSE_MAX_DENSITY``).

For square synthetic domains of |X| cells with a share ``density`` of non-zero cells (Zipf
counts, n ≈ 10 per non-zero cell, as in the bundled data), and for the ED dataset itself, prints
the seconds of one release scored the way a page scores it, by each path, for the mechanisms the
sparse path releases exactly:

    python bench/bench_routing.py [--repeat 3]

A dense release draws and scores every cell (O(|X|)); a sparse one the non-zero cells and the
empty cells' distribution (O(nnz), GRR O(nnz + n)). Timings on a shared machine are upper bounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.suite import row  # noqa: E402
from dpcore import release  # noqa: E402
from dpcore.data import datasets  # noqa: E402
from dpcore.data.od import ODMatrix, ZoneSet  # noqa: E402

MECHANISMS = ("stability_histogram", "grr", "oue", "olh")


def synthetic(cells: int, density: float, seed: int = 7) -> ODMatrix:
    side = int(round(cells ** 0.5))
    nonzero = max(1, int(side * side * density))
    rng = np.random.default_rng(seed)
    flat = rng.choice(side * side, size=nonzero, replace=False)
    counts = np.minimum(rng.zipf(1.8, size=nonzero) * 4, 50_000)
    zones = ZoneSet.from_ids([f"z{i}" for i in range(side)])
    return ODMatrix.from_pairs(f"{side}²·{density:g}", zones, zones, flat // side, flat % side,
                               counts)


def seconds(od: ODMatrix, key: str, sparse: bool, truth, repeat: int) -> float:
    best = float("inf")
    for trial in range(repeat):
        spec = release.ReleaseSpec(key, 1.0, seed=1, trial=trial)
        started = time.perf_counter()
        release.run(od, spec, true_counts=truth, sparse=sparse)
        best = min(best, time.perf_counter() - started)
    return best


def report(od: ODMatrix, repeat: int) -> list[dict]:
    truth = od.to_dense()
    print(f"{od.name}: |X| = {od.domain_size:,}, non-zero {od.nonzero:,} "
          f"({od.nonzero / od.domain_size:.1%}), n = {od.n:,}; routed sparse by the rule: "
          f"{release.sparse_route(od, release.ReleaseSpec('oue', 1.0))}")
    measured = []
    for key in MECHANISMS:
        dense, sparse = (seconds(od, key, s, truth, repeat) for s in (False, True))
        print(f"  {key:20s} dense {dense:7.3f} s   sparse {sparse:7.3f} s   "
              f"dense/sparse {dense / sparse:6.1f}×")
        share = od.nonzero / od.domain_size
        measured.append(row(f"{od.name} ({od.domain_size:,} cells, {share:.1%} non-zero) {key}: "
                            f"dense / sparse seconds, best of {repeat}", dense / sparse, "×"))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    measure(parser.parse_args().repeat)


def rows(quick: bool) -> list[dict]:
    return measure(1 if quick else 2)


def measure(repeat: int) -> list[dict]:
    measured = []
    for cells in (10_000, 100_000, 1_000_000, 4_000_000):
        for density in (0.03, 0.1, 0.3):
            measured += report(synthetic(cells, density), repeat)
    return measured + report(datasets.load("ireland_ed"), repeat)


if __name__ == "__main__":
    main()
