"""Classroom statistics at any class size (dpcore.interfaces.classroom_stats, issue 30).

Statistical tests use fixed seeds; every tolerance is the binomial spread of the estimated rate
(one-sided, Bonferroni over what is checked, each check failing by chance with probability
≤ 10⁻⁴), never tuned.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data import datasets
from dpcore.interfaces import classroom, classroom_stats as cs
from dpcore.mechanisms.hadamard import uniform_permutation

D = 50                                 # the toy town's default question: 7 × 7 + none of these


def make_round(mechanism, epsilon, d=D, seed=1):
    mech = classroom.mechanisms.build(mechanism, epsilon=epsilon)
    permutation = None
    if mechanism == "hr" and mech.blocked:
        permutation = tuple(int(x) for x in uniform_permutation(d, np.random.default_rng(seed)))
    return classroom.Round("TEST", 1, mechanism, float(epsilon), permutation, 0.0, None)


def reports(round_, items, rng, d=D):
    """One report per item from the mechanism's own Python client, in the stored format."""
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if round_.mechanism == "hr" else {}
    batch = mech.perturb(np.asarray(items), d, rng, **extra)
    if round_.mechanism == "oue":
        return [{"bits": "".join("1" if b else "0" for b in row)} for row in batch["bits"]]
    return [{k: int(v[i]) for k, v in batch.items()} for i in range(len(items))]


def powers(kernel, top):
    """kernel^{*k} for k = 0 … top by repeated convolution: the direct reference."""
    out = [np.ones(1)]
    for _ in range(top):
        out.append(np.convolve(out[-1], kernel))
    return out


def typical_class(n, d=D):
    """True counts of a class of n: the most common commute (cs.most_common) on cell 7, the rest
    one or two per commute on five others, cell 0 empty."""
    counts = np.zeros(d, dtype=np.int64)
    counts[7] = cs.most_common(n)
    rest = n - counts[7]
    np.add.at(counts, 10 + 3 * (np.arange(rest) % 5), 1)
    return counts


def shortfall(rate_floor, runs, checks, alpha=1e-4):
    """Allowance below a true rate ``rate_floor`` for a rate estimated from ``runs`` Bernoulli
    trials, one-sided at α per check, Bonferroni over ``checks``."""
    z = stats.norm.isf(alpha / checks)
    return z * math.sqrt(rate_floor * (1 - rate_floor) / runs)


@pytest.mark.parametrize("mechanism, epsilon", [("grr", 1.5), ("grr", 6.0), ("oue", 1.0),
                                                ("olh", 2.0), ("hr", 0.5), ("hr", 3.0)])
def test_the_count_law_has_the_mechanisms_mean_and_variance(mechanism, epsilon):
    """The kernels are the mechanism's: through the estimator, the law's mean is the truth and its
    variance the mechanism's exact variance (Hadamard response's blocked form: given the
    permutation, with the block's classmates as the nuisance)."""
    round_ = make_round(mechanism, epsilon)
    law = cs.count_law(round_, D)
    counts = typical_class(20)
    n = int(counts.sum())
    mech = round_.build()
    extra = {"permutation": round_.permutation_array} if mechanism == "hr" else {}
    variance = mech.variance(counts, **extra)
    lay = mech.layout(D) if mechanism == "hr" else None
    for x in (0, 7, 10):
        if lay is not None and lay.blocks > 1:
            block = round_.permutation_array // lay.items_per_block
            m = int(counts[block == block[x]].sum() - counts[x])
        else:
            m = None if lay is not None else 0
        sharing = n - counts[x] if m is None else m
        pmf = np.convolve(np.convolve(powers(law.own, counts[x])[-1],
                                      powers(law.same, sharing)[-1]),
                          powers(law.other, n - counts[x] - sharing)[-1])
        values = np.arange(len(pmf)) + law.offset * n
        estimates = np.array([law.estimate(v, n) for v in values])
        assert pmf.sum() == pytest.approx(1.0)
        assert pmf @ estimates == pytest.approx(counts[x], abs=1e-9)
        assert pmf @ (estimates - counts[x]) ** 2 == pytest.approx(variance[x], rel=1e-9)


