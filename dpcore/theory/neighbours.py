"""Who is protected: add/remove (membership) vs substitution (edit) neighbours, on one table.

Source: the textbook chapter in the seeds (003, "Membership neighbourhood" and "Edit
neighbourhood"): an edit is a removal followed by an addition, so edit neighbours are
membership 2-neighbours, and ε-DP for membership implies 2ε-DP for edits (group privacy of two).
The converse fails: a release that publishes the total number of commuters exactly is 0-DP under
substitution (the total never changes) but not DP at all under add/remove.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.theory import learn

RELATIONS = ("add_remove", "substitution")


def histogram_l1_sensitivity(relation: str) -> int:
    """L1 distance between the count tables of two neighbours: one cell ±1 (add/remove) or one
    cell −1 and another +1 (substitution)."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}; got {relation!r}.")
    return 1 if relation == "add_remove" else 2


@dataclass(frozen=True)
class Neighbours:
    """The table ``od`` and its two kinds of neighbour through one commuter of ``cell``."""

    counts: np.ndarray         # the commuter's origin row
    removed: np.ndarray        # add/remove neighbour: the commuter left out
    moved: np.ndarray          # substitution neighbour: the commuter's destination changed
    destination: int
    other: int

    def l1(self, neighbour: np.ndarray) -> int:
        return int(np.abs(neighbour - self.counts).sum())


def neighbour_rows(od: ODMatrix, origin: int, destination: int, other: int) -> Neighbours:
    """One commuter from ``origin`` to ``destination``: their origin row, the row without them,
    and the row with their destination changed to ``other``."""
    if destination == other:
        raise ValueError("The changed destination must differ from the true one.")
    row = learn.origin_row(od, origin)
    if row[destination] < 1:
        raise ValueError("Nobody makes that commute, so nobody can be removed from it.")
    removed, moved = row.copy(), row.copy()
    removed[destination] -= 1
    moved[destination] -= 1
    moved[other] += 1
    return Neighbours(row, removed, moved, destination, other)


def guarantees(epsilon: float) -> list[dict]:
    """For three releases of the table, the ε each gives to the membership question (is this
    person in the table?) and to the edit question (which commute is theirs?); ∞: no guarantee.

    * Laplace calibrated for add/remove at ε (scale 1/ε): membership ε, edit 2ε;
    * Laplace calibrated for substitution at ε (scale 2/ε): edit ε and, since removing a person
      moves the table by L1 1, membership ε/2 — a property of this Laplace release, not of every
      substitution-DP release;
    * the exact total n beside a substitution ε-DP table: edit ε, membership ∞.
    """
    return [
        {"release": "Laplace for add/remove (scale 1/ε)", "scale": 1 / epsilon,
         "membership": epsilon, "edit": 2 * epsilon},
        {"release": "Laplace for substitution (scale 2/ε)", "scale": 2 / epsilon,
         "membership": epsilon / 2, "edit": epsilon},
        {"release": "Substitution ε-DP table + exact total", "scale": 2 / epsilon,
         "membership": math.inf, "edit": epsilon},
    ]
