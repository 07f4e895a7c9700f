"""The Classroom page's two roles: the teacher's live screen and the student's phone.

The rooms live in :class:`dpcore.interfaces.classroom.RoomStore` (one SQLite file shared by every session —
that is the point: a class shares a room). A session holds only the teacher keys of the rooms it
created (``st.session_state``) and which rounds it has already answered. The student's commute is
picked and randomised inside :mod:`ui.classroom_component`; this module never sees it, except a
true answer the student chooses to reveal.
"""

from __future__ import annotations

import io
import os
import time
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import segno
import streamlit as st

from dpcore import mechanisms
from dpcore.interfaces import classroom, export
from dpcore.theory import learn
from ui import charts, classroom_component, data, safe

#: Seconds between refreshes of the teacher's live view.
REFRESH_SECONDS = 2
#: Seconds between a phone's checks for a new round.
ROUND_CHECK_SECONDS = 5
#: Public address students should use, when the server's own view of it is wrong (a proxy, or a
#: server that sees itself as localhost): e.g. http://192.168.1.20:8501/Classroom.
URL_VARIABLE = "DPCORE_CLASSROOM_URL"
#: Commutes drawn in the live chart.
CHART_CELLS = 15
EPSILONS = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)

# --- session-state keys -------------------------------------------------------------------------
#: {room code: teacher key} of the rooms this session created or unlocked.
TEACHER_KEYS = "classroom_teacher_keys"
#: {"CODE:round": {"ok": bool, "message": str}}: this session's answer per round.
SENT = "classroom_sent"
#: {"CODE:round": message}: this session's revealed true answers.
REVEALED = "classroom_revealed"
PHONE = "classroom_phone"
JOIN_CODE = "classroom_join_code"
VIEWED_ROUND = "classroom_viewed_round"


@st.cache_resource
def store() -> classroom.RoomStore:
    """The classroom database of this server (folder: ``$DPCORE_CLASSROOM_DIR`` or the cache)."""
    return classroom.RoomStore()


def _init() -> None:
    for key in (TEACHER_KEYS, SENT, REVEALED):
        st.session_state.setdefault(key, {})


def main() -> None:
    """Route by the URL: ``?room=CODE`` is a student, ``?teach=CODE`` the teacher's screen."""
    _init()
    if "room" in st.query_params:
        student(st.query_params["room"])
    elif "teach" in st.query_params:
        teacher(st.query_params["teach"])
    else:
        landing()


# ------------------------------------------------------------------------------------ landing
def landing() -> None:
    st.title("Classroom: local differential privacy, for real")
    st.markdown("Each student's own phone randomises their commute; only the randomised report "
                "is sent, and the teacher's screen turns the class's reports into an estimate.")
    join, start = st.columns(2, gap="large")
    with join:
        st.header("Join a class")
        code = st.text_input("Room code", key=JOIN_CODE, placeholder="ABCD-EFGH")
        if st.button("Join", type="primary") and code:
            st.query_params["room"] = classroom.normalise_code(code)
            st.rerun()
    with start:
        st.header("Start a class")
        create_form()


def create_form() -> None:
    current = data.current()
    origins, destinations = classroom.zone_choices(current.matrix)
    default_o, default_d = classroom.default_zones(current.matrix)
    st.caption(f"Zones of **{safe.markdown(current.title)}** (choose another dataset on the home "
               f"page); at most {classroom.MAX_CELLS} home × work combinations.")
    with st.form("classroom_create"):
        title = st.text_input("Question shown to students",
                              "Where do you live, and where do you work or study?")
        picked_o = st.multiselect("Home zones", origins, default=default_o)
        picked_d = st.multiselect("Work or study zones", destinations, default=default_d)
        mechanism, epsilon = mechanism_inputs("oue", 1.0)
        reveal = st.checkbox("Let students also send their true answer, separately and "
                             "optionally (NOT private), to compare at the end")
        hours = st.number_input("Room expires after (hours)", 1, 72, int(classroom.ROOM_HOURS))
        limit = st.number_input("Reports the room accepts", 10, classroom.MAX_REPORTS,
                                classroom.MAX_REPORTS)
        if st.form_submit_button("Open the room", type="primary"):
            try:
                question = classroom.Question(title, tuple(picked_o), tuple(picked_d))
                code, key = store().create_room(question, mechanism, epsilon, reveal=reveal,
                                                hours=float(hours), max_reports=int(limit))
            except classroom.ClassroomError as problem:
                st.error(safe.markdown(problem))
                return
            st.session_state[TEACHER_KEYS][code] = key
            st.query_params.clear()
            st.query_params["teach"] = code
            st.rerun()


