"""Pages read the same ranges as the command line (issue 20 point 6, issue 24 "Controls"): a link's
δ = 0.6 is named and not used (Explore used it silently; Plan & publish raised
StreamlitValueAboveMaxError), a value holding a bidirectional override is quoted escaped, and the
ε slider shows every ε the box accepts."""

import pytest

from dpcore import mechanisms
from dpcore.limits import RELEASES, SEED
from dpcore.mechanisms.base import DELTA, EPSILON
from tests.app_pages import epsilon_box, epsilon_slider, open_page
from ui.components.controls import EPSILON_STEPS, KEYS

EXPLORE = "../pages/2_Explore.py"
PLAN = "../pages/6_Plan_and_publish.py"


def notices(at) -> list[str]:
    """The link notices as read on screen (the Markdown escapes removed)."""
    return [w.value.replace("\\\\", "\0").replace("\\", "").replace("\0", "\\")
            for w in at.warning if w.value.startswith("The link's value")]


@pytest.mark.parametrize("page", [EXPLORE, PLAN])
def test_a_links_delta_outside_the_range_is_named_and_not_used(page):
    at = open_page(page, dataset="ireland_county", mech="gaussian", delta="0.6")
    (notice,) = notices(at)
    assert "delta=0.6" in notice and f"δ in {DELTA.interval()}" in notice
    assert "using 1e-06 instead" in notice
    assert at.session_state[KEYS["delta"].value] == DELTA.default
    assert at.number_input(key=KEYS["delta"].widget).value == DELTA.default
    assert at.query_params["delta"] == "1e-06"


def test_publishing_with_the_gaussian_after_a_bad_delta_link_runs():
    at = open_page(PLAN, dataset="ireland_county", mech="gaussian", delta="0.6", pp="base")
    at.selectbox(key="publish_mechanism").set_value("gaussian").run()
    assert not at.exception, at.exception
    publish_delta = at.number_input(key="publish_delta")
    assert publish_delta.value == DELTA.default
    assert (publish_delta.min, publish_delta.max) == (DELTA.low, DELTA.high)
    assert at.number_input(key="publish_epsilon").min == EPSILON.low


def test_a_bidirectional_override_in_a_link_is_quoted_escaped():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace", eps="1\u202e5.0")
    (notice,) = notices(at)
    assert "eps=1\\u202e5.0" in notice
    assert not any("\u202e" in w.value for w in at.warning)


def test_a_seed_beyond_what_a_browser_keeps_exactly_is_named():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace", seed=str(2**64))
    (notice,) = notices(at)
    assert f"seed={2**64}" in notice and f"a whole number in {SEED.interval()}" in notice
    assert at.session_state[KEYS["seed"].value] == 0


def test_the_epsilon_slider_spans_the_whole_declared_range():
    assert EPSILON_STEPS[0] == EPSILON.low and EPSILON_STEPS[-1] == EPSILON.high
    assert list(EPSILON_STEPS) == sorted(set(EPSILON_STEPS))
    assert {0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0} <= set(EPSILON_STEPS)


@pytest.mark.parametrize("typed, shown", [(15.0, 15.0), (20.0, 20.0), (1e-6, 1e-6), (0.33, 0.3),
                                          (13.0, 12.0)])
def test_typing_epsilon_moves_the_slider_to_it_or_its_nearest_step(typed, shown):
    at = open_page(EXPLORE, dataset="toy_town", mech="laplace")
    epsilon_box(at).set_value(typed).run()
    assert not at.exception, at.exception
    assert at.session_state[KEYS["epsilon"].value] == typed
    assert epsilon_slider(at).value == shown
    assert epsilon_box(at).value == typed


def test_a_tradeoffs_sweep_too_large_for_memory_is_a_message():
    """Every mechanism (21) × 30 ε × 100 trials = 63,000 releases per chart: more than one run
    holds."""
    grid = ", ".join(f"{e / 10:g}" for e in range(1, 31))
    at = open_page("../pages/3_Tradeoffs.py", dataset="toy_town", mech=mechanisms.names(),
                   grid=grid, trials="100")
    errors = [e.value for e in at.error]
    asked = len(mechanisms.names()) * 30 * 100
    assert asked > RELEASES.high
    assert any(f"This run asks for {asked:,} releases" in e and f"at most {RELEASES.high:,}" in e
               for e in errors), errors