def test_the_count_law_matches_reports_of_the_python_client():
    """Chi-square of the simulated support count of one cell against its exact law (GRR)."""
    round_ = make_round("grr", 4.0)
    law = cs.count_law(round_, D)
    counts = typical_class(10)
    n = int(counts.sum())
    pmf = np.diff(cs._row(law, n, 0, int(counts[7]))[0], prepend=0.0)
    rng = np.random.default_rng(5)
    mech = round_.build()
    seen = np.bincount([int(mech.accumulate(mech.perturb(np.repeat(np.arange(D), counts), D, rng),
                                            D)[7]) for _ in range(4000)], minlength=len(pmf))
    expected = 4000 * pmf
    big = expected >= 5
    observed = np.append(seen[big], seen[~big].sum())
    wanted = np.append(expected[big], expected[~big].sum())
    assert stats.chisquare(observed, wanted).pvalue > 1e-4


ROOM_DEFAULTS = [cs.propose(n, D) for n in (4, 10, 30)]


@pytest.mark.parametrize("proposal", ROOM_DEFAULTS, ids=lambda p: f"{p.students}-students")
def test_intervals_cover_the_true_count_at_their_stated_rate_at_the_room_defaults(proposal):
    """Issue 30's coverage test: many simulated classes of 4, 10 and 30 at the proposed settings;
    for every commute, the share of classes whose interval holds its true count is at least 95 %
    up to the binomial spread of that share."""
    round_ = make_round(proposal.mechanism, proposal.epsilon)
    counts = typical_class(proposal.students)
    items = np.repeat(np.arange(D), counts)
    rng = np.random.default_rng(proposal.students)
    runs = 1500
    covered = np.zeros(D)
    for _ in range(runs):
        estimate = cs.estimate_round(round_, D, reports(round_, items, rng))
        covered += (estimate.lower <= counts) & (counts <= estimate.upper)
    rate = covered / runs
    assert rate.min() >= cs.CONFIDENCE - shortfall(cs.CONFIDENCE, runs, D), (
        f"cell {rate.argmin()} (true {counts[rate.argmin()]}): coverage {rate.min():.3f}")


@pytest.mark.parametrize("mechanism, epsilon, n", [("oue", 1.0, 10), ("olh", 2.0, 10),
                                                   ("hr", 0.5, 10), ("hr", 3.0, 10),
                                                   ("hr", 3.0, 30), ("grr", 1.5, 4)])
def test_intervals_cover_for_every_mechanism(mechanism, epsilon, n):
    """The same for the other mechanisms a teacher can pick (blocked Hadamard response's plug-in
    included, which has no guarantee of its own)."""
    round_ = make_round(mechanism, epsilon)
    counts = typical_class(n)
    items = np.repeat(np.arange(D), counts)
    rng = np.random.default_rng(n)
    runs = 600
    covered = np.zeros(D)
    for _ in range(runs):
        estimate = cs.estimate_round(round_, D, reports(round_, items, rng))
        covered += (estimate.lower <= counts) & (counts <= estimate.upper)
    rate = covered / runs
    assert rate.min() >= cs.CONFIDENCE - shortfall(cs.CONFIDENCE, runs, D), rate.min()


def test_impossible_estimates_are_clipped_and_marked():
    """Four students at ε = 1.5 (issue 30's class): raw estimates below 0 and above 4 are shown
    at 0 and 4 and marked; every interval lies in [0, 4]."""
    round_ = make_round("grr", 1.5)
    items = [12, 12, 30, 49]
    seen_low = seen_high = False
    for seed in range(30):
        estimate = cs.estimate_round(round_, D, reports(round_, items, np.random.default_rng(seed)))
        low, high = estimate.raw < 0, estimate.raw > 4
        assert np.array_equal(estimate.clipped, low | high)
        assert (estimate.shown[low] == 0).all() and (estimate.shown[high] == 4).all()
        assert (estimate.lower >= 0).all() and (estimate.upper <= 4).all()
        assert (estimate.lower <= estimate.upper).all()
        seen_low, seen_high = seen_low or low.any(), seen_high or high.any()
    assert seen_low and seen_high


