"""Error against ε on an analysis answer: the experiment's RMSE agrees with the closed-form sd."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import release
from dpcore.analyses import selection as sel, tradeoffs
from dpcore.data.od import ODMatrix, ZoneSet

TRIALS = 300
EPSILONS = (0.5, 2.0)


@pytest.fixture(scope="module")
def dublin(county):
    """Dublin City's answers, and those of the zones within 100 km: 372 of 1,085 cells hold
    the jobs there, where GRR's covariances lower the sd by a fifth."""
    return tradeoffs.choices(county, sel.zones(county, ["Dublin City"])) | tradeoffs.choices(
        county, sel.radius(county, 100.0, zone="Dublin City"))


@pytest.mark.parametrize("key", ["laplace", "grr"])
@pytest.mark.parametrize("label", ["inflow — Dublin City",
                                   "commutes of 0–10 km — workers in Dublin City",
                                   "jobs — within 100 km of Dublin City"])
def test_experiment_rmse_matches_theory(county, dublin, key, label):
    """T·MSE/σ² follows χ²_T for unbiased normal-ish errors: the ratio RMSE²/sd² lies within
    the χ² bounds (99.9 %, Bonferroni over the ε) at every ε."""
    query, part = dublin[label]
    truth = release.true_values(county)
    theory = tradeoffs.theory(county, truth, query, part, [key], EPSILONS)
    found = tradeoffs.rmse(tradeoffs.experiment(county, truth, query, part, [key], EPSILONS,
                                                TRIALS, seed=3))
    merged = theory.merge(found, on=["mechanism", "epsilon", "true"])
    assert len(merged) == len(EPSILONS) and (merged["trials"] == TRIALS).all()
    assert merged["sd"].is_monotonic_decreasing   # more ε, less error
    tail = 0.001 / len(EPSILONS) / 2
    low, high = stats.chi2.ppf(tail, TRIALS) / TRIALS, stats.chi2.ppf(1 - tail, TRIALS) / TRIALS
    ratio = (merged["rmse"] / merged["sd"]) ** 2
    assert ((low <= ratio) & (ratio <= high)).all(), (ratio.tolist(), low, high)
    # the interval drawn around the experiment covers the theory here too
    assert ((merged["low"] <= merged["sd"] * 1.05) & (merged["sd"] <= merged["high"] * 1.05)).all()


def test_choices_and_theory_where_it_exists(county, toy):
    chosen = sel.zones(county, ["Cork City"])
    found = tradeoffs.choices(county, chosen)
    assert "inflow — Cork City" in found and "commutes of 50+ km — workers in Cork City" in found
    query, part = found["inflow — Cork City"]
    truth = release.true_values(county)
    table = tradeoffs.theory(county, truth, query, part, ["laplace", "topk", "hr", "olh"],
                             [1.0, 3.0])
    assert sorted(set(table["mechanism"])) == ["hr", "laplace", "olh"]   # top-k: no closed form
    hr = table[table.mechanism == "hr"].set_index("epsilon")["exact"]
    assert not hr[1.0] and hr[3.0]    # ε ≤ 1: HR's sd is an upper bound
    # Laplace: independent cells, sd = √(2m)·b with b = Δ/ε (Δ = 2 under substitution)
    cells = int(np.asarray(query.compute(truth)[1])[part])
    b = table[(table.mechanism == "laplace") & (table.epsilon == 1.0)]["sd"].iloc[0] / math.sqrt(
        2 * cells)
    assert b == pytest.approx(2.0)
    # data without positions: the flows and the live-and-work share, no distance bands
    od = ODMatrix.from_dense("no positions", ZoneSet.from_ids(toy.origins.ids),
                             ZoneSet.from_ids(toy.destinations.ids), toy.to_dense())
    labels = list(tradeoffs.choices(od, sel.zones(od, [od.destinations.ids[0]])))
    assert len(labels) == 6 and not any("km" in label for label in labels)
    assert labels[-1].startswith("share of jobs held by residents (%)")


def test_rmse_interval_is_chi_square():
    rng = np.random.default_rng(1)
    inside = 0
    for _ in range(400):
        value, low, high = tradeoffs.rmse_interval(rng.normal(0, 3.0, 50))
        inside += low <= 3.0 <= high
    assert stats.binom.ppf(0.0005, 400, 0.95) <= inside <= stats.binom.ppf(0.9995, 400, 0.95)


def test_sparse_releases_get_an_upper_bound(ed):
    """On the ED data GRR releases sparsely: its theory is marked a bound, and the releases' RMSE
    lies below it (χ² lower bound on 20 releases)."""
    query, part = tradeoffs.choices(ed, sel.zones(ed, [ed.destinations.ids[5]]))[
        f"inflow — {ed.destinations.ids[5]}"]
    truth = release.true_values(ed)
    theory = tradeoffs.theory(ed, truth, query, part, ["grr", "laplace"], [1.0])
    assert theory.set_index("mechanism")["exact"].to_dict() == {"grr": False, "laplace": True}
    found = tradeoffs.rmse(tradeoffs.experiment(ed, truth, query, part, ["grr"], [1.0], 20))
    assert found["high"].iloc[0] < theory["sd"].iloc[0]


@pytest.mark.parametrize("label", ["share within 10 km (%) — workers in Dublin City",
                                   "share of jobs held by residents (%) — Dublin City"])
def test_share_rmse_matches_the_delta_method(county, dublin, label):
    """A share, in percentage points: Laplace's RMSE over 300 releases against the delta
    method's sd (χ² bounds as above); GRR's share has no theory (not offered)."""
    query, part = dublin[label]
    assert tradeoffs.unit(query) == "percentage points"
    truth = release.true_values(county)
    theory = tradeoffs.theory(county, truth, query, part, ["laplace", "grr"], EPSILONS)
    assert set(theory["mechanism"]) == {"laplace"}
    assert 0 < theory["true"].iloc[0] < 100
    found = tradeoffs.rmse(tradeoffs.experiment(county, truth, query, part, ["laplace"],
                                                EPSILONS, TRIALS, seed=5))
    merged = theory.merge(found, on=["mechanism", "epsilon", "true"])
    assert len(merged) == len(EPSILONS)
    tail = 0.001 / len(EPSILONS) / 2
    low, high = stats.chi2.ppf(tail, TRIALS) / TRIALS, stats.chi2.ppf(1 - tail, TRIALS) / TRIALS
    ratio = (merged["rmse"] / merged["sd"]) ** 2
    assert ((low <= ratio) & (ratio <= high)).all(), (ratio.tolist(), low, high)
