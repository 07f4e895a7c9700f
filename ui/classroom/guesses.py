"""Before and after on the Classroom page: the teacher types the class's guess before the round's
first report (and the truth, when known); the live view compares the guess, the private estimate
and the truth (:mod:`dpcore.interfaces.classroom.guesses`). Coins rounds are shown in %, number
rounds in their own unit."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import guesses
from ui.components import safe

KINDS = (classroom.coins.COINS, classroom.numbers.NUMBER)


def _scale(round_: classroom.Round) -> float:
    """Shown units per stored unit: % for a coins round's share, 1 for a number."""
    return 100.0 if round_.mechanism == classroom.coins.COINS else 1.0


def form(store: classroom.RoomStore, room: classroom.Room, key: str) -> None:
    """The teacher's boxes for the current coins or number round: the class's guess (until the
    first report) and the truth."""
    current = store.current_round(room.code)
    if current.mechanism not in KINDS:
        return
    scale = _scale(current)
    largest = scale * (1.0 if current.bound is None else current.bound)
    unit = " (%)" if scale == 100 else ""
    with st.expander("Guess first: the class's guess, then the estimate and the truth"):
        st.caption("Ask the class for its guess BEFORE anyone answers and type it here (taken "
                   "only while the round has no report). Type the truth when you know it.")
        with st.form("classroom_guess"):
            guess = st.number_input(f"The class's guess{unit}", 0.0, largest, None)
            truth = st.number_input(f"The truth, if you know it{unit}", 0.0, largest, None)
            if st.form_submit_button("Save"):
                stored = dict(zip(guesses.FIELDS, store.guess(room.code, current.number)))
                for field, value in (("guess", guess), ("truth", truth)):
                    if value is None or stored[field] == value / scale:
                        continue                             # nothing new typed in this box
                    try:
                        store.record_guess(room.code, key, field, value / scale)
                    except classroom.ClassroomError as problem:
                        st.error(safe.markdown(problem))


def compare(store: classroom.RoomStore, snap: classroom.Snapshot, result) -> None:
    """The guess, the estimate with its interval and the truth, side by side, once a guess or a
    truth was typed (``result``: the round's CoinsEstimate or NumberEstimate, or None)."""
    guess, truth = store.guess(snap.room.code, snap.round.number)
    if guess is None and truth is None:
        return
    scale = _scale(snap.round)
    shown = lambda v: "—" if v is None else f"{scale * v:.1f}"     # noqa: E731
    rows = {"the class's guess (before)": shown(guess)}
    if result is not None:
        rows["private estimate (95 % interval)"] = (f"{shown(result.shown)} ({shown(result.low)}"
                                                    f"–{shown(result.high)})")
    rows["the truth"] = shown(truth)
    st.markdown("**Before and after**" + (" (%)" if scale == 100 else ""))
    st.dataframe(pd.DataFrame({"": list(rows), "value": list(rows.values())}), hide_index=True)
    if result is None:
        return
    comparison = guesses.Comparison(guess, result.shown, result.low, result.high, truth)
    said = {"estimate": "The private estimate is closer to the truth than the guess.",
            "guess": "The guess is closer to the truth than the private estimate this time.",
            "tie": "The guess and the estimate are equally far from the truth.",
            None: ""}[comparison.closer()]
    if comparison.covered is not None:
        said += (" The truth is inside the estimate's 95 % interval." if comparison.covered
                 else " The truth is outside the estimate's 95 % interval (it happens 1 time "
                      "in 20, or more often when some students answered carelessly).")
    if said:
        st.info(said.strip())
