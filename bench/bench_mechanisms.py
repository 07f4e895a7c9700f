"""How fast is every mechanism? Fast release vs per-user simulation, and pure-LDP (issue 3, point 8).

Prints markdown tables (docs/BENCHMARKS.md quotes an earlier run):

1. For every registered mechanism at ε = 1, the median time of the fast ``release`` and of the
   per-user ``simulate`` (every commuter randomises, the server aggregates and estimates) at county
   level (n ≈ 2.75 M, |X| = 1,085) and ED level (|X| ≈ 9.8 M). A per-user run whose time, measured
   on a growing random subsample of commuters, projects beyond ``--budget`` seconds is not run in
   full: its time is extrapolated linearly in the number of commuters and labelled "extrap.";
   when one pilot alone exceeds the budget (Apple's sketches at ED level, whose server reads k
   entries for each of the d cells), that pilot's time is reported as a lower bound.
2. pure-LDP (the field's reference library, a test-only dependency) doing the same work — every
   client randomises, the server aggregates and estimates every cell — for GRR, OUE, OLH and
   Hadamard response on a 1 % random subsample of the county commuters, extrapolated × 100 and
   labelled as such, next to our times in the same run and the speed-up.
3. ``metrics.compute`` at both levels (first call on a matrix, which measures its trip lengths,
   and the median of later calls).

Targets (2-core machine): every fast release ≤ 50 ms at county level and ≤ 1 s at ED level;
≥ 10,000× faster than pure-LDP at county level. The tables mark each release against its target.

Run from the repository root: ``python bench/bench_mechanisms.py [--quick] [--repeats R]
[--budget S] [--levels county,ed] [--mechanisms k1,k2] [--no-peers]``. A full run takes
several minutes; ``--quick`` (3 repeats, 15 s budget, 0.1 % pure-LDP subsample) about two.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import suite  # noqa: E402
from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.scoring import metrics  # noqa: E402

EPSILON = 1.0
LEVELS = {"county": "ireland_county", "ed": "ireland_ed"}
LEVEL_NAMES = {"county": "county", "ed": "ED"}
TARGET_SECONDS = {"county": 0.050, "ed": 1.0}
SPEED_UP_TARGET = 10_000
#: A pilot per-user run this long (s) is enough to extrapolate from.
PILOT_SECONDS = 1.0
FIRST_PILOT_USERS = 1


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def timed(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def median_time(function, args, repeats: int) -> float:
    return statistics.median(timed(function, *args) for _ in range(repeats))


@dataclass
class Simulation:
    seconds: float
    users: int          # commuters actually simulated in the timed run(s)
    extrapolated: bool

    def __str__(self) -> str:
        if self.extrapolated:
            people = "user" if self.users == 1 else "users"
            return f"≈ {duration(self.seconds)} (extrap. from {self.users:,} {people})"
        return duration(self.seconds)


def time_simulation(mechanism, items: np.ndarray, d: int, budget: float, repeats: int,
                    rng: np.random.Generator) -> Simulation:
    """Per-user simulation of all commuters, or its linear extrapolation if it would exceed budget.

    Pilot runs on random subsamples of 1, 4, 16, … commuters fit time = fixed + per-user × users
    from the last two pilots (the fixed part — the server's work over the domain — can dominate
    small pilots). The projection is trusted once a pilot takes PILOT_SECONDS and at least half of
    it is per-user work; a projection within budget is replaced by the full run, but only once
    per-user work is visible or a sixteenth of the commuters has been simulated.
    """
    n = len(items)
    points: list[tuple[int, float]] = []
    users = 1
    while users < n:
        sample = items[rng.choice(n, users, replace=False)]
        points.append((users, timed(mechanism.simulate, sample, d, rng)))
        if points[-1][1] > budget:   # the server's fixed work alone (a sketch's O(k·d) query at
            return Simulation(points[-1][1], users, True)   # ED level) exceeds it: a lower bound
        if len(points) >= 2:
            (m1, t1), (m2, t2) = points[-2:]
            projected = t2 + max(t2 - t1, 0.0) / (m2 - m1) * (n - m2)
            per_user_seen = t2 >= 2 * t1     # else timing noise could hide the per-user cost
            if projected <= budget and (per_user_seen or m2 * 16 >= n):
                break
            if per_user_seen and t2 >= PILOT_SECONDS:
                return Simulation(projected, m2, True)
        users = min(n, users * 4)
    first = timed(mechanism.simulate, items, d, rng)
    if first > 2 or repeats == 1:
        return Simulation(first, n, False)
    return Simulation(median_time(mechanism.simulate, (items, d, rng), repeats - 1), n, False)


# ------------------------------------------------------------------------------------- pure-LDP
def _identity(x):
    return x  # pure-LDP's default index mapper is x − 1 (1-based items)


def _pure_ldp_protocols(d: int):
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.hadamard_response import (
        HadamardResponseClient,
        HadamardResponseServer,
    )
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    def hadamard_response():
        server = HadamardResponseServer(EPSILON, d, index_mapper=_identity)
        return HadamardResponseClient(EPSILON, d, server.get_hash_funcs(),
                                      index_mapper=_identity), server

    return {
        "grr": lambda: (DEClient(EPSILON, d, index_mapper=_identity),
                        DEServer(EPSILON, d, index_mapper=_identity)),
        "oue": lambda: (UEClient(EPSILON, d, use_oue=True, index_mapper=_identity),
                        UEServer(EPSILON, d, use_oue=True, index_mapper=_identity)),
        "olh": lambda: (LHClient(EPSILON, d, use_olh=True, index_mapper=_identity),
                        LHServer(EPSILON, d, use_olh=True, index_mapper=_identity)),
        "hr": hadamard_response,
    }


def pure_ldp_seconds(make, sample: np.ndarray, d: int) -> float:
    """pure-LDP's whole protocol on ``sample``: set-up, every client, aggregation, every estimate."""
    start = time.perf_counter()
    client, server = make()
    for item in sample.tolist():
        server.aggregate(client.privatise(item))
    server.estimate_all(range(d), suppress_warnings=True, normalization=0)
    return time.perf_counter() - start


