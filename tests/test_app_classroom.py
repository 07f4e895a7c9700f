"""AppTest of the Classroom page: the teacher opens a room and watches the estimate; a student's
page shows the round and what the phone will do (the phone itself is tested in Chromium)."""

import io
import secrets
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import datasets
from dpcore.interfaces import classroom, classroom_stats
from dpcore.interfaces.classroom import coins, numbers, repeated as repeated_rounds
from dpcore.theory import learn
from tests.app_pages import run_page, shown_table, text
from tests.downloads import Downloads
from tests.plotly_spec import figure, values
from ui.classroom import coins as coins_view, numbers as numbers_view, view as classroom_view
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


def told(at: AppTest) -> str:
    """The live view's first statement: what this class can tell (a success or a warning)."""
    return next(e.value for e in list(at.success) + list(at.warning)
                if e.value.startswith("With "))


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
    proposed = classroom_stats.propose(6, 50)
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
    low, high = classroom_view.shown_band(classroom_stats.empty_band(current, 50, 6), 6)
    assert f"will read {classroom_view.band_text((low, high))} 95 % of the time" in waiting
    assert safe.markdown(proposed.expectation()) in waiting
    fig = figure(at, "no reports yet")                    # the noise band before any report
    assert fig["layout"]["shapes"][0]["x1"] == pytest.approx(high)
    # first on the screen: what the expected class can tell at these settings
    said = classroom_stats.resolution(current.mechanism, current.epsilon, 50, 6).sentence()
    first = told(at)
    assert first == safe.markdown(said)
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
    expected = classroom_stats.estimate_round(snap.round, question.d, snap.reports)
    top = tables(at)[0]
    assert list(top.columns) == ["commute", "estimate", "95% low", "95% high", "note"]
    # the phone-size headers (est., low, high) are spelt out above the table, not only on hover
    assert classroom_view.COLUMNS_SAID in [c.value for c in at.caption]
    best = int(np.lexsort((-expected.lower, -np.round(expected.shown, 1)))[0])
    assert top["commute"][0] == question.label(best)
    assert top["estimate"][0] == pytest.approx(expected.shown[best], abs=0.05)
    assert (top["95% low"][0], top["95% high"][0]) == (expected.lower[best], expected.upper[best])
    band = classroom_view.shown_band(expected.empty_band, 40)
    assert f"reads {classroom_view.band_text(band)} 95 % of the time" in text(at)
    assert "-0.0" not in text(at)
    assert "cannot be told from noise" not in text(at)       # the old, misleading guidance
    assert metrics(at)["Reports in the last minute"] == "40"
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
    assert metrics(at)["Room total"] == f"12 of {classroom.MAX_REPORTS:,}"


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
        assert any("a reload or a cleared browser is a new session" in c.value
                   for c in at.caption)


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
    estimate = classroom_stats.Estimate(3, np.array([-0.04, 2.0, 1.04]), np.array([0, 1, 0]),
                                        np.array([1, 3, 2]), (0.0, 1.0),
                                        classroom_stats.resolution("grr", 6.0, 3, 3))
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


# ----------------------------------------------------- what a class can tell (issue 30)
def class_of(store, items, mechanism, epsilon, seed=0):
    """A room on the toy town's 7 × 7 + 1 question with one report per item from the Python
    client."""
    origins, destinations = classroom.default_zones(datasets.load("toy_town"))
    question = classroom.Question("Where?", tuple(origins), tuple(destinations))
    code, key = store.create_room(question, mechanism, epsilon, students=len(items))
    round_ = store.current_round(code)
    batch = round_.build().perturb(np.asarray(items), question.d, np.random.default_rng(seed))
    for y in batch["y"]:
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": int(y)})
    return code, key, question


