"""The teacher's view of repeated rounds: what each student has spent over the room's rounds;
in a seeded simulation of this class, what linking a student's rounds reveals with and without
memoization; and, in a room with join codes, the same attack run live on the room's stored
reports linked by code (computations: :mod:`dpcore.interfaces.classroom.repeated`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import repeated
from ui.components import charts

#: Linked rounds the simulation follows.
SIMULATED_ROUNDS = 20


@st.cache_data(max_entries=64, show_spinner=False)
def attack(round_: classroom.Round, d: int, students: int) -> repeated.Attack:
    return repeated.averaging_attack(round_, d, students, SIMULATED_ROUNDS, seed=0)


def memoize_input(key: str, value: bool = False) -> bool:
    """The "memoize" checkbox of a round's form (``key`` tells the forms apart)."""
    return st.checkbox("Memoize: in repeated rounds each phone resends its first report",
                       value=value, key=f"memo-{key}",
                       help="With memoization a student who is asked the same question again "
                            "(the same way: mechanism and ε; a coins or number round's same "
                            "question) sends the report their phone drew the first time, so "
                            "linking their rounds reveals nothing more and they spend ε once. "
                            "Without it every round is a fresh draw and costs ε again. Not for "
                            "OLH, whose hash seed changes every round.")


def spend_sentence(rounds: list[classroom.Round]) -> str:
    """Each student's total ε in words, with how it adds up."""
    total = repeated.total_epsilon(rounds)
    memoized = [r for r in rounds if r.memoize]
    fresh = len(rounds) - len(memoized)
    groups = len({repeated.memo_group(r) for r in memoized})
    parts = [f"{fresh} fresh round adds its ε" if fresh == 1 else
             f"{fresh} fresh rounds add their ε"] if fresh else []
    if memoized:
        parts.append(f"{len(memoized)} memoized round{' counts' if len(memoized) == 1 else 's count'}"
                     f" once per question asked the same way ({groups} such "
                     f"group{'s' if groups != 1 else ''}"
                     ": the phone resends its first report)")
    answered = "the round" if len(rounds) == 1 else f"all {len(rounds)} rounds"
    return (f"Each student who answered {answered} has spent ε = {total:.3g} in this room: "
            + "; ".join(parts) + ".")


def attack_chart(result: repeated.Attack) -> go.Figure:
    fig = go.Figure()
    fig.add_scatter(x=result.rounds, y=100 * result.fresh, mode="lines+markers",
                    name="fresh randomness every round")
    fig.add_scatter(x=result.rounds, y=100 * result.memoized, mode="lines+markers",
                    name="memoized (first report reused)")
    fig.add_hline(y=100 * result.chance, line_dash="dot", line_color="grey",
                  annotation_text="a guess at random")
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 40, "b": 40},
                      title="Students whose commute the attack names",
                      xaxis={"title": "rounds linked to one student"},
                      yaxis={"title": "% of the class", "range": [0, 100]},
                      legend={"orientation": "h", "y": -0.3})
    return fig


