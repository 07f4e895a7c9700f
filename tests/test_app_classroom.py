"""AppTest of the Classroom page: the teacher opens a room and watches the estimate; a student's
page shows the round and what the phone will do (the phone itself is tested in Chromium)."""

import secrets
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.interfaces import classroom
from dpcore.theory import learn
from tests.app_pages import run_page, text
from tests.plotly_spec import figure
from ui.classroom import view as classroom_view
from ui.components import safe

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "7_Classroom.py")
CREATE = classroom_view.OPEN
NEW_ROUND = "FormSubmitter:classroom_round-Open a new round with these settings"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh database for each test, the one the page's cached store opens."""
    monkeypatch.setenv(classroom.FOLDER_VARIABLE, str(tmp_path))
    classroom_view.store.clear()
    yield classroom.RoomStore(tmp_path)
    classroom_view.store.clear()


def page(params: dict, dataset: str = "toy_town", **session) -> AppTest:
    return run_page(PAGE, params, dataset, session, timeout=60)


def metrics(at: AppTest) -> dict:
    return {m.label: m.value for m in at.metric}


def tables(at: AppTest, first_column: str = "commute") -> list:
    """The page's tables whose first column is ``first_column`` (the estimates by default)."""
    return [d.value for d in at.dataframe if d.value.columns[0] == first_column]


def room_with_reports(store, mechanism="grr", epsilon=2.0, n=40, names=None, **options):
    origins, destinations = names or (("Harbour", "Old Town", "Station"), ("Harbour", "Port"))
    question = classroom.Question("Where?", origins, destinations)
    code, key = store.create_room(question, mechanism, epsilon, **options)
    round_ = store.current_round(code)
    items = np.arange(n) % 3            # cells 0, 1, 2 only
    rng = np.random.default_rng(5)
    for y in round_.build().perturb(items, question.d, rng)["y"]:
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": int(y)})
    return code, key, question


def test_teacher_opens_a_room_on_the_toy_town(store):
    at = page({})
    assert at.title[0].value.startswith("Classroom")
    homes, works = at.multiselect
    assert len(homes.value) * len(works.value) + 1 == 50 == classroom.MAX_CELLS
    at.number_input(key=classroom_view.STUDENTS).set_value(6).run()
    proposed = classroom.propose(6, 50)
    assert any(safe.markdown(proposed.expectation()) in i.value for i in at.info)
    at.button(key=CREATE).click().run()
    assert not at.exception and not at.error
    code = at.query_params["teach"]
    code = code[0] if isinstance(code, list) else code
    room = store.room(code)
    assert room.question.d == 50 and room.students == 6
    current = store.current_round(code)
    assert (current.mechanism, current.epsilon) == (proposed.mechanism, proposed.epsilon)
    assert f"`{classroom.format_code(code)}`" in text(at)
    assert len(at.get("image")) == 1, "the QR code is drawn"
    assert any(code in c.value for c in at.code)                    # the join link
    assert metrics(at)["Reports in this round"] == "0"
    waiting = next(i.value for i in at.info if "No reports yet" in i.value)
    band = classroom.Z95 * classroom.empty_sd(current, 50, 6)
    assert f"0 ± {band:,.1f} students" in waiting
    assert safe.markdown(proposed.expectation()) in waiting
    fig = figure(at, "no reports yet")                    # the noise band before any report
    assert fig["layout"]["shapes"][0]["x1"] == pytest.approx(band)
    assert code in at.session_state[classroom_view.TEACHER_KEYS]


def test_a_question_too_large_is_refused_with_the_reason(store):
    at = page({}, dataset="ireland_county")
    homes, works = at.multiselect
    homes.set_value(homes.options[:10])
    works.set_value(works.options[:6])
    at.button(key=CREATE).click().run()
    assert safe.markdown("10 home zones × 6 work/study zones = 60") in at.error[0].value
    assert "at most 49" in at.error[0].value
    assert "teach" not in at.query_params


def test_teacher_sees_count_estimate_and_intervals(store):
    code, key, question = room_with_reports(store)
    with pytest.raises(classroom.ReportRejected):
        store.submit(store.ticket(code, "f" * 32), {"y": 99})        # a forged report
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert metrics(at)["Reports in this round"] == "40"
    assert metrics(at)["Rejected (bad or late)"] == "1"
    snap = store.snapshot(code)
    expected = classroom.estimate_round(snap.round, question.d, snap.reports)
    top = tables(at)[0]
    assert list(top.columns) == ["commute", "estimate", "95% low", "95% high"]
    best = int(np.argmax(expected.estimate))
    assert top["commute"][0] == question.label(best)
    assert top["estimate"][0] == pytest.approx(expected.estimate[best], abs=0.05)
    assert top["95% high"][0] - top["estimate"][0] == pytest.approx(
        classroom.Z95 * expected.sd[best], abs=0.1)
    assert f"0 ± {classroom.Z95 * expected.empty_sd:,.1f} students" in text(at)
    fig = figure(at, "Estimated students per commute")
    assert fig["data"][0]["type"] == "bar"