def mechanism_inputs(mechanism: str, epsilon: float) -> tuple[str, float]:
    """Mechanism and ε pickers, starting at the given values."""
    keys = list(classroom.MECHANISMS)
    chosen = st.selectbox("Local mechanism", keys, index=keys.index(mechanism),
                          format_func=lambda k: mechanisms.get(k).name)
    value = min(EPSILONS, key=lambda e: abs(e - epsilon))
    eps = st.select_slider("Privacy budget ε", EPSILONS, value=value)
    return chosen, float(eps)


# ------------------------------------------------------------------------------------ teacher
def join_link(code: str) -> str:
    """The address students open: ``$DPCORE_CLASSROOM_URL`` or this page's own, with ?room=."""
    base = os.environ.get(URL_VARIABLE)
    if not base:
        url = urlsplit(st.context.url or "http://localhost:8501/Classroom")
        base = f"{url.scheme}://{url.netloc}{url.path}"
    return f"{base}?room={code}"


def qr_png(text: str) -> bytes:
    """A QR code of ``text`` as PNG, drawn locally by segno (no service is asked)."""
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=10, border=2)
    return buffer.getvalue()


def teacher(code: str) -> None:
    try:
        room = store().room(code)
    except classroom.ClassroomError as problem:
        st.error(safe.markdown(problem))
        return
    key = st.session_state[TEACHER_KEYS].get(room.code)
    st.title(f"Classroom {classroom.format_code(room.code)}")
    st.markdown(f"**{safe.markdown(room.question.title)}**")
    link = join_link(room.code)
    left, right = st.columns([3, 2])
    with left:
        st.markdown(f"## Code: `{classroom.format_code(room.code)}`")
        st.markdown("Students open this link (or scan the code) on their phone:")
        st.code(link, language=None)
        if urlsplit(link).hostname in ("localhost", "127.0.0.1", "::1"):
            st.warning("This link names this computer as *localhost*: phones cannot reach it. "
                       "Start the app with `--server.address 0.0.0.0` and open this page through "
                       f"the computer's network address, or set `{URL_VARIABLE}`.")
        expires = time.strftime("%Y-%m-%d %H:%M", time.localtime(room.expires))
        st.caption(("Closed." if not room.is_open() else f"Open until {expires}.")
                   + f" Accepts at most {room.max_reports} reports in all.")
    with right:
        st.image(qr_png(link), caption="Scan to join", width=260,
                 alt=f"QR code of the link to join room {classroom.format_code(room.code)}")
    if key is None:
        unlock(room.code)
    elif room.is_open():
        controls(room, key)
    live_view(room.code)


def unlock(code: str) -> None:
    with st.expander("Teacher controls (needs the teacher key)"):
        entered = st.text_input("Teacher key", type="password", key=f"classroom_unlock_{code}")
        if entered:
            if store().is_teacher(code, entered):
                st.session_state[TEACHER_KEYS][code] = entered
                st.rerun()
            st.error("That is not this room's teacher key.")


def controls(room: classroom.Room, key: str) -> None:
    current = store().current_round(room.code)
    with st.expander(f"Round {current.number}: {mechanisms.get(current.mechanism).name}, "
                     f"ε = {current.epsilon:g} — change mechanism or ε (opens a new round)"):
        with st.form("classroom_round"):
            mechanism, epsilon = mechanism_inputs(current.mechanism, current.epsilon)
            if st.form_submit_button("Open a new round with these settings"):
                if (mechanism, epsilon) == (current.mechanism, current.epsilon):
                    st.info("These are the current round's settings; nothing changed.")
                else:
                    try:
                        store().new_round(room.code, key, mechanism, epsilon)
                    except classroom.ClassroomError as problem:
                        st.error(safe.markdown(problem))
                        return
                    st.session_state.pop(VIEWED_ROUND, None)
                    st.rerun()
        if st.button("Close the room (no more reports)"):
            store().close_room(room.code, key)
            st.rerun()
    with st.expander("Teacher key (do not open on the projector)"):
        st.caption("Whoever has this key can change or close the room: it lets you take control "
                   "from another browser.")
        st.code(key, language=None)


