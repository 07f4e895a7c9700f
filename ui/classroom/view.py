"""The Classroom page's two roles: the teacher's live screen and the student's phone.

The rooms live in :class:`dpcore.interfaces.classroom.RoomStore` (one SQLite file shared by every session —
that is the point: a class shares a room). A session holds the teacher keys of the rooms it
created, a random session token, its :class:`~dpcore.interfaces.classroom.Ticket` per round (room
and round as this page read them, a single-use nonce, OLH's issued seed) and a rate limit — what
the store trusts instead of anything the phone says. The student's commute is picked and
randomised inside :mod:`ui.classroom.component`; this module never sees it, except a true answer
the student chooses to reveal. A store failure is shown as its plain message on either screen.
"""

from __future__ import annotations

import io
import os
import secrets
import time
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import segno
import streamlit as st

from dpcore import export, mechanisms
from dpcore.interfaces import classroom, classroom_admission as admission, classroom_stats
from dpcore.interfaces.store import StoreUnavailable
from dpcore.theory import learn
from ui.classroom import coins as coins_view, component, guesses, repeated
from ui.classroom import numbers as numbers_view
from ui.components import charts, data, safe

#: Seconds between refreshes of the teacher's live view.
REFRESH_SECONDS = 2
#: Seconds between a phone's checks for a new round.
ROUND_CHECK_SECONDS = 5
#: Public address students should use, when the server's own view of it is wrong (a proxy, or a
#: server that sees itself as localhost): e.g. http://192.168.1.20:8501/Classroom.
URL_VARIABLE = "DPCORE_CLASSROOM_URL"
#: Commutes drawn in the live chart.
CHART_CELLS = 15
#: The teacher chart's bars: an estimate, and one clipped to [0, n] (its raw value impossible).
ESTIMATE_COLOUR, CLIPPED_COLOUR = "#1f77b4", "#8c8c8c"
CLIPPED = ("clipped: its raw estimate is impossible,<br>◀ below 0 (drawn at 0) or ▶ above the "
           "number<br>of reports (drawn at that number)")
#: The teacher chart's title, over its own line (with the count under it, it fits a 390 px phone).
TITLE = "Estimated students per commute"
#: Characters a legend entry's line holds before it wraps (a 390 px phone shows about 50).
LEGEND_WIDTH = 44
#: A clipped estimate's mark sits this share of n + 1 beyond 0 or n: outside every bar and
#: interval (all within [0, n]), so it covers none (a "clipped" text at the bar's end lay on
#: the interval's whisker).
CLIP_MARGIN = 0.1

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
#: This browser session's random token (the store keeps only hashes of it).
SESSION = "classroom_session"
#: {"CODE:round": Ticket} issued to this session.
TICKETS = "classroom_tickets"
#: This session's RateLimit on report and reveal attempts.
RATE = "classroom_rate"
#: Widget key of "About how many students?".
STUDENTS = "classroom_students"
#: The message after a discard, shown once.
DISCARDED = "classroom_discarded"
#: {room code: join code} this session's student typed.
TYPED_CODES = "classroom_typed_codes"
#: {room code: the wrong join code last typed}: a rerun does not count it again.
WRONG_CODES = "classroom_wrong_codes"
OPEN = "classroom_open"
#: Why the phone's last message was refused unread (too deeply nested), shown once.
REFUSED = "classroom_refused"


@st.cache_resource
def store() -> classroom.RoomStore:
    """The classroom database of this server (folder: ``$DPCORE_CLASSROOM_DIR`` or the cache)."""
    return classroom.RoomStore()


def _init() -> None:
    for key in (TEACHER_KEYS, SENT, REVEALED, TICKETS, TYPED_CODES, WRONG_CODES):
        st.session_state.setdefault(key, {})
    st.session_state.setdefault(SESSION, secrets.token_hex(16))
    st.session_state.setdefault(RATE, classroom.RateLimit())


def unavailable(problem: StoreUnavailable, teacher: bool = False) -> None:
    """A store failure as its plain message (and, on the teacher's screen, the technical detail
    for whoever runs the server)."""
    st.error(safe.markdown(problem))
    if teacher and problem.detail:
        st.caption(f"For whoever runs the server: {safe.markdown(problem.detail)}")


def main() -> None:
    """Route by the URL: ``?room=CODE`` is a student, ``?teach=CODE`` the teacher's screen."""
    _init()
    is_teacher = "teach" in st.query_params
    try:
        if "room" in st.query_params:
            student(st.query_params["room"])
        elif is_teacher:
            teacher(st.query_params["teach"])
        else:
            landing()
    except StoreUnavailable as problem:
        unavailable(problem, teacher=is_teacher)
    except classroom.ClassroomError as problem:
        st.error(safe.markdown(problem))


# ------------------------------------------------------------------------------------ landing
def landing() -> None:
    st.title("Classroom: local differential privacy, for real")
    st.markdown("Each student's own phone randomises their commute; only the randomised report "
                "is sent, and the teacher's screen turns the class's reports into an estimate.")
    join, start = st.columns(2, gap="large")
    with join:
        st.header("Join a class")
        join_box()
    with start:
        st.header("Start a class")
        create_form()


