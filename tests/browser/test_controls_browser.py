"""The sidebar's run controls in Chromium (issue 24, "Controls"): three × clicks in the Mechanisms
multiselect remove three mechanisms, one after another, with no click elsewhere in between; a
typed ε beyond the old slider's end (15) moves the slider to it."""

import pytest
from playwright.sync_api import Page, expect

from dpcore import mechanisms
from tests.browser.readable import legend_text
from ui.components.controls import DEFAULT_MECHANISMS, mechanism_label

pytestmark = pytest.mark.browser

#: Explore draws many charts: on a loaded 2-core machine the browser can be busy for a minute.
SLOW = 150_000
#: The page's mechanisms as the URL holds them (the server's state, not only the browser's).
LINKED = "() => new URLSearchParams(location.search).getAll('mech').join(',')"


def mechanisms_box(page: Page):
    return page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Mechanisms"))


def test_three_x_clicks_remove_three_mechanisms(page: Page, app_url, network):
    page.goto(f"{app_url}/Explore?dataset=toy_town")
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    box = mechanisms_box(page)
    tags = box.locator("[data-tag]")
    expect(tags).to_have_count(len(DEFAULT_MECHANISMS), timeout=SLOW)
    remaining = list(DEFAULT_MECHANISMS)
    for key in DEFAULT_MECHANISMS[:3]:
        box.get_by_role("button", name=f"Remove {mechanism_label(key)}", exact=True).click(
            timeout=SLOW)
        remaining.remove(key)
        expect(tags).to_have_count(len(remaining), timeout=SLOW)
        page.wait_for_function(f"() => ({LINKED})() === {','.join(remaining)!r}", timeout=SLOW)
    assert [tags.nth(i).get_attribute("aria-label") for i in range(len(remaining))] == \
        [mechanism_label(key) for key in remaining]
    legend = page.locator(".js-plotly-plot .legendtext")
    expect(legend.filter(has_text=legend_text(mechanisms.get(remaining[0]).name)).first
           ).to_be_visible(timeout=SLOW)
    expect(legend.filter(has_text=legend_text(mechanisms.get("laplace").name))).to_have_count(
        0, timeout=SLOW)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_a_typed_epsilon_of_15_moves_the_slider_to_15(page: Page, app_url, network):
    page.goto(f"{app_url}/Explore?dataset=toy_town&mech=laplace")
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    typed = page.get_by_role("spinbutton", name="ε, typed", exact=True)
    typed.fill("15", timeout=SLOW)
    typed.press("Enter")
    slider = page.get_by_role("slider", name="ε (privacy budget, log scale)")
    expect(slider).to_have_attribute("aria-valuetext", "15", timeout=SLOW)
    page.wait_for_function("() => new URLSearchParams(location.search).get('eps') === '15'",
                           timeout=SLOW)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_a_held_arrow_key_and_quick_typing_keep_every_step(page: Page, app_url, network):
    """Five arrow-key presses on the ε slider as fast as a held key, then three values typed
    one after another without waiting: the last of each wins, in the slider, the box and the
    URL. (The two mirrored each other by reassigning their keys: a press made during a rerun
    reported the box's stale value, and ε snapped back to 1.)"""
    page.goto(f"{app_url}/Explore?dataset=toy_town&mech=laplace")
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    slider = page.get_by_role("slider", name="ε (privacy budget, log scale)")
    typed = page.get_by_role("spinbutton", name="ε, typed", exact=True)
    expect(typed).to_have_value("1", timeout=SLOW)
    slider.focus()
    for _ in range(5):                       # 1 → 1.2 → 1.5 → 2 → 2.5 → 3 on the log steps
        page.keyboard.press("ArrowRight")
    expect(slider).to_have_attribute("aria-valuetext", "3", timeout=SLOW)
    expect(typed).to_have_value("3", timeout=SLOW)
    page.wait_for_function("() => new URLSearchParams(location.search).get('eps') === '3'",
                           timeout=SLOW)
    for value in ("0.37", "6", "0.8"):
        typed.fill(value, timeout=SLOW)
        typed.press("Enter")
    expect(slider).to_have_attribute("aria-valuetext", "0.8", timeout=SLOW)
    expect(typed).to_have_value("0.8", timeout=SLOW)
    page.wait_for_function("() => new URLSearchParams(location.search).get('eps') === '0.8'",
                           timeout=SLOW)
    expect(page.get_by_test_id("stException")).to_have_count(0)
