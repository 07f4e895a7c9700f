"""The benchmarks as one suite: which there are, how each runs, and the one format they report in.

``python3 -m bench`` (``bench/__main__.py``) is the entry point. A benchmark in the common format
has a ``rows(quick)`` function in its script returning measurements made with :func:`row`; the
suite runs it in a fresh process (so no benchmark inherits another's caches or memory), adds what
every row carries — the command that reproduces it, the date and the machine's load before and
after — appends the rows to ``bench/results.jsonl`` (JSON lines) and regenerates the marked
section of ``docs/BENCHMARKS.md`` from that file. Benchmarks not yet converted still run through
the entry point (``--only NAME``) and print their own tables; no row is recorded for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results.jsonl"
DOC = ROOT / "docs" / "BENCHMARKS.md"
START, END = "<!-- generated:start", "<!-- generated:end -->"
#: Every recorded row has these keys (``met`` is True/False against ``target``, None without one).
FIELDS = ("benchmark", "name", "measured", "unit", "target", "met", "command", "date", "load",
          "machine", "run")


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    what: str
    quick: bool = False  # part of ``--quick``: seconds to a minute or two of CPU
    rows: bool = False   # speaks the common format (its script has ``rows(quick)``)

    @property
    def path(self) -> Path:
        return ROOT / "bench" / f"{self.script}.py"


BENCHMARKS = (
    Benchmark("datasets", "bench_datasets", "load time of each bundled dataset", True, True),
    Benchmark("import", "bench_import", "import of 300,000-row long, POWSCAR and LODES files", True,
              True),
    Benchmark("learn-theory", "bench_learn_theory", "the Learn page's theory calls", True, True),
    Benchmark("planner", "bench_planner", "the ε planner: closed form, searched, Find ε", True,
              True),
    Benchmark("pipeline", "bench_pipeline", "the release pipeline against its parts by hand",
              True, True),
    Benchmark("flowmap", "bench_flowmap", "server cost of a flow map of 100–5,000 lines", True,
              True),
    Benchmark("topdown", "bench_topdown", "TopDown (InfTDA) publishing: time and accuracy", True,
              True),
    Benchmark("heavy-hitters", "bench_heavy_hitters", "CPU of PEM and TreeHist runs", True, True),
    Benchmark("classroom-intervals", "bench_classroom_intervals",
              "the Classroom's exact intervals per teacher refresh", True, True),
    Benchmark("geography", "bench_geography", "zone choropleth and OD heat map", True, True),
    Benchmark("floor", "bench_floor", "the Hadamard release and dense ranks of one ε change",
              True, True),
    Benchmark("import-limits", "bench_import_limits", "time and memory of hostile uploads", True,
              True),
    Benchmark("import-memory", "bench_import_memory",
              "peak memory of imports against the estimate", True, True),
    Benchmark("mechanisms", "bench_mechanisms",
              "every mechanism's fast release and per-user run; pure-LDP beside them", rows=True),
    Benchmark("routing", "bench_routing", "where the sparse release beats the dense one",
              rows=True),
    Benchmark("huge", "bench_huge", "national synthetic data and the sparse release", rows=True),
    Benchmark("cli-huge", "bench_cli_huge", "the command line on an 80,000-zone file", rows=True),
    Benchmark("ed-change-profile", "bench_ed_change_profile",
              "where one ED ε change on Explore spends its CPU"),
    Benchmark("publish", "bench_publish", "publishing through OpenDP: time and memory per cell",
              rows=True),
    Benchmark("analyses", "bench_analyses",
              "the planner's analyses of one selection and of every zone (ED, national)",
              rows=True),
    Benchmark("analyses-simulated", "bench_analyses_simulated",
              "simulated intervals: 199 releases of a public stand-in per mechanism", True, True),
    Benchmark("onthemap", "bench_onthemap",
              "OnTheMap's synthesizer: one release, county, ED and national", rows=True),
    Benchmark("thesis", "bench_thesis", "reproduce-thesis as a user runs it (≤ 3 min, 2 cores)"),
    Benchmark("thesis-reasons", "bench_thesis_reasons",
              "CPU of the thesis report's computed data notes"),
    Benchmark("live", "bench_live", "Explore in Chromium: change to new chart"),
    Benchmark("sessions", "bench_sessions", "20 browser sessions on one server, isolation"),
    Benchmark("protocol-load", "bench_protocol_load",
              "many sessions over Streamlit's websocket protocol, one or more replicas"),
    Benchmark("soak", "bench_soak", "one server's memory over 200 sessions"),
    Benchmark("memory", "bench_memory", "Explore's memory on the ED data, one and ten sessions"),
    Benchmark("classroom", "bench_classroom", "60 phones in a minute against the teacher's screen"),
    Benchmark("lecture-hall", "bench_lecture_hall",
              "1,000 protocol-level phones in two minutes on two replicas, teacher's screen"),
)
BY_NAME = {b.name: b for b in BENCHMARKS}


def row(name: str, measured: float, unit: str, *, limit: float | None = None,
        minimum: float | None = None, target: str | None = None) -> dict:
    """One measurement. ``limit`` is an upper bound in ``unit`` (the target reads "≤ limit unit"
    and ``met`` is decided), ``minimum`` a lower bound likewise; ``target`` is a target in words
    that no single number decides."""
    met, gap = None, "" if unit in ("", "×") else " "
    if limit is not None:
        target, met = f"≤ {number(limit)}{gap}{unit}", bool(measured <= limit)
    elif minimum is not None:
        target, met = f"≥ {number(minimum)}{gap}{unit}", bool(measured >= minimum)
    return {"name": name, "measured": float(measured), "unit": unit, "target": target,
            "met": met}


def command(benchmark: Benchmark, quick: bool) -> str:
    return f"python3 -m bench --only {benchmark.name}" + (" --quick" if quick else "")


def load() -> float:
    return os.getloadavg()[0]


def child(name: str, quick: bool, out: str) -> None:
    """In a fresh process: the benchmark's rows, written to ``out`` as JSON."""
    import importlib

    module = importlib.import_module(f"bench.{BY_NAME[name].script}")
    Path(out).write_text(json.dumps(module.rows(quick)), encoding="utf-8")


