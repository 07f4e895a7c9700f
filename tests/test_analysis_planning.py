"""Targets on analyses: the smallest ε at which every answer's 95 % half-width meets the target."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore import mechanisms, release
from dpcore.analyses import intervals, planning
from dpcore.interfaces import cli, publish, publish_targets
from dpcore.mechanisms.sparse_vector import SparseVector
from tests.downloads import read_private_csv

TARGETS = [planning.Target("inflow", 0.02, relative=True), planning.Target("pairs", 50.0),
           planning.Target("live_and_work", 100.0)]


def _worst(od, truth, key, target, epsilon) -> float:
    """Largest half-width / allowance over the family's answers at ε (the raw release)."""
    found = planning.usable(target, planning.family_answers(od, truth, target.family))
    rule = intervals.Interval(key, mechanisms.build(key, epsilon=epsilon), n=od.n,
                              d=od.domain_size)
    return float(np.max(planning.half_widths(rule, found) / planning.allowed(target, found)))


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.family)
@pytest.mark.parametrize("key", ["laplace", "grr", "gaussian"])
def test_found_epsilon_meets_the_target_and_less_does_not(county, key, target):
    truth = release.true_values(county)
    (found,) = planning.plan(county, truth, [key], target)
    assert found.method == planning.CLOSED and 0.001 < found.epsilon < 20
    assert _worst(county, truth, key, target, found.epsilon) <= 1.0
    assert _worst(county, truth, key, target, 0.95 * found.epsilon) > 1.0
    assert found.answers > 1 and found.worst_half_width > 0


def test_laplace_pairs_by_hand(county):
    """Each pair is one Laplace cell: half-width (ln 20/√2)·√2·b with b = 2/ε = 50 at
    ε = 2·ln 20/50."""
    (found,) = planning.plan(county, county.to_dense(), ["laplace"], planning.Target("pairs", 50))
    assert found.epsilon == pytest.approx(2 * math.log(20) / 50, rel=2 * planning.PRECISION)


def test_relative_targets_skip_zero_answers_and_sparse_equals_dense(county):
    dense, sparse = county.to_dense(), SparseVector.counts(county)
    target = planning.Target("pairs", 0.5, relative=True)
    a = planning.plan(county, dense, ["oue", "laplace"], target)
    b = planning.plan(county, sparse, ["oue", "laplace"], target)
    assert [p.epsilon for p in a] == [p.epsilon for p in b]
    assert a[1].answers == np.unique(dense[dense > 0]).size   # the zeros are left out
    assert not a[0].worst_answer.endswith(" 0 commuters")


def test_not_planned_and_unreachable_say_so(county):
    truth = county.to_dense()
    topk, oue = planning.plan(county, truth, ["topk", "oue"], planning.Target("pairs", 5.0))
    assert math.isnan(topk.epsilon) and "no closed form" in topk.method
    assert math.isinf(oue.epsilon) and oue.method == planning.UNREACHABLE
    with pytest.raises(ValueError, match="unknown family"):
        planning.Target("trips", 5.0)
    with pytest.raises(ValueError, match="above 0"):
        planning.Target("inflow", 0.0)


def test_flat_publish_target(county):
    """OpenDP's calibrated discrete Laplace: at the ε found every answer's interval meets the
    target, at 0.95 ε one does not."""
    truth = county.to_dense()
    target = planning.Target("inflow", 0.02, relative=True)
    found = publish_targets.plan(county, truth, publish.DISCRETE_LAPLACE, target)
    answers = planning.usable(target, planning.family_answers(county, truth, "inflow"))

    def worst(epsilon):
        scale = publish.calibrate(publish.DISCRETE_LAPLACE, epsilon).scale
        rule = publish_targets.rule(publish.DISCRETE_LAPLACE, scale, county.n,
                                    county.domain_size)
        return float(np.max(planning.half_widths(rule, answers)
                            / planning.allowed(target, answers)))

    assert worst(found.epsilon) <= 1.0 < worst(0.95 * found.epsilon)
    # the registry's discrete Laplace has the same law (scale 2/ε): the same ε
    (same,) = planning.plan(county, truth, ["discrete_laplace"], target)
    assert found.epsilon == pytest.approx(same.epsilon, rel=2 * publish_targets.PRECISION)


def test_cli_plan_answers(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace,topk",
                     "--answers", "pairs", "--within", "50", "--out", str(out)]) == 0
    frame = read_private_csv(out).set_index("mechanism")
    assert frame.loc["laplace", "epsilon"] == pytest.approx(2 * math.log(20) / 50,
                                                            rel=2 * planning.PRECISION)
    assert math.isnan(frame.loc["topk", "epsilon"])
    (published,) = [m for m in frame.index if m.startswith("publish: Discrete Laplace")]
    # whole-number noise: its interval is 1 wider, so a little more ε than Laplace's
    assert 1 < frame.loc[published, "epsilon"] / frame.loc["laplace", "epsilon"] < 1.05
    assert "every OD pair's flow within ±50 commuters" in capsys.readouterr().out
    for bad, message in ((["--within", "2x"], "a percentage"), ([], "needs --within"),
                         (["--within", "-3"], "above 0")):
        assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                         "--answers", "pairs", *bad, "--out", str(tmp_path / "x.csv")]) \
            == cli.EXIT_USAGE
        assert message in capsys.readouterr().err
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                     "--out", str(tmp_path / "y.csv")]) == cli.EXIT_USAGE
    assert "give a target" in capsys.readouterr().err


def test_cli_plan_answers_on_the_ed_table_reports_every_row(tmp_path, capsys):
    """OnTheMap's inflow of every ED within ±10 %: planned (the ED table is no longer refused)
    and out of reach (a workplace under 20 workers keeps its bound [0, m]); the flat publish
    cannot meet it at any scale either (inflows of 1 commuter) and says so in its row
    instead of stopping the command."""
    out = tmp_path / "plan.csv"
    assert cli.main(["plan", "--dataset", "ireland_ed", "--mechanisms", "onthemap",
                     "--answers", "inflow", "--within", "10%", "--out", str(out)]) == 0
    frame = read_private_csv(out).set_index("mechanism")
    assert math.isinf(frame.loc["onthemap", "epsilon"])
    assert frame.loc["onthemap", "method"] == planning.UNREACHABLE
    (published,) = [m for m in frame.index if m.startswith("publish: Discrete Laplace")]
    assert frame.loc[published, "method"] == publish_targets.NO_SCALE
    assert "inflow of every zone within ±10 %" in capsys.readouterr().out
