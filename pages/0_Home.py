"""Commuting Privacy Lab: what differential privacy does to origin–destination commuting data.

Home page: pick a dataset and see how exposed its small cells are. The app starts from
``app.py``, which lists this page and the others (:mod:`ui.components.navigation`).
"""

import streamlit as st

from ui.components import access, controls, navigation, widgets

st.set_page_config(page_title="Commuting Privacy Lab", page_icon="🚌",
                   layout="wide")
shared = controls.keep()   # the settings every page shares, for the links
navigation.menu(shared)
access.styles()

st.title("Commuting Privacy Lab")
st.markdown(
    "Explore what differential privacy does to origin–destination commuting data: how many "
    "people a published table could expose, and what protecting them costs in accuracy.")

current = widgets.dataset_picker()
widgets.provenance(current)
widgets.figures(current.matrix)

st.header("Top 10 commutes")
widgets.top_flows(current.matrix, k=10)

st.header("Where next")
widgets.page_links(shared)
