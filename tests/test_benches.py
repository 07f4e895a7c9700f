"""The benchmarks still run: every script under bench/ imports, and a quick one runs end to end.

Benchmarks are not run by the suite (their figures belong to a quiet machine), so nothing else
would notice when a change elsewhere breaks one: ``bench_topdown.py`` stopped at its first
publish for a session after publishing began to require a public domain. Nothing is timed here.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(path.stem for path in (ROOT / "bench").glob("bench_*.py"))


def run(*arguments: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_every_benchmark_imports():
    assert len(SCRIPTS) >= 20
    done = run("-c", "; ".join(f"import bench.{name}" for name in SCRIPTS))
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_topdown_benchmark_runs_its_quick_part():
    done = run("bench/bench_topdown.py", "--quick")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "same output: True" in done.stdout
    assert "TopDown publish, counties" in done.stdout


def test_the_ed_change_profile_runs_on_a_small_dataset():
    done = run("bench/bench_ed_change_profile.py", "--dataset", "toy_town", "--repeat", "1",
               "--top", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    for step in ("release hm", "metrics laplace", "ordering grr", "total (median of the changes)"):
        assert step in done.stdout, done.stdout[-2000:]
