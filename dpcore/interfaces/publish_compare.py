"""Flat, WLS and TopDown side by side at the same budget: per level, how far each publishing
method lands from the truth over repeated releases.

The publishing methods of :mod:`dpcore.interfaces.publish` draw OpenDP's noise from the operating
system, which is right for a release and wrong for a comparison (unrepeatable, and ~10 µs a
cell). Here the same noise laws — the discrete Gaussian at the scales OpenDP calibrates for each
method — are drawn by NumPy from their probability mass functions, seeded, so a comparison is
reproducible and fast; the post-processing is the methods' own code. Every method gets the whole
(ε, δ), as a Gaussian mechanism. Each release's generator comes from the product's one seeding
rule (:func:`dpcore.seeding.generator`, purpose :data:`PURPOSE`, coordinates (method, ε,
trial)), so a release depends only on the seed, the method, ε and the trial (:func:`generator`).
The results are measured against the confidential table: written or downloaded, they are for the
publisher's eyes only (:mod:`dpcore.confidential`):

* ``flat``: the finest level alone with the whole budget, negatives set to 0; the levels above
  are its sums (what a user of a one-level table would do);
* ``wls``: the finest level and its parent, (ε, δ) split evenly, weighted least squares, rounding
  within parents (:func:`dpcore.interfaces.publish.publish_levels` with its default for two
  levels, ``base``: negatives kept, since clipping them would inflate every parent total); levels
  above the parent are its sums;
* ``topdown``: every level, ρ split by the shares (even by default), InfTDA.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pandas as pd

from dpcore import release as pipeline
from dpcore.interfaces import publish
from dpcore.evaluation.margins import discrete_gaussian
from dpcore.mechanisms import topdown
from dpcore.mechanisms.base import SUBSTITUTION

#: The measured quantities, with their units (every one is "lower is better" but ``consistent``).
METRICS = {
    "max_abs_error": "maximum absolute error (commuters)",
    "rmse": "RMSE per cell (commuters)",
    "invented": "invented commutes: published > 0 where the truth is 0 (cells)",
    "lost": "lost commutes: published 0 or less where the truth is > 0 (cells)",
    "negative": "negative counts published (cells)",
    "origin_total_rmse": "RMSE of origin totals (commuters)",
    "destination_total_rmse": "RMSE of destination totals (commuters)",
    "consistent": "adds up to the level above (share of releases)",
}
Z95 = 1.959963984540054
#: The seeding rule's purpose for a comparison's simulated releases.
PURPOSE = "publish comparison"


def generator(seed: int, method: str, epsilon: float, trial: int) -> np.random.Generator:
    """The generator of one simulated release (:func:`dpcore.seeding.generator`)."""
    return pipeline.generator(seed, PURPOSE, method, float(epsilon), trial)


@lru_cache(maxsize=256)
def scales(method: str, epsilon: float, delta: float, shares: tuple[float, ...],
           neighbours: str) -> tuple[float, ...]:
    """The discrete Gaussian scale of each release the method makes, calibrated by OpenDP."""
    if method == publish.FLAT:
        return (publish.calibrate(publish.GAUSSIAN, epsilon, delta, neighbours).scale,)
    if method == publish.WLS:  # (fine, parent), half the budget each, as publish_levels
        half = publish.calibrate(publish.GAUSSIAN, epsilon / 2, delta / 2, neighbours).scale
        return (half, half)
    names = [f"level {i}" for i in range(len(shares))]
    return tuple(b.scale for b in publish.topdown_budget(epsilon, delta, shares, names,
                                                         neighbours)[1])


def _sums_up(levels: list[topdown.Level], fine: np.ndarray, top: int) -> list[np.ndarray]:
    """``fine`` (at level ``top``) and its sums at every level above, coarse → fine."""
    out = [fine]
    for number in range(top, 0, -1):
        out.insert(0, np.bincount(levels[number].parent, weights=out[0],
                                  minlength=levels[number - 1].od.domain_size).astype(np.int64))
    return out


def release(method: str, levels: list[topdown.Level], sigmas: tuple[float, ...],
            rng: np.random.Generator, exact_total: bool = False) -> list[np.ndarray]:
    """One release of every level (coarse → fine) by ``method`` with seeded noise
    (``exact_total``: TopDown's top level fitted to the true n, as
    :func:`dpcore.interfaces.publish.publish_topdown` does for a whole table under
    substitution)."""
    fine = levels[-1].od.to_dense()
    if method == publish.FLAT:
        noisy = np.maximum(fine + discrete_gaussian(rng, sigmas[0], fine.size), 0)
        return _sums_up(levels, noisy, len(levels) - 1)
    if method == publish.WLS:
        coarse = levels[-2].od.to_dense()
        groups = levels[-1].parent
        fitted, parent = publish.least_squares(
            (fine + discrete_gaussian(rng, sigmas[0], fine.size)).astype(float),
            (coarse + discrete_gaussian(rng, sigmas[1], coarse.size)).astype(float),
            groups, sigmas[0] ** 2, sigmas[1] ** 2)
        published = publish.integer_consistent(fitted, parent, groups)
        return _sums_up(levels, published, len(levels) - 1)
    root = levels[-1].od.n if exact_total else None
    return topdown.topdown(levels, root, lambda number, counts:
                           counts + discrete_gaussian(rng, sigmas[number], counts.size))


def measure(levels: list[topdown.Level], released: list[np.ndarray]) -> list[dict]:
    """The :data:`METRICS` of one release, one row per level."""
    rows = []
    for number, (level, values) in enumerate(zip(levels, released)):
        truth = level.od.to_dense()
        shape = (level.od.n_origins, level.od.n_destinations)
        error = values - truth
        adds_up = (number == 0 or np.array_equal(
            np.bincount(level.parent, weights=values, minlength=released[number - 1].size),
            released[number - 1]))
        rows.append({
            "level": level.name,
            "max_abs_error": float(np.abs(error).max()),
            "rmse": float(np.sqrt(np.mean(error.astype(float) ** 2))),
            "invented": float(np.count_nonzero((values > 0) & (truth == 0))),
            "lost": float(np.count_nonzero((values <= 0) & (truth > 0))),
            "negative": float(np.count_nonzero(values < 0)),
            "origin_total_rmse": float(np.sqrt(np.mean(
                error.reshape(shape).sum(axis=1).astype(float) ** 2))),
            "destination_total_rmse": float(np.sqrt(np.mean(
                error.reshape(shape).sum(axis=0).astype(float) ** 2))),
            "consistent": float(adds_up),
        })
    return rows


def methods_for(levels: list[topdown.Level]) -> list[str]:
    """WLS needs a parent level; flat and TopDown work on any hierarchy."""
    return [publish.FLAT] + ([publish.WLS] if len(levels) > 1 else []) + [publish.TOPDOWN]


def compare(od, epsilons, delta: float, *, trials: int = 5, seed: int = 0,
            shares=None, neighbours: str = SUBSTITUTION, whole_table: bool = False,
            methods=None, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Every method at every ε, ``trials`` seeded releases each: per level and metric the mean
    and its 95 % interval (normal, from the releases' standard deviation). Columns ``method,
    epsilon, level, metric, mean, low, high, trials``. ``whole_table`` as for
    :func:`dpcore.interfaces.publish.publish_topdown`."""
    levels = topdown.hierarchy(od)
    methods = list(methods or methods_for(levels))
    shares = tuple(publish.even_shares(len(levels)) if shares is None else map(float, shares))
    jobs = [(m, e) for m in methods for e in epsilons]
    rows = []
    for done, (method, epsilon) in enumerate(jobs, start=1):
        sigmas = scales(method, float(epsilon), float(delta), shares, neighbours)
        runs = []
        for trial in range(trials):
            rng = generator(seed, method, epsilon, trial)
            runs.append(measure(levels, release(method, levels, sigmas, rng,
                                                exact_total=whole_table
                                                and neighbours == SUBSTITUTION)))
        for number, level in enumerate(levels):
            for metric in METRICS:
                values = np.array([run[number][metric] for run in runs])
                half = (Z95 * values.std(ddof=1) / math.sqrt(trials)) if trials > 1 else 0.0
                rows.append((method, float(epsilon), level.name, metric, float(values.mean()),
                             float(values.mean() - half), float(values.mean() + half), trials))
        if progress is not None:
            progress(done, len(jobs))
    return pd.DataFrame(rows, columns=["method", "epsilon", "level", "metric", "mean", "low",
                                       "high", "trials"])


def table(results: pd.DataFrame, epsilon: float) -> pd.DataFrame:
    """The side-by-side table at one ε: a row per method and level, a column per metric
    (means)."""
    at = results[np.isclose(results["epsilon"], epsilon)]
    wide = at.pivot_table(index=["method", "level"], columns="metric", values="mean",
                          sort=False).reset_index()
    return wide[["method", "level", *[m for m in METRICS if m in wide.columns]]]
