"""A number question on the Classroom page ("how many minutes is your commute?"): each phone
sends one randomised bit, the teacher's screen shows the class's mean with its exact interval,
live (:mod:`dpcore.interfaces.classroom.numbers`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import numbers
from ui.classroom import repeated
from ui.classroom.coins import tally
from ui.components import charts, safe

DEFAULT_PROMPT = "How many minutes is your commute (one way)?"
DEFAULT_BOUND = 120
#: What a student's phone does, in order.
STEPS = ("Type your answer: it stays on this phone.",
         "The phone clamps it to the range the teacher set and sends ONE bit: 1 with a "
         "probability that grows with your answer, else 0.",
         "One bit says little about you; the class's many bits give its average.")


def inputs(key: str) -> tuple[str, float, float]:
    """A number round's (question, largest answer B, ε), in the round form or the room's first
    round."""
    prompt = st.text_input("Number question", DEFAULT_PROMPT, max_chars=classroom.MAX_TITLE,
                           key=f"number-prompt-{key}")
    bound = st.number_input("Largest answer B (larger answers count as B)", 1,
                            int(numbers.MAX_BOUND), DEFAULT_BOUND, key=f"number-bound-{key}")
    epsilon = st.select_slider("Privacy budget ε of the number round", classroom.EPSILONS,
                               value=1.0, key=f"number-eps-{key}")
    st.caption("Duchi, Jordan & Wainwright's one-bit mechanism: the mean's error shrinks "
               "like B/(ε√n).")
    return prompt, float(bound), float(epsilon)


def form() -> tuple[str, float, float, bool] | None:
    """The teacher's form for a number round: (question, B, ε, memoized) once submitted."""
    with st.form("classroom_number"):
        prompt, bound, epsilon = inputs("round")
        memoize = repeated.memoize_input("number")
        if st.form_submit_button("Open a number round"):
            return prompt, bound, epsilon, memoize
    return None


def live(snap: classroom.Snapshot) -> numbers.NumberEstimate | None:
    """The class's mean from its bits, with the exact 95 % interval (and returned; None before
    the first report)."""
    round_ = snap.round
    st.markdown(f"**Number round:** {safe.markdown(round_.prompt)} (answers 0–{round_.bound:g}, "
                f"ε = {round_.epsilon:g})")
    bits = tally(snap, "Reports in this round", "Bits equal to 1")
    if not bits:
        st.info("No reports yet. Each phone sends 1 with probability 1/2 + (2v/B − 1)·k, "
                f"k = {numbers.slope(round_.epsilon):.3f} at this ε, so the share of ones tells "
                "the class's average.")
        return None
    result = numbers.estimate(sum(bits), len(bits), round_.bound, round_.epsilon)
    st.success(f"Estimated class average: **{result.shown:.1f}** (exact 95 % interval "
               f"{result.low:.1f}–{result.high:.1f}), from {result.ones} ones of {result.n} "
               f"bits" + (f"; unbiased raw value {result.mean:.1f}, clipped to 0–{result.bound:g}"
                          if result.shown != result.mean else "") + ".")
    st.plotly_chart(chart(result), key="classroom_number_chart", config=charts.CONFIG)
    return result


def chart(result: numbers.NumberEstimate) -> go.Figure:
    fig = go.Figure()
    fig.add_bar(x=[result.shown], y=["average"], orientation="h",
                name="estimated average with exact 95 % interval",
                error_x={"type": "data", "symmetric": False,
                         "array": [result.high - result.shown],
                         "arrayminus": [result.shown - result.low]})
    fig.update_layout(height=180, margin={"l": 10, "r": 10, "t": 40, "b": 40},
                      title=f"Class average ({result.n} reports)",
                      xaxis={"title": "answer", "range": [0, result.bound]})
    return fig
