"""The classroom's room store, report validation and estimation (dpcore.interfaces.classroom)."""

import dataclasses
import json
import secrets
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.interfaces import classroom, classroom_admission as admission, classroom_stats
from dpcore.interfaces.classroom import (
    ClassroomError,
    Question,
    ReportRejected,
    RoomStore,
)
from dpcore.interfaces.store import StoreUnavailable

ZONES = ("Harbour", "Old Town", "Station")
QUESTION = Question("Where do you live and work?", ZONES, ZONES + ("Home",))   # d = 3·4 + 1 = 13
D = QUESTION.d


@pytest.fixture
def store(tmp_path):
    return RoomStore(tmp_path)


def send(store, code, report, session=None, now=None, number="current", address=None,
         join_code=None):
    """One report as the page sends it: a ticket for a browser session (a fresh one unless named)
    from a network ``address`` (None: loopback), then the report. An OLH report's seed stands for
    the one the page issued (honest seeds are uniform, like the Python client's)."""
    ticket = store.ticket(code, session or secrets.token_hex(16), address, join_code)
    if isinstance(report, dict) and {"a", "b"} <= set(report):
        ticket = dataclasses.replace(ticket, seed=(report["a"], report["b"]))
    if number != "current":
        ticket = dataclasses.replace(ticket, round=number)
    return store.submit(ticket, report, now=now)


def python_reports(round_, items, seed=0, d=D):
    """Reports drawn by the mechanism's own Python client, in the stored (JSON) format."""
    mech, rng = round_.build(), np.random.default_rng(seed)
    extra = {"permutation": round_.permutation_array} if round_.mechanism == "hr" else {}
    batch = mech.perturb(np.asarray(items), d, rng, **extra)
    if round_.mechanism == "oue":
        return [{"bits": "".join("1" if b else "0" for b in row)} for row in batch["bits"]]
    return [{k: int(v[i]) for k, v in batch.items()} for i in range(len(items))]


def test_database_is_one_wal_file_in_the_configured_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(classroom.FOLDER_VARIABLE, str(tmp_path / "rooms"))
    store = RoomStore()
    assert store.path == tmp_path / "rooms" / classroom.DATABASE_NAME
    assert not store.path.exists()                          # no I/O until the first request
    store.purge_expired()
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_default_folder_is_outside_the_repository(monkeypatch):
    monkeypatch.delenv(classroom.FOLDER_VARIABLE, raising=False)
    repository = classroom.Path(classroom.__file__).resolve().parents[3]
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
    session = "5" * 32
    send(store, code, {"y": 5}, session=session)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT report FROM reports").fetchall() == [('{"y": 5}',)]
        assert db.execute("SELECT teacher_hash FROM rooms").fetchone()[0] != key
        columns = {row[1] for row in db.execute("PRAGMA table_info(reports)")}
        stored, joined = db.execute("SELECT session, joined FROM reports").fetchone()
    assert columns == {"id", "room", "round", "received", "report", "nonce", "session", "joined"}
    assert stored == classroom.session_hash(session, "report") and session not in stored
    assert joined is None                         # an open room: no join code links rounds


@pytest.mark.parametrize("payload, reason", [
    ({"y": 13}, "out of range"), ({"y": -1}, "out of range"), ({"y": 1.5}, "malformed"),
    ({"y": True}, "malformed"), ({"y": "3"}, "malformed"), ({"y": 1, "item": 3}, "wrong fields"),
    ({"bits": "0" * 13}, "wrong fields"), ([1, 2], "malformed"), (None, "malformed"),
    ({"y": 2 ** 64}, "out of range"),
])
def test_bad_reports_are_rejected_counted_and_never_aggregated(store, payload, reason):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    send(store, code, {"y": 0})
    with pytest.raises(ReportRejected) as problem:
        send(store, code, payload)
    assert problem.value.reason == reason and str(problem.value)
    snap = store.snapshot(code)
    assert len(snap.reports) == 1 and snap.rejected == {reason: 1}


@pytest.mark.parametrize("mechanism, epsilon, payload, reason", [
    ("oue", 1.0, {"bits": "0" * 12}, "wrong length"),
    ("oue", 1.0, {"bits": "0" * 12 + "2"}, "wrong length"),
    ("olh", 2.0, {"a": 0, "b": 1, "y": 0}, "out of range"),           # a = 0 is not a hash
    ("olh", 2.0, {"a": 1, "b": 2**31 - 1, "y": 0}, "out of range"),   # b ≥ P
    ("olh", 2.0, {"a": 1, "b": 1, "y": 8}, "out of range"),           # g = round(e²) + 1 = 8
    ("hr", 0.5, {"y": 16}, "out of range"),                           # K = 16 for d = 13
])
def test_report_formats_per_mechanism(store, mechanism, epsilon, payload, reason):
    code, _ = store.create_room(QUESTION, mechanism, epsilon)
    with pytest.raises(ReportRejected) as problem:
        send(store, code, payload)
    assert problem.value.reason == reason


@pytest.mark.parametrize("number", [2 ** 64, -1, 0, 51, 1.0, "1", None, True])
def test_out_of_range_rounds_are_rejected_with_a_message(store, number):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    with pytest.raises(ReportRejected) as problem:
        send(store, code, {"y": 0}, number=number)
    assert "round" in str(problem.value).lower()
    assert problem.value.reason in ("out of range", "malformed")
    if number is not None:                                  # None: the latest round
        with pytest.raises(ClassroomError):
            store.snapshot(code, number)


