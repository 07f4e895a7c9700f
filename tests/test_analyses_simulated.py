"""Simulated intervals (dpcore/analyses/simulated.py): their coverage over seeded releases where
they are given, and the measured shortfall where they are refused.

The checks use K = 39 draws and the extreme order statistics (j = 1) instead of the product's
K = 199, j = 5: both give an interval that covers with exactly (K + 1 − 2j)/(K + 1) = 95 % when the
stand-in's error law is the real one's (the released error is exchangeable with the draws'), so
the expected coverage measured is the product's; K only changes how much the ends vary. One test
runs the product's own K on the county table.

Tolerance: a release's pooled coverage (over its answers) is a mean of correlated indicators,
so its variance is at most p(1 − p); the mean over R independent releases is checked against
95 % − 3·√(0.95·0.05/R), the binomial spread of R trials (conservative: the answers of one
release are not counted as independent trials).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore import release
from dpcore.analyses import answers, intervals, selection as sel, simulated
from dpcore.data import datasets

EPSILON = 1.0
TEST_DRAWS, TEST_ORDER = 39, 1
PLACES = {"ireland_county": ("Meath", "Dublin City"), "toy_town": ("Harbour", "Station"),
          "leitrim": ("Leitrim 001", "Leitrim 002")}


def floor(releases: int) -> float:
    return 0.95 - 3 * math.sqrt(0.95 * 0.05 / releases)


@pytest.fixture
def quick_draws(monkeypatch):
    monkeypatch.setattr(simulated, "DRAWS", TEST_DRAWS)
    monkeypatch.setattr(simulated, "ORDER", TEST_ORDER)


@pytest.fixture(scope="module")
def tables():
    return {name: datasets.load(name) for name in ("ireland_county", "toy_town")}


def _queries(od, table: str) -> list[answers.Query]:
    """Inflow, outflow and live-and-work of one zone and of every zone, and one A → B."""
    home, work = PLACES[table]
    chosen = sel.zones(od, [work])
    return (answers.flows(od, chosen)[:3] + answers.paired(od, sel.zones(od, [home]), chosen)
            + answers.comparison(od))


def coverage(od, table: str, key: str, post: str, releases: int) -> tuple[float, object]:
    """Mean over seeded releases of the share of answers (with cells) whose interval holds the
    truth, and the last release's rule."""
    truth = od.to_dense()
    queries = _queries(od, table)
    shares = []
    for seed in range(releases):
        spec = release.ReleaseSpec(key, EPSILON, (), (post,), seed=seed)
        released = release.run(od, spec, true_counts=truth, score=False,
                               sparse=False).outputs[post].released
        rule = simulated.rule(od, spec, released, live=False)
        frame = answers.evaluate(queries, truth, released, rule)
        frame = frame[frame.cells > 0]
        shares.append(float(((frame.low <= frame.true) & (frame.true <= frame.high)).mean()))
    return float(np.mean(shares)), rule


COVERED = [("dbitflip", "norm"), ("ss", "norm"), ("hcms", "norm"), ("laplace", "norm"),
           ("grr", "norm"), ("oue", "norm")]


@pytest.mark.parametrize("key,post", COVERED)
def test_coverage_county(quick_draws, tables, key, post):
    releases = 60
    share, rule = coverage(tables["ireland_county"], "ireland_county", key, post, releases)
    assert isinstance(rule, simulated.Simulated) and rule.covered
    assert share >= floor(releases), (key, post, share)


@pytest.mark.parametrize("key,post", [("hr", "norm"), ("hm", "norm")] + COVERED)
def test_coverage_small_table(quick_draws, tables, key, post):
    releases = 60
    share, rule = coverage(tables["toy_town"], "toy_town", key, post, releases)
    assert rule.covered
    assert share >= floor(releases), (key, post, share)


@pytest.mark.parametrize("key,post", [("dbitflip", "norm"), ("laplace", "norm")])
def test_coverage_ed_sized_sparse_table(quick_draws, ed, key, post):
    """The EDs of Leitrim (5,476 cells, most of them empty): within the live limit."""
    releases = 40
    share, rule = coverage(ed.subset_by_parent(["Leitrim"]), "leitrim", key, post, releases)
    assert rule.covered
    assert share >= floor(releases), (key, post, share)


def test_coverage_with_the_products_draws(tables):
    """K = 199, j = 5 as shipped, on the county table."""
    releases = 15
    share, rule = coverage(tables["ireland_county"], "ireland_county", "hcms", "norm", releases)
    assert rule.method == simulated.METHOD
    assert share >= floor(releases), share