def test_the_empty_band_holds_an_empty_commutes_estimate_95_percent_of_the_time():
    round_ = make_round("grr", 5.0)
    counts = typical_class(10)
    low, high = cs.empty_band(round_, D, 10)
    rng = np.random.default_rng(3)
    mech, runs = round_.build(), 4000
    inside = sum(low - 1e-9 <= mech.release(counts, rng)[0] <= high + 1e-9 for _ in range(runs))
    assert inside / runs >= cs.CONFIDENCE - shortfall(cs.CONFIDENCE, runs, 1)


@pytest.mark.parametrize("mechanism, epsilon, d, n", [("grr", 5.0, 50, 10), ("grr", 1.5, 13, 60),
                                                      ("oue", 2.0, 50, 30), ("hr", 3.0, 50, 40)])
def test_stand_out_is_the_first_distinguishable_count(mechanism, epsilon, d, n):
    """The bisection finds what a scan finds (distinguishability grows with c)."""
    flags = [cs.distinguishable(mechanism, epsilon, d, n, c) for c in range(1, n + 1)]
    first = flags.index(True) + 1 if True in flags else None
    assert cs.stand_out(mechanism, epsilon, d, n) == first
    if first is not None:
        assert all(flags[first - 1:])


def test_when_one_student_cannot_be_told_from_none_the_sentence_says_what_would():
    """Issue 30's class of 4 at ε = 1.5 (GRR over 50 commutes), and 100 students at ε = 1:
    the suggestions are checked by recomputing them."""
    small = cs.resolution("grr", 1.5, D, 4)
    assert not small.one_from_none
    assert small.sentence().startswith("With 4 reports at ε = 1.5")
    assert "not reliably told from none" in small.sentence()
    assert f"ε = {small.epsilon_needed:g} would separate one student from none" in small.sentence()
    assert cs.stand_out("grr", small.epsilon_needed, D, 4) == 1
    smaller = [e for e in classroom.EPSILONS if 1.5 < e < small.epsilon_needed]
    assert all(cs.stand_out("grr", e, D, 4) != 1 for e in smaller)
    lecture = cs.resolution("grr", 3.0, 50, 40)
    assert lecture.stand_out > cs.most_common(40) and lecture.cells_needed is not None
    assert cs.distinguishable("grr", 3.0, lecture.cells_needed, 40, 8)
    assert not cs.distinguishable("grr", 3.0, lecture.cells_needed + 1, 40, 8)
    assert f"at most {lecture.cells_needed} possible answers (now 50" in lecture.sentence()
    oue = cs.resolution("oue", 3.0, 13, 10)
    assert oue.students_needed is not None and oue.students_needed > 10
    assert cs.distinguishable("oue", 3.0, 13, oue.students_needed,
                              cs.most_common(oue.students_needed))
    assert f"with {oue.students_needed} students" in oue.sentence()
    clear = cs.resolution("grr", 8.0, D, 10)
    assert clear.one_from_none and "even one student" in clear.sentence()


@pytest.mark.parametrize("d", [13, 50])
def test_the_defaults_rule(d):
    """The rule, for every class size 2 … 60 and 100, 200: at the proposed settings the class's
    most common commute (a fifth, at least 2) is distinguishable from an empty one in 9 classes
    of 10, and at no smaller ε is it for any mechanism."""
    for students in list(range(2, 61)) + [100, 200]:
        proposal = cs.propose(students, d)
        target = cs.most_common(students)
        assert proposal.stands_out is not None and proposal.stands_out <= target, students
        assert cs.distinguishable(proposal.mechanism, proposal.epsilon, d, students, target)
        for epsilon in (e for e in classroom.EPSILONS if e < proposal.epsilon):
            assert not any(cs.distinguishable(m, epsilon, d, students, target)
                           for m in classroom.MECHANISMS), (students, epsilon)


