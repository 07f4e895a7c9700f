"""The menu keeps what the user set (issue 42): one browser page clicks the sidebar menu through
every ordered pair of the app's pages (nine: 72 transitions), one Eulerian circuit of the complete
directed graph, so no page is loaded fresh — on the county data and on an upload, after the user
changed ε and the mechanisms. After each click it checks what that page shows of the shared
settings: the sidebar's mechanisms, ε slider and typed ε (Learn draws the same ε in its main
area), the page's own caption that names them, the URL (every page's holds the shared settings)
and the menu's ``aria-current="page"`` on the page's own link.

Before the fix, Explore → Tradeoffs showed an empty mechanisms box and ε 1e-06 while the URL
said eps=1: Streamlit gives a widget a new identity on every page, and the controls skipped
giving it its value (:func:`ui.components.viewstate.restore`).
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from dpcore import mechanisms
from dpcore.data import datasets
from tests.browser.conftest import ROOT
from tests.browser.test_journeys import HEADINGS, settled
from ui.components import navigation, widgets
from ui.components.controls import mechanism_label, nearest_step

pytestmark = pytest.mark.browser

#: Long enough for a page's first run on two shared cores; a wrong value never turns right.
WAIT = 60_000
#: What the user sets (on :data:`START`) before walking: a typed ε between two slider steps and
#: mechanisms that are not the defaults (one removed and one added, Gaussian's δ with it).
EPSILON = 2.7
CHOSEN = ("grr", "gaussian")
FIXTURE = ROOT / "tests" / "fixtures" / "long_coordinates.csv"
TITLES = [info.title for info in navigation.PAGES]
#: Where the user changes the settings and the walk starts and ends.
START = "Tradeoffs"


def circuit(n: int, start: int) -> list[int]:
    """A closed walk from ``start`` using every ordered pair (i, j), i ≠ j, of n nodes exactly
    once (Hierholzer's algorithm on the complete directed graph: every node has in-degree =
    out-degree, so the circuit exists)."""
    unused = {i: [j for j in range(n) if j != i] for i in range(n)}
    stack, walk = [start], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def test_the_circuit_takes_every_ordered_pair_once():
    walk = circuit(len(TITLES), TITLES.index(START))
    steps = list(zip(walk, walk[1:]))
    assert len(steps) == len(set(steps)) == len(TITLES) * (len(TITLES) - 1)
    assert walk[0] == walk[-1] == TITLES.index(START)


# ------------------------------------------------------------------------------------ helpers
def click_menu(page: Page, title: str) -> None:
    page.locator(".st-key-app_menu").get_by_role("link", name=title, exact=True).click()
    expect(page.get_by_role("heading", name=HEADINGS[title]).first).to_be_visible(timeout=WAIT)


def url_holds(page: Page, title: str, dataset: str) -> None:
    """The URL is the page's and holds the shared settings (mechanisms and ε as set)."""
    path = "/" + next(i.url_path for i in navigation.PAGES if i.title == title)
    expected = {"dataset": [dataset], "eps": [f"{EPSILON:g}"], "mech": list(CHOSEN)}
    page.wait_for_function(
        """([path, expected]) => {
             const query = new URLSearchParams(location.search);
             const here = path === "/" ? !/\\/(Data|Explore|Places|Tradeoffs|Flow_map|Learn|"""
        """Plan_and_publish|Classroom)$/.test(location.pathname) : location.pathname.endsWith(path);
             return here && Object.entries(expected).every(
               ([name, values]) => JSON.stringify(query.getAll(name)) === JSON.stringify(values));
           }""", arg=[path, expected], timeout=WAIT)


def epsilon_shown(where, slider_label: str) -> None:
    expect(where.get_by_role("slider", name=slider_label)).to_have_attribute(
        "aria-valuetext", f"{nearest_step(EPSILON):g}", timeout=WAIT)
    expect(where.get_by_role("spinbutton", name="ε, typed", exact=True)).to_have_value(
        f"{EPSILON:g}", timeout=WAIT)


def mechanisms_shown(page: Page) -> None:
    box = page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Mechanisms"))
    tags = box.locator("[data-tag]")
    expect(tags).to_have_count(len(CHOSEN), timeout=WAIT)
    for i, key in enumerate(CHOSEN):
        expect(tags.nth(i)).to_have_attribute("aria-label", mechanism_label(key))