def join_box(typed: str = "") -> None:
    """A box for the room code (pre-filled with what was typed before, so a typo can be fixed)."""
    code = st.text_input("Room code", value=typed, key=JOIN_CODE, placeholder="ABCD-EFGH",
                         max_chars=20)
    if st.button("Join", type="primary") and code:
        st.query_params.clear()
        st.query_params["room"] = classroom.normalise_code(code)
        st.rerun()


@st.cache_data(max_entries=256, show_spinner=False)
def proposal(students: int, d: int) -> classroom_stats.Proposal:
    return classroom_stats.propose(students, d)


def create_form() -> None:
    current = data.current()
    origins, destinations = classroom.zone_choices(current.matrix)
    default_o, default_d = classroom.default_zones(current.matrix)
    st.caption(f"Zones of **{safe.markdown(current.title)}** (choose another dataset on the home "
               f"page); at most {classroom.MAX_CELLS - 1} home × work combinations, plus "
               f"\"{classroom.NONE_OF_THESE}\" for everyone else.")
    title = st.text_input("Question shown to students",
                          "Where do you live, and where do you work or study?",
                          max_chars=classroom.MAX_TITLE)
    picked_o = st.multiselect("Home zones", origins, default=default_o)
    picked_d = st.multiselect("Work or study zones", destinations, default=default_d)
    students = int(st.number_input("About how many students?", 2, classroom.MAX_REPORTS, 25,
                                   key=STUDENTS))
    d = max(len(picked_o) * len(picked_d), 1) + 1
    proposed = proposal(students, d)
    st.info(f"Proposed for this class: {safe.markdown(proposed.expectation())} A smaller ε is "
            "more private and noisier; fewer students need a larger ε to see anything.")
    mechanism, epsilon, prompt, bound = first_round(proposed, key=f"create-{students}-{d}")
    reveal = st.checkbox("Let students also send their true answer, separately and "
                         "optionally (NOT private), to compare at the end")
    memoize = repeated.memoize_input("create")
    mode, cap, codes = admission_inputs(students)
    hours = st.number_input("Room expires after (hours)", 1, 72, int(classroom.ROOM_HOURS))
    limit = st.number_input("Reports the room accepts", 10, classroom.MAX_REPORTS,
                            classroom.MAX_REPORTS)
    if st.button("Open the room", type="primary", key=OPEN):
        try:
            question = classroom.Question(title, tuple(picked_o), tuple(picked_d))
            code, key = store().create_room(question, mechanism, epsilon, reveal=reveal,
                                            hours=float(hours), max_reports=int(limit),
                                            students=students, admission=mode, cap=cap,
                                            codes=codes, memoize=memoize, prompt=prompt,
                                            bound=bound)
        except classroom.ClassroomError as problem:
            st.error(safe.markdown(problem))
            return
        st.session_state[TEACHER_KEYS][code] = key
        st.query_params.clear()
        st.query_params["teach"] = code
        st.rerun()


def admission_inputs(students: int) -> tuple[str, int, int]:
    """How the room admits reports: (mode, cap per address, number of join codes)."""
    modes = list(admission.ADMISSIONS)
    mode = st.radio("Who may send a report", modes, format_func=admission.ADMISSIONS.__getitem__,
                    key="classroom_admission",
                    help="Open: every browser session sends one report per round — a student who "
                         "clears the site data and reloads counts again. Capped: at most the cap "
                         "per network address (a class on one school Wi-Fi shares one address: "
                         "raise the cap to the class size). Join codes: you hand each student a "
                         "code; each code sends one report per round.")
    cap = codes = 0
    if mode == "address":
        cap = int(st.number_input("Reports per network address per round", 1, admission.MAX_CAP,
                                  admission.DEFAULT_CAP, key="classroom_cap",
                                  help=f"Default {admission.DEFAULT_CAP}. Students behind one "
                                       "router share an address: raise it to the class size."))
    elif mode == "codes":
        codes = int(st.number_input("Join codes to print (one per student)", 1,
                                    admission.MAX_CODES, min(students, admission.MAX_CODES),
                                    key="classroom_codes"))
    return mode, cap or admission.DEFAULT_CAP, codes


#: The kinds of first round a room can open with.
FIRST_ROUNDS = {"commute": "The commute question above",
                classroom.coins.COINS: "A yes/no question with two coins",
                classroom.numbers.NUMBER: "A number question (one bit)"}


def first_round(proposed: classroom_stats.Proposal,
                key: str) -> tuple[str, float, str | None, float | None]:
    """The room's first round: (mechanism, ε, prompt, bound) — the commute question with the
    proposed mechanism and ε to start from, or a coins or number round (the commute question
    stays the room's for later rounds)."""
    kind = st.radio("First round", list(FIRST_ROUNDS), format_func=FIRST_ROUNDS.__getitem__,
                    key="classroom_first_round", horizontal=True)
    if kind == classroom.coins.COINS:
        return kind, classroom.coins.EPSILON, coins_view.prompt_input("create"), None
    if kind == classroom.numbers.NUMBER:
        prompt, bound, epsilon = numbers_view.inputs("create")
        return kind, epsilon, prompt, bound
    return (*mechanism_inputs(proposed.mechanism, proposed.epsilon, key=key), None, None)


