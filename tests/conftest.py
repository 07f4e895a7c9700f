"""Shared fixtures: a seed from DPCORE_TEST_SEED (default fixed), a seeded generator, and seeded
global generators for pure-LDP, which draws from ``random`` and ``numpy.random``."""

import os
import random

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("DPCORE_TEST_SEED", "20261122"))


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture
def seeded_globals(seed):
    """pure-LDP uses the global generators: seed them for this test only."""
    py_state, np_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    yield
    random.setstate(py_state)
    np.random.set_state(np_state)
