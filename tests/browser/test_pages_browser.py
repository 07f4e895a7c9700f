"""Every page, after its main interaction, has asked nothing of any host but the app's.

The pages come from app.py's navigation (every file in ``pages/``), so a new page is tested as
soon as it exists: by default it is opened and left to finish; add its main interaction to
``INTERACTIONS``. The check itself is conftest's ``third_party`` fixture (every request outside the
app is recorded and aborted, and the page icon must be served by the app), which also guards every
other browser test.
"""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ROOT
from ui.components import navigation

pytestmark = pytest.mark.browser

VALID = ROOT / "tests" / "fixtures" / "long_coordinates.csv"


def page_paths() -> dict[str, str]:
    """Page title → URL path, as app.py's navigation lists them (every file in ``pages/``: see
    tests/test_app_home.py)."""
    return {info.title: info.url_path for info in navigation.PAGES}


def settled(page: Page) -> None:
    """Wait until Streamlit has finished the rerun (its "running" indicator is gone)."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def plotly_title(page: Page, text: str):
    return page.locator(".js-plotly-plot .gtitle", has_text=text).first


def switch_dataset(page: Page) -> None:
    page.get_by_role("combobox", name="Dataset").click()
    page.get_by_role("option", name="Toy town").click()
    expect(page.get_by_text("invented for teaching").first).to_be_visible()


def upload_and_use(page: Page) -> None:
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(str(VALID)))
    page.get_by_role("button", name="Use this dataset").click()
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible()


def change_epsilon(page: Page) -> None:
    box = page.get_by_role("spinbutton", name="ε, typed", exact=True)
    expect(box).to_be_editable(timeout=120_000)   # the first run of six releases, on shared cores
    box.fill("5")
    box.press("Enter")
    expect(plotly_title(page, "(ε = 5)")).to_be_visible()


def run_sweep(page: Page) -> None:
    page.get_by_role("button", name=re.compile(r"^Run \d+ releases")).first.click()
    expect(plotly_title(page, "RMSE against ε")).to_be_visible()


def show_released(page: Page) -> None:
    page.get_by_role("radiogroup", name="Show").get_by_text("Released", exact=True).click()
    drawn = page.get_by_text(re.compile(r"Released flows: [\d,]+ lines drawn")).first
    expect(drawn).to_be_visible()


def open_a_lesson(page: Page) -> None:
    page.get_by_role("radio", name="What ε means", exact=True).click()
    expect(page).to_have_url(re.compile("lesson=epsilon"))


#: Each page's main interaction (pages without one are opened and left to finish).
INTERACTIONS = {
    "Home": switch_dataset,
    "Data": upload_and_use,
    "Explore": change_epsilon,
    "Tradeoffs": run_sweep,
    "Flow map": show_released,
    "Learn": open_a_lesson,
}
#: Query strings that keep the interactions quick on two shared cores.
QUERIES = {"Explore": "?dataset=ireland_county", "Tradeoffs": "?mech=laplace&mech=grr&trials=2",
           "Flow map": "?dataset=ireland_county&mech=laplace"}


def test_every_page_has_a_main_interaction():
    assert set(INTERACTIONS) <= set(page_paths()), "an interaction names a page that is gone"


@pytest.mark.parametrize("name", list(page_paths()))
def test_no_third_party_request_after_the_main_interaction(page: Page, app_url, third_party, name):
    page.goto(f"{app_url}/{page_paths()[name]}{QUERIES.get(name, '')}")
    expect(page.get_by_role("heading").first).to_be_visible()
    settled(page)
    INTERACTIONS.get(name, lambda page: None)(page)
    settled(page)
    page.wait_for_timeout(1_000)  # late requests (icons, fonts, lazy chunks) land here
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert third_party == []  # the fixture also checks this, and the page icon, on teardown
