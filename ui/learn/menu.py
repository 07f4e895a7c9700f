"""The Learn page's lesson picker: sixteen lessons in four parts, a row of parts above the
part's lessons (one row of sixteen wrapped to three at 1,280 px and read as a wall).

The lesson is what the page keeps and links (``?lesson=…``, as before); the part follows it,
and choosing another part opens that part's first lesson.
"""

from __future__ import annotations

import streamlit as st

from ui.components import viewstate
from ui.learn import probabilistic_dp, tools

#: Part → its lessons, in teaching order; every lesson of :data:`tools.ALL_LESSONS` once.
PARTS = {
    "The idea": ("why", "phone", "epsilon", "neighbours"),
    "Mechanisms": ("coins", "select", "mean", "models", "messages", "heavy", "choose"),
    "Budgets": ("budgets", "gaussian", "memo"),
    "Other guarantees": ("kanon", probabilistic_dp.KEY),
}
LESSON_KEY, DEFAULT = "learn_lesson", "why"
PART_WIDGET = "learn_part"


def part_of(lesson: str) -> str:
    return next(part for part, keys in PARTS.items() if lesson in keys)


def _open_part(key: str) -> None:
    """Callback: a part chosen opens its first lesson (a stale report of a replaced part
    widget is ignored, as for ε: :func:`viewstate.synced`)."""
    if key == viewstate.current_key(st.session_state, PART_WIDGET) and st.session_state[key]:
        st.session_state[f"kept_{LESSON_KEY}"] = PARTS[st.session_state[key]][0]


def lesson_picker() -> str:
    """Draw the part and lesson rows; the chosen lesson's key."""
    every = list(tools.ALL_LESSONS)
    lesson = viewstate.kept_value(LESSON_KEY, DEFAULT, url="lesson", options=every)
    part = part_of(lesson if lesson in every else DEFAULT)
    key = viewstate.synced(PART_WIDGET, part)
    st.segmented_control("Part", list(PARTS), key=key, on_change=_open_part, args=(key,),
                         required=True)
    return viewstate.kept(st.segmented_control, "Lesson", LESSON_KEY, DEFAULT, url="lesson",
                          options=list(PARTS[part]), format_func=tools.ALL_LESSONS.__getitem__,
                          required=True)
