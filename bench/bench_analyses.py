"""Time of the Places page's analyses (issue 36): one selection's analyses on one release of the
ED data (≤ 0.5 s per release), the comparison of every ED (≤ 2 s), and the same on the national
synthetic tracts (≤ 3 s), sparse releases there.

    python3 -m bench --only analyses [--quick]
    python bench/bench_analyses.py [--dataset ireland_ed] [--parent "Dublin City"] [--repeat 5]

Per mechanism one release is drawn (not timed: the release is the mechanism's cost, not the
analyses'); then flows, both destination rankings, distance bands, directions and a paired area
of the parent area's zones are answered with their intervals (:func:`answers.evaluate`, as the
Places page and the CLI call it), and the comparison of every zone (and, national, of every
county). A sparse vector keeps per-vector structures once it has been summed, and a table keeps
public ones (its cell index, parent labels, zone positions: :func:`sums.once_per_table`), so
"first selection" times each repeat on fresh copies of the truth and the release (the same
arrays, none of their structures): what the page pays for the first answer on a new release;
"the first on the dataset" also forgets the table's structures (a new server process's first
answer); "later selection" reuses everything. Medians of the repeats.

National: the generated dataset of :mod:`dpcore.data.national` (``python3 -m dpcore datasets
--make us_tracts``; skipped with a message when it is not in the cache folder). Its selection is
the county at the 90th percentile of tracts per county (the later selection: at the 75th); the
largest counties (Zipf-sized, up to tens of thousands of tracts) exceed the 50 M commutes whose
distances one analysis computes and get a message instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.suite import row  # noqa: E402
from dpcore import release  # noqa: E402
from dpcore.analyses import (answers, intervals, selection as sel, simulated,  # noqa: E402
                             sums, synthesized)
from dpcore.data import datasets, national  # noqa: E402
from dpcore.mechanisms.sparse_vector import SparseVector  # noqa: E402

TARGETS = {"selection": 0.5, "comparison": 2.0, "national": 3.0}


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


def fresh(values):
    """A sparse vector as a new object (same arrays, no per-vector structures yet)."""
    return dataclasses.replace(values) if isinstance(values, SparseVector) else values


def new_table(od) -> None:
    """Forget the structures kept per table (:func:`sums.once_per_table`): the next analyses
    pay them, as the first on a dataset in a new server process does."""
    sums._TABLE.pop(od, None)


def release_of(od, key: str):
    """One release and its interval rule: the closed form, or OnTheMap's debiased law (the
    product's dispatch, :func:`simulated.rule`)."""
    spec = release.ReleaseSpec(key, 1.0, seed=1)
    result = release.run(od, spec, score=False)
    released = result.outputs["base"].released
    rule = (simulated.rule(od, spec, released) if key == synthesized.KEY else
            intervals.Interval(key, spec.build(), n=od.n, d=od.domain_size, sparse=result.sparse))
    return released, rule, result.sparse


def ed(dataset: str, parent: str, mechanisms: list[str], repeat: int) -> list[dict]:
    od = datasets.load(dataset)
    truth = release.true_values(od)
    chosen = (sel.parent(od, parent) if od.origins.parent is not None
              else sel.zones(od, [parent]))
    other = sel.zones(od, [od.origins.ids[0]])
    print(f"{od.name}: {od.domain_size:,} cells; selection {chosen.name!r} "
          f"({int(chosen.destinations.sum())} workplaces)")
    measured = []
    for key in mechanisms:
        released, rule, sparse = release_of(od, key)
        kind = "sparse" if sparse else "dense"
        selection_s = timed(lambda: answers.evaluate(
            one_selection(od, chosen, other), fresh(truth), fresh(released), rule, limit=20),
            repeat)
        compare_s = timed(lambda: answers.evaluate(answers.comparison(od), truth, released,
                                                   rule), repeat)
        print(f"{key:>10} ({kind} release): one selection's analyses {selection_s:.3f} s; "
              f"comparison of every zone {compare_s:.3f} s")
        measured += [
            row(f"{dataset}: {chosen.name}'s analyses, {key} ({kind}), median of {repeat}",
                selection_s, "s", limit=TARGETS["selection"]),
            row(f"{dataset}: comparison of every zone, {key} ({kind}), median of {repeat}",
                compare_s, "s", limit=TARGETS["comparison"])]
    return measured