def run(benchmark: Benchmark, quick: bool, run_id: str) -> list[dict]:
    """Run one benchmark in a fresh process (its own tables go to this terminal) and return its
    rows in the common format; a benchmark without ``rows`` runs as its script with defaults."""
    before, started = load(), time.gmtime()
    if not benchmark.rows:
        subprocess.run([sys.executable, str(benchmark.path)], cwd=ROOT, check=True)
        return []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rows.json"
        code = (f"from bench import suite; suite.child({benchmark.name!r}, {quick!r}, "
                f"{str(out)!r})")
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
        measured = json.loads(out.read_text(encoding="utf-8"))
    common = {"benchmark": benchmark.name, "command": command(benchmark, quick),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", started),
              "load": f"{before:.1f} → {load():.1f}",
              "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
              "run": run_id}
    return [{**common, **r} for r in measured]


def append(rows: list[dict], path: Path = RESULTS) -> None:
    with path.open("a", encoding="utf-8") as file:
        for r in rows:
            file.write(json.dumps({key: r.get(key) for key in FIELDS}, ensure_ascii=False) + "\n")


def latest(path: Path = RESULTS) -> dict[str, list[dict]]:
    """Each benchmark's rows from its latest run, in the registry's order."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()] if path.exists() else []
    last = {}
    for r in rows:
        last[r["benchmark"]] = max(last.get(r["benchmark"], ""), r["run"])
    return {b.name: [r for r in rows if r["benchmark"] == b.name and r["run"] == last[b.name]]
            for b in BENCHMARKS if b.name in last}


def number(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def section(path: Path = RESULTS) -> str:
    """The generated part of docs/BENCHMARKS.md: one table per benchmark, its latest run."""
    lines, runs = [], latest(path)
    for name, rows in runs.items():
        b = BY_NAME[name]
        machines = ", ".join(sorted({r["machine"] for r in rows}))
        lines += ["", f"### {name}: {b.what} (`bench/{b.script}.py`)", "",
                  f"On {machines}; load: the 1-minute load average before → after the "
                  "benchmark.",
                  "", "| measurement | measured | target | | command | date | load |",
                  "|---|---:|---|---|---|---|---|"]
        for r in rows:
            verdict = {True: "✓", False: "✗", None: ""}[r["met"]]
            gap = "" if r["unit"] in ("", "×") else " "
            lines.append(f"| {r['name']} | {number(r['measured'])}{gap}{r['unit']} | "
                         f"{r['target'] or '—'} | {verdict} | `{r['command']}` | {r['date']} | "
                         f"{r['load']} |")
    unrun = [b for b in BENCHMARKS if b.rows and b.name not in runs]
    if unrun:
        lines += ["", "### In the common format, no run recorded yet", "",
                  "Their latest figures are the dated ones under \"Earlier measurements\" below "
                  "and in the docs pages that quote them.", ""]
        lines += [f"- `{b.name}` (`bench/{b.script}.py`): {b.what}" for b in unrun]
    pending = [b for b in BENCHMARKS if not b.rows]
    lines += ["", "### Not yet in the common format", "",
              "These run through `python3 -m bench --only NAME` and print their own tables; their "
              "figures so far are the dated ones under \"Earlier measurements\" below and in the "
              "docs pages that quote them.", ""]
    lines += [f"- `{b.name}` (`bench/{b.script}.py`): {b.what}" for b in pending]
    return "\n".join(lines) + "\n"


def render(doc: Path = DOC, path: Path = RESULTS) -> None:
    """Replace the marked section of ``doc`` with the tables made from ``path``."""
    text = doc.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{doc}: no {START} … {END} section to write the results into")
    head, rest = text.split(START, 1)
    marker_line, _ = rest.split("\n", 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + START + marker_line + "\n" + section(path) + "\n" + END + tail,
                   encoding="utf-8")
