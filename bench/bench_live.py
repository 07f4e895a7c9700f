"""Live feel of the Explore page in a real browser: seconds from a change of ε or mechanism to the
new chart, and to the end of the page's rerun.

Starts the app on a free port, drives Debian's Chromium with Playwright and prints one line per
interaction. Targets (issue 4): county level ≤ 1 s, ED level ≤ 3 s for a single mechanism;
(issue 21) ED as loaded with the page's default mechanisms ≤ 2 s per ε change and ≤ 6 s to the
first chart (from opening the page), the national dataset ≤ 10 s to the first chart.

    python bench/bench_live.py [--repeat 3] [--only county|ed|ed-defaults|national] [--cold]

Home is opened once before the scenarios (the server's own start, importing the app, is not a
page's cost); ``--cold`` times the first scenario on a server no page has opened yet.

On a quiet machine: nothing else running (the figures are upper bounds otherwise). The national
group generates the national synthetic dataset first if it is not cached (about 20 s, once).

Each change uses a value not seen before (fresh ε), so nothing comes from the cache; "cached"
lines switch back to an earlier value. Times run on the browser's clock, from the keypress or
click that commits the change to the animation frame in which the new chart is in the page.
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
from dpcore.data import national  # noqa: E402
from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS, VIEWPORT, _free_port  # noqa: E402

expect.set_options(timeout=120_000)
#: Longest wait for a chart or a rerun (a first national release on a loaded machine).
WAIT_MS = 300_000


def start_server(port: int, env: dict | None = None) -> subprocess.Popen:
    """The app on ``port`` (``env``: the server's environment, default this process's), once it
    answers its health check; the benchmarks and ``scripts/screenshots.py`` start it this way."""
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return server
        except OSError:
            time.sleep(0.25)
    os.killpg(server.pid, signal.SIGKILL)
    raise RuntimeError("the app did not start within 120 s")


#: Installed once per page: the moment the user commits a change (Enter in a box, a click),
#: on the page's own clock.
COMMIT_CLOCK = """() => {
    const mark = () => { window.__commit = performance.now(); };
    document.addEventListener("keydown", e => { if (e.key === "Enter") mark(); }, true);
    document.addEventListener("click", mark, true);
}"""

#: True (and the time noted) once an element matching ``selector`` contains ``text``; checked on
#: every animation frame, so the time is exact to a frame (Playwright's own ``expect`` polls with
#: a back-off that reaches 0.5 s, which would round these figures up by as much).
SHOWN = """([selector, text]) => {
    for (const el of document.querySelectorAll(selector)) {
        if (el.textContent.includes(text)) { window.__shown = performance.now(); return true; }
    }
    return false;
}"""

#: Installed before the app loads: after every message from the server, the next animation frame
#: is noted, so once the rerun is over ``__drawn`` is the frame that drew its last message.
DRAWN_CLOCK = """
class Timed extends window.WebSocket {
    constructor(...args) {
        super(...args);
        this.addEventListener("message", () => requestAnimationFrame(() => {
            window.__drawn = performance.now();
        }));
    }
}
window.WebSocket = Timed;
"""

#: True once Streamlit's "running" status widget has gone (the rerun has finished; the widget
#: itself fades out over 200 ms, so the page's last frame is read from DRAWN_CLOCK instead).
SETTLED = """() => !document.querySelector('[data-testid="stStatusWidget"]')"""


def wait_shown(page, selector: str, text: str) -> None:
    page.wait_for_function(SHOWN, arg=[selector, text], polling="raf", timeout=WAIT_MS)


def settle(page) -> None:
    """Wait until Streamlit has finished the rerun (its status widget has gone)."""
    page.wait_for_function(SETTLED, polling="raf", timeout=WAIT_MS)


def timed(page, action, selector: str, text: str) -> tuple[float, float]:
    """Seconds from the commit of the change until ``text`` shows in ``selector`` (the new
    chart), and until the frame that drew the rerun's last message, both on the browser's
    clock."""
    action()
    wait_shown(page, selector, text)
    settle(page)
    commit, shown, drawn = page.evaluate("[window.__commit, window.__shown, window.__drawn]")
    return (shown - commit) / 1000, (max(drawn, shown) - commit) / 1000


def set_epsilon(page, value: str):
    """Type the new ε (not timed: the box reruns the page only on Enter); the returned action
    presses Enter. The box is found first because Playwright's role locators walk the page's
    accessibility tree on the browser's main thread, which is the harness's cost, not the app's."""
    box = page.get_by_role("spinbutton", name="ε, typed", exact=True).element_handle()
    box.fill(value)
    return lambda: box.press("Enter")


