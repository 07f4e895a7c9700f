"""Targets on analyses for a TopDown publish: the proposed shares' ε gives a published folder's
answers (±k·M, read from the folder alone) within the target, 0.95 ε does not; a target on the
parent level favours more ρ there."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.analyses import planning
from dpcore.data import views
from dpcore.interfaces import cli, publish, published_analyses, published_domain, topdown_targets
from dpcore.mechanisms import topdown
from tests.downloads import read_private_csv

SOURCE = publish.input_entry("test", views.View(), {"source": published_domain.BUNDLED})


@pytest.fixture(scope="module")
def two_counties(ed):
    return ed.subset_by_parent(["Leitrim", "Sligo"])


def _folder_worst(od, target, level, epsilon, shares, tmp_path) -> float:
    """Largest half-width / allowance of the family's answers, the rule read from a TopDown
    folder published at ε with ``shares`` (the manifest's margin: the same at every seed)."""
    result = publish.publish_topdown(od, epsilon, delta=publish.DEFAULT_DELTA, shares=shares,
                                     source=SOURCE)
    out = tmp_path / f"td{epsilon:.6g}"
    result.write(out)
    folder = published_analyses.load(out, level)
    at = topdown.hierarchy(od)[topdown_targets.level_index(2, level)].od
    found = planning.usable(target, planning.family_answers(at, at.to_dense(), target.family))
    return float(np.max(planning.half_widths(folder.interval, found)
                        / planning.allowed(target, found)))


@pytest.mark.parametrize("level, target", [
    ("parent level", planning.Target("inflow", 0.1, relative=True)),
    ("fine level", planning.Target("pairs", 50.0))], ids=["parent-inflow", "fine-pairs"])
def test_proposed_epsilon_meets_the_target_and_less_does_not(two_counties, level, target,
                                                             tmp_path):
    proposal = topdown_targets.plan(two_counties, target, level=level)
    best = proposal.best
    assert 0.01 < best.epsilon < 20 and "simultaneous" in best.method
    assert _folder_worst(two_counties, target, level, best.epsilon, proposal.shares,
                         tmp_path) <= 1
    assert _folder_worst(two_counties, target, level, 0.95 * best.epsilon, proposal.shares,
                         tmp_path) > 1
    # the grid's best is never worse than the even split it is compared with
    assert best.epsilon <= proposal.even.epsilon * (1 + topdown_targets.PRECISION)


def test_a_parent_target_favours_the_parent_level(two_counties):
    """The parent's margin depends on its own share only: the most ρ on the parent wins, at a
    clearly smaller ε than the even split (σ ∝ 1/√share: ρ needed ×5/9, ε about ×0.7)."""
    proposal = topdown_targets.plan(two_counties, planning.Target("pairs", 50.0),
                                    level="parent level")
    assert proposal.shares == (0.9, 0.1) and proposal.even_shares == (0.5, 0.5)
    assert proposal.best.epsilon < 0.8 * proposal.even.epsilon
    assert [p.mechanism for p in proposal.plans()] == ["publish: TopDown, shares 0.9, 0.1",
                                                       "publish: TopDown, shares 0.5, 0.5"]


def test_grid_one_level_and_unreachable(county):
    grid = topdown_targets.share_grid(3)
    assert len(grid) == 36 and all(math.isclose(sum(s), 1) and min(s) >= 0.1 for s in grid)
    # one level: shares (1,), a single plan; inflow within ±2 % needs every county's k·M ≤ 2 %
    proposal = topdown_targets.plan(county, planning.Target("inflow", 0.5, relative=True))
    assert proposal.shares == (1.0,) and len(proposal.plans()) == 1
    assert 0.001 < proposal.best.epsilon < 20
    unreachable = topdown_targets.plan(county, planning.Target("inflow", 0.02, relative=True))
    assert math.isinf(unreachable.best.epsilon)
    assert unreachable.best.method == planning.UNREACHABLE
    with pytest.raises(ValueError, match="no 'parent level'"):
        topdown_targets.plan(county, planning.Target("pairs", 50.0), level="parent level")


def test_cli_plan_answers_topdown(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    assert cli.main(["plan", "--dataset", "ireland_ed", "--area", "Leitrim", "--area", "Sligo",
                     "--mechanisms", "laplace", "--answers", "pairs", "--within", "50",
                     "--method", "topdown", "--answers-level", "parent",
                     "--out", str(out)]) == 0
    frame = read_private_csv(out).set_index("mechanism")
    said = capsys.readouterr().out
    assert "shares 0.9, 0.1 (parent level first)" in said
    best = frame.loc["publish: TopDown, shares 0.9, 0.1", "epsilon"]
    assert best < frame.loc["publish: TopDown, shares 0.5, 0.5", "epsilon"]
    assert "laplace" in frame.index
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                     "--answers", "pairs", "--within", "50", "--method", "topdown",
                     "--answers-level", "parent", "--out", str(tmp_path / "x.csv")]) \
        == cli.EXIT_USAGE
    assert "no 'parent level'" in capsys.readouterr().err
    assert cli.main(["plan", "--dataset", "ireland_county", "--mechanisms", "laplace",
                     "--answers", "pairs", "--within", "50", "--answers-level", "parent",
                     "--out", str(tmp_path / "y.csv")]) == cli.EXIT_USAGE
    assert "add --method topdown" in capsys.readouterr().err