def mechanism_inputs(mechanism: str, epsilon: float, key: str) -> tuple[str, float]:
    """Mechanism and ε pickers, starting at the given values (a new ``key`` resets them)."""
    keys = list(classroom.MECHANISMS)
    chosen = st.selectbox("Local mechanism", keys,
                          index=keys.index(mechanism) if mechanism in keys else 0,
                          format_func=lambda k: mechanisms.get(k).name, key=f"mech-{key}")
    value = min(classroom.EPSILONS, key=lambda e: abs(e - epsilon))
    eps = st.select_slider("Privacy budget ε", classroom.EPSILONS, value=value, key=f"eps-{key}")
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
                   + f" Accepts at most {room.max_reports} reports in all. "
                   + admission_caption(room))
    with right:
        st.image(qr_png(link), caption="Scan to join", width=260,
                 alt=f"QR code of the link to join room {classroom.format_code(room.code)}")
    if key is None:
        unlock(room.code)
    elif room.is_open():
        controls(room, key)
        guesses.form(store(), room, key)
        if room.admission == "codes":
            join_codes(room, key, link)
    live_view(room.code, key if room.is_open() else None)


def admission_caption(room: classroom.Room) -> str:
    if room.admission == "address":
        return f"At most {room.cap} report(s) per network address per round."
    if room.admission == "codes":
        return "Each one-time join code sends one report per round."
    return ("Open: one report per browser session and round (a reload or a cleared browser is "
            "a new session).")


def join_codes(room: classroom.Room, key: str, link: str) -> None:
    """The room's join codes to hand out, with the round each was last used in: a plain table
    (its text can be selected and copied), a page of cards to print and cut, and a CSV."""
    codes = store().join_codes(room.code, key)
    table = pd.DataFrame({"#": range(1, len(codes) + 1),      # how the live attack names a code
                          "join code": [c for c, _ in codes],
                          "last used in round": [str(u or "") for _, u in codes]})
    name = classroom.format_code(room.code)
    with st.expander(f"Join codes ({len(codes)}): hand one to each student"):
        st.caption("Each code admits one report per round. Print the cards or read the codes "
                   "out one by one; do not show this list on the projector.")
        row = st.container(horizontal=True)
        charts.download_button(
            row, "Cards to print (HTML)",
            lambda: admission.join_codes_page(name, room.question.title, link,
                                              table["join code"].tolist()).encode("utf-8"),
            f"join-codes-{name}.html", "text/html", "classroom_codes_html")
        charts.download_button(row, "Join codes (CSV)", lambda: export.safe_csv(table),
                               f"join-codes-{name}.csv", "text/csv", "classroom_codes_csv")
        charts.wrapped_table(table)


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
    with st.expander(f"Round {current.number}: {coins_view.name(current)}, "
                     f"ε = {current.epsilon:g} — change mechanism or ε (opens a new round)"):
        with st.form("classroom_round"):
            mechanism, epsilon = mechanism_inputs(current.mechanism, current.epsilon, "round")
            memoize = repeated.memoize_input("round", current.memoize)
            if st.form_submit_button("Open a new round with these settings"):
                if (mechanism, epsilon, memoize) == (current.mechanism, current.epsilon,
                                                     current.memoize):
                    st.info("These are the current round's settings; nothing changed. To ask "
                            "the same again, use \"Ask this round again\".")
                else:
                    open_round(room, key, mechanism, epsilon, memoize)
        if st.button("Ask this round again (same question, mechanism and ε)",
                     key="classroom_repeat"):
            open_round(room, key, current.mechanism, current.epsilon, current.memoize,
                       current.prompt, current.bound)
        asked = coins_view.form()
        if asked is not None:
            prompt, memoize = asked
            open_round(room, key, classroom.coins.COINS, classroom.coins.EPSILON, memoize,
                       prompt)
        asked = numbers_view.form()
        if asked is not None:
            prompt, bound, epsilon, memoize = asked
            open_round(room, key, classroom.numbers.NUMBER, epsilon, memoize, prompt, bound)
        if st.button("Close the room (no more reports)"):
            store().close_room(room.code, key)
            st.rerun()
    repeated.panel(room, store().rounds(room.code))
    with st.expander("Teacher key (do not open on the projector)"):
        st.caption("Whoever has this key can change or close the room: it lets you take control "
                   "from another browser.")
        st.code(key, language=None)


def open_round(room: classroom.Room, key: str, mechanism: str, epsilon: float,
               memoize: bool, prompt: str | None = None, bound: float | None = None) -> None:
    """Open the next round (showing the store's refusal, if any) and show it."""
    try:
        store().new_round(room.code, key, mechanism, epsilon, memoize=memoize, prompt=prompt,
                          bound=bound)
    except classroom.ClassroomError as problem:
        st.error(safe.markdown(problem))
        return
    st.session_state.pop(VIEWED_ROUND, None)
    st.rerun()