@st.fragment(run_every=REFRESH_SECONDS)
def live_view(code: str) -> None:
    """Reports, estimate and spread of one round, re-read every :data:`REFRESH_SECONDS`."""
    rounds = store().rounds(code)
    numbers = [r.number for r in rounds]
    if st.session_state.get(VIEWED_ROUND) not in numbers:
        st.session_state[VIEWED_ROUND] = numbers[-1]
    described = {r.number: f"Round {r.number}: {r.mechanism.upper()}, ε = {r.epsilon:g}"
                 + ("" if r.closed else " (open)") for r in rounds}
    number = st.selectbox("Show", numbers, key=VIEWED_ROUND, format_func=described.__getitem__)
    snap = store().snapshot(code, number)
    question = snap.room.question
    estimate = classroom.estimate_round(snap.round, question.d, snap.reports)
    columns = st.columns(3)
    columns[0].metric("Reports in this round", f"{len(snap.reports):,}")
    columns[1].metric("Rejected (bad or late)", f"{sum(snap.rejected.values()):,}",
                      help=", ".join(f"{k}: {v}" for k, v in snap.rejected.items()) or None)
    columns[2].metric("Room total", f"{snap.room_reports:,} of {snap.room.max_reports:,}")
    if estimate is None:
        st.info("No reports yet: the estimate appears as soon as the first phone sends.")
        return
    table = estimate_table(question, estimate, snap.reveals)
    st.markdown(f"With {estimate.n:,} reports, a commute nobody takes still shows up as "
                f"0 ± {classroom.Z95 * estimate.empty_sd:,.1f} students (95 % of the time): that "
                "is the spread this mechanism predicts for this many reports. Estimates inside "
                "that band cannot be told from noise.")
    st.plotly_chart(estimate_chart(table, estimate), key="classroom_chart")
    st.markdown("**Top commutes (estimated)**")
    st.dataframe(table.head(5), hide_index=True)
    if snap.reveals is not None:
        st.markdown(f"**Revealed answers (NOT private):** {int(snap.reveals.sum()):,} students "
                    "chose to also send their true commute; the column *revealed* counts them.")
    with st.expander("Every commute"):
        st.dataframe(table, hide_index=True)
        st.download_button("Download this table (CSV)", export.safe_csv(table),
                           file_name=f"classroom-{code}-round-{number}.csv", mime="text/csv")


def estimate_table(question: classroom.Question, estimate: classroom.Estimate,
                   reveals) -> pd.DataFrame:
    """One row per commute, busiest estimate first."""
    frame = pd.DataFrame({
        "commute": [question.label(c) for c in range(question.d)],
        "estimate": np.round(estimate.estimate, 1),
        "95% low": np.round(estimate.lower, 1),
        "95% high": np.round(estimate.upper, 1)})
    if reveals is not None:
        frame["revealed (not private)"] = reveals
    return frame.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)


def estimate_chart(table: pd.DataFrame, estimate: classroom.Estimate) -> go.Figure:
    top = table.head(CHART_CELLS).iloc[::-1]
    band = classroom.Z95 * estimate.empty_sd
    fig = go.Figure()
    fig.add_vrect(x0=-band, x1=band, fillcolor="grey", opacity=0.15, line_width=0,
                  annotation_text="noise only", annotation_position="top left")
    fig.add_bar(x=top["estimate"], y=[charts.escape(charts.short(c)) for c in top["commute"]],
                orientation="h", name="estimate with 95 % interval",
                error_x={"type": "data", "symmetric": False,
                         "array": top["95% high"] - top["estimate"],
                         "arrayminus": top["estimate"] - top["95% low"]},
                hovertemplate="%{y}: %{x:.1f} students<extra></extra>")
    if "revealed (not private)" in top:
        fig.add_scatter(x=top["revealed (not private)"], y=[charts.escape(charts.short(c))
                                                           for c in top["commute"]],
                        mode="markers", marker_symbol="diamond", marker_size=10,
                        name="revealed true answers (not private)")
    fig.update_layout(height=120 + 28 * len(top), margin={"l": 10, "r": 10, "t": 40, "b": 40},
                      title=f"Estimated students per commute (top {len(top)}, {estimate.n} reports)",
                      xaxis_title="students (estimated)", legend_orientation="h")
    return fig


