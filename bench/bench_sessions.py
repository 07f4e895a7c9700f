"""Twenty people on one server: seconds from a change of ε to the new Explore chart, the server's
peak memory, and that no session ever shows another's data.

Starts the app on a free loopback port and opens ``--sessions`` browser sessions (Playwright
contexts in Debian's Chromium: separate cookies and Streamlit sessions). Each opens Explore on the
county data and changes ε ``--rounds`` times, every value new (no cache hit); meanwhile
``--uploaders`` of them first upload a small file whose zones have names no other file has and use
it, so their ε changes run on their upload. Times run on the browser's clock (see
``bench_live.py``), from the Enter that commits ε to the frame in which the new chart's title is in
the page. The server's memory is the resident size of its process tree, sampled every 0.2 s.

Server CPU: the user + system CPU seconds of the server process from the moment every session
starts changing ε until the last has its charts, divided by the number of ε changes, beside the
same figure for the browsers (the Playwright driver and Chromium, this script's other children).
Streamlit runs every session's rerun in one Python process, so with all sessions changing ε
together a change waits for roughly everyone's server CPU; the browsers compete for the same cores.

Isolation: after the rounds, every session's page is searched for every upload's zone names; an
uploader must see its own (the busiest-commute bars name them) and nobody another's.

    python bench/bench_sessions.py [--sessions 20] [--uploaders 2] [--rounds 3]

Targets (issue 11): p95 ≤ 3 s at county level on a 2-core machine, no error, no cross-session
data. Bounded: every wait has a timeout and the whole run stops after ``--limit`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from bench_live import COMMIT_CLOCK, DRAWN_CLOCK, SETTLED, SHOWN, TITLES, start_server  # noqa: E402

from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS, _free_port  # noqa: E402

WAIT_MS = 180_000  # per wait: 20 sessions on 2 cores can queue behind each other


class PeakMemory:
    """Samples the resident memory of a process and its children in a thread; keeps the peak."""

    def __init__(self, pid: int, every: float = 0.2):
        self.root, self.every, self.peak, self.samples = psutil.Process(pid), every, 0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> int:
        total = 0
        for process in [self.root, *self.root.children(recursive=True)]:
            try:
                total += process.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            value = self.now()
            self.samples.append(value)
            self.peak = max(self.peak, value)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def cpu_seconds(processes) -> float:
    """User + system CPU seconds of these processes (those that have exited count 0)."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


class CpuPhase:
    """CPU seconds of the server and of the browsers between :meth:`start` (every session begins
    changing ε) and the last :meth:`finish` (every session is done or has failed)."""

    def __init__(self, server_pid: int, sessions: int):
        self.server, self.left = psutil.Process(server_pid), sessions
        self.marks: list[tuple[float, float, float]] = []
        self.ended = asyncio.Event()  # sessions keep their pages open until then: a closed
        # page's renderer exits, and its CPU seconds with it

    def _mark(self) -> None:
        server = [self.server, *self.server.children(recursive=True)]
        others = [p for p in psutil.Process().children(recursive=True)
                  if p.pid not in {s.pid for s in server}]
        self.marks.append((cpu_seconds(server), cpu_seconds(others), time.monotonic()))

    def start(self) -> None:
        self._mark()

    def finish(self) -> None:
        self.left -= 1
        if self.left == 0:
            if self.marks:
                self._mark()
            self.ended.set()

    def figures(self) -> tuple[float, float, float] | None:
        """Server CPU s, browsers' CPU s and wall seconds of the phase (None: it never ended)."""
        if len(self.marks) != 2:
            return None
        (s0, b0, t0), (s1, b1, t1) = self.marks
        return s1 - s0, b1 - b0, t1 - t0


def upload_csv(session: int) -> tuple[str, bytes, list[str]]:
    """A small long-format file whose zone names belong to this session alone."""
    names = [f"Qxzv{session:02d}{place}" for place in ("Mill", "Quay", "Ferry", "Glen")]
    rows = ["origin,destination,count"]
    for i, origin in enumerate(names):
        for j, destination in enumerate(names):
            rows.append(f"{origin},{destination},{40 + 13 * i + 7 * j}")
    return f"session{session}.csv", ("\n".join(rows) + "\n").encode(), names


async def use_upload(page, base: str, session: int) -> list[str]:
    name, content, names = upload_csv(session)
    await page.goto(f"{base}/Data")
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
    await uploader.locator("input[type=file]").set_input_files(
        {"name": name, "mimeType": "text/csv", "buffer": content})
    await page.get_by_role("button", name="Use this dataset").click(timeout=WAIT_MS)
    await page.get_by_text("This is the current dataset on every page").wait_for(timeout=WAIT_MS)
    return names


async def change_epsilon(page, value: str) -> float:
    """Type ε, press Enter; seconds from the Enter to the chart titled with the new ε."""
    box = page.get_by_role("spinbutton", name="ε, typed", exact=True)
    await box.fill(value)
    await box.press("Enter")
    await page.wait_for_function(SHOWN, arg=[TITLES, f"(ε = {value})"], polling="raf",
                                 timeout=WAIT_MS)
    commit, shown = await page.evaluate("[window.__commit, window.__shown]")
    return (shown - commit) / 1000


