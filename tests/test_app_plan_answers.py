"""AppTest of Plan & publish's targets on analysis answers: the ε per mechanism at once, equal to
dpcore's; a flat OpenDP publish's behind its button."""

from pathlib import Path

from dpcore import mechanisms, release
import pytest

from dpcore.analyses import planning, share_targets
from dpcore.data import datasets
from dpcore.interfaces import topdown_targets
from tests.app_pages import open_page, shown_table

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Plan_and_publish.py")

def answers_table(at):
    (table,) = [shown_table(t) for t in at.table if "Deciding answer" in t.value.columns]
    return table.set_index("Mechanism / publish")

def test_answer_targets_per_mechanism_and_publish():
    at = open_page(PAGE, mech=["laplace", "grr", "topk"], pp="base")
    at.selectbox(key="kept_widget_plan_answers_family").set_value("pairs")
    at.radio(key="kept_widget_plan_answers_unit").set_value("absolute").run()
    at.number_input(key="kept_widget_plan_answers_within_absolute").set_value(50.0).run()
    assert not at.exception, at.exception
    table = answers_table(at)
    od = datasets.load("ireland_county")
    expected = planning.plan(od, release.true_values(od), ["laplace", "grr"],
                             planning.Target("pairs", 50.0))
    for plan in expected:
        assert table.loc[mechanisms.get(plan.mechanism).name, "ε needed"] == \
            f"{plan.epsilon:.3g}"
    assert table.loc[mechanisms.get("topk").name, "ε needed"] == "—"
    assert any("every OD pair's flow within ±50 commuters" in m.value for m in at.markdown)

    at.button(key="plan_answers_publish").click().run()
    assert not at.exception, at.exception
    table = answers_table(at)
    published = [name for name in table.index if name.startswith("publish: Discrete Laplace")]
    assert len(published) == 1
    # the same noise law as the registry's discrete Laplace (scale 2/ε): the same ε
    discrete = planning.plan(od, release.true_values(od), ["discrete_laplace"],
                             planning.Target("pairs", 50.0))[0].epsilon
    assert table.loc[published[0], "ε needed"] == f"{discrete:.3g}"
    labels = [b.label for b in at.get("download_button")]
    assert any(label.startswith("Answers (CSV)") and "not for publication" in label
               for label in labels)


def test_answer_targets_topdown_proposes_shares_at_the_parent_level():
    """Two counties' EDs: the TopDown button, asked at the parent level, shows the proposed
    shares' ε and the even split's, as dpcore plans them."""
    at = open_page(PAGE, mech=["laplace"], pp="base", dataset="ireland_ed",
                   areas=["Leitrim", "Sligo"])
    at.selectbox(key="kept_widget_plan_answers_family").set_value("pairs")
    at.radio(key="kept_widget_plan_answers_unit").set_value("absolute").run()
    at.number_input(key="kept_widget_plan_answers_within_absolute").set_value(50.0).run()
    at.radio(key="kept_widget_plan_answers_topdown_level").set_value("parent level").run()
    at.button(key="plan_answers_topdown").click().run()
    assert not at.exception, at.exception
    table = answers_table(at)
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim", "Sligo"])
    proposal = topdown_targets.plan(od, planning.Target("pairs", 50.0), level="parent level")
    assert proposal.shares == (0.9, 0.1)
    for plan in proposal.plans():
        assert table.loc[plan.mechanism, "ε needed"] == f"{plan.epsilon:.3g}"
    assert not [b for b in at.button if b.key == "plan_answers_topdown"]   # answered: gone


def test_share_targets_per_mechanism_and_publish():
    """"The share within 25 km of every county within ±2 percentage points": the ε per
    mechanism equal to dpcore's, the local ones not planned, the flat publish's on its button."""
    at = open_page(PAGE, mech=["laplace", "gaussian", "oue"], pp="base")
    at.selectbox(key="kept_widget_plan_answers_family").set_value("share_within").run()
    at.number_input(key="kept_widget_plan_answers_km").set_value(25.0).run()
    at.number_input(key="kept_widget_plan_answers_within_points").set_value(2.0).run()
    assert not at.exception, at.exception
    table = answers_table(at)
    od = datasets.load("ireland_county")
    target = share_targets.ShareTarget("share_within", 0.02, 25.0)
    for plan in share_targets.plan(od, release.true_values(od), ["laplace", "gaussian"],
                                   target):
        row = table.loc[mechanisms.get(plan.mechanism).name]
        assert row["ε needed"] == f"{plan.epsilon:.3g}"
        assert float(row["Its 95 % half-width (percentage points)"]) == \
            pytest.approx(100 * plan.worst_half_width, rel=1e-3)
    assert table.loc[mechanisms.get("oue").name, "ε needed"] == "—"
    assert any("under 25 km within ±2 percentage points" in m.value for m in at.markdown)
    at.button(key="plan_answers_publish").click().run()
    assert not at.exception, at.exception
    published = [name for name in answers_table(at).index if name.startswith("publish:")]
    assert len(published) == 2


def test_answer_targets_plan_onthemap_on_its_debiased_interval():
    """OnTheMap's row: the ε its debiased interval needs (dpcore's), and the caption says what
    is planned for it."""
    at = open_page(PAGE, mech=["onthemap", "laplace"], pp="base", dataset="toy_town")
    at.selectbox(key="kept_widget_plan_answers_family").set_value("pairs")
    at.radio(key="kept_widget_plan_answers_unit").set_value("absolute").run()
    at.number_input(key="kept_widget_plan_answers_within_absolute").set_value(50.0).run()
    assert not at.exception, at.exception
    od = datasets.load("toy_town")
    (expected,) = planning.plan(od, release.true_values(od), ["onthemap"],
                                planning.Target("pairs", 50.0))
    assert expected.method == planning.SYNTHESIZED
    assert answers_table(at).loc[mechanisms.get("onthemap").name, "ε needed"] == \
        f"{expected.epsilon:.3g}"
    assert any("debiased estimate" in c.value for c in at.caption)
