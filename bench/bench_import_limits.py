"""Time and peak memory of hostile uploads (issue 11): what each input limit protects against.

Cases, each imported in a fresh Python process so its peak memory (VmHWM) is its own; the time
is the import's wall-clock and CPU time (CPU time is steadier on a shared machine):

- ``wide_header``: a 130 KB file whose header has 65,000 one-letter columns (rejected: more than
  1,000 columns; before the limit, header handling was quadratic);
- ``gzip_bomb``: a 1.9 MB gzip that inflates to 399 MB (rejected after 100 MB of text);
- ``long_label``: a 1 MB file, 300 zones, one of them named by a 1 MB label (rejected: longer
  than 200 characters; before, labels were fixed-width arrays sized by the longest);
- ``labels_at_limit``: 5,000 zones, one with a 200-character label (accepted);
- ``columns_at_limit``: 1,000 columns of which 997 unrecognised, 1,000 rows (accepted: the time
  header handling takes at the limit).

Run from the repository root: ``python bench/bench_import_limits.py [repeats] [root] [case…]``;
``root`` is another checkout of the project to measure instead (e.g. the commit before the
limits); cases default to all.
"""

import json
import statistics
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.suite import row  # noqa: E402


def wide_header() -> bytes:
    header = ",".join("a" for _ in range(65_000))
    return (header + "\n" + header.replace("a", "1") + "\n").encode()


def gzip_bomb(inflated: int = 399 * 2**20) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = b"Maynooth,Naas,1\n" * (2**20 // 16)
    parts = [compressor.compress(b"origin,destination,count\n")]
    parts += [compressor.compress(piece) for _ in range(inflated // len(piece))]
    return b"".join(parts) + compressor.flush()


def long_label() -> bytes:
    rows = [f"Zone {i},Zone {(i * 7) % 300},{i % 5 + 1}" for i in range(300)]
    rows.append("X" * 2**20 + ",Zone 1,1")
    return ("origin,destination,count\n" + "\n".join(rows) + "\n").encode()


def labels_at_limit() -> bytes:
    rows = [f"Zone {i},Zone {(i * 7) % 5000},{i % 5 + 1}" for i in range(5000)]
    rows.append("X" * 200 + ",Zone 1,1")
    return ("origin,destination,count\n" + "\n".join(rows) + "\n").encode()


def columns_at_limit() -> bytes:
    header = ",".join(["origin", "destination", "count"] + [f"x{i}" for i in range(997)])
    rows = [f"Zone {i},Zone {i % 50},{i % 5 + 1}" + ",0" * 997 for i in range(1000)]
    return (header + "\n" + "\n".join(rows) + "\n").encode()


CASES = {"wide_header": wide_header, "gzip_bomb": gzip_bomb, "long_label": long_label,
         "labels_at_limit": labels_at_limit, "columns_at_limit": columns_at_limit}

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from dpcore.data.importers import ImportFailed, import_od
data = sys.stdin.buffer.read()
started, cpu = time.perf_counter(), time.process_time()
try:
    result = import_od(data, sys.argv[2])
    outcome = "imported"
except ImportFailed as failure:
    outcome = failure.code
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak / 1024, "outcome": outcome}))
"""


def measure(name: str, data: bytes, root: Path) -> dict:
    filename = f"{name}.csv.gz" if name == "gzip_bomb" else f"{name}.csv"
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), filename], input=data,
                          capture_output=True, check=True)
    return json.loads(done.stdout)


def rows(quick: bool) -> list[dict]:
    return main(1 if quick else 3)


def main(repeats: int = 3, root: Path = ROOT, cases: list[str] | None = None) -> list[dict]:
    measured = []
    print(f"code measured: {root}")
    print(f"{'case':<16} {'upload':>10} {'outcome':<16} {'median s':>9} {'CPU s':>7} "
          f"{'peak MB':>8}")
    for name in cases or CASES:
        data = CASES[name]()
        runs = [measure(name, data, root) for _ in range(repeats)]
        print(f"{name:<16} {len(data) / 2**20:>8.2f}MB {runs[0]['outcome']:<16} "
              f"{statistics.median(r['seconds'] for r in runs):>9.3f} "
              f"{statistics.median(r['cpu'] for r in runs):>7.3f} "
              f"{statistics.median(r['peak_mb'] for r in runs):>8.0f}")
        what = f"{name} ({len(data) / 2**20:.2f} MB upload, {runs[0]['outcome']})"
        measured += [row(f"{what}: CPU, median of {repeats}",
                         statistics.median(r["cpu"] for r in runs), "s"),
                     row(f"{what}: peak memory (VmHWM), median of {repeats}",
                         statistics.median(r["peak_mb"] for r in runs), "MB")]
    return measured


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3,
         Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else ROOT, sys.argv[3:])