def test_a_class_of_four_is_told_first_that_one_student_cannot_be_told_from_none(store):
    """Issue 30's class: 4 students at ε = 1.5 (GRR over 50 commutes), two on one commute."""
    code, key, question = class_of(store, [12, 12, 30, 49], "grr", 1.5)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert not at.exception
    first = told(at)
    assert first.startswith(safe.markdown("With 4 reports at ε = 1.5 (GRR), one student on a "
                                          "commute is not reliably told from none"))
    what = classroom_stats.resolution("grr", 1.5, 50, 4)
    assert safe.markdown(f"ε = {what.epsilon_needed:g} would separate one student from none"
                         ) in first
    every = tables(at)[1]
    assert (every["95% low"] >= 0).all() and (every["95% high"] <= 4).all()
    assert (every["estimate"] >= 0).all() and (every["estimate"] <= 4).all()
    snap = store.snapshot(code)
    expected = classroom_stats.estimate_round(snap.round, question.d, snap.reports)
    assert (every["note"] != "").sum() == expected.clipped.sum() > 0
    assert every["note"][every["note"] != ""].str.startswith("clipped (raw ").all()
    assert not every["note"].str.contains(r"raw -?0:").any()       # −0.04 is not shown as 0


def test_at_the_proposed_settings_the_screen_says_one_student_shows(store):
    proposal = classroom_stats.propose(30, 50)
    what = classroom_stats.resolution(proposal.mechanism, proposal.epsilon, 50, 30)
    code, key, question = class_of(store, [12] * 6 + list(range(20, 44)), proposal.mechanism,
                                   proposal.epsilon)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    snap = store.snapshot(code)
    expected = classroom_stats.estimate_round(snap.round, question.d, snap.reports)
    assert told(at) == safe.markdown(what.sentence() + " " + expected.reading())


@pytest.mark.parametrize("items, seed", [([12, 12, 30, 41], 1), ([12, 12, 30, 30], 5),
                                         ([12] * 6 + list(range(20, 44)), 2),
                                         ([12] * 6 + list(range(20, 44)), 1)],
                         ids=["class-of-4", "class-of-4-two-above", "class-of-30",
                              "class-of-30-one-above"])
def test_the_first_sentence_and_the_wording_agree_with_the_intervals_drawn(store, items, seed):
    """Issue 42: GRR at ε = 5 over the toy town's 50 commutes. The first sentence states how
    often one student's interval starts above 0 (never "cannot") and counts the intervals the
    table shows starting above 0, with what chance alone gives; the wording under the chart says
    "probably"; the grey band reads one value when both its ends do, and its label is a legend
    entry, not text over the bars."""
    code, key, question = class_of(store, items, "grr", 5.0, seed=seed)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert not at.exception
    n = len(items)
    what = classroom_stats.resolution("grr", 5.0, 50, n)
    first = told(at)
    assert "cannot" not in first
    assert safe.markdown(f"its interval starts above 0 in {classroom_stats.percent(what.one_chance)}"
                         ) in first
    every = tables(at)[1]
    above = every[every["95% low"] >= 1]
    chance = what.empty_chance
    flagged = (f"Here {len(above)} commute{'s have' if len(above) > 1 else ' has'} an interval "
               "starting above 0")
    assert safe.markdown(flagged) in first
    if 2 * round(chance * 49, 1) >= len(above):   # chance gives half as many or more: not "taken"
        assert "probably taken" not in first
        alarms = classroom_stats.chance_count(chance, 49)
        may = {1: "it", 2: "both"}[len(above)]     # the two cases here; alarms ≥ 2 in both
        assert alarms >= 2 and safe.markdown(f"{may} may be chance, not someone's commute — on "
                                             f"the commutes nobody takes it gives up to "
                                             f"{alarms} in 19 classes of 20") in first
    else:
        assert safe.markdown("each is probably taken by someone") in first
    assert safe.markdown(f"chance alone gives between {chance * (50 - n):.1f} and "
                         f"{chance * 49:.1f} of them") in first
    if items == [12, 12, 30, 41]:   # the issue's screen: one-student commutes, a false alarm
        labels = set(above["commute"])
        assert {question.label(30), question.label(41)} <= labels
        assert labels - {question.label(c) for c in items}
    shown = text(at)
    assert "means someone probably takes that commute" in shown
    assert "means someone takes" not in shown
    assert (f"still gets such an interval with probability {classroom_stats.percent(chance)}"
            in shown)
    snap = store.snapshot(code)
    band = classroom_view.shown_band(
        classroom_stats.estimate_round(snap.round, question.d, snap.reports).empty_band, n)
    assert f"reads {classroom_view.band_text(band)} 95 % of the time" in shown
    assert "between 0.0 and 0.0" not in shown
    fig = figure(at, "Estimated students per commute")
    [noise] = fig["layout"]["shapes"]
    assert noise["showlegend"] and noise["name"].startswith("noise only")
    assert not fig["layout"].get("annotations")            # no label drawn over the bars
    if n == 4:
        assert band == (0.0, 0.0) and noise["type"] == "line"
        assert "reads 0.0 students 95 % of the time" in shown


