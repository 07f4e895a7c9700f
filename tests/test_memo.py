"""The per-session memo of results on an upload is bounded in entries and in bytes (issue 11)."""

import threading

import numpy as np
import pandas as pd

from dpcore import release
from dpcore.data import datasets
from ui.components import budget, runs
from ui.components.memo import BoundedMemo, nbytes

MB = 10 ** 6


def vector(megabytes: int) -> np.ndarray:
    return np.zeros(megabytes * MB // 8)


def test_nbytes_counts_arrays_frames_and_nested_results_once():
    a = vector(2)
    assert nbytes(a) == 2 * MB
    assert nbytes({"x": a, "y": (a, [a])}) == 2 * MB + nbytes("x") + nbytes("y")  # a once
    frame = pd.DataFrame({"v": np.arange(1000, dtype=float)})
    assert nbytes(frame) >= 8000
    od = datasets.load("toy_town")
    arrays = od.rows.nbytes + od.cols.nbytes + od.counts.nbytes
    assert nbytes(od) >= arrays
    result = release.attempt(od, release.ReleaseSpec("laplace", 1.0), true_counts=od.to_dense())
    assert nbytes(result) >= result.raw.nbytes + result.released.nbytes


def test_oldest_entries_go_first_when_the_bytes_exceed_the_bound():
    memo = BoundedMemo(entries=16, max_bytes=10 * MB)
    for name in "abcd":
        memo.get_or_compute(name, lambda: vector(3))
    assert list(memo) == ["b", "c", "d"] and memo.total_bytes == 9 * MB
    memo.get_or_compute("b", lambda: vector(3))  # a hit: "b" becomes the newest
    memo.get_or_compute("e", lambda: vector(3))
    assert list(memo) == ["d", "b", "e"]
    assert memo.total_bytes <= 10 * MB


def test_the_entry_bound_still_holds_and_a_value_larger_than_the_bound_is_not_kept():
    memo = BoundedMemo(entries=2, max_bytes=10 * MB)
    for name in "abc":
        memo.get_or_compute(name, lambda: vector(1))
    assert list(memo) == ["b", "c"]
    calls = []
    big = memo.get_or_compute("big", lambda: calls.append(1) or vector(11))
    assert big.nbytes == 11 * MB and "big" not in memo and list(memo) == ["b", "c"]
    memo.get_or_compute("big", lambda: calls.append(1) or vector(11))
    assert len(calls) == 2  # computed again: it was never kept


def test_the_session_memo_uses_the_budget_stated_in_ui_budget():
    assert runs.SESSION_MEMO_BYTES == budget.SESSION_MEMO_BYTES
    # Explore's six default mechanisms on the largest bundled size of upload keep the view, its
    # dense counts and six releases between reruns: the bound must hold them, or every rerun
    # would recompute them.
    assert 8 * budget.LARGEST_BUNDLED_VECTOR <= budget.SESSION_MEMO_BYTES


# ------------------------------------------------------------------ single flight (issue 32)
SESSIONS = 8
WAIT = 10  # seconds: a thread still blocked after this has deadlocked


def _at_once(memo, key, compute, sessions=SESSIONS):
    """``memo.get_or_compute(key, compute)`` from ``sessions`` threads started together; each
    thread's value or exception, in thread order."""
    start, out = threading.Barrier(sessions), [None] * sessions

    def ask(i):
        start.wait()
        try:
            out[i] = memo.get_or_compute(key, compute)
        except BaseException as error:  # noqa: BLE001 - the test inspects what each thread got
            out[i] = error

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a request is still waiting: deadlock"
    return out


def _slow(calls, result, go: threading.Event):
    """A computation that counts its calls and lasts until ``go`` is set, so every thread
    asks while the first is still computing."""
    def compute():
        calls.append(threading.get_ident())
        assert go.wait(WAIT)
        if isinstance(result, BaseException):
            raise result
        return result
    return compute


def _go_later(go: threading.Event, seconds: float = 0.3) -> None:
    threading.Timer(seconds, go.set).start()


def test_concurrent_identical_requests_compute_once_and_share_the_value():
    memo, calls, go = BoundedMemo(entries=4, max_bytes=10 * MB), [], threading.Event()
    value = vector(1)
    _go_later(go)
    out = _at_once(memo, "ed/hm/ε=1", _slow(calls, value, go))
    assert len(calls) == 1
    assert all(result is value for result in out)
    assert memo.get("ed/hm/ε=1") is value


def test_an_error_reaches_every_waiter_and_is_not_kept():
    memo, calls, go = BoundedMemo(entries=4), [], threading.Event()
    error = ValueError("ε out of range")
    _go_later(go)
    out = _at_once(memo, "bad", _slow(calls, error, go))
    assert len(calls) == 1
    assert all(result is error for result in out)
    assert "bad" not in memo
    assert memo.get_or_compute("bad", lambda: 3) == 3  # a later request computes afresh


class _Stopped(BaseException):
    """Like Streamlit's StopException: the first session's script was stopped mid-computation."""


def test_an_interrupted_first_request_lets_one_waiter_compute_for_the_others():
    memo, calls, go = BoundedMemo(entries=4), [], threading.Event()
    first = []

    def compute():
        calls.append(1)
        if len(calls) == 1:
            first.append(threading.get_ident())
            assert go.wait(WAIT)
            raise _Stopped()
        return "value"

    _go_later(go)
    out = _at_once(memo, "key", compute)
    assert len(calls) == 2   # the interrupted attempt and one retry, not one per waiter
    assert sum(isinstance(result, _Stopped) for result in out) == 1
    assert out.count("value") == SESSIONS - 1


def test_a_recursive_request_for_the_same_key_does_not_wait_for_itself():
    memo = BoundedMemo(entries=4)
    finished = []

    def run():
        finished.append(memo.get_or_compute("k", lambda: memo.get_or_compute("k", lambda: 5)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive() and finished == [5]


def test_different_keys_compute_at_the_same_time():
    memo = BoundedMemo(entries=4)
    a_started, b_started = threading.Event(), threading.Event()

    def compute_a():
        a_started.set()
        return b_started.wait(WAIT)   # True only if b computes while a is still computing

    def compute_b():
        b_started.set()
        return a_started.wait(WAIT)

    results = {}
    threads = [threading.Thread(target=lambda: results.update(a=memo.get_or_compute("a",
                                                                                     compute_a))),
               threading.Thread(target=lambda: results.update(b=memo.get_or_compute("b",
                                                                                     compute_b)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT)
    assert results == {"a": True, "b": True}
