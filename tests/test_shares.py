"""Shares (dpcore.analyses.shares): the delta-method interval covers the true share at ≥ 95 %
where it is offered (central noises), the sd and GRR's covariance of two disjoint sums are
right, and the local laws get the released share without an interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore import mechanisms
from dpcore.analyses import answers, intervals, selection as sel, shares
from dpcore.analyses.sums import group_sums
from dpcore.interfaces import published_analyses as published

RELEASES = 100


def _shares(od) -> list[shares.Share]:
    """Every zone's four shares: within 10 km (work side), 25 km (home side), live-and-work."""
    out = []
    for zone in od.destinations.ids:
        chosen = sel.zones(od, [zone])
        out += [shares.within(od, chosen, "work", 10.0), shares.within(od, chosen, "home", 25.0),
                shares.live_and_work(od, chosen, "work"), shares.live_and_work(od, chosen, "home")]
    return out


def _sums(found, values):
    a, c, ma, mc = (np.empty(len(found)) for _ in range(4))
    for i, share in enumerate(found):
        (a[i], c[i]), (ma[i], mc[i]) = share.compute(values)
    return a, c, ma, mc


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
@pytest.mark.parametrize("key", ["laplace", "gaussian", "discrete_laplace"])
def test_offered_shares_cover_at_95_percent(county, key, epsilon):
    """Pooled over every zone's shares and 100 seeded releases: coverage ≥ 95 % − 3 binomial
    sds, and the share is offered for every answer whose true total is positive."""
    mechanism = mechanisms.build(key, epsilon=epsilon)
    rule = intervals.Interval(key, mechanism, n=county.n, d=county.domain_size)
    _check_coverage(county, rule, lambda truth, rng: mechanism.release(truth, rng))


@pytest.mark.parametrize("key, scale", [("discrete_gaussian", 3.0), ("discrete_gaussian", 60.0),
                                        ("discrete_laplace", 40.0)])
def test_a_flat_folders_shares_cover_at_95_percent(county, key, scale):
    """A flat published folder's noise (OpenDP's discrete Gaussian or Laplace, the law its
    manifest states; seeded here, OpenDP's own draws are not) gets the delta method's shares
    from the manifest alone, and they cover as the registry's central noises do."""
    from tests.test_analyses import _opendp_like
    variance = float(np.var(_opendp_like(key, scale, 400_000, np.random.default_rng(0))))
    rule = intervals.Interval(key, published.PublishedNoise(key, scale, variance),
                              n=county.n, d=county.domain_size)
    assert shares.method(rule).startswith("delta method")
    _check_coverage(county, rule,
                    lambda truth, rng: truth + _opendp_like(key, scale, truth.size, rng),
                    every=scale < 10)


def _check_coverage(od, rule, release, every: bool = True):
    """Pooled over every zone's shares and :data:`RELEASES` seeded ``release(truth, rng)``:
    coverage ≥ 95 % − 3 binomial sds of the shares offered; with ``every``, a share for every
    answer with a positive true total (else Fieller's rule may leave a few out)."""
    truth = od.to_dense()
    found = _shares(od)
    a, c, ma, mc = _sums(found, truth)
    defined = a + c > 0
    true = a[defined] / (a + c)[defined]
    covered = offered = 0
    for seed in range(RELEASES):
        ra, rc, _, _ = _sums(found, release(truth, np.random.default_rng(seed)))
        share, low, high = (x[defined] for x in shares.bounds(rule, ra, ma, rc, mc))
        shown = np.isfinite(share)
        assert shown.all() or not every
        assert ((0 <= low) & (low <= share) & (share <= high) & (high <= 1))[shown].all()
        covered += ((low <= true) & (true <= high)).sum()
        offered += shown.sum()
    rate = covered / offered
    assert rate >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / offered), (rate, offered)


def test_grr_covariance_of_disjoint_sums_is_exact(county):
    """Half the origins (A) and the other half (C) cover the domain: GRR's estimates add up to
    n, so Var A + Var C + 2 Cov(A, C) = Var(A + C) = 0."""
    mechanism = mechanisms.build("grr", epsilon=1.0)
    rule = intervals.Interval("grr", mechanism, n=county.n, d=county.domain_size)
    truth = county.to_dense()
    every = np.arange(county.n_destinations)
    half = county.n_origins // 2
    (a,), (ma,) = group_sums(truth, county, np.arange(half), every)
    (c,), (mc,) = group_sums(truth, county, np.arange(half, county.n_origins), every)
    total = rule.variance(ma, a) + rule.variance(mc, c) \
        + 2 * shares.covariance(rule, ma, a, mc, c)
    assert total == pytest.approx(0.0, abs=1e-6 * rule.variance(ma, a))
    assert shares.covariance(intervals.Interval("oue", mechanisms.build("oue", epsilon=1.0),
                                                n=county.n, d=county.domain_size),
                             ma, a, mc, c) == 0


