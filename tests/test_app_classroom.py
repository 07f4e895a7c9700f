"""AppTest of the Classroom page: the teacher opens a room and watches the estimate; a student's
page shows the round and what the phone will do (the phone itself is tested in Chromium)."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.interfaces import classroom
from dpcore.theory import learn
from tests.app_pages import run_page, text
from tests.plotly_spec import figure
from ui import classroom_view, safe

PAGE = str(Path(__file__).resolve().parent.parent / "app_pages" / "7_Classroom.py")
CREATE = "FormSubmitter:classroom_create-Open the room"
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


def room_with_reports(store, mechanism="grr", epsilon=2.0, n=40, names=None, **options):
    origins, destinations = names or (("Harbour", "Old Town", "Station"), ("Harbour", "Port"))
    question = classroom.Question("Where?", origins, destinations)
    code, key = store.create_room(question, mechanism, epsilon, **options)
    round_ = store.current_round(code)
    items = np.arange(n) % 3            # cells 0, 1, 2 only
    rng = np.random.default_rng(5)
    for y in round_.build().perturb(items, question.d, rng)["y"]:
        store.submit(code, round_.number, {"y": int(y)})
    return code, key, question


def test_teacher_opens_a_room_on_the_toy_town(store):
    at = page({})
    assert at.title[0].value.startswith("Classroom")
    homes, works = at.multiselect
    assert len(homes.value) * len(works.value) == 49 <= classroom.MAX_CELLS
    at.button(key=CREATE).click().run()
    assert not at.exception and not at.error
    code = at.query_params["teach"]
    code = code[0] if isinstance(code, list) else code
    room = store.room(code)
    assert room.question.d == 49 and store.current_round(code).mechanism == "oue"
    assert f"`{classroom.format_code(code)}`" in text(at)
    assert len(at.get("image")) == 1, "the QR code is drawn"
    assert any(code in c.value for c in at.code)                    # the join link
    assert metrics(at)["Reports in this round"] == "0"
    assert "No reports yet" in at.info[0].value
    assert code in at.session_state[classroom_view.TEACHER_KEYS]


def test_a_question_too_large_is_refused_with_the_reason(store):
    at = page({}, dataset="ireland_county")
    homes, works = at.multiselect
    homes.set_value(homes.options[:10])
    works.set_value(works.options[:6])
    at.button(key=CREATE).click().run()
    assert safe.markdown("10 home zones × 6 work/study zones = 60") in at.error[0].value
    assert "teach" not in at.query_params


def test_teacher_sees_count_estimate_and_intervals(store):
    code, key, question = room_with_reports(store)
    with pytest.raises(classroom.ReportRejected):
        store.submit(code, 1, {"y": 99})                            # a forged report
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    assert metrics(at)["Reports in this round"] == "40"
    assert metrics(at)["Rejected (bad or late)"] == "1"
    snap = store.snapshot(code)
    expected = classroom.estimate_round(snap.round, question.d, snap.reports)
    top = at.dataframe[0].value
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
    at.selectbox[0].set_value("hr")                                 # the round's mechanism
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
    store.reveal(code, 1, 2)
    at = page({"teach": code})
    assert "NOT private" in text(at)
    full = at.dataframe[1].value
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
        assert at.main.children[4].key == classroom_view.PHONE      # the phone component
        assert any("not a determined student" in c.value for c in at.caption)


def test_student_with_an_unknown_code_is_told_what_to_do(store):
    at = page({"room": "NOPE-NOPE"})
    assert safe.markdown("no room with the code 'NOPE-NOPE'") in at.error[0].value
    assert "Check the code with your teacher" in at.error[0].value


def test_hostile_zone_names_stay_text(store):
    names = (("![x](http://evil/)", "<b>bold</b>"), (":red[boo]", "$x$"))
    code, key, question = room_with_reports(store, n=10, names=names)
    at = page({"teach": code}, **{classroom_view.TEACHER_KEYS: {code: key}})
    table = at.dataframe[0].value
    assert set(table["commute"]) <= {question.label(c) for c in range(question.d)}
    fig = figure(at, "Estimated students per commute")
    ticks = " ".join(fig["data"][0]["y"])
    assert "<b>" not in ticks and "&lt;b&gt;" in ticks


def test_what_a_phone_is_told_after_sending(store):
    code, _, _ = room_with_reports(store, n=2)
    answer = classroom_view.submit({"room": code, "round": 1, "report": {"y": 4},
                                    "nonce": "a" * 32})
    assert answer == {"ok": True, "message": "Sent: report number 3 of this round. Your true "
                                             "commute never left your phone."}
    assert classroom_view.submit({"room": code, "round": 1, "report": {"y": 4},
                                  "nonce": "a" * 32})["ok"]              # a replay: still 3
    assert len(store.snapshot(code).reports) == 3
    for payload, says in (({"room": code, "round": 1, "report": {"y": 6}}, "outside"),
                          ({"room": code, "round": 2, "report": {"y": 1}}, "Round 2 is not open"),
                          ({"room": "NOPE", "round": 1, "report": {"y": 1}}, "no room")):
        answer = classroom_view.submit(payload)
        assert not answer["ok"] and answer["message"].startswith("Not counted:")
        assert says in answer["message"]