def test_late_reports_closed_rooms_and_expired_rooms_are_rejected(store):
    start = time.time()
    code, key = store.create_room(QUESTION, "grr", 1.0, hours=1, now=start)
    late = store.ticket(code, "late" * 8)                 # drawn while round 1 was open
    assert store.new_round(code, key, "oue", 2.0, now=start + 1) == 2
    with pytest.raises(ReportRejected, match="Round 1 is not open"):
        store.submit(late, {"y": 0}, now=start + 2)
    assert store.snapshot(code, 2).rejected == {"round closed": 1}
    store.close_room(code, key, now=start + 3)
    with pytest.raises(ReportRejected, match="closed"):
        send(store, code, {"bits": "0" * 13}, now=start + 4)
    assert store.snapshot(code, 2).reports == []
    with pytest.raises(ClassroomError, match="closed"):
        store.new_round(code, key, "grr", 1.0, now=start + 5)


def test_expired_rooms_are_unreadable_before_they_are_purged(store):
    code, key = store.create_room(QUESTION, "grr", 1.0, hours=1)
    ticket = store.ticket(code, "t" * 32)
    with sqlite3.connect(store.path) as db:                 # an hour and a second later
        db.execute("UPDATE rooms SET expires = expires - 3601")
    for read in (store.room, store.current_round, store.rounds, store.snapshot, store.sessions):
        with pytest.raises(ClassroomError, match="no room"):
            read(code)
    with pytest.raises(ClassroomError, match="no room"):
        store.submit(ticket, {"y": 0})
    with pytest.raises(ClassroomError, match="no room"):
        store.close_room(code, key)
    assert not store.is_teacher("nope", key)


