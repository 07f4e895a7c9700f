"""Publish a release an office could put out: OpenDP's vetted noise, the OS's randomness, and a
manifest that states the guarantee.

Why not the simulation mechanisms of :mod:`dpcore.mechanisms`: they use NumPy's floating-point
samplers, whose low-order bits leak (Mironov, "On significance of the least significant bits for
differential privacy", CCS 2012), and they are seeded, so anyone with the seed re-derives the
noise and subtracts it. Here the noise comes from the OpenDP library's measurements on integer
counts (Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020,
for both discrete samplers), which draw from the operating system's randomness and cannot be
seeded.

* ``discrete_laplace``: ``then_laplace`` on ``i64`` counts with the L1 distance (ε-DP);
* ``gaussian``: ``then_gaussian`` on ``i64`` counts with the L2 distance, ρ-zCDP, stated as
  (ε, δ)-DP through OpenDP's own conversion (``make_zCDP_to_approxDP`` + ``make_fix_delta``).

The scale is found by OpenDP's ``binary_search_param`` so that OpenDP's privacy map itself
certifies the budget. Large vectors are released in chunks (progress): the cells' noises are
independent and identically distributed, so the released vector has exactly the distribution of
one measurement over the whole vector, hence the same guarantee.

**Consistent levels** (:func:`publish_levels`): the fine level (e.g. ED) and its parent level
(county) are both released, with the budget split between them (sequential composition: every
commuter is in both tables), then made consistent by weighted least squares — each parent cell
is the variance-weighted combination of its own noisy count and the sum of its children, and the
children share the correction in proportion to their variances (Hay, Rastogi, Miklau, Suciu,
"Boosting the accuracy of differentially private histograms through consistency", VLDB 2010;
Boninsegna, Silvestri, arXiv 2412.09256, for OD data). Fine flows then sum exactly to the parent
flows. Post-processing never weakens the guarantee.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.od import DENSE_CELL_LIMIT, ODMatrix
from dpcore.interfaces import export
from dpcore.mechanisms.base import ADD_REMOVE, DELTA, EPSILON, SUBSTITUTION
from dpcore.mechanisms.central import l1_sensitivity, l2_sensitivity

DISCRETE_LAPLACE, GAUSSIAN = "discrete_laplace", "gaussian"
MECHANISMS = {DISCRETE_LAPLACE: "Discrete Laplace (OpenDP then_laplace on integer counts)",
              GAUSSIAN: "Discrete Gaussian (OpenDP then_gaussian on integer counts)"}
#: Post-processings that use nothing but the release (Norm and the others use the true total).
POSTPROCESS = {"base": "none (negative counts kept: unbiased, best for sums)",
               "base_pos": "negative counts set to 0"}
CHUNK = 50_000  # cells per OpenDP call (progress between calls)
PRIVACY_UNIT = "one commuter"
_RELATION = {SUBSTITUTION: "substitution: one person's commute replaced by another (two cells "
                           "change by 1)",
             ADD_REMOVE: "add/remove: one person added or removed (one cell changes by 1)"}


def opendp_version() -> str:
    return importlib.metadata.version("opendp")


def _dp():
    import opendp.prelude as dp
    dp.enable_features("contrib")  # OpenDP's documented switch for these measurements
    return dp


@dataclass(frozen=True)
class Noise:
    """A calibrated OpenDP measurement and what it guarantees."""

    mechanism: str
    epsilon: float
    delta: float
    neighbours: str
    scale: float
    rho: float | None  # zCDP parameter (Gaussian)
    measurement: object = field(repr=False, compare=False)

    @property
    def variance(self) -> float:
        """Noise variance per cell (exact for the discrete Laplace; the discrete Gaussian's is
        at most σ², and within 10⁻⁹ of it for σ ≥ 1)."""
        if self.mechanism == DISCRETE_LAPLACE:
            alpha = math.exp(-1 / self.scale)
            return 2 * alpha / (1 - alpha) ** 2
        return self.scale ** 2


def calibrate(mechanism: str, epsilon: float, delta: float = 0.0,
              neighbours: str = SUBSTITUTION) -> Noise:
    """The OpenDP measurement that meets (ε, δ) for this neighbouring relation."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"publishing supports {', '.join(MECHANISMS)}; got {mechanism!r} "
                         "(the local mechanisms are for studying, not for an office's release)")
    EPSILON.check(epsilon, "publishing")
    if neighbours not in _RELATION:
        raise ValueError(f"neighbours must be {SUBSTITUTION} or {ADD_REMOVE}; got {neighbours!r}")
    dp = _dp()
    if mechanism == DISCRETE_LAPLACE:
        if delta:
            raise ValueError("the discrete Laplace mechanism is ε-DP: leave δ out")
        space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
        d_in = int(l1_sensitivity(neighbours))
        scale = dp.binary_search_param(lambda s: space >> dp.m.then_laplace(scale=s),
                                       d_in=d_in, d_out=float(epsilon))
        measurement = space >> dp.m.then_laplace(scale=scale)
        return Noise(mechanism, float(epsilon), 0.0, neighbours, float(scale), None, measurement)
    DELTA.check(delta, "the Gaussian mechanism")
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T=float)
    d_in = l2_sensitivity(neighbours)

    def approx(s):
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(
            space >> dp.m.then_gaussian(scale=s)), float(delta))
    scale = dp.binary_search_param(approx, d_in=d_in, d_out=(float(epsilon), float(delta)))
    measurement = space >> dp.m.then_gaussian(scale=scale)
    return Noise(mechanism, float(epsilon), float(delta), neighbours, float(scale),
                 float(measurement.map(d_in)), measurement)


