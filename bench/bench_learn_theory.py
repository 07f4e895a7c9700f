"""Timings of the Learn page's computations (issue 6): each runs on every slider move, so each
should stay well under 100 ms. Prints the median and minimum of several runs, in milliseconds.

Run from the repository root: ``python bench/bench_learn_theory.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore.data import datasets
from dpcore.theory import accuracy, amplification, privacy_theory

GRID = np.linspace(0, 5, 201)
PRIORS = np.linspace(0, 1, 201)


def profiles():
    return (privacy_theory.laplace_profile(GRID, 2.0), privacy_theory.rr_profile(GRID, 2.0),
            privacy_theory.gaussian_profile(GRID, 1.0))


CALLS = [
    ("posterior_bound, 201 priors", lambda: privacy_theory.posterior_bound(PRIORS, 1.0)),
    ("hypothesis_test_region", lambda: privacy_theory.hypothesis_test_region(1.0, 1e-3)),
    ("laplace + RR + Gaussian profiles, 201 ε", profiles),
    ("subsampling, 201 ε", lambda: amplification.subsampling_amplification(GRID, 1e-6, 0.01)),
]
#: The bundled data's real sizes: commuters n, and the county and ED domains |X|.
COUNTY, ED = datasets.load("ireland_county"), datasets.load("ireland_ed")
for n in (10_000, 100_000, ED.n):
    for bound in amplification.BOUNDS:
        CALLS.append((f"shuffle_guarantee {bound:14} n={n:,} ε₀=2",
                      lambda n=n, b=bound: amplification.shuffle_guarantee(b, n, 2.0, 1e-7,
                                                                           k=1085)))
        CALLS.append((f"local_budget      {bound:14} n={n:,} ε=0.5",
                      lambda n=n, b=bound: amplification.local_budget(b, n, 0.5, 1e-7, k=1085)))
for d in (COUNTY.domain_size, ED.domain_size):
    CALLS.append((f"compare_mechanisms d={d:,}",
                  lambda d=d: accuracy.compare_mechanisms(ED.n, d, 1.0, cell_count=1000)))
    CALLS.append((f"recommend_local    d={d:,}",
                  lambda d=d: accuracy.recommend_local(d, 1.0, ED.n)))


TARGET_MS = 100.0


def main(repeats: int = 5) -> list[dict]:
    measured = []
    for label, call in CALLS:
        times, refused = [], 0
        for _ in range(repeats):
            start = time.perf_counter()
            try:
                call()
            except amplification.NotCertified:
                refused += 1
            times.append(time.perf_counter() - start)
        note = f"  (NotCertified in {refused} of {repeats})" if refused else ""
        print(f"{label:60} median {1000 * statistics.median(times):9.2f} ms, "
              f"min {1000 * min(times):9.2f} ms{note}")
        name = " ".join(label.split()) + f", median of {repeats}" + note.replace("  (", " (")
        measured.append(row(name, 1000 * statistics.median(times), "ms", limit=TARGET_MS))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(3 if quick else 5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
