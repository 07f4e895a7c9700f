"""The classroom's room store, report validation and estimation (dpcore.interfaces.classroom)."""

import json
import sqlite3
import threading

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.interfaces import classroom
from dpcore.interfaces.classroom import (
    ClassroomError,
    Question,
    ReportRejected,
    RoomStore,
)

ZONES = ("Harbour", "Old Town", "Station")
QUESTION = Question("Where do you live and work?", ZONES, ZONES + ("Home",))   # d = 12


@pytest.fixture
def store(tmp_path):
    return RoomStore(tmp_path)


def python_reports(round_, items, seed=0):
    """Reports drawn by the mechanism's own Python client, in the stored (JSON) format."""
    mech, rng = round_.build(), np.random.default_rng(seed)
    extra = {"permutation": round_.permutation_array} if round_.mechanism == "hr" else {}
    batch = mech.perturb(np.asarray(items), QUESTION.d, rng, **extra)
    if round_.mechanism == "oue":
        return [{"bits": "".join("1" if b else "0" for b in row)} for row in batch["bits"]]
    return [{k: int(v[i]) for k, v in batch.items()} for i in range(len(items))]


def test_database_is_one_wal_file_in_the_configured_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(classroom.FOLDER_VARIABLE, str(tmp_path / "rooms"))
    store = RoomStore()
    assert store.path == tmp_path / "rooms" / classroom.DATABASE_NAME
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_default_folder_is_outside_the_repository(monkeypatch):
    monkeypatch.delenv(classroom.FOLDER_VARIABLE, raising=False)
    repository = classroom.Path(classroom.__file__).resolve().parents[1]
    assert repository not in classroom.default_folder().resolve().parents


def test_codes_are_random_from_the_alphabet(store):
    codes = {store.create_room(QUESTION, "grr", 1.0)[0] for _ in range(30)}
    assert len(codes) == 30
    assert all(len(c) == classroom.CODE_LENGTH and set(c) <= set(classroom.CODE_ALPHABET)
               for c in codes)
    assert classroom.CODE_BITS == pytest.approx(39.63, abs=0.01)
    code = codes.pop()
    assert store.room(f" {code[:4].lower()}-{code[4:]} ").code == code   # typed loosely


