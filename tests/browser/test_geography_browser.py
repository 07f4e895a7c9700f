"""Maps and matrices in Chromium, every request outside the app blocked; the first impression;
links (URL parameters) that round-trip.

* No page asks anyone but the app for anything (page icons are emoji: a ``:material/…:`` page
  icon makes Streamlit fetch the favicon from a font CDN).
* Every flow map draws the bundled background geography (land, borders) and, when asked, the
  coloured zone areas — for the bundled datasets and for an upload near Tokyo.
* Explore draws the OD heat map.
* The sidebar's first entry reads "Home" and there is no "Deploy" button.
* A URL with parameters sets the widgets, and changing a widget changes the URL.
* Data, Tradeoffs and Learn draw (the docs' pictures of every page: scripts/screenshots.py).

Screenshots: tests/artifacts/screenshots/geo-*.png.
"""

import re

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.browser.test_flowmap_browser import MAP_IFRAME
from ui.maps import layers as maps

pytestmark = pytest.mark.browser

#: What the map in an iframe holds: background layers (land, borders) and coloured zone areas;
#: null until Leaflet and the map exist (the legends are under the map, on the page).
LAYERS = """() => {
    if (window.L === undefined || !window.map) return null;
    const layers = Object.values(window.map._layers);
    const background = layers.filter(l => l.options && l.options.className === "BACKGROUND");
    const areas = layers.filter(l => l instanceof L.Polygon && l.feature
                                      && l.feature.properties.value !== undefined);
    return {land: background.filter(l => l instanceof L.Polygon).length,
            borders: background.filter(l => !(l instanceof L.Polygon)).length,
            areas: areas.length};
}""".replace("BACKGROUND", maps.BACKGROUND_CLASS)
TOKYO_CSV = ("origin,destination,count,origin_lat,origin_lon,destination_lat,destination_lon\n"
             "Shinjuku,Chiyoda,900,35.6938,139.7034,35.6940,139.7536\n"
             "Shinjuku,Shinjuku,400,35.6938,139.7034,35.6938,139.7034\n"
             "Koto,Chiyoda,700,35.6730,139.8171,35.6940,139.7536\n"
             "Chiyoda,Koto,120,35.6940,139.7536,35.6730,139.8171\n")


