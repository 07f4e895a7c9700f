"""Coins mode on the Classroom page: the teacher asks a yes/no question answered with two real
coins, the students tap what the coins say, the screen shows the class's share of "yes" with its
exact interval, live (:mod:`dpcore.interfaces.classroom.coins`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dpcore import mechanisms
from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import coins, numbers
from ui.classroom import repeated
from ui.components import charts, safe

NAME = "Two coins (Warner's randomised response)"
NUMBER_NAME = "One bit (Duchi et al.'s mean estimation)"
DEFAULT_PROMPT = "Did you commute by car at least once this week?"
#: What a student does, in order (the phone shows the same).
STEPS = ("Flip a coin where nobody sees it.",
         "Heads: tap your TRUE answer.",
         "Tails: flip a second coin — heads, tap YES; tails, tap NO.",
         "Only the YES or NO you tap is sent: nobody, not even the teacher, can tell whether it "
         "is your answer or the coins'.")


def name(round_: classroom.Round) -> str:
    """Any round's way of randomising, for headings."""
    if round_.mechanism == coins.COINS:
        return NAME
    if round_.mechanism == numbers.NUMBER:
        return NUMBER_NAME
    return mechanisms.get(round_.mechanism).name


def prompt_input(key: str) -> str:
    """The yes/no question of a coins round (in the round form or the room's first round)."""
    prompt = st.text_input("Yes/no question", DEFAULT_PROMPT, max_chars=classroom.MAX_TITLE,
                           key=f"coins-prompt-{key}")
    st.caption(f"Each student flips two real coins: {' '.join(STEPS[:3])} ε = ln 3 ≈ "
               f"{coins.EPSILON:.2f}, whatever the slider says.")
    return prompt


def form() -> tuple[str, bool] | None:
    """The teacher's form for a coins round: (yes/no question, memoized), once submitted."""
    with st.form("classroom_coins"):
        prompt = prompt_input("round")
        memoize = repeated.memoize_input("coins")
        if st.form_submit_button("Open a coins round"):
            return prompt, memoize
    return None


def tally(snap: classroom.Snapshot, sent: str, ones: str) -> list[int]:
    """A 0/1 round's reports (coins, number), drawn as three metrics: how many, how many ones,
    how many rejected."""
    bits = [r["y"] for r in snap.reports]
    columns = st.columns(3)
    columns[0].metric(sent, f"{len(bits):,}")
    columns[1].metric(ones, f"{sum(bits):,}")
    columns[2].metric("Rejected (bad or late)", f"{sum(snap.rejected.values()):,}")
    return bits


def live(snap: classroom.Snapshot) -> coins.CoinsEstimate | None:
    """The class's share of true "yes": 2·(share of taps) − 1/2 with its exact interval (and
    returned; None before the first tap)."""
    st.markdown(f"**Coins round:** {safe.markdown(snap.round.prompt)}")
    taps = tally(snap, "Taps in this round", "YES taps")
    if not taps:
        st.info("No taps yet. A tap is YES with probability q/2 + 1/4 when a share q of the "
                "class truly says yes, so q = 2·(share of YES taps) − 1/2.")
        return None
    result = coins.estimate(sum(taps), len(taps))
    st.success(f"Estimated share answering yes: **{100 * result.shown:.0f} %** (exact 95 % "
               f"interval {100 * result.low:.0f} %–{100 * result.high:.0f} %), from "
               f"{result.yes} YES of {result.n} taps: 2 × {result.yes / result.n:.2f} − 0.5 = "
               f"{result.share:.2f}" + (" (clipped to the possible 0–100 %)"
                                        if result.shown != result.share else "") + ".")
    st.plotly_chart(chart(result), key="classroom_coins_chart", config=charts.CONFIG)
    return result


def chart(result: coins.CoinsEstimate) -> go.Figure:
    fig = go.Figure()
    fig.add_bar(x=[100 * result.shown], y=["yes"], orientation="h",
                name="estimated share with exact 95 % interval",
                error_x={"type": "data", "symmetric": False,
                         "array": [100 * (result.high - result.shown)],
                         "arrayminus": [100 * (result.shown - result.low)]})
    fig.update_layout(height=180, margin={"l": 10, "r": 10, "t": 40, "b": 40},
                      title=f"Share answering yes ({result.n} taps)",
                      xaxis={"title": "% of the class", "range": [0, 100]})
    return fig
