"""The app's pages in menu order, their routing in ``app.py`` and the menu the app draws itself.

Each page is a file in ``pages/`` (the folder the design card names) and keeps the URL path
Streamlit gives a ``pages/`` file by name (``pages/4_Flow_map.py`` → ``/Flow_map``): links in the
docs, in saved URLs and in the tests use them. Streamlit would serve a ``pages/`` folder next to
the entry file with its automatic navigation to a first visit through a deep link, until some
session had run ``st.navigation`` (a sidebar starting with "app"). ``client.showSidebarNavigation
= false`` in ``.streamlit/config.toml`` turns that automatic menu off for good (and hides
``st.navigation``'s own); ``app.py`` routes with ``st.navigation(..., position="hidden")`` and every page draws the
sidebar menu with :func:`menu` (``st.page_link``): the same titles, order and URL paths, the
current page marked by Streamlit as the active link, on every visit, first or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx


@dataclass(frozen=True)
class PageInfo:
    path: str       # relative to the app's folder
    title: str      # the sidebar label
    url_path: str   # "" for the home page, served at the root


PAGES = (
    PageInfo("pages/0_Home.py", "Home", ""),
    PageInfo("pages/1_Data.py", "Data", "Data"),
    PageInfo("pages/2_Explore.py", "Explore", "Explore"),
    PageInfo("pages/2_Places.py", "Places", "Places"),
    PageInfo("pages/3_Tradeoffs.py", "Tradeoffs", "Tradeoffs"),
    PageInfo("pages/4_Flow_map.py", "Flow map", "Flow_map"),
    PageInfo("pages/5_Learn.py", "Learn", "Learn"),
    PageInfo("pages/6_Plan_and_publish.py", "Plan & publish", "Plan_and_publish"),
    PageInfo("pages/7_Classroom.py", "Classroom", "Classroom"),
)
HOME = PAGES[0]
#: The entry file: pages run under it have the app's menu.
APP = Path(__file__).resolve().parents[2] / "app.py"


def pages() -> list[st.Page]:
    """The ``st.Page`` of every page (the home page is the default, at the root URL)."""
    return [st.Page(info.path, title=info.title, url_path=info.url_path or None,
                    default=info is HOME) for info in PAGES]


#: Marks the current page's menu link with ``aria-current="page"`` (Streamlit shows it in bold
#: only, which a screen reader does not announce). Streamlit redraws the links as it likes, so
#: an observer marks them again after every change of the page's elements; each page's run
#: names its own title (``__TITLE__``), which also makes the script run again on a page change.
MARK_CURRENT = """<style>.st-key-app_menu .stElementContainer:has(.stHtml) { display: none; }</style>
<script>(() => {
  window.dpcoreMenuCurrent = __TITLE__;
  const mark = () => document.querySelectorAll(
      ".st-key-app_menu [data-testid='stPageLink-NavLink']").forEach(link => {
    const here = link.textContent.trim() === window.dpcoreMenuCurrent;
    if (here && link.getAttribute("aria-current") !== "page") link.setAttribute("aria-current", "page");
    if (!here && link.hasAttribute("aria-current")) link.removeAttribute("aria-current");
  });
  mark();
  if (!window.dpcoreMenuObserver) {
    window.dpcoreMenuObserver = new MutationObserver(mark);
    window.dpcoreMenuObserver.observe(document.body, {childList: true, subtree: true});
  }
})();</script>"""


def menu(query: dict | None = None) -> None:
    """The sidebar menu, drawn by every page first: one link per page in :data:`PAGES` order,
    each carrying ``query`` — the settings every page shares
    (:func:`ui.components.controls.keep`) — so a link opened in a new tab reproduces them too.

    Each page draws it (not ``app.py``) because until some session has run ``st.navigation``,
    Streamlit runs a page reached through a deep link directly, without ``app.py``; the links
    name the pages' files, which both ways of running resolve to the same URL paths. Streamlit
    shows the current page's link in bold; :data:`MARK_CURRENT` gives it ``aria-current="page"``.
    A page run on its own (an ``AppTest`` of one page file) has no app around it and so no menu.
    """
    context = get_script_run_ctx()
    if context is None or Path(context.main_script_path).resolve() != APP:
        return
    with st.sidebar.container(key="app_menu"):
        for info in PAGES:
            st.page_link(info.path, label=info.title, query_params=query or None)
        here = _current(context)
        if here is not None:
            st.html(MARK_CURRENT.replace("__TITLE__", json.dumps(here.title)),
                    unsafe_allow_javascript=True)


def _current(context) -> PageInfo | None:
    """The page this run draws: Streamlit's page registry names its file, routed by ``app.py``
    or run directly (a first deep link, see the module docstring)."""
    script = context.pages_manager.get_pages().get(context.page_script_hash, {}).get("script_path")
    if script is None:
        return None
    return next((info for info in PAGES if (APP.parent / info.path).resolve()
                 == Path(script).resolve()), None)
