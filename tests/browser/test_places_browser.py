"""The Places page in Chromium, reached as a user reaches it: the county data picked on Home,
then "Places" in the sidebar's menu. The chart of true vs released answers with its 95 %
intervals and the sentence saying how they were obtained appear; choosing compass directions
draws the rose; a published folder's two files uploaded give the release's own answers with
their intervals; no host but the app's is contacted (conftest's ``third_party`` fixture, autouse,
checks every request)."""

import pytest
from playwright.sync_api import Page, expect

from dpcore.analyses import answers, selection as sel
from dpcore.interfaces import cli, published_analyses as published
from tests.browser.test_journeys import (chart_title, choose, clean, go, open_app, pick_bundled,
                                         settled)
from ui.places import published as mode

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


def test_places_answers_from_an_uploaded_published_folder(page: Page, app_url, third_party,
                                                          tmp_path):
    """A folder published in a tmp dir by the real command, its two files put into the page's
    uploaders: the inflow answer appears with the 95 % interval dpcore gives it, and no true
    series is drawn."""
    folder = tmp_path / "published"
    assert cli.main(["publish", "--dataset", "toy_town", "--domain-dataset", "toy_town",
                     "--mechanism", "discrete_laplace", "--postprocess", "base", "--epsilon",
                     "1", "--out", str(folder)]) == 0
    found = published.load(folder)
    zone = list(dict.fromkeys([*found.od.origins.ids, *found.od.destinations.ids]))[0]
    inflow = answers.evaluate(answers.flows(found.od, sel.zones(found.od, [zone])), None,
                              found.values, found.interval).set_index("analysis").loc["inflow"]
    open_app(page, app_url, "Places")
    page.get_by_text(mode.SOURCES["published"]).click()
    settled(page)
    for name in ("release.csv", "manifest.json"):
        (page.get_by_test_id("stFileUploader").filter(has_text=name)
         .locator("input[type=file]").set_input_files(str(folder / name)))
        settled(page)
    expect(chart_title(page, "Inflow, outflow, live and work: the published answers")
           ).to_be_visible(timeout=120_000)
    expect(page.get_by_text(f"{inflow.released:,.0f} (95 % interval {inflow.low:,.0f} to "
                            f"{inflow.high:,.0f})").first).to_be_visible()
    expect(page.locator(".js-plotly-plot .legendtext", has_text="True")).to_have_count(0)
    clean(page)
    assert third_party == []
