"""An ε below the supported range never crashes a page: a link holding one is ignored, a release
asked for one (however it got into the session) is a message naming the range and why, and a
Tradeoffs grid holding one is refused with the same reason."""

import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.mechanisms.base import EPSILON
from ui.components.controls import KEYS

PAGES = Path(__file__).resolve().parent.parent / "pages"
TINY = 1e-17


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the page as ``sys.modules["__main__"]``: put the real one back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def opened(page: str, **query) -> AppTest:
    at = AppTest.from_file(str(PAGES / page), default_timeout=180)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    return at


@pytest.mark.parametrize("page", ["2_Explore.py", "4_Flow_map.py"])
def test_a_link_with_a_tiny_epsilon_falls_back_to_the_default(page):
    at = opened(page, eps=f"{TINY:g}", mech="hr", dataset="toy_town")
    assert not at.exception, at.exception
    assert at.session_state[KEYS["epsilon"].value] == EPSILON.default
    assert at.query_params["eps"] == f"{EPSILON.default:g}"


@pytest.mark.parametrize("page", ["2_Explore.py", "4_Flow_map.py"])
def test_a_release_at_a_tiny_epsilon_is_a_message(page):
    at = opened(page, mech="hr", dataset="toy_town")
    at.session_state[KEYS["epsilon"].value] = TINY
    at.run()
    assert not at.exception, at.exception
    messages = [w.value for w in at.warning]
    assert any("could not run with these settings" in m and EPSILON.interval() in m
               and EPSILON.why in m for m in messages), messages


def test_a_tradeoffs_grid_with_a_tiny_epsilon_is_refused_with_the_reason():
    at = opened("3_Tradeoffs.py", mech=["laplace", "hr"], dataset="toy_town")
    at.text_input(key="kept_widget_tradeoffs_grid").set_value(f"1, {TINY:g}").run()
    assert not at.exception, at.exception
    [error] = at.error
    assert f"ε = {TINY:g} is outside {EPSILON.interval()}" in error.value
    assert EPSILON.why in error.value
