"""Peak memory of imports (issue 20): the estimate made from the header and line count before
parsing (``dpcore.data.importing.reading.parse_memory``) beside what the import really holds.

Each case is imported in a fresh Python process (peak resident memory, VmHWM, minus the
process's peak before the import; ``ru_maxrss`` would be inherited from this process across fork
and exec), with the default budget
(the app's per-session budget) and with no budget, so the figure of a refused file is also its
cost had it been parsed:

- ``dense_matrix``: the issue's 49,000 × 999 matrix, every cell non-zero (≈ 98 MB; 7.9 GB
  before the estimate);
- ``matrix_12k``: 12,000 × 999 (≈ 23 MB);
- ``long_1m`` / ``long_7m``: long files of 1 and 7 million rows (7 M ≈ 94 MB, the upload limit).

Run from the repository root: ``python3 bench/bench_import_memory.py [case…]``. Measurements on
a shared machine are upper bounds (other processes do not add to a process's own peak, but
timings suffer); ``--unbounded`` also imports refused files without the budget (slow: the dense
matrix then takes minutes and ~8 GB).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.suite import row  # noqa: E402
from dpcore.data.od import MEMORY_BUDGET_BYTES  # noqa: E402


def matrix(rows: int, columns: int = 999) -> bytes:
    rng = np.random.default_rng(0)
    header = "zone," + ",".join(f"Z{j}" for j in range(columns)) + "\n"
    patterns = [",".join(map(str, rng.integers(1, 9, columns))) for _ in range(16)]
    return (header + "".join(f"Z{i},{patterns[i % 16]}\n" for i in range(rows))).encode()


def long(rows: int) -> bytes:
    rng = np.random.default_rng(0)
    o, d, c = rng.integers(0, 3000, rows), rng.integers(0, 3000, rows), rng.integers(1, 50, rows)
    return ("origin,destination,count\n"
            + "".join(f"Z{a},Z{b},{x}\n" for a, b, x in zip(o, d, c))).encode()


CASES = {"dense_matrix": lambda: matrix(49_000), "matrix_12k": lambda: matrix(12_000),
         "long_1m": lambda: long(1_000_000), "long_7m": lambda: long(7_000_000)}

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from dpcore.data.importers import ImportFailed, import_od
from dpcore.data.importing import reading
data = open(sys.argv[2], "rb").read()
budget = 1 << 62 if sys.argv[3] == "none" else int(sys.argv[3])
def high_water():  # VmHWM: unlike ru_maxrss, not inherited from the parent across fork + exec
    return next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith("VmHWM"))
before = high_water()
started = time.perf_counter()
try:
    import_od(data, "case.csv", memory_budget=budget)
    outcome = "imported"
except ImportFailed as failure:
    outcome = failure.code
peak = high_water()
text = data.decode()
estimate = reading.parse_memory(len(text), text.count("\\n"), text.split("\\n", 1)[0].count(",") + 1)
print(json.dumps({"seconds": time.perf_counter() - started, "outcome": outcome,
                  "peak_mb": (peak - before) / 1024, "process_peak_mb": peak / 1024,
                  "estimate_mb": estimate / 2 ** 20}))
"""


def run(path: Path, budget: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(path), budget],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def rows(quick: bool) -> list[dict]:
    return main(["matrix_12k", "long_1m"] if quick else [])


def main(argv: list[str]) -> list[dict]:
    measured = []
    unbounded = "--unbounded" in argv
    names = [a for a in argv if not a.startswith("--")] or list(CASES)
    print(f"budget {MEMORY_BUDGET_BYTES / 2 ** 20:,.0f} MB")
    print(f"{'case':14} {'file MB':>8} {'estimate MB':>12} {'outcome':>16} {'import MB':>9} "
          f"{'process MB':>10} {'time s':>7}   unbounded: import MB, outcome")
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            path = Path(folder) / f"{name}.csv"
            path.write_bytes(CASES[name]())
            got = run(path, str(MEMORY_BUDGET_BYTES))
            line = (f"{name:14} {path.stat().st_size / 2 ** 20:8.1f} {got['estimate_mb']:12,.0f} "
                    f"{got['outcome']:>16} {got['peak_mb']:9,.0f} {got['process_peak_mb']:10,.0f} "
                    f"{got['seconds']:7.1f}")
            if unbounded or got["outcome"] == "imported":
                free = got if got["outcome"] == "imported" else run(path, "none")
                line += f"   {free['peak_mb']:,.0f}, {free['outcome']}"
            print(line, flush=True)
            what = f"{name} ({path.stat().st_size / 2 ** 20:.1f} MB, {got['outcome']})"
            measured += [row(f"{what}: estimate before parsing", got["estimate_mb"], "MB"),
                         row(f"{what}: peak the import added (VmHWM)", got["peak_mb"], "MB")]
    return measured


if __name__ == "__main__":
    main(sys.argv[1:])
