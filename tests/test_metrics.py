"""Metrics: hand-computed values on tiny matrices, invariances, and the planners' checks."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data import datasets, geo
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.scoring import metrics

# One degree of longitude on the equator, in km.
L = geo.EARTH_RADIUS_KM * math.pi / 180


def tiny(counts=(10, 4, 0, 0, 20, 5), parents=True) -> ODMatrix:
    """Origins A, B; destinations A, B and H ("home", no coordinates). A at (0°, 0°), B at (0°, 1°).

    Flat cells: 0 A→A, 1 A→B, 2 A→H, 3 B→A, 4 B→B, 5 B→H.
    """
    parent_kw = {}
    if parents:
        parent_kw = dict(parent=["P", "Q"], parent_zones=ZoneSet.from_ids(["P", "Q"]))
    origins = ZoneSet.from_ids(["A", "B"], lat=[0.0, 0.0], lon=[0.0, 1.0], **parent_kw)
    if parents:
        parent_kw = dict(parent=["P", "Q", "H"], parent_zones=ZoneSet.from_ids(["P", "Q", "H"]))
    destinations = ZoneSet.from_ids(["A", "B", "H"], lat=[0.0, 0.0, np.nan],
                                    lon=[0.0, 1.0, np.nan], **parent_kw)
    return ODMatrix.from_dense("tiny", origins, destinations, np.array(counts))


TRUE = np.array([10, 4, 0, 0, 20, 5], dtype=float)          # n = 39
RELEASED = np.array([12, 3, 1, -1, 20, 0.4])


@pytest.fixture
def values():
    return metrics.compute(TRUE, RELEASED, tiny(), k=2, top_n=4)


def test_returns_every_declared_metric_as_float(values):
    assert list(values) == list(metrics.METRICS)
    assert all(type(v) is float for v in values.values())
    assert {"rmse", "mae", "max_error", "topk_recall", "kendall_tau"} <= set(values)
    assert all(info.better in ("lower", "higher", "zero") for info in metrics.METRICS.values())


def test_cell_errors_by_hand(values):
    # errors r − t = 2, −1, 1, −1, 0, −4.6
    assert values["rmse"] == pytest.approx(math.sqrt((4 + 1 + 1 + 1 + 0 + 4.6 ** 2) / 6))
    assert values["mae"] == pytest.approx((2 + 1 + 1 + 1 + 0 + 4.6) / 6)
    assert values["max_error"] == pytest.approx(4.6)
    assert values["rmse_freq"] == pytest.approx(values["rmse"] / 39)
    assert values["max_error_freq"] == pytest.approx(4.6 / 39)
    # %RMSE over the observed flows (cells 0, 1, 4, 5): errors 2, −1, 0, −4.6; mean true 39/4
    assert values["pct_rmse"] == pytest.approx(100 * math.sqrt((4 + 1 + 4.6 ** 2) / 4) / (39 / 4))
    assert values["rmse_real"] == pytest.approx(math.sqrt((4 + 1 + 4.6 ** 2) / 4))


def test_presence_by_hand(values):
    # cell 5 (true 5) is released as 0.4 < 0.5: a false zero; cell 2 (true 0) as 1: invented
    assert values["false_zero_cells"] == 1
    assert values["false_zero_share"] == pytest.approx(5 / 39)
    assert values["false_positive_cells"] == 1
    assert values["false_positive_share"] == pytest.approx(1 / (12 + 3 + 1 + 20))
    # 1 of the 4 real commutes erased; 1 of the 4 released commutes (12, 3, 1, 20) invented
    assert values["erased_share"] == pytest.approx(1 / 4)
    assert values["invented_share"] == pytest.approx(1 / 4)


def test_top_k_and_rank_correlations_by_hand():
    od = tiny()
    # k = 2: true top {4, 0}, released top {4, 0}
    two = metrics.compute(TRUE, RELEASED, od, k=2)
    assert two["topk_precision"] == two["topk_recall"] == 1.0
    # k = 3: true top {4, 0, 5}; released top among present flows {4, 0, 1}
    three = metrics.compute(TRUE, RELEASED, od, k=3, top_n=4)
    assert three["topk_precision"] == pytest.approx(2 / 3)
    assert three["topk_recall"] == pytest.approx(2 / 3)
    # top 4 true flows 20, 10, 5, 4 are released as 20, 12, 0.4, 3: one swapped pair
    assert three["spearman_rho"] == pytest.approx(1 - 6 * 2 / (4 * (16 - 1)))
    assert three["kendall_tau"] == pytest.approx((5 - 1) / 6)


def test_precision_differs_from_recall_when_few_flows_are_present():
    released = np.array([12, 0, 0, 0, 0.2, 0])  # only cell 0 present
    values = metrics.compute(TRUE, released, tiny(), k=2)
    assert values["topk_precision"] == 1.0      # the one released top flow is a true top flow
    assert values["topk_recall"] == 0.5         # half of the true top 2 found


def test_top_k_ties_are_broken_by_flat_index():
    released = np.array([7, 7, 7, 0, 0, 0], dtype=float)
    values = metrics.compute(TRUE, released, tiny(), k=2)
    assert values["topk_recall"] == 0.5  # released top 2 = cells 0 and 1; true top 2 = 4 and 0


def test_geh_threshold_at_an_empty_cell_and_a_real_flow():
    od = tiny(counts=(100, 0, 0, 0, 0, 0))
    true = np.array([100, 0, 0, 0, 0, 0], dtype=float)
    # empty cell: GEH = √(2M) < 5 iff M < 12.5; real flow 100: 150 gives 4.47, 160 gives 5.26
    passing = metrics.compute(true, np.array([150, 12.4, 0, 0, 0, 0]), od)
    assert passing["geh_pass_share"] == 1.0
    failing = metrics.compute(true, np.array([160, 12.6, 0, 0, 0, -3]), od)
    assert failing["geh_pass_share"] == 0.0  # negative cell clipped to 0 and excluded
    half = metrics.compute(true, np.array([150, 12.6, 0, 0, 0, 0]), od)
    assert half["geh_pass_share"] == 0.5


def test_regressions_by_hand(values):
    # cells: slope Σxy/Σx², R² = 1 − Σ(y−x)²/Σ(x−x̄)²
    assert values["cell_slope"] == pytest.approx((120 + 12 + 400 + 2) / (100 + 16 + 400 + 25))
    assert values["cell_r2"] == pytest.approx(1 - (4 + 1 + 1 + 1 + 4.6 ** 2) / (541 - 39 ** 2 / 6))
    # origin totals: true 14, 25; released 16, 19.4
    assert values["origin_slope"] == pytest.approx((14 * 16 + 25 * 19.4) / (14 ** 2 + 25 ** 2))
    assert values["origin_r2"] == pytest.approx(1 - (2 ** 2 + 5.6 ** 2) / (821 - 39 ** 2 / 2))
    assert values["origin_total_rmse"] == pytest.approx(math.sqrt((2 ** 2 + 5.6 ** 2) / 2))
    assert values["origin_total_mape"] == pytest.approx(100 * (2 / 14 + 5.6 / 25) / 2)
    # destination totals: true 10, 24, 5; released 11, 23, 1.4
    assert values["destination_total_mape"] == pytest.approx(100 * (1 / 10 + 1 / 24 + 3.6 / 5) / 3)
    assert values["total_error_pct"] == pytest.approx(100 * (35.4 - 39) / 39)


def test_trip_lengths_by_hand(values):
    # true: 30 trips of 0 km, 4 of L km, 5 without a length; released (as published): 32 at 0,
    # 3 − 1 = 2 at L (the −1 counts for the mean), 1.4 without a length
    assert values["trip_length_excluded_cells"] == 1
    assert values["trip_length_excluded_share"] == pytest.approx(5 / 39)
    assert values["trip_length_mean_error_pct"] == pytest.approx(100 * ((2 / 34) / (4 / 34) - 1))
    true_sd = L * math.sqrt(4 / 34 - (4 / 34) ** 2)
    released_sd = L * math.sqrt(2 / 34 - (2 / 34) ** 2)
    assert values["trip_length_sd_error_pct"] == pytest.approx(100 * (released_sd / true_sd - 1))
    # distributions use max(r, 0): released 32/35 at 0 km, 3/35 at L km
    exact = stats.wasserstein_distance([0, L], [0, L], [30, 4], [32, 3])
    assert exact == pytest.approx(abs(4 / 34 - 3 / 35) * L)
    assert values["trip_length_w1_km"] == pytest.approx(exact, abs=metrics.FINE_BIN_KM)
    assert values["trip_length_coincidence"] == pytest.approx(
        (30 / 34 + 3 / 35) / (32 / 35 + 4 / 34))


def test_histogram_wasserstein_is_seed_000s_over_the_cell_index(values):
    positive = np.maximum(RELEASED, 0)
    expected = stats.wasserstein_distance(np.arange(6), np.arange(6), TRUE, positive)
    assert values["wasserstein_hist"] == pytest.approx(expected)
    # the CDF form: Σ|F_true − F_released| over the first five cells (masses 39 and 36.4)
    u, v = TRUE / 39, positive / 36.4
    assert values["wasserstein_hist"] == pytest.approx(np.abs(np.cumsum(u - v))[:-1].sum())


def test_line_wasserstein_matches_scipy_on_random_histograms(rng):
    for _ in range(20):
        size = int(rng.integers(2, 60))
        u, v = rng.random(size) * (rng.random(size) < 0.7), rng.random(size)
        u[0] += 0.1
        support = np.arange(size)
        assert metrics._w1_on_line(u / u.sum() - v / v.sum()) == pytest.approx(
            stats.wasserstein_distance(support, support, u, v), rel=1e-9, abs=1e-12)


def test_trip_length_w1_is_within_a_bin_of_the_exact_value(rng):
    zones = 12
    lat, lon = rng.uniform(51, 55, zones), rng.uniform(-10, -6, zones)
    z = ZoneSet.from_ids([f"z{i}" for i in range(zones)], lat=lat, lon=lon)
    true = rng.integers(0, 50, zones * zones)
    od = ODMatrix.from_dense("random", z, z, true)
    released = true + rng.normal(0, 20, true.size)
    lengths = geo.domain_lengths(od)
    exact = stats.wasserstein_distance(lengths, lengths, true, np.maximum(released, 0))
    value = metrics.compute(true, released, od)["trip_length_w1_km"]
    assert value == pytest.approx(exact, abs=metrics.FINE_BIN_KM)


def test_sector_matrix_by_hand(values):
    # parents map one-to-one here, so sectors are the cells: Σ|r − t| / n, and of the four
    # non-empty sector flows only B→B (0 error) is within 5 %
    assert values["sector_wape"] == pytest.approx(100 * 9.6 / 39)
    assert values["sector_within_5pct"] == pytest.approx(1 / 4)


def test_sector_matrix_agrees_with_the_data_models_roll_up(rng):
    parents = ZoneSet.from_ids(["N", "S"], lat=[54, 52], lon=[-7, -8])
    ids = ["n1", "n2", "s1", "s2", "s3"]
    zones = ZoneSet.from_ids(ids, lat=rng.uniform(51, 55, 5), lon=rng.uniform(-10, -6, 5),
                             parent=["N", "N", "S", "S", "S"], parent_zones=parents)
    true = rng.integers(0, 30, 25)
    od = ODMatrix.from_dense("fine", zones, zones, true)
    released = np.maximum(true + rng.integers(-5, 6, 25), 0)
    fine_release = od.with_counts(released)
    t_sec = od.aggregate().to_dense().astype(float)
    r_sec = fine_release.aggregate().to_dense().astype(float)
    values = metrics.compute(true, released, od)
    assert values["sector_wape"] == pytest.approx(100 * np.abs(r_sec - t_sec).sum() / t_sec.sum())
    within = np.abs(r_sec - t_sec)[t_sec > 0] <= 0.05 * t_sec[t_sec > 0]
    assert values["sector_within_5pct"] == pytest.approx(within.mean())


def test_self_containment_by_hand(values):
    # true: A supply 10/14, demand 10/10; B supply 20/25, demand 20/24
    # released: A supply 12/16, demand 12/11; B supply 20/19.4, demand 20/23
    assert values["self_containment_supply_mae"] == pytest.approx(
        100 * (abs(12 / 16 - 10 / 14) + abs(20 / 19.4 - 20 / 25)) / 2)
    assert values["self_containment_demand_mae"] == pytest.approx(
        100 * (abs(12 / 11 - 1) + abs(20 / 23 - 20 / 24)) / 2)
    # at 75 %: A fails (supply 71 %) in truth and passes (75 %) when released; B passes in both
    assert values["self_containment_crossings_75"] == 1
    assert values["self_containment_crossings_667"] == 0


def test_no_coordinates_no_parents_no_shared_zones_give_nan():
    a = ZoneSet.from_ids(["a1", "a2"])
    b = ZoneSet.from_ids(["b1", "b2"])
    od = ODMatrix.from_dense("bare", a, b, np.array([3, 1, 0, 2]))
    values = metrics.compute(np.array([3, 1, 0, 2]), np.array([2.0, 1, 1, 2]), od)
    for key in ("trip_length_mean_error_pct", "trip_length_w1_km", "trip_length_coincidence",
                "sector_wape", "self_containment_crossings_75", "self_containment_supply_mae"):
        assert math.isnan(values[key]), key
    assert values["trip_length_excluded_share"] == 1.0
    assert values["rmse"] == pytest.approx(math.sqrt(2 / 4))
    checks = {c.key: c for c in metrics.planner_checks(values)}
    assert checks["sector_wape"].passed is None
    assert checks["trip_length_mean_error_pct"].passed is None


def test_raw_estimates_answer_aggregate_queries_with_post_pos():
    od = tiny()
    raw = np.array([12, 3, 1, -1, 20, -6.0])
    released = np.maximum(raw, 0)
    clipped_cells = metrics.compute(TRUE, released, od)
    post_pos = metrics.compute(TRUE, released, od, raw=raw)
    assert clipped_cells["total_error_pct"] == pytest.approx(100 * (36 - 39) / 39)
    assert post_pos["total_error_pct"] == pytest.approx(100 * (29 - 39) / 39)
    # origin B: raw total 20 − 1 − 6 = 13 (clipped cells would give 20)
    assert post_pos["origin_total_mape"] == pytest.approx(100 * (2 / 14 + 12 / 25) / 2)
    # cell-level metrics are those of the released cells either way
    assert post_pos["rmse"] == clipped_cells["rmse"]


def test_perfect_release_has_zero_error_and_passes_every_check():
    od = tiny(counts=(30, 4, 1, 2, 40, 5))
    true = od.to_dense().astype(float)
    values = metrics.compute(true, true.copy(), od, k=3, top_n=5)
    for key in ("rmse", "mae", "max_error", "pct_rmse", "false_zero_cells", "false_positive_cells",
                "false_positive_share", "origin_total_rmse", "destination_total_mape",
                "total_error_pct", "trip_length_mean_error_pct", "trip_length_sd_error_pct",
                "trip_length_w1_km", "wasserstein_hist", "sector_wape",
                "self_containment_supply_mae", "self_containment_crossings_75"):
        assert values[key] == pytest.approx(0, abs=1e-9), key
    for key in ("topk_precision", "topk_recall", "spearman_rho", "kendall_tau", "geh_pass_share",
                "cell_slope", "cell_r2", "origin_r2", "destination_slope",
                "trip_length_coincidence", "sector_within_5pct"):
        assert values[key] == pytest.approx(1), key
    checks = metrics.planner_checks(values)
    assert len(checks) == 14
    assert all(check.passed is True for check in checks), [c for c in checks if not c.passed]


def test_a_matrix_off_by_a_constant_factor_fails_slope_and_total_but_keeps_trip_lengths():
    od = tiny(counts=(30, 4, 1, 2, 40, 5))
    true = od.to_dense().astype(float)
    values = metrics.compute(true, 1.1 * true, od)
    assert values["cell_slope"] == pytest.approx(1.1)
    assert values["origin_slope"] == pytest.approx(1.1)
    assert values["total_error_pct"] == pytest.approx(10)
    assert values["trip_length_mean_error_pct"] == pytest.approx(0, abs=1e-9)
    assert values["trip_length_w1_km"] == pytest.approx(0, abs=1e-9)
    assert values["wasserstein_hist"] == pytest.approx(0, abs=1e-12)
    assert values["topk_recall"] == 1.0
    failed = {c.key for c in metrics.planner_checks(values) if c.passed is False}
    assert {"cell_slope", "origin_slope", "destination_slope", "total_error_pct",
            "sector_wape"} <= failed
    assert "trip_length_mean_error_pct" not in failed


def test_clipping_negatives_inflates_total_and_mean_trip_length():
    """Setting negatives to zero biases totals (the noise on empty cells becomes trips); keeping
    them does not."""
    rng = np.random.default_rng(7)
    zones = 30
    z = ZoneSet.from_ids([f"z{i}" for i in range(zones)], lat=rng.uniform(51, 55, zones),
                         lon=rng.uniform(-10, -6, zones))
    true = rng.integers(0, 40, zones * zones) * (rng.random(zones * zones) < 0.4)
    od = ODMatrix.from_dense("sparse", z, z, true)
    noisy = true + rng.laplace(0, 2, true.size)
    raw_values = metrics.compute(true, noisy, od)
    clipped = metrics.compute(true, np.maximum(noisy, 0), od)
    assert clipped["total_error_pct"] > 5 > abs(raw_values["total_error_pct"])


def test_invalid_input_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="one value per cell"):
        metrics.compute(TRUE[:5], RELEASED, tiny())
    with pytest.raises(ValueError, match="k and top_n"):
        metrics.compute(TRUE, RELEASED, tiny(), k=0)


def test_cell_lengths_match_the_cached_domain_lengths():
    od = tiny()
    flat = np.array([1, 3, 5, 0])
    fresh = geo.cell_lengths(od, flat)
    assert fresh[0] == pytest.approx(L) and fresh[1] == pytest.approx(L)
    assert math.isnan(fresh[2]) and fresh[3] == 0
    np.testing.assert_array_equal(geo.domain_lengths(od)[flat], fresh)
    np.testing.assert_array_equal(geo.cell_lengths(od, flat), fresh)  # now from the cache
    # Dublin to Cork, about 220 km as the crow flies
    assert geo.haversine_km(53.35, -6.26, 51.90, -8.47) == pytest.approx(220, abs=5)


def test_only_cell_errors_are_the_same_numbers_as_every_metric():
    od = datasets.load("toy_town")
    truth = od.to_dense()
    released = truth + np.random.default_rng(4).normal(0, 3, truth.size)
    every = metrics.compute(truth, released, od)
    some = metrics.compute(truth, released, od, only=metrics.CELL_ERRORS)
    assert some == {name: every[name] for name in metrics.CELL_ERRORS}
    mixed = metrics.compute(truth, released, od, only=("rmse", "kendall_tau"))
    assert mixed == {"rmse": every["rmse"], "kendall_tau": every["kendall_tau"]}
    with pytest.raises(ValueError, match="unknown metric.*nope"):
        metrics.compute(truth, released, od, only=("rmse", "nope"))


def test_integer_read_only_and_float_truths_score_exactly_alike():
    """A sweep scores against the integer counts, read-only (their non-empty cells found once):
    the same numbers, to the bit, as against the counts as floats, call after call."""
    od = datasets.load("toy_town")
    truth = od.to_dense()
    truth.flags.writeable = False
    rng = np.random.default_rng(5)
    for _ in range(3):
        released = truth + rng.laplace(0, 4, truth.size)
        as_float = metrics.compute(truth.astype(float), released, od)
        assert metrics.compute(truth, released, od) == as_float
        assert metrics.compute(truth, released, od, only=("rmse", "max_error_freq")) == {
            "rmse": as_float["rmse"], "max_error_freq": as_float["max_error_freq"]}


def test_cell_errors_equal_the_full_vector_formulas_to_the_bit():
    """The error vector is the release corrected at the occupied cells only: the same numbers, to
    the bit, as from r − t over every cell — with fractional and negative true counts, released
    −0.0, and the page's summary subset (which skips the absolute errors) agreeing with the rest."""
    od = datasets.load("toy_town")
    rng = np.random.default_rng(6)
    truth = od.to_dense() + np.where(od.to_dense() > 0, rng.normal(0, 0.3, od.domain_size), 0)
    truth[np.flatnonzero(truth)[:3]] *= -1
    released = truth + rng.laplace(0, 4, truth.size)
    released[np.flatnonzero(truth == 0)[:5]] = -0.0
    error = released - truth
    got = metrics.compute(truth, released, od, only=metrics.CELL_ERRORS)
    assert got["rmse"] == math.sqrt(float(np.dot(error, error)) / od.domain_size)
    assert got["max_error"] == float(np.abs(error).max())
    assert got["mae"] == float(np.abs(error).sum()) / od.domain_size
    observed = np.flatnonzero(truth)
    assert got["rmse_real"] == math.sqrt(np.mean((released[observed] - truth[observed]) ** 2))
    summary = metrics.compute(truth, released, od, only=("rmse", "rmse_real", "erased_share"))
    assert summary["rmse"] == got["rmse"] and summary["rmse_real"] == got["rmse_real"]


