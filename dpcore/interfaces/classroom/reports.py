"""A round (mechanism, ε) and the reports of its phones: what a phone needs to randomise
(:func:`client_spec`), how a message is bounded before parsing (:func:`check_message`), parsed
(:func:`parse_report`), stacked for the mechanism's server code (:func:`stack_reports`) and checked
for plausibility (:func:`check_plausible`) [WBLJ17, ASZ19: see the package docstring]."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

import numpy as np

from dpcore import mechanisms
from dpcore.interfaces.classroom import FALSE_REJECTION, MAX_ROUNDS, ReportRejected
from dpcore.interfaces.classroom import numbers
from dpcore.interfaces.classroom.coins import COINS
from dpcore.interfaces.classroom.numbers import NUMBER
from dpcore.mechanisms.base import LocalMechanism
from dpcore.mechanisms.hadamard import HadamardResponse
from dpcore.mechanisms.local import GRR, HASH_PRIME, OLH, OUE


@dataclass(frozen=True)
class Round:
    room: str
    number: int
    mechanism: str
    epsilon: float
    permutation: tuple[int, ...] | None
    opened: float
    closed: float | None
    memoize: bool = False         # phones reuse their first report (classroom.repeated)
    prompt: str | None = None     # a coins or number round's question (classroom.coins, .numbers)
    bound: float | None = None    # a number round's largest answer B

    @property
    def is_open(self) -> bool:
        return self.closed is None

    @property
    def kind(self) -> tuple:
        """What the round asks and how: rounds of one kind ask the same question the same way,
        so a phone's reports in them can be linked and averaged, or memoized (the room fixes a
        commute question; a coins or number round's question is its prompt, and bound)."""
        return (self.mechanism, float(self.epsilon), self.prompt, self.bound)

    @property
    def memo_key(self) -> str:
        """The phone's storage key of this round's kind: a memoized report is kept under it."""
        return hashlib.sha256(json.dumps(self.kind).encode()).hexdigest()[:16]

    def build(self) -> LocalMechanism:
        return mechanisms.build(self.mechanism, epsilon=self.epsilon)

    @property
    def permutation_array(self) -> np.ndarray | None:
        return None if self.permutation is None else np.asarray(self.permutation, dtype=np.int64)


def client_spec(round_: Round, d: int, seed: tuple[int, int] | None = None) -> dict:
    """Everything a phone needs to randomise in this round — numbers only, derived from the
    mechanism's own ``support_probabilities``/``constants`` so the browser and the server agree.
    For OLH, ``seed`` is the hash seed (a, b) the page issued this phone (its :class:`Ticket`)."""
    spec = {"mechanism": round_.mechanism, "epsilon": round_.epsilon, "d": d,
            "round": round_.number, "memoize": round_.memoize, "memo": round_.memo_key}
    if round_.mechanism == COINS:        # two real coins: nothing to compute on the phone
        return spec | {"prompt": round_.prompt}
    if round_.mechanism == NUMBER:       # one bit, P(1) = 1/2 + (2v/B − 1)·slope
        return spec | {"prompt": round_.prompt, "bound": round_.bound,
                       "slope": numbers.slope(round_.epsilon)}
    mech = round_.build()
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
    1 ≤ a < P, 0 ≤ b < P, 0 ≤ y < g; HR ``{"y": output}`` with 0 ≤ y < K; coins and number
    rounds ``{"y": 0 or 1}``. A well-formed forged
    report cannot be told from an honest one (that is the point of local DP); it shifts the
    estimate by at most one report's worth.
    """
    if not isinstance(payload, dict):
        raise ReportRejected("The report must be an object of named fields.", "malformed")
    if round_.mechanism in (COINS, NUMBER):
        if set(payload) != {"y"}:
            raise ReportRejected(f"A {round_.mechanism} report has the field ['y']; got "
                                 f"{sorted(map(str, payload))[:6]}.", "wrong fields")
        return {"y": _whole(payload["y"], 0, 2, "yes/no answer" if round_.mechanism == COINS
                            else "bit")}
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



def _round_number(value) -> int:
    """A round number as stored (1 … 2³¹), or ReportRejected with a message (e.g. for 2**64)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportRejected(f"The round must be a whole number; got {value!r:.40}.", "malformed")
    if not 1 <= value <= MAX_ROUNDS:
        raise ReportRejected(f"Round {value!s:.24} does not exist: rounds are numbered 1 to "
                             f"{MAX_ROUNDS}. Reload the page.", "out of range")
    return value