# ---------------------------------------------------- one student, one voice (issue 29)
def test_the_teacher_chooses_join_codes_and_sees_them(store, monkeypatch):
    """Issue 42 too: the codes are a plain table (text to copy), cards to print and a CSV."""
    downloads = Downloads(monkeypatch)
    at = page({})
    at.radio(key="classroom_admission").set_value("codes").run()
    assert at.number_input(key="classroom_codes").value == 25     # the class size by default
    at.number_input(key="classroom_codes").set_value(4).run()
    at.button(key=CREATE).click().run()
    assert not at.exception and not at.error
    code = at.query_params["teach"]
    code = code[0] if isinstance(code, list) else code
    room = store.room(code)
    assert room.admission == "codes"
    key = at.session_state[classroom_view.TEACHER_KEYS][code]
    codes = [c for c, _ in store.join_codes(code, key)]
    [shown] = [shown_table(t) for t in at.table if "join code" in shown_table(t).columns]
    assert sorted(shown["join code"]) == codes and len(codes) == 4
    assert not tables(at, "join code")                  # no canvas grid any more
    csv = pd.read_csv(io.BytesIO(downloads.by_key(at, "classroom_codes_csv")), dtype=str)
    assert csv["join code"].tolist() == codes
    cards = downloads.by_key(at, "classroom_codes_html").decode()
    assert [cards.count(f'<p class="code">{c}</p>') for c in codes] == [1] * 4
    assert cards.count('class="card"') == 4 and "@media print" in cards
    assert f"?room={code}" in cards and classroom.format_code(code) in cards
    # a student without a code is asked for one, and no phone is drawn
    student = page({"room": code})
    assert any("needs the join code" in i.value for i in student.info)
    box = student.text_input(key=f"classroom_join_code_{code}")
    box.set_value("ZZZZZZ").run()
    assert "not one of this room's join codes" in student.error[0].value
    assert "Wrong code 1 from this browser: after 5 in 10 minutes" in student.error[0].value
    box.set_value("ZZZZZY").run()
    assert "Wrong code 2 from this browser" in student.error[0].value
    student.run()                      # a rerun with the same code is not another attempt
    assert "Wrong code 2 from this browser" in student.error[0].value
    box.set_value(codes[0].lower()).run()
    assert not student.error
    ticket = next(iter(student.session_state[classroom_view.TICKETS].values()))
    assert ticket.join_code == codes[0]


def test_the_teacher_chooses_a_cap_per_address(store):
    at = page({})
    at.radio(key="classroom_admission").set_value("address").run()
    cap = at.number_input(key="classroom_cap")
    assert cap.value == classroom.DEFAULT_CAP
    cap.set_value(28).run()                                          # a class behind one router
    at.button(key=CREATE).click().run()
    code = at.query_params["teach"]
    code = code[0] if isinstance(code, list) else code
    assert (store.room(code).admission, store.room(code).cap) == ("address", 28)
    assert any("At most 28 report(s) per network address" in c.value for c in at.caption)


def test_sessions_are_grouped_by_address_with_a_bulk_discard(store):
    code, key, _ = room_with_reports(store, n=3, admission="address", cap=5)
    for _ in range(4):            # one device reloading from another network
        store.submit(store.ticket(code, secrets.token_hex(16), "203.0.113.9"), {"y": 0})
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    [groups] = tables(at, "address")
    assert list(groups["sessions"]) == [4, 3] and list(groups["reports kept"]) == [4, 3]
    assert at.selectbox(key="classroom_discard_address").value.sessions == 4
    [bulk] = [b for b in at.button if b.label == "Discard every session of this address"]
    bulk.click().run()
    assert not at.exception
    assert any("4 session(s), 4 report(s) deleted" in s.value for s in at.success)
    assert len(store.snapshot(code).reports) == 3


