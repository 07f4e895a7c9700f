"""A whole state's LODES tract file (6.4·10⁷ possible commutes, beyond the dense limit) uploaded
in Chromium, then Explore on it: sparse releases, no memory cap, the heat map replaced by a
sentence saying why."""

import re

import pytest
from playwright.sync_api import Page, expect

from dpcore.data import importers
from tests.browser.test_explore_browser import chart_title, no_traceback
from tests.test_sparse_import import lodes_state

pytestmark = pytest.mark.browser


def choose(page: Page, box: str, option: str) -> None:
    page.get_by_role("combobox", name=box).click()
    page.get_by_role("option", name=option).click()


def test_explore_on_a_state_lodes_tract_upload(page: Page, app_url, screenshot):
    page.goto(f"{app_url}/Data")
    expect(page.get_by_role("heading", name="Your data")).to_be_visible()
    choose(page, "Format", importers.FORMATS["lodes"])
    choose(page, "Level", "tract")
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files({"name": "state_od.csv",
                                                   "mimeType": "text/csv",
                                                   "buffer": lodes_state()}))
    expect(page.get_by_text("Imported state_od.csv as")).to_be_visible(timeout=120_000)
    page.get_by_text(re.compile(r"notes? on the import")).click()  # the importer's notes, folded
    expect(page.get_by_text("the sparse release").first).to_be_visible()
    page.get_by_role("button", name="Use this dataset").click()
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible()
    page.locator(".st-key-app_menu").get_by_role("link", name="Explore").click()
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    expect(chart_title(page, "30 busiest commutes: true vs released")).to_be_visible(
        timeout=120_000)
    expect(page.get_by_text("64,000,000 possible commutes").first).to_be_visible()
    page.get_by_role("tab", name="Heat map").click()
    expect(page.get_by_text("The heat map (every cell of a block of zones) is not shown")
           ).to_be_visible()
    # the Hadamard mechanism has no sparse release: left out of the defaults, and said so
    expect(page.get_by_text("is left out of the default mechanisms on this dataset")
           ).to_be_visible()
    expect(page.get_by_text("has no sparse release")).to_have_count(0)
    expect(page.get_by_text("would hold about")).to_have_count(0)             # no memory cap
    no_traceback(page)
    screenshot("explore-state-tracts-sparse")