@pytest.mark.parametrize("proposal", ROOM_DEFAULTS, ids=lambda p: f"{p.students}-students")
def test_at_the_defaults_the_most_common_commute_stands_out_in_simulated_classes(proposal):
    """The rule checked by simulation: the most common commute's interval excludes 0 in at least
    90 % of simulated classes (up to the binomial spread)."""
    round_ = make_round(proposal.mechanism, proposal.epsilon)
    counts = typical_class(proposal.students)
    items = np.repeat(np.arange(D), counts)
    rng = np.random.default_rng(100 + proposal.students)
    runs = 1000
    seen = sum(cs.estimate_round(round_, D, reports(round_, items, rng)).lower[7] >= 1
               for _ in range(runs))
    assert seen / runs >= cs.POWER - shortfall(cs.POWER, runs, 1)


def test_the_toy_town_question_is_the_one_these_tests_use():
    origins, destinations = classroom.default_zones(datasets.load("toy_town"))
    assert classroom.Question("?", tuple(origins), tuple(destinations)).d == D


@pytest.mark.parametrize("mechanism, epsilon, m", [("grr", 5.0, 0), ("oue", 1.0, 0),
                                                   ("hr", 0.5, None), ("hr", 3.0, 0),
                                                   ("hr", 3.0, 4), ("hr", 3.0, 40)])
def test_the_tail_tables_are_the_direct_convolutions(mechanism, epsilon, m):
    """The Fourier route of ``_row`` against repeated convolution, every k, at n = 30."""
    law = cs.count_law(make_round(mechanism, epsilon), D)
    n = 30
    own, same, other = (powers(kernel, n) for kernel in (law.own, law.same, law.other))
    for k in range(n + 1):
        below, above = cs._row(law, n, m, k)
        sharing = n - k if m is None else min(m, n - k)
        pmf = np.convolve(np.convolve(own[k], same[sharing]), other[n - k - sharing])
        assert below == pytest.approx(np.cumsum(pmf), abs=1e-12)
        assert above == pytest.approx(np.cumsum(pmf[::-1])[::-1], abs=1e-12)


def scanned_interval(law, n, w, m):
    """The Neyman inversion by scanning every k (the definition, no monotonicity used): from
    the first k with P(W ≥ w | k) > α/2 to the last with P(W ≤ w | k) > α/2."""
    rows = [cs._row(law, n, m, k) for k in range(n + 1)]
    lows = [k for k in range(n + 1) if rows[k][1][w] > cs.ALPHA / 2]
    highs = [k for k in range(n + 1) if rows[k][0][w] > cs.ALPHA / 2]
    low, high = (lows[0] if lows else n), (highs[-1] if highs else 0)
    return (low, high) if low <= high else (high, low)


@pytest.mark.parametrize("mechanism, epsilon, n, m", [
    ("grr", 5.0, 40, 0), ("grr", 0.1, 40, 0), ("oue", 1.0, 60, 0), ("olh", 3.0, 25, 0),
    ("hr", 0.5, 40, None), ("hr", 3.0, 40, 0), ("hr", 3.0, 40, 7), ("hr", 8.0, 60, 3)])
def test_the_bisection_gives_every_interval_the_scan_gives(mechanism, epsilon, n, m):
    """``interval`` bisects over k, relying on the tails being monotone in k (a student on the
    cell contributes a stochastically larger amount than one elsewhere): for every possible
    count it equals the scan over every k, and ``_starts_above_zero``'s two-row shortcut is the
    scan's "starts above 0"; the tails are monotone up to rounding far below α/2."""
    law = cs.count_law(make_round(mechanism, epsilon), D)
    size = (len(law.own) - 1) * n + 1
    scanned = [scanned_interval(law, n, w, m) for w in range(size)]
    assert [cs.interval(law, n, w + law.offset * n, m) for w in range(size)] == scanned
    assert cs._starts_above_zero(law, n, m).tolist() == [low >= 1 for low, _ in scanned]
    rows = np.array([cs._row(law, n, m, k) for k in range(n + 1)])     # (k, below/above, w)
    assert np.diff(rows[:, 0], axis=0).max() < 1e-13 and np.diff(rows[:, 1], axis=0).min() > -1e-13


