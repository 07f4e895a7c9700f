"""Live feel of the Explore page in a real browser: seconds from a change of ε or mechanism to the
new chart, and to the end of the page's rerun.

Starts the app on a free port, drives Debian's Chromium with Playwright and prints one line per
interaction. Targets (issue 4): county level ≤ 1 s, ED level ≤ 3 s for a single mechanism.

    python bench/bench_live.py [--repeat 3]

Each change uses a value not seen before (fresh ε), so nothing comes from the cache; "cached"
lines switch back to an earlier value.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from dpcore import mechanisms  # noqa: E402
from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS, VIEWPORT, _free_port  # noqa: E402

expect.set_options(timeout=120_000)


def start_server(port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return server
        except OSError:
            time.sleep(0.25)
    os.killpg(server.pid, signal.SIGKILL)
    raise RuntimeError("the app did not start")


def title(page, text: str):
    return page.locator(".js-plotly-plot .gtitle", has_text=text).first


def settle(page) -> None:
    """Wait until Streamlit has finished the rerun (its status widget has gone)."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def timed(page, action, ready_text: str) -> tuple[float, float]:
    """Seconds until the new chart title shows, and until the rerun has finished."""
    start = time.perf_counter()
    action()
    expect(title(page, ready_text)).to_be_visible()
    chart = time.perf_counter() - start
    settle(page)
    return chart, time.perf_counter() - start


def set_epsilon(page, value: str):
    def act():
        box = page.get_by_role("spinbutton", name="ε, typed", exact=True)
        box.fill(value)
        box.press("Enter")
    return act


def add_mechanism(page, key: str):
    """Open the mechanism picker and filter it to ``key`` (not timed); the returned action picks
    it, which is the one interaction that reruns the page."""
    page.get_by_test_id("stSidebar").get_by_role("combobox", name="Mechanisms").click()
    page.keyboard.type(mechanisms.get(key).name)
    option = page.get_by_role("option", name=f"{mechanisms.get(key).name} · "
                                              f"{mechanisms.get(key).model}")
    expect(option).to_be_visible()

    def act():
        option.click()
    return act


def legend(page, text: str):
    return page.locator(".js-plotly-plot .legendtext", has_text=text).first


def timed_mechanism(page, key: str) -> tuple[float, float]:
    action = add_mechanism(page, key)
    start = time.perf_counter()
    action()
    expect(legend(page, mechanisms.get(key).name)).to_be_visible()
    chart = time.perf_counter() - start
    settle(page)
    total = time.perf_counter() - start
    page.keyboard.press("Escape")
    return chart, total


def scenario(page, base: str, label: str, mechanism_keys: tuple[str, ...], repeat: int) -> None:
    query = "&".join(f"mech={k}" for k in mechanism_keys)
    page.goto(f"{base}/Explore?{query}&{label}&eps=1&seed=5")
    expect(title(page, "(ε = 1)")).to_be_visible()
    settle(page)
    epsilons = ["1.1", "1.3", "2.2", "3.3", "4.4", "0.9", "0.7", "1.7"][:repeat]
    results = {"ε (new value)": [timed(page, set_epsilon(page, e), f"(ε = {e})")
                                 for e in epsilons],
               "ε (back to a cached value)": [timed(page, set_epsilon(page, "1"), "(ε = 1)")
                                              for _ in range(1)]}
    others = [k for k in ("oue", "grr", "olh", "hm") if k not in mechanism_keys][:repeat]
    results["mechanism (added)"] = [timed_mechanism(page, k) for k in others]
    for what, times in results.items():
        charts, pages = zip(*times)
        print(f"{label:40s} {'+'.join(mechanism_keys):28s} {what:28s} chart "
              f"{statistics.median(charts):5.2f} s (max {max(charts):5.2f})   whole page "
              f"{statistics.median(pages):5.2f} s (max {max(pages):5.2f})   n={len(times)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["county", "ed"], help="run one level only")
    args = parser.parse_args(argv)
    port = _free_port()
    server = start_server(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            page = browser.new_page(viewport=VIEWPORT)
            base = f"http://127.0.0.1:{port}"
            if args.only != "ed":
                scenario(page, base, "dataset=ireland_county", ("laplace",), args.repeat)
                scenario(page, base, "dataset=ireland_county", ("laplace", "grr", "hm"),
                         args.repeat)
                scenario(page, base, "dataset=ireland_ed&level=parent", ("hm",), args.repeat)
            if args.only != "county":
                scenario(page, base, "dataset=ireland_ed", ("laplace",), args.repeat)
                scenario(page, base, "dataset=ireland_ed", ("hm",), args.repeat)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
