"""Make every screenshot in the docs from the running app, in one browser walk.

Run it before a release of the docs, so the pictures match the app (a picture taken by hand goes
stale as soon as the pages change):

    python3 scripts/screenshots.py [--only home explore …] [--skip-national]

It starts the app (``streamlit run app.py``) on a free loopback port, with a throw-away Classroom
database and the example room address of docs/CLASSROOM.md, walks the pages in Debian's Chromium
through Playwright (``DPCORE_CHROMIUM``, default ``/usr/bin/chromium``) and writes
``docs/screenshot-<name>.png`` for each shot in :data:`SHOTS`: each page at desktop width, a Classroom room as the teacher sees it after five phones have
reported and a student's phone (390 px wide), and Explore and the Flow map on the national
synthetic data (generated on first use: about 20 s and 1 GB once, then cached in
``$DPCORE_CACHE``). Nothing is fetched from outside the machine. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_live import start_server  # noqa: E402
from tests.browser.conftest import _free_port  # noqa: E402

DOCS = ROOT / "docs"
CHROMIUM = os.environ.get("DPCORE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
#: Desktop pages: Streamlit scrolls inside its own container, so the window is tall and the
#: picture is cropped to the content.
DESKTOP = {"width": 1280, "height": 2400}
PHONE = {"width": 390, "height": 1300}
WAIT = 180_000   # ms: a first release at ED level or a sweep on two shared cores
STUDENTS = 5
NATIONAL = "us_tracts"   # dpcore.data.national.KEY


def start_app(port: int) -> subprocess.Popen:
    # The room's link as a class would see it (docs/CLASSROOM.md's example address), not the
    # loopback one the pictures are taken through.
    env = {**os.environ, "DPCORE_CLASSROOM_DIR": tempfile.mkdtemp(prefix="classroom-shots-"),
           "DPCORE_CLASSROOM_URL": "http://192.168.1.20:8501/Classroom"}
    return start_server(port, env)


def settled(page: Page) -> None:
    """Streamlit has finished the rerun (its "running" indicator is gone) and drawn it."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=WAIT)
    page.wait_for_timeout(1_500)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def save(page: Page, name: str, scroll_to=None) -> None:
    """docs/screenshot-<name>.png: the page cropped to its content (``scroll_to`` first)."""
    if scroll_to is not None:
        scroll_to.evaluate("element => element.scrollIntoView()")
        page.wait_for_timeout(1_000)
    box = page.get_by_test_id("stMainBlockContainer").bounding_box()
    height = page.viewport_size["height"]
    path = DOCS / f"screenshot-{name}.png"
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": page.viewport_size["width"],
                                          "height": min(height, max(box["y"] + box["height"],
                                                                    400))})
    print(f"  {path.relative_to(ROOT)}", flush=True)


def charts(page: Page) -> None:
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=WAIT)
    settled(page)


# ------------------------------------------------------------------------------------ the walk
def home(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name="Commuting Privacy Lab")).to_be_visible(timeout=WAIT)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible(timeout=WAIT)
    settled(page)
    save(page, "home")


def data(page: Page, url: str) -> None:
    page.goto(f"{url}/Data")
    expect(page.get_by_role("heading", name="Your data")).to_be_visible(timeout=WAIT)
    settled(page)
    save(page, "data")


def explore(page: Page, url: str) -> None:
    page.goto(f"{url}/Explore?dataset=ireland_county&mech=laplace&heat_log=true")
    charts(page)
    save(page, "explore", scroll_to=page.get_by_role("tab", name="What happened"))


def tradeoffs(page: Page, url: str) -> None:
    page.goto(f"{url}/Tradeoffs?dataset=ireland_county&mech=laplace&mech=grr&trials=2"
              "&grid=0.5,1,2")
    expect(page.get_by_role("heading", name="Privacy–utility tradeoffs")).to_be_visible(
        timeout=WAIT)
    settled(page)
    page.get_by_role("button", name=re.compile(r"^Run \d+ releases")).first.click()
    charts(page)
    save(page, "tradeoffs")


def flow_map(page: Page, url: str) -> None:
    page.goto(f"{url}/Flow_map?dataset=ireland_county&mech=laplace&zone_colour=residents"
              "&zone_value=error")
    expect(page.get_by_role("heading", name="Flow map")).to_be_visible(timeout=WAIT)
    expect(page.locator("iframe").first).to_be_visible(timeout=WAIT)
    settled(page)
    page.wait_for_timeout(3_000)   # the map's tiles and lines draw inside its frame
    save(page, "flow-map")


