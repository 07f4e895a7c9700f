"""Learn: classroom demonstrations of what the mechanisms do and what ε means, on live data.

Thin page: one lesson at a time (each fits a projector screen), chosen at the top and kept in the
URL (``?lesson=…``) so a teacher can link straight to it; the lessons live in
:mod:`ui.learn.lessons` and :mod:`ui.learn.tools`.
"""

import streamlit as st

from ui.components import access, controls, data, navigation, safe, widgets
from ui.learn import menu, tools

st.set_page_config(page_title="Learn · Commuting Privacy Lab", page_icon="🎓",
                   layout="wide")
navigation.menu(controls.keep())
access.styles()
current = data.current()
st.title("Learn: what differential privacy does to commuting data")

lesson = menu.lesson_picker()
epsilon = controls.epsilon_inputs("Privacy budget ε")   # the ε every page shares
st.caption(f"On **{safe.markdown(current.title)}** ({current.matrix.n:,} commuters, "
           f"{current.matrix.domain_size:,} possible commutes). Choose another dataset on the "
           "home page.")
if current.synthetic:
    widgets.provenance(current)

tools.ALL_SECTIONS[lesson](current, epsilon)
