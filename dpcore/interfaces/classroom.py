"""Live classroom rooms: students' own browsers randomise their commute, the server estimates.

A teacher opens a *room* on a question "where do you live → where do you work/study" over at most
:data:`MAX_CELLS` origin × destination cells, with a local mechanism (GRR, OUE, OLH or Hadamard
response) and ε. Every (mechanism, ε) is a *round*; a new round closes the previous one. Students
send the report their browser drew; the server validates it against the round's report format
(:func:`parse_report`), stores it, and estimates the class's counts with the mechanism's own
server code (``accumulate`` then ``estimate`` of :mod:`dpcore.mechanisms`), so what the class sees
is what the audited Python protocol computes [WBLJ17, ASZ19].

Storage: one SQLite file (standard library) in WAL mode, so many sessions can read while one writes
and a server restart keeps every round. Every write is one ``BEGIN IMMEDIATE`` transaction that
re-checks the room's limits, so concurrent writers neither lose reports nor overshoot a limit.
Only room settings, times and reports are stored — never a student's true answer, except in the
separate, optional and clearly labelled "reveal" table that students fill in only if they choose to.

Schema::

    rooms(code TEXT PRIMARY KEY,        -- CODE_LENGTH characters of CODE_ALPHABET
          teacher_hash TEXT,            -- SHA-256 of the teacher's key (the key itself is not kept)
          created REAL, expires REAL,   -- Unix times
          closed REAL,                  -- NULL while open
          question TEXT,                -- JSON {"title", "origins": [...], "destinations": [...]}
          reveal INTEGER,               -- 1 if students may also send their true answer
          max_reports INTEGER)          -- private reports accepted per room, all rounds together
    rounds(room TEXT, number INTEGER,   -- 1, 2, … per room
           mechanism TEXT, epsilon REAL,
           permutation TEXT,            -- JSON list: Hadamard response's public permutation, or NULL
           opened REAL, closed REAL,
           PRIMARY KEY (room, number))
    reports(id INTEGER PRIMARY KEY, room TEXT, round INTEGER, received REAL,
            report TEXT,                -- JSON in the mechanism's ``perturb`` format, one person
            nonce TEXT,                 -- 128 random bits the phone drew for this one report
            UNIQUE (room, nonce))
    reveals(id INTEGER PRIMARY KEY, room TEXT, round INTEGER,
            cell INTEGER,               -- a true answer a student chose to send (NOT private)
            nonce TEXT, UNIQUE (room, nonce))   -- drawn apart from the report's nonce
    rejections(room TEXT, round INTEGER, reason TEXT, count INTEGER,
               PRIMARY KEY (room, round, reason))   -- bad or forged reports: counted, never kept

The nonces make a resent message (a flaky connection replaying it) count once; each is fresh
randomness, so it says nothing about the student and does not link their reveal to their report.
Reveals carry no time and no link to a report; their row order still follows arrival order, so
a reveal sent right after a report could be matched to it by someone with the database file.

Room codes: :data:`CODE_LENGTH` characters drawn by :mod:`secrets` from :data:`CODE_ALPHABET` (no
0/O, 1/I/L), :data:`CODE_BITS` ≈ 39.6 bits: guessing one of 100 open rooms at 100 tries a second
for a whole day succeeds with probability ≈ 10⁻³. Enough against a curious classmate, not a secret.

References: [WBLJ17] Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
estimation", USENIX Security 2017; [ASZ19] Acharya, Sun, Zhang, "Hadamard response", AISTATS 2019.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import sqlite3
import tempfile
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpcore import mechanisms
from dpcore.data.od import ODMatrix
from dpcore.evaluation import ranks
from dpcore.mechanisms.base import LocalMechanism
from dpcore.mechanisms.hadamard import HadamardResponse, uniform_permutation
from dpcore.mechanisms.local import GRR, HASH_PRIME, OLH, OUE

#: Folder of the database; default :func:`default_folder`.
FOLDER_VARIABLE = "DPCORE_CLASSROOM_DIR"
DATABASE_NAME = "classroom.sqlite3"
#: Largest question: a phone shows every cell, and OUE sends one bit per cell.
MAX_CELLS = 50
#: Private reports a room accepts over all its rounds (a large lecture's worth of rounds).
MAX_REPORTS = 500
#: How long a room lives: a school day and the evening after.
ROOM_HOURS = 24.0
#: Local mechanisms a classroom can use, with a report format a phone can send.
MECHANISMS = ("grr", "oue", "olh", "hr")
EPSILON_RANGE = (0.1, 10.0)
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_BITS = CODE_LENGTH * math.log2(len(CODE_ALPHABET))
#: Length of a message nonce: 128 random bits as lowercase hexadecimal.
NONCE_HEX = 32
HEX = "0123456789abcdef"
#: Two-sided normal quantile of the 95 % confidence intervals.
Z95 = 1.959963984540054
#: Seconds a writer waits for the database lock before giving up (SQLite's busy timeout).
LOCK_TIMEOUT = 30.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms(code TEXT PRIMARY KEY, teacher_hash TEXT NOT NULL,
    created REAL NOT NULL, expires REAL NOT NULL, closed REAL, question TEXT NOT NULL,
    reveal INTEGER NOT NULL, max_reports INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rounds(room TEXT NOT NULL, number INTEGER NOT NULL,
    mechanism TEXT NOT NULL, epsilon REAL NOT NULL, permutation TEXT, opened REAL NOT NULL,
    closed REAL, PRIMARY KEY (room, number));
CREATE TABLE IF NOT EXISTS reports(id INTEGER PRIMARY KEY, room TEXT NOT NULL,
    round INTEGER NOT NULL, received REAL NOT NULL, report TEXT NOT NULL, nonce TEXT,
    UNIQUE (room, nonce));
CREATE INDEX IF NOT EXISTS reports_by_round ON reports(room, round);
CREATE TABLE IF NOT EXISTS reveals(id INTEGER PRIMARY KEY, room TEXT NOT NULL,
    round INTEGER NOT NULL, cell INTEGER NOT NULL, nonce TEXT, UNIQUE (room, nonce));
CREATE INDEX IF NOT EXISTS reveals_by_round ON reveals(room, round);
CREATE TABLE IF NOT EXISTS rejections(room TEXT NOT NULL, round INTEGER NOT NULL,
    reason TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (room, round, reason));
"""


