"""One commuter's PEM/TreeHist report (dpcore.theory.learn_heavy_hitters) is what the protocol
says: the prefix of a uniformly chosen level, sent by OLH with the protocol's share of ε, and the
server reads off it exactly the candidates whose hash matches.

The statistical checks use a fixed seed and a false-failure rate of 10⁻⁴ each (chi-square for the
uniform level, exact binomial for OLH's keep probability)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore import seeding
from dpcore.data import datasets
from dpcore.evaluation import heavy_hitters
from dpcore.mechanisms.local import universal_hash
from dpcore.theory import learn_heavy_hitters as device

SEED = 20261124
ALPHA = 1e-4
DRAWS = 3000


@pytest.fixture(scope="module")
def county():
    return datasets.load("ireland_county")


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_the_report_encodes_the_prefix_of_its_level(county, protocol):
    d, k, epsilon = county.domain_size, 10, 2.0
    lengths = heavy_hitters.prefix_lengths(protocol, d, k)
    rng = seeding.generator(SEED, "test-device", protocol)
    for cell in (0, 36, d - 1):
        report = device.device_report(protocol, d, cell, epsilon, k, rng)
        bits = heavy_hitters.cell_bits(d)
        assert report.bits == bits and report.levels == len(lengths)
        assert report.prefix_length == lengths[report.level - 1]
        assert report.prefix == cell >> (bits - report.prefix_length)
        assert report.cell_bits == format(cell, f"0{bits}b")
        assert report.cell_bits.startswith(report.prefix_bits)
        sent = report.prefix_report
        assert sent.own_bucket == universal_hash(sent.a, sent.b, sent.item, sent.hash_range)
        assert sent.kept == (sent.bucket == sent.own_bucket)
        assert bool(sent.supports(report.encoded([report.prefix]))[0]) == sent.kept
        if protocol == "pem":
            assert sent.item == report.prefix and sent.domain == 2 ** report.prefix_length
            assert sent.epsilon == epsilon and report.cell_report is None
        else:  # a padded prefix is its own item; ε is split between the two reports
            assert sent.item == (1 << report.prefix_length) + report.prefix
            assert sent.domain == 2 ** (bits + 1) and sent.epsilon == epsilon / 2
            whole = report.cell_report
            assert whole.item == cell and whole.domain == d and whole.epsilon == epsilon / 2


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_levels_are_uniform_and_olh_keeps_with_probability_p(county, protocol):
    rng = seeding.generator(SEED, "test-device-law", protocol)
    reports = [device.device_report(protocol, county.domain_size, 36, 1.0, 10, rng)
               for _ in range(DRAWS)]
    levels = reports[0].levels
    observed = np.bincount([r.level - 1 for r in reports], minlength=levels)
    assert stats.chisquare(observed).pvalue > ALPHA
    kept = sum(r.prefix_report.kept for r in reports)
    p = reports[0].prefix_report.p
    assert stats.binomtest(kept, DRAWS, p).pvalue > ALPHA


def test_the_server_reads_exactly_the_matching_candidates(county):
    k = 10
    found = heavy_hitters.find("pem", county, 2.0, k, SEED)
    rng = seeding.generator(SEED, "test-device-server")
    for _ in range(20):
        report = device.device_report("pem", county.domain_size, 36, 2.0, k, rng)
        level = found.levels[report.level - 1]
        supported = device.supported_candidates(report, found)
        sent = report.prefix_report
        expected = level.candidates[universal_hash(sent.a, sent.b, level.candidates,
                                                   sent.hash_range) == sent.bucket]
        assert np.array_equal(supported, expected)
        assert (report.prefix in supported) == (sent.kept and report.prefix in level.candidates)
    other = heavy_hitters.find("pem", county, 2.0, 100, SEED)   # one level of 11 bits, not 2
    with pytest.raises(ValueError, match="level plan"):
        device.supported_candidates(report, other)


def test_bad_input_gets_a_message():
    rng = seeding.generator(SEED, "bad")
    with pytest.raises(ValueError, match="outside the domain"):
        device.device_report("pem", 100, 100, 1.0, 5, rng)
    with pytest.raises(ValueError, match="unknown heavy-hitter protocol"):
        device.device_report("cms", 100, 1, 1.0, 5, rng)
    with pytest.raises(ValueError, match="31-bit prime"):
        device.device_report("treehist", 2 ** 31, 1, 1.0, 5, rng)