def noisy(noise: Noise, counts: np.ndarray, progress: Callable[[int, int], None] | None = None
          ) -> np.ndarray:
    """The counts with OpenDP's noise (OS randomness), chunk by chunk."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.empty(counts.size, dtype=np.int64)
    for start in range(0, counts.size, CHUNK):
        part = counts[start:start + CHUNK].tolist()
        out[start:start + CHUNK] = noise.measurement(part)
        if progress is not None:
            progress(min(start + CHUNK, counts.size), counts.size)
    return out


def _post(method: str, values: np.ndarray) -> np.ndarray:
    if method not in POSTPROCESS:
        raise ValueError(f"publishing supports the post-processing {', '.join(POSTPROCESS)} "
                         f"(the others use the true total); got {method!r}")
    return np.maximum(values, 0) if method == "base_pos" else values


# ----------------------------------------------------------------------------- the guarantee
def guarantee_text(noise: Noise, levels: int = 1) -> str:
    """The guarantee in words, for the manifest and the page (``levels`` > 1: several levels
    released together, whose budgets add up to this one by sequential composition)."""
    relation = _RELATION[noise.neighbours]
    whole = "" if levels == 1 else (f" in total (sequential composition of the {levels} "
                                    "levels' budgets)")
    if noise.mechanism == DISCRETE_LAPLACE:
        core = (f"ε-differential privacy with ε = {noise.epsilon:g}{whole}: for any two input "
                f"tables that differ in {PRIVACY_UNIT} ({relation}), the probability of any "
                f"published table differs by at most a factor e^ε = {math.exp(noise.epsilon):.4g}.")
    else:
        core = (f"(ε, δ)-differential privacy with ε = {noise.epsilon:g}, δ = {noise.delta:g}"
                f"{whole} (OpenDP's conversion from ρ-zCDP, ρ = {noise.rho:.4g} in all): for any "
                f"two input tables that differ in {PRIVACY_UNIT} ({relation}), the probability "
                f"of any set of published tables differs by at most a factor "
                f"e^ε = {math.exp(noise.epsilon):.4g}, plus δ.")
    return core + (" For a group of k people the bound holds with kε (group privacy).")


def sha256_of(paths) -> str:
    """SHA-256 of the input file(s), concatenated in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def file_source(paths) -> dict:
    """The ``input`` entry of a manifest for files read from disk (with their SHA-256)."""
    return {"files": [Path(p).name for p in paths], "sha256": sha256_of(paths)}


