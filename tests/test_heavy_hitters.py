"""PEM and TreeHist against pure-LDP's PEMServer and TreeHistServer: recall of a planted top-5
on a 256-cell domain.

pure-LDP runs one Python call per person with the global ``random``/``numpy.random`` state, so
the population is small (3,000) and both global generators are seeded for that test only
(the ``seeded_globals`` fixture). The
recalls of the two implementations are compared with Welch's t-test at 10⁻³ (pure-LDP hashes with
xxhash, dpcore's simulation assumes an idealised hash: the recall should not differ).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from pure_ldp.frequency_oracles.local_hashing import LHServer
from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
from pure_ldp.heavy_hitters.treehistogram import TreeHistClient, TreeHistServer
from scipy import stats

from dpcore import seeding
from dpcore.data import national
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import heavy_hitters
from tests.downloads import read_private_csv

SEED = 20261124
EPSILON = 1.0
BITS, START, STEP, K = 8, 2, 2, 5
PLANTED = np.array([450, 380, 320, 270, 230])
PURE_RUNS, OUR_RUNS = 30, 300
#: pure-LDP's TreeHist loops over every person in Python (~4 s a run on a quiet core): fewer runs,
#: same Welch test (its false-failure rate does not depend on the number of runs).
PURE_TREEHIST_RUNS = 12


def planted() -> ODMatrix:
    """16 × 16 = 256 cells: five heavy cells and 1,350 people spread over the others."""
    rng = seeding.generator(SEED, "test-planted")
    cells = rng.choice(256, size=PLANTED.size, replace=False)
    others = np.setdiff1d(np.arange(256), cells)
    counts = np.zeros(256, dtype=np.int64)
    counts[cells] = PLANTED
    counts[others] = rng.multinomial(1350, np.full(others.size, 1 / others.size))
    zones = ZoneSet.from_ids([f"z{i}" for i in range(16)])
    return ODMatrix.from_dense("planted", zones, zones, counts)


def pure_ldp_recall(od: ODMatrix) -> float:
    return recall_of(od, PEMClient(EPSILON, START, BITS, STEP),
                     PEMServer(EPSILON, START, BITS, STEP))


def recall_of(od: ODMatrix, client, server) -> float:
    """Every commuter through a pure-LDP heavy-hitter client and server; recall of the top K."""
    for cell in od.to_items():
        server.aggregate(client.privatise(format(int(cell), f"0{BITS}b")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, _ = server.find_heavy_hitters(k=K)
    cells = np.array([int(bits, 2) for bits in found])
    truth = od.flat_index[np.argsort(-od.counts)[:K]]
    return np.intersect1d(cells, truth).size / K


@pytest.mark.slow
def test_pem_recall_matches_pure_ldp(seeded_globals):
    od = planted()
    ours = [heavy_hitters.pem(od, EPSILON, K, seeding.generator(SEED, "pem", run),
                              start_bits=START, step_bits=STEP).recall(od)
            for run in range(OUR_RUNS)]
    theirs = [pure_ldp_recall(od) for _ in range(PURE_RUNS)]
    assert 0.3 < np.mean(ours) < 1.0   # the planted cells are findable, but not trivially
    assert stats.ttest_ind(ours, theirs, equal_var=False).pvalue > 1e-3


def test_pem_structure_and_reproducibility():
    od = planted()
    first = heavy_hitters.pem(od, 4.0, K, seeding.generator(SEED, "pem-structure"),
                              start_bits=START, step_bits=STEP)
    again = heavy_hitters.pem(od, 4.0, K, seeding.generator(SEED, "pem-structure"),
                              start_bits=START, step_bits=STEP)
    assert np.array_equal(first.cells, again.cells)
    assert first.groups == 3 and first.bits == BITS
    assert first.cells.size == K and np.unique(first.cells).size == K
    assert np.all(np.diff(first.estimates) <= 0)
    assert first.recall(od) == 1.0     # at ε = 4 the planted cells stand far above the noise


def test_pem_runs_on_a_domain_beyond_the_dense_limit():
    od = national.generate(0.05)   # 4,250 tracts: 18 M cells, no dense vector needed
    found = heavy_hitters.pem(od, 2.0, 20, seeding.generator(SEED, "pem-large"))
    assert found.cells.size == 20 and found.bits == int(np.ceil(np.log2(od.domain_size)))
    assert np.all(found.cells < 2 ** found.bits)


def test_pem_rejects_bad_settings():
    with pytest.raises(ValueError, match="start_bits"):
        heavy_hitters.pem(planted(), 1.0, 5, seeding.generator(SEED, "bad"), start_bits=8)
    with pytest.raises(ValueError, match="k and step_bits"):
        heavy_hitters.pem(planted(), 1.0, 0, seeding.generator(SEED, "bad"))


class PrefixLHServer(LHServer):
    """pure-LDP's OLH server keeping a domain of 2^(BITS+1) indices (TreeHistServer would shrink
    it to 2^BITS, too small for :func:`distinct_prefix_index`)."""

    def update_params(self, epsilon=None, d=None, use_olh=None, g=None, index_mapper=None):
        super().update_params(epsilon, None if d is None else 2 ** (BITS + 1), use_olh, g,
                              index_mapper)


def distinct_prefix_index(prefix: str) -> int:
    """A padded prefix as its own item: pure-LDP strips the padding before mapping, so by default
    "01" (a level-1 prefix) and "0001" (a whole cell) would share index 1."""
    return (1 << len(prefix)) | int(prefix or "0", 2)


def pure_ldp_treehist_recall(od: ODMatrix, epsilon: float) -> float:
    client = TreeHistClient(epsilon, STEP, BITS, index_mapper=distinct_prefix_index)
    # pure-LDP's default oracle (d=None) fails with current NumPy: give it one explicitly, with
    # room for the distinct prefix indices.
    oracle = PrefixLHServer(epsilon / 2, 2 ** (BITS + 1), use_olh=True)
    return recall_of(od, client, TreeHistServer(epsilon, BITS, STEP, fo_server=oracle,
                                                index_mapper=distinct_prefix_index))


@pytest.mark.slow
def test_treehist_recall_matches_pure_ldp(seeded_globals):
    od, epsilon = planted(), 6.0
    ours = [heavy_hitters.treehist(od, epsilon, K, seeding.generator(SEED, "treehist", run),
                                   step_bits=STEP).recall(od)
            for run in range(OUR_RUNS)]
    theirs = [pure_ldp_treehist_recall(od, epsilon) for _ in range(PURE_TREEHIST_RUNS)]
    assert 0.3 < np.mean(ours) < 1.0
    assert stats.ttest_ind(ours, theirs, equal_var=False).pvalue > 1e-3


def test_treehist_structure():
    od = planted()
    found = heavy_hitters.treehist(od, 8.0, K, seeding.generator(SEED, "treehist-structure"),
                                   step_bits=STEP)
    assert found.groups == BITS // STEP and found.cells.size == K
    assert np.all(np.diff(found.estimates) <= 0)
    assert found.recall(od) == 1.0


# ------------------------------------------------------------- find, scores, compare and the walk
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_recall_is_one_at_a_very_large_epsilon_on_a_clear_cut_dataset(protocol):
    od = planted()
    for trial in range(5):
        found = heavy_hitters.find(protocol, od, 20.0, K, SEED, trial)
        assert heavy_hitters.scores(od, found, K) == {"recall": 1.0, "precision": 1.0}


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_find_is_seeded_by_the_release_rule(protocol):
    od = planted()
    first = heavy_hitters.find(protocol, od, 1.0, K, SEED, trial=3)
    again = heavy_hitters.find(protocol, od, 1.0, K, SEED, trial=3)
    assert np.array_equal(first.cells, again.cells)
    assert np.array_equal(first.estimates, again.estimates)
    direct = (heavy_hitters.pem if protocol == "pem" else heavy_hitters.treehist)(
        od, 1.0, K, seeding.generator(SEED, "heavy-hitters", protocol, 1.0, K, 3))
    assert np.array_equal(first.estimates, direct.estimates)
    others = [heavy_hitters.find(protocol, od, 1.0, K, SEED, trial).estimates
              for trial in range(4)]
    assert len({tuple(e) for e in others}) == 4   # trials draw independent noise


def test_find_rejects_bad_settings_with_a_message():
    od = planted()
    with pytest.raises(ValueError, match="unknown heavy-hitter protocol"):
        heavy_hitters.find("cms", od, 1.0, K, SEED)
    with pytest.raises(ValueError, match=r"k must be between 1 and the number of non-empty"):
        heavy_hitters.find("pem", od, 1.0, od.nonzero + 1, SEED)


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_the_walk_never_recovers_a_dropped_prefix_and_ends_at_the_recall(protocol):
    od = planted()
    for trial in range(10):
        found = heavy_hitters.find(protocol, od, 1.0, K, SEED, trial)
        walk = heavy_hitters.walk(od, found, K)
        assert list(walk["level"]) == list(range(1, found.groups + 1))
        assert list(walk["prefix_bits"]) == heavy_hitters.prefix_lengths(protocol, 256, K)
        reach = walk["true_top_k_in_reach"].to_numpy()
        assert np.all(np.diff(reach) <= 0) and reach[0] <= K
        assert reach[-1] == round(found.recall(od) * K)
        assert np.all(walk["kept"] <= np.minimum(K, walk["candidates"]))
        reports = walk["reports"].to_numpy()
        assert (np.all(reports == od.n) if protocol == "treehist"
                else reports.sum() == od.n)   # PEM: each commuter in exactly one group


def test_scores_count_a_tie_with_the_kth_as_precise():
    zones = ZoneSet.from_ids(["a", "b"])
    od = ODMatrix.from_dense("ties", zones, zones, np.array([50, 30, 30, 1]))
    found = heavy_hitters.HeavyHitters(np.array([0, 2]), np.array([50.0, 30.0]), 1, 2)
    # the true top 2 (ties by flat index) is {0, 1}: cell 2 ties with cell 1
    assert heavy_hitters.scores(od, found, 2) == {"recall": 0.5, "precision": 1.0}
    table = heavy_hitters.compare(od, found, 2)
    assert list(table["status"]) == ["found", "missed", "found, not a true top-k commute"]
    assert list(table["true_count"]) == [50, 30, 30]
    assert list(table["true_rank"]) == [1, 2, 3]
    assert np.isnan(table["found_rank"][1]) and table["found_rank"][2] == 2
    assert list(table["origin"]) == ["a", "a", "b"]


def test_trial_rows_are_the_runs_scores():
    od = planted()
    rows = heavy_hitters.trial_rows("treehist", od, 2.0, K, SEED, 1)
    found = heavy_hitters.find("treehist", od, 2.0, K, SEED, 1)
    measured = dict(zip(rows["metric"], rows["value"]))
    assert {m: measured[m] for m in ("recall", "precision")} == heavy_hitters.scores(od, found, K)
    assert measured["cpu_seconds"] >= 0 and set(rows["mechanism"]) == {"TreeHist"}


def test_cli_writes_the_top_k_found_as_the_pages_do(tmp_path, capsys):
    from dpcore.data import datasets
    from dpcore.interfaces import cli

    out = tmp_path / "top.csv"
    assert cli.main(["heavy-hitters", "--dataset", "toy_town", "--protocol", "treehist",
                     "--epsilon", "3", "--k", "5", "--seed", "7", "--out", str(out)]) == 0
    toy = datasets.load("toy_town")
    expected = heavy_hitters.compare(toy, heavy_hitters.find("treehist", toy, 3.0, 5, 7), 5)
    written = read_private_csv(out)
    assert list(written["commute"]) == list(expected["commute"])
    assert np.allclose(written["estimated_count"], expected["estimated_count"], equal_nan=True)
    assert "recall" in capsys.readouterr().out
    assert cli.main(["heavy-hitters", "--dataset", "toy_town", "--protocol", "pem",
                     "--epsilon", "1", "--k", "99", "--out", str(tmp_path / "new.csv")]
                    ) == cli.EXIT_USAGE
    assert "k must be between 1 and the number of non-empty commutes (51)" in \
        capsys.readouterr().err


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_cells_found_are_inside_a_domain_that_is_not_a_power_of_two(protocol):
    from dpcore.data import datasets

    toy = datasets.load("toy_town")   # 56 cells written in 6 bits: indices 56–63 name nothing
    for trial in range(20):
        found = heavy_hitters.find(protocol, toy, 0.5, 50, SEED, trial)
        assert np.all(found.cells < toy.domain_size)
        for level in found.levels:
            assert np.all(level.candidates << (found.bits - level.length) < toy.domain_size)
