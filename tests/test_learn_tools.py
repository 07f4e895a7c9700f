"""The computations of the Learn page's "more tools" lessons against the seed texts' formulas
(files in ../shared/seeds/), and the lessons drawn on the bundled data (AppTest)."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.mechanisms.central import analytic_gaussian_sigma
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.theory import (
    amplification,
    anonymity,
    coins,
    composition,
    learn,
    mean_estimation,
    memoization,
    multi_message,
    neighbours,
    privacy_theory,
    selection,
)
from tests.app_pages import run_page, text
from tests.plotly_spec import figure, traces, values
from ui.learn import menu, tools

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "5_Learn.py")
SCORES = np.array([10, 9, 8, 5, 5, 0, 0, 0], dtype=float)


def _within_binomial(frequencies, probabilities, draws, sds=5.0):
    """Every frequency within ``sds`` binomial standard deviations of its probability."""
    sd = np.sqrt(probabilities * (1 - probabilities) / draws)
    return np.all(np.abs(frequencies - probabilities) <= sds * sd + 1e-12)


# ------------------------------------------------------------------------- exponential mechanism
def test_exponential_mechanism_is_the_source_formula():
    """001 l.220–266 and 003 l.1948 (exponential mechanism), 000 §2.4: P[v] ∝ exp(ε u_v/(2Δu))."""
    p = selection.exponential_probabilities(SCORES, 0.7, sensitivity=2.0)
    weights = np.exp(0.7 * SCORES / 4.0)
    assert np.allclose(p, weights / weights.sum())
    # Ratio of any two outcomes' probabilities on neighbouring scores is at most e^ε.
    moved = SCORES + np.array([1, -1, 0, 1, 0, 0, -1, 0])
    q = selection.exponential_probabilities(moved, 0.7)
    assert np.max(np.abs(np.log(selection.exponential_probabilities(SCORES, 0.7) / q))) \
        <= 0.7 + 1e-12


def test_gumbel_max_samples_the_exponential_mechanism():
    """The product's Gumbel top-1 (TopK.select, add/remove) names each score with the exponential
    mechanism's probability (Gumbel-max trick): frequencies of 40,000 seeded draws within 5
    binomial standard deviations; so does the plain Gumbel noisy max."""
    eps, draws = 0.5, 40_000
    p = selection.exponential_probabilities(SCORES, eps)
    topk = mechanisms.build("topk", epsilon=eps, k=1, neighbours="add_remove")
    assert topk.selection_scale == pytest.approx(2 / eps)
    rng = np.random.default_rng(38)
    picks = [int(topk.select(SCORES, rng)[0]) for _ in range(draws)]
    assert _within_binomial(np.bincount(picks, minlength=SCORES.size) / draws, p, draws)
    gumbel = selection.noisy_max_frequencies(SCORES, eps, draws, np.random.default_rng(1),
                                             noise="gumbel")
    assert _within_binomial(gumbel, p, draws)
    # …and Laplace noisy max is a different distribution: its top probability differs.
    assert abs(selection.noisy_max_probabilities(SCORES, eps)[0] - p[0]) > 0.01


def test_laplace_noisy_max_integral_matches_simulation_and_two_candidate_closed_form():
    """Report-noisy-max with Lap(2Δu/ε) (Dwork & Roth §3.3): the integrated probabilities match
    200,000 seeded draws within 5 binomial SDs, and for two candidates the closed form of
    P[c₁ + X₁ > c₂ + X₂] for the difference of two Laplace(b) noises:
    1 − ½ e^{−g/b}(1 + g/(2b)) for a gap g ≥ 0."""
    eps, draws = 0.5, 200_000
    exact = selection.noisy_max_probabilities(SCORES, eps)
    assert exact.sum() == pytest.approx(1.0)
    simulated = selection.noisy_max_frequencies(SCORES, eps, draws, np.random.default_rng(7))
    assert _within_binomial(simulated, exact, draws)
    b, gap = 2 / eps, 3.0
    two = selection.noisy_max_probabilities([gap, 0.0], eps)
    assert two[0] == pytest.approx(1 - 0.5 * math.exp(-gap / b) * (1 + gap / (2 * b)),
                                   abs=1e-6)


# ------------------------------------------------------------------------- neighbours
def test_substitution_doubles_the_histogram_sensitivity_on_a_real_table():
    """003 l.948–1060: an edit is a removal then an addition (edit neighbours are membership
    2-neighbours), so membership ε ⇒ edit 2ε; on the county table the L1 distances are 1 and 2 and
    the product's Laplace scales 1/ε and 2/ε."""
    od = datasets.load("ireland_county")
    origin = int(od.rows[np.argmax(od.counts)])
    row = learn.origin_row(od, origin)
    first, second = np.argsort(-row, kind="stable")[:2]
    pair = neighbours.neighbour_rows(od, origin, int(first), int(second))
    assert (pair.l1(pair.removed), pair.l1(pair.moved)) == (1, 2)
    assert pair.moved.sum() == pair.counts.sum() == pair.removed.sum() + 1
    for relation in neighbours.RELATIONS:
        laplace = mechanisms.build("laplace", epsilon=0.8, neighbours=relation)
        assert laplace.scale == pytest.approx(neighbours.histogram_l1_sensitivity(relation) / 0.8)
    rows = {r["release"]: r for r in neighbours.guarantees(0.8)}
    add = rows["Laplace for add/remove (scale 1/ε)"]
    assert add["edit"] == pytest.approx(2 * add["membership"])
    assert math.isinf(rows["Substitution ε-DP table + exact total"]["membership"])


