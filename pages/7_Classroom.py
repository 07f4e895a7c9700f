"""Classroom: run local differential privacy for real — phones randomise, the teacher estimates.

Thin page: ``?room=CODE`` is a student's phone (narrow layout), ``?teach=CODE`` the teacher's live
screen, neither the start page; everything is drawn by :mod:`ui.classroom.view`.
"""

import streamlit as st

from ui.classroom import view
from ui.components import controls, navigation

st.set_page_config(page_title="Classroom · Commuting Privacy Lab", page_icon="🏫",
                   layout="centered" if "room" in st.query_params else "wide")
navigation.menu(controls.keep())
view.main()
