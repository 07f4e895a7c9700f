"""The Plan & publish page in Chromium, with every request outside the app blocked: a searched
answer behind Find, drawn as a sentence, ★ markers on the curve and the ε ruler; then a publish
that lands in the budget ledger.

Screenshot: tests/artifacts/screenshots/plan-*.png (the docs' picture: scripts/screenshots.py).
"""

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def settled(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def no_traceback(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "Traceback" not in page.content()


def test_plan_page_finds_epsilon_offline(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Plan_and_publish?mech=laplace&mech=olh&mech=suppression")
    expect(page.get_by_role("heading", name="Plan & publish")).to_be_visible()
    expect(page.get_by_text("not differentially private").first).to_be_visible()
    trials = page.get_by_role("spinbutton", name="Draws per ε")
    trials.fill("5")
    trials.press("Enter")
    settled(page)
    page.get_by_role("button", name="Find ε").click()
    expect(page.get_by_text(re.compile(r"^Laplace needs ε ≈ [\d.]+ for GEH < 5"))).to_be_visible(
        timeout=120_000)
    expect(page.get_by_text("meets it whatever ε, with no privacy guarantee",
                            exact=False).first).to_be_visible()
    expect(page.locator(".js-plotly-plot text", has_text="the smallest ε meeting the target")
           .first).to_be_visible()
    expect(page.locator(".js-plotly-plot text", has_text="The ε ruler").first).to_be_visible()
    expect(page.get_by_text("Today's disclosure control beside DP")).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("plan-searched")

    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text(re.compile(r"^Published: [\d,]+ rows"))).to_be_visible()
    expect(page.get_by_role("button", name="manifest.json")).to_be_visible()
    expect(page.get_by_text("Spent so far, all releases together")).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("plan-published")