# ------------------------------------------------------------------------- zCDP and Gaussians
def test_zcdp_formulas_and_monthly_composition():
    """003 l.2344 names Rényi DP / zCDP; formulas from Bun & Steinke (TCC 2016), Prop. 1.3, 1.6,
    Lemma 1.7: ρ = Δ²/(2σ²), ρ's add, ε = ρ + 2√(ρ ln(1/δ)). Basic and advanced composition are
    the product's (privacy_theory.advanced_composition)."""
    assert composition.gaussian_rho(2.0, 3.0) == pytest.approx(9 / 8)
    assert composition.zcdp_epsilon(0.5, 1e-5) == pytest.approx(
        0.5 + 2 * math.sqrt(0.5 * math.log(1e5)))
    table = composition.monthly_gaussian(0.1, 1e-5, months=12)
    sigma = analytic_gaussian_sigma(0.1, 1e-5)
    last = table.iloc[-1]
    assert last["rho"] == pytest.approx(12 / (2 * sigma ** 2))
    assert last["basic"] == pytest.approx(1.2)
    advanced, advanced_delta = privacy_theory.advanced_composition(0.1, 12, 1e-5, 1e-6)
    assert (last["advanced"], last["advanced_delta"]) == pytest.approx((advanced, advanced_delta))
    assert last["zcdp"] == pytest.approx(last["rho"] + 2 * math.sqrt(
        last["rho"] * math.log(1 / advanced_delta)))
    # The zCDP total is a valid (ε, δ) for the composed Gaussian: its exact profile (one
    # Gaussian of σ/√12) at that ε is at most δ.
    assert privacy_theory.gaussian_profile(last["zcdp"], sigma / math.sqrt(12)) <= advanced_delta


def test_classic_vs_analytic_gaussian():
    """002 ("σ² = 2s² log(1.25/δ)/ε²", the Gaussian mechanism section) and 003 ≈ l.2087: the
    classic σ; analytic σ from Balle & Wang 2018 meets the exact condition. The classic is wider
    below ε = 1 and stops being private past classic_gaussian_limit (≈ 8.42 at δ = 1e-5)."""
    frame = composition.gaussian_sigmas([0.1, 0.5, 0.9, 2.0, 9.0], 1e-5)
    assert np.allclose(frame["classic_sigma"] ** 2,
                       2 * np.log(1.25 / 1e-5) / frame["epsilon"] ** 2)
    assert list(frame["classic_status"]) == ["proven"] * 3 + ["unproven, private", "not private"]
    assert (frame.loc[frame["epsilon"] < 1, "ratio"] > 1).all()
    assert privacy_theory.classic_gaussian_limit(1e-5) == pytest.approx(8.42, abs=0.01)
    for e, s in zip(frame["epsilon"], frame["analytic_sigma"]):
        assert privacy_theory.gaussian_profile(e, s) <= 1e-5 * (1 + 1e-9)


