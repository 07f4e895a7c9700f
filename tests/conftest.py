"""Shared fixtures: a seed from DPCORE_TEST_SEED (default fixed), a seeded generator, and the
real ``__main__`` module restored after every test (AppTest replaces it)."""

import os
import sys

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("DPCORE_TEST_SEED", "20261122"))


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the page as ``sys.modules["__main__"]``: put the real one back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main
