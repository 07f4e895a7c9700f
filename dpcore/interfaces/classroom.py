"""Live classroom rooms: students' own browsers randomise their commute, the server estimates.

A teacher opens a *room* on a question "where do you live → where do you work/study" over at most
:data:`MAX_CELLS` cells (the listed origin × destination pairs plus one "none of these" cell), with
a local mechanism (GRR, OUE, OLH or Hadamard response) and ε. Every (mechanism, ε) is a *round*;
a new round closes the previous one. Students send the report their browser drew; the server
validates it against the round's report format (:func:`parse_report`) and what the mechanism makes
plausible (:func:`plausible_ones`), stores it, and estimates the class's counts with the mechanism's
own server code (``accumulate`` then ``estimate`` of :mod:`dpcore.mechanisms`), so what the class
sees is what the audited Python protocol computes [WBLJ17, ASZ19].

Trust. Nothing from a phone is believed but its report. The page hands each browser session a
:class:`Ticket` for the round it shows (room and round read from the database, a fresh single-use
nonce, and for OLH the hash seed to use); :meth:`RoomStore.submit` takes the ticket, not a room or
round named by the phone, and the database's ``UNIQUE (room, round, session)`` key admits one
report per session and round whatever the spelling of the code. A reveal ("true answer") needs a
report of the same session and round. Sessions are stored only as SHA-256 of the page's random
session token with a purpose prefix ("report:", "reveal:"), so the file alone does not link a
reveal to a report. On top of that, the room's admission mode
(:mod:`dpcore.interfaces.classroom_admission`) caps the reports per network address and round, or
admits one report per one-time join code and round. Estimates and their exact intervals:
:mod:`dpcore.interfaces.classroom_stats`. Threat model and limits: docs/CLASSROOM.md.

Storage: the server's SQLite database (:mod:`dpcore.interfaces.store`: WAL, short timeouts, a size
cap, failures as plain :class:`~dpcore.interfaces.store.StoreUnavailable` messages, the schema
re-created when the file is deleted). Every write is one ``BEGIN IMMEDIATE`` transaction that
re-checks the room's limits, so concurrent writers neither lose reports nor overshoot a limit.

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
           opened REAL, closed REAL, PRIMARY KEY (room, number))
    reports(id INTEGER PRIMARY KEY, room, round, received REAL,
            report TEXT,                -- JSON in the mechanism's ``perturb`` format, one person
            nonce TEXT,                 -- the ticket's 128 random bits, used once
            session TEXT,               -- SHA-256("report:" + session token)
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
import re
import secrets
import sqlite3
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpcore import mechanisms
from dpcore.data.od import ODMatrix
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
from dpcore.interfaces.store import (
    DATABASE_NAME,
    FOLDER_VARIABLE,
    Database,
    default_folder,
    explain,
)
from dpcore.mechanisms.base import LocalMechanism
from dpcore.mechanisms.hadamard import HadamardResponse, uniform_permutation
from dpcore.mechanisms.local import GRR, HASH_PRIME, OLH, OUE
from dpcore.scoring import ranks

#: Re-exported from :mod:`dpcore.interfaces.store`: where the rooms live.
__all__ = ["DATABASE_NAME", "FOLDER_VARIABLE", "default_folder"]

#: Largest question, "none of these" included: a phone shows every cell, OUE sends a bit per cell.
MAX_CELLS = 50
#: Label of the extra cell every question has, for a commute the teacher did not list.
NONE_OF_THESE = "None of these (a commute not listed)"
#: Private reports a room accepts over all its rounds (a large lecture's worth of rounds).
MAX_REPORTS = 500
#: Rooms open at once on one server, and rounds per room: bounds on what one teacher key buys.
MAX_OPEN_ROOMS = 100
MAX_ROUNDS = 50
#: Longest question title and zone name, in characters (a projector line; a long place name).
MAX_TITLE = 200
MAX_NAME = 80
#: How long a room lives: a school day and the evening after.
ROOM_HOURS = 24.0
#: Local mechanisms a classroom can use, with a report format a phone can send.
MECHANISMS = ("grr", "oue", "olh", "hr")
EPSILON_RANGE = (0.1, 10.0)
#: The ε a teacher can pick (and the proposal chooses from).
EPSILONS = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_BITS = CODE_LENGTH * math.log2(len(CODE_ALPHABET))
#: Length of a message nonce: 128 random bits as lowercase hexadecimal.
NONCE_HEX = 32
HEX = "0123456789abcdef"
#: Probability that an honest report is rejected as implausible (:func:`plausible_ones`).
FALSE_REJECTION = 1e-6
#: Report attempts one browser session may make per minute (:class:`RateLimit`).
ATTEMPTS_PER_MINUTE = 6

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms(code TEXT PRIMARY KEY, teacher_hash TEXT NOT NULL,
    created REAL NOT NULL, expires REAL NOT NULL, closed REAL, question TEXT NOT NULL,
    reveal INTEGER NOT NULL, max_reports INTEGER NOT NULL, students INTEGER NOT NULL,
    admission TEXT NOT NULL, cap INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rounds(room TEXT NOT NULL, number INTEGER NOT NULL,
    mechanism TEXT NOT NULL, epsilon REAL NOT NULL, permutation TEXT, opened REAL NOT NULL,
    closed REAL, PRIMARY KEY (room, number));
CREATE TABLE IF NOT EXISTS reports(id INTEGER PRIMARY KEY, room TEXT NOT NULL,
    round INTEGER NOT NULL, received REAL NOT NULL, report TEXT NOT NULL, nonce TEXT NOT NULL,
    session TEXT NOT NULL, UNIQUE (room, nonce), UNIQUE (room, round, session));
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
""" + JOIN_SCHEMA
_TABLES = ("reports", "reveals", "rejections", "sessions", "admissions", "join_codes",
           "join_attempts", "rounds", "rooms")
