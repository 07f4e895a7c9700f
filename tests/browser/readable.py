"""Measuring "readable" in the browser (issue 30), shared by the browser tests.

Text cut short (an ellipsis, or clipped) has ``scrollWidth > clientWidth``: :func:`cut_short`
measures the named HTML elements. An ``st.dataframe`` draws on a canvas, so its cells cannot be
measured that way; :func:`grids_off_screen` finds the grids whose columns run past their frame
(the ledger's ε and δ were off-screen at 1,400 px), the part of a grid's readability the DOM
shows; HTML tables (``charts.wrapped_table``) are held to the same, besides their cells."""

import re

from playwright.sync_api import Page, expect

CUT = """(selector) => [...document.querySelectorAll(selector)]
    .map(e => [e, (e.tagName === 'INPUT' ? e.value : e.textContent).trim()])
    .filter(([e, text]) => e.offsetParent !== null && text)
    .map(([e, text]) => [text, e.scrollWidth, e.clientWidth])"""
#: Chips' text, button labels, the HTML tables' headers and cells, the selects' chosen values
#: (a one-line input: its value is measured), checkbox and toggle labels.
NAMED = ('[data-testid="stMultiSelectTagsContainer"] [data-tag] > span',
         '[data-testid="stSidebar"] button [data-testid="stMarkdownContainer"]',
         '[data-testid="stTable"] th', '[data-testid="stTable"] td',
         '[data-testid="stSelectbox"] input',
         '[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] '
         '[data-testid="stMarkdownContainer"]')
#: The toggle and checkbox labels of :data:`NAMED`.
TOGGLE_LABELS = NAMED[-1]
GRIDS = """() => [...document.querySelectorAll(
        '[data-testid="stDataFrame"] .dvn-scroller, [data-testid="stTable"]')]
    .filter(e => e.offsetParent !== null)
    .map(e => [e.closest('[data-testid]').innerText.slice(0, 60), e.scrollWidth, e.clientWidth])"""


def cut_short(page: Page, required: tuple[str, ...] = ("stMultiSelect",)) -> list[str]:
    """Every named element whose text does not fit, as "'text': scroll > client px". Selectors
    containing a ``required`` name must find something (a page with run settings has chips)."""
    found = []
    for selector in NAMED:
        measured = page.evaluate(CUT, selector)
        assert measured or not any(name in selector for name in required), selector
        found += [f"{text!r}: {scroll} > {client} px" for text, scroll, client in measured
                  if scroll > client + 1]
    return found


def grids_off_screen(page: Page) -> list[str]:
    """Every visible ``st.dataframe`` or HTML table whose columns are wider than its frame."""
    return [f"{text!r}: {scroll} > {client} px" for text, scroll, client in page.evaluate(GRIDS)
            if scroll > client + 1]


def legend_text(name: str) -> re.Pattern:
    """A plotly legend entry that reads ``name`` whole, alone or with Explore's " (95 % interval:
    …)". A long entry is wrapped (``charts.wrap``) into lines whose text joins without the space
    at the break, so every space may be missing."""
    def spaced(text: str) -> str:
        return re.escape(text).replace("\\ ", " ?")
    return re.compile(f"^{spaced(name)}( ?{spaced('(95 % interval:')}[^)]*\\))?$")


def fits(grid) -> list[int]:
    """An ``st.dataframe``'s scroll and client width, then height, scrolled into view."""
    grid.scroll_into_view_if_needed()
    scroller = grid.locator(".dvn-scroller")
    expect(scroller).to_have_count(1)
    return scroller.evaluate(
        "e => [e.scrollWidth, e.clientWidth, e.scrollHeight, e.clientHeight]")
