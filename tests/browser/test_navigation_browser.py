"""Every page opened first through its deep link, on a server where no session has run yet, shows
the app's own menu and nothing else: Streamlit's automatic list of ``pages/`` (which it serves to
such a first visit until some session has run ``st.navigation``) is turned off in config.toml, and
``app.py`` draws the menu with ``st.page_link`` (ui/components/navigation.py), the current page's
link marked with ``aria-current="page"``."""

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import VIEWPORT, AppServer
from ui.components import navigation

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fresh_servers():
    """One new server per page, all started at once (their start-up overlaps), none visited yet."""
    servers = {info.title: AppServer() for info in navigation.PAGES}
    try:
        yield {title: server.wait_until_healthy() for title, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()


@pytest.mark.parametrize("info", navigation.PAGES, ids=[info.title for info in navigation.PAGES])
def test_a_first_visit_through_a_deep_link_shows_the_apps_menu_only(browser: Browser, fresh_servers,
                                                                      info):
    context = browser.new_context(viewport=VIEWPORT)   # a fresh browser profile: no cookies
    try:
        page = context.new_page()
        page.goto(f"{fresh_servers[info.title]}/{info.url_path}")
        menu = page.locator(".st-key-app_menu")
        expect(menu.get_by_role("link")).to_have_count(len(navigation.PAGES), timeout=90_000)
        expect(menu.get_by_role("link")).to_have_text([p.title for p in navigation.PAGES])
        # Streamlit's own page list (automatic for pages/, or st.navigation's) is not drawn.
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
        expect(page.get_by_test_id("stSidebar").get_by_role("link", name="app")).to_have_count(0)
        # The page asked for is the one shown, and its link alone is marked: in bold (Streamlit)
        # and with aria-current="page" (navigation.MARK_CURRENT), which screen readers announce.
        expect(page).to_have_title(f"{info.title} · Commuting Privacy Lab"
                                   if info is not navigation.HOME else "Commuting Privacy Lab")
        weights = menu.get_by_role("link").evaluate_all(
            "links => links.map(a => Number(getComputedStyle(a.querySelector('p')).fontWeight))")
        here = navigation.PAGES.index(info)
        assert weights[here] > max(w for i, w in enumerate(weights) if i != here), weights
        expect(menu.locator("[aria-current]")).to_have_count(1)
        expect(menu.get_by_role("link").nth(here)).to_have_attribute("aria-current", "page")
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()
