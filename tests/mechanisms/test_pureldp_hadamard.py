"""Cross-check against pure-LDP 1.2 (a test-only dependency, see requirements-test.txt): its
Hadamard response and Hadamard mechanism, run person by person with its own clients and servers,
produce estimates with the same distribution as ours (recipe E of MECHANISMS.md §10: per-cell means
and variances, plus sums of cells for the joint law).

pure-LDP draws from the global ``random`` and ``numpy.random`` states; the fixture seeds them and
restores them afterwards. Its estimates are read raw (``estimate``), never normalised.
"""

import random

import numpy as np
import pytest
from pure_ldp.frequency_oracles.hadamard_mechanism import (
    HadamardMechClient,
    HadamardMechServer,
)
from pure_ldp.frequency_oracles.hadamard_response import (
    HadamardResponseClient,
    HadamardResponseServer,
)

from dpcore.mechanisms.hadamard import HadamardMechanism, HadamardResponse
from tests.mechanisms.stat_checks import assert_same_distribution

COUNTS = np.array([0, 120, 30, 30, 5, 115])     # n = 300 people, d = 6 cells
ITEMS = np.repeat(np.arange(len(COUNTS)), COUNTS)
PEER_RUNS, OUR_RUNS = 500, 2000

# pure-LDP passes floats to random.randint (deprecated since Python 3.10) once per report.
pytestmark = pytest.mark.filterwarnings(
    "ignore:non-integer arguments to randrange:DeprecationWarning")


def identity(x):
    return x   # pure-LDP's default index mapper is x − 1 (1-based items)


@pytest.fixture
def global_rngs(seed):
    """Seed the global generators pure-LDP uses, and put them back afterwards."""
    saved = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    yield
    random.setstate(saved[0])
    np.random.set_state(saved[1])


def peer_estimates(client, server):
    for item in ITEMS:
        server.aggregate(client.privatise(int(item)))
    return [server.estimate(v, suppress_warnings=True) for v in range(len(COUNTS))]


def our_estimates(mechanism, seed):
    rng = np.random.default_rng(seed)
    return np.stack([mechanism.release(COUNTS, rng) for _ in range(OUR_RUNS)])


def with_sums(runs):
    runs = np.asarray(runs, dtype=float)
    return np.column_stack([runs, runs.sum(axis=1), runs[:, 1] + runs[:, 5]])


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 4.0])
def test_hadamard_response_matches_pure_ldp(epsilon, seed, global_rngs):
    d = len(COUNTS)
    ours = HadamardResponse(epsilon=epsilon)
    lay = ours.layout(d)
    runs = []
    for _ in range(PEER_RUNS):
        server = HadamardResponseServer(epsilon, d, index_mapper=identity)
        client = HadamardResponseClient(epsilon, d, server.get_hash_funcs(), index_mapper=identity)
        runs.append(peer_estimates(client, server))
    assert server.hr.outsz == lay.outputs                # same output alphabet
    if lay.blocked:
        assert (server.hr.part, server.hr.partsz) == (lay.blocks, lay.block_size)
    assert_same_distribution(with_sums(runs), with_sums(our_estimates(ours, seed)))


@pytest.mark.parametrize("epsilon,t", [(1.0, 1), (2.0, 2), (4.0, 3)])
def test_hadamard_mechanism_matches_pure_ldp(epsilon, t, seed, global_rngs):
    ours = HadamardMechanism(epsilon=epsilon, t=t)
    padded = ours.padded(len(COUNTS))                    # pure-LDP needs a power-of-two domain
    runs = [peer_estimates(HadamardMechClient(epsilon, padded, t, index_mapper=identity),
                           HadamardMechServer(epsilon, padded, t, index_mapper=identity))
            for _ in range(PEER_RUNS)]
    assert_same_distribution(with_sums(runs), with_sums(our_estimates(ours, seed)))