def discard(room: classroom.Room, key: str) -> None:
    """The room's browser sessions (by an anonymous label), most rejected reports first, and a
    button to discard one session's reports."""
    sessions = store().sessions(room.code)
    with st.expander("Browser sessions: discard a misbehaving one"):
        if not sessions:
            st.caption("No phone has sent anything yet.")
            return
        st.caption(f"{len(sessions):,} session{'' if len(sessions) == 1 else 's'}. "
                   "Each row is one browser session, labelled by 8 characters of a hash (nothing "
                   "about the student). A session with many rejected reports is probably a "
                   "script; discarding it deletes its reports in every round and refuses its "
                   "later ones. (Its revealed answers, stored unlinked, stay.)")
        shown = sessions[:50]
        st.dataframe(pd.DataFrame({"session": [s.label for s in shown],
                                   "reports kept": [s.reports for s in shown],
                                   "reports rejected": [s.rejected for s in shown],
                                   "discarded": ["yes" if s.discarded else "" for s in shown]}),
                     hide_index=True)
        choices = [s for s in shown if not s.discarded]
        if choices:
            chosen = st.selectbox("Session to discard", choices, format_func=lambda s: s.label,
                                  key="classroom_discard_choice")
            if st.button("Discard this session's reports"):
                deleted = store().discard_session(room.code, key, chosen.session)
                st.session_state[DISCARDED] = (f"Session {chosen.label} discarded: {deleted} "
                                               "report(s) deleted.")
                st.rerun()                     # the counts above, without the session
        addresses(room, key)
        if DISCARDED in st.session_state:
            st.success(st.session_state.pop(DISCARDED))


def addresses(room: classroom.Room, key: str) -> None:
    """The sessions grouped by network address (8 characters of its keyed hash), most sessions
    first, with a button discarding every session of one address at once."""
    groups = store().addresses(room.code)
    st.markdown("**By network address**")
    st.caption("Sessions from one address: one device reloading, or a class on one Wi-Fi. The "
               "address is stored only as a keyed hash; the label is 8 characters of it.")
    shown = groups[:50]
    st.dataframe(pd.DataFrame({"address": [g.label for g in shown],
                               "sessions": [g.sessions for g in shown],
                               "reports kept": [g.reports for g in shown],
                               "reports rejected": [g.rejected for g in shown],
                               "sessions discarded": [g.discarded for g in shown]}),
                 hide_index=True)
    choices = [g for g in shown if g.discarded < g.sessions]
    if choices:
        chosen = st.selectbox("Address to discard", choices, format_func=lambda g: g.label,
                              key="classroom_discard_address")
        if st.button("Discard every session of this address"):
            deleted = store().discard_address(room.code, key, chosen.address)
            st.session_state[DISCARDED] = (f"Address {chosen.label} discarded: {chosen.sessions} "
                                           f"session(s), {deleted} report(s) deleted.")
            st.rerun()


def wrong_join_codes(room: classroom.Room, key: str) -> None:
    """Wrong join codes typed in the room (a guessing script shows here), with the browser
    sessions and network addresses that typed them, labelled as in the tables below."""
    rows = store().wrong_join_codes(room.code, key)
    by_address = [r for r in rows if r.kind == "address"]
    if not by_address:
        return
    wrong, refused = sum(r.wrong for r in by_address), sum(r.refused for r in by_address)
    sessions = sum(1 for r in rows if r.kind == "session")
    st.warning(f"Wrong join codes typed: {wrong:,}, from {sessions:,} browser session(s) and "
               f"{len(by_address):,} network address(es)"
               + (f"; {refused:,} more refused unchecked by the limit" if refused else "")
               + f". A session may type {admission.WRONG_CODES_PER_SESSION} wrong codes and an "
               f"address {admission.WRONG_CODES_PER_ADDRESS} every "
               f"{admission.JOIN_WINDOW / 60:.0f} minutes; many from one place is guessing.")
    with st.expander("Wrong join codes: who typed them"):
        shown = rows[:50]
        st.dataframe(pd.DataFrame({
            "typed from": ["browser session" if r.kind == "session" else "network address"
                           for r in shown],
            "label": [r.label for r in shown],
            "wrong codes": [r.wrong for r in shown],
            "refused by the limit": [r.refused for r in shown]}), hide_index=True)


@st.fragment(run_every=REFRESH_SECONDS)
def live_view(code: str, key: str | None) -> None:
    """Reports, estimate and spread of one round, re-read every :data:`REFRESH_SECONDS`; with the
    teacher ``key``, the browser sessions too (new ones appear as they send)."""
    try:
        if key is not None:                  # a Save whose run was cut short lands here too
            guesses.save(store(), code, key, store().current_round(code))
        _live_view(code)
        if key is not None:
            room = store().room(code)
            if room.admission == "codes":
                wrong_join_codes(room, key)
                with st.expander("Live: what linking reports by join code gives an attacker"):
                    repeated.live(store(), room, key)
            discard(room, key)
    except (StoreUnavailable, classroom.ClassroomError) as problem:
        st.error(safe.markdown(problem))


