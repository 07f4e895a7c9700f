"""The classroom's tables and :class:`RoomStore`, the one place that reads and writes them.

Storage: the server's SQLite database (:mod:`dpcore.interfaces.store`); every write is one
``BEGIN IMMEDIATE`` transaction that re-checks the room's limits (see the package docstring).

Schema::

    rooms(code TEXT PRIMARY KEY,        -- CODE_LENGTH characters of CODE_ALPHABET
          teacher_hash TEXT,            -- SHA-256 of the teacher's key (the key itself is not kept)
          created REAL, expires REAL,   -- Unix times
          closed REAL,                  -- NULL while open
          question TEXT,                -- JSON {"title", "origins": [...], "destinations": [...]}
          reveal INTEGER,               -- 1 if students may also send their true answer
          max_reports INTEGER,          -- private reports accepted per room, all rounds together
          students INTEGER,             -- the class size the teacher stated (for the noise band)
          admission TEXT, cap INTEGER)  -- "open", "address" (cap per address) or "codes"
    rounds(room, number, mechanism, epsilon,
           permutation TEXT,            -- JSON list: Hadamard response's public permutation, or NULL
           opened REAL, closed REAL,
           memoize INTEGER,             -- 1: phones reuse their first report of this kind
                                        -- of round (Round.kind, classroom.repeated)
           prompt TEXT,                 -- a coins or number round's question (untrusted text)
           bound REAL,                  -- a number round's largest answer B (mechanism "number")
           PRIMARY KEY (room, number))
    reports(id INTEGER PRIMARY KEY, room, round, received REAL,
            report TEXT,                -- JSON in the mechanism's ``perturb`` format, one person
            nonce TEXT,                 -- the ticket's 128 random bits, used once
            session TEXT,               -- SHA-256("report:" + session token)
            joined TEXT,                -- the join code that sent it (rooms with join codes),
                                        -- which links a student's rounds (repeated.linked_attack)
            UNIQUE (room, nonce), UNIQUE (room, round, session))
    reveals(id INTEGER PRIMARY KEY, room, round,
            cell INTEGER,               -- a true answer a student chose to send (NOT private)
            session TEXT,               -- SHA-256("reveal:" + session token)
            UNIQUE (room, round, session))
    rejections(room, round, reason, count, PRIMARY KEY (room, round, reason))
    sessions(room, session, address, rejected INTEGER, discarded INTEGER,
             PRIMARY KEY (room, session))
            -- per session (the "report:" hash): its network address as a keyed hash
            -- (classroom_admission.address_hash), how many of its reports were rejected, and
            -- whether the teacher discarded it (its reports deleted, later ones refused)
    admissions(room, round, address, count, PRIMARY KEY (room, round, address))
            -- reports admitted per address (keyed hash) and round; never decremented by a discard
    join_codes(room, code, used_round, PRIMARY KEY (room, code))
            -- one-time join codes as issued; the last round each admitted a report in

Reveals carry no time and no link to a report; their row order still follows arrival order, so a
reveal sent right after a report could be matched to it by someone with the database file.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from pathlib import Path

import numpy as np

from dpcore import mechanisms
from dpcore.interfaces.classroom import (
    CODE_ALPHABET,
    CODE_LENGTH,
    EPSILON_RANGE,
    HEX,
    MAX_OPEN_ROOMS,
    MAX_REPORTS,
    MAX_ROUNDS,
    MECHANISMS,
    NONCE_HEX,
    ROOM_HOURS,
    ClassroomError,
    ReportRejected,
    _hash,
    format_code,
    normalise_code,
)
from dpcore.interfaces.classroom import coins, guesses, numbers
from dpcore.interfaces.classroom.coins import COINS
from dpcore.interfaces.classroom.numbers import NUMBER
from dpcore.interfaces.classroom.questions import Question
from dpcore.interfaces.classroom.records import (
    AddressGroup,
    Room,
    SessionSummary,
    Snapshot,
    Ticket,
    issue_seed,
    session_hash,
)
from dpcore.interfaces.classroom.reports import (
    Round,
    _round_number,
    _whole,
    check_plausible,
    parse_report,
)
from dpcore.interfaces.classroom_admission import (
    ADMISSIONS,
    DEFAULT_CAP,
    JOIN_SCHEMA,
    LOCAL,
    MAX_CAP,
    MAX_CODES,
    TooManyWrongCodes,
    WrongCodes,
    address_hash,
    check_join_code,
    new_join_codes,
    server_key,
    wrong_codes,
)
from dpcore.interfaces.store import Database, explain
from dpcore.mechanisms.hadamard import HadamardResponse, uniform_permutation

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms(code TEXT PRIMARY KEY, teacher_hash TEXT NOT NULL,
    created REAL NOT NULL, expires REAL NOT NULL, closed REAL, question TEXT NOT NULL,
    reveal INTEGER NOT NULL, max_reports INTEGER NOT NULL, students INTEGER NOT NULL,
    admission TEXT NOT NULL, cap INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rounds(room TEXT NOT NULL, number INTEGER NOT NULL,
    mechanism TEXT NOT NULL, epsilon REAL NOT NULL, permutation TEXT, opened REAL NOT NULL,
    closed REAL, memoize INTEGER NOT NULL DEFAULT 0, prompt TEXT, bound REAL,
    PRIMARY KEY (room, number));
CREATE TABLE IF NOT EXISTS reports(id INTEGER PRIMARY KEY, room TEXT NOT NULL,
    round INTEGER NOT NULL, received REAL NOT NULL, report TEXT NOT NULL, nonce TEXT NOT NULL,
    session TEXT NOT NULL, joined TEXT, UNIQUE (room, nonce), UNIQUE (room, round, session));
CREATE TABLE IF NOT EXISTS reveals(id INTEGER PRIMARY KEY, room TEXT NOT NULL,
    round INTEGER NOT NULL, cell INTEGER NOT NULL, session TEXT NOT NULL,
    UNIQUE (room, round, session));
CREATE TABLE IF NOT EXISTS rejections(room TEXT NOT NULL, round INTEGER NOT NULL,
    reason TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (room, round, reason));
CREATE TABLE IF NOT EXISTS sessions(room TEXT NOT NULL, session TEXT NOT NULL,
    address TEXT NOT NULL, rejected INTEGER NOT NULL DEFAULT 0,
    discarded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (room, session));
CREATE TABLE IF NOT EXISTS admissions(room TEXT NOT NULL, round INTEGER NOT NULL,
    address TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (room, round, address));
CREATE TABLE IF NOT EXISTS join_codes(room TEXT NOT NULL, code TEXT NOT NULL,
    used_round INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (room, code));
""" + JOIN_SCHEMA + guesses.SCHEMA
_TABLES = ("guesses", "reports", "reveals", "rejections", "sessions", "admissions", "join_codes",
           "join_attempts", "rounds", "rooms")
