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


SENT = "classroom_guess_sent"     # {box key: the value last sent to the store from that box}


def box(code: str, number: int, field: str) -> str:
    """The widget key of a round's guess or truth box: stable across runs (its identity never
    hangs on the label or the range) and fresh in each new round."""
    return f"classroom_{field}_{code}_{number}"


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
            st.number_input(f"The class's guess{unit}", 0.0, largest, None,
                            key=box(room.code, current.number, "guess"))
            st.number_input(f"The truth, if you know it{unit}", 0.0, largest, None,
                            key=box(room.code, current.number, "truth"))
            st.form_submit_button("Save")
        save(store, room.code, key, current)


def save(store: classroom.RoomStore, code: str, key: str, current: classroom.Round) -> None:
    """Store what the boxes hold whenever it is new, on any run (full or the live view's).

    A form's boxes reach the server only when Save is pressed, so a new value is a Save. Reading
    the values instead of the button's one-run trigger keeps a Save pressed while an earlier run
    is still drawing the page (the trigger can be lost when Streamlit folds that run's rerun with
    the live view's) from being silently dropped; a refused value is said once, not every run."""
    if current.mechanism not in KINDS:
        return
    sent = st.session_state.setdefault(SENT, {})
    stored = dict(zip(guesses.FIELDS, store.guess(code, current.number)))
    for field in guesses.FIELDS:
        name = box(code, current.number, field)
        value = st.session_state.get(name)
        if value is None or sent.get(name) == value:
            continue                                         # nothing new typed in this box
        sent[name] = value
        if stored[field] == value / _scale(current):
            continue
        try:
            store.record_guess(code, key, field, value / _scale(current))
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