def panel(room: classroom.Room, rounds: list[classroom.Round]) -> None:
    """Total ε per student over the room's ``rounds``, and the averaging attack simulated for
    this class at the latest round's mechanism and ε (a coins round as randomised response over
    yes/no; nothing to name in a number round)."""
    st.markdown(f"**{spend_sentence(rounds)}**")
    current = rounds[-1]
    cells = repeated.as_cells(current, room.question.d)
    if cells is None:
        return                                          # a number: no cell to name
    round_, d = cells
    what = "answer" if current.mechanism == classroom.coins.COINS else "commute"
    with st.expander("Repeated rounds: what averaging a student's answers reveals"):
        result = attack(round_, d, room.students)
        last = SIMULATED_ROUNDS - 1
        how = ("two coins (randomised response, ε = ln 3)"
               if current.mechanism == classroom.coins.COINS
               else f"this round's {current.mechanism.upper()}, ε = {current.epsilon:g}")
        st.markdown(
            f"A simulated class of {room.students} at {how}, {d} possible answers (seeded, true "
            f"answers at random). Someone who links one student's reports — the same browser, a "
            f"join code — names the {what} those reports support most. After "
            f"{SIMULATED_ROUNDS} fresh rounds they name **{100 * result.fresh[last]:.0f} %** of "
            f"the class (ε spent: {SIMULATED_ROUNDS} × {current.epsilon:.3g} = "
            f"{SIMULATED_ROUNDS * current.epsilon:.3g}); with memoization, "
            f"**{100 * result.memoized[last]:.0f} %** — what one report gives, however many "
            f"rounds (ε spent: {current.epsilon:.3g}); a random guess names "
            f"{100 * result.chance:.0f} %.")
        st.plotly_chart(attack_chart(result), key="classroom_attack", config=charts.CONFIG)
        st.caption("Memoization holds while a student's answer stays the same: the phone keeps "
                   "only its report (in this browser's storage), never the answer. A new "
                   "browser, or cleared storage, draws again and spends ε again.")


def live(rooms: classroom.RoomStore, room: classroom.Room, key: str) -> None:
    """The attack run on this room's stored reports of the current round's kind, linked by join
    code, per code (numbered as in the room's join codes list) and in all. The true answers are
    not stored, so the attack's success cannot be counted: the screen shows what linking changed,
    and what the simulation expects of it."""
    rounds = rooms.rounds(room.code)
    current = rounds[-1]
    rounds = repeated.same_kind(rounds, current)
    st.markdown("**Live: this room's reports linked by join code**")
    cells = repeated.as_cells(current, room.question.d)
    if cells is None:
        st.caption("A number round's answer is a number, not a choice: averaging a student's "
                   "bits estimates their number, with an error shrinking like 1/√rounds; "
                   "this attack names choices only.")
        return
    kind = "memoized" if current.memoize else "fresh"
    result = repeated.linked_attack(rounds, room.question.d, rooms.linked_reports(
        room.code, key, [r.number for r in rounds]))
    if len(rounds) < 2 or not result:
        st.caption(f"After a second {kind} round of this question (\"Ask this round again\"), "
                   "this shows what linking each join code's reports gives an attacker, live.")
        return
    typical = int(np.median([r.reports for r in result]))
    moved = sum(r.moved for r in result)
    identical = sum(r.identical for r in result)
    expected = attack(*cells, room.students)
    t = min(typical, SIMULATED_ROUNDS) - 1
    said = (f"{len(result)} join code(s) sent reports in the {len(rounds)} {kind} rounds of this "
            f"question ({typical} each, the median). Averaging each code's reports changed the "
            f"attacker's one-report guess for **{moved}** of them; **{identical}** sent the "
            "same report every time. ")
    if current.memoize:
        said += (f"A code's identical reports give the guess one report gives: the simulation's "
                 f"**{100 * expected.memoized[t]:.0f} %** of the class named, however many "
                 "rounds.")
    else:
        said += (f"The true answers are not stored, so how often the guesses are right cannot be "
                 f"counted here; with these settings the simulation expects "
                 f"**{100 * expected.fresh[t]:.0f} %** of the class named after {t + 1} linked "
                 f"rounds, against **{100 * expected.fresh[0]:.0f} %** from one.")
    st.markdown(said)
    number = {c: k for k, (c, _) in enumerate(rooms.join_codes(room.code, key), start=1)}
    st.dataframe(pd.DataFrame({
        "join code": [f"#{number.get(r.code, 0)}" for r in result],
        "linked reports": [r.reports for r in result],
        "all identical": ["yes" if r.identical else "" for r in result],
        "averaging changed the guess": ["yes" if r.moved else "" for r in result]}),
        hide_index=True)
    st.caption("Per join code (numbered as in the join codes list), never the guess itself: the "
               "guess says something about the student's answer, and the room stores no true "
               "answers to check it against.")
