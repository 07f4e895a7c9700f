"""The app's pages in sidebar order, for ``st.navigation`` in ``app.py`` and the home page's links.

Each page keeps the URL path Streamlit gave it when the pages were found in ``pages/`` by file
name (``pages/4_Flow_map.py`` → ``/Flow_map``): links in the docs, in saved URLs and in the
tests use them. The sidebar shows each page's title as its heading and browser tab name it
(``Plan & publish``), and starts with "Home" whatever the entry file is called.
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


def pages() -> list[st.Page]:
    """The ``st.Page`` of every page (the home page is the default, at the root URL)."""
    return [st.Page(info.path, title=info.title, url_path=info.url_path or None,
                    default=info is HOME) for info in PAGES]