# ------------------------------------------------------------------------- coins
def test_two_coins_estimate_and_exact_interval():
    """003 l.715–741 (two-coin group activity): E[p] = 1/4 + q/2 and q = 2 E[p] − 1/2; ε = ln 3
    (000 §2.1). Over 2,000 seeded surveys of 400 people with q = 0.3 the estimate is unbiased
    (within 5 SEs) and the mapped Clopper–Pearson interval covers q at least 95 % − 3 SEs."""
    assert coins.EPSILON == pytest.approx(math.log(coins.P_YES_IF_YES / coins.P_YES_IF_NO))
    assert coins.expected_yes(0.3) == pytest.approx(0.25 + 0.15)
    assert coins.estimate(coins.expected_yes(0.3)) == pytest.approx(0.3)
    rng = np.random.default_rng(5)
    runs = [coins.survey(400, 120, rng) for _ in range(2_000)]
    estimates = np.array([r.estimate for r in runs])
    se = np.sqrt(4 * 0.4 * 0.6 / 400 / len(runs))
    assert abs(estimates.mean() - 0.3) < 5 * se
    covered = np.mean([r.interval[0] <= 0.3 <= r.interval[1] for r in runs])
    assert covered >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / len(runs))
    low, high = coins.clopper_pearson(7, 20)
    assert (low, high) == pytest.approx((stats.beta.ppf(0.025, 7, 14),
                                         stats.beta.ppf(0.975, 8, 13)))


# ------------------------------------------------------------------------- the page
@pytest.mark.parametrize("lesson", list(tools.LESSONS))
@pytest.mark.parametrize("dataset", ["toy_town", "ireland_county"])
def test_every_tool_lesson_draws(lesson, dataset):
    at = run_page(PAGE, {"lesson": lesson}, dataset, {})
    assert not at.warning and not at.error
    assert [b.value for b in at.get("button_group")][:2] == [menu.part_of(lesson), lesson]
    # Formulas and sentences carry no control characters (a "\f" in a non-raw string once
    # turned \frac into a form feed).
    for element in [*at.markdown, *at.latex, *at.caption]:
        assert not re.search(r"[\x00-\x08\x0b-\x1f]", element.value), element.value


def test_selection_lesson_states_the_computed_probabilities():
    """Default: the home zone left out (it wins by far); the numbers are dpcore's on the rest."""
    at = run_page(PAGE, {"lesson": "select"}, "toy_town", {})
    od = datasets.load("toy_town")
    origin = int(np.argmax(od.origin_totals()))
    away = od.destinations.ids != od.origins.ids[origin]
    row = learn.origin_row(od, origin)[away]
    p = selection.exponential_probabilities(row, 1.0)
    q = selection.noisy_max_probabilities(row, 1.0)
    best = int(np.argmax(row))
    shown = text(at)
    assert f"with probability **{p[best]:.1%}**" in shown
    assert f"names it with probability **{q[best]:.1%}**" in shown
    assert f"from ε = **{selection.epsilon_for(row, 0.9):.3g}**" in shown
    (curve,) = traces(figure(at, "busiest destination is named"),
                      "Exponential mechanism (= Gumbel noisy max)")
    eps = values(curve["x"])
    assert np.allclose(values(curve["y"]),
                       [selection.exponential_probabilities(row, e)[best] for e in eps])


def test_epsilon_for_inverts_the_exponential_mechanism():
    scores = np.array([100.0, 90.0, 5.0, 0.0])
    for target in (0.5, 0.9, 0.999):
        eps = selection.epsilon_for(scores, target)
        assert selection.exponential_probabilities(scores, eps)[0] == pytest.approx(target)
    with pytest.raises(ValueError, match="tied"):
        selection.epsilon_for([3.0, 3.0, 1.0], 0.9)


def test_gaussian_lesson_states_the_monthly_totals():
    at = run_page(PAGE, {"lesson": "gaussian"}, "ireland_county", {})
    last = composition.monthly_gaussian(0.1, 1e-5).iloc[-1]
    shown = text(at)
    assert f"zCDP **{last['zcdp']:.3g}**" in shown and f"advanced **{last['advanced']:.3g}**" \
        in shown
    fig = figure(at, "Gaussian noise needed")
    assert "ε" in fig["layout"]["xaxis"]["title"]["text"]