def county_at(od, quantile: float) -> str:
    """The county at this quantile of tracts per county."""
    parents, sizes = np.unique(od.origins.parent.astype(str), return_counts=True)
    order = np.argsort(sizes, kind="stable")
    return str(parents[order[int(quantile * (order.size - 1))]])


def nationwide(mechanisms: list[str], repeat: int) -> list[dict]:
    if not national.cache_path().exists():
        print(f"national: {national.cache_path()} missing (python3 -m dpcore datasets --make "
              f"{national.KEY}); not measured")
        return []
    od = national.load()
    truth = release.true_values(od)
    county = county_at(od, 0.9)
    chosen, other = sel.parent(od, county), sel.zones(od, [od.origins.ids[0]])
    later = sel.parent(od, county_at(od, 0.75))
    print(f"{od.name}: {od.domain_size:,} cells, {od.nonzero:,} non-empty; county {county} "
          f"({int(chosen.destinations.sum())} tracts)")
    limit = TARGETS["national"]
    measured = []
    for key in mechanisms:
        released, rule, sparse = release_of(od, key)
        kind = "sparse" if sparse else "dense"
        first_s = timed(lambda: answers.evaluate(
            one_selection(od, chosen, other), fresh(truth), fresh(released), rule, limit=20),
            repeat)
        table_s = timed(lambda: (new_table(od), answers.evaluate(
            one_selection(od, chosen, other), fresh(truth), fresh(released), rule, limit=20)),
            repeat)
        later_s = timed(lambda: answers.evaluate(
            one_selection(od, later, other), truth, released, rule, limit=20), repeat)
        print(f"{key:>10} ({kind}): first on the table {table_s:.3f} s; first selection "
              f"{first_s:.3f} s; later selection {later_s:.3f} s")
        measured += [
            row(f"national: a county's analyses, the first on the dataset (its shared "
                f"structures made too), {key} ({kind}), median of {repeat}", table_s, "s",
                limit=limit),
            row(f"national: a county's analyses, first selection on a {key} ({kind}) release, "
                f"median of {repeat}", first_s, "s", limit=limit),
            row(f"national: a later county's analyses, {key} ({kind}), median of {repeat}",
                later_s, "s", limit=limit)]
        if key == synthesized.KEY:   # its comparisons take a block per area: tens of seconds
            print(f"{key:>10}: the comparisons of every county and tract are not timed here "
                  "(docs/ANALYSES.md, OnTheMap's synthesizer)")
            continue
        parents_s = timed(lambda: answers.evaluate(answers.comparison(od, "parents"), truth,
                                                   released, rule), repeat)
        zones_s = timed(lambda: answers.evaluate(answers.comparison(od), truth, released, rule),
                        repeat)
        print(f"{key:>10}: every county {parents_s:.3f} s; every tract {zones_s:.3f} s")
        measured += [
            row(f"national: comparison of every county, {key} ({kind}), median of {repeat}",
                parents_s, "s", limit=limit),
            row(f"national: comparison of every tract, {key} ({kind}), median of {repeat}",
                zones_s, "s", limit=limit)]
    return measured


def rows(quick: bool) -> list[dict]:
    print(f"load average {os.getloadavg()[0]:.1f}")
    if quick:
        return ed("ireland_ed", "Dublin City", ["laplace", "oue", "hr", "onthemap"], 3)
    return (ed("ireland_ed", "Dublin City", ["laplace", "oue", "grr", "hr", "ss", "onthemap"], 5)
            + nationwide(["oue", "laplace", "ss", "onthemap"], 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--parent", default="Dublin City")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mechanisms", default="laplace,oue,grr,hr,ss,onthemap")
    parser.add_argument("--national", default="oue,laplace,ss,onthemap",
                        help="mechanisms on the national tracts ('' to skip them)")
    args = parser.parse_args()
    ed(args.dataset, args.parent, args.mechanisms.split(","), args.repeat)
    if args.national:
        nationwide(args.national.split(","), args.repeat)


if __name__ == "__main__":
    main()