#: A column each table of the current layout has and the layouts before it lacked.
_LAYOUT = {"reports": "session", "rooms": "admission", "sessions": "address"}


def _drop_older_layout(db: sqlite3.Connection) -> None:
    """Rooms of an older layout (no per-session key, no admission mode, no session address)
    cannot be kept: drop them — rooms live a day at most."""
    for table, column in _LAYOUT.items():
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if columns and column not in columns:
            for name in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {name}")
            return


class ClassroomError(ValueError):
    """A request the room cannot accept; the message says why, for the person who made it."""


class ReportRejected(ClassroomError):
    """A report that does not fit its round's format or arrived when the round was not open.

    ``reason`` is a short fixed phrase (the teacher's tally groups by it); the message says more.
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def normalise_code(text: str) -> str:
    """What a student typed as a room code: its letters and digits, upper-cased (spaces, dashes
    and any other character dropped), at most 64 of them."""
    return "".join(ch for ch in str(text).upper() if ch.isascii() and ch.isalnum())[:64]


def format_code(code: str) -> str:
    """ABCD-EFGH: easier to read off a projector."""
    return f"{code[:4]}-{code[4:]}"


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


# ------------------------------------------------------------------------------------ questions
@dataclass(frozen=True)
class Question:
    """Where do you live → where do you work or study, over the listed zones (names untrusted).

    The domain is every listed origin × destination pair **plus one cell, "none of these"**, the
    last (:data:`NONE_OF_THESE`): a student whose commute is not listed answers truthfully there
    instead of being pushed onto a wrong commute, so the listed estimates count only the students
    who take them, and the class learns how many commutes the list missed.
    """

    title: str
    origins: tuple[str, ...]
    destinations: tuple[str, ...]

    def __post_init__(self):
        if not self.origins or not self.destinations:
            raise ClassroomError("Pick at least one home zone and one work/study zone.")
        if len(str(self.title)) > MAX_TITLE:
            raise ClassroomError(f"The question has {len(str(self.title)):,} characters; at most "
                                 f"{MAX_TITLE} fit on a phone. Shorten it.")
        long = [z for z in self.origins + self.destinations if len(str(z)) > MAX_NAME]
        if long:
            raise ClassroomError(f"{len(long)} zone name(s) are longer than {MAX_NAME} characters "
                                 f"(e.g. one starting {str(long[0])[:30]!r}); pick other zones.")
        listed = len(self.origins) * len(self.destinations)
        if not 1 <= listed <= MAX_CELLS - 1:
            raise ClassroomError(
                f"The question has {len(self.origins)} home zones × {len(self.destinations)} "
                f"work/study zones = {listed} possible commutes; a classroom allows at most "
                f"{MAX_CELLS - 1} (plus \"none of these\"; a phone lists them all). Remove "
                "some zones.")

    @property
    def d(self) -> int:
        """Cells of the domain: the listed commutes and "none of these"."""
        return len(self.origins) * len(self.destinations) + 1

    @property
    def none_cell(self) -> int:
        return self.d - 1

    def cell(self, origin: int, destination: int) -> int:
        return origin * len(self.destinations) + destination

    def label(self, cell: int) -> str:
        if int(cell) == self.none_cell:
            return NONE_OF_THESE
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
    origins × destinations + 1 ≤ :data:`MAX_CELLS`: the toy town's 7 homes × its 7 busiest
    destinations, a county table's 7 × 7 busiest counties."""
    if od.has_parent_level:
        od = od.aggregate()
    n_origins = min(od.n_origins, math.isqrt(MAX_CELLS - 1))
    n_destinations = min(od.n_destinations, (MAX_CELLS - 1) // n_origins)
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


def client_spec(round_: Round, d: int, seed: tuple[int, int] | None = None) -> dict:
    """Everything a phone needs to randomise in this round — numbers only, derived from the
    mechanism's own ``support_probabilities``/``constants`` so the browser and the server agree.
    For OLH, ``seed`` is the hash seed (a, b) the page issued this phone (its :class:`Ticket`)."""
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
            spec.update(g=mech.hash_range, prime=HASH_PRIME,
                        seed=None if seed is None else [int(seed[0]), int(seed[1])])
    return spec


# ------------------------------------------------------------------------------------ reports
#: Deepest nesting of arrays and objects in a message from a phone. A report is an object of
#: numbers or one string, inside its event's value inside the component's event list: depth 4.
#: Python's JSON parser recurses once per level, so a message nested 100,000 deep raised
#: RecursionError (a traceback to its sender) before any check of its content could run.
MAX_MESSAGE_DEPTH = 16
#: A JSON string (escapes included): its brackets are text, not nesting.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENING, _CLOSING = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)


def message_depth(text: str) -> int:
    """How deeply ``text``'s JSON nests arrays and objects, counted without parsing it (one
    linear pass; brackets inside strings ignored, an unterminated string's counted)."""
    bare = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8"), dtype=np.uint8)
    steps = np.isin(bare, _OPENING).astype(np.int64) - np.isin(bare, _CLOSING)
    return int(np.cumsum(steps).max(initial=0))


def check_message(text: str) -> None:
    """ReportRejected (reason "too deep") when ``text`` nests deeper than
    :data:`MAX_MESSAGE_DEPTH`: to be called before the text is parsed."""
    if text.count("[") + text.count("{") <= MAX_MESSAGE_DEPTH:  # the usual, short message
        return
    depth = message_depth(text)
    if depth > MAX_MESSAGE_DEPTH:
        raise ReportRejected(f"Not counted: the message from this page is nested {depth:,} "
                             f"levels deep; a phone's report is at most {MAX_MESSAGE_DEPTH}. "
                             "Reload the page and send again from its buttons.", "too deep")


def _whole(value, low: int, high: int, what: str) -> int:
    """``value`` as an int in [low, high), or ReportRejected naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        got = (f"{value!r:.40}" if value is None or isinstance(value, (str, float, bool))
               else f"a {type(value).__name__}")  # a nested list's repr recurses: never shown
        raise ReportRejected(f"The report's {what} must be a whole number; got {got}.",
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


def support_size_law(p: float, q: float, d: int) -> np.ndarray:
    """P(K = k), k = 0 … d, where K counts the cells one honest report supports: its own cell
    with probability p plus each of the d − 1 others independently with probability q (OUE's bits
    are independent by construction [WBLJ17]). The law does not depend on the true cell."""
    others = np.array([math.comb(d - 1, k) * q ** k * (1 - q) ** (d - 1 - k) for k in range(d)])
    law = np.zeros(d + 1)
    law[:d] += (1 - p) * others
    law[1:] += p * others
    return law


def plausible_ones(p: float, q: float, d: int, alpha: float = FALSE_REJECTION) -> tuple[int, int]:
    """The range [low, high] of 1-bits an honest OUE report falls outside with probability at most
    ``alpha`` (at most α/2 in each binomial tail of :func:`support_size_law`). A report outside
    it is rejected as implausible: honest phones lose at most a fraction α of their reports,
    while the forgeries that move the estimate most — all ones (+1/(p − q) − … on every cell at
    once), all zeros — are refused."""
    law = support_size_law(p, q, d)
    below = np.cumsum(law)                          # P(K ≤ k)
    above = np.cumsum(law[::-1])[::-1]              # P(K ≥ k)
    low = int(np.flatnonzero(below <= alpha / 2)[-1] + 1) if below[0] <= alpha / 2 else 0
    high = int(np.flatnonzero(above <= alpha / 2)[0] - 1) if above[-1] <= alpha / 2 else d
    return low, high


def check_plausible(round_: Round, d: int, report: dict) -> None:
    """ReportRejected ("implausible") for an OUE report whose number of ones is outside
    :func:`plausible_ones`. GRR and HR reports are one output each (every value equally
    plausible); OLH's hash seed is issued by the page (see :class:`Ticket`), not chosen."""
    if round_.mechanism != "oue":
        return
    p, q = round_.build().support_probabilities(d)
    low, high = plausible_ones(p, q, d)
    ones = report["bits"].count("1")
    if not low <= ones <= high:
        raise ReportRejected(f"This report has {ones} of {d} bits set; an honest phone sends "
                             f"between {low} and {high} (all but {FALSE_REJECTION:g} of the "
                             "time). It was not counted.", "implausible")


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
    students: int
    admission: str = "open"
    cap: int = DEFAULT_CAP

    def is_open(self, now: float | None = None) -> bool:
        return self.closed is None and (time.time() if now is None else now) < self.expires


@dataclass(frozen=True)
class Ticket:
    """What the page hands one browser session for one round, before the phone draws anything.

    ``room`` and ``round`` are read from the database when the page is drawn — never taken from
    the phone's message; ``session`` is the page's own random session token; ``nonce`` is fresh
    and used once; ``seed`` is the OLH hash seed (a, b) the phone must use (None for the other
    mechanisms); ``address`` is the keyed hash of the session's network address
    (:func:`~dpcore.interfaces.classroom_admission.address_hash`, read by the page from its
    connection) and ``join_code`` what the student typed in a room with join codes. Issuing OLH's seed, drawn uniformly from the universal family, keeps local DP
    (OLH is ε-LDP for every fixed hash function) and stops a phone from choosing a seed that
    hashes every cell into one bucket — which honest seeds of the real family also do, 0.2–1 % of
    the time at d = 50, so such a report cannot be refused as implausible.
    """

    room: str
    round: int
    session: str
    nonce: str
    seed: tuple[int, int] | None = None
    address: str = LOCAL
    join_code: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """What the teacher's screen shows of one round, read in one transaction."""

    room: Room
    round: Round
    reports: list[dict]
    room_reports: int
    rejected: dict[str, int]
    reveals: np.ndarray | None
    last_minute: int = 0          # reports of this round received in the last 60 s


@dataclass(frozen=True)
class AddressGroup:
    """The sessions of one network address (its keyed hash; ``label`` its first 8 hex digits):
    how many, their reports kept and rejected, and how many the teacher discarded."""

    address: str
    sessions: int
    reports: int
    rejected: int
    discarded: int

    @property
    def label(self) -> str:
        return self.address[:8]


@dataclass(frozen=True)
class SessionSummary:
    """One browser session of a room as the teacher sees it: ``label`` (the first 8 hex digits of
    its stored hash, nothing about the student), reports kept, reports rejected, discarded."""

    session: str
    reports: int
    rejected: int
    discarded: bool

    @property
    def label(self) -> str:
        return self.session[:8]


def issue_seed() -> tuple[int, int]:
    """An OLH hash seed (a, b), uniform over the universal family (1 ≤ a < P, 0 ≤ b < P), as the
    Python client draws it, from :mod:`secrets`."""
    return 1 + secrets.randbelow(HASH_PRIME - 1), secrets.randbelow(HASH_PRIME)


def session_hash(session: str, purpose: str) -> str:
    """How a session is stored: SHA-256 of "purpose:token" — "report" and "reveal" give unlinked
    values, so the file does not pair a reveal with a report."""
    return _hash(f"{purpose}:{session}")


class RateLimit:
    """At most ``limit`` attempts in any ``seconds`` window (one per browser session, kept by the
    page): a script driving one connection cannot hammer the database."""

    def __init__(self, limit: int = ATTEMPTS_PER_MINUTE, seconds: float = 60.0):
        self.limit, self.seconds = int(limit), float(seconds)
        self._times: deque[float] = deque()

    def allow(self, now: float | None = None) -> bool:
        """Record an attempt now; False (not recorded) when the window is already full."""
        now = time.monotonic() if now is None else now
        while self._times and self._times[0] <= now - self.seconds:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return False
        self._times.append(now)
        return True


def _round_number(value) -> int:
    """A round number as stored (1 … 2³¹), or ReportRejected with a message (e.g. for 2**64)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportRejected(f"The round must be a whole number; got {value!r:.40}.", "malformed")
    if not 1 <= value <= MAX_ROUNDS:
        raise ReportRejected(f"Round {value!s:.24} does not exist: rounds are numbered 1 to "
                             f"{MAX_ROUNDS}. Reload the page.", "out of range")
    return value


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
                    now: float | None = None) -> tuple[str, str]:
        """A new room with its first round open: (code, teacher key). Expired rooms are purged.

        ``admission`` (:data:`~dpcore.interfaces.classroom_admission.ADMISSIONS`): "open", "address"
        (at most ``cap`` reports per network address and round) or "codes" (``codes`` one-time
        join codes, each admitting one report per round)."""
        now = time.time() if now is None else now
        if admission not in ADMISSIONS:
            raise ClassroomError(f"Unknown admission mode {admission!r}; choose one of "
                                 f"{', '.join(ADMISSIONS)}.")
        if admission == "address" and not 1 <= int(cap) <= MAX_CAP:
            raise ClassroomError(f"The cap per network address must be between 1 and {MAX_CAP} "
                                 "reports per round.")
        if admission == "codes" and not 1 <= int(codes) <= MAX_CODES:
            raise ClassroomError(f"A room with join codes prints between 1 and {MAX_CODES} "
                                 "codes, one per student.")
        if not 1 <= float(hours) <= 72:
            raise ClassroomError("A room lives between 1 and 72 hours.")
        if not 10 <= int(max_reports) <= MAX_REPORTS:
            raise ClassroomError(f"A room accepts between 10 and {MAX_REPORTS} reports.")
        if not 2 <= int(students) <= MAX_REPORTS:
            raise ClassroomError(f"The class size must be between 2 and {MAX_REPORTS} students.")
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
            self._open_round(db, code, question.d, mechanism, epsilon, now)
        return code, key

    @staticmethod
    def _open_round(db, code, d, mechanism, epsilon, now) -> int:
        if mechanism not in MECHANISMS:
            raise ClassroomError(f"Unknown classroom mechanism {mechanism!r}; choose one of "
                                 f"{', '.join(MECHANISMS)}.")
        if not EPSILON_RANGE[0] <= float(epsilon) <= EPSILON_RANGE[1]:
            raise ClassroomError(f"ε must be between {EPSILON_RANGE[0]} and {EPSILON_RANGE[1]}.")
        number = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM rounds WHERE room=?",
                            (code,)).fetchone()[0]
        if number > MAX_ROUNDS:
            raise ClassroomError(f"A room holds at most {MAX_ROUNDS} rounds; open a new room.")
        mech = mechanisms.build(mechanism, epsilon=float(epsilon))
        permutation = None
        if isinstance(mech, HadamardResponse) and mech.blocked:   # public, drawn once per round
            rng = np.random.default_rng(secrets.randbits(128))
            permutation = json.dumps(uniform_permutation(d, rng).tolist())
        db.execute("UPDATE rounds SET closed=? WHERE room=? AND closed IS NULL", (now, code))
        db.execute("INSERT INTO rounds VALUES (?,?,?,?,?,?,NULL)",
                   (code, number, mechanism, float(epsilon), permutation, now))
        return number

    def _check_teacher(self, db, code: str, key: str) -> Room:
        room = self._room(db, code)
        stored = db.execute("SELECT teacher_hash FROM rooms WHERE code=?", (room.code,)).fetchone()
        if not secrets.compare_digest(_hash(key or ""), stored[0]):
            raise ClassroomError("Only the teacher who created this room can change it "
                                 "(the teacher key does not match).")
        return room

    def new_round(self, code: str, key: str, mechanism: str, epsilon: float,
                  now: float | None = None) -> int:
        """Close the open round and open the next with this mechanism and ε; its number."""
        now = time.time() if now is None else now
        with self.db.write() as db:
            room = self._check_teacher(db, code, key)
            if not room.is_open(now):
                raise ClassroomError("This room is closed; open a new room to start another round.")
            return self._open_round(db, room.code, room.question.d, mechanism, epsilon, now)

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
        sql = ("SELECT room, number, mechanism, epsilon, permutation, opened, closed FROM rounds "
               "WHERE room=? " + ("AND number=?" if number is not None else "")
               + " ORDER BY number DESC LIMIT 1")
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)
                                   or not 1 <= number <= MAX_ROUNDS):
            raise ClassroomError(f"Room {format_code(code)} has no round {number!s:.24}.")
        row = db.execute(sql, (code,) if number is None else (code, number)).fetchone()
        if row is None:
            raise ClassroomError(f"Room {format_code(code)} has no round {number}.")
        permutation = tuple(json.loads(row[4])) if row[4] else None
        return Round(row[0], row[1], row[2], row[3], permutation, row[5], row[6])

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
                db.execute("INSERT INTO reports(room, round, received, report, nonce, session) "
                           "VALUES (?,?,?,?,?,?)",
                           (room.code, ticket.round, now, text, ticket.nonce, session))
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
