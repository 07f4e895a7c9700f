"""The memory budget (ui/components/budget.py): caches bounded in bytes, the per-session guard's arithmetic
and message, and the Explore page stopping with that message instead of running out of memory."""

import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import datasets
from ui.components import budget
from ui.components.controls import DEFAULT_MECHANISMS

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "2_Explore.py")
GB = 10 ** 9


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the page as ``sys.modules["__main__"]``: put the real one back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def test_the_largest_bundled_domain_is_the_one_the_caches_are_sized_for():
    assert budget.LARGEST_BUNDLED_CELLS == max(datasets.load(key).domain_size
                                               for key in datasets.DATASETS)


def test_caches_are_bounded_in_bytes():
    largest = budget.LARGEST_BUNDLED_VECTOR
    assert budget.RELEASE_CACHE_ENTRIES * largest <= budget.RELEASE_CACHE_BYTES
    assert budget.DENSE_CACHE_ENTRIES * largest <= budget.DENSE_CACHE_BYTES


def test_ten_ed_sessions_with_explores_defaults_fit_in_16_gb():
    ed = budget.LARGEST_BUNDLED_CELLS
    assert budget.dense_work_problem(ed, len(DEFAULT_MECHANISMS)) is None
    caches = budget.RELEASE_CACHE_BYTES + budget.DENSE_CACHE_BYTES
    assert 10 * budget.SESSION_WORK_BYTES + caches < 16 * GB * 0.92  # room for the process


def test_the_guard_names_what_to_change():
    ed = budget.LARGEST_BUNDLED_CELLS
    fits = budget.most_mechanisms(ed)
    assert budget.dense_work_problem(ed, fits) is None
    message = budget.dense_work_problem(ed, fits + 1)
    assert f"pick at most {fits} mechanisms" in message and "roll up" in message
    huge = budget.dense_work_problem(50_000_000, 1)  # the largest upload allowed
    assert budget.most_mechanisms(50_000_000) == 0
    assert "pick at most" not in huge and "roll up to the parent level" in huge
    assert "50,000,000 possible commutes" in huge


def test_explore_stops_with_the_message_before_dense_work(monkeypatch):
    monkeypatch.setattr(budget, "SESSION_WORK_BYTES", 1024 * budget.MIB)
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["dataset"] = "ireland_ed"
    at.run()
    assert not at.exception, at.exception
    [warning] = [w.value for w in at.warning if "one session may use" in w.value]
    assert f"{len(DEFAULT_MECHANISMS)} mechanisms over 9,784,380 possible commutes" in warning
    assert not at.get("plotly_chart")  # nothing was released
