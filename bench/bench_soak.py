"""Soak test of one server's memory: 200 sessions arriving and leaving, without browsers.

Sessions (:class:`bench.bench_protocol_load.Session`: Streamlit's websocket protocol) arrive one
every ``--every`` seconds (default 1: the run outlasts Streamlit's 120 s hold on closed
sessions, so sessions are dropped while others arrive), at most ``--concurrent`` open at once.
Each opens Explore at county level, changes ε ``--changes`` times (values from a pool of
``--pool``, so the shared caches both hit and miss, as in a class) and closes its websocket. The
server's resident memory (with its children) is sampled every second. Streamlit keeps a closed
session's state for ``server.disconnectedSessionTTL`` (120 s by default), so the sessions that
left in the last two minutes still count: that is what a server in use holds.

Printed: the memory after each quarter of the sessions, the peak, and the growth from the median
over the second quarter (caches warm) to the median over the last quarter. The run passes when that
growth is within ``--band`` (default 15 %): with the timed collection (dpcore/collector.py) memory
should level off once the caches are full, not grow with the number of sessions served.

    python bench/bench_soak.py [--sessions 200] [--every 1] [--concurrent 20] [--changes 2]
                               [--limit 900]
    python bench/bench_soak.py --url ws://127.0.0.1:8501 --pid 1234   # a server already running

Loopback only: the server is started on 127.0.0.1 on a free port (or ``--url``), every wait has
a timeout, the whole run stops after ``--limit`` seconds or when the server passes
``--max-rss-gb``. On a machine shared with other work the timings are upper bounds; the memory
figures are the server's own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_live import start_server  # noqa: E402
from bench.bench_protocol_load import SCENARIOS, Session, rss_bytes  # noqa: E402
from tests.browser.conftest import _free_port  # noqa: E402

GB = 2**30


async def visit(url: str, query: str, epsilons: list[float], timeout: float,
                errors: list[str]) -> None:
    """One session: open the page, change ε, leave."""
    try:
        async with Session(url, query, timeout) as session:
            await session.rerun()
            if session.epsilon_id is None:
                raise RuntimeError("no ε box on the page")
            for epsilon in epsilons:
                await session.rerun(epsilon)
            if session.exceptions:
                errors.append(f"exception on the page: {session.exceptions[0][:120]}")
    except (OSError, asyncio.TimeoutError, RuntimeError,
            websockets.exceptions.WebSocketException) as error:
        errors.append(f"{type(error).__name__}: {error}"[:160])


async def soak(url: str, pid: int | None, args) -> tuple[list[tuple[float, int, int]], list[str]]:
    """Samples (seconds, bytes, sessions finished) and the errors."""
    query, errors, samples = SCENARIOS[args.scenario], [], []
    pool = [round(0.5 + 0.25 * i, 2) for i in range(args.pool)]
    finished = 0
    gate = asyncio.Semaphore(args.concurrent)
    started = time.perf_counter()

    async def one(index: int) -> None:
        nonlocal finished
        await asyncio.sleep(index * args.every)
        async with gate:
            epsilons = [pool[(index * args.changes + c) % len(pool)] for c in range(args.changes)]
            await visit(url, query, epsilons, args.timeout, errors)
            finished += 1

    tasks = [asyncio.create_task(one(i)) for i in range(args.sessions)]
    try:
        while not all(task.done() for task in tasks):
            memory = rss_bytes(pid)
            samples.append((time.perf_counter() - started, memory, finished))
            if memory > args.max_rss_gb * GB:
                raise TimeoutError(f"server memory {memory / GB:.2f} GB > {args.max_rss_gb} GB")
            if time.perf_counter() - started > args.limit:
                raise TimeoutError(f"time limit {args.limit:.0f} s")
            await asyncio.sleep(1.0)
    except TimeoutError as reason:
        errors.append(f"abandoned: {reason}")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    samples.append((time.perf_counter() - started, rss_bytes(pid), finished))
    return samples, errors


def report(samples: list[tuple[float, int, int]], errors: list[str], args) -> bool:
    """Print the figures; True when memory stayed within the band."""
    total = args.sessions

    def median_between(low: float, high: float) -> float:
        chosen = [m for _, m, done in samples if low * total <= done <= high * total]
        return statistics.median(chosen) if chosen else float("nan")

    print(f"{args.scenario}: {samples[-1][2]} of {total} sessions, one every {args.every:g} s, "
          f"at most {args.concurrent} at once, {args.changes} ε changes each, "
          f"{samples[-1][0]:.0f} s")
    for quarter in (1, 2, 3, 4):
        at = next((m for _, m, done in samples if done >= quarter * total / 4), samples[-1][1])
        print(f"    after {quarter * total // 4:3d} sessions: {at / GB:.2f} GB")
    peak = max(m for _, m, _ in samples)
    warm, last = median_between(0.25, 0.5), median_between(0.75, 1.0)
    growth = last / warm - 1
    flat = growth <= args.band and not errors
    print(f"    peak {peak / GB:.2f} GB; median {warm / GB:.2f} GB over sessions "
          f"{total // 4}–{total // 2}, {last / GB:.2f} GB over {3 * total // 4}–{total}: "
          f"{growth:+.1%} (band ±{args.band:.0%}) {'✓ flat' if flat else '✗'}")
    print(f"    errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    return flat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--every", type=float, default=1.0, help="seconds between arrivals")
    parser.add_argument("--changes", type=int, default=2, help="ε changes per session")
    parser.add_argument("--pool", type=int, default=24, help="distinct ε values used")
    parser.add_argument("--scenario", choices=list(SCENARIOS), default="county")
    parser.add_argument("--band", type=float, default=0.15,
                        help="largest growth of memory, last quarter against second")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per rerun")
    parser.add_argument("--limit", type=float, default=900, help="seconds for the whole run")
    parser.add_argument("--max-rss-gb", type=float, default=4.0)
    parser.add_argument("--url", help="ws://host:port of a server already running (loopback)")
    parser.add_argument("--pid", type=int,
                        help="with --url: the server process (and its children) whose memory to sample")
    args = parser.parse_args()
    server = None
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        port = _free_port()
        server = start_server(port)
        url, pid = f"ws://127.0.0.1:{port}", server.pid
    try:
        samples, errors = asyncio.run(soak(url, pid, args))
        flat = report(samples, errors, args)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(10)
            except Exception:  # noqa: BLE001 — make sure it is gone
                os.killpg(server.pid, signal.SIGKILL)
    sys.exit(0 if flat else 1)


if __name__ == "__main__":
    main()
