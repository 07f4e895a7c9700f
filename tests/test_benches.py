"""The benchmarks still run: every script under bench/ imports and is listed by the one entry
point (``python3 -m bench``), a tiny run writes rows in the common format and the page's generated
section from them, and a quick benchmark runs end to end.

Benchmarks are not run by the suite (their figures belong to a quiet machine), so nothing else
would notice when a change elsewhere breaks one: ``bench_topdown.py`` stopped at its first
publish for a session after publishing began to require a public domain. Nothing is timed here.
"""

import json
import subprocess
import sys
from pathlib import Path

from bench import suite

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(path.stem for path in (ROOT / "bench").glob("bench_*.py"))


def run(*arguments: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_every_benchmark_imports():
    assert len(SCRIPTS) >= 20
    done = run("-c", "; ".join(f"import bench.{name}" for name in SCRIPTS))
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_entry_point_lists_every_script_once():
    assert sorted(b.script for b in suite.BENCHMARKS) == SCRIPTS
    assert len(suite.BY_NAME) == len(suite.BENCHMARKS)
    done = run("-m", "bench", "--list")
    assert done.returncode == 0, done.stderr[-2000:]
    listed = [line.split()[0] for line in done.stdout.splitlines()]
    assert listed == [b.name for b in suite.BENCHMARKS]
    assert any(b.quick for b in suite.BENCHMARKS)
    assert all(b.rows for b in suite.BENCHMARKS if b.quick)  # --quick records every row it runs


def test_each_benchmark_in_the_common_format_has_rows():
    for b in suite.BENCHMARKS:
        source = b.path.read_text(encoding="utf-8")
        assert ("\ndef rows(quick: bool)" in source) == b.rows, b.script


def test_a_tiny_run_records_rows_in_the_common_format_and_writes_the_page(tmp_path):
    results, doc = tmp_path / "results.jsonl", tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# B\n\n{suite.START} (generated) -->\nstale\n{suite.END}\n\nkept\n",
                   encoding="utf-8")
    done = run("-m", "bench", "--only", "datasets", "--quick", "--results", str(results),
               "--doc", str(doc))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [r["name"] for r in rows] == [f"load {key}, median of 3"
                                         for key in ("ireland_county", "ireland_ed", "toy_town")]
    for r in rows:
        assert list(r) == list(suite.FIELDS)
        assert r["benchmark"] == "datasets" and r["unit"] == "s" and r["measured"] > 0
        assert r["target"] == "≤ 2 s" and r["met"] == (r["measured"] <= 2)
        assert r["command"] == "python3 -m bench --only datasets --quick"
        assert r["date"].endswith(" UTC") and " → " in r["load"]
    page = doc.read_text(encoding="utf-8")
    assert "stale" not in page and page.endswith("kept\n")
    assert page.count("`python3 -m bench --only datasets --quick`") == 3


def test_the_page_shows_each_benchmarks_latest_run_only(tmp_path):
    results = tmp_path / "results.jsonl"
    first = {"benchmark": "datasets", "command": "c", "date": "d", "load": "1.0 → 1.0",
             "machine": "m", **suite.row("old row", 1.0, "s", limit=2.0), "run": "2026-01-01"}
    later = {**first, **suite.row("new row", 3.0, "s", limit=2.0), "run": "2026-01-02"}
    suite.append([first, later], results)
    section = suite.section(results)
    assert "new row | 3 s | ≤ 2 s | ✗ |" in section and "old row" not in section


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
