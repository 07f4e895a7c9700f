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

The package's rooms: :mod:`.questions` (the question and its cells), :mod:`.reports` (rounds, the
phone's spec, parsing and plausibility of reports), :mod:`.records` (rooms, tickets, snapshots and
what the teacher sees of sessions), :mod:`.rooms` (the schema and :class:`RoomStore`),
:mod:`.repeated` (a student's ε over repeated rounds, the averaging attack simulated and run on
a room's reports linked by join code, memoization),
:mod:`.coins` (Warner's two coins), :mod:`.numbers` (a number question's mean), :mod:`.guesses`
(the class's guess beside the estimate); this module holds the limits, room codes and errors,
and re-exports every public name.

Room codes: :data:`CODE_LENGTH` characters drawn by :mod:`secrets` from :data:`CODE_ALPHABET` (no
0/O, 1/I/L), :data:`CODE_BITS` ≈ 39.6 bits: guessing one of 100 open rooms at 100 tries a second
for a whole day succeeds with probability ≈ 10⁻³. Enough against a curious classmate, not a secret.

References: [WBLJ17] Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
estimation", USENIX Security 2017; [ASZ19] Acharya, Sun, Zhang, "Hadamard response", AISTATS 2019.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from dpcore import mechanisms
from dpcore.interfaces.store import DATABASE_NAME, FOLDER_VARIABLE, Database, default_folder

#: Re-exported from :mod:`dpcore.interfaces.store`: where the rooms live.
__all__ = ["DATABASE_NAME", "FOLDER_VARIABLE", "default_folder"]

#: Largest question, "none of these" included: a phone shows every cell, OUE sends a bit per cell.
MAX_CELLS = 50
#: Label of the extra cell every question has, for a commute the teacher did not list.
NONE_OF_THESE = "None of these (a commute not listed)"
#: Private reports a room accepts over all its rounds: a 1,000-seat lecture hall's two rounds
#: (a memoized repeat), or one round of 2,000. One round may take them all, so every estimate and
#: exact interval on the teacher's screen was measured at 2,000 reports (under 0.1 s cold,
#: bench/bench_classroom_intervals.py; docs/CLASSROOM.md, "A lecture hall").
MAX_REPORTS = 2000
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



# The rooms, after the limits and errors they import from here.
from dpcore.interfaces.classroom.questions import (  # noqa: E402
    Question,
    default_zones,
    zone_choices,
)
from dpcore.interfaces.classroom.reports import (  # noqa: E402
    MAX_MESSAGE_DEPTH,
    Round,
    check_message,
    check_plausible,
    client_spec,
    message_depth,
    parse_report,
    plausible_ones,
    stack_reports,
    support_size_law,
)
from dpcore.interfaces.classroom.records import (  # noqa: E402
    AddressGroup,
    RateLimit,
    Room,
    SessionSummary,
    Snapshot,
    Ticket,
    issue_seed,
    session_hash,
)
from dpcore.interfaces.classroom.rooms import SCHEMA, RoomStore  # noqa: E402
from dpcore.interfaces.classroom_admission import DEFAULT_CAP  # noqa: E402
