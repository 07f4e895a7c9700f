"""Shared fixtures: a seed from DPCORE_TEST_SEED (default fixed) and a seeded generator."""

import os

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("DPCORE_TEST_SEED", "20261122"))


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)