# ------------------------------------------------------------------ repeated rounds (issue 38)
def test_the_teacher_repeats_a_memoized_round_and_sees_each_students_total_epsilon(store):
    code, key, _ = room_with_reports(store, epsilon=1.0, n=8, memoize=True)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert "has spent ε = 1 in this room" in text(at)
    for _ in range(2):
        at.button(key="classroom_repeat").click().run()
        assert not at.exception and not at.error
    assert [(r.mechanism, r.epsilon, r.memoize) for r in store.rounds(code)] == \
        [("grr", 1.0, True)] * 3
    assert "all 3 rounds has spent ε = 1 in this room" in text(at)
    at.checkbox(key="memo-round").uncheck()
    at.button(key=NEW_ROUND).click().run()                           # the same, drawn fresh
    assert [r.memoize for r in store.rounds(code)] == [True, True, True, False]
    assert "all 4 rounds has spent ε = 2 in this room" in text(at)
    at.button(key="classroom_repeat").click().run()
    assert "all 5 rounds has spent ε = 3 in this room" in text(at)   # T·ε for the fresh ones


def test_the_simulated_averaging_attack_is_what_dpcore_computes(store):
    code, key, question = room_with_reports(store, epsilon=1.0, n=4, students=30)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    result = repeated_rounds.averaging_attack(store.current_round(code), question.d, 30,
                                              classroom_view.repeated.SIMULATED_ROUNDS, seed=0)
    shown = text(at)
    assert f"they name **{100 * result.fresh[-1]:.0f} %** of the class" in shown
    assert f"with memoization, **{100 * result.memoized[-1]:.0f} %**" in shown
    assert result.fresh[-1] > result.memoized[-1]
    chart = figure(at, "attack names")
    assert [t["name"] for t in chart["data"]] == ["fresh randomness every round",
                                                  "memoized (first report reused)"]
    assert np.allclose(values(chart["data"][1]["y"]), 100 * result.memoized)


def test_an_olh_round_cannot_be_memoized_and_the_teacher_is_told_why(store):
    code, key, _ = room_with_reports(store, n=3)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    at.selectbox(key="mech-round").set_value("olh")
    at.checkbox(key="memo-round").check()
    at.button(key=NEW_ROUND).click().run()
    assert any("OLH cannot be memoized" in e.value for e in at.error)
    assert len(store.rounds(code)) == 1


def test_the_student_page_says_a_round_is_memoized(store):
    code, _, _ = room_with_reports(store, n=2, memoize=True)
    at = page({"room": code})
    assert "memoized: your phone resends its first report" in text(at)


def test_a_coins_round_shows_the_share_of_yes_with_its_exact_interval(store):
    code, key, _ = room_with_reports(store, n=3)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    [prompt] = [t for t in at.text_input if t.label == "Yes/no question"]
    prompt.set_value("Did you <b>cycle</b> today?")
    at.button(key="FormSubmitter:classroom_coins-Open a coins round").click().run()
    assert not at.exception and not at.error
    round_ = store.current_round(code)
    assert (round_.mechanism, round_.prompt) == ("coins", "Did you <b>cycle</b> today?")
    assert "No taps yet" in at.info[0].value
    for answer in [1] * 14 + [0] * 6:
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": answer})
    at.run()
    result = coins.estimate(14, 20)
    assert f"**{100 * result.shown:.0f} %** (exact 95 % interval {100 * result.low:.0f} %–" \
           f"{100 * result.high:.0f} %)" in at.success[0].value
    assert "Did you \\<b\\>cycle" in text(at)                 # the teacher's text stays text
    assert "has spent ε = 3.1 in this room" in text(at)    # GRR 2 + ln 3
    student = page({"room": code})
    assert not student.exception and not student.error
    shown = text(student)
    assert "Two coins (Warner's randomised response)" in shown
    assert all(step in shown for step in coins_view.STEPS)


