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


def menu() -> None:
    """The sidebar menu, drawn by every page first: one link per page in :data:`PAGES` order.

    Each page draws it (not ``app.py``) because until some session has run ``st.navigation``,
    Streamlit runs a page reached through a deep link directly, without ``app.py``; the links
    name the pages' files, which both ways of running resolve to the same URL paths, and
    Streamlit marks the current page's link. A page run on its own (an ``AppTest`` of one page
    file) has no app around it and so no menu.
    """
    context = get_script_run_ctx()
    if context is None or Path(context.main_script_path).resolve() != APP:
        return
    with st.sidebar.container(key="app_menu"):
        for info in PAGES:
            st.page_link(info.path, label=info.title)
