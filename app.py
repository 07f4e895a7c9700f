"""Commuting Privacy Lab: what differential privacy does to origin–destination commuting data.

The entry point (``streamlit run app.py``): it lists the pages with ``st.navigation`` (their
files, sidebar titles and URL paths are in :mod:`ui.navigation`) and runs the one asked for;
each page is a file in ``app_pages/``, the home page ``app_pages/0_Home.py``.
"""

import streamlit as st

from ui import navigation

st.navigation(navigation.pages()).run()