def matrix_source(od: ODMatrix, filename: str) -> dict:
    """The ``input`` entry for an upload held in memory: the SHA-256 of the imported table (its
    non-zero cells as long-format CSV), since the uploaded bytes themselves are not kept."""
    table = od.to_frame()[["origin", "destination", "count"]]
    return {"files": [filename], "sha256_of_imported_table":
            hashlib.sha256(export.safe_csv(table)).hexdigest()}


# --------------------------------------------------------------------------------- one level
@dataclass
class Published:
    """A published release: the table (what goes into release.csv) and its manifest."""

    table: pd.DataFrame
    manifest: dict
    released: dict[str, np.ndarray]  # level → published vector (dense), for the page's errors

    def write(self, out_dir) -> tuple[Path, Path]:
        """``release.csv`` (formula-safe) and ``manifest.json`` in ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        export.write_safe_csv(self.table, out / "release.csv")
        (out / "manifest.json").write_text(json.dumps(self.manifest, indent=2,
                                                      ensure_ascii=False) + "\n")
        return out / "release.csv", out / "manifest.json"


def _table(od: ODMatrix, released: np.ndarray, level: str | None = None) -> pd.DataFrame:
    """Published cells that are not 0 (a 0 cell is implied), zone ids and the count."""
    cells = np.flatnonzero(released != 0)
    frame = pd.DataFrame({
        "origin": pd.Categorical.from_codes(cells // od.n_destinations, od.origins.ids),
        "destination": pd.Categorical.from_codes(cells % od.n_destinations, od.destinations.ids),
        "count": released[cells]})
    if level is not None:
        frame.insert(0, "level", level)
    return frame


def _manifest(noise: Noise, postprocess: str, source: dict, levels: list[dict],
              guarantee: str) -> dict:
    return {
        "mechanism": MECHANISMS[noise.mechanism],
        "epsilon": noise.epsilon,
        "delta": noise.delta,
        "rho_zcdp": noise.rho,
        "neighbouring_relation": _RELATION[noise.neighbours],
        "privacy_unit": PRIVACY_UNIT,
        "post_processing": POSTPROCESS[postprocess],
        "levels": levels,
        "noise": "OpenDP measurements on 64-bit integer counts; randomness from the operating "
                 "system (not seeded, so the noise cannot be re-derived)",
        "opendp_version": opendp_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "input": source,
        "guarantee": guarantee,
        "release_file": "release.csv: cells with a published count other than 0; every other "
                        "cell of the domain is published as 0",
    }


def too_large(od: ODMatrix) -> str | None:
    """Why ``od`` cannot be published here (None when it can).

    A published table carries a noisy value for every cell of the domain — leaving the empty
    cells out would show exactly which commutes exist — so it is as large as the domain, and a
    whole-state or national tract table (10⁸–10¹⁰ cells) is not something to publish cell by
    cell: choose some areas or a coarser level."""
    if od.domain_size <= DENSE_CELL_LIMIT:
        return None
    return (f"{od.name} has {od.domain_size:,} possible commutes. A differentially private "
            "table publishes a noisy value for every one of them (leaving the empty ones out "
            "would show which commutes exist), and at most "
            f"{DENSE_CELL_LIMIT:,} can be published here. To publish, choose some areas in the "
            "sidebar or roll up to the parent level.")


def _check_size(od: ODMatrix) -> None:
    problem = too_large(od)
    if problem:
        raise ValueError(problem)


def publish(od: ODMatrix, mechanism: str, epsilon: float, *, delta: float = 0.0,
            neighbours: str = SUBSTITUTION, postprocess: str = "base_pos", source: dict,
            progress: Callable[[int, int], None] | None = None) -> Published:
    """One level, the whole budget. ``source`` describes the input (name and SHA-256)."""
    _check_size(od)
    _post(postprocess, np.zeros(0))
    noise = calibrate(mechanism, epsilon, delta, neighbours)
    released = _post(postprocess, noisy(noise, od.to_dense(), progress))
    level = {"name": od.name, "cells": od.domain_size, "epsilon": noise.epsilon,
             "delta": noise.delta, "scale": noise.scale, "noise_variance": noise.variance}
    return Published(_table(od, released),
                     _manifest(noise, postprocess, source, [level], guarantee_text(noise)),
                     {"fine": released})


# --------------------------------------------------------------------------- consistent levels
def _parent_cells(od: ODMatrix) -> tuple[np.ndarray, ODMatrix]:
    """For each fine cell its parent cell (flat index at the parent level), and that level."""
    parent = od.aggregate()
    o = parent.origins.index_of(od.origins.parent)
    d = parent.destinations.index_of(od.destinations.parent)
    cells = np.arange(od.domain_size)
    return o[cells // od.n_destinations] * parent.n_destinations + \
        d[cells % od.n_destinations], parent


def least_squares(fine: np.ndarray, coarse: np.ndarray, groups: np.ndarray, fine_variance: float,
                  coarse_variance: float) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least-squares consistency (Hay et al. 2010) of a two-level hierarchy.

    Minimises Σ(x̂ − fine)²/v_f + Σ(Σ_children x̂ − coarse)²/v_c. With m children of a parent and
    S the sum of their noisy counts, the parent becomes S + w·(coarse − S), w = m·v_f/(m·v_f +
    v_c), and each child gets (parent − S)/m added. Returns (fine, coarse), consistent.
    """
    sums = np.bincount(groups, weights=fine, minlength=coarse.size)
    m = np.bincount(groups, minlength=coarse.size).astype(float)
    weight = m * fine_variance / (m * fine_variance + coarse_variance)
    parent = sums + weight * (coarse - sums)
    fitted = fine + ((parent - sums) / np.maximum(m, 1))[groups]
    return fitted, parent


