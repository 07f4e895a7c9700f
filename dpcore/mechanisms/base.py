"""The one contract every mechanism follows, and the parameter declarations it is validated against.

A mechanism is immutable once built (``Mechanism(epsilon=1.0, ...)``). It offers

* ``release(counts, rng)`` — the fast path: the estimated counts the curator (central) or the
  server (local) would publish, drawn directly from their distribution over the dense domain;
* ``simulate(items, d, rng)`` — the protocol as it would really run, one report per person
  (for central mechanisms: count, then add noise);
* ``variance(counts, n=None, d=None)`` — the theoretical per-cell variance of the raw estimate
  (commuters²), a function of each cell's count and the table's n and d only (see
  :func:`table_size`);
* ``bits_per_user(d)`` — communication per person (local mechanisms);
* ``explain()`` — a short plain-language description with its formulas (markdown + LaTeX).

Local mechanisms split ``simulate`` into the client's ``perturb`` and the server's additive
``accumulate`` and final ``estimate``, so that millions of users can be processed in chunks and a
single commuter's report can be shown on the Learn page.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

CENTRAL, LOCAL, SHUFFLED = "central", "local", "shuffled"
#: Today's disclosure control (suppression, rounding, cell-key perturbation): not differentially
#: private, run beside the mechanisms for comparison.
BASELINE = "baseline"
#: The guarantee text of a baseline, wherever one is shown.
NOT_DP = "not DP"
SUBSTITUTION, ADD_REMOVE = "substitution", "add_remove"

#: Users per chunk in per-user simulation: bounds memory (reports for d = 1,085 UE are
#: chunk × d booleans, 65 MB at this size).
SIMULATION_CHUNK = 1 << 16


def table_size(counts: np.ndarray, n: float | None = None, d: int | None = None
               ) -> tuple[float, int]:
    """(n, d) of the table that ``counts`` belong to, for a closed-form variance.

    Every per-cell variance here is a function of (c_v, n, d) and the settings alone, so a caller
    holding only some cells — the planner's distinct counts, each standing for many cells — gives
    the table's n and d; by default ``counts`` is the whole domain (n = its sum, d = its length).
    """
    return (float(np.sum(counts)) if n is None else float(n),
            len(counts) if d is None else int(d))


#: The count vector :func:`occupied_cells` saw last (a weak reference) and its answer; dropped
#: with the vector, so no data outlives the run (or the session) it belongs to.
_OCCUPIED: tuple = (lambda: None, None)


def _forget_occupied(source: weakref.ref) -> None:
    global _OCCUPIED
    if _OCCUPIED[0] is source:
        _OCCUPIED = (lambda: None, None)


def occupied_cells(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-zero cells of a flat count vector (flat indices, ascending) and their counts.

    Most cells of an OD domain are empty, so releases and metrics work on these; finding them is
    a pass over the whole domain (20 ms at ED level). A sweep releases and scores one truth many
    times, so the answer for a read-only vector that owns its data — which cannot change — is
    kept for the next call; both arrays returned are then read-only.
    """
    global _OCCUPIED
    source, answer = _OCCUPIED
    if source() is counts:
        return answer
    cells = np.flatnonzero(counts)
    values = counts[cells]
    if isinstance(counts, np.ndarray) and not counts.flags.writeable and counts.flags.owndata:
        cells.flags.writeable = values.flags.writeable = False
        _OCCUPIED = (weakref.ref(counts, _forget_occupied), (cells, values))
    return cells, values


