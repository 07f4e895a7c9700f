"""Helpers for the AppTest tests of the pages: run a page with URL and session state, read its text."""

from streamlit.testing.v1 import AppTest

from ui.components import state, viewstate
from ui.components.controls import EPSILON_TYPED, KEYS


def run_page(path: str, query: dict, dataset: str | None, session: dict,
             timeout: int = 120) -> AppTest:
    """Run the page at ``path`` with these query parameters, current dataset (None: the page's
    default) and session values; fail on an exception."""
    at = AppTest.from_file(path, default_timeout=timeout)
    for key, value in query.items():
        at.query_params[key] = value
    if dataset is not None:
        at.session_state[state.CURRENT_DATASET] = dataset
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def text(at: AppTest) -> str:
    """Every markdown element's text, one per line."""
    return "\n".join(m.value for m in at.markdown)


def open_page(path: str, timeout: int = 240, **query) -> AppTest:
    """The page at ``path`` run once with these URL parameters, checked for exceptions."""
    return run_page(path, query, None, {}, timeout)


def shown_table(element):
    """An ``st.table``'s values as a reader sees them: ``charts.wrapped_table`` escapes every cell
    and header for Markdown (backslashes, zero-width spaces), which the page renders away."""
    def shown(text):
        return text.replace("\\", "").replace("\u200b", "") if isinstance(text, str) else text
    frame = element.value
    return frame.rename(columns=shown).map(shown)


def epsilon_slider(at: AppTest):
    """The shared ε slider as drawn now (its key changes whenever the ε box moves it:
    ``viewstate.synced``)."""
    return at.select_slider(key=viewstate.current_key(at.session_state, KEYS["epsilon"].widget))


def epsilon_box(at: AppTest):
    """The shared "ε, typed" box as drawn now (its key changes whenever the slider moves it)."""
    return at.number_input(key=viewstate.current_key(at.session_state, EPSILON_TYPED))