# ------------------------------------------------------------------------- local mean estimation
def test_mean_variances_are_the_textbook_formulas():
    """003 l.1700–1705: local Laplace λ = B/ε per person, mean variance 2B²/(ε²n); central
    λ = B/(nε), variance 2(B/(εn))²."""
    b, eps, n = 300.0, 0.5, 10_000
    assert mean_estimation.local_laplace_variance(b, eps, n) == pytest.approx(
        2 * (b / eps) ** 2 / n)
    assert mean_estimation.central_laplace_variance(b, eps, n) == pytest.approx(
        2 * (b / (n * eps)) ** 2)


def test_one_bit_mechanism_is_unbiased_with_its_stated_variance():
    """Duchi, Jordan & Wainwright (JASA 2018) one-bit mechanism, per person: over 4,000 seeded
    repetitions on 500 people the mean estimate is unbiased (within 5 SEs) and its variance
    matches (B/2)²(C² − mean t²)/n (within the 99.9 % chi-square band); each report is ε-LDP
    (the two outputs' probabilities differ by at most e^ε for any two inputs)."""
    eps, b, reps = 1.0, 50.0, 4_000
    rng = np.random.default_rng(11)
    x = rng.uniform(0, b, 500)
    c = mean_estimation.one_bit_constant(eps)
    assert c == pytest.approx((math.exp(eps) + 1) / (math.exp(eps) - 1))
    assert (0.5 + 1 / (2 * c)) / (0.5 - 1 / (2 * c)) == pytest.approx(math.exp(eps))
    reports = mean_estimation.one_bit_reports(np.tile(x, (reps, 1)), b, eps, rng)
    estimates = b * (reports.mean(axis=1) + 1) / 2
    t = 2 * x / b - 1
    variance = (b / 2) ** 2 * (c ** 2 - np.mean(t ** 2)) / x.size
    assert abs(estimates.mean() - x.mean()) < 5 * math.sqrt(variance / reps)
    ratio = estimates.var(ddof=1) / variance
    low, high = stats.chi2.ppf([0.0005, 0.9995], reps - 1) / (reps - 1)
    assert low < ratio < high
    # The product's per-cell draw on the county data: same variance formula, unbiased.
    od = datasets.load("ireland_county")
    found = mean_estimation.commute_distances(od)
    draws = np.array([mean_estimation.one_bit_mean(found, eps, np.random.default_rng(s))
                      for s in range(400)])
    sd = math.sqrt(mean_estimation.one_bit_variance(found, eps))
    assert abs(draws.mean() - found.mean) < 5 * sd / math.sqrt(400)
    assert 0.8 < draws.std(ddof=1) / sd < 1.2


def test_distances_leave_out_unplaced_zones_and_none_without_positions():
    od = datasets.load("toy_town")
    found = mean_estimation.commute_distances(od)
    assert found.unplaced == ("Work from home",) and found.left_out > 0
    assert found.n + found.left_out == od.n
    bare = ODMatrix.from_pairs("bare", ZoneSet.from_ids(["a", "b"]), ZoneSet.from_ids(["a", "b"]),
                               [0, 1], [1, 0], [3, 4])
    assert mean_estimation.commute_distances(bare) is None
    assert mean_estimation.haversine_km(53.0, -6.0, 54.0, -6.0) == pytest.approx(111.2, abs=0.1)


def test_mean_lesson_states_the_computed_numbers():
    at = run_page(PAGE, {"lesson": "mean"}, "ireland_county", {})
    found = mean_estimation.commute_distances(datasets.load("ireland_county"))
    local = math.sqrt(mean_estimation.local_laplace_variance(found.bound, 1.0, found.n))
    shown = text(at)
    assert f"true mean **{found.mean:.2f} km**" in shown
    assert f"SD √(2B²/(ε²n)) = **{local:.3g} km**" in shown
    fig = figure(at, "average commute distance")
    assert "km" in fig["layout"]["yaxis"]["title"]["text"]