@pytest.mark.parametrize("chunk", [1, 5, 7, 56])
def test_cell_errors_and_presence_read_chunk_by_chunk_match_the_whole_vector(monkeypatch, chunk):
    """Scored a chunk at a time (occupied cells on chunk edges, a last partial chunk): the counts
    and the maximum exactly as over the whole vector, the sums to rounding (they are added chunk
    by chunk)."""
    monkeypatch.setattr(metrics, "CELL_CHUNK", chunk)
    od = datasets.load("toy_town")
    truth = od.to_dense().astype(float)
    rng = np.random.default_rng(7)
    released = truth + rng.laplace(0, 4, truth.size)
    released[::9] = 0.5                                    # exactly at the presence threshold
    error = released - truth
    present = released >= 0.5
    observed = truth > 0
    got = metrics.compute(truth, released, od)
    assert got["max_error"] == float(np.abs(error).max())
    assert got["rmse"] == pytest.approx(math.sqrt(np.mean(error ** 2)), rel=1e-13)
    assert got["mae"] == pytest.approx(np.mean(np.abs(error)), rel=1e-13)
    assert got["false_positive_cells"] == np.count_nonzero(present & ~observed)
    assert got["false_zero_cells"] == np.count_nonzero(~present & observed)
    trips = released[present].sum()
    assert got["false_positive_share"] == pytest.approx(
        released[present & ~observed].sum() / trips, rel=1e-12)
    assert got["invented_share"] == np.count_nonzero(present & ~observed) / np.count_nonzero(
        present)