def settled(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=120_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def map_layers(page: Page, areas: int, timeout_ms: int = 90_000) -> dict:
    """Wait until the first map has the background and ``areas`` coloured zone areas."""
    found, waited = None, 0
    while waited < timeout_ms:
        try:
            frame = page.locator(MAP_IFRAME).first.element_handle(timeout=5_000).content_frame()
            found = frame.evaluate(LAYERS) if frame else None
        except PlaywrightError:  # the iframe is replaced by a rerun: look again
            found = None
        if found and found["land"] >= 1 and found["areas"] == areas:
            found["legends"] = page.locator(".flow-legends summary").all_text_contents()
            return found
        page.wait_for_timeout(500)
        waited += 500
    pytest.fail(f"the map never showed the background and {areas} zone areas; last: {found}")


@pytest.mark.parametrize("query, areas, borders", [
    ("dataset=ireland_county", 31, True),
    ("dataset=toy_town", 7, False),
    ("dataset=ireland_ed", 3126, True),
])
def test_flow_maps_draw_background_and_zone_areas_offline(page: Page, app_url, network,
                                                         screenshot, query, areas, borders):
    page.goto(f"{app_url}/Flow_map?{query}&mech=laplace&zone_colour=residents&zone_value=error")
    expect(page.get_by_role("heading", name="Flow map")).to_be_visible()
    found = map_layers(page, areas)
    assert (found["borders"] >= 1) == borders  # Ireland's border with Northern Ireland
    assert "Zone areas: Residents, error (released − true)" in found["legends"]
    expect(page.get_by_text("Zone areas are approximate")).to_be_visible()
    settled(page)
    screenshot(f"geo-flowmap-{query.split('=')[1]}")


def test_an_upload_near_tokyo_gets_the_same_background(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Data")
    expect(page.get_by_role("heading", name="Your data")).to_be_visible()
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(
         {"name": "tokyo.csv", "mimeType": "text/csv", "buffer": TOKYO_CSV.encode()}))
    page.get_by_role("button", name="Use this dataset").click()
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible()
    page.locator(".st-key-app_menu").get_by_role("link", name="Flow map").click()
    expect(page.get_by_role("heading", name="Flow map")).to_be_visible()
    map_layers(page, 0)  # land around Tokyo before any colouring
    page.get_by_role("combobox", name="Colour zone areas by").click()
    page.get_by_role("option", name="Jobs").click()
    found = map_layers(page, 3)
    assert any(title.startswith("Zone areas: Jobs") for title in found["legends"])
    settled(page)
    screenshot("geo-flowmap-tokyo-upload")


def test_explore_draws_the_od_heat_map(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Explore?dataset=ireland_county&mech=laplace&heat_log=true")
    heading = page.get_by_role("tab", name="Heat map")
    heading.click()
    heading.evaluate("element => element.scrollIntoView()")  # plotly draws charts in view
    chart = page.locator(".js-plotly-plot").filter(has=page.locator(
        ".gtitle", has_text="Origins × destinations"))
    expect(chart.locator(".heatmaplayer image")).to_have_count(3, timeout=60_000)
    expect(chart.get_by_text("Difference (released − true)").first).to_be_visible()
    settled(page)
    screenshot("geo-explore-heatmap")


def test_first_impression_home_first_and_no_deploy_button(page: Page, app_url, network):
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Commuting Privacy Lab")).to_be_visible()
    links = page.locator(".st-key-app_menu").get_by_role("link")
    expect(links.first).to_have_text("Home")
    expect(links).to_have_text(["Home", "Data", "Explore", "Places", "Tradeoffs", "Flow map",
                                "Learn", "Plan & publish", "Classroom"])
    settled(page)
    expect(page.get_by_role("button", name="Deploy")).to_have_count(0)
    expect(page.get_by_test_id("stAppDeployButton")).to_have_count(0)


def url_has(page: Page, **params) -> None:
    for name, value in params.items():
        expect(page).to_have_url(re.compile(rf"[?&]{name}={re.escape(value)}(&|$)"))


def test_explore_url_parameters_round_trip(page: Page, app_url, network):
    page.goto(f"{app_url}/Explore?dataset=toy_town&mech=laplace&eps=2&seed=4&pp=base&k=12"
              "&log_bars=true&heat_log=true&draws=7")
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    settled(page)
    expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Dataset")).to_have_value(
        re.compile("Toy town"))
    expect(page.get_by_role("slider", name="Busiest commutes in the bars (k)")).to_have_attribute(
        "aria-valuetext", "12")
    expect(page.get_by_role("switch", name="Log scale for the bars")).to_be_checked()
    expect(page.get_by_role("spinbutton", name="Seed")).to_have_value("4")
    page.get_by_role("tab", name="Checks over repeated draws").click()
    expect(page.get_by_role("spinbutton", name="Draws")).to_have_value("7")
    page.get_by_role("tab", name="Heat map").click()
    expect(page.get_by_role("switch", name="Log colour scale")).to_be_checked()
    url_has(page, eps="2", mech="laplace", seed="4", pp="base", k="12")
    page.get_by_text("Log colour scale", exact=True).click()
    url_has(page, heat_log="false")
    page.get_by_role("button", name="New draw").click()
    url_has(page, seed="5")


def test_flow_map_and_learn_url_parameters_round_trip(page: Page, app_url, network):
    page.goto(f"{app_url}/Flow_map?dataset=ireland_county&mech=grr&eps=3&zone_colour=jobs"
              "&zone_value=relative")
    expect(page.get_by_role("heading", name="Flow map")).to_be_visible()
    settled(page)
    expect(page.get_by_role("combobox", name="Colour zone areas by")).to_have_value("Jobs")
    expect(page.get_by_role("radio", name="Relative error ((released − true) / true)")
           ).to_be_checked()
    page.get_by_test_id("stRadio").get_by_text("Released", exact=True).last.click()
    url_has(page, zone_value="released", zone_colour="jobs", mech="grr", eps="3")

    page.goto(f"{app_url}/Learn?lesson=budgets&eps=0.5")
    expect(page.get_by_role("heading", name=re.compile("^Learn"))).to_be_visible()
    settled(page)
    expect(page.get_by_role("radio", name="Groups and budgets", exact=True)).to_be_checked()
    expect(page.get_by_role("slider", name="Privacy budget ε")).to_have_attribute(
        "aria-valuetext", "0.5")
    page.get_by_role("radio", name="Mechanisms", exact=True).click()   # the lesson's part
    url_has(page, lesson="coins", eps="0.5")                              # opens its first
    page.get_by_role("radio", name="Central, local, shuffled", exact=True).click()
    url_has(page, lesson="models", eps="0.5")


@pytest.mark.parametrize("path, name, heading", [
    ("Data", "data", "Your data"),
    ("Tradeoffs?dataset=ireland_county&mech=laplace&mech=grr&trials=2&grid=0.5,1,2",
     "tradeoffs", "Privacy–utility tradeoffs"),
    ("Learn?lesson=epsilon", "learn", re.compile("^Learn")),
])
def test_page_screenshots(page: Page, app_url, network, screenshot, path, name, heading):
    page.goto(f"{app_url}/{path}")
    expect(page.get_by_role("heading", name=heading).first).to_be_visible()
    settled(page)
    if name == "tradeoffs":  # a sweep runs on request
        page.get_by_role("button", name=re.compile(r"^Run \d+ releases")).first.click()
    if name != "data":
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=120_000)
        settled(page)
    screenshot(f"geo-page-{name}")