def test_only_reports_settings_and_times_are_stored(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    store.submit(code, 1, {"y": 5})
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT report FROM reports").fetchall() == [('{"y": 5}',)]
        assert db.execute("SELECT teacher_hash FROM rooms").fetchone()[0] != key
        columns = {row[1] for row in db.execute("PRAGMA table_info(reports)")}
    assert columns == {"id", "room", "round", "received", "report", "nonce"}


@pytest.mark.parametrize("payload, reason", [
    ({"y": 12}, "out of range"), ({"y": -1}, "out of range"), ({"y": 1.5}, "malformed"),
    ({"y": True}, "malformed"), ({"y": "3"}, "malformed"), ({"y": 1, "item": 3}, "wrong fields"),
    ({"bits": "0" * 12}, "wrong fields"), ([1, 2], "malformed"), (None, "malformed"),
])
def test_bad_reports_are_rejected_counted_and_never_aggregated(store, payload, reason):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    store.submit(code, 1, {"y": 0})
    with pytest.raises(ReportRejected) as problem:
        store.submit(code, 1, payload)
    assert problem.value.reason == reason and str(problem.value)
    snap = store.snapshot(code)
    assert len(snap.reports) == 1 and snap.rejected == {reason: 1}


@pytest.mark.parametrize("mechanism, epsilon, payload, reason", [
    ("oue", 1.0, {"bits": "0" * 11}, "wrong length"),
    ("oue", 1.0, {"bits": "0" * 11 + "2"}, "wrong length"),
    ("olh", 2.0, {"a": 0, "b": 1, "y": 0}, "out of range"),           # a = 0 is not a hash
    ("olh", 2.0, {"a": 1, "b": 2**31 - 1, "y": 0}, "out of range"),   # b ≥ P
    ("olh", 2.0, {"a": 1, "b": 1, "y": 8}, "out of range"),           # g = round(e²) + 1 = 8
    ("hr", 0.5, {"y": 16}, "out of range"),                           # K = 16 for d = 12
])
def test_report_formats_per_mechanism(store, mechanism, epsilon, payload, reason):
    code, _ = store.create_room(QUESTION, mechanism, epsilon)
    with pytest.raises(ReportRejected) as problem:
        store.submit(code, 1, payload)
    assert problem.value.reason == reason


def test_late_reports_closed_rooms_and_expired_rooms_are_rejected(store):
    code, key = store.create_room(QUESTION, "grr", 1.0, hours=1, now=1000.0)
    assert store.new_round(code, key, "oue", 2.0, now=1001.0) == 2
    with pytest.raises(ReportRejected, match="Round 1 is not open"):
        store.submit(code, 1, {"y": 0}, now=1002.0)
    assert store.snapshot(code, 2).rejected == {"round closed": 1}
    with pytest.raises(ReportRejected, match="closed"):
        store.submit(code, 2, {"bits": "0" * 12}, now=1000.0 + 3601)        # expired
    store.close_room(code, key, now=1003.0)
    with pytest.raises(ReportRejected, match="closed"):
        store.submit(code, 2, {"bits": "0" * 12}, now=1004.0)
    assert store.snapshot(code, 2).reports == []
    with pytest.raises(ClassroomError, match="closed"):
        store.new_round(code, key, "grr", 1.0, now=1005.0)


def test_earlier_rounds_stay_viewable(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    store.submit(code, 1, {"y": 3})
    store.new_round(code, key, "hr", 3.0)
    store.submit(code, 2, {"y": 1})
    rounds = store.rounds(code)
    assert [(r.number, r.mechanism, r.is_open) for r in rounds] == [(1, "grr", False),
                                                                      (2, "hr", True)]
    assert store.snapshot(code, 1).reports == [{"y": 3}]
    assert rounds[1].permutation is not None and sorted(rounds[1].permutation) == list(range(12))


def test_only_the_teacher_changes_a_room(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    _, other_key = store.create_room(QUESTION, "grr", 1.0)
    for wrong in ("", "guess", other_key):
        with pytest.raises(ClassroomError, match="teacher key"):
            store.close_room(code, wrong)
        with pytest.raises(ClassroomError, match="teacher key"):
            store.new_round(code, wrong, "oue", 1.0)
    assert store.is_teacher(code, key) and not store.is_teacher(code, other_key)
    assert store.room(code).closed is None


def test_rooms_are_isolated(store):
    first, _ = store.create_room(QUESTION, "grr", 1.0)
    second, _ = store.create_room(QUESTION, "grr", 1.0)
    for y in range(5):
        store.submit(first, 1, {"y": y})
    store.submit(second, 1, {"y": 11})
    assert len(store.snapshot(first).reports) == 5
    assert store.snapshot(second).reports == [{"y": 11}]
    with pytest.raises(ClassroomError, match="no room"):
        store.submit("ZZZZZZZZ", 1, {"y": 0})


def test_a_full_room_says_so(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=3)
    for _ in range(3):
        store.submit(code, 1, {"y": 0})
    with pytest.raises(ReportRejected, match="at most 3 reports"):
        store.submit(code, 1, {"y": 0})
    assert len(store.snapshot(code).reports) == 3


def test_sixty_concurrent_writers_lose_nothing(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    other, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=100)
    start = threading.Barrier(60)
    errors = []

    def student(number):
        try:
            start.wait()
            for repeat in range(3):   # 180 writes to one room, 60 to another, all at once
                store.submit(code, 1, {"y": (number + repeat) % 12})
            store.submit(other, 1, {"y": number % 12})
        except Exception as problem:  # noqa: BLE001 — collected and reported below
            errors.append(problem)
    threads = [threading.Thread(target=student, args=(k,)) for k in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.snapshot(code).reports) == 180
    assert len(store.snapshot(other).reports) == 60
    expected = np.bincount([(k + r) % 12 for k in range(60) for r in range(3)], minlength=12)
    got = np.bincount([r["y"] for r in store.snapshot(code).reports], minlength=12)
    assert (got == expected).all()


def test_concurrent_writers_never_overshoot_the_limit(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=25)
    outcomes = []

    def student():
        try:
            store.submit(code, 1, {"y": 0})
            outcomes.append("ok")
        except ReportRejected:
            outcomes.append("full")
    threads = [threading.Thread(target=student) for _ in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("ok") == 25 and len(store.snapshot(code).reports) == 25
    assert store.snapshot(code).rejected == {"room full": 35}


def test_reveals_are_separate_and_optional(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, reveal=True)
    store.submit(code, 1, {"y": 2})
    store.reveal(code, 1, 7)
    snap = store.snapshot(code)
    assert snap.reports == [{"y": 2}] and snap.reveals[7] == 1 and snap.reveals.sum() == 1
    closed, _ = store.create_room(QUESTION, "grr", 1.0)
    with pytest.raises(ClassroomError, match="does not collect"):
        store.reveal(closed, 1, 7)
    assert store.snapshot(closed).reveals is None
    with pytest.raises(ClassroomError):
        store.reveal(code, 1, 12)


def test_expired_rooms_are_purged_with_their_reports(store):
    old, _ = store.create_room(QUESTION, "grr", 1.0, hours=1, now=0.0)
    store.submit(old, 1, {"y": 0}, now=1.0)
    young, _ = store.create_room(QUESTION, "grr", 1.0, now=7200.0)
    with pytest.raises(ClassroomError, match="no room"):
        store.room(old)
    assert store.room(young)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM reports").fetchone()[0] == 0


def test_questions_are_at_most_fifty_cells():
    with pytest.raises(ClassroomError, match="8 home zones × 7 work/study zones = 56"):
        Question("q", tuple("ABCDEFGH"), tuple("ABCDEFG"))
    with pytest.raises(ClassroomError, match="at least one"):
        Question("q", (), ("A",))
    for key in ("toy_town", "ireland_county"):
        origins, destinations = classroom.default_zones(datasets.load(key))
        assert 2 <= len(origins) * len(destinations) <= classroom.MAX_CELLS
    toy = classroom.default_zones(datasets.load("toy_town"))
    assert len(toy[0]) == 7 and len(toy[1]) == 7


def test_question_survives_the_database_with_hostile_names(store):
    names = ("<script>alert(1)</script>", "=cmd|' /C calc'!A0", "a\nb")
    question = Question("**bold** $x$", names, ("x", "y"))
    code, _ = store.create_room(question, "grr", 1.0)
    assert store.room(code).question == question
    assert json.loads(question.to_json())["origins"] == list(names)


@pytest.mark.parametrize("mechanism, epsilon", [("grr", 1.0), ("oue", 1.0), ("olh", 2.0),
                                                ("hr", 0.5), ("hr", 3.0)])
def test_estimate_uses_the_mechanisms_server_and_is_unbiased(store, mechanism, epsilon):
    """Reports from the Python client, through the store, estimated: mean over repeats ≈ truth."""
    code, _ = store.create_room(QUESTION, mechanism, epsilon, max_reports=100_000)
    round_ = store.current_round(code)
    counts = np.array([30, 0, 5, 12, 0, 0, 40, 3, 0, 10, 0, 20])
    items = np.repeat(np.arange(12), counts)
    repeats = 40
    estimates = [classroom.estimate_round(round_, 12, python_reports(round_, items, seed))
                 for seed in range(repeats)]
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if mechanism == "hr" else {}
    sd = np.sqrt(mech.variance(counts, **extra))
    z = (np.mean([e.estimate for e in estimates], axis=0) - counts) / (sd / np.sqrt(repeats))
    assert np.abs(z).max() < 4.1      # Bonferroni over 12 cells at 5·10⁻⁴
    # intervals: the plug-in sd is close to the exact one on average
    assert np.mean([e.sd for e in estimates], axis=0) == pytest.approx(sd, rel=0.2)
    # the stored route gives the same numbers as estimating the reports directly
    reports = python_reports(round_, items, 99)
    for report in reports:
        store.submit(code, round_.number, report)
    snap = store.snapshot(code)
    direct = classroom.estimate_round(round_, 12, reports).estimate
    assert np.allclose(classroom.estimate_round(snap.round, 12, snap.reports).estimate, direct)


def test_no_reports_no_estimate():
    round_ = classroom.Round("X", 1, "grr", 1.0, None, 0.0, None)
    assert classroom.estimate_round(round_, 12, []) is None


def test_plug_in_counts_sum_to_n():
    counts = classroom.plug_in_counts(np.array([-3.0, 10.2, 5.5, 0.0]), 17)
    assert counts.sum() == 17 and (counts >= 0).all() and counts[0] == 0
    assert classroom.plug_in_counts(np.array([-1.0, -2.0]), 3).sum() == 3


def test_a_resent_message_counts_once(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, reveal=True)
    nonce = "0123456789abcdef" * 2
    assert store.submit(code, 1, {"y": 4}, nonce=nonce) == 1
    assert store.submit(code, 1, {"y": 4}, nonce=nonce) == 1          # the same message again
    assert store.submit(code, 1, {"y": 4}, nonce="f" * 32) == 2       # another student's
    for bad in ("xyz", "0" * 31, 12):
        with pytest.raises(ReportRejected, match="nonce"):
            store.submit(code, 1, {"y": 4}, nonce=bad)
    store.reveal(code, 1, 3, nonce=nonce)                             # separate namespace
    store.reveal(code, 1, 3, nonce=nonce)
    snap = store.snapshot(code)
    assert len(snap.reports) == 2 and snap.reveals.sum() == 1
    assert snap.rejected == {"malformed": 3}
