"""The release pipeline costs nothing over calling its parts by hand (issue 10).

For Laplace, OUE and HM at county and ED level, median seconds of (a) the parts called directly —
``mechanism.release``, ``postprocess.apply``, ``metrics.compute`` — and (b) ``release.run`` with the
same settings, in the same process, alternating which runs first so that load on the machine and
fresh memory pages hit both alike. Also the mechanism's release alone and ``metrics.compute``
alone, the two figures docs/BENCHMARKS.md quotes. The pipeline is held to the dense path here,
as the parts by hand are (by default it routes ED-sized releases of the mechanisms whose sparse
release is exact to the sparse path).

Run from the repository root: ``python bench/bench_pipeline.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore import release, seeding
from dpcore.data import datasets
from dpcore.mechanisms import postprocess  # noqa: E402
from dpcore.scoring import metrics


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main(repeats: int = 5) -> list[dict]:
    measured = []
    print(f"{'data':8} {'mechanism':9} {'release':>9} {'scoring':>9} {'by hand':>9} "
          f"{'pipeline':>9} {'ratio':>6}   (median s of {repeats})")
    for dataset in ("ireland_county", "ireland_ed"):
        od = datasets.load(dataset)
        truth = od.to_dense()
        metrics.compute(truth, truth.astype(float), od)  # measures trip lengths once, as pages do
        for key in ("laplace", "oue", "hm"):
            spec = release.ReleaseSpec(key, 1.0, postprocess=("base_pos",), seed=1)
            mechanism = spec.build()
            parts, hand, pipe = [], [], []
            for trial in range(repeats):
                rng = seeding.generator(1, "bench", trial)

                def by_hand():
                    start = time.perf_counter()
                    raw = mechanism.release(truth, rng)
                    parts.append(time.perf_counter() - start)
                    released = postprocess.apply("base_pos", raw, od.n)
                    metrics.compute(truth, released, od)
                    hand.append(time.perf_counter() - start)

                def pipeline():
                    # The dense path, as by hand: release.run routes ED-sized releases of the
                    # mechanisms with an exact sparse release to it by default (much faster).
                    pipe.append(_timed(lambda: release.run(od, spec, true_counts=truth,
                                                           sparse=False)))

                # Alternate which goes first: at ED level the first of two 78 MB-vector runs pays
                # for fresh pages, which would otherwise always fall on the same side.
                for step in ((by_hand, pipeline) if trial % 2 == 0 else (pipeline, by_hand)):
                    step()
            scoring = statistics.median(h - p for h, p in zip(hand, parts))  # post + metrics
            by_hand, pipeline = statistics.median(hand), statistics.median(pipe)
            print(f"{dataset[8:]:8} {key:9} {statistics.median(parts):9.4f} {scoring:9.4f} "
                  f"{by_hand:9.4f} {pipeline:9.4f} {pipeline / by_hand:6.2f}")
            what = f"{dataset[8:]} {key}, Base-Pos, scored, median of {repeats}"
            measured += [row(f"{what}: release alone", statistics.median(parts), "s"),
                         row(f"{what}: release.run", pipeline, "s"),
                         row(f"{what}: release.run / parts by hand", pipeline / by_hand, "×",
                             target="no slower than by hand")]
    return measured


def rows(quick: bool) -> list[dict]:
    return main(3 if quick else 5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
