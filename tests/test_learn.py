"""Unit and statistical tests of dpcore.theory.learn: exposure, the differencing attack (its posterior is
a correct Bayesian posterior and never beats the 2ε bound), one phone's walkthrough (it reports
what the client really did, at the rates the protocol promises), the crowd's unbiased estimate,
the classroom domain and the three trust models.

Statistical tolerances are four standard errors of the quantity tested, with fixed seeds.
"""

import math

import numpy as np
import pytest

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.mechanisms import LOCAL
from dpcore.mechanisms.hadamard import (
    HadamardMechanism,
    HadamardResponse,
    hm_probabilities,
)
from dpcore.mechanisms.local import PureProtocol
from dpcore.theory import accuracy, amplification, learn

SIGMAS = 4.0


@pytest.fixture(scope="module")
def toy():
    return datasets.load("toy_town")


def grid_matrix(side: int, seed: int = 3) -> ODMatrix:
    """side × side zones, no coordinates, no parents, random counts (some cells of 1)."""
    rng = np.random.default_rng(seed)
    zones = ZoneSet.from_ids([f"Z{i}" for i in range(side)])
    counts = rng.poisson(rng.gamma(0.5, 4.0, size=side * side))
    flat = np.arange(side * side)
    return ODMatrix.from_pairs("grid", zones, zones, flat // side, flat % side, counts)


# ------------------------------------------------------------------------------------- exposure
def test_exposure_counts_and_example(toy):
    found = learn.exposure(toy)
    assert found.cells_single == int((toy.counts == 1).sum())
    assert found.cells_under_10 == int((toy.counts < 10).sum())
    assert found.people_under_10 == int(toy.counts[toy.counts < 10].sum())
    # The example is, by brute force, the count-1 commute between two different placed zones
    # whose smaller end total is largest.
    origin_totals, destination_totals = toy.origin_totals(), toy.destination_totals()
    best, best_crowd = None, -1
    for r, c, count in zip(toy.rows, toy.cols, toy.counts):
        placed = toy.origins.has_coordinates[r] and toy.destinations.has_coordinates[c]
        if count == 1 and placed and toy.origins.ids[r] != toy.destinations.ids[c]:
            crowd = min(origin_totals[r], destination_totals[c])
            if crowd > best_crowd:
                best, best_crowd = r * toy.n_destinations + c, crowd
    assert found.example == best
    assert min(found.origin_total, found.destination_total) == best_crowd


def test_exposure_without_single_cells_has_no_example():
    zones = ZoneSet.from_ids(["A", "B"])
    od = ODMatrix.from_pairs("big", zones, zones, [0, 1], [1, 0], [20, 30])
    found = learn.exposure(od)
    assert (found.example, found.cells_single, found.cells_under_10) == (None, 0, 0)


# -------------------------------------------------------------------------- differencing attack
def test_exact_difference_is_the_newcomers_destination_only(rng):
    attack = learn.differencing_attack([5, 0, 1, 7, 2], 2, 1.0, rng)
    assert attack.exact_changed.tolist() == [2]
    assert attack.scale == pytest.approx(1.0)  # add/remove: sensitivity 1, b = 1/ε
    assert attack.posterior.sum() == pytest.approx(1.0) and (attack.posterior >= 0).all()
    assert attack.prior == pytest.approx(0.2)
    assert attack.bound == pytest.approx(math.exp(2) / (math.exp(2) + 4))


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_no_outcome_beats_the_two_epsilon_bound(epsilon):
    row = np.array([3, 0, 0, 12, 1, 0, 4, 9])
    for seed in range(300):
        attack = learn.differencing_attack(row, seed % len(row), epsilon,
                                           np.random.default_rng(seed))
        assert attack.posterior.max() <= attack.bound * (1 + 1e-9)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_the_two_epsilon_cap_comes_from_one_release_with_two_changed_cells(epsilon):
    """What the lesson says: any two guesses' likelihoods differ by at most e^{2ε} (month 2's
    tables for "works in v" and "in w" differ in two cells), and the one-cell cap e^ε (what
    "one release about the newcomer" would give) is exceeded by some outcomes."""
    row = np.array([3, 0, 0, 12, 1, 0, 4, 9])
    beliefs, spreads = [], []
    for seed in range(400):
        attack = learn.differencing_attack(row, seed % len(row), epsilon,
                                           np.random.default_rng(seed))
        beliefs.append(attack.posterior.max())
        spreads.append(math.log(attack.posterior.max() / attack.posterior.min()))
        assert attack.one_cell_bound < attack.bound
    assert max(spreads) <= 2 * epsilon * (1 + 1e-9)
    assert max(spreads) > epsilon                          # more than one cell's worth
    assert max(beliefs) > attack.one_cell_bound


def test_posterior_is_calibrated():
    """With the truth drawn from the attacker's (uniform) prior, a correct posterior satisfies
    E[posterior(truth)] = E[Σ_v posterior_v²]; a miscalibrated one would not."""
    rng = np.random.default_rng(11)
    row = np.array([2, 0, 5, 1, 0, 0])
    own, squares = [], []
    for _ in range(3000):
        truth = int(rng.integers(len(row)))
        attack = learn.differencing_attack(row, truth, 1.0, rng)
        own.append(attack.posterior[truth])
        squares.append((attack.posterior ** 2).sum())
    difference = np.array(own) - np.array(squares)
    assert abs(difference.mean()) <= SIGMAS * difference.std(ddof=1) / math.sqrt(len(own))
    assert np.mean(own) > 1 / len(row)  # the noisy releases still leak something at ε = 1


def test_large_epsilon_finds_the_newcomer(rng):
    attack = learn.differencing_attack(np.arange(50), 17, 20.0, rng)
    assert attack.true_rank == 1 and attack.true_posterior > 0.99


@pytest.mark.parametrize("row, destination", [([1], 0), ([1, 2], 2), ([[1, 2]], 0)])
def test_differencing_attack_rejects_bad_input(row, destination, rng):
    with pytest.raises(ValueError):
        learn.differencing_attack(row, destination, 1.0, rng)


# --------------------------------------------------------------------------------- one phone
D = 12
ITEM = 5
DRAWS = 3000


def _reports(key, epsilon=1.0):
    mech = mechanisms.build(key, epsilon=epsilon)
    rng = np.random.default_rng(sum(map(ord, key)))
    return mech, [learn.phone_report(mech, ITEM, D, rng) for _ in range(DRAWS)]



def _within(observed: np.ndarray, expected: float, sd: float) -> bool:
    return abs(observed.mean() - expected) <= SIGMAS * sd / math.sqrt(len(observed))


@pytest.mark.parametrize("key", [k for k in mechanisms.names(LOCAL)
                                 if issubclass(mechanisms.get(k), PureProtocol)])
def test_pure_protocol_reports_support_the_truth_at_rate_p(key):
    """The walkthrough says whether the report supports the own cell and how many cells it
    supports: over many phones these must match p* and p* + (d − 1) q*."""
    mech, reports = _reports(key)
    p, q = mech.support_probabilities(D)
    own = np.array([r.supports_own for r in reports], dtype=float)
    size = np.array([r.support_size for r in reports], dtype=float)
    assert all(r.p == p and r.q == q for r in reports[:3])
    assert _within(own, p, math.sqrt(p * (1 - p)))
    if key not in ("grr", "ss"):   # those always support exactly 1 or k cells
        assert _within(size, p + (D - 1) * q, size.std(ddof=1) + 1e-12)
    else:
        assert len(set(size)) == 1
    assert all(len(r.steps) >= 3 and r.bits == mech.bits_per_user(D) for r in reports[:3])


def test_hadamard_response_report_lands_in_its_set_at_the_promised_rate():
    mech, reports = _reports("hr", epsilon=2.0)   # the blocked form
    lay, uniform, _ = mech.constants(D)
    expected = (1 - uniform) + uniform * (lay.block_size / 2) / lay.outputs
    own = np.array([r.supports_own for r in reports], dtype=float)
    assert isinstance(mech, HadamardResponse)
    assert _within(own, expected, math.sqrt(expected * (1 - expected)))


def test_hadamard_mechanism_keeps_the_sign_pattern_at_rate_p_t():
    mech, reports = _reports("hm", epsilon=2.0)
    assert isinstance(mech, HadamardMechanism)
    keep, _ = hm_probabilities(2.0, mech.coefficients(D))
    kept = np.array([r.supports_own for r in reports], dtype=float)
    assert _within(kept, keep, math.sqrt(keep * (1 - keep)))


def test_phone_report_names_cells_through_the_callers_label(rng):
    mech = mechanisms.build("grr", epsilon=1.0)
    report = learn.phone_report(mech, 3, 8, rng, label=lambda cell: f"<cell {cell}>")
    assert "<cell 3>" in report.steps[0]
    assert "$d = 8$" in report.steps[0]


def test_phone_report_rejects_central_mechanisms_and_bad_cells(rng):
    with pytest.raises(ValueError, match="not a local mechanism"):
        learn.phone_report(mechanisms.build("laplace", epsilon=1.0), 0, 4, rng)
    with pytest.raises(ValueError, match="outside the domain"):
        learn.phone_report(mechanisms.build("oue", epsilon=1.0), 4, 4, rng)


# ------------------------------------------------------------------------------------ the crowd
@pytest.mark.slow
@pytest.mark.parametrize("key", ["grr", "oue", "olh", "hr"])
def test_crowd_estimate_is_unbiased(toy, key):
    """The whole toy town (318 people) reports each time: the estimate of the busiest commute
    averages to its true count, and its spread matches the mechanism's variance."""
    mech = mechanisms.build(key, epsilon=1.0)
    cell = int(toy.flat_index[np.argmax(toy.counts)])
    rng = np.random.default_rng(7)
    runs = [learn.crowd_estimate(mech, toy, toy.n, cell, rng) for _ in range(600)]
    estimates = np.array([r.estimate[cell] for r in runs])
    truth, sd = runs[0].truth[cell], runs[0].sd
    assert abs(estimates.mean() - truth) <= SIGMAS * sd / math.sqrt(len(runs))
    assert 0.85 < estimates.std(ddof=1) / sd < 1.15   # 600 draws: s.e. of the ratio ≈ 3 %
    if isinstance(mech, PureProtocol):
        assert all(0 <= r.support <= toy.n and float(r.support).is_integer() for r in runs)


def test_crowd_is_capped_and_needs_a_small_domain(toy, rng):
    mech = mechanisms.build("oue", epsilon=1.0)
    crowd = learn.crowd_estimate(mech, toy, 10**9, 0, rng)
    assert crowd.people == toy.n and crowd.truth.sum() == toy.n
    smaller = learn.crowd_estimate(mech, toy, 100, 0, rng)
    assert smaller.people == 100 and smaller.truth.sum() == 100
    assert list(smaller.table(5).columns) == ["cell", "true", "estimate", "error"]
    with pytest.raises(ValueError, match="at most"):
        learn.crowd_estimate(mech, grid_matrix(80), 10, 0, rng)


# ------------------------------------------------------------------------------ classroom domain
def test_classroom_matrix_keeps_small_data_and_shrinks_large(toy):
    assert learn.classroom_matrix(toy) == (toy, None)
    big = grid_matrix(80)                           # 6,400 cells, no parent level
    small, note = learn.classroom_matrix(big)
    assert small.domain_size <= learn.CLASSROOM_CELLS and "busiest" in note
    kept = set(small.origins.ids)
    dropped = [i for i, z in enumerate(big.origins.ids) if z not in kept]
    assert min(big.origin_totals()[[big.origins.index_of([z])[0] for z in kept]]) >= \
        max(big.origin_totals()[dropped])


def test_classroom_matrix_rolls_ed_up_to_counties():
    small, note = learn.classroom_matrix(datasets.load("ireland_ed"))
    assert small.domain_size == 1085 and "rolled up" in note


# ---------------------------------------------------------------------------------- trust models
def test_trust_models_on_toy_town(toy, rng):
    frame = learn.trust_models(toy, 1.0, 1e-6, rng)
    assert frame["model"].tolist() == ["central", "local", "shuffled"]
    assert frame["key"].tolist()[0] == "laplace" and frame["key"].tolist()[2] == "grr"
    assert frame["key"][1] == accuracy.recommend_local(toy.domain_size, 1.0, toy.n).key
    assert frame["rmse_theory"][0] == pytest.approx(2 * math.sqrt(2))  # substitution, b = 2/ε
    assert frame["epsilon_local"][2] >= 1.0 and (frame["seconds"] >= 0).all()


def test_shuffled_local_epsilon_round_trips_and_grows_with_n():
    eps0 = learn.shuffled_local_epsilon(2_000_000, 1.0, 1e-6)
    back = amplification.shuffle_guarantee(learn.SHUFFLE_BOUND, 2_000_000, eps0, 1e-6)
    assert eps0 > 1.0 and back.epsilon <= 1.0 + 1e-6
    assert learn.shuffled_local_epsilon(20_000, 1.0, 1e-6) < eps0
    # ten people hide almost no one: ε₀ stays (just) above ε, never below it
    assert 1.0 <= learn.shuffled_local_epsilon(10, 1.0, 1e-6) < 1.01


def test_baseline_differencing_exact_probabilities():
    """Suppression and rounding are consistent: only the newcomer's cell can move, with
    certainty when it crosses the threshold / a rounding boundary; cell key moves it unless the
    perturbation absorbs the +1; random rounding hides it among the other cells' fresh draws."""
    row = np.array([0, 9, 12, 2, 40])
    table = learn.baseline_differencing(row, 2).set_index("mechanism")
    assert table.loc["suppression", "found_here"] == 1.0
    assert table.loc["rounding", "found_here"] == 1.0       # 12 → 13 crosses 12.5 (base 5)
    assert learn.baseline_differencing(row, 3).set_index("mechanism").loc[
        "suppression", "found_here"] == 0.0                  # 2 → 3, both suppressed
    assert table.loc["suppression", "found_typical"] == pytest.approx((9 + 12 + 40) / 63)
    # Cell key (noisy table, far above the threshold): the published value stays the same only
    # when the new perturbation is the old one minus 1.
    p = {0: 220, -1: 12, 1: 12, -2: 6, 2: 6}
    same = sum(p[v] * p.get(v - 1, 0) for v in p) / 256 ** 2
    assert learn.baseline_differencing(row, 4).set_index("mechanism").loc[
        "cell_key", "found_here"] == pytest.approx(1 - same)
    assert table.loc["random_rounding", "found_here"] < 0.5


@pytest.mark.parametrize("releases, stated", [(5, 0.35), (25, 0.69), (100, 0.95)])
def test_averaging_random_roundings_recovers_a_count_only_with_the_stated_chance(releases,
                                                                                stated):
    """Issue 42: "averaging a few releases … gives the exact counts back" was false. The chance
    the Learn page states is what averaging the mechanism's own releases and rounding the mean
    gives for the hardest counts (12 and 13: remainders 2 and 3 of base 5; a mean exactly halfway
    counted as a miss, so "at least"), up to the binomial spread (two-sided, α = 10⁻⁴ per
    check); a multiple of 5 is never moved."""
    chance = learn.rounding_recovery(releases, 5)
    assert round(chance, 2) == stated
    mech = mechanisms.build("random_rounding")
    assert mech.base == 5
    rng = np.random.default_rng(releases)
    runs = 4000
    for count in (12, 13):
        draws = np.stack([mech.release(np.full(runs, count), rng) for _ in range(releases)])
        rate = np.mean(np.abs(draws.mean(axis=0) - count) < 0.5)    # a tie counts as a miss
        assert abs(rate - chance) <= 3.9 * math.sqrt(chance * (1 - chance) / runs), (count, rate)
    draws = np.stack([mech.release(np.full(runs, 10), rng) for _ in range(releases)])
    assert (draws == 10).all()