def integer_consistent(fine: np.ndarray, coarse: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Whole-number children whose sums are the parents rounded: each child is rounded down,
    then the children with the largest remainders get +1 until their parent's rounded total is
    reached (largest-remainder rounding, within each parent). Moves every child by less than 1."""
    floors = np.floor(fine)
    remainders = fine - floors
    short = np.rint(coarse) - np.bincount(groups, weights=floors, minlength=coarse.size)
    order = np.lexsort((-remainders, groups))  # by parent, largest remainder first
    starts = np.searchsorted(groups[order], np.arange(coarse.size))
    rank = np.empty(fine.size, dtype=np.int64)
    rank[order] = np.arange(fine.size) - starts[groups[order]]
    return (floors + (rank < short[groups])).astype(np.int64)


def level_variances(m: np.ndarray, fine_variance: float, coarse_variance: float
                    ) -> tuple[float, float]:
    """Mean per-cell error variance after :func:`least_squares`, (fine, coarse), for parents
    with ``m`` children each: a child's is v_f − v_f²/D and a parent's m·v_f·v_c/D, with
    D = m·v_f + v_c (the noise of the parent's count and of its children's sum, combined with
    inverse-variance weights)."""
    m = m[m > 0]  # parents without children (outside a subset) are 0 by construction
    denominator = m * fine_variance + coarse_variance
    fine = fine_variance - fine_variance ** 2 / denominator
    coarse = m * fine_variance * coarse_variance / denominator
    return float(np.sum(fine * m) / np.sum(m)), float(np.mean(coarse))


def publish_levels(od: ODMatrix, mechanism: str, epsilon: float, *, fine_share: float = 0.5,
                   delta: float = 0.0, neighbours: str = SUBSTITUTION,
                   postprocess: str = "base", source: dict,
                   progress: Callable[[int, int], None] | None = None) -> Published:
    """The fine level and its parent level together, consistent (see the module docstring).

    The budget is split: ``fine_share``·ε (and δ) to the fine level, the rest to the parent
    level; the two compose to ε (sequential composition). After least squares the fine counts
    are rounded to whole numbers within each parent (:func:`integer_consistent`); ``base_pos``
    then sets negative fine counts to 0, and each parent count is the sum of its children, so
    the levels stay exactly consistent.
    """
    if not od.has_parent_level:
        raise ValueError(f"{od.name} has no parent level: consistent levels need zones nested "
                         "in parents (e.g. EDs in counties)")
    _check_size(od)
    if not 0 < fine_share < 1:
        raise ValueError(f"the fine level's share of the budget must be in (0, 1); got "
                         f"{fine_share}")
    _post(postprocess, np.zeros(0))
    groups, parent = _parent_cells(od)
    fine_noise = calibrate(mechanism, epsilon * fine_share, delta * fine_share, neighbours)
    coarse_noise = calibrate(mechanism, epsilon * (1 - fine_share), delta * (1 - fine_share),
                             neighbours)
    total = od.domain_size + parent.domain_size

    def step(done, _):
        if progress is not None:
            progress(min(done, total), total)
    coarse_raw = noisy(coarse_noise, parent.to_dense(), step)
    fine_raw = noisy(fine_noise, od.to_dense(),
                     lambda done, _: step(parent.domain_size + done, total))
    fine, coarse = least_squares(fine_raw.astype(float), coarse_raw.astype(float), groups,
                                 fine_noise.variance, coarse_noise.variance)
    fine = _post(postprocess, integer_consistent(fine, coarse, groups))
    coarse = np.bincount(groups, weights=fine, minlength=coarse.size).astype(np.int64)
    levels = [{"name": od.name, "cells": od.domain_size, "epsilon": fine_noise.epsilon,
               "delta": fine_noise.delta, "scale": fine_noise.scale,
               "noise_variance": fine_noise.variance},
              {"name": parent.name, "cells": parent.domain_size,
               "epsilon": coarse_noise.epsilon, "delta": coarse_noise.delta,
               "scale": coarse_noise.scale, "noise_variance": coarse_noise.variance}]
    rho = None if mechanism != GAUSSIAN else fine_noise.rho + coarse_noise.rho
    whole = Noise(mechanism, float(epsilon), float(delta), neighbours, math.nan, rho, None)
    manifest = _manifest(whole, postprocess, source, levels, guarantee_text(whole, levels=2))
    manifest["consistency"] = (
        f"weighted least squares over the two levels (Hay et al., VLDB 2010): every "
        f"{parent.name} flow equals the sum of its {od.name} flows; budget split "
        f"{fine_share:.0%} fine / {1 - fine_share:.0%} parent")
    table = pd.concat([_table(od, fine, "fine"), _table(parent, coarse, "parent")],
                      ignore_index=True)
    return Published(table, manifest, {"fine": fine, "parent": coarse})


def level_errors(od: ODMatrix, mechanism: str, epsilon: float, fine_share: float,
                 delta: float = 0.0, neighbours: str = SUBSTITUTION) -> pd.DataFrame:
    """Expected RMSE per cell at each level (raw, before rounding and clipping): each level
    released alone with the whole budget, the parent level as sums of the fine level released
    alone, and the consistent pair with the budget split. Parent cells without any fine cell
    (outside a subset of areas) are left out: they are 0 by construction."""
    groups, parent = _parent_cells(od)
    alone_fine = calibrate(mechanism, epsilon, delta, neighbours).variance
    fine_v = calibrate(mechanism, epsilon * fine_share, delta * fine_share, neighbours).variance
    coarse_v = calibrate(mechanism, epsilon * (1 - fine_share), delta * (1 - fine_share),
                         neighbours).variance
    m = np.bincount(groups, minlength=parent.domain_size).astype(float)
    fine_after, coarse_after = level_variances(m, fine_v, coarse_v)
    m = m[m > 0]
    return pd.DataFrame({
        "level": [od.name, parent.name],
        "alone, whole ε (RMSE)": [math.sqrt(alone_fine), math.sqrt(alone_fine)],
        "alone, fine level summed up (RMSE)": [math.sqrt(alone_fine),
                                               float(np.sqrt(np.mean(m * alone_fine)))],
        "consistent, split ε (RMSE)": [math.sqrt(fine_after), math.sqrt(coarse_after)],
    })