def _live_view(code: str) -> None:
    rounds = store().rounds(code)
    numbers = [r.number for r in rounds]
    if st.session_state.get(VIEWED_ROUND) not in numbers:
        st.session_state[VIEWED_ROUND] = numbers[-1]
    described = {r.number: f"Round {r.number}: {r.mechanism.upper()}, ε = {r.epsilon:g}"
                 + (", memoized" if r.memoize else "") + ("" if r.closed else " (open)")
                 for r in rounds}
    number = st.selectbox("Show", numbers, key=VIEWED_ROUND, format_func=described.__getitem__)
    snap = store().snapshot(code, number)
    if snap.round.mechanism in guesses.KINDS:
        view = coins_view if snap.round.mechanism == classroom.coins.COINS else numbers_view
        guesses.compare(store(), snap, view.live(snap))
        return
    question = snap.room.question
    estimate = classroom_stats.estimate_round(snap.round, question.d, snap.reports)
    if estimate is None:
        expected = snap.room.students
        what = classroom_stats.resolution(snap.round.mechanism, snap.round.epsilon, question.d,
                                          expected)
        band = classroom_stats.empty_band(snap.round, question.d, expected)
    else:
        what, band = estimate.resolution, estimate.empty_band
    tell(what, estimate)
    columns = st.columns(4)
    columns[0].metric("Reports in this round", f"{len(snap.reports):,}")
    columns[1].metric("Reports in the last minute", f"{snap.last_minute:,}",
                      help="A sudden burst from few students can be one device reloading.")
    columns[2].metric("Rejected (bad or late)", f"{sum(snap.rejected.values()):,}",
                      help=", ".join(f"{k}: {v}" for k, v in snap.rejected.items()) or None)
    columns[3].metric("Room total", f"{snap.room_reports:,} of {snap.room.max_reports:,}")
    if estimate is None:
        band = shown_band(band, expected)
        st.info(f"No reports yet: the estimate appears as soon as the first phone sends. With "
                f"the {expected} students you expect, a commute nobody takes will read "
                f"{band_text(band)} 95 % of the time: the grey band below. "
                f"{safe.markdown(proposal(expected, question.d).expectation())}")
        st.plotly_chart(estimate_chart(None, band, 0), key="classroom_chart",
                        config=charts.CONFIG)
        return
    band = shown_band(band, estimate.n)
    table = estimate_table(question, estimate, snap.reveals)
    st.markdown(f"Grey band: with {estimate.n:,} reports a commute nobody takes reads "
                f"{band_text(band)} 95 % of the time. Each commute's interval "
                "holds its true number of students 95 % of the time, computed from the exact "
                "law of the reports at this class size (whole students); an interval starting "
                "above 0 means someone probably takes that commute: one nobody takes still "
                f"gets such an interval with probability "
                f"{classroom_stats.percent(what.empty_chance)}. Estimates below 0 or above the "
                "number of reports are impossible: they are *clipped* to 0 or to that number "
                "(such a bar is grey) and marked ◀ left of 0 or ▶ right of that number (the "
                "table's note gives the raw value).")
    st.plotly_chart(estimate_chart(table, band, estimate.n), key="classroom_chart",
                    config=charts.CONFIG)
    st.markdown("**Top commutes (estimated)**")
    st.caption(COLUMNS_SAID)
    estimates(table.head(5))
    if snap.reveals is not None:
        st.markdown(f"**Revealed answers (NOT private):** {int(snap.reveals.sum()):,} students "
                    "chose to also send their true commute; the column *revealed* counts them.")
    with st.expander("Every commute"):
        estimates(table)
        st.download_button("Download this table (CSV)", export.safe_csv(table),
                           file_name=f"classroom-{code}-round-{number}.csv", mime="text/csv")


def tell(what: classroom_stats.Resolution, estimate: classroom_stats.Estimate | None) -> None:
    """First on the screen: how often one student on a commute is told from none, and if not
    reliably, what would help (:meth:`~dpcore.interfaces.classroom_stats.Resolution.sentence`);
    once reports are in, what the intervals drawn say and what chance alone gives
    (:meth:`~dpcore.interfaces.classroom_stats.Estimate.reading`)."""
    said = what.sentence() + ("" if estimate is None else " " + estimate.reading())
    (st.success if what.one_from_none else st.warning)(safe.markdown(said))


def estimate_table(question: classroom.Question, estimate: classroom_stats.Estimate,
                   reveals) -> pd.DataFrame:
    """One row per commute, busiest estimate first: the estimate clipped to [0, n] (rounded to
    0.1; "0", never "-0"), the exact 95 % interval in whole students, and a note on clipped ones
    with the raw value."""
    def rounded(values):
        return np.round(values, 1) + 0.0          # adding 0.0 turns −0.0 into 0.0

    frame = pd.DataFrame({
        "commute": [question.label(c) for c in range(question.d)],
        "estimate": rounded(estimate.shown),
        "95% low": estimate.lower.astype(int),
        "95% high": estimate.upper.astype(int),
        "note": [f"clipped (raw {_short(r)}: impossible)" if c else ""
                 for r, c in zip(estimate.raw, estimate.clipped)]})
    if reveals is not None:
        frame["revealed (not private)"] = reveals
    return frame.sort_values(["estimate", "95% low"], ascending=False,
                             kind="stable").reset_index(drop=True)