# ------------------------------------------ what the intervals drawn say (issue 42, point 2)
@pytest.mark.parametrize("mechanism, epsilon, n", [("grr", 5.0, 4), ("grr", 5.0, 30),
                                                   ("oue", 3.0, 30), ("hr", 0.5, 30)])
def test_the_chances_the_sentences_state_are_what_simulated_classes_show(mechanism, epsilon, n):
    """One student's commute (cell 7) and an empty one (cell 0) in classes of n with the others
    spread out: the share of classes whose interval starts above 0 is ``one_chance`` and
    ``empty_chance`` up to the binomial spread (two-sided, Bonferroni over the two). (Blocked
    Hadamard response's chances assume the classmates spread evenly over the blocks, as its
    intervals' plug-in does: not checked here.)"""
    round_ = make_round(mechanism, epsilon)
    what = cs.resolution(mechanism, epsilon, D, n)
    items = np.concatenate([[7], 10 + np.arange(n - 1) % 30])
    rng = np.random.default_rng(n)
    runs = 1500
    seen = np.zeros(2)
    for _ in range(runs):
        lower = cs.estimate_round(round_, D, reports(round_, items, rng)).lower
        seen += lower[[7, 0]] >= 1
    for rate, chance in zip(seen / runs, (what.one_chance, what.empty_chance)):
        assert abs(rate - chance) <= shortfall(max(chance, 1 / runs), runs, 4), (rate, chance)
    assert what.empty_chance <= cs.ALPHA / 2


@pytest.mark.parametrize("mechanism, epsilon, d, n", [("grr", 5.0, 50, 4), ("grr", 5.0, 50, 30),
                                                      ("oue", 2.0, 50, 30), ("grr", 8.0, 50, 10)])
def test_the_first_sentence_states_the_chance_that_defines_standing_out(mechanism, epsilon, d, n):
    """"Told from none" means an interval above 0 in at least 9 classes of 10: the commute size
    the sentence names is the first whose chance reaches it, and the chance it states for one
    student is the computed one."""
    what = cs.resolution(mechanism, epsilon, d, n)
    law = cs.count_law(cs._round(mechanism, epsilon), d)
    chance = [cs.chance_above_zero(law, cs._classmates_in_block(cs._round(mechanism, epsilon), d,
                                                                n, c), n, c)
              for c in range(n + 1)]
    assert chance[1] == what.one_chance and chance[0] == what.empty_chance
    first = next((c for c in range(1, n + 1) if chance[c] >= cs.POWER), None)
    assert first == what.stand_out
    assert f"in {cs.percent(what.one_chance)} of" in what.sentence()
    if what.one_from_none:
        assert "even one student on a commute is told from none" in what.sentence()
    else:
        assert "not reliably told from none" in what.sentence()
        assert "cannot" not in what.sentence()


