"""TopDown (InfTDA) publishing: time and accuracy against the issue's targets.

    python3 bench/bench_topdown.py            # everything (the ED publish takes ~1–2 minutes)
    python3 bench/bench_topdown.py --quick    # county and an ED subset only

Targets: a TopDown publish of the ED data (county → ED, 9.8 M cells) through OpenDP ≤ 2 min on a
2-core machine; county ≤ 2 s; on the ED data at the ρ of ε = 1 (δ = 10⁻⁶), fewer invented
commutes than WLS and the max absolute error within the bound of
:func:`dpcore.mechanisms.topdown.error_bound` (95 %). Also: our vectorised ``int_opt`` against
the ``inf-tda`` package's on the ED level's parents (same noisy vectors). Wall time and CPU time
are printed; on a shared machine the wall time is an upper bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore.data import datasets, views
from dpcore.interfaces import publish, publish_compare, published_domain
from dpcore.mechanisms import topdown

EPSILON, DELTA = 1.0, 1e-6
#: The manifest's input entry for a bundled dataset published over its own bundled geography.
SOURCE = publish.input_entry("bench", views.View(), {"source": published_domain.BUNDLED})
#: This run's measurements in the suite's common format (bench/suite.py), in the order printed.
MEASURED: list[dict] = []


def timed(label: str, target: float | None, call):
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    verdict = "" if target is None else (" ✓" if wall <= target else " ✗") + f" (≤ {target:g} s)"
    print(f"{label:<58} wall {wall:8.2f} s  CPU {cpu:8.2f} s{verdict}", flush=True)
    MEASURED.extend([row(f"{label}: wall", wall, "s", limit=target),
                     row(f"{label}: CPU", cpu, "s")])
    return result


def accuracy(od, trials: int) -> None:
    """Flat / WLS / TopDown at ε = 1 on the ED data (seeded simulated releases), and the bound."""
    results = timed(f"side by side, ED data, {trials} releases per method", None,
                    lambda: publish_compare.compare(od, [EPSILON], DELTA, trials=trials,
                                                   whole_table=True))
    table = publish_compare.table(results, EPSILON)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    levels = topdown.hierarchy(od)
    sigmas = publish_compare.scales(publish.TOPDOWN, EPSILON, DELTA,
                                    tuple(publish.even_shares(len(levels))), "substitution")
    bounds = topdown.error_bound(list(sigmas), [lv.od.domain_size for lv in levels])
    fine = table[table["level"] == levels[-1].name].set_index("method")
    for level, bound in zip(levels, bounds):
        worst = results[(results["method"] == "topdown") & (results["level"] == level.name)
                        & (results["metric"] == "max_abs_error")]["high"].iloc[0]
        print(f"TopDown max |error| on {level.name}: {worst:.4g} (upper end of the 95 % "
              f"interval) vs bound {bound:.4g} {'✓' if worst <= bound else '✗'}")
        MEASURED.append(row(f"TopDown max |error| at {level.name} level (upper end of the 95 % "
                            f"interval), {trials} releases", worst, "commuters", limit=bound))
    fewer = fine.loc["topdown", "invented"] < fine.loc["wls", "invented"]
    print(f"invented commutes at ED level: TopDown {fine.loc['topdown', 'invented']:,.0f} vs "
          f"WLS {fine.loc['wls', 'invented']:,.0f} {'✓' if fewer else '✗'}")
    MEASURED.extend([row(f"invented commutes per release at ED level, WLS, {trials} releases",
                         fine.loc["wls", "invented"], "commutes"),
                     row(f"invented commutes per release at ED level, TopDown, {trials} releases",
                         fine.loc["topdown", "invented"], "commutes",
                         limit=fine.loc["wls", "invented"])])


def int_opt_speed(od) -> None:
    """The package's int_opt against ours on the ED level's parents, same noisy vectors."""
    from InfTDA.optimization import int_opt as reference
    levels = topdown.hierarchy(od)
    rng = np.random.default_rng(0)
    sigma = publish_compare.scales(publish.TOPDOWN, EPSILON, DELTA, (0.5, 0.5),
                                   "substitution")[1]
    fine, parent = levels[1].od.to_dense(), levels[1].parent
    order = np.argsort(parent, kind="stable")
    bounds = np.searchsorted(parent[order], np.arange(levels[0].od.domain_size + 1))
    totals = levels[0].od.to_dense()
    work = [(fine[order[a:b]] + publish_compare.discrete_gaussian(rng, sigma, b - a), int(c))
            for a, b, c in zip(bounds[:-1], bounds[1:], totals) if c > 0][:200]
    ours = timed(f"int_opt, ours, {len(work)} ED parents", None,
                 lambda: [topdown.int_opt(x, c) for x, c in work])
    theirs = timed(f"int_opt, inf-tda package, {len(work)} ED parents", None,
                   lambda: [reference(x.copy(), c) for x, c in work])
    same = all(np.array_equal(a, np.asarray(b, dtype=np.int64)) for a, b in zip(ours, theirs))
    print(f"same output: {same}")
    MEASURED.append(row("int_opt: our output is the package's on every parent (1 = yes)", same,
                        "", minimum=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    measure(args.quick, args.trials)


def rows(quick: bool) -> list[dict]:
    measure(quick, 3)
    return MEASURED


def measure(quick: bool, trials: int) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
          f"{os.getloadavg()[2]:.1f}; ε = {EPSILON}, δ = {DELTA}")
    county = datasets.load("ireland_county")
    timed("TopDown publish, counties (one level, 1,085 cells)", 2.0,
          lambda: publish.publish_topdown(county, EPSILON, delta=DELTA, whole_table=True,
                                          source=SOURCE))
    ed = datasets.load("ireland_ed")
    subset = ed.subset_by_parent(["Cavan", "Leitrim"])
    timed("TopDown publish, Cavan + Leitrim EDs and counties", None,
          lambda: publish.publish_topdown(subset, EPSILON, delta=DELTA, source=SOURCE))
    int_opt_speed(ed)
    if quick:
        return
    result = timed("TopDown publish, ED data (county → ED, 9.8 M cells)", 120.0,
                   lambda: publish.publish_topdown(ed, EPSILON, delta=DELTA, whole_table=True,
                                                   source=SOURCE))
    levels = topdown.hierarchy(ed)
    released = list(result.released.values())
    print(f"  levels add up: {topdown.consistent(levels, released)}; "
          f"min count {min(int(v.min()) for v in released)}; "
          f"noised at ED level: children of {np.count_nonzero(released[0])} non-zero "
          "county pairs")
    accuracy(ed, trials)


if __name__ == "__main__":
    main()