def add_mechanism(page, key: str):
    """Open the mechanism picker and filter it to ``key`` (not timed); the returned action picks
    it, which is the one interaction that reruns the page."""
    page.get_by_test_id("stSidebar").get_by_role("combobox", name="Mechanisms").click()
    page.keyboard.type(mechanisms.get(key).name)
    option = page.get_by_role("option", name=f"{mechanisms.get(key).name} · "
                                              f"{mechanisms.get(key).model}")
    expect(option).to_be_visible()
    return option.element_handle().click


TITLES, LEGENDS = ".js-plotly-plot .gtitle", ".js-plotly-plot .legendtext"


def timed_mechanism(page, key: str) -> tuple[float, float]:
    times = timed(page, add_mechanism(page, key), LEGENDS, mechanisms.get(key).name)
    page.keyboard.press("Escape")
    return times


def scenario(page, base: str, label: str, mechanism_keys: tuple[str, ...], repeat: int,
             seed: int) -> None:
    """Time ε changes and added mechanisms; each scenario has its own ``seed``, so none reuses
    another's cached releases."""
    query = "".join(f"mech={k}&" for k in mechanism_keys)
    page.goto(f"{base}/Explore?{query}{label}&eps=1&seed={seed}")
    page.evaluate(COMMIT_CLOCK)
    wait_shown(page, TITLES, "(ε = 1)")
    first = page.evaluate("window.__shown") / 1000   # since the navigation started
    settle(page)
    names = "+".join(mechanism_keys) or "page defaults"
    print(f"{label:40s} {names:28s} {'first chart (page opened)':28s} chart {first:5.2f} s",
          flush=True)
    epsilons = ["1.1", "1.3", "2.2", "3.3", "4.4", "0.9", "0.7", "1.7"][:repeat]
    results = {"ε (new value)": [timed(page, set_epsilon(page, e), TITLES, f"(ε = {e})")
                                 for e in epsilons],
               "ε (back to a cached value)": [timed(page, set_epsilon(page, "1"), TITLES,
                                                    "(ε = 1)")]}
    others = [k for k in ("oue", "grr", "olh", "hm") if k not in mechanism_keys][:repeat]
    if mechanism_keys:   # the defaults already hold them
        results["mechanism (added)"] = [timed_mechanism(page, k) for k in others]
    for what, times in results.items():
        charts, pages = zip(*times)
        print(f"{label:40s} {names:28s} {what:28s} chart "
              f"{statistics.median(charts):5.2f} s (max {max(charts):5.2f})   whole page "
              f"{statistics.median(pages):5.2f} s (max {max(pages):5.2f})   n={len(times)}")


ED = "dataset=ireland_ed&level=as_loaded"
#: Scenarios by group: (URL parameters, mechanisms; none = the page's six defaults).
RUNS = {"county": [("dataset=ireland_county", ("laplace",)),
                   ("dataset=ireland_county", ("laplace", "grr", "hm")),
                   ("dataset=ireland_ed&level=parent", ("hm",))],
        "ed": [(ED, ("laplace",)), (ED, ("hm",)), (ED, ("oue",))],
        "ed-defaults": [(ED, ())],
        "national": [(f"dataset={national.KEY}", ())]}


def warm_up(page, base: str) -> None:
    """Open Home once and wait for it: the server's one-off start (importing the app, ~2–3 s)
    is then not counted in the first scenario's first chart."""
    started = time.perf_counter()
    page.goto(base)
    expect(page.get_by_role("heading", name="Commuting Privacy Lab")).to_be_visible()
    settle(page)
    print(f"{'server warm-up':40s} {'':28s} {'Home opened once':28s} page  "
          f"{time.perf_counter() - started:5.2f} s", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=list(RUNS), help="run one group only")
    parser.add_argument("--cold", action="store_true",
                        help="time the first scenario's first chart on a server no page has "
                             "opened yet (its Python imports included); by default Home is "
                             "opened first, as on a server someone already uses")
    args = parser.parse_args(argv)
    groups = [args.only] if args.only else list(RUNS)
    if "national" in groups and not national.cache_path().exists():
        print("Generating the national synthetic dataset once (about 20 s)…", flush=True)
        national.make()
    port = _free_port()
    server = start_server(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            page = browser.new_page(viewport=VIEWPORT)
            page.add_init_script(DRAWN_CLOCK)
            base = f"http://127.0.0.1:{port}"
            if not args.cold:
                warm_up(page, base)
            runs = [run for group in groups for run in RUNS[group]]
            for seed, (label, keys) in enumerate(runs, start=5):
                scenario(page, base, label, keys, args.repeat, seed)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