@pytest.mark.parametrize("what", list(simulated.SHORTFALLS))
def test_refused(quick_draws, tables, monkeypatch, what):
    """Each refused mechanism or post-processing: the rule gives no interval and says why, and
    the simulation it refuses does fall short — by the coverage its sentence quotes."""
    key, table, quoted = simulated.SHORTFALLS[what]
    post = what if what in simulated.REFUSED_POST else "base"
    # OnTheMap's intervals come from its law (test_analyses_synthesized.py): the simulation
    # measured here is the one refused
    monkeypatch.setattr(simulated, "DEBIASED", ())
    od = tables[table]
    spec = release.ReleaseSpec(key, EPSILON, (), (post,))
    refused = simulated.rule(od, spec, od.to_dense().astype(float), live=False)
    assert not refused.covered and refused.method.startswith("no interval")
    assert f"measured coverage {quoted} %" in refused.method
    monkeypatch.setattr(simulated, "REFUSED", {})
    monkeypatch.setattr(simulated, "REFUSED_POST", {})
    share, rule = coverage(od, table, key, post, simulated.SHORTFALL_RELEASES)
    assert rule.covered   # measured without the refusal
    assert round(100 * share) == quoted, share
    assert share < floor(simulated.SHORTFALL_RELEASES), share


def test_closed_forms_are_kept(tables):
    """Where a closed form or bound holds, it is the rule (unchanged); the simulation is for the
    rest."""
    od = tables["ireland_county"]
    for key, post in (("laplace", "base"), ("grr", "base"), ("gaussian", "base_pos"),
                      ("hr", "base"), ("hm", "base"), ("ss", "base"), ("dbitflip", "base"),
                      ("cms", "base"), ("hcms", "base")):
        rule = simulated.rule(od, release.ReleaseSpec(key, EPSILON, (), (post,)), None)
        assert isinstance(rule, intervals.Interval) and rule.covered


def test_stand_in_is_public_whole_and_sums_to_n(tables):
    od = tables["toy_town"]
    released = np.linspace(-20.0, 40.0, od.domain_size)
    standin = simulated.stand_in(released, od.n)
    assert standin.dtype.kind == "i" and standin.min() >= 0 and standin.sum() == od.n


def test_size_limits_say_where_to_compute(tables, monkeypatch):
    od = tables["toy_town"]
    spec = release.ReleaseSpec("hr", EPSILON, (), ("norm",))
    county = tables["ireland_county"]   # HR's 2.7 M reports: the CLI only
    many = simulated.rule(county, spec, county.to_dense().astype(float), live=True)
    assert not many.covered and f"{county.n:,} reports" in many.method
    assert simulated.rule(county, spec, county.to_dense().astype(float), live=False).covered
    monkeypatch.setattr(simulated, "LIVE_CELLS", od.domain_size - 1)
    live = simulated.rule(od, spec, od.to_dense().astype(float), live=True)
    assert not live.covered and "python3 -m dpcore analyse" in live.method
    assert f"{od.domain_size:,} cells" in live.method
    assert simulated.rule(od, spec, od.to_dense().astype(float), live=False).covered
    monkeypatch.setattr(simulated, "MOST_CELLS", od.domain_size - 1)
    cli = simulated.rule(od, spec, od.to_dense().astype(float), live=False)
    assert not cli.covered and "too large" in cli.method
    frame = answers.evaluate(_queries(od, "toy_town"), od.to_dense(), od.to_dense(), cli)
    assert frame.low.isna().all() and frame.high.isna().all()


def test_draws_are_seeded_from_public_values(quick_draws, tables):
    """The same release gives the same interval twice (kept draws or not), and the draws do not
    depend on the release's own seed, only on the public simulation seed."""
    od = tables["toy_town"]
    queries = _queries(od, "toy_town")
    truth = od.to_dense()
    spec = release.ReleaseSpec("dbitflip", EPSILON, (), ("norm",), seed=3)
    released = release.run(od, spec, true_counts=truth, score=False).outputs["norm"].released
    first = answers.evaluate(queries, truth, released, simulated.rule(od, spec, released))
    simulated._KEPT.clear()
    again = answers.evaluate(queries, truth, released, simulated.rule(
        od, release.ReleaseSpec("dbitflip", EPSILON, (), ("norm",), seed=99), released))
    np.testing.assert_array_equal(first[["low", "high"]], again[["low", "high"]])
    assert (first.high >= first.low).all() and (first.low >= 0).all()
