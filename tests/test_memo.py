"""The per-session memo of results on an upload is bounded in entries and in bytes (issue 11)."""

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
