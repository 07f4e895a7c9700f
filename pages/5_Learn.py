"""Learn: classroom demonstrations of what the mechanisms do and what ε means, on live data.

Thin page: one lesson at a time (each fits a projector screen), chosen at the top and kept in the
URL (``?lesson=…``) so a teacher can link straight to it; the lessons live in :mod:`ui.lessons`.
"""

import streamlit as st

from ui import data, lessons, safe, state, widgets

st.set_page_config(page_title="Learn · Commuting Privacy Lab", page_icon="🎓",
                   layout="wide")
state.init()
current = data.current()
st.title("Learn: what differential privacy does to commuting data")

linked = st.query_params.get("lesson")
st.session_state.setdefault("learn_lesson", linked if linked in lessons.LESSONS else "why")
lesson = st.segmented_control("Lesson", list(lessons.LESSONS), key="learn_lesson",
                              format_func=lessons.LESSONS.__getitem__, required=True)
epsilon = lessons.epsilon_picker()
st.query_params["lesson"] = lesson
st.caption(f"On **{safe.markdown(current.title)}** ({current.matrix.n:,} commuters, "
           f"{current.matrix.domain_size:,} possible commutes). Choose another dataset on the "
           "home page.")
if current.synthetic:
    widgets.provenance(current)

lessons.SECTIONS[lesson](current, epsilon)