def check(page: Page, title: str, dataset: str, dataset_title: str) -> None:
    """What page ``title`` shows of the shared settings, just after the menu opened it."""
    url_holds(page, title, dataset)
    menu = page.locator(".st-key-app_menu")
    expect(menu.locator("[aria-current=page]")).to_have_text([title], timeout=WAIT)
    sidebar = page.get_by_test_id("stSidebar")
    if title in ("Explore", "Places", "Tradeoffs", "Flow map", "Plan & publish", "Home"):
        expect(sidebar.get_by_role("combobox", name="Dataset") if title != "Home" else
               page.get_by_role("combobox", name="Dataset")).to_have_value(
            widgets.PICKER_LABELS[dataset], timeout=WAIT)
    if title in ("Explore", "Places", "Tradeoffs", "Plan & publish"):
        mechanisms_shown(page)
        epsilon_shown(sidebar, "ε (privacy budget, log scale)")
        expect(page.get_by_text("Choose at least one mechanism")).to_have_count(0)
    if title == "Explore":
        expect(page.get_by_text(f"ε = {EPSILON:g}, seed 0").first).to_be_visible(timeout=WAIT)
    if title == "Places":
        expect(page.get_by_text(f"ε = {EPSILON:g} (seed 0,").first).to_be_visible(timeout=WAIT)
    if title == "Flow map":
        expect(sidebar.get_by_role("combobox", name="Mechanism", exact=True)).to_have_value(
            mechanism_label(CHOSEN[0]), timeout=WAIT)
        epsilon_shown(sidebar, "ε (privacy budget, log scale)")
        expect(page.get_by_text(f"{mechanisms.get(CHOSEN[0]).name}, ε = {EPSILON:g}, seed 0")
               .first).to_be_visible(timeout=WAIT)
    if title == "Learn":
        epsilon_shown(page.get_by_test_id("stMain"), "Privacy budget ε")
        expect(page.get_by_text(f"On {dataset_title} (").first).to_be_visible(timeout=WAIT)
    if title == "Classroom":
        expect(page.get_by_text(f"Zones of {dataset_title} (").first).to_be_visible(timeout=WAIT)


def set_epsilon_and_mechanisms(page: Page) -> None:
    """As a user in the sidebar: clear the mechanisms, choose GRR and Gaussian, type ε."""
    sidebar = page.get_by_test_id("stSidebar")
    box = sidebar.get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Mechanisms"))
    tags = box.locator("[data-tag]")
    expect(tags.first).to_be_visible(timeout=WAIT)
    box.get_by_role("button", name="Clear all").click()
    expect(tags).to_have_count(0, timeout=WAIT)
    for key in CHOSEN:
        page.get_by_role("combobox", name="Mechanisms").click()
        page.get_by_role("option", name=mechanism_label(key), exact=True).click()
        page.keyboard.press("Escape")
        expect(box.locator("[data-tag]").last).to_have_attribute("aria-label", mechanism_label(key),
                                                                timeout=WAIT)
    expect(tags).to_have_count(len(CHOSEN), timeout=WAIT)
    typed = sidebar.get_by_role("spinbutton", name="ε, typed", exact=True)
    typed.fill(f"{EPSILON:g}")
    typed.press("Enter")
    expect(sidebar.get_by_role("slider", name="ε (privacy budget, log scale)")).to_have_attribute(
        "aria-valuetext", f"{nearest_step(EPSILON):g}", timeout=WAIT)
    settled(page, WAIT)


def use_the_county_data(page: Page) -> str:
    return "ireland_county"


def use_an_upload(page: Page) -> str:
    click_menu(page, "Data")
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(str(FIXTURE)))
    page.get_by_role("button", name="Use this dataset").click(timeout=WAIT)
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible(
        timeout=WAIT)
    settled(page, WAIT)
    return "uploaded"


DATASETS = {"county": (use_the_county_data, datasets.DATASETS["ireland_county"].title),
            "upload": (use_an_upload, f"Your upload: {FIXTURE.name}")}


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_every_menu_click_keeps_the_settings(page: Page, app_url, network, dataset):
    started = time.monotonic()
    page.goto(app_url)   # the only typed URL: everything else is a click in the menu
    expect(page.get_by_role("heading", name=HEADINGS["Home"])).to_be_visible(timeout=WAIT)
    settled(page, WAIT)
    choose, dataset_title = DATASETS[dataset]
    key = choose(page)
    click_menu(page, START)   # its sweeps wait for a click: the cheapest page to set them on
    set_epsilon_and_mechanisms(page)
    walk = circuit(len(TITLES), TITLES.index(START))
    check(page, START, key, dataset_title)
    for before, after in zip(walk, walk[1:]):
        click_menu(page, TITLES[after])
        try:
            check(page, TITLES[after], key, dataset_title)
        except (AssertionError, PlaywrightError) as error:
            raise AssertionError(f"{TITLES[before]} → {TITLES[after]} on {dataset}: "
                                 f"{error}") from error
    expect(page.get_by_test_id("stException")).to_have_count(0)
    print(f"\n{dataset}: set up and {len(TITLES) * (len(TITLES) - 1)} menu clicks in {time.monotonic() - started:.0f} s")


def test_home_opens_on_the_dataset_its_link_names(page: Page, app_url, network):
    """``/?dataset=ireland_ed`` showed the counties on Home (issue 42)."""
    page.goto(f"{app_url}/?dataset=ireland_ed")
    picker = page.get_by_role("combobox", name="Dataset")
    expect(picker).to_have_value(widgets.PICKER_LABELS["ireland_ed"], timeout=WAIT)
    click_menu(page, "Data")
    page.wait_for_function("() => new URLSearchParams(location.search).get('dataset') === "
                           "'ireland_ed'", timeout=WAIT)
    click_menu(page, "Home")
    expect(picker).to_have_value(widgets.PICKER_LABELS["ireland_ed"], timeout=WAIT)
