"""Compute slots: how many reruns of one server process do their large-domain work at once.

Ten ED sessions changing ε together on two replicas (five each, on two cores) ran every rerun's
releases at once: each rerun's two threads contended with nine others for the cores and memory
bandwidth (0.89 s of CPU per change) and, admitted in no particular order, the unluckiest waited
longest (p95 6.1–6.4 s). One slot per replica, first come first served, took 0.81 s of CPU per
change and p95 5.0 s (``bench/bench_protocol_load.py --replicas 2 --sessions 10 --scenarios
ed``, quiet 2-core machine). ``scripts/serve --replicas N`` sets ``$DPCORE_COMPUTE_SLOTS`` to the
cores per replica; one process runs without a limit unless the operator sets it (a single
session's rerun keeps its two threads inside its slot).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque

from dpcore.text import plain_number

#: The environment variable holding the number of slots (unset or empty: no limit).
VARIABLE = "DPCORE_COMPUTE_SLOTS"


class FifoSlots:
    """At most ``count`` holders at once, admitted in the order they asked (a plain semaphore
    lets any waiter in: under load a late rerun overtook early ones)."""

    def __init__(self, count: int):
        if count < 1:
            raise ValueError(f"{VARIABLE} must be a whole number of at least 1, got {count}")
        self._lock, self._free, self._waiting = threading.Lock(), count, deque()

    def __enter__(self):
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return self
            turn = threading.Event()
            self._waiting.append(turn)
        turn.wait()               # the slot is handed over by the holder that leaves
        return self

    def __exit__(self, *exc):
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1


def from_environment():
    """:class:`FifoSlots` of ``$DPCORE_COMPUTE_SLOTS``, or a context that never waits."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return contextlib.nullcontext()
    try:
        count = plain_number(text, whole=True)   # "1_0" is not 10
    except ValueError:
        raise ValueError(f"{VARIABLE} must be a whole number of at least 1, got {text!r}") from None
    return FifoSlots(count)