#: The estimates' columns as the teacher's screen draws them: widths that fit a 390 px phone
#: (a 356 px frame; Streamlit's own sizing ran to 649 px and cut "95% high"), short headers with
#: the long text in their help, and rows tall enough for a commute's name and a note to wrap
#: (Streamlit wraps a cell's text only in rows taller than 64 px). A wider screen stretches them.
ESTIMATE_COLUMNS = {
    "commute": st.column_config.TextColumn("commute", width=110),
    "estimate": st.column_config.NumberColumn(
        "est.", width=48,
        help="Estimated students on the commute, clipped to between 0 and the number of reports."),
    "95% low": st.column_config.NumberColumn(
        "low", width=40, help="95 % interval, low end (whole students): holds the true number "
        "95 % of the time."),
    "95% high": st.column_config.NumberColumn(
        "high", width=44, help="95 % interval, high end (whole students)."),
    "note": st.column_config.TextColumn(
        "note", width=84, help="For a clipped estimate: the raw estimate, outside what is "
        "possible (below 0 or above the number of reports)."),
    "revealed (not private)": st.column_config.NumberColumn(
        "revealed ⚠", width=56, help="Students who chose to also send their true commute: NOT "
        "private."),
}
#: The short headers spelt out above the table (a phone has no hover for their help).
COLUMNS_SAID = ("est.: estimated students; low to high: its 95 % interval in whole students; "
                "note: a clipped estimate's raw value.")
#: With the revealed column, the commute and the note give it room.
REVEALED_WIDTHS = {"commute": 96, "note": 70}
ROW_HEIGHT = 66


def estimates(table: pd.DataFrame) -> None:
    """Draw an :func:`estimate_table` to fit a phone (:data:`ESTIMATE_COLUMNS`)."""
    config = {column: ESTIMATE_COLUMNS[column] for column in table.columns}
    if "revealed (not private)" in table:
        config.update({column: {**config[column], "width": width}
                       for column, width in REVEALED_WIDTHS.items()})
    st.dataframe(table, hide_index=True, width="stretch", row_height=ROW_HEIGHT,
                 column_config=config)


def _short(value: float) -> str:
    """A raw estimate to two decimals without trailing zeros (−0.04, 6.7, −1.1), or to one
    significant digit when smaller (−0.0008): never "0" for a value that is not."""
    if 0 < abs(value) < 0.01:
        return f"{value:.1g}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def shown_band(band: tuple[float, float], n: int) -> tuple[float, float]:
    """The estimates an empty commute reads 95 % of the time as the chart and table show them:
    clipped to [0, n] like every estimate (before any report, n is the class expected)."""
    low, high = band
    return (min(max(low, 0.0), n), min(max(high, 0.0), n))


def band_text(band: tuple[float, float]) -> str:
    """The (shown) noise band in words, its ends to 0.1 ("0.0", never "-0.0"): "between 0.0 and
    1.1 students", or "0.0 students" when both ends read the same."""
    low, high = (f"{round(v, 1) + 0.0:,.1f}" for v in band)
    return f"{low} students" if low == high else f"between {low} and {high} students"