@pytest.mark.parametrize("key, epsilon", [("grr", 4.0), ("oue", 2.0), ("laplace", 0.001)])
def test_delta_sd_matches_the_simulated_sd(county, key, epsilon):
    """Dublin City's shares: the sd of 300 seeded released ratios against the delta method's sd
    at the truth (chi-square bounds on the sample variance, Bonferroni over the three)."""
    from scipy import stats
    truth = county.to_dense()
    chosen = sel.zones(county, ["Dublin City"])
    found = [shares.live_and_work(county, chosen, "work"),
             shares.live_and_work(county, chosen, "home"), shares.within(county, chosen, "home")]
    mechanism = mechanisms.build(key, epsilon=epsilon)
    rule = intervals.Interval(key, mechanism, n=county.n, d=county.domain_size)
    draws = 300
    ratios = []
    for seed in range(draws):
        ra, rc, _, _ = _sums(found, mechanism.release(truth, np.random.default_rng(seed)))
        ratios.append(ra / (ra + rc))
    a, c, ma, mc = _sums(found, truth)
    ratio = np.var(ratios, axis=0, ddof=1) / shares.sd(rule, a, ma, c, mc) ** 2
    k = draws - 1
    assert stats.chi2.ppf(0.0005 / 3, k) / k <= ratio.min(), ratio
    assert ratio.max() <= stats.chi2.ppf(1 - 0.0005 / 3, k) / k, ratio


def test_answers_on_the_truth_and_on_releases(county):
    chosen = sel.zones(county, ["Dublin City"])
    found = [shares.within(county, chosen, "work", 10.0),
             shares.live_and_work(county, chosen, "work")]
    truth = county.to_dense()
    exact = shares.evaluate(found, truth)
    flows = answers.evaluate(answers.flows(county, chosen), truth).set_index("analysis")["true"]
    assert exact["true"].iloc[1] == pytest.approx(flows["live_and_work"] / flows["jobs"])
    assert (exact["released"] == exact["true"]).all() and (exact["low"] == exact["true"]).all()
    assert (exact["method"] == intervals.METHOD_TRUE).all()
    for key, offered in (("laplace", True), ("oue", False), ("grr", False)):
        mechanism = mechanisms.build(key, epsilon=1.0)
        rule = intervals.Interval(key, mechanism, n=county.n, d=county.domain_size)
        frame = shares.evaluate(found, truth, mechanism.release(truth, np.random.default_rng(3)),
                                rule)
        assert frame["released"].between(0, 1).all()
        assert frame["low"].notna().all() == offered, key
        assert frame["method"].iloc[0].startswith("delta method") == offered
        assert offered or "fell short of 95 %" in frame["method"].iloc[0]
    for key in ("hr", "ss"):      # closed-form sums, shares' coverage not measured: said so
        rule = intervals.Interval(key, mechanisms.build(key, epsilon=1.0), n=county.n,
                                  d=county.domain_size)
        assert "was not measured for" in shares.method(rule)
        assert "fell short" not in shares.method(rule)
    clipped = intervals.Interval("laplace", mechanisms.build("laplace", epsilon=1.0), "base_pos",
                                 n=county.n, d=county.domain_size)
    assert shares.method(clipped) == shares.NO_INTERVAL.format(why=shares.CLIPPED)


def test_no_share_when_the_released_total_is_not_clearly_positive(county):
    rule = intervals.Interval("laplace", mechanisms.build("laplace", epsilon=0.01), n=county.n,
                              d=county.domain_size)
    # sd of a 40-cell sum at ε = 0.01: about 900; totals of 0, −50 and 1,000 are not clear
    share, low, high = shares.bounds(rule, [0.0, -80.0, 600.0, 50_000.0], [20] * 4,
                                     [0.0, 30.0, 400.0, 50_000.0], [20] * 4)
    assert np.isnan(share[:3]).all() and np.isnan(low[:3]).all() and np.isnan(high[:3]).all()
    assert share[3] == pytest.approx(0.5) and low[3] < 0.5 < high[3]


def test_a_share_needs_a_positive_distance_and_a_side(county):
    chosen = sel.zones(county, ["Dublin City"])
    for km in (0.0, -3.0, float("nan")):
        with pytest.raises(ValueError, match="positive number of km"):
            shares.within(county, chosen, "work", km)
    with pytest.raises(ValueError, match="side"):
        shares.live_and_work(county, chosen, "both")