# ------------------------------------------------------------------------- memoization
def test_fresh_answers_are_averaged_out_and_memoized_ones_are_not():
    """000 l.243 (permanent memoization for repeated collection) and l.290: fresh randomised
    response every month spends T·ε and the Bayes attacker's accuracy climbs towards 1;
    memoized, it stays at one answer's. Simulated on 5,000 people with seed 3, every month's
    accuracy within 5 binomial SDs of the exact binomial computation; the exact one-answer
    accuracy is p = e^ε/(1 + e^ε) when one answer outweighs the prior odds, else max(π, 1 − π)."""
    eps, months, crowd = 1.0, 12, 5_000
    for share in (0.3, 0.15):   # one answer outweighs the prior odds at 0.3, not at 0.15
        rng = np.random.default_rng(3)
        truth = np.zeros(crowd, dtype=bool)
        truth[:int(share * crowd)] = True
        frame = memoization.simulate_attack(truth, eps, months, rng)
        for mode in ("fresh", "memoized"):
            exact, simulated = frame[f"{mode}_exact"], frame[f"{mode}_simulated"]
            assert _within_binomial(simulated.to_numpy(), exact.to_numpy(), crowd)
        p = math.exp(eps) / (1 + math.exp(eps))
        follows_report = eps >= abs(math.log(share / (1 - share)))
        assert frame["memoized_exact"].nunique() == 1
        assert frame["memoized_exact"].iloc[0] == pytest.approx(
            p if follows_report else 1 - share)
        assert frame["fresh_exact"].iloc[-1] > 0.95 > frame["memoized_exact"].iloc[-1]
        assert list(frame["epsilon_fresh"]) == pytest.approx([t * eps for t in range(1, 13)])
        assert (frame["epsilon_memoized"] == eps).all()


def test_memo_lesson_states_the_simulated_attack():
    at = run_page(PAGE, {"lesson": "memo"}, "ireland_county", {})
    shown = text(at)
    assert "guarantee spent is 12 × ε = **12**" in shown
    assert "the guarantee at ε = **1**" in shown
    fig = figure(at, "Averaging a person's monthly answers")
    assert traces(fig, "Fresh randomness every month (exact)")


# ------------------------------------------------------------------------- k-anonymity, sensitivity
def test_k_anonymity_suppresses_exactly_the_cells_below_k():
    """003 l.439–469: k-anonymous when every person shares their quasi-identifiers (origin,
    destination) with at least k − 1 others: every published cell ≥ k."""
    od = datasets.load("toy_town")
    found = anonymity.k_anonymise(od, 5)
    published = od.counts[od.counts >= 5]
    assert (published >= 5).all() and found.cells - found.cells_suppressed == published.size
    assert found.people - found.people_suppressed == published.sum()


