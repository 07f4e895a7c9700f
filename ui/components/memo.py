"""A memo bounded in entries and in bytes, evicting the least recently used entry first.

One session's results on its upload are memoised here (:func:`ui.components.runs.session_memo`), never in a
cache shared by sessions. An entry count alone does not bound memory: sixteen entries of an upload
near the import limit (50 million cells, 400 MB a dense vector) would hold 6 GB. So every entry's
size is measured when it is stored (:func:`nbytes`), and the oldest entries are dropped until the
total fits the byte bound (``ui.components.budget.SESSION_MEMO_BYTES``). A value larger than the bound on its
own is returned but not kept. The sweeps' stores of finished jobs (:func:`ui.components.runs.job_store`) are
the same class, bounded in entries only (each job is a small table of metrics).
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
            usage = item.memory_usage(deep=True)
            return int(usage.sum() if hasattr(usage, "sum") else usage)
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


class BoundedMemo:
    """Least recently used first out, at most ``entries`` entries and (unless ``max_bytes`` is
    None) ``max_bytes`` bytes. Thread-safe: a store shared by sessions is read and written from
    their script threads at once."""

    def __init__(self, entries: int, max_bytes: int | None = None):
        self.entries, self.max_bytes = entries, max_bytes
        self._values: OrderedDict = OrderedDict()
        self._sizes: dict = {}
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
        """The value stored under ``key``, else ``compute()`` (stored if it fits)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        self.put(key, value)
        return value
