"""The server's garbage-collection policy: a full collection on a timer, not after every rerun.

Streamlit runs ``gc.collect()`` after every script run (``runner.postScriptGC``). It holds the
interpreter for every session at once: ≈ 66 ms per rerun at 50 sessions, 62 % of all interpreter
time (issue 32). Switching it off alone is not enough: reference cycles (an interrupted rerun's
traceback holds its frames, and their arrays) are then freed only when Python's own thresholds
fire, which count objects, not bytes — a few cycles holding 78 MB vectors never trigger them, and
a server kept in use grew to 1.2 GB. So ``.streamlit/config.toml`` sets ``postScriptGC = false``
and :func:`start` runs one full collection every :data:`INTERVAL_SECONDS` in a daemon thread:
garbage in cycles lives at most that long, and the collector costs one pass per interval
whatever the number of sessions. Generations 0 and 1 keep Python's automatic thresholds (cheap:
they scan only young objects). ``bench/bench_soak.py`` measures the memory this keeps.
"""

from __future__ import annotations

import gc
import threading

#: Seconds between two full collections (one costs up to ~0.1 s with 50 sessions' objects).
INTERVAL_SECONDS = 5.0

_started = threading.Event()
_lock = threading.Lock()


def collect_forever(interval: float, stop: threading.Event) -> None:
    """A full collection every ``interval`` seconds until ``stop`` is set."""
    while not stop.wait(interval):
        gc.collect(2)


def start(interval: float = INTERVAL_SECONDS) -> bool:
    """Start the timed collector once per process (later calls do nothing); True if this call
    started it."""
    with _lock:
        if _started.is_set():
            return False
        _started.set()
    threading.Thread(target=collect_forever, args=(interval, threading.Event()),
                     name="timed-gc", daemon=True).start()
    return True