def estimate_chart(table: pd.DataFrame | None, band: tuple[float, float], n: int) -> go.Figure:
    """The top commutes' estimates with their exact 95 % intervals over the grey band an empty
    commute reads 95 % of the time; clipped estimates in another colour. Before the first report
    (``table`` None) the band alone, so the class sees what to beat."""
    low, high = band
    fig = go.Figure()
    noise = {"name": charts.wrap_title(f"noise only: a commute nobody takes, 95 % "
                                       f"({band_text(band)})", LEGEND_WIDTH),
             "showlegend": True}
    if high > low:
        fig.add_vrect(x0=low, x1=high, fillcolor="grey", opacity=0.15, line_width=0, **noise)
    else:                                # every empty commute reads the same: a line, not a band
        fig.add_vline(x=low, line_color="grey", line_width=4, opacity=0.4, **noise)
    # the band's label is a legend entry at the foot of the figure, under the axis title:
    # never over a bar
    legend = {"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "x": 0}
    margin = {"l": 10, "r": 10, "t": 60, "b": 80}   # t: a title of two lines
    if table is None:
        fig.update_layout(height=260, margin=margin,
                          title=f"{TITLE}<br>(no reports yet)",
                          xaxis={"title": "students (estimated)",
                                 "range": [min(low, 0) - 1, 1.5 * high + 1]},
                          yaxis={"visible": False}, legend=legend)
        return fig
    top = table.head(CHART_CELLS).iloc[::-1]
    names = np.array([charts.escape(charts.short(c)) for c in top["commute"]], dtype=object)
    clipped = (top["note"] != "").to_numpy()
    edge = CLIP_MARGIN * (n + 1)
    plus = (top["95% high"] - top["estimate"]).clip(lower=0).to_numpy()
    minus = (top["estimate"] - top["95% low"]).clip(lower=0).to_numpy()
    for rows, colour, name in ((~clipped, ESTIMATE_COLOUR, "estimate with exact 95 % interval"),
                               (clipped, CLIPPED_COLOUR, CLIPPED)):
        if rows.any():   # one slot per commute (overlay): a commute is in one trace only
            fig.add_bar(x=top["estimate"][rows], y=names[rows], orientation="h", name=name,
                        marker_color=colour, legendgroup=name, showlegend=name != CLIPPED,
                        error_x={"type": "data", "symmetric": False, "array": plus[rows],
                                 "arrayminus": minus[rows]},
                        hovertemplate="%{y}: %{x:.1f} students<extra></extra>")
    if clipped.any():   # a mark beyond 0 or n, where no bar or interval reaches (all in [0, n])
        below = (top["estimate"] <= 0).to_numpy()[clipped]
        fig.add_scatter(x=np.where(below, -edge, n + edge), y=names[clipped], mode="markers",
                        marker={"symbol": np.where(below, "triangle-left", "triangle-right"),
                                "size": 9, "color": CLIPPED_COLOUR},
                        name=CLIPPED, legendgroup=CLIPPED,
                        customdata=top["note"][clipped],
                        hovertemplate="%{y}: %{customdata}<extra></extra>")
    if "revealed (not private)" in top:
        fig.add_scatter(x=top["revealed (not private)"], y=names, mode="markers", marker_symbol="diamond", marker_size=10,
                        name="revealed true answers (not private)")
    fig.update_layout(height=160 + 28 * len(top), margin=margin, barmode="overlay",
                      title=f"{TITLE}<br>(top {len(top)}, {n} reports)",
                      xaxis={"title": "students (estimated)", "range": [-2 * edge, n + 2 * edge]},
                      yaxis={"categoryorder": "array", "categoryarray": names}, legend=legend)
    return fig


# ------------------------------------------------------------------------------------ student
def student(code: str) -> None:
    st.title("Classroom")
    try:
        room = store().room(code)
        current = store().current_round(room.code)
    except classroom.ClassroomError as problem:
        st.error(safe.markdown(problem))
        st.markdown("Typed it wrong? Type the code again:")
        join_box(classroom.format_code(classroom.normalise_code(code)[:classroom.CODE_LENGTH]))
        return
    question = room.question
    st.markdown(f"Room **{classroom.format_code(room.code)}** · round {current.number} · "
                f"{coins_view.name(current)}, ε = {current.epsilon:g}"
                + (" · memoized: your phone resends its first report" if current.memoize else ""))
    if not room.is_open():
        st.warning("This room is closed: the teacher closed it or it expired.")
        return
    asks_a_commute = current.mechanism not in (classroom.coins.COINS, classroom.numbers.NUMBER)
    if asks_a_commute:
        st.header(safe.markdown(question.title))
    round_key = f"{room.code}:{current.number}"
    typed = None
    if room.admission == "codes":
        typed = join_code_box(room.code)
        if typed is None:
            return
    ticket = st.session_state[TICKETS].get(round_key)
    if ticket is None or ticket.join_code != (typed and classroom.normalise_code(typed)[:16]):
        ticket = store().ticket(room.code, st.session_state[SESSION], connection_address(), typed)
        st.session_state[TICKETS][round_key] = ticket
    if asks_a_commute:
        device_rules(current, question.d)
    else:
        st.subheader(safe.markdown(current.prompt))
        steps = coins_view.STEPS if current.mechanism == classroom.coins.COINS else \
            numbers_view.STEPS
        for number, step in enumerate(steps, start=1):
            st.markdown(f"{number}. {step}")
    data_for_phone = {"room": room.code, "nonce": ticket.nonce,
                      "spec": classroom.client_spec(current, question.d, ticket.seed),
                      "origins": list(question.origins),
                      "destinations": list(question.destinations),
                      "noneLabel": classroom.NONE_OF_THESE,
                      "reveal": room.reveal and asks_a_commute,
                      "alreadySent": bool(st.session_state[SENT].get(round_key, {}).get("ok")),
                      "sent": st.session_state[SENT].get(round_key),
                      "revealed": st.session_state[REVEALED].get(round_key)}
    component.phone(data_for_phone, key=PHONE, on_report=_received_report,
                    on_reveal=_received_reveal, on_refused=_received_refusal)
    follow_rounds(room.code, current.number)
    answer = st.session_state[SENT].get(round_key)
    if answer is not None and not answer["ok"]:
        st.error(safe.markdown(answer["message"]))
    if REFUSED in st.session_state:
        st.error(safe.markdown(st.session_state.pop(REFUSED)))
    st.caption("One report per round from this browser session: the server refuses a second "
               "one from the same session, and the phone remembers sent rounds in this browser's "
               f"storage. {admission_caption(room)}")


def device_rules(current: classroom.Round, d: int) -> None:
    """What the phone does with the commute in this round's mechanism, and the extra cell."""
    with st.expander("What your phone will do"):   # collapsed: the choice stays above a phone's fold
        for number, step in enumerate(learn.device_rules(current.build(), d), start=1):
            st.markdown(f"{number}. {step}")
        st.caption("Your choice below is randomised by this page in your own browser; only the "
                   "report is sent.")
    st.caption(f"Not listed? Choose \"none of these\" in either list: your answer then counts "
               f"in the extra commute \"{classroom.NONE_OF_THESE}\", so the listed commutes are "
               f"estimated only from those who take them ({d} possible answers in all).")


def connection_address() -> str:
    """This session's network address: the connection's peer, or the X-Forwarded-For entry of
    the proxy the server trusts (``admission.ProxyPolicy``; the store keeps only a keyed hash)."""
    headers = st.context.headers
    forwarded = ", ".join(headers.get_all("X-Forwarded-For")) if headers else None
    secret = headers.get(admission.PROXY_SECRET_HEADER) if headers else None
    return admission.client_address(st.context.ip_address, forwarded or None, secret,
                                    admission.ProxyPolicy.from_environment())


def wrong_code(count: int) -> str:
    """What a phone is told after its ``count``-th wrong join code: the limit before codes are
    refused, so a student who mistyped knows where they stand (and each attempt reads
    differently from the last)."""
    minutes = round(admission.JOIN_WINDOW / 60)
    return (f"This is not one of this room's join codes; check it with your teacher. Wrong code "
            f"{count} from this browser: after {admission.WRONG_CODES_PER_SESSION} in "
            f"{minutes} minutes, every code is refused for a while.")


def join_code_box(code: str) -> str | None:
    """The join code the student typed, once it is one of the room's codes; None (and a box to
    type it) until then."""
    typed = st.text_input("Your join code (from your teacher)",
                          value=st.session_state[TYPED_CODES].get(code, ""),
                          max_chars=20, key=f"classroom_join_code_{code}",
                          placeholder="e.g. K7QM2X")
    if not typed:
        st.info("This room needs the join code your teacher gave you: type it above.")
        return None
    tried = st.session_state[WRONG_CODES].setdefault(code, [])   # this browser's wrong codes
    if tried and tried[-1] == typed:
        st.error(wrong_code(len(tried)))     # the same code again (a rerun): not a new attempt
        return None
    try:
        known = store().try_join_code(code, typed, st.session_state[SESSION],
                                      connection_address())
    except admission.TooManyWrongCodes as problem:
        st.error(safe.markdown(problem))
        return None
    if not known:
        tried.append(typed)
        st.error(wrong_code(len(tried)))
        return None
    st.session_state[TYPED_CODES][code] = typed
    return typed


@st.fragment(run_every=ROUND_CHECK_SECONDS)
def follow_rounds(code: str, shown: int) -> None:
    """Bring the phone to the teacher's new round (or closed room) without a reload."""
    try:
        room, latest = store().room(code), store().current_round(code)
    except (classroom.ClassroomError, StoreUnavailable):
        return          # the next full run says what is wrong
    if latest.number != shown or not room.is_open():
        st.rerun(scope="app")


def _trigger(name: str):
    """The component's trigger value ``name`` (None when something else triggered the run)."""
    result = st.session_state.get(PHONE)
    if result is None:
        return None
    return result.get(name) if isinstance(result, dict) else getattr(result, name, None)


def ticket_for(payload, tickets: dict) -> classroom.Ticket | None:
    """The session's ticket whose nonce the phone's message echoes — the page's own room and
    round; anything else in the message (a room, a round) is ignored. None: not a message this
    page asked for (stale or forged), to be dropped."""
    if not isinstance(payload, dict):
        return None
    return next((t for t in tickets.values() if t.nonce == payload.get("nonce")), None)


def _received_report() -> None:
    payload = _trigger("report")
    ticket = ticket_for(payload, st.session_state[TICKETS])
    if ticket is not None:
        st.session_state[SENT][f"{ticket.room}:{ticket.round}"] = submit(
            ticket, payload.get("report"), st.session_state[RATE])


def submit(ticket: classroom.Ticket, report, limit: classroom.RateLimit) -> dict:
    """Hand one phone's report to the store under this session's ticket, within the session's
    rate ``limit``: {"ok", "message"} for the student."""
    if not limit.allow():
        return {"ok": False, "message": "Not counted: too many attempts from this page; wait a "
                                        "minute and reload."}
    try:
        count = store().submit(ticket, report)
    except (classroom.ClassroomError, StoreUnavailable) as problem:
        return {"ok": False, "message": f"Not counted: {problem}"}
    return {"ok": True, "message": f"Sent: report number {count} of this round. Your true "
                                   "commute never left your phone."}


def _received_refusal() -> None:
    """A message too deep to parse (:mod:`ui.classroom.component`): its sentence, shown once."""
    st.session_state[REFUSED] = str(_trigger(component.REFUSED))


def _received_reveal() -> None:
    payload = _trigger("reveal")
    ticket = ticket_for(payload, st.session_state[TICKETS])
    if ticket is None:
        return
    round_key = f"{ticket.room}:{ticket.round}"
    if round_key not in st.session_state[REVEALED]:
        st.session_state[REVEALED][round_key] = reveal(ticket, payload.get("cell"),
                                                       st.session_state[RATE])


def reveal(ticket: classroom.Ticket, cell, limit: classroom.RateLimit) -> str:
    """Hand a true answer the student chose to send to the store; what the phone should say."""
    if not limit.allow():
        return "True answer not sent: too many attempts from this page; wait a minute."
    try:
        store().reveal(ticket, cell)
    except (classroom.ClassroomError, StoreUnavailable) as problem:
        return f"True answer not sent: {problem}"
    return "True answer sent (not private)."
