"""Commuting Privacy Lab: what differential privacy does to origin–destination commuting data.

The entry point (``streamlit run app.py``): it routes to the page asked for with
``st.navigation(..., position="hidden")``; the pages' files, titles and URL paths are in
:mod:`ui.components.navigation`, each page a file in ``pages/`` (the home page
``pages/0_Home.py``) that draws the app's sidebar menu itself (:func:`navigation.menu`).
"""

import streamlit as st

from ui.components import navigation

st.navigation(navigation.pages(), position="hidden").run()
