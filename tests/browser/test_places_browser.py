"""The Places page in Chromium, reached as a user reaches it: the county data picked on Home,
then "Places" in the sidebar's menu. The chart of true vs released answers with its 95 %
intervals and the sentence saying how they were obtained appear; choosing compass directions
draws the rose; no host but the app's is contacted (conftest's ``third_party`` fixture, autouse,
checks every request)."""

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_journeys import chart_title, choose, clean, go, pick_bundled, settled

pytestmark = pytest.mark.browser


def test_places_through_the_menu_on_the_county_data(page: Page, app_url, third_party):
    pick_bundled("ireland_county")(page, app_url)
    go(page, "Places")
    expect(chart_title(page, "Inflow, outflow, live and work: true vs released")
           ).to_be_visible(timeout=120_000)
    # the default Base-Pos gives Laplace its bound; the legend and the sentence say so
    expect(page.locator(".js-plotly-plot .legendtext", has_text="Laplace (bound)")).to_be_visible()
    expect(page.get_by_text("its 95 % intervals hold the truth").first).to_be_visible()
    expect(page.get_by_text("it has no interval").first).to_be_visible()
    settled(page)
    choose(page, "Analysis", "Compass directions")
    expect(page.locator(".js-plotly-plot .polarlayer .trace").first).to_be_visible(timeout=60_000)
    settled(page)
    clean(page)
    assert third_party == []
