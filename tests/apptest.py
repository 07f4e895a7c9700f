"""Shared helpers of the AppTest tests: keep the real ``__main__`` module (import the autouse
fixture into a page test module), and open a page with URL parameters."""

import sys

import pytest
from streamlit.testing.v1 import AppTest


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the page as ``sys.modules["__main__"]``; a later process pool (forkserver,
    spawn) would re-run that page in its workers. Put the real main module back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def open_page(path: str, timeout: int = 240, **query) -> AppTest:
    """The page at ``path`` run once with these URL parameters, checked for exceptions."""
    at = AppTest.from_file(path, default_timeout=timeout)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at