def test_a_number_round_shows_the_class_average_with_its_exact_interval(store):
    code, key, _ = room_with_reports(store, n=3)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    [bound] = [n for n in at.number_input if n.label.startswith("Largest answer B")]
    bound.set_value(60)
    at.button(key="FormSubmitter:classroom_number-Open a number round").click().run()
    assert not at.exception and not at.error
    round_ = store.current_round(code)
    assert (round_.mechanism, round_.bound, round_.epsilon) == ("number", 60.0, 1.0)
    assert round_.prompt == numbers_view.DEFAULT_PROMPT
    for bit in [1] * 12 + [0] * 8:
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": bit})
    at.run()
    result = numbers.estimate(12, 20, 60.0, 1.0)
    assert (f"Estimated class average: **{result.shown:.1f}** (exact 95 % interval "
            f"{result.low:.1f}–{result.high:.1f})") in at.success[0].value
    student = page({"room": code})
    assert not student.exception and not student.error
    assert all(step in text(student) for step in numbers_view.STEPS)
    assert "One bit (Duchi et al.'s mean estimation)" in text(student)


def test_before_and_after_compares_the_guess_the_estimate_and_the_truth(store):
    code, key, _ = room_with_reports(store, n=3)
    store.new_round(code, key, numbers.NUMBER, 1.0, prompt="Minutes?", bound=60)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    boxes = {n.label: n for n in at.number_input}
    boxes["The class's guess"].set_value(20.0)
    at.button(key="FormSubmitter:classroom_guess-Save").click().run()
    assert not at.exception and not at.error
    for bit in [1] * 12 + [0] * 8:
        store.submit(store.ticket(code, secrets.token_hex(16)), {"y": bit})
    at.run()
    {n.label: n for n in at.number_input}["The truth, if you know it"].set_value(31.5)
    at.button(key="FormSubmitter:classroom_guess-Save").click().run()
    assert store.guess(code, 2) == (20.0, 31.5)
    result = numbers.estimate(12, 20, 60.0, 1.0)
    [table] = tables(at, "")
    assert table["value"].tolist() == [
        "20.0", f"{result.shown:.1f} ({result.low:.1f}–{result.high:.1f})", "31.5"]
    closer = "estimate" if abs(result.shown - 31.5) < abs(20 - 31.5) else "guess"
    assert any(f"The {'private estimate' if closer == 'estimate' else 'guess'} is closer" in i.value
               for i in at.info)
    {n.label: n for n in at.number_input}["The class's guess"].set_value(50.0)
    at.button(key="FormSubmitter:classroom_guess-Save").click().run()
    assert any("guess comes first" in e.value for e in at.error)
    assert store.guess(code, 2) == (20.0, 31.5)


# ------------------------------------------- first rounds of every kind, live linking (issue 38)
def open_the_room(at: AppTest) -> str:
    """Press "Open the room" on the start form; the new room's code (from the teacher's URL)."""
    at.button(key=CREATE).click().run()
    assert not at.exception and not at.error
    code = at.query_params["teach"]
    return code[0] if isinstance(code, list) else code


def test_a_room_opens_with_a_memoized_coins_or_number_round(store):
    """The start form offers a coins or a number question as the room's first round, memoized
    if asked; the phone's page then shows that question, memoized."""
    at = page({})
    at.radio(key="classroom_first_round").set_value(coins.COINS).run()
    at.text_input(key="coins-prompt-create").set_value("Did you <i>walk</i>?")
    at.checkbox(key="memo-create").check()
    code = open_the_room(at)
    first = store.current_round(code)
    assert (first.number, first.mechanism, first.prompt, first.memoize) == \
        (1, "coins", "Did you <i>walk</i>?", True)
    assert "**Coins round:** Did you \\<i\\>walk" in text(at)       # escaped, not HTML
    student = page({"room": code})
    assert not student.exception and not student.error
    assert "memoized: your phone resends its first report" in text(student)
    assert all(step in text(student) for step in coins_view.STEPS)

    at = page({})
    at.radio(key="classroom_first_round").set_value(numbers.NUMBER).run()
    at.number_input(key="number-bound-create").set_value(45)
    code = open_the_room(at)
    first = store.current_round(code)
    assert (first.mechanism, first.bound, first.epsilon, first.memoize) == \
        ("number", 45.0, 1.0, False)
    assert first.prompt == numbers_view.DEFAULT_PROMPT