@dataclass(frozen=True)
class Param:
    """A declared mechanism parameter: its range (or choices), default and help text.

    ``low``/``high`` are inclusive unless ``low_open``/``high_open``; ``choices`` restricts to a set.
    ``why`` says why the range is what it is; it ends the message for a value outside it.
    """

    name: str
    label: str
    default: Any
    kind: type = float
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    help: str = ""
    why: str = ""

    def check(self, value, owner: str, subject: str | None = None):
        """Return the cleaned value or raise ValueError/TypeError naming parameter, range and value.

        The message starts "The 'name' parameter of <owner>", or ``subject`` (e.g. ``--trials``).
        """
        who = subject or f"The '{self.name}' parameter of {owner}"
        if self.choices is not None:
            if not any(_same_type(value, choice) for choice in self.choices):
                raise TypeError(f"{who} must be one of "
                                f"{self.interval()}. Got {value!r} ({type(value).__name__}) "
                                f"instead.")
            if value not in self.choices:
                raise ValueError(f"{who} must be one of "
                                 f"{self.interval()}. Got {value!r} instead.")
            return self.choices[self.choices.index(value)]   # 2.0 or np.int64(2) → the choice 2
        if not _is_number(value):
            raise TypeError(f"{who} must be a number. "
                            f"Got {value!r} instead.")
        if not np.isfinite(value):
            raise ValueError(f"{who} must be a finite number in "
                             f"{self.interval()}. Got {value!r} instead.")
        if self.kind is int and float(value) != int(value):
            raise ValueError(f"{who} must be a whole number in "
                             f"{self.interval()}. Got {value!r} instead.")
        value = self.kind(value)
        if not self.contains(value):
            raise ValueError(f"{who} must be in "
                             f"{self.interval()}. Got {value!r} instead." +
                             (f" {self.why}" if self.why else ""))
        return value

    def contains(self, value: float) -> bool:
        """True when the number lies in the declared range."""
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open
                                              else value > self.high)
        return not (too_low or too_high)

    def interval(self) -> str:
        """The valid range in interval notation, e.g. ``[1e-06, 20]``."""
        if self.choices is not None:
            return "{" + ", ".join(map(str, self.choices)) + "}"
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        low = "-inf" if self.low is None else self._number(self.low)
        high = "inf" if self.high is None else self._number(self.high)
        return f"{left}{low}, {high}{right}"


    def _number(self, bound: float) -> str:
        """A bound as text: whole numbers in full (a seed's 9007199254740991), others short."""
        return str(int(bound)) if self.kind is int else f"{bound:g}"


def _is_number(value) -> bool:
    """A real number, and not a bool (``True`` is an int to Python, never a setting here)."""
    return (not isinstance(value, (bool, np.bool_))
            and isinstance(value, (int, float, np.integer, np.floating)))


def _same_type(value, choice) -> bool:
    """Whether ``value`` is of the kind of ``choice``: both strings, or both numbers."""
    if isinstance(choice, str):
        return isinstance(value, str)
    return _is_number(value) and _is_number(choice)


#: The smallest ε supported. Below about 1e-16, e^ε rounds to exactly 1 in floating point and the
#: local mechanisms divide by e^ε − 1 = 0; well before that, e^ε − 1 loses its precision (relative
#: error ≈ 2.2e-16/ε, so 2e-10 at ε = 1e-6). At 1e-6 every registered mechanism's release and
#: variance are finite for n up to 1e9 (tests/mechanisms/test_epsilon_range.py), and the noise
#: already dwarfs any count (central Laplace: standard deviation 2.8 million commuters per cell).
EPSILON_MIN = 1e-6
EPSILON = Param("epsilon", "ε (privacy budget)", 1.0, float, low=EPSILON_MIN, high=20.0,
                help="Natural-log privacy loss bound; smaller is more private.",
                why=f"Below {EPSILON_MIN:g}, e^ε − 1 cannot be computed accurately in floating "
                    "point (the local estimators divide by it) and the noise is millions of "
                    "commuters per cell, so no release would be meaningful.")
#: What δ is, for help texts (dpcore.theory.learn.delta_meaning computes the Gaussian's case).
DELTA_MEANING = ("The slack of the guarantee: any outcome may become e^ε times likelier, plus δ. "
                 "Not the chance that the ε bound fails (for the Gaussian the privacy loss "
                 "exceeds ε more often than δ).")
DELTA = Param("delta", "δ", 1e-6, float, low=1e-15, high=0.5,
              help=DELTA_MEANING + " Keep it well below 1/n.",
              why="δ is the additive slack of the privacy profile: a mechanism that publishes the "
                  "whole table with probability δ is (0, δ)-DP, so at 0.5 or more a coin flip "
                  "could publish every record, and a useful δ is far below 1/n; 1e-15 is already "
                  "below 1/n for any population on Earth.")
NEIGHBOURS = Param("neighbours", "Neighbouring datasets", SUBSTITUTION, str,
                   choices=(SUBSTITUTION, ADD_REMOVE),
                   help="Substitution: one person's commute changes (L1 sensitivity 2, as in the "
                        "thesis). Add/remove: one person joins or leaves (sensitivity 1).")