async def session(browser, base: str, number: int, uploader: bool, rounds: int, gate: Gate,
                  phase: CpuPhase, results: dict) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 1600})
    context.set_default_timeout(WAIT_MS)  # 20 pages loading at once on 2 cores
    page = await context.new_page()
    await page.add_init_script(DRAWN_CLOCK)
    errors, waited = [], False
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        if uploader:  # through the app's own link: a page load would start a new session
            names = await use_upload(page, base, number)
            await page.locator(".st-key-app_menu").get_by_role("link", name="Explore").click()
        else:
            names = []
            await page.goto(f"{base}/Explore?dataset=ireland_county")
        await page.evaluate(COMMIT_CLOCK)
        await page.wait_for_function(SHOWN, arg=[TITLES, "(ε = 1)"], polling="raf",
                                     timeout=WAIT_MS)
        waited = True
        await gate.wait()  # every session changes ε at the same time
        times = []
        try:
            for r in range(rounds):
                times.append(await change_epsilon(page,
                                                  f"{1 + number / 100 + (r + 1) / 1000:g}"))
        finally:
            phase.finish()
        await page.wait_for_function(SETTLED, polling="raf", timeout=WAIT_MS)
        exceptions = await page.get_by_test_id("stException").count()
        results[number] = {"times": times, "names": names, "text": await page.content(),
                           "errors": errors + ([f"{exceptions} exception(s) shown"]
                                               if exceptions else [])}
    except Exception as error:  # noqa: BLE001 — a failed session is reported, not fatal
        if not waited:
            gate.arrive()
            phase.finish()
        results[number] = {"times": [], "names": [], "text": "",
                           "errors": errors + [f"{type(error).__name__}: {error}"]}
    finally:
        await phase.ended.wait()
        await context.close()


class Gate:
    """Releases every session at once, when all have drawn their first chart (or failed)."""

    def __init__(self, total: int, on_open=None):
        self.total, self.arrived, self.open = total, 0, asyncio.Event()
        self.on_open = on_open

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.total:
            if self.on_open is not None:
                self.on_open()
            self.open.set()

    async def wait(self) -> None:
        self.arrive()
        await self.open.wait()


async def drive(base: str, sessions: int, uploaders: int, rounds: int, phase: CpuPhase) -> dict:
    results: dict = {}
    gate = Gate(sessions, phase.start)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS,
                                          headless=True)
        await asyncio.gather(*(session(browser, base, i, i < uploaders, rounds, gate, phase,
                                       results)
                               for i in range(sessions)))
        await browser.close()
    return results


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: a reported p95 is a time some change took)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 1)) - 1))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--uploaders", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=float, default=900, help="seconds for the whole run")
    args = parser.parse_args(argv)
    port = _free_port()
    server = start_server(port)
    try:
        phase = CpuPhase(server.pid, args.sessions)
        with PeakMemory(server.pid) as memory:
            idle = memory.now()
            started = time.monotonic()
            results = asyncio.run(asyncio.wait_for(
                drive(f"http://127.0.0.1:{port}", args.sessions, args.uploaders, args.rounds,
                      phase), args.limit))
            wall = time.monotonic() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    times = [t for r in results.values() for t in r["times"]]
    errors = {n: r["errors"] for n, r in results.items() if r["errors"]}
    uploads = {n: r["names"] for n, r in results.items() if r["names"]}
    leaks, missing = [], []
    for n, r in results.items():
        for owner, names in uploads.items():
            seen = [name for name in names if name in r["text"]]
            if owner != n and seen:
                leaks.append(f"session {n} shows session {owner}'s zones {seen}")
            if owner == n and not seen:
                missing.append(f"session {n} does not show its own upload")
    print(f"{args.sessions} sessions ({args.uploaders} on their own upload), {args.rounds} ε "
          f"changes each, Explore at county level, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; wall {wall:.0f} s")
    if times:
        print(f"time to the new chart: median {statistics.median(times):.2f} s, "
              f"p95 {percentile(times, 0.95):.2f} s, max {max(times):.2f} s "
              f"({len(times)} changes)")
    cpu = phase.figures()
    if cpu and times:
        server_cpu, browser_cpu, seconds = cpu
        print(f"CPU while the sessions changed ε ({seconds:.0f} s, {len(times)} changes): server "
              f"{server_cpu:.1f} s = {server_cpu / len(times):.3f} s per ε change "
              f"({server_cpu / seconds:.0%} of one core; one Python process); browsers "
              f"{browser_cpu:.1f} s = {browser_cpu / len(times):.3f} s per change")
    print(f"server memory (RSS, process tree): idle {idle / 2**20:,.0f} MiB, peak "
          f"{memory.peak / 2**20:,.0f} MiB")
    print(f"errors: {errors or 'none'}")
    print(f"cross-session data: {leaks or 'none'}; uploads seen by their owner: "
          f"{'all' if not missing else missing}")
    return 0 if not errors and not leaks and not missing else 1


if __name__ == "__main__":
    raise SystemExit(main())
