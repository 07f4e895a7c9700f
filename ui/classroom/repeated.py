"""The teacher's view of repeated rounds: what each student has spent over the room's rounds, and
— in a seeded simulation of this class — what linking a student's rounds reveals with and without
memoization (computations: :mod:`dpcore.interfaces.classroom.repeated`)."""

from __future__ import annotations

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
                     f" once per mechanism and ε ({groups} such group{'s' if groups != 1 else ''}"
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
    this class at the latest round's mechanism and ε."""
    st.markdown(f"**{spend_sentence(rounds)}**")
    current = rounds[-1]
    if current.mechanism in (classroom.coins.COINS, classroom.numbers.NUMBER):
        return                                          # no commute to name
    with st.expander("Repeated rounds: what averaging a student's answers reveals"):
        result = attack(current, room.question.d, room.students)
        last = SIMULATED_ROUNDS - 1
        st.markdown(
            f"A simulated class of {room.students} at this round's {current.mechanism.upper()}, "
            f"ε = {current.epsilon:g}, {room.question.d} possible answers (seeded, true answers "
            f"at random). Someone who links one student's reports — the same browser, a join "
            f"code — names the commute those reports support most. After {SIMULATED_ROUNDS} "
            f"fresh rounds they name **{100 * result.fresh[last]:.0f} %** of the class "
            f"(ε spent: {SIMULATED_ROUNDS} × {current.epsilon:g} = "
            f"{SIMULATED_ROUNDS * current.epsilon:g}); with memoization, "
            f"**{100 * result.memoized[last]:.0f} %** — what one report gives, however many "
            f"rounds (ε spent: {current.epsilon:g}); a random guess names "
            f"{100 * result.chance:.0f} %.")
        st.plotly_chart(attack_chart(result), key="classroom_attack", config=charts.CONFIG)
        st.caption("Memoization holds while a student's answer stays the same: the phone keeps "
                   "only its report (in this browser's storage), never the commute. A new "
                   "browser, or cleared storage, draws again and spends ε again.")
