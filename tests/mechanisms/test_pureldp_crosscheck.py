"""Cross-check against pure-LDP (test-only dependency; install quirks in docs/TESTING.md: xxhash<4,
scikit-learn and statsmodels): its raw, unnormalised estimates for GRR (its "DE"), OUE and OLH
have the same distribution as dpcore's fast release, and both match dpcore's exact variance.

pure-LDP runs one Python call per person and draws from the global ``random``/``numpy.random``
state, so the domain is small (16 cells, 1,000 people) and both global generators are seeded here
(and restored afterwards) to make the run reproducible.
"""

import warnings

import numpy as np
import pytest
from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

from dpcore.mechanisms import build
from tests.mechanisms.stat_checks import (
    assert_same_distribution,
    assert_unbiased,
    assert_variance,
)

#: 16 cells with zeros, ties and a heavy cell; n = 1,000.
COUNTS = np.array([0, 300, 12, 12, 0, 150, 1, 60, 60, 5, 0, 200, 40, 0, 100, 60])
PURE_RUNS = 250
OUR_RUNS = 4000
EPSILON = 1.0


def identity(x):
    return x


PEERS = {
    "grr": lambda d: (DEClient(EPSILON, d, index_mapper=identity),
                      DEServer(EPSILON, d, index_mapper=identity)),
    "oue": lambda d: (UEClient(EPSILON, d, use_oue=True, index_mapper=identity),
                      UEServer(EPSILON, d, use_oue=True, index_mapper=identity)),
    "olh": lambda d: (LHClient(EPSILON, d, use_olh=True, index_mapper=identity),
                      LHServer(EPSILON, d, use_olh=True, index_mapper=identity)),
}


def pure_ldp_runs(key, items, d, runs):
    out = []
    for _ in range(runs):
        client, server = PEERS[key](d)
        for x in items:
            server.aggregate(client.privatise(int(x)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "small amounts of data"
            out.append(server.estimate_all(range(d), suppress_warnings=True, normalization=0))
    return np.array(out, dtype=float)


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(PEERS))
def test_pure_ldp_and_dpcore_estimates_have_the_same_distribution(key, seed, seeded_globals):
    d = len(COUNTS)
    items = np.repeat(np.arange(d), COUNTS)
    theirs = pure_ldp_runs(key, items, d, PURE_RUNS)
    mech = build(key, epsilon=EPSILON)
    rng = np.random.default_rng(seed)
    ours = np.stack([mech.release(COUNTS, rng) for _ in range(OUR_RUNS)])
    variance = mech.variance(COUNTS)
    assert_unbiased(theirs, COUNTS, variance)
    assert_variance(theirs, variance)
    assert_same_distribution(ours, theirs)
