"""Commuting Privacy Lab: what differential privacy does to origin–destination commuting data.

The entry point (``streamlit run app.py``): it lists the pages with ``st.navigation`` (their
files, sidebar titles and URL paths are in :mod:`ui.navigation`) and runs the one asked for;
each page is a file in ``app_pages/``, the home page ``app_pages/0_Home.py``. The server's
garbage collection runs on a timer (:mod:`dpcore.collector`), not after every rerun.
"""

import streamlit as st

from dpcore import collector
from ui import navigation

collector.start()
st.navigation(navigation.pages()).run()