@pytest.mark.parametrize("n, items_seed", [(4, 1), (30, 2)])
def test_the_reading_counts_the_intervals_drawn_and_what_chance_gives(n, items_seed):
    """Issue 42's class of four at ε = 5 (GRR over 50 commutes, two on one commute) and a class of
    30: the sentence counts the intervals starting above 0 and gives the chance-alone number
    as the computed false-alarm chance times the commutes nobody can take (d − n to d − 1); the
    same average is what simulated classes show on their empty commutes."""
    round_ = make_round("grr", 5.0)
    items = [12, 12, 30, 41] if n == 4 else [12] * 6 + list(range(20, 44))
    estimate = cs.estimate_round(round_, D, reports(round_, items,
                                                    np.random.default_rng(items_seed)))
    said = estimate.reading()
    count = int((estimate.lower >= 1).sum())
    assert said.startswith(f"Here {count} commutes have an interval starting above 0: each is "
                           "probably taken by someone")
    chance = estimate.resolution.empty_chance
    assert f"with probability {cs.percent(chance)}" in said
    fewest, most = D - n, D - 1
    assert (f"among the {fewest} to {most} commutes nobody takes here chance alone gives "
            f"between {chance * fewest:.1f} and {chance * most:.1f} of them") in said
    empty = np.setdiff1d(np.arange(D), items)
    rng = np.random.default_rng(n)
    runs = 600
    alarms = [(cs.estimate_round(round_, D, reports(round_, items, rng)).lower[empty] >= 1).sum()
              for _ in range(runs)]
    # GRR's cells compete for each report, so their alarms are negatively correlated and the
    # independent spread bounds the sum's
    spread = math.sqrt(len(empty) * chance * (1 - chance) / runs)
    assert abs(np.mean(alarms) - chance * len(empty)) <= stats.norm.isf(1e-4 / 2) * spread
    if n == 4:            # the screen: one-student commutes above 0 and a false alarm
        assert count > len(set(items)) - 1 and (estimate.lower[empty] >= 1).any()


@pytest.mark.parametrize("items, seed, chance_like", [
    ([12, 12, 30, 30], 5, True),                            # 2 above 0, ≈ 1 by chance
    ([12] * 6 + list(range(20, 44)), 1, True),              # 1 above 0, ≈ 0.5 by chance
    ([12] * 6 + list(range(20, 44)), 2, False)],            # 3 above 0, ≈ 0.5 by chance
    ids=["class-of-4", "class-of-30-one", "class-of-30-three"])
def test_the_reading_says_how_many_may_be_chance_when_chance_gives_half_as_many(
        items, seed, chance_like):
    """QA walk of issue 42: two intervals above 0 with about one expected by chance are not
    "each probably taken". When the chance-alone number stated (its upper end) is half the
    count or more, the sentence says how many may be chance: the 95 % quantile of the false
    alarms among the commutes nobody takes, which simulated classes confirm."""
    round_ = make_round("grr", 5.0)
    estimate = cs.estimate_round(round_, D, reports(round_, items, np.random.default_rng(seed)))
    said, count = estimate.reading(), estimate.above_zero
    chance = estimate.resolution.empty_chance
    assert (2 * round(chance * (D - 1), 1) >= count) == chance_like
    if not chance_like:
        assert "probably taken by someone" in said and "may be chance" not in said
        return
    assert "probably taken" not in said
    alarms = cs.chance_count(chance, D - 1)
    assert stats.binom.cdf(alarms, D - 1, chance) >= 0.95 > stats.binom.cdf(alarms - 1, D - 1,
                                                                             chance)
    may = {1: "it", 2: "both"}.get(count, f"all {count}" if alarms >= count else
                                   f"up to {alarms} of them")
    assert (f"Here {count} commute{'s have' if count > 1 else ' has'} an interval starting "
            f"above 0, but chance alone gives half as many or more (below): {may} may be "
            f"chance, not someone's commute — on the commutes nobody takes it gives up to "
            f"{alarms} in 19 classes of 20.") in said
    assert alarms >= min(count, 2)          # "both" / "it" only when chance reaches that many
    rng = np.random.default_rng(seed + 100)   # simulated classes: false alarms within the bound
    empty = np.setdiff1d(np.arange(D), items)
    seen = [(cs.estimate_round(round_, D, reports(round_, items, rng)).lower[empty] >= 1).sum()
            for _ in range(400)]
    assert np.mean(np.array(seen) <= alarms) >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 400)


def test_percent_never_rounds_to_a_certainty():
    assert cs.percent(0.995) == "over 99 %" and cs.percent(0.02) == "2 %"
    assert cs.percent(0.0134) == "1.3 %" and cs.percent(0.758) == "76 %" and cs.percent(0) == "0 %"