def test_changing_the_mechanism_opens_a_new_round_and_old_rounds_stay(store):
    code, key, _ = room_with_reports(store, n=12)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    at.selectbox(key="mech-round").set_value("hr")                   # the round's mechanism
    at.button(key=NEW_ROUND).click().run()
    assert not at.exception
    assert [r.mechanism for r in store.rounds(code)] == ["grr", "hr"]
    assert metrics(at)["Reports in this round"] == "0"
    viewed = at.selectbox(key=classroom_view.VIEWED_ROUND)
    assert viewed.value == 2
    viewed.set_value(1).run()
    assert metrics(at)["Reports in this round"] == "12"
    assert metrics(at)["Room total"] == "12 of 500"


def test_teacher_closes_the_room(store):
    code, key, _ = room_with_reports(store, n=3)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    [close] = [b for b in at.button if b.label.startswith("Close the room")]
    close.click().run()
    assert store.room(code).closed is not None
    assert any("Closed." in c.value for c in at.caption)
    student = page({"room": code})
    assert "closed" in student.warning[0].value


def test_without_the_key_the_screen_is_read_only_until_unlocked(store):
    code, key, _ = room_with_reports(store, n=5)
    at = page({"teach": code})
    assert not [b for b in at.button if b.label.startswith("Close")]
    assert metrics(at)["Reports in this round"] == "5"
    unlock = at.text_input(key=f"classroom_unlock_{code}")
    unlock.set_value("wrong").run()
    assert "not this room's teacher key" in at.error[0].value
    unlock.set_value(key).run()
    assert [b for b in at.button if b.label.startswith("Close")]


def test_reveal_column_is_labelled_not_private(store):
    code, _, question = room_with_reports(store, n=6, reveal=True)
    ticket = store.ticket(code, "r" * 32)
    store.submit(ticket, {"y": 1})
    store.reveal(ticket, 2)
    at = page({"teach": code})
    assert "NOT private" in text(at)
    full = tables(at)[1]
    assert full.set_index("commute")["revealed (not private)"][question.label(2)] == 1


def test_student_page_shows_the_round_and_what_the_phone_does(store):
    question = classroom.Question("Where?", ("A", "B"), ("C", "D"))
    for mechanism, epsilon in (("grr", 1.0), ("oue", 1.0), ("olh", 2.0), ("hr", 3.0)):
        code, _ = store.create_room(question, mechanism, epsilon)
        at = page({"room": code.lower()})
        assert not at.error
        rules = learn.device_rules(store.current_round(code).build(), question.d)
        shown = text(at)
        assert all(rule in shown for rule in rules)
        assert "round 1" in shown and classroom.format_code(code) in shown
        assert [c for c in at.main.children.values()                # the phone component
                if getattr(c, "key", None) == classroom_view.PHONE]
        assert any("not a determined student" in c.value for c in at.caption)


def test_student_with_an_unknown_code_is_told_what_to_do_and_can_retype_it(store):
    code, _ = store.create_room(classroom.Question("Where?", ("A",), ("B", "C")), "grr", 1.0)
    at = page({"room": "NOPE-NOPE"})
    assert safe.markdown("no room with the code 'NOPE-NOPE'") in at.error[0].value
    assert "Check the code with your teacher" in at.error[0].value
    box = at.text_input(key=classroom_view.JOIN_CODE)
    assert box.value == "NOPE-NOPE"                                  # what was typed, to fix
    box.set_value(code.lower()).run()
    [join] = [b for b in at.button if b.label == "Join"]
    join.click().run()
    assert not at.error and classroom.format_code(code) in text(at)


def test_hostile_zone_names_stay_text(store):
    names = (("![x](http://evil/)", "<b>bold</b>"), (":red[boo]", "$x$"))
    code, key, question = room_with_reports(store, n=10, names=names)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    table = tables(at)[0]
    assert set(table["commute"]) <= {question.label(c) for c in range(question.d)}
    fig = figure(at, "Estimated students per commute")
    ticks = " ".join(fig["data"][0]["y"])
    assert "<b>" not in ticks and "&lt;b&gt;" in ticks


def student_session(code: str) -> AppTest:
    """A student's page, as drawn for a phone: its session holds its token and ticket."""
    at = page({"room": code})
    assert not at.exception and not at.error
    return at


def test_what_a_phone_is_told_after_sending(store):
    code, _, _ = room_with_reports(store, n=2)
    at = student_session(code)
    [ticket] = at.session_state[classroom_view.TICKETS].values()
    assert (ticket.room, ticket.round) == (code, 1)
    limit = classroom.RateLimit()
    answer = classroom_view.submit(ticket, {"y": 4}, limit)
    assert answer == {"ok": True, "message": "Sent: report number 3 of this round. Your true "
                                             "commute never left your phone."}
    again = classroom_view.submit(ticket, {"y": 4}, limit)
    assert not again["ok"] and "already sent a report in this round" in again["message"]
    assert len(store.snapshot(code).reports) == 3
    for sent, report, says in ((classroom.Ticket(code, 1, "o" * 32, "0" * 32), {"y": 7},
                                "outside"),
                               (classroom.Ticket(code, 2, "p" * 32, "1" * 32), {"y": 1},
                                "Round 2 is not open"),
                               (classroom.Ticket("NOPE", 1, "q" * 32, "2" * 32), {"y": 1},
                                "no room")):
        answer = classroom_view.submit(sent, report, classroom.RateLimit())
        assert not answer["ok"] and answer["message"].startswith("Not counted:")
        assert says in answer["message"]
    for _ in range(classroom.ATTEMPTS_PER_MINUTE - 2):           # the connection's rate limit
        classroom_view.submit(ticket, {"y": 1}, limit)
    answer = classroom_view.submit(ticket, {"y": 1}, limit)
    assert "too many attempts" in answer["message"]
    assert "too many attempts" in classroom_view.reveal(ticket, 1, limit)