def test_a_coins_round_can_be_memoized_from_the_round_form(store):
    code, key, _ = room_with_reports(store, n=2)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    at.checkbox(key="memo-coins").check()
    at.button(key="FormSubmitter:classroom_coins-Open a coins round").click().run()
    assert not at.exception and not at.error
    assert (store.current_round(code).mechanism, store.current_round(code).memoize) == \
        ("coins", True)
    assert "1 memoized round counts once per question asked the same way" in text(at)


def code_room_with_rounds(store, rounds, memoize, students=4, epsilon=1.0):
    """A room with join codes where each code sends a GRR report in each of ``rounds`` rounds
    (seeded; memoized: the same report every round)."""
    question = classroom.Question("Where?", ("Harbour", "Old Town"), ("Port",))
    code, key = store.create_room(question, "grr", epsilon, admission="codes", codes=students,
                                  memoize=memoize, students=students)
    codes = [c for c, _ in store.join_codes(code, key)]
    rng = np.random.default_rng(7)
    mech = store.current_round(code).build()
    kept = {c: int(mech.perturb(np.array([k % question.d]), question.d, rng)["y"][0])
            for k, c in enumerate(codes)}
    for number in range(1, rounds + 1):
        if number > 1:
            store.new_round(code, key, "grr", epsilon, memoize=memoize)
        for k, joined in enumerate(codes):
            y = kept[joined] if memoize else \
                int(mech.perturb(np.array([k % question.d]), question.d, rng)["y"][0])
            store.submit(store.ticket(code, secrets.token_hex(16), None, joined), {"y": y})
    return code, key, codes, question


def live_text(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "join code(s) sent reports" in m.value)


def test_the_teacher_sees_the_live_linking_attack_per_join_code(store):
    """Fresh rounds: the screen counts, from the stored reports, the codes whose one-report guess
    averaging changed (what dpcore computes), shows the simulation's expectation beside it, and a
    per-code table numbered as the join codes list, without any guess."""
    code, key, codes, question = code_room_with_rounds(store, 3, memoize=False)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert not at.exception and not at.error
    rounds = store.rounds(code)
    result = repeated_rounds.linked_attack(
        rounds, question.d, store.linked_reports(code, key, [1, 2, 3]))
    moved = sum(r.moved for r in result)
    assert 0 < moved < 4                      # 2 at this seed: averaging did change guesses
    shown = live_text(at)
    assert "4 join code(s) sent reports in the 3 fresh rounds of this question (3 each" in shown
    assert f"changed the attacker's one-report guess for **{moved}** of them" in shown
    expected = repeated_rounds.averaging_attack(rounds[-1], question.d, 4,
                                                classroom_view.repeated.SIMULATED_ROUNDS, seed=0)
    assert f"**{100 * expected.fresh[2]:.0f} %** of the class named after 3 linked" in shown
    assert "true answers are not stored" in shown
    [table] = tables(at, "join code")
    assert list(table.columns) == ["join code", "linked reports", "all identical",
                                   "averaging changed the guess"]
    assert table["join code"].tolist() == ["#1", "#2", "#3", "#4"]      # codes sorted as listed
    assert table["linked reports"].tolist() == [3] * 4
    assert (table["averaging changed the guess"] == "yes").sum() == moved
    assert not any(c in shown for c in codes)                 # the codes themselves not shown


def test_memoized_rounds_linked_by_join_code_stay_at_the_one_round_level(store):
    code, key, _, question = code_room_with_rounds(store, 3, memoize=True)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    shown = live_text(at)
    assert "in the 3 memoized rounds" in shown
    assert "guess for **0** of them; **4** sent the same report every time" in shown
    expected = repeated_rounds.averaging_attack(store.current_round(code), question.d, 4,
                                                classroom_view.repeated.SIMULATED_ROUNDS, seed=0)
    assert f"the simulation's **{100 * expected.memoized[2]:.0f} %**" in shown
    assert "has spent ε = 1 in this room" in text(at)
