"""The records the room store reads and hands out: a room, a phone's ticket for one round, the
teacher's snapshot of a round, sessions and network addresses as the teacher sees them, and the
page's per-session rate limit."""

from __future__ import annotations

import secrets
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from dpcore.interfaces.classroom import ATTEMPTS_PER_MINUTE, _hash
from dpcore.interfaces.classroom.questions import Question
from dpcore.interfaces.classroom.reports import Round
from dpcore.interfaces.classroom_admission import DEFAULT_CAP, LOCAL
from dpcore.mechanisms.local import HASH_PRIME


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

