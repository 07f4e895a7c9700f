"""Median load time and file size of each bundled dataset (issue 2: each loads in < 2 s).

Run from the repository root: ``python bench/bench_datasets.py [repeats]``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suite import row  # noqa: E402
from dpcore.data import datasets  # noqa: E402

TARGET_SECONDS = 2.0


def main(repeats: int = 7) -> list[dict]:
    measured = []
    print(f"{'dataset':16} {'median load (s)':>16} {'max (s)':>8} {'files (MB)':>11} "
          f"{'n':>10} {'nonzero':>9}")
    for info in datasets.list_datasets():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            od = datasets.load(info.key)
            times.append(time.perf_counter() - start)
        size = sum(path.stat().st_size for path in info.files) / 1e6
        print(f"{info.key:16} {statistics.median(times):16.3f} {max(times):8.3f} {size:11.2f} "
              f"{od.n:10,} {od.nonzero:9,}")
        measured.append(row(f"load {info.key}, median of {repeats}", statistics.median(times), "s",
                        limit=TARGET_SECONDS))
    return measured


def rows(quick: bool) -> list[dict]:
    return main(3 if quick else 7)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
