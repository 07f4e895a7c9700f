"""Memory of the Explore page on the electoral-division data: one release's working set, one
session, and ten sessions on one server — the figures behind ``ui/components/budget.py``.

1. In this process (tracemalloc, which sees NumPy's buffers): for each of Explore's default
   mechanisms at ED level, the peak memory of a release + Base-Pos + the metrics, in dense vectors
   (|X| × 8 bytes = 78 MB) — ``dpcore.release.TRANSIENT_VECTORS`` must cover the largest.
2. A real server (streamlit on a free loopback port): its resident memory idle, after one
   browser session opened Explore on the ED data with the default settings, and the peak and
   final values while ``--sessions`` sessions do the same at once, each with its own seed (so
   nothing is shared between them except the data: the worst case for the caches).

    python bench/bench_memory.py [--sessions 10] [--skip-server]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from bench_live import SETTLED, SHOWN, TITLES, start_server  # noqa: E402
from bench_sessions import PeakMemory  # noqa: E402

from dpcore import release
from dpcore.data import datasets  # noqa: E402
from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS, _free_port  # noqa: E402
from ui.components import budget  # noqa: E402
from ui.components.controls import DEFAULT_MECHANISMS  # noqa: E402

MIB = 2 ** 20
WAIT_MS = 600_000


def release_working_sets() -> None:
    od = datasets.load("ireland_ed")
    counts = od.to_dense()
    vector = counts.size * 8
    print(f"ED level: |X| = {counts.size:,}; one dense vector = {vector / MIB:.0f} MiB")
    worst = 0.0
    for key in DEFAULT_MECHANISMS:
        tracemalloc.start()
        started = time.perf_counter()
        release.run(od, release.ReleaseSpec(key, 1.0, postprocess=("base_pos",)),
                    true_counts=counts)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        worst = max(worst, peak / vector)
        print(f"  {key:20s} peak {peak / MIB:6.0f} MiB = {peak / vector:4.1f} vectors "
              f"({time.perf_counter() - started:.1f} s)")
    print(f"largest: {worst:.1f} vectors; release.TRANSIENT_VECTORS = {release.TRANSIENT_VECTORS}")


async def open_explore(browser, base: str, seed: int) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 1600})
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    await page.goto(f"{base}/Explore?dataset=ireland_ed&seed={seed}")
    await page.wait_for_function(SHOWN, arg=[TITLES, "(ε = 1)"], polling="raf", timeout=WAIT_MS)
    await page.wait_for_function(SETTLED, polling="raf", timeout=WAIT_MS)
    await context.close()


async def sessions(base: str, seeds: list[int]) -> None:
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS,
                                          headless=True)
        await asyncio.gather(*(open_explore(browser, base, seed) for seed in seeds))
        await browser.close()


def server_figures(count: int) -> None:
    port = _free_port()
    server = start_server(port)
    base = f"http://127.0.0.1:{port}"
    try:
        with PeakMemory(server.pid) as memory:
            idle = memory.now()
            asyncio.run(sessions(base, [1]))
            one, one_peak = memory.now(), memory.peak
            started = time.monotonic()
            asyncio.run(sessions(base, list(range(2, 2 + count))))
            wall = time.monotonic() - started
            final, peak = memory.now(), memory.peak
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    print(f"server RSS (process tree): idle {idle / MIB:,.0f} MiB; after one ED session with "
          f"Explore's defaults {one / MIB:,.0f} MiB (peak {one_peak / MIB:,.0f})")
    print(f"{count} more ED sessions at once, each its own seed ({wall:.0f} s): peak "
          f"{peak / MIB:,.0f} MiB, after {final / MIB:,.0f} MiB; caches bounded at "
          f"{budget.RELEASE_CACHE_ENTRIES} releases ({budget.RELEASE_CACHE_BYTES / MIB:,.0f} MiB) "
          f"+ {budget.DENSE_CACHE_ENTRIES} dense views; load average {os.getloadavg()[0]:.1f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args(argv)
    release_working_sets()
    if not args.skip_server:
        server_figures(args.sessions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