# ------------------------------------------------------------------------------------ student
def student(code: str) -> None:
    st.title("Classroom")
    try:
        room = store().room(code)
        current = store().current_round(room.code)
    except classroom.ClassroomError as problem:
        st.error(safe.markdown(problem))
        return
    question = room.question
    st.markdown(f"Room **{classroom.format_code(room.code)}** · round {current.number} · "
                f"{mechanisms.get(current.mechanism).name}, ε = {current.epsilon:g}")
    if not room.is_open():
        st.warning("This room is closed: the teacher closed it or it expired.")
        return
    st.header(safe.markdown(question.title))
    round_key = f"{room.code}:{current.number}"
    mech = current.build()
    with st.expander("What your phone will do", expanded=True):
        for number, step in enumerate(learn.device_rules(mech, question.d), start=1):
            st.markdown(f"{number}. {step}")
        st.caption("Your choice below is randomised by this page in your own browser; only the "
                   "report is sent.")
    data_for_phone = {"room": room.code, "spec": classroom.client_spec(current, question.d),
                      "origins": list(question.origins),
                      "destinations": list(question.destinations),
                      "reveal": room.reveal,
                      "alreadySent": bool(st.session_state[SENT].get(round_key, {}).get("ok")),
                      "sent": st.session_state[SENT].get(round_key),
                      "revealed": st.session_state[REVEALED].get(round_key)}
    classroom_component.phone(data_for_phone, key=PHONE, on_report=_received_report,
                              on_reveal=_received_reveal)
    follow_rounds(room.code, current.number)
    answer = st.session_state[SENT].get(round_key)
    if answer is not None and not answer["ok"]:
        st.error(safe.markdown(answer["message"]))
    st.caption("One report per round from this browser session: the server refuses a second "
               "one from the same session, and the phone remembers sent rounds in this browser's "
               "storage. A reload, another browser or a private window is a new session, so this "
               "stops accidents, not a determined student.")


@st.fragment(run_every=ROUND_CHECK_SECONDS)
def follow_rounds(code: str, shown: int) -> None:
    """Bring the phone to the teacher's new round (or closed room) without a reload."""
    try:
        room, latest = store().room(code), store().current_round(code)
    except classroom.ClassroomError:
        return
    if latest.number != shown or not room.is_open():
        st.rerun(scope="app")


def _trigger(name: str):
    """The component's trigger value ``name`` (None when something else triggered the run)."""
    result = st.session_state.get(PHONE)
    if result is None:
        return None
    return result.get(name) if isinstance(result, dict) else getattr(result, name, None)


def _received_report() -> None:
    payload = _trigger("report")
    if not isinstance(payload, dict):
        return
    round_key = f"{payload.get('room')}:{payload.get('round')}"
    if st.session_state[SENT].get(round_key, {}).get("ok"):
        st.session_state[SENT][round_key] = {
            "ok": True, "message": "This session has already sent a report in this round; the "
                                   "second one was not counted."}
        return
    st.session_state[SENT][round_key] = submit(payload)


def submit(payload: dict) -> dict:
    """Hand one phone's report to the store: {"ok", "message"} for the student."""
    try:
        count = store().submit(str(payload.get("room", "")), payload.get("round"),
                               payload.get("report"), nonce=payload.get("nonce"))
    except classroom.ClassroomError as problem:
        return {"ok": False, "message": f"Not counted: {problem}"}
    return {"ok": True, "message": f"Sent: report number {count} of this round. Your true "
                                   "commute never left your phone."}


def _received_reveal() -> None:
    payload = _trigger("reveal")
    if not isinstance(payload, dict):
        return
    round_key = f"{payload.get('room')}:{payload.get('round')}"
    if round_key in st.session_state[REVEALED]:
        return
    try:
        store().reveal(str(payload.get("room", "")), payload.get("round"), payload.get("cell"),
                       nonce=payload.get("nonce"))
        message = "True answer sent (not private)."
    except classroom.ClassroomError as problem:
        message = f"True answer not sent: {problem}"
    st.session_state[REVEALED][round_key] = message
