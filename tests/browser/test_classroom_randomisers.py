"""Audit of the Classroom's JavaScript randomisers (ui/classroom/js/randomisers.js) in Chromium.

Each randomiser is driven thousands of times in headless Chromium with its real randomness
(crypto.getRandomValues). Two properties, as for the Python mechanisms:

* its output distribution for one fixed commute is the mechanism's (p and q): a chi-square test of
  the whole output distribution, and a binomial test of every cell's support count (the server's
  own ``accumulate``) against p (own cell) or q (any other), Bonferroni over the cells;
* the server's estimate from its reports is unbiased: a known class is randomised R times, and the
  mean of the R estimates (``dpcore.interfaces.classroom_stats.estimate_round``, i.e. the mechanism's own
  ``accumulate``/``estimate``) is z-tested against the truth cell by cell (Bonferroni).

Every report also goes through the server's validation (``parse_report``), so the browser's format
is exactly the one the server accepts. OLH's hash seed is issued per phone by the server
(``classroom.issue_seed``, as a page's ticket does), so each OLH report here gets its own, and must
use exactly it. Each check fails by chance with probability ≤ ALPHA = 10⁻⁴;
with 4 checks per configuration × 6 configurations the suite's false-failure rate is ≤ 0.24 %.
"""

import json

import numpy as np
import pytest
from playwright.sync_api import Page
from scipy import stats

from dpcore.interfaces import classroom, classroom_stats
from dpcore.mechanisms.hadamard import HadamardResponse, uniform_permutation
from dpcore.mechanisms.local import universal_hash
from ui.classroom.component import RANDOMISERS_JS

pytestmark = pytest.mark.browser

ALPHA = 1e-4
DRAWS = 20_000
D = 50                                  # 7 homes × 7 destinations + "none of these": the toy town
ITEM = 17
CONFIGURATIONS = [("grr", 1.0), ("grr", 4.0), ("oue", 1.0), ("olh", 2.0), ("hr", 0.5), ("hr", 3.0)]


def make_round(mechanism: str, epsilon: float) -> classroom.Round:
    mech = classroom.mechanisms.build(mechanism, epsilon=epsilon)
    permutation = None
    if isinstance(mech, HadamardResponse) and mech.blocked:
        permutation = tuple(int(x) for x in uniform_permutation(D, np.random.default_rng(7)))
    return classroom.Round("TEST", 1, mechanism, epsilon, permutation, 0.0, None)


@pytest.fixture(scope="module")
def randomiser(browser):
    """``run(spec, items)``: one report per item, drawn by the JavaScript randomiser in Chromium."""
    page: Page = browser.new_page()
    page.set_content("<!doctype html><title>randomisers</title>")
    page.add_script_tag(content=RANDOMISERS_JS)

    def run(spec: dict, items) -> list[dict]:
        seeds = ([list(classroom.issue_seed()) for _ in items] if spec["mechanism"] == "olh"
                 else None)
        reports = page.evaluate(
            "([spec, items, seeds]) => items.map((x, i) => dpRandomisers[spec.mechanism]"
            "(seeds ? { ...spec, seed: seeds[i] } : spec, x))",
            [spec, [int(x) for x in items], seeds])
        if seeds is not None:
            assert [[r["a"], r["b"]] for r in reports] == seeds     # the issued seed, no other
        return reports
    yield run
    page.close()


def validated(round_, reports):
    """Every browser report through the server's validation, as the server stores it."""
    return [classroom.parse_report(round_, D, json.loads(json.dumps(r))) for r in reports]


