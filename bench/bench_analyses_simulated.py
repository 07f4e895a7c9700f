"""Cost of the simulated intervals (dpcore.analyses.simulated): K = 199 releases of the stand-in
and every answer on each, per mechanism, on the county table and on ED tables of growing size.

    python3 bench/bench_analyses_simulated.py [--quick]

The answer set is the CLI's default and the Places page's heaviest: inflow, outflow and
live-and-work of one zone and of every zone (the comparison). "Cold" is a first answer set on a
release (the K releases drawn), "warm" a second one on the same release (a page rerun with
another selection: the kept draws re-summed). The one dense ED release (9.8 M cells) is timed
alone: K of them is what the size limit spares a page.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore import release  # noqa: E402
from dpcore.analyses import answers, selection as sel, simulated  # noqa: E402
from dpcore.data import datasets  # noqa: E402

#: Norm releases: under Base these mechanisms have closed forms (dpcore.analyses.intervals).
CASES = [("hr", "norm"), ("hm", "norm"), ("dbitflip", "norm"), ("ss", "norm"), ("cms", "norm"),
         ("hcms", "norm"), ("laplace", "norm"), ("grr", "norm")]
QUICK = [("dbitflip", "norm"), ("hcms", "norm"), ("laplace", "norm")]
#: ED tables of growing size (counties' EDs): 5,476, 19,881 (at the live limit) and 44,944 cells.
ED_PARTS = [("Leitrim",), ("Leitrim", "Longford"), ("Leitrim", "Longford", "Sligo")]
#: A live page's budget for one mechanism's first answer set.
LIVE_SECONDS = 2.0


def answer_set(od) -> list[answers.Query]:
    chosen = sel.zones(od, [od.destinations.ids[0]])
    return answers.flows(od, chosen)[:3] + answers.comparison(od)


def timed(od, key: str, post: str) -> tuple[float, float]:
    truth = od.to_dense()
    spec = release.ReleaseSpec(key, 1.0, (), (post,), seed=1)
    released = release.run(od, spec, true_counts=truth, score=False,
                           sparse=False).outputs[post].released
    queries = answer_set(od)
    simulated._KEPT.clear()
    started = time.perf_counter()
    answers.evaluate(queries, truth, released, simulated.rule(od, spec, released, live=False))
    cold = time.perf_counter() - started
    started = time.perf_counter()
    answers.evaluate(queries, truth, released, simulated.rule(od, spec, released, live=False))
    return cold, time.perf_counter() - started


def rows(quick: bool) -> list[dict]:
    measured = []
    county = datasets.load("ireland_county")
    for key, post in QUICK if quick else CASES:
        cold, warm = timed(county, key, post)
        print(f"county ({county.domain_size:,} cells) {key} {post}: cold {cold:.2f} s, "
              f"warm {warm:.3f} s")
        what = f"county, {key} {post}: simulated intervals of every zone's flows"
        measured += [row(f"{what}, first ({simulated.DRAWS} releases)", cold, "s",
                         limit=LIVE_SECONDS),
                     row(f"{what}, again (kept draws)", warm, "s")]
    if quick:
        return measured
    ed = datasets.load("ireland_ed")
    for parts in ED_PARTS:
        od = ed.subset_by_parent(list(parts))
        for key, post in (("dbitflip", "norm"), ("hr", "norm"), ("laplace", "norm")):
            cold, _ = timed(od, key, post)
            print(f"EDs of {', '.join(parts)} ({od.domain_size:,} cells) {key} {post}: "
                  f"cold {cold:.2f} s")
            measured.append(row(f"EDs of {', '.join(parts)} ({od.domain_size:,} cells), {key} "
                                f"{post}: simulated intervals, first", cold, "s"))
    started = time.perf_counter()
    release.run(ed, release.ReleaseSpec("laplace", 1.0, (), ("norm",), seed=1), score=False,
                sparse=False, keep_raw=False)
    one = time.perf_counter() - started
    print(f"ED ({ed.domain_size:,} cells): one dense Laplace + Norm release {one:.2f} s, "
          f"so {simulated.DRAWS} of them ≈ {simulated.DRAWS * one / 60:.1f} min")
    measured.append(row(f"ED ({ed.domain_size:,} cells): one dense release (Laplace, Norm); "
                        f"the simulation needs {simulated.DRAWS}", one, "s"))
    return measured


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    rows(parser.parse_args().quick)