def test_median_local_sensitivity_by_brute_force():
    """003 l.1743: local sensitivity at x is max over neighbours x' of |f(x) − f(x')|; checked by
    replacing each person in turn by 0 and by B on small tables, and the number of replacements
    needed to move the median by moving people one at a time from the median to B."""
    rng = np.random.default_rng(4)
    for _ in range(30):
        values = rng.integers(1, 7, 5).astype(float)   # inside (0, B): moves to 0 or B change it
        counts = rng.integers(0, 4, 5)
        if counts.sum() < 3:
            continue
        people = np.repeat(values, counts)
        found = anonymity.median_sensitivity(values, counts, 10.0)
        lower = lambda xs: float(np.sort(xs)[(xs.size + 1) // 2 - 1])
        assert found.median == lower(people)
        moves = [abs(lower(np.where(np.arange(people.size) == i, v, people)) - found.median)
                 for i in range(people.size) for v in (0.0, 10.0)]
        assert found.local == pytest.approx(max(moves))
        needed = []
        for direction in (0.0, 10.0):   # move median-valued people out one at a time
            moved, steps = people.copy(), 0
            while lower(moved) == found.median and steps < people.size:
                moved[np.flatnonzero(moved == found.median)[0]] = direction
                steps += 1
            needed.append(steps)
        assert min(needed) == found.changes_to_move
        assert found.global_ == 10.0


def test_kanon_lesson_states_the_computed_numbers():
    at = run_page(PAGE, {"lesson": "kanon"}, "ireland_county", {})
    od = datasets.load("ireland_county")
    found = anonymity.k_anonymise(od, 5)
    distances = mean_estimation.commute_distances(od)
    median = anonymity.median_sensitivity(distances.km, distances.counts, distances.bound)
    shown = text(at)
    assert f"suppresses **{found.cells_suppressed:,}** of {found.cells:,} commutes" in shown
    assert f"{median.changes_to_move:,} commuters would have to change" in shown
    fig = figure(at, "What a k-anonymous table hides")
    assert traces(fig, "Commuters")


# ------------------------------------------------------------------------- multi-message shuffling
def test_single_and_one_bit_per_cell_variances_are_the_products_grr():
    """001 l.69–85 (the shuffler over all messages; arXiv 1908.11358): the single-message
    variance is the product's GRR variance of an empty cell, a bit's is GRR's with d = 2 (for any
    count, since p′(1 − p′) = q′(1 − q′)); each cell's shuffled bits are (ε/2, δ/2)-DP by the
    product's clone bound, so two cells (one replaced commute) compose to (ε, δ)."""
    n, d, eps, delta = 318, 56, 1.0, 1e-6
    table = multi_message.compare(n, d, eps, delta)
    single, bits = table.iloc[0], table.iloc[1]
    grr = mechanisms.build("grr", epsilon=single["epsilon0"])
    assert single["rmse"] ** 2 == pytest.approx(float(grr.variance(np.zeros(d), n=n, d=d)[0]))
    binary = mechanisms.build("grr", epsilon=bits["epsilon0"])
    for count in (0, 100):
        assert bits["rmse"] ** 2 == pytest.approx(float(binary.variance(
            np.array([count, n - count]), n=n, d=2)[0]))
    per_cell = amplification.shuffle_guarantee("clone_grr", n, bits["epsilon0"], delta / 2)
    assert per_cell.epsilon <= eps / 2 + 1e-5   # the forward search rounds ε up to 1e-6 steps
    assert table.iloc[2]["rmse"] == pytest.approx(math.sqrt(2) * 2 / eps)


def test_one_bit_per_cell_estimates_are_unbiased_with_that_variance():
    """A seeded simulation of the one-bit-per-cell protocol on toy_town's table (2,000 runs):
    every cell's mean estimate within 5 SEs of its count, the pooled variance within 5 % of
    n p′(1 − p′)/(2p′ − 1)²."""
    od = datasets.load("toy_town")
    n, eps0, runs = od.n, 1.5, 2_000
    truth = np.zeros(od.domain_size)
    truth[od.flat_index] = od.counts
    p = 1 / (1 + math.exp(-eps0))
    rng = np.random.default_rng(9)
    # Ones reported per cell: Binomial(count, p) + Binomial(n − count, 1 − p), run by run.
    ones = rng.binomial(truth.astype(np.int64), p, (runs, truth.size)) + rng.binomial(
        (n - truth).astype(np.int64), 1 - p, (runs, truth.size))
    estimates = (ones - n * (1 - p)) / (2 * p - 1)
    variance = multi_message.bit_variance(n, eps0)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 5 * math.sqrt(variance / runs))
    assert estimates.var(axis=0, ddof=1).mean() == pytest.approx(variance, rel=0.05)


def test_messages_lesson_states_the_computed_errors():
    at = run_page(PAGE, {"lesson": "messages"}, "ireland_county", {})
    od = datasets.load("ireland_county")
    table = multi_message.compare(od.n, od.domain_size, 1.0, 1e-6)
    shown = text(at)
    assert f"the error per cell is **{table.iloc[0]['rmse']:,.1f}** commuters" in shown
    assert f"it is **{table.iloc[1]['rmse']:,.1f}**, whatever d" in shown
    assert figure(at, "Error per cell at central")
    # the abstract of arXiv 1908.11358: single-message error Ω̃(min(n^{1/4}, √B)); n = 1,000,000
    # and d = 10,000 give min(31.6, 100) = 31.6, whichever term is the smaller
    assert multi_message.single_message_order(10 ** 6, 10 ** 4) == pytest.approx(10 ** 1.5)
    assert multi_message.single_message_order(10 ** 6, 400) == pytest.approx(20)
    n, d = od.n, od.domain_size
    order = min(n ** 0.25, math.sqrt(d))
    assert (f"min({n ** 0.25:,.1f}, {math.sqrt(d):,.1f}) = {order:,.1f} here, up to constants "
            "and log factors the abstract does not give") in shown
    assert any("constants and messages per phone were not available" in c.value for c in at.caption)
