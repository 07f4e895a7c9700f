"""Shared fixtures: a seed from DPCORE_TEST_SEED (default fixed), a seeded generator, the real
``__main__`` module restored after every test (AppTest replaces it), seeded global generators for
pure-LDP (it draws from ``random`` and ``numpy.random``), and a Dask LocalCluster."""

import os
import random
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


#: Generous: two cores shared with other work can take a while to start worker processes.
DASK_TIMEOUT = 240


@pytest.fixture(scope="module")
def dask_client():
    """A LocalCluster of 2 worker processes (one thread each) and a client to it, per module."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout=DASK_TIMEOUT) as client:
        client.wait_for_workers(2, timeout=DASK_TIMEOUT)
        yield client


@pytest.fixture
def seeded_globals(seed):
    """pure-LDP uses the global generators: seed them for this test only."""
    py_state, np_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    yield
    random.setstate(py_state)
    np.random.set_state(np_state)


# The bundled datasets, loaded once per session (read-only: tests must not modify them).
@pytest.fixture(scope="session")
def county():
    from dpcore.data import datasets
    return datasets.load("ireland_county")


@pytest.fixture(scope="session")
def ed():
    from dpcore.data import datasets
    return datasets.load("ireland_ed")


@pytest.fixture(scope="session")
def toy():
    from dpcore.data import datasets
    return datasets.load("toy_town")


@pytest.fixture(autouse=True)
def app_database(tmp_path_factory, monkeypatch):
    """The app's local database (classroom rooms, budget ledger) in a fresh folder for every
    test: no test writes to the user's cache, none sees another's publications."""
    monkeypatch.setenv("DPCORE_CLASSROOM_DIR", str(tmp_path_factory.mktemp("app-database")))
    # the ledger's key and head records: the account's state folder, apart from the database's
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("app-state")))