def test_earlier_rounds_stay_viewable(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    send(store, code, {"y": 3})
    store.new_round(code, key, "hr", 3.0)
    send(store, code, {"y": 1})
    rounds = store.rounds(code)
    assert [(r.number, r.mechanism, r.is_open) for r in rounds] == [(1, "grr", False),
                                                                      (2, "hr", True)]
    assert store.snapshot(code, 1).reports == [{"y": 3}]
    assert rounds[1].permutation is not None and sorted(rounds[1].permutation) == list(range(D))


def test_only_the_teacher_changes_a_room(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    _, other_key = store.create_room(QUESTION, "grr", 1.0)
    session = send(store, code, {"y": 0}, session="s" * 32) and store.sessions(code)[0].session
    for wrong in ("", "guess", other_key):
        with pytest.raises(ClassroomError, match="teacher key"):
            store.close_room(code, wrong)
        with pytest.raises(ClassroomError, match="teacher key"):
            store.new_round(code, wrong, "oue", 1.0)
        with pytest.raises(ClassroomError, match="teacher key"):
            store.discard_session(code, wrong, session)
    assert store.is_teacher(code, key) and not store.is_teacher(code, other_key)
    assert store.room(code).closed is None and len(store.snapshot(code).reports) == 1


def test_rooms_are_isolated(store):
    first, _ = store.create_room(QUESTION, "grr", 1.0)
    second, _ = store.create_room(QUESTION, "grr", 1.0)
    for y in range(5):
        send(store, first, {"y": y})
    send(store, second, {"y": 11})
    assert len(store.snapshot(first).reports) == 5
    assert store.snapshot(second).reports == [{"y": 11}]
    with pytest.raises(ClassroomError, match="no room"):
        send(store, "ZZZZZZZZ", {"y": 0})


def test_a_full_room_says_so(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=10)
    for _ in range(10):
        send(store, code, {"y": 0})
    with pytest.raises(ReportRejected, match="at most 10 reports"):
        send(store, code, {"y": 0})
    assert len(store.snapshot(code).reports) == 10


def test_sixty_concurrent_writers_lose_nothing(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    other, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=100)
    start = threading.Barrier(60)
    errors = []

    def student(number):
        try:
            start.wait()
            for repeat in range(3):   # 180 writes to one room, 60 to another, all at once
                send(store, code, {"y": (number + repeat) % 12})
            send(store, other, {"y": number % 12})
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
    expected = np.bincount([(k + r) % 12 for k in range(60) for r in range(3)], minlength=D)
    got = np.bincount([r["y"] for r in store.snapshot(code).reports], minlength=D)
    assert (got == expected).all()


def test_concurrent_writers_never_overshoot_the_limit(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, max_reports=25)
    outcomes = []

    def student():
        try:
            send(store, code, {"y": 0})
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


# ----------------------------------------------------------------------------- the flood (issue 20)
def spellings(code: str) -> list[str]:
    """The same room written every way a forger tried (and more)."""
    return [code, code.lower(), " " + code, code + " ", f"{code[:4]}-{code[4:]}",
            f"{code[:4].lower()} {code[4:]}", "\t" + code + "\n", code.swapcase(),
            "-".join(code), f"{code}\u200b", code + "!"]


def test_one_session_floods_one_report_counted_in_any_spelling(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    session = "f" * 32
    accepted, rejected = 0, 0
    for spelling in spellings(code) * 20:                   # 220 attempts, as fast as possible
        for ticket in (store.ticket(spelling, session),        # the page's ticket, and a forged
                       classroom.Ticket(spelling, 1, session, secrets.token_hex(16))):   # one
            try:
                store.submit(ticket, {"y": 5})
                accepted += 1
            except ReportRejected as problem:
                assert problem.reason == "second report"
                rejected += 1
    assert accepted == 1 and rejected == 439
    snap = store.snapshot(code)
    assert len(snap.reports) == 1 and snap.rejected == {"second report": 439}
    [summary] = store.sessions(code)
    assert (summary.reports, summary.rejected) == (1, 439)
    estimate = classroom_stats.estimate_round(snap.round, D, snap.reports).raw
    assert estimate.sum() == pytest.approx(1.0)             # the room still reads one student
    # an honest classmate is not shut out
    assert send(store, code, {"y": 1}) == 2
    # the database itself refuses a second row for the session, whatever the code says
    with sqlite3.connect(store.path) as db, pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO reports(room, round, received, report, nonce, session) "
                   "SELECT room, round, received, report, ?, session FROM reports LIMIT 1",
                   ("e" * 32,))


def test_a_new_round_is_a_new_slot_and_nonces_are_single_use(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    first = store.ticket(code, "a" * 32)
    assert store.submit(first, {"y": 1}) == 1
    store.new_round(code, key, "grr", 2.0)
    assert send(store, code, {"y": 1}, session="a" * 32) == 1        # same session, round 2
    replay = dataclasses.replace(store.ticket(code, "b" * 32), nonce=first.nonce)
    with pytest.raises(ReportRejected, match="already used"):
        store.submit(replay, {"y": 1})
    for bad in ("xyz", "0" * 31, 12, None):
        with pytest.raises(ReportRejected, match="nonce"):
            store.submit(dataclasses.replace(store.ticket(code, "c" * 32), nonce=bad), {"y": 1})
    assert store.snapshot(code).rejected == {"reused nonce": 1, "malformed": 4}


def test_tickets_come_from_the_database_not_the_phone(store):
    code, _ = store.create_room(QUESTION, "olh", 2.0)
    ticket = store.ticket(f" {code.lower()} ", "p" * 32)
    assert (ticket.room, ticket.round) == (code, 1)
    assert len(ticket.nonce) == classroom.NONCE_HEX and 1 <= ticket.seed[0] < 2 ** 31 - 1
    with pytest.raises(ClassroomError, match="session"):
        store.ticket(code, "")
    a, b = ticket.seed
    g = store.current_round(code).build().hash_range
    with pytest.raises(ReportRejected, match="hash seed") as problem:     # a seed of its own
        store.submit(ticket, {"a": a + 1, "b": b, "y": 0})
    assert problem.value.reason == "implausible"
    assert store.submit(ticket, {"a": a, "b": b, "y": g - 1}) == 1
    spec = classroom.client_spec(store.current_round(code), D, ticket.seed)
    assert spec["seed"] == [a, b]


def test_rate_limit_per_connection():
    limit = classroom.RateLimit(limit=3, seconds=60)
    assert [limit.allow(now=t) for t in (0, 1, 2, 3, 59)] == [True, True, True, False, False]
    assert limit.allow(now=60.5) and not limit.allow(now=60.6)   # the window slides


# --------------------------------------------------------------------------- reveals (issue 20)
def test_reveals_need_a_report_of_the_same_session_and_round(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, reveal=True)
    forger = store.ticket(code, "9" * 32)
    for _ in range(30):                                     # 30 "true answers", no report
        with pytest.raises(ClassroomError, match="only after"):
            store.reveal(forger, 7)
    honest = store.ticket(code, "1" * 32)
    store.submit(honest, {"y": 2})
    for _ in range(3):
        store.reveal(honest, 7)                             # once per session and round
    snap = store.snapshot(code)
    assert snap.reports == [{"y": 2}] and snap.reveals[7] == 1 and snap.reveals.sum() == 1
    with pytest.raises(ClassroomError):
        store.reveal(honest, 13)
    with pytest.raises(ClassroomError):
        store.reveal(dataclasses.replace(honest, round=2 ** 64), 7)
    closed, _ = store.create_room(QUESTION, "grr", 1.0)
    with pytest.raises(ClassroomError, match="does not collect"):
        store.reveal(store.ticket(closed, "1" * 32), 7)
    assert store.snapshot(closed).reveals is None
    with sqlite3.connect(store.path) as db:                 # unlinked to the report
        [(reveal_session,)] = db.execute("SELECT session FROM reveals").fetchall()
        report_sessions = {r[0] for r in db.execute("SELECT session FROM reports")}
    assert reveal_session not in report_sessions


# ---------------------------------------------------------------------------- caps (issue 20)
def test_titles_names_rooms_and_rounds_are_capped(store, monkeypatch):
    with pytest.raises(ClassroomError, match="at most 200"):
        Question("x" * (20 * 2 ** 20), ("A",), ("B",))      # the 20 MB title
    with pytest.raises(ClassroomError, match="longer than 80"):
        Question("q", ("A" * 81,), ("B",))
    monkeypatch.setattr(classroom.rooms, "MAX_OPEN_ROOMS", 3)
    codes = [store.create_room(QUESTION, "grr", 1.0) for _ in range(3)]
    with pytest.raises(ClassroomError, match="3 open rooms"):
        store.create_room(QUESTION, "grr", 1.0)
    store.close_room(*codes[0])
    store.create_room(QUESTION, "grr", 1.0)                 # a closed room frees a place
    monkeypatch.setattr(classroom.rooms, "MAX_ROUNDS", 2)
    code, key = codes[1]
    store.new_round(code, key, "grr", 2.0)
    with pytest.raises(ClassroomError, match="at most 2 rounds"):
        store.new_round(code, key, "grr", 3.0)
    for bad in ({"hours": 0}, {"hours": 73}, {"max_reports": 9},
                {"max_reports": classroom.MAX_REPORTS + 1}, {"students": 1},
                {"students": classroom.MAX_REPORTS + 1}):
        with pytest.raises(ClassroomError):
            store.create_room(QUESTION, "grr", 1.0, **bad)


def test_a_lecture_hall_fits_one_room():
    """Issue 38: a 1,000-seat hall's two rounds (a memoized repeat) fit one room, and a class
    behind one router can raise the cap per address to the room's whole class."""
    assert classroom.MAX_REPORTS >= 2 * 1000
    assert admission.MAX_CAP == classroom.MAX_REPORTS


def test_a_lecture_hall_gets_a_join_code_per_seat(store):
    """Issue 38: a 1,000-seat hall with one-time join codes: 1,000 distinct codes issued."""
    code, key = store.create_room(QUESTION, "oue", 1.0, admission="codes", codes=1000,
                                  students=1000)
    issued = store.join_codes(code, key)
    assert len(issued) == len({c for c, _ in issued}) == 1000
    with pytest.raises(ClassroomError, match="between 1 and 2,000 codes"):
        store.create_room(QUESTION, "oue", 1.0, admission="codes", codes=admission.MAX_CODES + 1)


def test_the_store_size_is_capped_with_a_plain_message(tmp_path):
    store = RoomStore(tmp_path, max_bytes=96 * 1024)
    code, _ = store.create_room(QUESTION, "oue", 1.0, max_reports=500)
    round_ = store.current_round(code)
    with pytest.raises(StoreUnavailable, match="storage is full") as problem:
        for report in python_reports(round_, np.zeros(500, dtype=int)):
            send(store, code, report)
    assert "Traceback" not in str(problem.value) and "sqlite" not in str(problem.value).lower()
    assert store.db.size_bytes() <= 96 * 1024 + 64 * 1024   # the file, and a bounded log
    assert len(store.snapshot(code).reports) > 10           # reading still works


# ------------------------------------------------------------------ implausible reports (issue 20)
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_implausible_oue_vectors_are_rejected_and_counted(store, epsilon):
    code, _ = store.create_room(QUESTION, "oue", epsilon)
    p, q = store.current_round(code).build().support_probabilities(D)
    low, high = classroom.plausible_ones(p, q, D)
    law = classroom.support_size_law(p, q, D)
    assert law.sum() == pytest.approx(1.0)
    assert law[:low].sum() + law[high + 1:].sum() <= classroom.FALSE_REJECTION
    assert high < D
    for forged in ("1" * D, "1" * (high + 1) + "0" * (D - high - 1)):
        with pytest.raises(ReportRejected, match="bits set") as problem:
            send(store, code, {"bits": forged})
        assert problem.value.reason == "implausible"
    send(store, code, {"bits": "1" * high + "0" * (D - high)})       # the edge is accepted
    assert store.snapshot(code).rejected == {"implausible": 2}


def test_support_size_law_matches_the_python_client():
    """The binomial law the threshold comes from is the law of honest OUE reports: counts of ones
    in 40,000 reports from dpcore's client against it (chi-square, fixed seed)."""
    from scipy import stats
    d, mech = 50, classroom.mechanisms.build("oue", epsilon=1.0)
    rng = np.random.default_rng(11)
    ones = mech.perturb(rng.integers(0, d, 40_000), d, rng)["bits"].sum(axis=1)
    law = classroom.support_size_law(*mech.support_probabilities(d), d)
    keep = law * 40_000 >= 5
    observed = np.append(np.bincount(ones, minlength=d + 1)[keep], (~keep[ones]).sum())
    expected = np.append(law[keep] * 40_000, law[~keep].sum() * 40_000)
    assert stats.chisquare(observed, expected, ddof=0).pvalue > 1e-3


@pytest.mark.parametrize("alpha", [1e-6, 0.01])
def test_false_rejection_rate_of_honest_reports(alpha):
    """Honest reports from the real randomiser (fixed seed) are rejected at most at the stated
    rate: the count of rejections among N is Binomial(N, r) with r ≤ α the exact rate of the
    thresholds; accepted if within r·N + 4·sqrt(r·N) + 4 (P(beyond) < 10⁻⁴ for a Poisson count)."""
    d, n = 50, 200_000
    rng = np.random.default_rng(2026)
    for epsilon in (1.0, 4.0):
        mech = classroom.mechanisms.build("oue", epsilon=epsilon)
        p, q = mech.support_probabilities(d)
        low, high = classroom.plausible_ones(p, q, d, alpha)
        law = classroom.support_size_law(p, q, d)
        exact = law[:low].sum() + law[high + 1:].sum()
        assert exact <= alpha
        ones = mech.perturb(rng.integers(0, d, n), d, rng)["bits"].sum(axis=1)
        rejected = int(((ones < low) | (ones > high)).sum())
        assert rejected <= exact * n + 4 * np.sqrt(exact * n) + 4
        if alpha >= 0.01:              # and the thresholds are the law's, not looser
            assert rejected >= exact * n - 4 * np.sqrt(exact * n) - 4


def test_the_teacher_discards_one_sessions_reports(store):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    store.submit(store.ticket(code, "b" * 32), {"y": 9})
    for _ in range(5):
        with pytest.raises(ReportRejected):
            store.submit(store.ticket(code, "b" * 32), {"y": 9})
    send(store, code, {"y": 1}, session="g" * 32)
    worst = store.sessions(code)[0]
    assert (worst.rejected, worst.reports, worst.discarded, len(worst.label)) == (5, 1, False, 8)
    assert store.discard_session(code, key, worst.session) == 1
    assert store.snapshot(code).reports == [{"y": 1}]
    store.new_round(code, key, "grr", 2.0)
    with pytest.raises(ReportRejected, match="discarded"):
        store.submit(store.ticket(code, "b" * 32), {"y": 9})
    assert store.sessions(code)[0].discarded
    with pytest.raises(ClassroomError, match="no such session"):
        store.discard_session(code, key, "0" * 64)


# -------------------------------------------------------------------- store failures (issue 20)
def test_a_deleted_database_file_is_recreated(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    send(store, code, {"y": 0})
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(ClassroomError, match="no room"):   # gone, said plainly …
        store.room(code)
    fresh, _ = store.create_room(QUESTION, "grr", 1.0)       # … and the store works again
    assert send(store, fresh, {"y": 0}) == 1


def test_a_deleted_folder_is_recreated(tmp_path):
    store = RoomStore(tmp_path / "rooms")
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    shutil.rmtree(tmp_path / "rooms")
    with pytest.raises(ClassroomError, match="no room"):
        store.room(code)
    assert store.create_room(QUESTION, "grr", 1.0)


def test_a_deleted_file_with_a_stale_log_is_not_replayed(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    holder = sqlite3.connect(store.path)                     # keeps the log from checkpointing
    holder.execute("BEGIN")
    holder.execute("SELECT * FROM rooms").fetchall()
    send(store, code, {"y": 0})
    store.path.unlink()
    holder.close()
    fresh, _ = store.create_room(QUESTION, "grr", 1.0)
    assert [r.code for r in [store.room(fresh)]] == [fresh]


def test_an_unusable_folder_is_a_plain_message(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    store = RoomStore(tmp_path / "file" / "rooms")            # its parent is a file
    for action in (lambda: store.room("ABCDEFGH"),
                   lambda: store.create_room(QUESTION, "grr", 1.0)):
        with pytest.raises(StoreUnavailable, match="cannot be opened") as problem:
            action()
        assert str(tmp_path) in problem.value.detail


def read_only(monkeypatch):
    """The database opened read-only, as on a read-only mount (tests run as root, so chmod would
    not stop a write)."""
    connect = sqlite3.connect

    def opened_read_only(path, *args, **kwargs):
        return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
    monkeypatch.setattr(sqlite3, "connect", opened_read_only)


def test_a_read_only_store_reads_and_refuses_writes_plainly(store, monkeypatch):
    code, key = store.create_room(QUESTION, "grr", 1.0)
    send(store, code, {"y": 3})
    reopened = RoomStore(store.folder)
    read_only(monkeypatch)
    assert reopened.snapshot(code).reports == [{"y": 3}]
    for write in (lambda: send(reopened, code, {"y": 1}),
                  lambda: reopened.create_room(QUESTION, "grr", 1.0),
                  lambda: reopened.new_round(code, key, "oue", 1.0)):
        with pytest.raises(StoreUnavailable, match="read-only") as problem:
            write()
        assert "Reading still works" in str(problem.value)


def test_a_full_disk_is_a_plain_message(store, monkeypatch):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    error = sqlite3.OperationalError("database or disk is full")
    with pytest.raises(StoreUnavailable, match="storage is full"), store.db.write():
        raise error

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    store.path.unlink()
    monkeypatch.setattr(Path, "mkdir", disk_full)             # re-creating it finds no space
    with pytest.raises(StoreUnavailable, match="storage is full"):
        store.room(code)


def test_a_held_lock_blocks_writes_briefly_and_never_reads(tmp_path):
    store = RoomStore(tmp_path, write_timeout=0.5)
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    send(store, code, {"y": 0})
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")                          # another writer holds the lock
    try:
        started = time.monotonic()
        assert len(store.snapshot(code).reports) == 1         # reads go on (WAL) …
        assert time.monotonic() - started < 0.4               # … without waiting
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="busy"):
            send(store, code, {"y": 1})
        assert time.monotonic() - started < 3                 # seconds, not the old 30 s
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert send(store, code, {"y": 1}) == 2


def test_an_exclusive_lock_makes_reads_fail_fast(tmp_path):
    store = RoomStore(tmp_path, read_timeout=0.3)
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE rooms SET reveal = reveal")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="busy"):
            store.room(code)
        assert time.monotonic() - started < 3
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_damaged_file_is_a_plain_message(store):
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreUnavailable, match="damaged"):
        store.room("ABCDEFGH")


def test_an_older_layout_is_replaced(tmp_path):
    with sqlite3.connect(tmp_path / classroom.DATABASE_NAME) as db:
        db.execute("CREATE TABLE reports(id INTEGER PRIMARY KEY, room TEXT, nonce TEXT)")
        db.execute("CREATE TABLE other_owner(x)")            # another owner's table stays
    store = RoomStore(tmp_path)
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    assert send(store, code, {"y": 0}) == 1
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM other_owner").fetchone() == (0,)


def test_a_layout_without_admission_or_session_addresses_is_replaced(tmp_path):
    """The layout before admission modes: rooms without ``admission``, sessions without
    ``address``; its rooms are dropped, the new layout works."""
    store = RoomStore(tmp_path)
    old, _ = store.create_room(QUESTION, "grr", 1.0)
    send(store, old, {"y": 0})
    with sqlite3.connect(store.path) as db:
        for table in ("rooms", "sessions"):
            db.execute(f"DROP TABLE {table}")
        db.execute("CREATE TABLE rooms(code TEXT PRIMARY KEY, teacher_hash TEXT, created REAL, "
                   "expires REAL, closed REAL, question TEXT, reveal INTEGER, "
                   "max_reports INTEGER, students INTEGER)")
        db.execute("CREATE TABLE sessions(room TEXT, session TEXT, rejected INTEGER, "
                   "discarded INTEGER)")
    store = RoomStore(tmp_path)
    code, _ = store.create_room(QUESTION, "grr", 1.0, admission="address", cap=1)
    assert send(store, code, {"y": 0}) == 1
    with sqlite3.connect(store.path) as db:              # the old room's report went with it
        assert db.execute("SELECT room FROM reports").fetchall() == [(code,)]


def test_expired_rooms_are_purged_with_their_reports(store):
    now = time.time()
    old, _ = store.create_room(QUESTION, "grr", 1.0, hours=1, now=now - 7200)
    store.submit(classroom.Ticket(old, 1, "s" * 32, "a" * 32), {"y": 0}, now=now - 7199)
    young, _ = store.create_room(QUESTION, "grr", 1.0, now=now)
    with pytest.raises(ClassroomError, match="no room"):
        store.room(old)
    assert store.room(young)
    with sqlite3.connect(store.path) as db:
        for table in ("rooms", "reports", "sessions", "rounds"):
            column = "code" if table == "rooms" else "room"
            assert db.execute(f"SELECT COUNT(*) FROM {table} WHERE {column}=?",
                              (old,)).fetchone()[0] == 0


def test_questions_are_at_most_fifty_cells_with_none_of_these():
    with pytest.raises(ClassroomError, match="8 home zones × 7 work/study zones = 56"):
        Question("q", tuple("ABCDEFGH"), tuple("ABCDEFG"))
    with pytest.raises(ClassroomError, match="at least one"):
        Question("q", (), ("A",))
    for key in ("toy_town", "ireland_county"):
        origins, destinations = classroom.default_zones(datasets.load(key))
        assert 2 <= len(origins) * len(destinations) + 1 <= classroom.MAX_CELLS
    toy = classroom.default_zones(datasets.load("toy_town"))
    assert len(toy[0]) == 7 and len(toy[1]) == 7
    assert Question("q", ("A",), ("B",)).d == 2
    assert QUESTION.label(D - 1) == classroom.NONE_OF_THESE and QUESTION.none_cell == 12
    assert QUESTION.label(11) == "Station → Home"


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
    code, _ = store.create_room(QUESTION, mechanism, epsilon, max_reports=500)
    round_ = store.current_round(code)
    counts = np.array([30, 0, 5, 12, 0, 0, 40, 3, 0, 10, 0, 20, 4])
    items = np.repeat(np.arange(D), counts)
    repeats = 40
    estimates = [classroom_stats.estimate_round(round_, D, python_reports(round_, items, seed))
                 for seed in range(repeats)]
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if mechanism == "hr" else {}
    sd = np.sqrt(mech.variance(counts, **extra))
    z = (np.mean([e.raw for e in estimates], axis=0) - counts) / (sd / np.sqrt(repeats))
    assert np.abs(z).max() < 4.1      # Bonferroni over 13 cells at 5·10⁻⁴
    # the stored route gives the same numbers as estimating the reports directly
    reports = python_reports(round_, items, 99)
    for report in reports:
        send(store, code, report)
    snap = store.snapshot(code)
    direct = classroom_stats.estimate_round(round_, D, reports).raw
    assert np.allclose(classroom_stats.estimate_round(snap.round, D, snap.reports).raw, direct)


def test_no_reports_no_estimate():
    round_ = classroom.Round("X", 1, "grr", 1.0, None, 0.0, None)
    assert classroom_stats.estimate_round(round_, 12, []) is None


def test_six_students_three_sharing_a_commute_top_three_at_the_proposed_settings(store):
    """Issue 24's done-when: 6 simulated students, 3 on one commute, on the toy town's 7 × 7 + 1
    question at the proposed settings: that commute is in the top 3 in at least 9 of 10 seeded
    runs (ties counted against it)."""
    origins, destinations = classroom.default_zones(datasets.load("toy_town"))
    question = Question("Where?", tuple(origins), tuple(destinations))
    proposal = classroom_stats.propose(6, question.d)
    shared = question.cell(2, 3)
    items = np.array([shared] * 3 + [question.cell(0, 0), question.cell(5, 1),
                                     question.none_cell])
    top3 = 0
    for seed in range(10):
        code, _ = store.create_room(question, proposal.mechanism, proposal.epsilon, students=6)
        round_ = store.current_round(code)
        for report in python_reports(round_, items, seed, d=question.d):
            send(store, code, report)
        snap = store.snapshot(code)
        estimate = classroom_stats.estimate_round(snap.round, question.d, snap.reports).raw
        top3 += int((np.delete(estimate, shared) >= estimate[shared]).sum() < 3)
    assert top3 >= 9


# ------------------------------------------------- admission: one student, one voice (issue 29)
def flood(store, code, times=12, address="203.0.113.7", join_code=None):
    """One device clearing its site data and reloading: a new session each time, same address."""
    counted = 0
    for _ in range(times):
        try:
            send(store, code, {"y": 0}, address=address, join_code=join_code)
            counted += 1
        except ReportRejected:
            pass
    return counted


def test_an_open_room_counts_every_new_session(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    assert flood(store, code) == 12                 # today's behaviour, kept as the "open" mode


@pytest.mark.parametrize("cap", [1, 3])
def test_a_capped_room_admits_at_most_the_cap_per_address_and_round(store, cap):
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="address", cap=cap)
    assert store.room(code).cap == cap
    assert flood(store, code) == cap
    assert store.snapshot(code).rejected == {"address cap": 12 - cap}
    assert flood(store, code, address="198.51.100.4") == cap     # another network: its own cap
    assert flood(store, code, address=None) == cap               # loopback: one address
    assert {g.sessions for g in store.addresses(code)} == {12}      # three addresses, 12 each
    # a new round is a new slot per address
    store.new_round(code, key, "grr", 2.0)
    assert flood(store, code) == cap


def test_discarded_address_slots_stay_used(store):
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="address", cap=2)
    assert flood(store, code, times=5) == 2
    [group] = store.addresses(code)
    assert (group.sessions, group.reports, group.rejected, group.discarded) == (5, 2, 3, 0)
    assert store.discard_address(code, key, group.address) == 2
    assert store.snapshot(code).reports == []
    assert flood(store, code, times=5) == 0          # the address used its cap this round
    [group] = store.addresses(code)
    assert group.discarded == 5 and group.reports == 0
    with pytest.raises(ClassroomError, match="no sessions from that address"):
        store.discard_address(code, key, "0" * 64)
    with pytest.raises(ClassroomError, match="teacher key"):
        store.discard_address(code, "wrong", group.address)


def test_caps_are_validated(store):
    with pytest.raises(ClassroomError, match="between 1 and"):
        store.create_room(QUESTION, "grr", 1.0, admission="address", cap=0)
    with pytest.raises(ClassroomError, match="one per student"):
        store.create_room(QUESTION, "grr", 1.0, admission="codes", codes=0)
    with pytest.raises(ClassroomError, match="Unknown admission"):
        store.create_room(QUESTION, "grr", 1.0, admission="sometimes")


def test_join_codes_admit_one_report_each_per_round(store):
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="codes", codes=3)
    codes = [c for c, _ in store.join_codes(code, key)]
    assert len(set(codes)) == 3
    assert all(len(c) == admission.JOIN_CODE_LENGTH and set(c) <= set(classroom.CODE_ALPHABET)
               for c in codes)
    assert flood(store, code) == 0                              # no code: nothing counted
    assert flood(store, code, join_code="ZZZZZZ") == 0          # not one of the room's
    assert flood(store, code, join_code=codes[0].lower()) == 1  # typed loosely, once per round
    assert flood(store, code, join_code=codes[1]) == 1
    assert store.snapshot(code).rejected == {"no join code": 12, "unknown join code": 12,
                                             "join code used": 22}
    assert dict(store.join_codes(code, key)) == {codes[0]: 1, codes[1]: 1, codes[2]: 0}
    session = secrets.token_hex(16)
    assert store.try_join_code(code, f" {codes[2][:3]}-{codes[2][3:]} ", session, None)
    assert not store.try_join_code(code, "ZZZZZZ", session, None)
    store.new_round(code, key, "grr", 2.0)
    assert flood(store, code, join_code=codes[0]) == 1          # the next round: its slot again
    with pytest.raises(ClassroomError, match="teacher key"):
        store.join_codes(code, "wrong")


def test_wrong_join_codes_are_limited_per_session_and_shown_to_the_teacher(store):
    """Issue 40: one connection guessed 20 codes a second, unlimited and unseen. Now the sixth
    wrong code in ten minutes from a session is refused unchecked — the right code too, so
    guessing learns nothing — until the window ends; the teacher sees who typed them."""
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="codes", codes=2)
    right = store.join_codes(code, key)[0][0]
    guesser, now = secrets.token_hex(16), 1_000_000.0
    guesses = [store.try_join_code(code, f"ZZZZZ{k}", guesser, "203.0.113.7", now + k / 20)
               for k in range(admission.WRONG_CODES_PER_SESSION)]
    assert guesses == [False] * admission.WRONG_CODES_PER_SESSION
    refused = 0
    for k in range(200):                      # ten seconds more at 20 a second
        with pytest.raises(admission.TooManyWrongCodes, match="from this browser"):
            store.try_join_code(code, right if k == 0 else f"Z{k:05d}", guesser, "203.0.113.7",
                                now + 1 + k / 20)
        refused += 1
    # another student on the same network still joins; the guesser after the window too
    assert store.try_join_code(code, right, secrets.token_hex(16), "203.0.113.7", now + 12)
    assert store.try_join_code(code, right, guesser, "203.0.113.7",
                               now + admission.JOIN_WINDOW + 1)
    rows = {(r.kind, r.wrong, r.refused) for r in store.wrong_join_codes(code, key)}
    assert rows == {("session", 5, 200), ("address", 5, 200)}
    with pytest.raises(ClassroomError, match="teacher key"):
        store.wrong_join_codes(code, "wrong")


def test_wrong_join_codes_are_limited_per_address_across_sessions(store):
    """A script opening a new session for every guess is stopped by its address's limit."""
    code, key = store.create_room(QUESTION, "grr", 1.0, admission="codes", codes=2)
    right = store.join_codes(code, key)[0][0]
    now = 2_000_000.0
    for k in range(admission.WRONG_CODES_PER_ADDRESS):
        assert not store.try_join_code(code, f"Y{k:05d}", secrets.token_hex(16), "198.51.100.9",
                                       now + k)
    with pytest.raises(admission.TooManyWrongCodes, match="from this network"):
        store.try_join_code(code, right, secrets.token_hex(16), "198.51.100.9", now + 40)
    assert store.try_join_code(code, right, secrets.token_hex(16), "198.51.100.10", now + 40)
    by_address = [r for r in store.wrong_join_codes(code, key) if r.kind == "address"]
    assert [(r.wrong, r.refused) for r in by_address] == [(30, 1)]
    assert store.purge_expired(now=time.time() + 10 * 86400) == 1    # deleted with the room
    with store.db.read() as db:
        assert db.execute("SELECT COUNT(*) FROM join_attempts").fetchone()[0] == 0


def test_addresses_are_stored_only_as_keyed_hashes(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0, admission="address", cap=5)
    other, _ = store.create_room(QUESTION, "grr", 1.0, admission="address", cap=5)
    for room in (code, other):
        send(store, room, {"y": 1}, address="203.0.113.7")
    raw = b"".join(p.read_bytes() for p in store.folder.glob(classroom.DATABASE_NAME + "*"))
    assert b"203.0.113.7" not in raw
    with sqlite3.connect(store.path) as db:
        stored = [r[0] for r in db.execute("SELECT address FROM sessions ORDER BY room")]
    key_file = store.folder / admission.KEY_NAME
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = bytes.fromhex(key_file.read_text())
    assert sorted(stored) == sorted(admission.address_hash(key, room, "203.0.113.7")
                                    for room in (code, other))
    assert stored[0] != stored[1]                   # unrelated across rooms
    assert stored[0] != admission.address_hash(b"another key", code, "203.0.113.7")
    assert RoomStore(store.folder).key() == key     # kept across restarts


def test_the_client_address_believes_forwarded_for_only_from_a_trusted_proxy():
    address = admission.client_address
    raw = admission.ProxyPolicy(server_rewrites=False)         # the peer as the socket saw it
    assert address(None, None) == admission.LOCAL
    assert address("198.51.100.4", "1.2.3.4", policy=raw) == "198.51.100.4"   # untrusted peer
    assert address(None, "1.2.3.4", policy=raw) == admission.LOCAL  # loopback: ignored too
    trusted = admission.ProxyPolicy(frozenset({"10.0.0.2"}), server_rewrites=False)
    assert address("10.0.0.2", "1.2.3.4", policy=trusted) == "1.2.3.4"
    # the client can prepend anything; only the hop the proxy appended counts
    assert address("10.0.0.2", "6.6.6.6, 1.2.3.4", policy=trusted) == "1.2.3.4"
    assert address("10.0.0.2", "1.2.3.4, 10.0.0.2", policy=trusted) == "1.2.3.4"
    assert address("10.0.0.2", "[2001:db8::7]:443", policy=trusted) == "2001:db8::7"
    assert address("10.0.0.2", "not-an-address", policy=trusted) == "10.0.0.2"
    assert address("10.0.0.2", None, policy=trusted) == "10.0.0.2"


def test_an_address_the_web_server_took_from_the_header_is_not_believed():
    """uvicorn (Streamlit's server) writes X-Forwarded-For into the peer for loopback peers unless
    FORWARDED_ALLOW_IPS is empty: a peer found in the header may be the client's own writing."""
    address = admission.client_address
    default = admission.ProxyPolicy()                           # nothing trusted, server rewrites
    forged = [address(f"203.0.113.{k}", f"203.0.113.{k}") for k in range(12)]
    assert set(forged) == {admission.LOCAL}                     # 12 forgeries, one address
    assert address("203.0.113.9", "203.0.113.9:4444") == admission.LOCAL
    # a peer the header does not name was not rewritten: it is the socket's
    assert address("198.51.100.4", "10.1.2.3", policy=default) == "198.51.100.4"


def test_a_secret_tells_the_proxy_from_other_local_processes():
    policy = admission.ProxyPolicy(frozenset({"127.0.0.1"}), "s3cret", server_rewrites=False)
    address = admission.client_address
    assert address(None, "203.0.113.7", "s3cret", policy) == "203.0.113.7"
    assert address(None, "203.0.113.7", "guess", policy) == admission.LOCAL
    assert address(None, "203.0.113.7", None, policy) == admission.LOCAL
    assert address("198.51.100.4", "203.0.113.7", "s3cret", policy) == "198.51.100.4"
    # without a secret, a listed loopback proxy is any local process (docs say so)
    assert address(None, "203.0.113.7", None,
                   admission.ProxyPolicy(frozenset({"::1"}), server_rewrites=False)) == "203.0.113.7"


def test_the_proxy_policy_comes_from_the_environment():
    policy = admission.ProxyPolicy.from_environment({})
    assert policy == admission.ProxyPolicy(frozenset(), None, True)   # nothing trusted
    policy = admission.ProxyPolicy.from_environment({
        admission.TRUSTED_PROXIES_VARIABLE: " 10.0.0.2, ::1 ,",
        admission.PROXY_SECRET_VARIABLE: "abc", admission.SERVER_FORWARDED_VARIABLE: ""})
    assert policy == admission.ProxyPolicy(frozenset({"10.0.0.2", "::1"}), "abc", False)


def test_the_snapshot_counts_reports_of_the_last_minute(store):
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    now = time.time()
    send(store, code, {"y": 0}, now=now - 120)
    send(store, code, {"y": 0}, now=now - 5)
    send(store, code, {"y": 0}, now=now)
    assert store.snapshot(code).last_minute == 2


# ------------------------------------------------------------------------- message depth (issue 40)
@pytest.mark.parametrize("text, depth", [
    ('[{"event": "report", "value": {"nonce": "ab", "report": {"y": 3}}}]', 4),
    ('["[[[[", {"a": "\\"[{"}]', 2),                  # brackets in strings, an escaped quote
    ('{"a": "\\\\", "b": [[1]]}', 3),                   # an escaped backslash ends no string
    ("[" * 100_000 + "]" * 100_000, 100_000),
    ("", 0),
])
def test_message_depth_counts_nesting_without_parsing(text, depth):
    assert classroom.message_depth(text) == depth


def test_a_message_deeper_than_the_limit_is_refused_before_it_is_parsed():
    limit = classroom.MAX_MESSAGE_DEPTH
    classroom.check_message("[" * limit + "]" * limit)
    classroom.check_message('["' + "[" * 10_000 + '"]')  # text, not nesting
    with pytest.raises(classroom.ReportRejected, match=f"nested 100,000 levels deep; a phone's "
                       f"report is at most {limit}") as refused:
        classroom.check_message("[" * 100_000 + "]" * 100_000)
    assert refused.value.reason == "too deep"


def test_streamlits_component_messages_go_through_the_depth_check():
    """The phone's messages are parsed by Streamlit (its component deserialiser) before the page
    runs: the check must sit there, and an ordinary message must parse as before."""
    from streamlit.components.v2.bidi_component import serialization

    from ui.classroom import component
    deep = '[{"event": "report", "value": ' + "[" * 100_000 + "]" * 100_000 + "}]"
    [refusal] = serialization.deserialize_trigger_list(deep)
    assert refusal["event"] == component.REFUSED and "100,002 levels" in refusal["value"]
    plain = '[{"event": "report", "value": {"nonce": "ab", "report": {"y": 3}}}]'
    assert serialization.deserialize_trigger_list(plain) == json.loads(plain)
    assert dict(serialization.BidiComponentSerde().deserialize(deep)) == {}


def test_a_report_field_nested_100000_deep_is_rejected_in_a_sentence(store):
    """The store's own check, whatever parsed the message: quoting the field used its repr,
    which recursed 100,000 levels (RecursionError)."""
    deep = []
    for _ in range(100_000):
        deep = [deep]
    code, _ = store.create_room(QUESTION, "grr", 1.0)
    with pytest.raises(ReportRejected, match="The report's cell must be a whole number; got a "
                                             "list.") as problem:
        send(store, code, {"y": deep})
    assert problem.value.reason == "malformed"
    assert store.snapshot(code).rejected == {"malformed": 1}


def test_the_printable_join_codes_escape_what_the_teacher_typed():
    page = admission.join_codes_page("ABCD-EFGH", "<script>alert(1)</script> \u202eevil",
                                     "http://h/?room=A&b=<", ["K7P2QX", "M3R8TW"])
    assert "<script>" not in page and "&lt;script&gt;" in page and "\u202e" not in page
    assert "\\u202e" in page and "room=A&amp;b=&lt;" in page
    assert page.count('<p class="code">') == 2 and "break-inside: avoid" in page
