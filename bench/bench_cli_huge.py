"""The command line on a national-scale file (issue 21): ``release``, ``sweep`` and
``heavy-hitters`` on an 80,000-zone, 3.1 M-flow long CSV (6.4·10⁹ cells), read as the Data page
reads it and released by the sparse path.

Target: release and sweep each in ≤ 60 s and ≤ 4 GB, end to end (the import of the 82 MB file
included: the importer tries the dense import first, as the Data page does, then the sparse one).

The file is made here, once, in a temporary folder: the national synthetic generator
(:mod:`dpcore.data.national`) at 80,000 tracts, of whose ≈ 7.5 M flows a fixed random 3.1 M are
kept (the Data page's 100 MB upload limit holds about that many rows of 11-digit tract ids).
Each command runs in its own process; the figures are its wall time and peak resident memory
(the child's own ``ru_maxrss``). On a shared machine they are upper bounds.

Run from the repository root: ``python bench/bench_cli_huge.py [folder]`` (the file is kept in
``folder`` when given, so that a second run skips making it).
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.suite import row  # noqa: E402
from dpcore.data import national  # noqa: E402

ZONES, FLOWS = 80_000, 3_100_000


def make_file(path: Path) -> Path:
    """The 80,000-zone, 3.1 M-flow long CSV (deterministic)."""
    if path.exists():
        return path
    started = time.perf_counter()
    od = national.generate(ZONES / national.TRACTS)
    keep = np.sort(np.random.default_rng(21).choice(od.nonzero, FLOWS, replace=False))
    frame = od.to_frame().iloc[keep][["origin", "destination", "count"]]
    frame.to_csv(path, index=False)
    print(f"made {path} ({path.stat().st_size / 2**20:.0f} MB, {FLOWS:,} flows) in "
          f"{time.perf_counter() - started:.0f} s")
    return path


#: Runs one command in a fresh process and reports that process's own peak memory last.
CHILD = ("import resource, sys\n"
         "from dpcore.interfaces import cli\n"
         "code = cli.main(sys.argv[1:])\n"
         "print('peak_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
         "sys.exit(code)\n")


def run(*argv) -> tuple[float, float, str]:
    """Wall seconds, peak GB and the last output line of ``python -m dpcore argv``."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *map(str, argv)], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, argv))} failed:\n{done.stderr}")
    peak_kb = int(done.stderr.strip().splitlines()[-1].split()[1])
    return seconds, peak_kb / 2**20, done.stdout.strip().splitlines()[-1]


def rows(quick: bool) -> list[dict]:
    return main()


def main(folder: str | None = None) -> list[dict]:
    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(folder or scratch)
        where.mkdir(parents=True, exist_ok=True)
        path = make_file(where / "national_80k.csv")
        commands = {
            "release (OUE)": ("release", "--file", path, "--mechanism", "oue", "--epsilon", 1,
                              "--seed", 1, "--out", where / "release.csv"),
            "sweep (Laplace, OUE, GRR × ε 0.5, 1, 2)": (
                "sweep", "--file", path, "--mechanisms", "laplace,oue,grr",
                "--epsilons", "0.5,1,2", "--out", where / "sweep.csv"),
            "heavy-hitters (PEM, k 10)": ("heavy-hitters", "--file", path, "--protocol", "pem",
                                          "--epsilon", 4, "--k", 10, "--seed", 1,
                                          "--out", where / "top.csv")}
        print(f"{'command':42s} {'wall s':>7s} {'peak GB':>8s}  target ≤ 60 s, ≤ 4 GB")
        for name, argv in commands.items():
            seconds, peak, line = run(*argv)
            print(f"{name:42s} {seconds:7.1f} {peak:8.2f}  {line[:110]}")
            measured += [row(f"{name} on the 80,000-zone file: wall, import included", seconds,
                             "s", limit=60),
                         row(f"{name} on the 80,000-zone file: peak memory", peak, "GB",
                             limit=4)]
    return measured


if __name__ == "__main__":
    main(*sys.argv[1:2])
