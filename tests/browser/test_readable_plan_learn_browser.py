"""Readable and reachable (issue 30) on Plan & publish, Learn and the dataset picker: nothing cut
short at 1,280 and 1,400 px — the planner's answers, the baselines beside them, the budget
ledger (its ε and δ were off-screen at 1,400 px), every lesson's tables, the sidebar's dataset
("Ireland 2016 — counties (synthet…") — and axe with no serious or critical violation after
Find ε, after a publish, on every lesson and on the Classroom teacher's view.

Measured with :mod:`tests.browser.readable` (``scrollWidth > clientWidth``), audited with
:func:`tests.browser.test_accessibility.audit`."""

import re

import pytest
from playwright.sync_api import Page, expect

from dpcore.data import datasets
from tests.browser.readable import cut_short, grids_off_screen
from tests.browser.test_accessibility import audit, open_room, settled
from ui.components import widgets
from ui.learn import menu, tools

pytestmark = pytest.mark.browser

WIDTHS = (1280, 1400)
#: Two DP mechanisms and two baselines: the longest names and the "not DP" rows.
#: The lessons that show tables on the county data as they open.
WITH_TABLES = ("why", "phone", "budgets", "models", "choose", "select", "neighbours")
PLAN = ("Plan_and_publish?dataset=ireland_county&mech=laplace&mech=olh&mech=suppression"
        "&mech=random_rounding")


def unreadable(page: Page, required: tuple[str, ...] = ("stMultiSelect",)) -> list[str]:
    return cut_short(page, required) + grids_off_screen(page)


def header_texts(page: Page) -> list[str]:
    return [t.strip() for t in page.get_by_test_id("stTable").locator("th").all_inner_texts()]


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_and_publish_reads_whole_after_find_and_after_a_publish(page: Page, app_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{app_url}/{PLAN}")
    expect(page.get_by_role("heading", name="Plan & publish")).to_be_visible(timeout=120_000)
    trials = page.get_by_role("spinbutton", name="Draws per ε")
    trials.fill("5")
    trials.press("Enter")
    settled(page)
    page.get_by_role("button", name="Find ε").click()
    expect(page.get_by_text(re.compile(r"^Laplace needs ε ≈"))).to_be_visible(timeout=240_000)
    expect(page.get_by_text("Today's disclosure control beside DP")).to_be_visible()
    settled(page)
    # The sidebar's dataset reads whole (its full title just under it), and so do the answers
    # and the baselines.
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Dataset")).to_have_value(
        widgets.picker_label("ireland_county"))
    expect(sidebar.get_by_text(datasets.DATASETS["ireland_county"].title)).to_be_visible()
    headers = header_texts(page)
    assert "Pass rate (95 % CI)" in headers and "Method (not DP)" in headers, headers
    found = {"after Find ε": unreadable(page)}
    axe = {"after Find ε": audit(page)}

    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text(re.compile(r"^Published: [\d,]+ rows"))).to_be_visible(
        timeout=120_000)
    expect(page.get_by_text("Keyed chain intact", exact=False)).to_be_visible()
    settled(page)
    ledger = page.get_by_test_id("stTable").filter(has_text="manifest")
    expect(ledger).to_have_count(1)
    ledger_headers = [t.strip() for t in ledger.locator("th").all_inner_texts()]
    assert ledger_headers[:3] == ["number", "ε", "δ"], ledger_headers
    found["after a publish"] = unreadable(page)
    axe["after a publish"] = audit(page)
    assert {k: v for k, v in found.items() if v} == {}
    assert {k: v for k, v in axe.items() if v} == {}


@pytest.mark.parametrize("width", WIDTHS)
def test_every_lesson_reads_whole_and_axe_finds_nothing_serious(page: Page, app_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{app_url}/Learn?dataset=ireland_county")
    expect(page.get_by_role("heading", name=re.compile("^Learn"))).to_be_visible(
        timeout=120_000)
    found, axe = {}, {}
    for key, title in tools.ALL_LESSONS.items():
        page.get_by_role("radio", name=menu.part_of(key), exact=True).click()
        page.get_by_role("radio", name=title, exact=True).click()
        expect(page).to_have_url(re.compile(f"lesson={key}"))
        if key in WITH_TABLES:   # drawn as wrapping HTML tables, measured below
            expect(page.get_by_test_id("stTable").first).to_be_visible(timeout=120_000)
        settled(page)
        found[title] = unreadable(page, required=())
        axe[title] = audit(page)
    assert {k: v for k, v in found.items() if v} == {}
    assert {k: v for k, v in axe.items() if v} == {}


def test_the_classroom_teacher_view_has_nothing_serious_for_axe(page: Page, app_url):
    page.set_viewport_size({"width": 1400, "height": 900})
    open_room(page, app_url)
    expect(page.get_by_text("No reports yet", exact=False).first).to_be_visible(timeout=60_000)
    settled(page)
    assert audit(page) == []
    assert cut_short(page, required=()) == []
