"""Before and after: the class guesses first, then compares its guess, the private estimate and
the truth (where the teacher knows it), for a round that estimates one number — a coins round's
share of "yes" or a number round's average.

The guess is the class's, agreed aloud before anyone answers; the teacher types it, and it is
taken only while the round has no report, so it cannot lean on the estimate. The truth, when the
teacher has it (a show of hands after the lesson, a register), may be typed at any time.

Table::

    guesses(room, round, guess REAL, truth REAL, PRIMARY KEY (room, round))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.interfaces.classroom import ClassroomError

SCHEMA = """
CREATE TABLE IF NOT EXISTS guesses(room TEXT NOT NULL, round INTEGER NOT NULL, guess REAL,
    truth REAL, PRIMARY KEY (room, round));
"""
#: What the teacher may type: the class's guess, or the truth.
FIELDS = ("guess", "truth")


def check_value(value, largest: float, what: str) -> float:
    """``value`` as a number in [0, largest], or ClassroomError naming ``what``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ClassroomError(f"The {what} must be a number; got {value!r:.40}.") from None
    if not math.isfinite(number) or not 0 <= number <= largest:
        raise ClassroomError(f"The {what} must be between 0 and {largest:g}.")
    return number


def record(db, code: str, number: int, field: str, value: float, reports: int) -> None:
    """Store the round's guess (refused once it has a report: a guess comes first) or truth."""
    if field not in FIELDS:
        raise ClassroomError(f"Unknown field {field!r}; one of {', '.join(FIELDS)}.")
    if field == "guess" and reports:
        raise ClassroomError("The guess comes first: this round already has reports. Ask for "
                             "the guess before the next round.")
    db.execute(f"INSERT INTO guesses(room, round, {field}) VALUES (?,?,?) "
               f"ON CONFLICT(room, round) DO UPDATE SET {field}=excluded.{field}",
               (code, number, value))


def read(db, code: str, number: int) -> tuple[float | None, float | None]:
    row = db.execute("SELECT guess, truth FROM guesses WHERE room=? AND round=?",
                     (code, number)).fetchone()
    return (None, None) if row is None else (row[0], row[1])


@dataclass(frozen=True)
class Comparison:
    """The guess, the estimate with its interval, and the truth of one round, on one scale."""

    guess: float | None
    estimate: float
    low: float
    high: float
    truth: float | None

    @property
    def covered(self) -> bool | None:
        """Whether the truth is inside the estimate's interval (None without a truth)."""
        return None if self.truth is None else self.low <= self.truth <= self.high

    def closer(self) -> str | None:
        """"estimate", "guess" or "tie": which is nearer the truth (None without both)."""
        if self.truth is None or self.guess is None:
            return None
        off_estimate, off_guess = abs(self.estimate - self.truth), abs(self.guess - self.truth)
        return "tie" if off_estimate == off_guess else (
            "estimate" if off_estimate < off_guess else "guess")
