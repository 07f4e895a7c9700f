"""The app's pages in sidebar order, for ``st.navigation`` in ``app.py`` and the home page's links.

Each page keeps the URL path Streamlit gave it when the pages were found in ``pages/`` by file
name (``pages/4_Flow_map.py`` → ``/Flow_map``): links in the docs, in saved URLs and in the
tests use them. The folder is ``app_pages/`` now: Streamlit serves a folder named ``pages/`` next
to the entry file by its old automatic navigation until some session has run ``st.navigation``,
so a first visit through a link to ``/Explore`` would show a sidebar starting with "app". The
sidebar shows each page's title as its heading and browser tab name it (``Plan & publish``),
and starts with "Home" whatever the entry file is called.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class PageInfo:
    path: str       # relative to the app's folder
    title: str      # the sidebar label
    url_path: str   # "" for the home page, served at the root


PAGES = (
    PageInfo("app_pages/0_Home.py", "Home", ""),
    PageInfo("app_pages/1_Data.py", "Data", "Data"),
    PageInfo("app_pages/2_Explore.py", "Explore", "Explore"),
    PageInfo("app_pages/3_Tradeoffs.py", "Tradeoffs", "Tradeoffs"),
    PageInfo("app_pages/4_Flow_map.py", "Flow map", "Flow_map"),
    PageInfo("app_pages/5_Learn.py", "Learn", "Learn"),
    PageInfo("app_pages/6_Plan_and_publish.py", "Plan & publish", "Plan_and_publish"),
    PageInfo("app_pages/7_Classroom.py", "Classroom", "Classroom"),
)
HOME = PAGES[0]


def pages() -> list[st.Page]:
    """The ``st.Page`` of every page (the home page is the default, at the root URL)."""
    return [st.Page(info.path, title=info.title, url_path=info.url_path or None,
                    default=info is HOME) for info in PAGES]