# ----------------------------------------------------------------------------------------- main
def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats, 15 s per-user budget, 0.1 %% pure-LDP subsample")
    parser.add_argument("--repeats", type=int, help="timed repeats per release (default 5)")
    parser.add_argument("--budget", type=float,
                        help="longest per-user run to do in full, s (default 120)")
    parser.add_argument("--levels", default="county,ed")
    parser.add_argument("--mechanisms", default=",".join(mechanisms.names()))
    parser.add_argument("--no-peers", action="store_true", help="skip pure-LDP")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    budget = args.budget or (15.0 if args.quick else 120.0)
    peer_share = 0.001 if args.quick else 0.01
    levels = [level.strip() for level in args.levels.split(",")]
    keys = [key.strip() for key in args.mechanisms.split(",")]
    rng = np.random.default_rng(args.seed)

    releases: dict[tuple[str, str], float] = {}
    simulations: dict[tuple[str, str], Simulation] = {}
    metric_times: dict[str, tuple[float, float]] = {}
    matrices = {}
    for level in levels:
        od = datasets.load(LEVELS[level])
        matrices[level] = od
        true, items = od.to_dense(), od.to_items()
        log(f"{level}: n = {od.n:,}, |X| = {od.domain_size:,}")
        for key in keys:
            mechanism = mechanisms.build(key, epsilon=EPSILON)
            mechanism.release(true, rng)  # warm-up: one-time set-up is not what we compare
            releases[level, key] = median_time(mechanism.release, (true, rng), repeats)
            log(f"  {key}: release {duration(releases[level, key])}")
            simulations[level, key] = time_simulation(mechanism, items, od.domain_size, budget,
                                                      repeats, rng)
            log(f"  {key}: per-user {simulations[level, key]}")
        noisy = mechanisms.build("laplace", epsilon=EPSILON).release(true, rng)
        first = timed(metrics.compute, true, noisy, od)
        metric_times[level] = first, median_time(metrics.compute, (true, noisy, od), repeats)

    peers = {}
    if not args.no_peers and "county" in levels:
        od = matrices["county"]
        items = od.to_items()
        sample = items[rng.choice(len(items), round(peer_share * len(items)), replace=False)]
        random.seed(args.seed)       # pure-LDP draws from the global generators
        np.random.seed(args.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecated randint calls, "small data" notes
            for key, make in _pure_ldp_protocols(od.domain_size).items():
                if key in keys:
                    seconds = pure_ldp_seconds(make, sample, od.domain_size)
                    peers[key] = seconds / peer_share
                    log(f"  pure-LDP {key}: {duration(seconds)} on {len(sample):,} users")

    print_report(levels, keys, matrices, releases, simulations, metric_times, peers, repeats,
                 budget, peer_share)
    return to_rows(levels, keys, releases, simulations, metric_times, peers, repeats, peer_share)


def rows(quick: bool) -> list[dict]:
    return main(["--quick"] if quick else [])


def to_rows(levels, keys, releases, simulations, metric_times, peers, repeats,
            peer_share) -> list[dict]:
    """The tables' figures in the suite's common format (bench/suite.py)."""
    row, measured = suite.row, []
    for level in levels:
        name = LEVEL_NAMES[level]
        for key in keys:
            simulation = simulations[level, key]
            how = (f"extrapolated from {simulation.users:,} users" if simulation.extrapolated
                   else "every commuter")
            measured += [row(f"{key} at {name} level: fast release, median of {repeats}",
                             releases[level, key] * 1e3, "ms",
                             limit=TARGET_SECONDS[level] * 1e3),
                         row(f"{key} at {name} level: per-user run ({how})",
                             simulation.seconds, "s")]
        first, later = metric_times[level]
        measured += [row(f"metrics.compute at {name} level, first call", first, "s"),
                     row(f"metrics.compute at {name} level, later calls, median of {repeats}",
                         later, "s")]
    for key, seconds in peers.items():
        measured.append(row(f"{key} at county level: pure-LDP's time ({peer_share:.1%} of the "
                            "commuters, extrapolated) / our fast release",
                            seconds / releases["county", key], "×", minimum=SPEED_UP_TARGET))
    return measured


def print_report(levels, keys, matrices, releases, simulations, metric_times, peers, repeats,
                 budget, peer_share) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Machine: {os.cpu_count()} cores (load average at the end {load}), Python "
          f"{platform.python_version()}, NumPy "
          f"{np.__version__}; ε = {EPSILON:g}; d = |X| cells, n commuters; median of {repeats} "
          f"releases; per-user runs projected beyond {budget:g} s are extrapolated linearly from "
          f"a random subsample of commuters.\n")
    header = ["mechanism", "model"]
    for level in levels:
        od = matrices[level]
        name = LEVEL_NAMES[level]  # no "|X|" here: a pipe would split the markdown cell
        header += [f"release, {name} (d = {od.domain_size:,})", f"per-user, {name} "
                   f"(n = {od.n:,})"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    misses = []
    for key in keys:
        row = [key, mechanisms.get(key).model]
        for level in levels:
            seconds = releases[level, key]
            met = seconds <= TARGET_SECONDS[level]
            if not met:
                misses.append(f"{key} at {LEVEL_NAMES[level]} level ({duration(seconds)} > "
                              f"{duration(TARGET_SECONDS[level])})")
            row += [f"{duration(seconds)} {'✓' if met else '✗'}", str(simulations[level, key])]
        print("| " + " | ".join(row) + " |")
    targets = ", ".join(f"≤ {duration(TARGET_SECONDS[level])} at {LEVEL_NAMES[level]} level"
                        for level in levels)
    print(f"\n✓/✗: fast release within its target ({targets}). "
          + (f"Missed: {'; '.join(misses)}." if misses else "All met."))

    if peers:
        print(f"\n| mechanism (county) | pure-LDP 1.2, {peer_share * 100:g} % subsample × {1 / peer_share:,.0f} "
              f"(extrap.) | ours, per-user | ours, fast release | speed-up of the fast release |")
        print("|---|---|---|---|---|")
        for key, seconds in peers.items():
            speed_up = seconds / releases["county", key]
            mark = "✓" if speed_up >= SPEED_UP_TARGET else "✗"
            print(f"| {key} | {duration(seconds)} | {simulations['county', key]} | "
                  f"{duration(releases['county', key])} | {speed_up:,.0f}× {mark} |")
        print(f"\n✓/✗: at least {SPEED_UP_TARGET:,}× faster than pure-LDP.")

    print("\n| metrics.compute (Laplace ε = 1 release) | first call on a matrix | later calls |")
    print("|---|---|---|")
    for level in levels:
        first, later = metric_times[level]
        print(f"| {LEVEL_NAMES[level]} (d = {matrices[level].domain_size:,}) | {duration(first)} | "
              f"{duration(later)} |")


if __name__ == "__main__":
    main()