def output_probabilities(round_: classroom.Round, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """(observed outcome index per report → its exact probability vector) for the chi-square.

    GRR: the cell sent; OLH: (y − H(item)) mod g, 0 with probability p, each other value with
    (1 − p)/(g − 1); HR: the output, uniform/K + (1 − uniform)·[y ∈ C]/(b/2)."""
    mech = round_.build()
    if round_.mechanism == "grr":
        probs = np.full(D, spec["q"])
        probs[ITEM] = spec["p"]
        return probs
    if round_.mechanism == "olh":
        g = spec["g"]
        return np.array([spec["p"]] + [(1 - spec["p"]) / (g - 1)] * (g - 1))
    lay, uniform, _ = mech.constants(D)
    symbol = ITEM if round_.permutation is None else round_.permutation[ITEM]
    inside = np.array([lay.supports(symbol, y) for y in range(lay.outputs)])
    return uniform / lay.outputs + (1 - uniform) * inside / (lay.block_size / 2)


def outcomes(round_: classroom.Round, spec: dict, reports: list[dict]) -> np.ndarray:
    if round_.mechanism == "olh":
        a, b, y = (np.array([r[k] for r in reports], dtype=np.int64) for k in "aby")
        return (y - universal_hash(a, b, ITEM, spec["g"])) % spec["g"]
    return np.array([r["y"] for r in reports])


@pytest.mark.parametrize("mechanism, epsilon", CONFIGURATIONS)
def test_outputs_follow_p_and_q(randomiser, mechanism, epsilon):
    round_ = make_round(mechanism, epsilon)
    spec = classroom.client_spec(round_, D)
    reports = validated(round_, randomiser(spec, [ITEM] * DRAWS))
    mech = round_.build()
    if mechanism != "oue":     # the whole output distribution (OUE's bits: the cell test below)
        probs = output_probabilities(round_, spec)
        observed = np.bincount(outcomes(round_, spec, reports), minlength=len(probs))
        assert stats.chisquare(observed, DRAWS * probs).pvalue > ALPHA
    if mechanism == "hr":
        return                 # not a pure protocol: its output law above is the whole story
    support = mech.accumulate(classroom.stack_reports(round_, reports), D)
    p, q = mech.support_probabilities(D)
    for cell, count in enumerate(support):
        chance = p if cell == ITEM else q
        assert stats.binomtest(int(count), DRAWS, chance).pvalue > ALPHA / D, (cell, count)


@pytest.mark.parametrize("mechanism, epsilon", CONFIGURATIONS)
def test_server_estimate_from_browser_reports_is_unbiased(randomiser, mechanism, epsilon):
    rng = np.random.default_rng(2026)
    counts = rng.multinomial(1_000, rng.dirichlet(np.full(D, 0.7)))
    items = np.repeat(np.arange(D), counts)
    round_ = make_round(mechanism, epsilon)
    spec = classroom.client_spec(round_, D)
    repeats = 12
    estimates = []
    for _ in range(repeats):
        reports = validated(round_, randomiser(spec, items))
        estimates.append(classroom_stats.estimate_round(round_, D, reports).raw)
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if mechanism == "hr" else {}
    sd = np.sqrt(mech.variance(counts, **extra) / repeats)
    z = (np.mean(estimates, axis=0) - counts) / sd
    limit = stats.norm.isf(ALPHA / (2 * D))
    assert np.abs(z).max() < limit, (np.argmax(np.abs(z)), z.max(), z.min())


def test_reports_carry_no_true_cell(randomiser):
    """A report has exactly the fields of the mechanism's perturb — nothing named after the item."""
    for mechanism, epsilon in CONFIGURATIONS:
        round_ = make_round(mechanism, epsilon)
        report = randomiser(classroom.client_spec(round_, D), [ITEM])[0]
        assert set(report) == {"grr": {"y"}, "oue": {"bits"}, "olh": {"a", "b", "y"},
                               "hr": {"y"}}[mechanism]


@pytest.mark.parametrize("value, epsilon", [(0, 1.0), (30, 1.0), (120, 2.0), (500, 0.5)])
def test_the_number_randomiser_sends_one_bit_at_duchi_et_al_s_probability(randomiser, value,
                                                                          epsilon):
    """The phone's one bit (dpRandomisers.number) is 1 at the server's probability (binomial
    test), for values inside and beyond [0, B]."""
    from dpcore.interfaces.classroom import numbers
    round_ = classroom.Round("TEST", 1, numbers.NUMBER, epsilon, None, 0.0, None, False,
                             "Minutes?", 120.0)
    spec = classroom.client_spec(round_, D)
    reports = validated(round_, randomiser(spec, [value] * DRAWS))
    ones = sum(r["y"] for r in reports)
    expected = numbers.one_probability(value, 120.0, epsilon)
    assert stats.binomtest(ones, DRAWS, expected).pvalue > ALPHA
