"""The Learn page in Chromium: every lesson draws, and moving the ε slider redraws the lesson.

Screenshots: tests/artifacts/screenshots/learn-*.png.
"""

import re

import pytest
from playwright.sync_api import Page, expect

from ui.learn import lessons, menu, tools

pytestmark = pytest.mark.browser


def no_traceback(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "Traceback" not in page.content()


def chart_text(page: Page, text: str):
    """Text drawn inside a plotly chart (title or legend)."""
    return page.locator(".js-plotly-plot text", has_text=text).first


def test_moving_epsilon_redraws_the_lesson(page: Page, app_url, screenshot):
    page.goto(f"{app_url}/Learn?lesson=epsilon")
    expect(page.get_by_role("heading", name=re.compile("^Learn"))).to_be_visible()
    expect(chart_text(page, "Highest belief after an ε = 1 release")).to_be_visible()
    expect(page.get_by_text("at most 23.2% after an ε = 1 release")).to_be_visible()
    no_traceback(page)

    slider = page.get_by_role("slider", name="Privacy budget ε")
    slider.focus()
    for _ in range(3):          # 1 → 1.2 → 1.5 → 2 on the log steps, as fast as a held key:
        page.keyboard.press("ArrowRight")   # presses made during a rerun once set ε back to 1
    expect(slider).to_have_attribute("aria-valuetext", "2")
    expect(page.get_by_role("spinbutton", name="ε, typed", exact=True)).to_have_value("2")
    expect(chart_text(page, "Highest belief after an ε = 2 release")).to_be_visible()
    # prior 10 %: e²·0.1 / (1 + (e² − 1)·0.1) = 45.1 %
    expect(page.get_by_text("at most 45.1% after an ε = 2 release")).to_be_visible()
    expect(page).to_have_url(re.compile(r"lesson=epsilon"))
    settled(page)
    no_traceback(page)
    screenshot("learn-epsilon-2")


def open_lesson(page: Page, lesson: str) -> None:
    """Click the lesson's part, then the lesson, as a teacher does."""
    page.get_by_role("radio", name=menu.part_of(lesson), exact=True).click()
    page.get_by_role("radio", name=tools.ALL_LESSONS[lesson], exact=True).click()


def settled(page: Page) -> None:
    """Wait until Streamlit has finished the rerun (its "running" indicator is gone)."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


@pytest.mark.parametrize("lesson, shown", [   # text each lesson draws last
    ("why", "The true destination ranks"),
    ("phone", "How it works (formulas)"),
    ("budgets", "The composition formulas"),
    ("models", "Guarantee of the whole ε′"),
    ("choose", "How the recommendation is made"),
    ("heavy", "How the PEM server walks the prefix tree"),
])
def test_every_lesson_draws(page: Page, app_url, screenshot, lesson, shown):
    page.goto(f"{app_url}/Learn")
    open_lesson(page, lesson)
    expect(page.get_by_text(shown).first).to_be_visible()
    expect(page).to_have_url(re.compile(f"lesson={lesson}"))
    settled(page)
    no_traceback(page)
    screenshot(f"learn-{lesson}")