class Mechanism(ABC):
    """Base of every mechanism. Subclasses declare class attributes and implement the methods."""

    key: ClassVar[str]
    name: ClassVar[str]
    model: ClassVar[str]  # CENTRAL, LOCAL, SHUFFLED or BASELINE
    uses_delta: ClassVar[bool] = False
    #: False for the baselines: ε is accepted (every release is built with one) but ignored.
    uses_epsilon: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = (EPSILON,)
    #: None when ``release`` is exact in distribution; otherwise a sentence saying what is not.
    approximation: ClassVar[str | None] = None
    #: None, or what the guarantee does not promise, in plain words: shown wherever the
    #: mechanism is picked (a guarantee other than DP's, totals published exactly).
    caveat: ClassVar[str | None] = None
    references: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values):
        known = {p.name: p for p in self.params}
        unknown = set(values) - set(known)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown parameter(s) "
                            f"{sorted(unknown)}; valid: {sorted(known)}")
        for name, param in known.items():
            setattr(self, name, param.check(values.get(name, param.default), type(self).__name__))

    # -------------------------------------------------------------------------------- description
    @property
    def guarantee(self) -> str:
        """Human-readable privacy guarantee, e.g. ``ε-LDP`` or ``(ε, δ)-DP``."""
        if self.model == BASELINE:
            return NOT_DP
        if self.model == LOCAL:
            return "ε-LDP"
        return "(ε, δ)-DP" if self.uses_delta else "ε-DP"

    @property
    def settings(self) -> dict:
        """The parameter values this instance was built with."""
        return {p.name: getattr(self, p.name) for p in self.params}

    def describe(self) -> str:
        """One line for the command line and captions."""
        values = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in self.settings.items())
        return f"{self.name} [{self.key}] ({self.model}, {self.guarantee}): {values}"

    @abstractmethod
    def explain(self) -> str:
        """Plain-language explanation with formulas (markdown, LaTeX between $…$)."""

    # ------------------------------------------------------------------------------------ contract
    @abstractmethod
    def release(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Estimated counts over the dense domain (float64, same length as ``counts``)."""

    @abstractmethod
    def simulate(self, items: np.ndarray, d: int, rng: np.random.Generator) -> np.ndarray:
        """Run the real protocol on one cell index per person; return the estimated counts."""

    def variance(self, counts: np.ndarray, n: float | None = None, d: int | None = None
                 ) -> np.ndarray | None:
        """Theoretical per-cell variance of the raw estimate (commuters²) of cells holding
        ``counts`` in a table of n people and d cells (:func:`table_size`; default: ``counts`` is
        the whole table); None if there is no closed form."""
        return None

    def bits_per_user(self, d: int) -> float | None:
        """Bits each person sends (None for central mechanisms, where people send their data)."""
        return None


class CentralMechanism(Mechanism):
    """A trusted curator counts exactly, then randomises the counts."""

    model = CENTRAL

    def simulate(self, items, d, rng):
        counts = np.bincount(np.asarray(items, dtype=np.int64), minlength=d)
        return self.release(counts, rng)


class LocalMechanism(Mechanism):
    """Every person randomises on their own device; the server only sees reports.

    Subclasses implement ``perturb`` (client), ``accumulate`` (server, additive over users) and
    ``estimate`` (server, from the accumulated statistic). ``simulate`` runs them in chunks.
    """

    model = LOCAL

    @abstractmethod
    def perturb(self, items: np.ndarray, d: int, rng: np.random.Generator) -> dict:
        """Client side: the reports of the given users (a dict of arrays, one row per user)."""

    @abstractmethod
    def accumulate(self, reports: dict, d: int) -> np.ndarray:
        """Server side: this batch's contribution to the additive sufficient statistic."""

    @abstractmethod
    def estimate(self, statistic: np.ndarray, n: int, d: int) -> np.ndarray:
        """Server side: unbiased count estimates from the accumulated statistic."""

    def simulate(self, items, d, rng, chunk: int = SIMULATION_CHUNK):
        items = np.asarray(items, dtype=np.int64)
        statistic = None
        for start in range(0, max(len(items), 1), chunk):
            part = self.accumulate(self.perturb(items[start:start + chunk], d, rng), d)
            statistic = part if statistic is None else statistic + part
        return self.estimate(statistic, len(items), d)