def test_the_phone_message_names_nothing_the_server_believes(store):
    """The component's message is matched to this session's ticket by its nonce: a room and round
    in the message are ignored, a message without this page's nonce is dropped."""
    code, _, _ = room_with_reports(store, n=2)
    other, _, _ = room_with_reports(store, n=1)
    at = student_session(code)
    tickets = at.session_state[classroom_view.TICKETS]
    [ticket] = tickets.values()
    forged = {"room": other, "round": 2 ** 64, "report": {"y": 1}, "nonce": ticket.nonce}
    assert classroom_view.ticket_for(forged, tickets) == ticket
    assert classroom_view.ticket_for({"report": {"y": 1}, "nonce": "9" * 32}, tickets) is None
    assert classroom_view.ticket_for("junk", tickets) is None
    assert classroom_view.submit(ticket, forged["report"], classroom.RateLimit())["ok"]
    assert len(store.snapshot(code).reports) == 3 and len(store.snapshot(other).reports) == 1


def test_a_store_failure_is_a_plain_message_on_both_screens(store, monkeypatch):
    code, key, _ = room_with_reports(store, n=2)

    def unavailable(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")
    monkeypatch.setattr(classroom.Database, "_open", unavailable)
    monkeypatch.setattr(classroom.Database, "_ensure", lambda *args: None)
    for params, session in (({"room": code}, {}), ({"teach": code},
                                                   {classroom_view.TEACHER_KEYS: {code: key}}),
                            ({}, {})):
        at = page(params, **session)
        if not params:                                             # the landing: open a room
            at.button(key=CREATE).click().run()
        assert not at.exception
        shown = " ".join(e.value for e in at.error)
        assert "storage is busy" in shown and "OperationalError" not in shown
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert any("For whoever runs the server" in c.value for c in at.caption)


def test_round_csv_writes_zero_not_minus_zero(store):
    question = classroom.Question("Where?", ("A", "B"), ("C",))
    estimate = classroom.Estimate(3, np.array([-0.04, 2.0, 1.04]), np.array([0.01, 1, 1]), 0.5)
    table = classroom_view.estimate_table(question, estimate, None)
    csv = classroom_view.export.safe_csv(table)
    csv = csv.decode() if isinstance(csv, bytes) else csv
    cells = [line.split(",") for line in csv.splitlines()]
    assert not [c for row in cells for c in row if c.strip() in ("-0", "-0.0")]
    assert {row[0]: row[1] for row in cells}["A → C"] in ("0", "0.0")
    assert table["commute"].iloc[-1] == "A → C" and question.label(2) == classroom.NONE_OF_THESE


def test_teacher_discards_a_misbehaving_session(store):
    code, key, _ = room_with_reports(store, n=4)
    script = store.ticket(code, "s" * 32)
    store.submit(script, {"y": 0})
    for _ in range(3):
        with pytest.raises(classroom.ReportRejected):
            store.submit(store.ticket(code, "s" * 32), {"y": 0})
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    [sessions] = tables(at, "session")
    assert list(sessions.columns) == ["session", "reports kept", "reports rejected", "discarded"]
    assert (sessions["reports rejected"][0], sessions["reports kept"][0]) == (3, 1)
    worst = store.sessions(code)[0]
    assert at.selectbox(key="classroom_discard_choice").value == worst
    [discard] = [b for b in at.button if b.label == "Discard this session's reports"]
    discard.click().run()
    assert not at.exception
    assert any(f"Session {worst.label} discarded: 1 report(s) deleted" in s.value
               for s in at.success)
    assert len(store.snapshot(code).reports) == 4
    assert metrics(at)["Reports in this round"] == "4"


def test_an_expired_room_is_unreadable_also_by_its_teacher(store):
    code, key, _ = room_with_reports(store, n=3)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE rooms SET expires = 0")
    for params in ({"teach": code}, {"room": code}):
        at = page(params, **{classroom_view.TEACHER_KEYS: {code: key}})
        assert "no room with the code" in at.error[0].value
        assert not at.metric and not tables(at)


def test_a_deleted_database_heals_on_the_next_request(store):
    code, key, _ = room_with_reports(store, n=3)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert "no room with the code" in at.error[0].value           # said plainly, no traceback
    at = page({})
    at.button(key=CREATE).click().run()
    assert not at.exception and not at.error and "teach" in at.query_params
