"""A memo bounded in entries and in bytes, evicting the least recently used entry first.

One session's results on its upload are memoised here (:func:`ui.components.runs.session_memo`), never in a
cache shared by sessions. An entry count alone does not bound memory: sixteen entries of an upload
near the import limit (50 million cells, 400 MB a dense vector) would hold 6 GB. So every entry's
size is measured when it is stored (:func:`nbytes`), and the oldest entries are dropped until the
total fits the byte bound (``ui.components.budget.SESSION_MEMO_BYTES``). A value larger than the bound on its
own is returned but not kept. The sweeps' stores of finished jobs (:func:`ui.components.runs.job_store`) are
the same class, bounded in entries only (each job is a small table of metrics).

:meth:`BoundedMemo.get_or_compute` is single-flight: the first request for a key computes it and
concurrent requests for the same key wait for that result instead of computing it again (five
sessions at the same ε once drew 108 releases for 24 distinct settings). An error raised by the
computation reaches every waiter; an interruption of the first request (Streamlit stopping its
script) lets one waiter compute instead.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import pandas as pd


def nbytes(value) -> int:
    """Bytes held by ``value``: its NumPy arrays, pandas frames and strings, found through
    dataclass fields, attributes, mappings and sequences (each object counted once)."""
    seen: set[int] = set()

    def walk(item) -> int:
        if item is None or isinstance(item, (bool, int, float, complex)) or id(item) in seen:
            return 0
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            own = item.nbytes  # a view counts as a copy: an overestimate, on the safe side
            if item.dtype == object:
                own += sum(walk(element) for element in item.ravel())
            return own
        if isinstance(item, (pd.DataFrame, pd.Series, pd.Index)):
            return _pandas_bytes(item)
        if isinstance(item, (str, bytes)):
            return sys.getsizeof(item)
        if isinstance(item, Mapping):
            return sum(walk(k) + walk(v) for k, v in item.items())
        if isinstance(item, (list, tuple, set, frozenset)):
            return sum(walk(element) for element in item)
        fields = getattr(item, "__dict__", None)
        slots = [getattr(item, name) for cls in type(item).__mro__
                 for name in getattr(cls, "__slots__", ()) if hasattr(item, name)]
        return (walk(dict(fields)) if fields else 0) + sum(walk(slot) for slot in slots)

    return walk(value)


#: Strings of an object column sized per frame (``memory_usage(deep=True)`` sizes every one:
#: 1 ms a frame, 12 frames a county rerun); the column's size is their mean times its length.
SAMPLED_STRINGS = 64


def _pandas_bytes(item) -> int:
    """Bytes of a pandas object: its arrays exactly (``nbytes``, as ``memory_usage`` adds them,
    without building its Series: 0.8 ms a frame), its object columns (labels) from the mean size
    of up to :data:`SAMPLED_STRINGS` evenly spaced values (exact when they are alike)."""
    if isinstance(item, pd.Index):
        columns, index = [item], None
    elif isinstance(item, pd.Series):
        columns, index = [item], item.index
    else:
        columns, index = [values for _, values in item.items()], item.index
    total = int(index.nbytes) if index is not None else 0
    for values in columns:
        array = values.array if not isinstance(values, pd.Index) else values.values
        total += int(array.nbytes)
        if values.dtype == object and len(values):
            step = max(1, len(values) // SAMPLED_STRINGS)
            sample = np.asarray(values)[::step][:SAMPLED_STRINGS]
            total += int(len(values) * np.mean([sys.getsizeof(v) for v in sample]))
    return total


class _Flight:
    """One computation in progress: its waiters block on ``done`` and then read the outcome."""

    def __init__(self):
        self.done = threading.Event()
        self.owner = threading.get_ident()
        self.value = self.error = None
        self.abandoned = False


class BoundedMemo:
    """Least recently used first out, at most ``entries`` entries and (unless ``max_bytes`` is
    None) ``max_bytes`` bytes. Thread-safe: a store shared by sessions is read and written from
    their script threads at once."""

    def __init__(self, entries: int, max_bytes: int | None = None):
        self.entries, self.max_bytes = entries, max_bytes
        self._values: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._flights: dict = {}
        self._lock = threading.Lock()

    @property
    def total_bytes(self) -> int:
        return sum(self._sizes.values())

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self):
        return iter(list(self._values))

    def get(self, key):
        """The value stored under ``key`` (now the most recently used), else None."""
        with self._lock:
            if key not in self._values:
                return None
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key, value) -> None:
        """Store ``value`` if it fits on its own, dropping the oldest entries until all fit."""
        size = 0 if self.max_bytes is None else nbytes(value)
        if self.max_bytes is not None and size > self.max_bytes:
            return
        with self._lock:
            self._values[key], self._sizes[key] = value, size
            self._values.move_to_end(key)
            while len(self._values) > self.entries or (self.max_bytes is not None and
                                                        self.total_bytes > self.max_bytes):
                oldest, _ = self._values.popitem(last=False)
                del self._sizes[oldest]

    def get_or_compute(self, key, compute):
        """The value stored under ``key``, else ``compute()`` (stored if it fits), computed once
        for concurrent identical requests: the others wait for it and get the same value, or the
        same exception. A thread asking again for a key it is computing (a recursion) computes
        it itself rather than wait for itself."""
        while True:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
                flight = self._flights.get(key)
                if flight is None:
                    own = self._flights[key] = _Flight()
                    break
                if flight.owner == threading.get_ident():
                    own = None
                    break
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            if not flight.abandoned:
                return flight.value
            # the first request was interrupted: look again, and compute if nobody else does
        try:
            value = compute()
        except Exception as error:
            if own is not None:
                own.error = error
            raise
        except BaseException:
            if own is not None:
                own.abandoned = True
            raise
        else:
            self.put(key, value)
            if own is not None:
                own.value = value
            return value
        finally:
            if own is not None:
                with self._lock:
                    del self._flights[key]
                own.done.set()