def learn(page: Page, url: str) -> None:
    page.goto(f"{url}/Learn?lesson=epsilon")
    charts(page)
    save(page, "learn")


def plan(page: Page, url: str) -> None:
    page.goto(f"{url}/Plan_and_publish?mech=laplace&mech=olh&mech=suppression")
    expect(page.get_by_role("heading", name="Plan & publish")).to_be_visible(timeout=WAIT)
    trials = page.get_by_role("spinbutton", name="Draws per ε")
    trials.fill("5")
    trials.press("Enter")
    settled(page)
    page.get_by_role("button", name="Find ε").click()
    expect(page.get_by_text(re.compile(r"^Laplace needs ε ≈ [\d.]+"))).to_be_visible(timeout=WAIT)
    settled(page)
    save(page, "plan")


def classroom(page: Page, url: str, browser) -> None:
    """The teacher's room after five phones reported, and the first student's phone."""
    page.goto(f"{url}/Classroom")
    page.get_by_role("button", name="Open the room").click()
    expect(page).to_have_url(re.compile(r"teach=[A-Z2-9]{8}"), timeout=WAIT)
    code = re.search(r"teach=([A-Z2-9]{8})", page.url).group(1)
    for student in range(STUDENTS):
        context = browser.new_context(viewport=PHONE)
        phone = context.new_page()
        phone.goto(f"{url}/Classroom?room={code}")
        phone.get_by_role("button", name="Randomise on this phone").click(timeout=WAIT)
        expect(phone.get_by_text("Your phone will send exactly this")).to_be_visible()
        if student == 0:
            settled(phone)
            phone.screenshot(path=str(DOCS / "screenshot-classroom-student.png"), full_page=True)
            print("  docs/screenshot-classroom-student.png", flush=True)
        phone.get_by_role("button", name="Send this report").click()
        expect(phone.get_by_text(re.compile(r"Sent: report number \d+")).first).to_be_visible(
            timeout=WAIT)
        context.close()
    expect(page.get_by_test_id("stMetric").filter(has_text="Reports in this round")
           .get_by_test_id("stMetricValue")).to_have_text(str(STUDENTS), timeout=60_000)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=WAIT)
    settled(page)
    save(page, "classroom-teacher")


def national(page: Page, url: str) -> None:
    """Explore and the Flow map on the national synthetic data (HUGE_DOMAINS.md's pictures)."""
    page.goto(f"{url}/Data")
    page.get_by_role("button", name="Use the national synthetic dataset").click(timeout=WAIT)
    expect(page.get_by_text("is now the current dataset")).to_be_visible(timeout=WAIT)
    # Two sparse releases (Laplace's approximation, OUE exact) and one refused with its reason.
    page.goto(f"{url}/Explore?dataset={NATIONAL}&mech=laplace&mech=oue&mech=hr")
    charts(page)
    save(page, "explore-national")   # from the top: the refusal, the approximation, the notes
    page.goto(f"{url}/Flow_map?dataset={NATIONAL}&mech=laplace")
    expect(page.get_by_role("heading", name="Flow map")).to_be_visible(timeout=WAIT)
    expect(page.locator("iframe").first).to_be_visible(timeout=WAIT)
    settled(page)
    page.wait_for_timeout(3_000)
    save(page, "flow-map-national")


SHOTS = {"home": home, "data": data, "explore": explore, "tradeoffs": tradeoffs,
         "flow-map": flow_map, "learn": learn, "plan": plan, "classroom": classroom,
         "national": national}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(SHOTS), help="just these shots")
    parser.add_argument("--skip-national", action="store_true",
                        help="leave the national dataset's two pictures as they are")
    args = parser.parse_args()
    names = args.only or [n for n in SHOTS if not (args.skip_national and n == "national")]
    port = _free_port()
    server = start_app(port)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            for name in names:
                print(name, flush=True)
                context = browser.new_context(viewport=DESKTOP)
                # Only the app itself: any other host is refused, so no picture shows a fetch.
                context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/]|blob:|data:).*"),
                              lambda route: route.abort())
                page = context.new_page()
                if name == "classroom":
                    classroom(page, url, browser)
                else:
                    SHOTS[name](page, url)
                context.close()
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
