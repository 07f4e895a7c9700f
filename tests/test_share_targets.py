"""Targets on shares (dpcore.analyses.share_targets): every zone's shares summed at once equal the
per-zone shares of the Analyses; the ε found meets the target and a slightly smaller one does
not; at that ε the deciding share's released value is within the margin at ≥ 95 %; and what
cannot be planned is said."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import mechanisms, release
from dpcore.analyses import intervals, planning, selection as sel, share_targets, shares
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.interfaces import cli, publish, publish_targets
from tests.downloads import read_private_csv

TARGETS = [share_targets.ShareTarget("share_within", 0.02, 25.0),
           share_targets.ShareTarget("share_live_and_work", 0.01)]
RELEASES = 400


def _worst(od, truth, key, target, epsilon) -> float:
    found = share_targets.share_answers(od, truth, target)
    rule = intervals.Interval(key, mechanisms.build(key, epsilon=epsilon), n=od.n,
                              d=od.domain_size)
    return float(share_targets.ratios(rule, target, found).max())


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.family)
@pytest.mark.parametrize("fixture", ["county", "toy"])
def test_every_zones_shares_at_once_are_the_analyses_shares(request, fixture, target):
    od = request.getfixturevalue(fixture)
    truth = release.true_values(od)
    found = share_targets.share_answers(od, truth, target)
    kept = []
    for zone in od.destinations.ids:
        chosen = sel.zones(od, [zone])
        share = (shares.within(od, chosen, "work", target.km)
                 if target.family == "share_within" else shares.live_and_work(od, chosen))
        (a, c), (m_a, m_c) = share.compute(truth)
        if a + c > 0:
            kept.append((zone, a, c, m_a, m_c))
    assert list(found.names) == [row[0] for row in kept]
    for i, (zone, *sums) in enumerate(kept):
        assert (found.a[i], found.c[i], found.a_cells[i], found.c_cells[i]) == \
            pytest.approx(tuple(sums)), zone


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.family)
@pytest.mark.parametrize("key", ["laplace", "gaussian", "discrete_laplace"])
def test_found_epsilon_meets_the_target_and_less_does_not(county, key, target):
    truth = release.true_values(county)
    (found,) = share_targets.plan(county, truth, [key], target)
    assert found.method == share_targets.CLOSED and 0.001 < found.epsilon < 20
    assert _worst(county, truth, key, target, found.epsilon) <= 1.0
    assert _worst(county, truth, key, target, 0.999 * found.epsilon) > 1.0
    assert 0 < found.worst_half_width <= target.within
    assert found.answers == share_targets.share_answers(county, truth, target).names.size


@pytest.mark.parametrize("key", ["laplace", "gaussian"])
def test_at_the_planned_epsilon_the_deciding_share_is_within_the_margin(county, key):
    """The planned ε's meaning, measured: over 400 seeded releases the deciding zone's released
    share is within ±2 points of the truth at ≥ 95 % up to the binomial spread (0.1 %)."""
    truth = release.true_values(county)
    target = share_targets.ShareTarget("share_live_and_work", 0.02)
    (found,) = share_targets.plan(county, truth, [key], target)
    mechanism = mechanisms.build(key, epsilon=found.epsilon)
    share = shares.live_and_work(county, sel.zones(county, [found.worst_answer]))
    (a, c), _ = share.compute(truth)
    hits = 0
    for seed in range(RELEASES):
        (ra, rc), _ = share.compute(mechanism.release(truth, np.random.default_rng(seed)))
        hits += abs(ra / (ra + rc) - a / (a + c)) <= target.within
    assert hits >= stats.binom.ppf(0.001, RELEASES, 0.95), hits


def test_a_flat_publish_is_planned_on_shares(county):
    """OpenDP's discrete Laplace at the calibrated scale 2/ε: the ε of the registry's discrete
    Laplace (the same law), to the search's precision."""
    truth = release.true_values(county)
    target = TARGETS[1]
    planned = publish_targets.plan(county, truth, publish.DISCRETE_LAPLACE, target)
    (same,) = share_targets.plan(county, truth, ["discrete_laplace"], target)
    assert planned.epsilon == pytest.approx(same.epsilon, rel=2e-3)
    assert planned.worst_answer == same.worst_answer and planned.answers == same.answers


def test_what_cannot_be_planned_is_said(county):
    truth = release.true_values(county)
    plans = share_targets.plan(county, truth, ["oue", "grr"], TARGETS[0])
    assert all(math.isnan(p.epsilon) and "central noises only" in p.method for p in plans)
    with pytest.raises(ValueError, match="percentage points: write 2"):
        share_targets.parse_target("share_within", "2%")
    with pytest.raises(ValueError, match="between 0 and 100"):
        share_targets.parse_target("share_within", "150")
    with pytest.raises(ValueError, match="unknown family"):
        share_targets.ShareTarget("inflow", 0.02)
    zones = ZoneSet.from_ids(["A", "B"])
    bare = ODMatrix.from_pairs("no positions", zones, zones, [0], [1], [5])
    with pytest.raises(ValueError, match="positions"):
        share_targets.share_answers(bare, release.true_values(bare), TARGETS[0])


def test_cli_plans_a_share_target(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace,oue",
                     "--answers", "share_within", "--km", "25", "--within", "2",
                     "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "under 25 km within ±2 percentage points" in said
    frame = read_private_csv(out).set_index("mechanism")
    county_plan = share_targets.plan(*_county_truth(), ["laplace"], TARGETS[0])[0]
    assert frame.loc["laplace", "epsilon"] == pytest.approx(county_plan.epsilon)
    assert np.isnan(frame.loc["oue", "epsilon"])
    assert frame.index[-1].startswith("publish: Discrete Laplace")
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                     "--answers", "share_within", "--within", "2", "--method", "topdown",
                     "--out", str(tmp_path / "x.csv")]) == 2
    assert "leave out --method topdown" in capsys.readouterr().err


def _county_truth():
    from dpcore.data import datasets
    od = datasets.load("ireland_county")
    return od, release.true_values(od)
