"""Error against ε on one answer (Tradeoffs) and targets on answers (Plan & publish) in
Chromium, with every request outside the app blocked: what a user clicks, and what they see."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_plan_browser import no_traceback, settled

pytestmark = pytest.mark.browser


def test_error_of_one_answer_against_epsilon(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Tradeoffs?mech=laplace&mech=grr&grid=1,5&trials=3")
    expect(page.get_by_role("heading", name="Error against ε on one answer")).to_be_visible()
    settled(page)
    page.get_by_role("button", name="Run", exact=True).click()
    chart = page.locator(".js-plotly-plot", has_text="Error of “inflow — Dublin City”")
    expect(chart).to_be_visible(timeout=120_000)
    expect(chart.locator("text", has_text="RMSE of the answer (commuters)")).to_be_visible()
    expect(chart.locator("text", has_text="closed-form sd").first).to_be_visible()
    expect(page.get_by_role("button", name=re.compile(
        "Every release's answer \\(CSV\\) — not for publication"))).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("tradeoffs-answer")


def test_targets_on_answers(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Plan_and_publish?mech=laplace&mech=grr")
    expect(page.get_by_role("heading",
                            name="How much ε do the answers you will use need?")).to_be_visible()
    expect(page.get_by_text("Target: inflow of every zone within ±2 % at 95 %.")).to_be_visible()
    settled(page)
    page.get_by_role("button", name="Also for a flat OpenDP publish").click()
    expect(page.get_by_text("publish: Discrete Laplace", exact=False).first).to_be_visible(
        timeout=120_000)
    settled(page)
    no_traceback(page)
    screenshot("plan-answer-targets")