class ClassroomError(ValueError):
    """A request the room cannot accept; the message says why, for the person who made it."""


class ReportRejected(ClassroomError):
    """A report that does not fit its round's format or arrived when the round was not open.

    ``reason`` is a short fixed phrase (the teacher's tally groups by it); the message says more.
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def default_folder() -> Path:
    """``$DPCORE_CLASSROOM_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache`` (else the temp folder)
    ``/commuting-privacy-lab``: outside the repository, survives a server restart."""
    configured = os.environ.get(FOLDER_VARIABLE)
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    base = Path(cache) if Path(cache).parent.exists() else Path(tempfile.gettempdir())
    return base / "commuting-privacy-lab"


def normalise_code(text: str) -> str:
    """What a student typed as a room code, upper-cased, without spaces or dashes."""
    return "".join(ch for ch in str(text).upper() if ch not in " -\t")


def format_code(code: str) -> str:
    """ABCD-EFGH: easier to read off a projector."""
    return f"{code[:4]}-{code[4:]}"


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


# ------------------------------------------------------------------------------------ questions
@dataclass(frozen=True)
class Question:
    """Where do you live → where do you work or study, over the listed zones (names untrusted)."""

    title: str
    origins: tuple[str, ...]
    destinations: tuple[str, ...]

    def __post_init__(self):
        d = len(self.origins) * len(self.destinations)
        if not self.origins or not self.destinations:
            raise ClassroomError("Pick at least one home zone and one work/study zone.")
        if not 2 <= d <= MAX_CELLS:
            raise ClassroomError(
                f"The question has {len(self.origins)} home zones × {len(self.destinations)} "
                f"work/study zones = {d} possible commutes; a classroom allows 2 to {MAX_CELLS} "
                "(a phone lists them all). Remove some zones.")

    @property
    def d(self) -> int:
        return len(self.origins) * len(self.destinations)

    def cell(self, origin: int, destination: int) -> int:
        return origin * len(self.destinations) + destination

    def label(self, cell: int) -> str:
        origin, destination = divmod(int(cell), len(self.destinations))
        return f"{self.origins[origin]} → {self.destinations[destination]}"

    def to_json(self) -> str:
        return json.dumps({"title": self.title, "origins": list(self.origins),
                           "destinations": list(self.destinations)})

    @classmethod
    def from_json(cls, text: str) -> Question:
        data = json.loads(text)
        return cls(data["title"], tuple(data["origins"]), tuple(data["destinations"]))


def default_zones(od: ODMatrix) -> tuple[list[str], list[str]]:
    """The busiest home and work zones of ``od`` (its parent level when it has one) such that
    origins × destinations ≤ :data:`MAX_CELLS`: the toy town's 7 homes × its 7 busiest
    destinations, a county table's 7 × 7 busiest counties."""
    if od.has_parent_level:
        od = od.aggregate()
    n_origins = min(od.n_origins, math.isqrt(MAX_CELLS))
    n_destinations = min(od.n_destinations, MAX_CELLS // n_origins)
    origins = ranks.top_cells(od.origin_totals(), n_origins)
    destinations = ranks.top_cells(od.destination_totals(), n_destinations)
    return ([str(x) for x in od.origins.labels[np.sort(origins)]],
            [str(x) for x in od.destinations.labels[np.sort(destinations)]])


def zone_choices(od: ODMatrix) -> tuple[list[str], list[str]]:
    """Every zone a teacher may pick for the question (the parent level when there is one)."""
    if od.has_parent_level:
        od = od.aggregate()
    return [str(x) for x in od.origins.labels], [str(x) for x in od.destinations.labels]


# ------------------------------------------------------------------------------------- rounds
@dataclass(frozen=True)
class Round:
    room: str
    number: int
    mechanism: str
    epsilon: float
    permutation: tuple[int, ...] | None
    opened: float
    closed: float | None

    @property
    def is_open(self) -> bool:
        return self.closed is None

    def build(self) -> LocalMechanism:
        return mechanisms.build(self.mechanism, epsilon=self.epsilon)

    @property
    def permutation_array(self) -> np.ndarray | None:
        return None if self.permutation is None else np.asarray(self.permutation, dtype=np.int64)


def client_spec(round_: Round, d: int) -> dict:
    """Everything a phone needs to randomise in this round — numbers only, derived from the
    mechanism's own ``support_probabilities``/``constants`` so the browser and the server agree."""
    mech = round_.build()
    spec = {"mechanism": round_.mechanism, "epsilon": round_.epsilon, "d": d,
            "round": round_.number}
    if isinstance(mech, HadamardResponse):
        lay, uniform, _ = mech.constants(d)
        spec.update(outputs=lay.outputs, blocks=lay.blocks, blockSize=lay.block_size,
                    uniform=uniform, permutation=list(round_.permutation or []) or None)
    else:
        p, q = mech.support_probabilities(d)
        spec.update(p=p, q=q)
        if isinstance(mech, OLH):
            spec.update(g=mech.hash_range, prime=HASH_PRIME)
    return spec


# ------------------------------------------------------------------------------------ reports
def _whole(value, low: int, high: int, what: str) -> int:
    """``value`` as an int in [low, high), or ReportRejected naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportRejected(f"The report's {what} must be a whole number; got {value!r:.40}.",
                             "malformed")
    if not low <= value < high:
        raise ReportRejected(f"The report's {what} {value} is outside [{low}, {high}).",
                             "out of range")
    return value


def parse_report(round_: Round, d: int, payload) -> dict:
    """The report as stored (JSON-able, ``perturb``'s fields), or ReportRejected saying why.

    Formats (one person; the fields and meanings of the mechanisms' ``perturb``):
    GRR ``{"y": cell}``; OUE ``{"bits": "0110…"}`` (d characters); OLH ``{"a", "b", "y"}`` with
    1 ≤ a < P, 0 ≤ b < P, 0 ≤ y < g; HR ``{"y": output}`` with 0 ≤ y < K. A well-formed forged
    report cannot be told from an honest one (that is the point of local DP); it shifts the
    estimate by at most one report's worth.
    """
    if not isinstance(payload, dict):
        raise ReportRejected("The report must be an object of named fields.", "malformed")
    mech = round_.build()
    fields = {GRR: {"y"}, OUE: {"bits"}, OLH: {"a", "b", "y"}, HadamardResponse: {"y"}}
    wanted = next(f for kind, f in fields.items() if isinstance(mech, kind))
    if set(payload) != wanted:
        raise ReportRejected(f"A report for {round_.mechanism.upper()} has the fields "
                             f"{sorted(wanted)}; got {sorted(map(str, payload))[:6]}.",
                             "wrong fields")
    if isinstance(mech, OUE):
        bits = payload["bits"]
        if not isinstance(bits, str) or len(bits) != d or set(bits) - {"0", "1"}:
            raise ReportRejected(f"An OUE report is a string of exactly {d} characters 0 or 1.",
                                 "wrong length")
        return {"bits": bits}
    if isinstance(mech, OLH):
        return {"a": _whole(payload["a"], 1, HASH_PRIME, "hash seed a"),
                "b": _whole(payload["b"], 0, HASH_PRIME, "hash seed b"),
                "y": _whole(payload["y"], 0, mech.hash_range, "bucket")}
    if isinstance(mech, HadamardResponse):
        return {"y": _whole(payload["y"], 0, mech.layout(d).outputs, "output")}
    return {"y": _whole(payload["y"], 0, d, "cell")}


def stack_reports(round_: Round, reports: list[dict]) -> dict:
    """Stored reports as one batch in ``perturb``'s array format, ready for ``accumulate``."""
    if round_.mechanism == "oue":
        bits = np.array([[c == "1" for c in r["bits"]] for r in reports], dtype=bool)
        return {"bits": bits}
    keys = ("a", "b", "y") if round_.mechanism == "olh" else ("y",)
    return {k: np.array([r[k] for r in reports], dtype=np.int64) for k in keys}


@dataclass(frozen=True)
class Estimate:
    """A round's estimate: per-cell counts with 95 % intervals from the mechanism's variance.

    ``sd`` is the mechanism's exact standard deviation evaluated at a plug-in of the true counts
    (the estimates clipped at 0 and rescaled to n); ``empty_sd`` the spread the mechanism predicts
    for an empty cell with this many reports — what noise alone looks like.
    """

    n: int
    estimate: np.ndarray
    sd: np.ndarray
    empty_sd: float

    @property
    def lower(self) -> np.ndarray:
        return self.estimate - Z95 * self.sd

    @property
    def upper(self) -> np.ndarray:
        return self.estimate + Z95 * self.sd


def plug_in_counts(estimate: np.ndarray, n: int) -> np.ndarray:
    """Whole counts ≥ 0 summing to n, proportional to the clipped estimate (largest remainder);
    uniform when every estimate is ≤ 0."""
    positive = np.clip(np.asarray(estimate, dtype=float), 0, None)
    share = positive / positive.sum() if positive.sum() > 0 else np.full(len(positive),
                                                                          1 / len(positive))
    raw = share * n
    counts = np.floor(raw).astype(np.int64)
    counts[np.argsort(counts - raw)[:n - int(counts.sum())]] += 1
    return counts


def estimate_round(round_: Round, d: int, reports: list[dict]) -> Estimate | None:
    """The mechanism's own server (``accumulate`` → ``estimate``) on a round's reports; None when
    no report has arrived."""
    n = len(reports)
    if n == 0:
        return None
    mech = round_.build()
    batch = stack_reports(round_, reports)
    statistic = mech.accumulate(batch, d)
    extra = {"permutation": round_.permutation_array} if isinstance(mech, HadamardResponse) else {}
    estimate = mech.estimate(statistic, n, d, **extra)
    variance = mech.variance(plug_in_counts(estimate, n), **extra)
    one_cell = np.zeros(d, dtype=np.int64)
    one_cell[0] = n
    empty = mech.variance(one_cell, **extra)[1:]
    return Estimate(n, np.asarray(estimate, dtype=float), np.sqrt(np.clip(variance, 0, None)),
                    float(np.sqrt(max(float(empty.min()), 0.0))))


# ---------------------------------------------------------------------------------------- rooms
@dataclass(frozen=True)
class Room:
    code: str
    created: float
    expires: float
    closed: float | None
    question: Question
    reveal: bool
    max_reports: int

    def is_open(self, now: float | None = None) -> bool:
        return self.closed is None and (time.time() if now is None else now) < self.expires


@dataclass(frozen=True)
class Snapshot:
    """What the teacher's screen shows of one round, read in one transaction."""

    room: Room
    round: Round
    reports: list[dict]
    room_reports: int
    rejected: dict[str, int]
    reveals: np.ndarray | None


class RoomStore:
    """The classroom database. Safe to share between threads: every call opens its own
    connection (SQLite connections are cheap), so Streamlit sessions never share one."""

    def __init__(self, folder: Path | str | None = None):
        self.folder = Path(folder) if folder is not None else default_folder()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / DATABASE_NAME
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @contextmanager
    def _connect(self):
        with closing(sqlite3.connect(self.path, timeout=LOCK_TIMEOUT,
                                     isolation_level=None)) as db:
            db.execute(f"PRAGMA busy_timeout={int(LOCK_TIMEOUT * 1000)}")
            db.execute("PRAGMA synchronous=NORMAL")
            yield db

    @contextmanager
    def _write(self):
        """One write transaction, taken up front so its checks and its insert cannot interleave
        with another writer's."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # ------------------------------------------------------------------------- teacher side
    def create_room(self, question: Question, mechanism: str, epsilon: float, *,
                    reveal: bool = False, hours: float = ROOM_HOURS,
                    max_reports: int = MAX_REPORTS, now: float | None = None) -> tuple[str, str]:
        """A new room with its first round open: (code, teacher key). Expired rooms are purged."""
        now = time.time() if now is None else now
        self.purge_expired(now)
        key = secrets.token_urlsafe(16)
        with self._write() as db:
            while True:
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                if db.execute("SELECT 1 FROM rooms WHERE code=?", (code,)).fetchone() is None:
                    break
            db.execute("INSERT INTO rooms VALUES (?,?,?,?,NULL,?,?,?)",
                       (code, _hash(key), now, now + hours * 3600, question.to_json(),
                        int(reveal), int(max_reports)))
            self._open_round(db, code, question.d, mechanism, epsilon, now)
        return code, key

    @staticmethod
    def _open_round(db, code, d, mechanism, epsilon, now) -> int:
        if mechanism not in MECHANISMS:
            raise ClassroomError(f"Unknown classroom mechanism {mechanism!r}; choose one of "
                                 f"{', '.join(MECHANISMS)}.")
        if not EPSILON_RANGE[0] <= float(epsilon) <= EPSILON_RANGE[1]:
            raise ClassroomError(f"ε must be between {EPSILON_RANGE[0]} and {EPSILON_RANGE[1]}.")
        mech = mechanisms.build(mechanism, epsilon=float(epsilon))
        permutation = None
        if isinstance(mech, HadamardResponse) and mech.blocked:   # public, drawn once per round
            rng = np.random.default_rng(secrets.randbits(128))
            permutation = json.dumps(uniform_permutation(d, rng).tolist())
        db.execute("UPDATE rounds SET closed=? WHERE room=? AND closed IS NULL", (now, code))
        number = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM rounds WHERE room=?",
                            (code,)).fetchone()[0]
        db.execute("INSERT INTO rounds VALUES (?,?,?,?,?,?,NULL)",
                   (code, number, mechanism, float(epsilon), permutation, now))
        return number

    def _check_teacher(self, db, code: str, key: str) -> Room:
        room = self._room(db, code)
        if not secrets.compare_digest(_hash(key or ""), self._teacher_hash(db, code)):
            raise ClassroomError("Only the teacher who created this room can change it "
                                 "(the teacher key does not match).")
        return room

    @staticmethod
    def _teacher_hash(db, code):
        return db.execute("SELECT teacher_hash FROM rooms WHERE code=?", (code,)).fetchone()[0]

    def new_round(self, code: str, key: str, mechanism: str, epsilon: float,
                  now: float | None = None) -> int:
        """Close the open round and open the next with this mechanism and ε; its number."""
        now = time.time() if now is None else now
        with self._write() as db:
            room = self._check_teacher(db, code, key)
            if not room.is_open(now):
                raise ClassroomError("This room is closed; open a new room to start another round.")
            return self._open_round(db, code, room.question.d, mechanism, epsilon, now)

    def close_room(self, code: str, key: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._write() as db:
            self._check_teacher(db, code, key)
            db.execute("UPDATE rooms SET closed=COALESCE(closed, ?) WHERE code=?", (now, code))
            db.execute("UPDATE rounds SET closed=? WHERE room=? AND closed IS NULL", (now, code))

    def is_teacher(self, code: str, key: str | None) -> bool:
        with self._connect() as db:
            stored = db.execute("SELECT teacher_hash FROM rooms WHERE code=?", (code,)).fetchone()
        return bool(key) and stored is not None and secrets.compare_digest(_hash(key), stored[0])

    def purge_expired(self, now: float | None = None) -> int:
        """Delete rooms past their expiry with everything they hold; how many were deleted."""
        now = time.time() if now is None else now
        with self._write() as db:
            codes = [r[0] for r in db.execute("SELECT code FROM rooms WHERE expires <= ?", (now,))]
            for table, column in (("reports", "room"), ("reveals", "room"), ("rejections", "room"),
                                  ("rounds", "room"), ("rooms", "code")):
                db.executemany(f"DELETE FROM {table} WHERE {column}=?", [(c,) for c in codes])
        return len(codes)

    # ------------------------------------------------------------------------------ reading
    @staticmethod
    def _room(db, code: str) -> Room:
        row = db.execute("SELECT code, created, expires, closed, question, reveal, max_reports "
                         "FROM rooms WHERE code=?", (normalise_code(code),)).fetchone()
        if row is None:
            raise ClassroomError(f"There is no room with the code {format_code(normalise_code(code))[:12]!r}"
                                 " (it may have expired). Check the code with your teacher.")
        return Room(row[0], row[1], row[2], row[3], Question.from_json(row[4]), bool(row[5]),
                    row[6])

    @staticmethod
    def _round(db, code: str, number: int | None = None) -> Round:
        sql = ("SELECT room, number, mechanism, epsilon, permutation, opened, closed FROM rounds "
               "WHERE room=? " + ("AND number=?" if number is not None else "")
               + " ORDER BY number DESC LIMIT 1")
        row = db.execute(sql, (code,) if number is None else (code, int(number))).fetchone()
        if row is None:
            raise ClassroomError(f"Room {format_code(code)} has no round {number}.")
        permutation = tuple(json.loads(row[4])) if row[4] else None
        return Round(row[0], row[1], row[2], row[3], permutation, row[5], row[6])

    def room(self, code: str) -> Room:
        with self._connect() as db:
            return self._room(db, code)

    def current_round(self, code: str) -> Round:
        with self._connect() as db:
            return self._round(db, self._room(db, code).code)

    def rounds(self, code: str) -> list[Round]:
        with self._connect() as db:
            top = self._round(db, self._room(db, code).code).number
            return [self._round(db, code, k) for k in range(1, top + 1)]

    def snapshot(self, code: str, number: int | None = None) -> Snapshot:
        """Room, round (default: the latest), its reports, rejections and reveals, consistently."""
        with self._connect() as db:
            db.execute("BEGIN")
            room = self._room(db, code)
            round_ = self._round(db, room.code, number)
            key = (room.code, round_.number)
            reports = [json.loads(r[0]) for r in db.execute(
                "SELECT report FROM reports WHERE room=? AND round=? ORDER BY id", key)]
            total = db.execute("SELECT COUNT(*) FROM reports WHERE room=?",
                               (room.code,)).fetchone()[0]
            rejected = dict(db.execute("SELECT reason, count FROM rejections WHERE room=? AND "
                                       "round=?", key).fetchall())
            reveals = None
            if room.reveal:
                cells = [r[0] for r in db.execute("SELECT cell FROM reveals WHERE room=? AND "
                                                  "round=?", key)]
                reveals = np.bincount(np.asarray(cells, dtype=np.int64),
                                      minlength=room.question.d)
            db.execute("COMMIT")
        return Snapshot(room, round_, reports, total, rejected, reveals)

    # ------------------------------------------------------------------------------ student side
    def submit(self, code: str, number: int, payload, nonce: str | None = None,
               now: float | None = None) -> int:
        """Store one private report for round ``number``; how many the round now holds.

        ClassroomError for an unknown room (nothing is stored); ReportRejected — counted under its
        reason in ``rejections``, the report itself dropped — for a report the round cannot take.
        A report whose ``nonce`` the room already holds is the same message again: not stored twice.
        """
        now = time.time() if now is None else now
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                room = self._room(db, code)
                if self._seen(db, "reports", room.code, nonce):
                    db.execute("ROLLBACK")
                    return self._count(db, room.code, number if isinstance(number, int) else -1)
                text = self._accept(db, room, number, payload, now)
            except ReportRejected as rejected:
                self._count_rejection(db, room.code, rejected)
                db.execute("COMMIT")
                raise
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("INSERT INTO reports(room, round, received, report, nonce) "
                       "VALUES (?,?,?,?,?)", (room.code, int(number), now, text, nonce))
            count = self._count(db, room.code, number)
            db.execute("COMMIT")
        return count

    @staticmethod
    def _count(db, code: str, number) -> int:
        return db.execute("SELECT COUNT(*) FROM reports WHERE room=? AND round=?",
                          (code, number)).fetchone()[0]

    @staticmethod
    def _seen(db, table: str, code: str, nonce) -> bool:
        """Whether the room already holds this nonce (ReportRejected if it is not one)."""
        if nonce is None:
            return False
        if not isinstance(nonce, str) or len(nonce) != NONCE_HEX or set(nonce) - set(HEX):
            raise ReportRejected(f"The message's nonce must be {NONCE_HEX} hexadecimal digits.",
                                 "malformed")
        return db.execute(f"SELECT 1 FROM {table} WHERE room=? AND nonce=?",
                          (code, nonce)).fetchone() is not None

    def _accept(self, db, room: Room, number, payload, now) -> str:
        """The report's stored JSON, or ReportRejected if the room or round cannot take it."""
        if not room.is_open(now):
            raise ReportRejected("This room is closed: the teacher closed it or it expired. "
                                 "Nothing was sent.", "room closed")
        current = self._round(db, room.code)
        if isinstance(number, bool) or not isinstance(number, int) or number != current.number:
            raise ReportRejected(f"Round {number!s:.12} is not open: this room is on round "
                                 f"{current.number}. Reload the page to answer it.", "round closed")
        total = db.execute("SELECT COUNT(*) FROM reports WHERE room=?", (room.code,)).fetchone()[0]
        if total >= room.max_reports:
            raise ReportRejected(f"This room is full: it accepts at most {room.max_reports} "
                                 "reports. Ask your teacher to open a new room.", "room full")
        return json.dumps(parse_report(current, room.question.d, payload))

    def _count_rejection(self, db, code, rejected: ReportRejected):
        """Tally under the room's latest round (the one open when it arrived): a bounded number of
        rows whatever a forger sends."""
        latest = self._round(db, code)
        db.execute("INSERT INTO rejections VALUES (?,?,?,1) ON CONFLICT(room, round, reason) "
                   "DO UPDATE SET count = count + 1", (latest.room, latest.number, rejected.reason))

    def reveal(self, code: str, number: int, cell, nonce: str | None = None,
               now: float | None = None) -> None:
        """Store a true answer a student chose to send (not private), if the room allows it."""
        now = time.time() if now is None else now
        with self._write() as db:
            room = self._room(db, code)
            if self._seen(db, "reveals", room.code, nonce):
                return
            if not room.reveal:
                raise ClassroomError("This room does not collect true answers.")
            if not room.is_open(now) or number != self._round(db, room.code).number:
                raise ClassroomError("This round is closed; your true answer was not sent.")
            cell = _whole(cell, 0, room.question.d, "cell")
            held = db.execute("SELECT COUNT(*) FROM reveals WHERE room=?", (room.code,)).fetchone()
            if held[0] >= room.max_reports:
                raise ClassroomError(f"This room is full: it accepts at most {room.max_reports} "
                                     "true answers.")
            db.execute("INSERT INTO reveals(room, round, cell, nonce) VALUES (?,?,?,?)",
                       (room.code, int(number), cell, nonce))
