"""Usable by everyone, on a laptop: every page passes axe-core with no serious or critical
violation, shows its main answer without scrolling at 1,400 × 900, and Explore's main interaction
(ε and a mechanism) works with the keyboard alone.

axe-core comes inside the ``axe-playwright-python`` wheel (no network). The audit covers each
page's own document; maps and the Classroom's phone component are iframes, audited by their own
tests. Screenshots of the walk: tests/artifacts/screenshots/fold-<page>.png (the viewport only,
i.e. what a laptop shows before any scrolling).
"""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from dpcore import mechanisms
from tests.browser.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser

LAPTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
#: axe's two worst impact levels: each is a barrier for some people, not a nicety.
BLOCKING = ("serious", "critical")
#: Rules held as well although axe calls them moderate: headings that skip a level mislead
#: screen-reader users navigating by headings (the issue found it on four pages).
ALSO_BLOCKING = ("heading-order",)
MAP_IFRAME = 'iframe[title="streamlit_folium.st_folium"]'


def settled(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=120_000)
    page.wait_for_timeout(500)


def plotly_chart(page: Page, title: str):
    """The chart (its Streamlit frame) whose plotly title contains ``title``."""
    return page.get_by_test_id("stPlotlyChart").filter(
        has=page.locator(".gtitle", has_text=title)).first


def open_room(page: Page, app_url: str) -> str:
    """A teacher opens a Classroom room; returns its code."""
    page.goto(f"{app_url}/Classroom")
    page.get_by_role("button", name=re.compile("Open the room")).click()
    expect(page).to_have_url(re.compile(r"teach=[A-Z2-9]{8}"), timeout=60_000)
    return re.search(r"teach=([A-Z2-9]{8})", page.url).group(1)


# Each page: how to reach it and its main answer (after its main action, where it needs one).
def home(page, url):
    page.goto(url)
    return page.get_by_test_id("stMetric").first  # the dataset's headline figures


def data(page, url):
    page.goto(f"{url}/Data")
    return page.get_by_test_id("stFileUploader").first


def explore(page, url):
    page.goto(f"{url}/Explore?dataset=ireland_county")
    return plotly_chart(page, "busiest commutes: true vs released")


def tradeoffs(page, url):
    page.goto(f"{url}/Tradeoffs?mech=laplace&mech=grr&trials=2")
    page.get_by_role("button", name=re.compile(r"^Run \d+ releases")).first.click()
    return plotly_chart(page, "against ε")


def flow_map(page, url):
    page.goto(f"{url}/Flow_map?dataset=ireland_county&mech=laplace")
    return page.locator(MAP_IFRAME).first


def learn(page, url):
    page.goto(f"{url}/Learn")
    return page.get_by_test_id("stMetric").first  # the first lesson's small-cell figures


def plan_and_publish(page, url):
    page.goto(f"{url}/Plan_and_publish?mech=laplace&mech=grr&target=rmse")
    page.get_by_role("button", name="Find ε").click()
    return page.get_by_test_id("stTable").first  # the ε each mechanism needs


def classroom_teacher(page, url):
    open_room(page, url)
    return page.locator("[data-testid='stImage'] img, img[alt='Scan to join']").first  # its QR


def classroom_student(page, url):
    code = open_room(page, url)
    page.set_viewport_size(PHONE)
    page.goto(f"{url}/Classroom?room={code}")
    expect(page.get_by_role("button", name="Randomise on this phone")).to_be_visible()
    return page.locator("select, [role=radiogroup], [role=combobox]").first  # the first choice


PAGES = {"home": home, "data": data, "explore": explore, "tradeoffs": tradeoffs,
         "flow-map": flow_map, "learn": learn, "plan-and-publish": plan_and_publish,
         "classroom-teacher": classroom_teacher, "classroom-student": classroom_student}


@pytest.mark.parametrize("name", list(PAGES))
def test_no_serious_accessibility_violation_and_the_answer_above_the_fold(page: Page, app_url,
                                                                        name):
    page.set_viewport_size(LAPTOP)
    answer = PAGES[name](page, app_url)
    expect(answer).to_be_visible(timeout=120_000)
    settled(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    box = visible_box(page, answer)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"fold-{name}.png"))
    fold = page.viewport_size["height"]
    assert box is not None and box["y"] < fold, f"{name}: the main answer starts at {box}"

    blocking = audit(page)
    if blocking:  # an element fading in (a live view's rerun) is measured mid-way: look again
        page.wait_for_timeout(2_000)
        blocking = sorted(set(blocking) & set(audit(page)))
    assert blocking == [], "\n".join(blocking)


def visible_box(page: Page, answer, tries: int = 20):
    """The answer's box once it is drawn: a page may rerun once more after its status widget
    goes (the Plan page redraws its table), and while Streamlit swaps the element the locator
    finds no box (2 of 5 runs before, at every commit)."""
    for _ in range(tries):
        box = answer.bounding_box()
        if box is not None:
            return box
        page.wait_for_timeout(250)
    return None


def audit(page: Page) -> list[str]:
    """axe-core's blocking violations on the page, one line per rule and element."""
    violations = Axe().run(page).response["violations"]
    return [f"{v['impact']} {v['id']}: {v['help']} — {node['target']}"
            for v in violations if v["impact"] in BLOCKING or v["id"] in ALSO_BLOCKING
            for node in v["nodes"]]


def tab_to(page: Page, accessible_name: str, limit: int = 120) -> None:
    """Press Tab until the focused element's accessible name starts with ``accessible_name``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => { const e = document.activeElement;
            const label = e.getAttribute('aria-label') || '';
            const by = e.getAttribute('aria-labelledby');
            const named = by ? [...by.split(' ')].map(id => document.getElementById(id))
                .filter(Boolean).map(n => n.textContent).join(' ') : '';
            return label || named || (e.labels && e.labels[0] && e.labels[0].textContent) ||
                   ''; }""")
        if focused.strip().startswith(accessible_name):
            return
    pytest.fail(f"Tab never reached “{accessible_name}”")


def test_explore_with_the_keyboard_alone(page: Page, app_url):
    """ε and the mechanisms change with keys only: Tab to a control, then arrows, typing, Enter."""
    page.set_viewport_size(LAPTOP)
    page.goto(f"{app_url}/Explore?dataset=toy_town&mech=laplace&eps=1")
    expect(plotly_chart(page, "(ε = 1)")).to_be_visible(timeout=120_000)
    settled(page)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # from the top

    tab_to(page, "ε, typed")
    page.keyboard.press("Control+A")
    page.keyboard.type("2")
    page.keyboard.press("Enter")
    expect(plotly_chart(page, "(ε = 2)")).to_be_visible(timeout=60_000)
    settled(page)
    assert re.search(r"[?&]eps=2(&|$)", page.url)

    tab_to(page, "Mechanisms")
    page.keyboard.type("Optimised unary")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    oue = mechanisms.get("oue").name
    expect(page.locator(".js-plotly-plot .legendtext", has_text=oue).first).to_be_visible(
        timeout=60_000)
    assert "mech=oue" in page.url