#: A column each table of the current layout has and the layouts before it lacked.
_LAYOUT = {"reports": "joined", "rooms": "admission", "sessions": "address", "rounds": "bound"}


def _drop_older_layout(db: sqlite3.Connection) -> None:
    """Rooms of an older layout (no per-session key, no admission mode, no session address)
    cannot be kept: drop them — rooms live a day at most."""
    for table, column in _LAYOUT.items():
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if columns and column not in columns:
            for name in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {name}")
            return



class RoomStore:
    """The classroom's tables in the server's database (:class:`dpcore.interfaces.store.Database`:
    every call opens its own connection, failures are ``StoreUnavailable`` messages). Safe to share
    between threads and sessions."""

    def __init__(self, folder: Path | str | None = None, **options):
        """``options`` go to :class:`Database` (``max_bytes``, ``read_timeout``, …); no I/O yet."""
        self.db = Database(SCHEMA, folder, prepare=_drop_older_layout, **options)
        self.folder, self.path = self.db.folder, self.db.path
        self._key: bytes | None = None

    # ------------------------------------------------------------------------- teacher side
    def create_room(self, question: Question, mechanism: str, epsilon: float, *,
                    reveal: bool = False, hours: float = ROOM_HOURS,
                    max_reports: int = MAX_REPORTS, students: int = 25,
                    admission: str = "open", cap: int = DEFAULT_CAP, codes: int = 0,
                    memoize: bool = False, prompt: str | None = None,
                    bound: float | None = None, now: float | None = None) -> tuple[str, str]:
        """A new room with its first round open: (code, teacher key). Expired rooms are purged.

        ``admission`` (:data:`~dpcore.interfaces.classroom_admission.ADMISSIONS`): "open", "address"
        (at most ``cap`` reports per network address and round) or "codes" (``codes`` one-time
        join codes, each admitting one report per round). ``memoize``: the first round's phones
        keep their report for later rounds of the same kind (:mod:`.repeated`). ``mechanism``
        "coins" or "number" (with ``prompt``, and ``bound`` for a number) makes the first round a
        coins or number round, as :meth:`new_round` does."""
        now = time.time() if now is None else now
        if admission not in ADMISSIONS:
            raise ClassroomError(f"Unknown admission mode {admission!r}; choose one of "
                                 f"{', '.join(ADMISSIONS)}.")
        if admission == "address" and not 1 <= int(cap) <= MAX_CAP:
            raise ClassroomError(f"The cap per network address must be between 1 and {MAX_CAP:,} "
                                 "reports per round.")
        if admission == "codes" and not 1 <= int(codes) <= MAX_CODES:
            raise ClassroomError(f"A room with join codes prints between 1 and {MAX_CODES:,} "
                                 "codes, one per student.")
        if not 1 <= float(hours) <= 72:
            raise ClassroomError("A room lives between 1 and 72 hours.")
        if not 10 <= int(max_reports) <= MAX_REPORTS:
            raise ClassroomError(f"A room accepts between 10 and {MAX_REPORTS:,} reports.")
        if not 2 <= int(students) <= MAX_REPORTS:
            raise ClassroomError(f"The class size must be between 2 and {MAX_REPORTS:,} "
                                 "students.")
        self.purge_expired(now)
        key = secrets.token_urlsafe(16)
        with self.db.write() as db:
            open_rooms = db.execute("SELECT COUNT(*) FROM rooms WHERE closed IS NULL AND "
                                    "expires > ?", (now,)).fetchone()[0]
            if open_rooms >= MAX_OPEN_ROOMS:
                raise ClassroomError(f"This server already has {open_rooms} open rooms, its "
                                     "limit. Close a room you no longer need, or wait for rooms "
                                     "to expire.")
            while True:
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                if db.execute("SELECT 1 FROM rooms WHERE code=?", (code,)).fetchone() is None:
                    break
            db.execute("INSERT INTO rooms(code, teacher_hash, created, expires, closed, question, "
                       "reveal, max_reports, students, admission, cap) "
                       "VALUES (?,?,?,?,NULL,?,?,?,?,?,?)",
                       (code, _hash(key), now, now + float(hours) * 3600, question.to_json(),
                        int(reveal), int(max_reports), int(students), admission, int(cap)))
            if admission == "codes":
                db.executemany("INSERT INTO join_codes(room, code) VALUES (?,?)",
                               [(code, c) for c in new_join_codes(int(codes), CODE_ALPHABET)])
            self._open_round(db, code, question.d, mechanism, epsilon, now, memoize, prompt,
                             bound)
        return code, key

    @staticmethod
    def _open_round(db, code, d, mechanism, epsilon, now, memoize=False, prompt=None,
                    bound=None) -> int:
        if mechanism in (COINS, NUMBER):
            prompt = coins.check_prompt(prompt)
            if mechanism == COINS:
                epsilon = coins.EPSILON
            else:
                bound = numbers.check_bound(bound)
        elif mechanism not in MECHANISMS:
            raise ClassroomError(f"Unknown classroom mechanism {mechanism!r}; choose one of "
                                 f"{', '.join(MECHANISMS)}.")
        else:
            prompt = None
        if mechanism != NUMBER:
            bound = None
        if memoize and mechanism == "olh":
            raise ClassroomError("OLH cannot be memoized: the page issues a fresh hash seed to "
                                 "each phone in each round. Choose GRR, OUE or Hadamard "
                                 "response for memoized rounds.")
        if not EPSILON_RANGE[0] <= float(epsilon) <= EPSILON_RANGE[1]:
            raise ClassroomError(f"ε must be between {EPSILON_RANGE[0]} and {EPSILON_RANGE[1]}.")
        number = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM rounds WHERE room=?",
                            (code,)).fetchone()[0]
        if number > MAX_ROUNDS:
            raise ClassroomError(f"A room holds at most {MAX_ROUNDS} rounds; open a new room.")
        mech = (None if mechanism in (COINS, NUMBER)
                else mechanisms.build(mechanism, epsilon=float(epsilon)))
        permutation = None
        if memoize:      # a kept report means the same cell only under the same permutation
            earlier = db.execute("SELECT permutation FROM rounds WHERE room=? AND mechanism=? "
                                 "AND epsilon=? AND memoize=1 ORDER BY number LIMIT 1",
                                 (code, mechanism, float(epsilon))).fetchone()
            permutation = earlier[0] if earlier else None
        if isinstance(mech, HadamardResponse) and mech.blocked and permutation is None:
            rng = np.random.default_rng(secrets.randbits(128))   # public, drawn once per round
            permutation = json.dumps(uniform_permutation(d, rng).tolist())
        db.execute("UPDATE rounds SET closed=? WHERE room=? AND closed IS NULL", (now, code))
        db.execute("INSERT INTO rounds(room, number, mechanism, epsilon, permutation, opened, "
                   "closed, memoize, prompt, bound) VALUES (?,?,?,?,?,?,NULL,?,?,?)",
                   (code, number, mechanism, float(epsilon), permutation, now, int(bool(memoize)),
                    prompt, bound))
        return number

    def _check_teacher(self, db, code: str, key: str) -> Room:
        room = self._room(db, code)
        stored = db.execute("SELECT teacher_hash FROM rooms WHERE code=?", (room.code,)).fetchone()
        if not secrets.compare_digest(_hash(key or ""), stored[0]):
            raise ClassroomError("Only the teacher who created this room can change it "
                                 "(the teacher key does not match).")
        return room

    def new_round(self, code: str, key: str, mechanism: str, epsilon: float,
                  now: float | None = None, memoize: bool = False,
                  prompt: str | None = None, bound: float | None = None) -> int:
        """Close the open round and open the next with this mechanism and ε (``memoize``: phones
        reuse their report of an earlier memoized round of the same kind, ``Round.kind``; mechanism
        "coins": a yes/no ``prompt`` answered with two real coins, ε = ln 3; "number": a number
        ``prompt`` answered in [0, ``bound``] with one bit, :mod:`.numbers`); its number."""
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            if not room.is_open(now):
                raise ClassroomError("This room is closed; open a new room to start another round.")
            return self._open_round(db, room.code, room.question.d, mechanism, epsilon, now,
                                    memoize, prompt, bound)

    def record_guess(self, code: str, key: str, field: str, value) -> None:
        """The teacher's (``key``) entry for the room's current round, a coins or number round:
        the class's ``field`` "guess" (only before the round's first report) or the "truth", in
        the round's own scale (a share in [0, 1], or a number in [0, B]);
        :mod:`.guesses`."""
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            current = self._round(db, room.code)
            if current.mechanism not in (COINS, NUMBER):
                raise ClassroomError("Guess first works for a coins or number round: their "
                                     "estimate is one number to compare.")
            largest = 1.0 if current.mechanism == COINS else current.bound
            value = guesses.check_value(value, largest, field)
            guesses.record(db, room.code, current.number, field, value,
                           self._count(db, room.code, current.number))

    def guess(self, code: str, number: int) -> tuple[float | None, float | None]:
        """(guess, truth) the teacher typed for round ``number`` (None where not typed)."""
        with self.db.read() as db:
            return guesses.read(db, self._room(db, code).code, number)

    def close_room(self, code: str, key: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            db.execute("UPDATE rooms SET closed=COALESCE(closed, ?) WHERE code=?", (now, room.code))
            db.execute("UPDATE rounds SET closed=? WHERE room=? AND closed IS NULL",
                       (now, room.code))

    def is_teacher(self, code: str, key: str | None) -> bool:
        with self.db.read() as db:
            stored = db.execute("SELECT teacher_hash FROM rooms WHERE code=?",
                                (normalise_code(code),)).fetchone()
        return bool(key) and stored is not None and secrets.compare_digest(_hash(key), stored[0])

    def purge_expired(self, now: float | None = None) -> int:
        """Delete rooms past their expiry with everything they hold; how many were deleted."""
        now = time.time() if now is None else now
        with self.db.write() as db:
            codes = [r[0] for r in db.execute("SELECT code FROM rooms WHERE expires <= ?", (now,))]
            for table in _TABLES:
                column = "code" if table == "rooms" else "room"
                db.executemany(f"DELETE FROM {table} WHERE {column}=?", [(c,) for c in codes])
        return len(codes)

    def sessions(self, code: str) -> list[SessionSummary]:
        """The room's sessions that sent or tried to send a report, most rejected first."""
        with self.db.read() as db:
            room = self._room(db, code)
            rows = db.execute(
                "SELECT s.session, (SELECT COUNT(*) FROM reports r WHERE r.room=s.room AND "
                "r.session=s.session), s.rejected, s.discarded FROM sessions s WHERE s.room=? "
                "ORDER BY s.rejected DESC, s.session", (room.code,)).fetchall()
        return [SessionSummary(s, n, r, bool(x)) for s, n, r, x in rows]

    def discard_session(self, code: str, key: str, session: str) -> int:
        """Delete every report of one session (its stored hash) and refuse its later ones; how many
        reports were deleted. Its reveals cannot be found (they are stored unlinked) and stay."""
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            known = db.execute("SELECT 1 FROM sessions WHERE room=? AND session=?",
                               (room.code, session)).fetchone()
            if known is None:
                raise ClassroomError("This room has no such session.")
            deleted = db.execute("DELETE FROM reports WHERE room=? AND session=?",
                                 (room.code, session)).rowcount
            db.execute("UPDATE sessions SET discarded=1 WHERE room=? AND session=?",
                       (room.code, session))
        return deleted

    def addresses(self, code: str) -> list[AddressGroup]:
        """The room's sessions grouped by network address (keyed hash), most sessions first."""
        with self.db.read() as db:
            room = self._room(db, code)
            rows = db.execute(
                "SELECT s.address, COUNT(*), SUM((SELECT COUNT(*) FROM reports r WHERE "
                "r.room=s.room AND r.session=s.session)), SUM(s.rejected), SUM(s.discarded) "
                "FROM sessions s WHERE s.room=? GROUP BY s.address "
                "ORDER BY COUNT(*) DESC, s.address", (room.code,)).fetchall()
        return [AddressGroup(*row) for row in rows]

    def discard_address(self, code: str, key: str, address: str) -> int:
        """Discard every session of one network address (keyed hash) at once: their reports
        deleted in every round, their later ones refused; how many reports were deleted. New
        sessions from the address are still admitted (a class may share it), within its cap."""
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            sessions = [r[0] for r in db.execute("SELECT session FROM sessions WHERE room=? AND "
                                                 "address=?", (room.code, address))]
            if not sessions:
                raise ClassroomError("This room has no sessions from that address.")
            deleted = 0
            for session in sessions:
                deleted += db.execute("DELETE FROM reports WHERE room=? AND session=?",
                                      (room.code, session)).rowcount
            db.execute("UPDATE sessions SET discarded=1 WHERE room=? AND address=?",
                       (room.code, address))
        return deleted

    # ------------------------------------------------------------------------------ reading
    @staticmethod
    def _room(db, code: str, now: float | None = None) -> Room:
        """The room, or ClassroomError if there is none — or it has expired (an expired room is
        unreadable even before :meth:`purge_expired` deletes it)."""
        now = time.time() if now is None else now
        row = db.execute("SELECT code, created, expires, closed, question, reveal, max_reports, "
                         "students, admission, cap FROM rooms WHERE code=? AND expires > ?",
                         (normalise_code(code), now)).fetchone()
        if row is None:
            shown = format_code(normalise_code(code)[:CODE_LENGTH])
            raise ClassroomError(f"There is no room with the code {shown!r} (it may have "
                                 "expired). Check the code with your teacher.")
        return Room(row[0], row[1], row[2], row[3], Question.from_json(row[4]), bool(row[5]),
                    row[6], row[7], row[8], row[9])

    @staticmethod
    def _round(db, code: str, number: int | None = None) -> Round:
        sql = ("SELECT room, number, mechanism, epsilon, permutation, opened, closed, memoize, "
               "prompt, bound FROM rounds "
               "WHERE room=? " + ("AND number=?" if number is not None else "")
               + " ORDER BY number DESC LIMIT 1")
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)
                                   or not 1 <= number <= MAX_ROUNDS):
            raise ClassroomError(f"Room {format_code(code)} has no round {number!s:.24}.")
        row = db.execute(sql, (code,) if number is None else (code, number)).fetchone()
        if row is None:
            raise ClassroomError(f"Room {format_code(code)} has no round {number}.")
        permutation = tuple(json.loads(row[4])) if row[4] else None
        return Round(row[0], row[1], row[2], row[3], permutation, row[5], row[6], bool(row[7]),
                     row[8], row[9])

    def room(self, code: str) -> Room:
        with self.db.read() as db:
            return self._room(db, code)

    def current_round(self, code: str) -> Round:
        with self.db.read() as db:
            return self._round(db, self._room(db, code).code)

    def rounds(self, code: str) -> list[Round]:
        with self.db.read() as db:
            room = self._room(db, code)
            top = self._round(db, room.code).number
            return [self._round(db, room.code, k) for k in range(1, top + 1)]

    def snapshot(self, code: str, number: int | None = None) -> Snapshot:
        """Room, round (default: the latest), its reports, rejections and reveals, consistently."""
        with self.db.read() as db:
            room = self._room(db, code)
            round_ = self._round(db, room.code, number)
            key = (room.code, round_.number)
            reports = [json.loads(r[0]) for r in db.execute(
                "SELECT report FROM reports WHERE room=? AND round=? ORDER BY id", key)]
            total = db.execute("SELECT COUNT(*) FROM reports WHERE room=?",
                               (room.code,)).fetchone()[0]
            rejected = dict(db.execute("SELECT reason, count FROM rejections WHERE room=? AND "
                                       "round=?", key).fetchall())
            last_minute = db.execute("SELECT COUNT(*) FROM reports WHERE room=? AND round=? AND "
                                     "received >= ?", key + (time.time() - 60,)).fetchone()[0]
            reveals = None
            if room.reveal:
                cells = [r[0] for r in db.execute("SELECT cell FROM reveals WHERE room=? AND "
                                                  "round=?", key)]
                reveals = np.bincount(np.asarray(cells, dtype=np.int64),
                                      minlength=room.question.d)
        return Snapshot(room, round_, reports, total, rejected, reveals, last_minute)

    # ------------------------------------------------------------------------------ student side
    def ticket(self, code: str, session: str, address: str | None = None,
               join_code: str | None = None) -> Ticket:
        """A fresh :class:`Ticket` for this session in the room's current round (reads only).
        ``address`` is the connection's network address in clear (None: loopback); the ticket
        keeps only its keyed hash."""
        if not isinstance(session, str) or len(session) < 16:
            raise ClassroomError("This page has no session token; reload it.")
        round_ = self.current_round(code)
        seed = issue_seed() if round_.mechanism == "olh" else None
        hashed = address_hash(self.key(), round_.room, address or LOCAL)
        return Ticket(round_.room, round_.number, session, secrets.token_hex(NONCE_HEX // 2), seed,
                      hashed, normalise_code(join_code)[:16] if join_code else None)

    def key(self) -> bytes:
        """The server key of the address hashes (beside the database, created on first use)."""
        if self._key is None:
            try:
                self._key = server_key(self.folder)
            except OSError as error:
                raise explain(error, self.folder) from error
        return self._key

    def try_join_code(self, code: str, join_code: str, session: str, address: str | None,
                      now: float | None = None) -> bool:
        """Whether ``join_code`` (typed loosely) is one of the room's codes; a wrong one counts
        against the browser ``session`` and its network ``address`` (None: loopback), and past
        their limits every code is refused (``TooManyWrongCodes``, a ClassroomError's sibling
        with the wait in its message; ``classroom_admission.check_join_code``)."""
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._room(db, code)
            try:
                return check_join_code(db, room.code, normalise_code(join_code)[:16],
                                       session_hash(str(session), "report"),
                                       address_hash(self.key(), room.code, address or LOCAL),
                                       now)
            except TooManyWrongCodes as limited:
                refused = limited           # raised once the refusal's tally is committed
        raise refused

    def wrong_join_codes(self, code: str, key: str) -> list[WrongCodes]:
        """The room's wrong join codes per browser session and network address, for the teacher
        (``key``) only."""
        with self.db.read() as db:
            room = self._check_teacher(db, code, key)
            return wrong_codes(db, room.code)

    def join_codes(self, code: str, key: str) -> list[tuple[str, int]]:
        """The room's join codes with the last round each was used in (0: never), for the
        teacher (``key``) only."""
        with self.db.read() as db:
            room = self._check_teacher(db, code, key)
            return [tuple(r) for r in db.execute("SELECT code, used_round FROM join_codes WHERE "
                                                 "room=? ORDER BY code", (room.code,))]

    def linked_reports(self, code: str, key: str,
                       numbers: list[int]) -> dict[str, dict[int, dict]]:
        """The reports of rounds ``numbers`` by the join code that sent them ({join code: {round:
        report}}), for the teacher (``key``) only: what an attacker who links rounds by join code
        holds (:func:`.repeated.linked_attack`). Empty for a room without join codes."""
        with self.db.read() as db:
            room = self._check_teacher(db, code, key)
            linked: dict[str, dict[int, dict]] = {}
            for number in numbers:
                for joined, report in db.execute(
                        "SELECT joined, report FROM reports WHERE room=? AND round=? AND joined "
                        "IS NOT NULL ORDER BY id", (room.code, int(number))):
                    linked.setdefault(joined, {})[int(number)] = json.loads(report)
        return linked

    def submit(self, ticket: Ticket, payload, now: float | None = None) -> int:
        """Store the private report of ``ticket``'s session for ``ticket``'s round; how many reports
        the round now holds.

        ClassroomError for an unknown or expired room (nothing is stored); ReportRejected — counted
        under its reason in ``rejections`` and against the session, the report itself dropped — for
        a report the round cannot take: a second one from the session (in any spelling of the
        room), a used nonce, a closed round, a full room, a malformed or implausible report.
        """
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._room(db, ticket.room, now)
            session = session_hash(str(ticket.session), "report")
            try:
                text = self._accept(db, room, ticket, session, payload, now)
            except ReportRejected as rejected:
                self._count_rejection(db, room.code, session, rejected, ticket.address)
                refused = rejected          # raised once the tally is committed
            else:
                db.execute("INSERT INTO reports(room, round, received, report, nonce, session, "
                           "joined) VALUES (?,?,?,?,?,?,?)",
                           (room.code, ticket.round, now, text, ticket.nonce, session,
                            ticket.join_code if room.admission == "codes" else None))
                db.execute("INSERT INTO sessions(room, session, address) VALUES (?,?,?) "
                           "ON CONFLICT(room, session) DO NOTHING",
                           (room.code, session, ticket.address))
                self._admit(db, room, ticket)
                return self._count(db, room.code, ticket.round)
        raise refused

    @staticmethod
    def _count(db, code: str, number: int) -> int:
        return db.execute("SELECT COUNT(*) FROM reports WHERE room=? AND round=?",
                          (code, number)).fetchone()[0]

    def _accept(self, db, room: Room, ticket: Ticket, session: str, payload, now) -> str:
        """The report's stored JSON, or ReportRejected if the room or round cannot take it."""
        number = _round_number(ticket.round)
        nonce = ticket.nonce
        if not isinstance(nonce, str) or len(nonce) != NONCE_HEX or set(nonce) - set(HEX):
            raise ReportRejected(f"The message's nonce must be {NONCE_HEX} hexadecimal digits "
                                 "issued by the page. Reload the page.", "malformed")
        if not room.is_open(now):
            raise ReportRejected("This room is closed: the teacher closed it or it expired. "
                                 "Nothing was sent.", "room closed")
        current = self._round(db, room.code)
        if number != current.number:
            raise ReportRejected(f"Round {number} is not open: this room is on round "
                                 f"{current.number}. Reload the page to answer it.", "round closed")
        discarded = db.execute("SELECT discarded FROM sessions WHERE room=? AND session=?",
                               (room.code, session)).fetchone()
        if discarded and discarded[0]:
            raise ReportRejected("The teacher discarded this browser's reports; it cannot send "
                                 "more in this room.", "discarded")
        if db.execute("SELECT 1 FROM reports WHERE room=? AND round=? AND session=?",
                      (room.code, number, session)).fetchone() is not None:
            raise ReportRejected("This browser session has already sent a report in this round; "
                                 "the second one was not counted.", "second report")
        if db.execute("SELECT 1 FROM reports WHERE room=? AND nonce=?",
                      (room.code, nonce)).fetchone() is not None:
            raise ReportRejected("This message was already used; reload the page.", "reused nonce")
        self._check_admission(db, room, ticket, number)
        total = db.execute("SELECT COUNT(*) FROM reports WHERE room=?", (room.code,)).fetchone()[0]
        if total >= room.max_reports:
            raise ReportRejected(f"This room is full: it accepts at most {room.max_reports} "
                                 "reports. Ask your teacher to open a new room.", "room full")
        report = parse_report(current, room.question.d, payload)
        if current.mechanism == "olh" and (report["a"], report["b"]) != tuple(ticket.seed or ()):
            raise ReportRejected("This report does not use the hash seed this page issued; it "
                                 "was not counted.", "implausible")
        check_plausible(current, room.question.d, report)
        return json.dumps(report)

    @staticmethod
    def _check_admission(db, room: Room, ticket: Ticket, number: int) -> None:
        """ReportRejected when the room's admission mode refuses this report: its address has
        used its cap this round, or no unused join code came with it."""
        if room.admission == "address":
            used = db.execute("SELECT count FROM admissions WHERE room=? AND round=? AND "
                              "address=?", (room.code, number, ticket.address)).fetchone()
            if used is not None and used[0] >= room.cap:
                raise ReportRejected(
                    f"This network already sent {used[0]} report(s) in this round, the room's "
                    f"limit of {room.cap} per network. If your class shares one network, ask "
                    "your teacher to raise the limit.", "address cap")
        elif room.admission == "codes":
            if not ticket.join_code:
                raise ReportRejected("This room needs the join code your teacher gave you; "
                                     "type it above the commute.", "no join code")
            row = db.execute("SELECT used_round FROM join_codes WHERE room=? AND code=?",
                             (room.code, ticket.join_code)).fetchone()
            if row is None:
                raise ReportRejected("This join code is not one of this room's codes; check it "
                                     "with your teacher.", "unknown join code")
            if row[0] >= number:
                raise ReportRejected("This join code has already sent a report in this round.",
                                     "join code used")

    @staticmethod
    def _admit(db, room: Room, ticket: Ticket) -> None:
        """Count the admitted report against its address, and its join code's round."""
        db.execute("INSERT INTO admissions VALUES (?,?,?,1) ON CONFLICT(room, round, address) "
                   "DO UPDATE SET count = count + 1", (room.code, ticket.round, ticket.address))
        if room.admission == "codes":
            db.execute("UPDATE join_codes SET used_round=? WHERE room=? AND code=?",
                       (ticket.round, room.code, ticket.join_code))

    @staticmethod
    def _count_rejection(db, code, session: str, rejected: ReportRejected, address: str):
        """Tally under the room's latest round (the one open when it arrived) and the session: a
        bounded number of rows per session whatever it sends."""
        latest = RoomStore._round(db, code)
        db.execute("INSERT INTO rejections VALUES (?,?,?,1) ON CONFLICT(room, round, reason) "
                   "DO UPDATE SET count = count + 1", (latest.room, latest.number, rejected.reason))
        db.execute("INSERT INTO sessions(room, session, address, rejected) VALUES (?,?,?,1) "
                   "ON CONFLICT(room, session) DO UPDATE SET rejected = rejected + 1",
                   (code, session, address))

    def reveal(self, ticket: Ticket, cell, now: float | None = None) -> None:
        """Store a true answer a student chose to send (not private): only if the room allows it,
        only from a session whose report in this round was kept, once per session and round."""
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._room(db, ticket.room, now)
            if not room.reveal:
                raise ClassroomError("This room does not collect true answers.")
            number = _round_number(ticket.round)
            if not room.is_open(now) or number != self._round(db, room.code).number:
                raise ClassroomError("This round is closed; your true answer was not sent.")
            sent = db.execute("SELECT 1 FROM reports WHERE room=? AND round=? AND session=?",
                              (room.code, number, session_hash(str(ticket.session), "report")))
            if sent.fetchone() is None:
                raise ClassroomError("A true answer is accepted only after this browser's report "
                                     "in this round was counted.")
            cell = _whole(cell, 0, room.question.d, "cell")
            db.execute("INSERT INTO reveals(room, round, cell, session) VALUES (?,?,?,?) "
                       "ON CONFLICT(room, round, session) DO NOTHING",
                       (room.code, number, cell, session_hash(str(ticket.session), "reveal")))

