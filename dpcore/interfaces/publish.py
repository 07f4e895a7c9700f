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

**What a publish releases: the mechanism's output and public facts, nothing else** (issue 20).
Any deterministic function of the confidential rows outside the mechanism breaks the guarantee:
a hash of the input lets an adversary who knows every record but one try each candidate for the
last and match the hash; a domain read from the rows tells neighbouring tables apart by their
zones. So the published files hold no hash, size or zone list computed from the rows: the domain
comes from a public source (:mod:`dpcore.interfaces.published_domain`), the total is the released
table's own, and the input's integrity goes to a private audit record (:func:`audit_record`),
never into the published folder; so do comparisons and accuracy measured against the truth
(:mod:`dpcore.confidential`). ``tests/test_publish_attack.py`` runs the attack on the
files, ``tests/test_publish_neighbours.py`` holds the noise fixed and checks every byte.

The manifest (``manifest.json``; this is its one description):

* ``mechanism``, ``epsilon``, ``delta``, ``rho_zcdp`` (Gaussian), ``neighbouring_relation``,
  ``privacy_unit``, ``post_processing``, ``guarantee`` (in words), ``noise``,
  ``opendp_version``, ``date`` (UTC) — the settings and the guarantee;
* ``input``: ``label`` (the publisher's label for the population, as in the budget ledger, or
  "unlabelled"), ``view`` (as loaded or rolled up, and the areas chosen: zones of the public
  domain) and ``domain`` (its ``source`` — ``zones_file``, ``bundled_geography``,
  ``declared_codes`` or ``data`` —, a description, the number of origin and destination zones,
  and for ``data`` the warning of what it reveals). No file name (issue 29: an upload's name,
  e.g. ``acme_staff_home_addresses_2026.csv``, says who the data is about; a zones file's too);
* ``levels``: one entry per released level, named by role (``name``: "fine level", "parent
  level", … as in the ledger, :func:`~dpcore.interfaces.ledger.role_names`; ``release.csv``'s
  ``level`` column uses the same names), ``cells`` = the domain's size, ``epsilon``, ``delta``,
  ``scale``, ``noise_variance``; another release method adds its levels here in the same form;
  TopDown's levels below the top add ``parents`` (``origins`` and ``destinations``: each zone's
  parent zone; public geography, left out when the domain is read from the data), which the
  analyses of a folder use for a tighter bound on sums;
* ``total``: the total of the released table (``value``: the sum of the published finest
  cells, post-processing of the noisy release) and ``how``. Flat and WLS never publish the
  exact number of commuters; TopDown does on a whole table under substitution neighbours, where
  it is the same in every neighbouring table (public by that definition: :data:`TOPDOWN_TOTAL`
  says so at publish time); under add/remove neighbours it publishes no exact total;
* ``consistency`` (consistent levels only) and ``release_file``;
* ``margin_of_error``: the column of release.csv holding each count's 95 % margin of error, what
  it means and how it was computed (:mod:`dpcore.evaluation.margins`); each level's margin is in
  ``levels`` too (for WLS by the number of fine cells in the parent).
* ``id`` (random) and ``ledger_entry`` (the ledger's entry number and its MAC, a keyed digest of
  the ledger's own fields), added when the publication is recorded
  (:func:`dpcore.interfaces.ledger.record`).

Every field is a setting, a public fact or a function of the release. ``date`` is the UTC time
(to the second) at which the manifest was made, after the noise: the time the publish started
is not recorded, so its duration (which grows with the domain, and for TopDown's fit a little
with the counts) cannot be read from it.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore import export
from dpcore.data import views
from dpcore.data.od import DENSE_CELL_LIMIT, MEMORY_BUDGET_BYTES, ODMatrix
from dpcore.evaluation import margins
from dpcore.interfaces import published_domain
from dpcore.interfaces.ledger import UNLABELLED, role_names
from dpcore.mechanisms import topdown
from dpcore.mechanisms.base import ADD_REMOVE, DELTA, EPSILON, SUBSTITUTION
from dpcore.mechanisms.central import Gaussian
from dpcore.mechanisms.central import l1_sensitivity, l2_sensitivity
from dpcore.text import plain_number
from dpcore.theory.privacy_theory import group_privacy

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
    try:
        return _calibrated(dp, mechanism, float(epsilon), float(delta), neighbours)
    except dp.OpenDPException as error:
        raise ValueError(_opendp_message(error, mechanism, epsilon, delta)) from None


def gaussian_gap_sentence(epsilon: float, delta: float, neighbours: str = SUBSTITUTION) -> str:
    """The difference between the Gaussian noise a publish draws and the one Explore and the
    planner simulate at the same (ε, δ), in one sentence for the page: OpenDP's discrete Gaussian
    is calibrated through ρ-zCDP and its conversion to (ε, δ), which is not tight, so its σ is a
    few per cent above the analytic Gaussian's exact calibration [BW18]."""
    published = calibrate(GAUSSIAN, epsilon, delta, neighbours).scale
    planned = Gaussian(epsilon=epsilon, delta=delta, neighbours=neighbours).sigma
    return (f"A Gaussian publish draws OpenDP's discrete Gaussian at σ = {published:.4g} "
            f"(calibrated through zCDP), {100 * (published / planned - 1):.1f} % above the "
            f"σ = {planned:.4g} of the analytic Gaussian that Explore and the planner simulate at "
            f"the same ε = {epsilon:g}, δ = {delta:g}: the published file is that much noisier "
            "than planned.")


def _opendp_message(error, mechanism: str, epsilon: float, delta: float) -> str:
    """An OpenDP failure as a message: the settings, OpenDP's own words, what to change."""
    detail = (getattr(error, "message", None) or str(error)).strip().splitlines()
    settings = f"ε = {epsilon:g}" + (f", δ = {delta:g}" if mechanism == GAUSSIAN else "")
    return (f"OpenDP cannot calibrate {MECHANISMS[mechanism]} at {settings}"
            f"{': ' + detail[-1].strip() if detail else ''}. So small a budget needs noise "
            "beyond what 64-bit counts can carry: choose a larger ε.")


def _calibrated(dp, mechanism: str, epsilon: float, delta: float, neighbours: str) -> Noise:
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


def noisy(noise: Noise, counts: np.ndarray, progress: Callable[[int, int], None] | None = None,
          workers: int = 1) -> np.ndarray:
    """The counts with OpenDP's noise (OS randomness), chunk by chunk. ``workers`` > 1 draws
    chunks in that many threads: OpenDP's sampler runs in its Rust library outside Python's
    interpreter lock, so two threads nearly halve the time on two cores (the chunks' noises are
    independent either way)."""
    dp = _dp()
    counts = np.asarray(counts, dtype=np.int64)
    out = np.empty(counts.size, dtype=np.int64)
    starts = range(0, counts.size, CHUNK)

    def draw(start):
        try:
            out[start:start + CHUNK] = noise.measurement(counts[start:start + CHUNK].tolist())
        except dp.OpenDPException as error:  # e.g. a count plus its noise beyond 64 bits
            detail = (getattr(error, "message", None) or str(error)).strip()
            raise ValueError(f"OpenDP could not draw the noise at ε = {noise.epsilon:g} "
                             f"({detail[:200]}): choose a larger ε.") from None
        return min(start + CHUNK, counts.size)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            for done, _ in enumerate(pool.map(draw, starts), start=1):
                if progress is not None:
                    progress(min(done * CHUNK, counts.size), counts.size)
        return out
    for start in starts:
        stop = draw(start)
        if progress is not None:
            progress(stop, counts.size)
    return out


def _post(method: str, values: np.ndarray) -> np.ndarray:
    if method not in POSTPROCESS:
        raise ValueError(f"publishing supports the post-processing {', '.join(POSTPROCESS)} "
                         f"(the others use the true total); got {method!r}")
    return np.maximum(values, 0) if method == "base_pos" else values


# ----------------------------------------------------------------------------- the guarantee
#: The group size the guarantee's group-privacy example is computed for (two people: a couple
#: commuting together).
GROUP_EXAMPLE = 2

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
    if noise.mechanism == DISCRETE_LAPLACE:
        return core + " For a group of k people the bound holds with kε (group privacy)."
    pair_epsilon, pair_delta = group_privacy(noise.epsilon, GROUP_EXAMPLE, noise.delta)
    return core + (f" For a group of k people the bound holds with kε and δ grown to "
                   f"k·e^((k−1)ε)·δ (group privacy): for k = {GROUP_EXAMPLE}, ε = "
                   f"{pair_epsilon:g} and δ = {pair_delta:.3g}.")


def input_entry(label: str, view: views.View, domain: dict) -> dict:
    """The manifest's ``input``: the publisher's ``label`` (the ledger's; "unlabelled" when
    empty), the view's level and areas, and the domain's
    :meth:`~dpcore.interfaces.published_domain.Domain.manifest_entry`. Never a file name, nothing
    computed from the rows."""
    level = "rolled up to the parent level" if view.rolled_up else "as loaded"
    areas = f"; areas: {', '.join(view.areas)}" if view.areas else ""
    return {"label": label or UNLABELLED, "view": level + areas, "domain": domain}


def audit_record(od: ODMatrix, files=()) -> dict:
    """A **private** record of what was published from, for the office's own files: SHA-256 of
    the input file(s) if any (an upload's bytes are not kept) and of the table published from,
    and its number of commuters. Every field is a function of the confidential rows, so it must
    never be published (an adversary who knows all records but one would match the hash against
    each candidate for the last). An HMAC under a key kept secret would serve the same purpose.
    Written by :mod:`dpcore.confidential`, outside the publication folder, under its
    "NOT FOR PUBLICATION" first line."""
    table = od.to_frame()[["origin", "destination", "count"]]
    record = {"sha256_of_table": hashlib.sha256(export.safe_csv(table)).hexdigest(),
              "commuters": od.n,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if files:
        digest = hashlib.sha256()
        for path in files:
            digest.update(Path(path).read_bytes())
        record.update(files=[Path(p).name for p in files], sha256_of_files=digest.hexdigest())
    return record


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


def _table(od: ODMatrix, released: np.ndarray, margin, level: str | None = None
           ) -> pd.DataFrame:
    """Published cells that are not 0 (a 0 cell is implied), zone ids, the count and its margin
    of error (:mod:`dpcore.evaluation.margins`: one number for the level, or one per cell)."""
    cells = np.flatnonzero(released != 0)
    frame = pd.DataFrame({
        "origin": pd.Categorical.from_codes(cells // od.n_destinations, od.origins.ids),
        "destination": pd.Categorical.from_codes(cells % od.n_destinations, od.destinations.ids),
        "count": released[cells],
        margins.COLUMN: margin if np.isscalar(margin) else margins.column(margin, cells)})
    if level is not None:
        frame.insert(0, "level", level)
    return frame


def _total(released: np.ndarray, neighbours: str) -> dict:
    """The manifest's ``total``: the released table's own (see the module docstring)."""
    why = ("under add/remove neighbours the number of commuters differs between neighbouring "
           "tables, so it is not published exactly" if neighbours == ADD_REMOVE else
           "the exact number of commuters is not published")
    safe = released.size == 0 or int(np.abs(released).max()) < 2 ** 62 // released.size
    total = int(released.sum()) if safe else sum(int(v) for v in released)  # no i64 wrap
    return {"value": total,
            "how": f"sum of the published cells (post-processing of the noisy release); {why}"}


def _manifest(noise: Noise, postprocess: str, source: dict, levels: list[dict],
              guarantee: str, finest: np.ndarray, margin: dict) -> dict:
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
        "total": _total(finest, noise.neighbours),
        "guarantee": guarantee,
        "release_file": "release.csv: cells with a published count other than 0 and the "
                        f"count's margin of error ({margins.COLUMN}); every other cell of the "
                        "domain is published as 0",
        "margin_of_error": margin,
    }


#: Peak bytes per cell of a publish, rounded up from ``bench/bench_publish.py`` (1.8 M ED cells:
#: one level 25 with base_pos, 38 with base, whose table keeps almost every cell; the consistent
#: pair 103 and 202 per fine cell, its two tables concatenated).
PUBLISH_CELL_BYTES = 48
LEVELS_CELL_BYTES = 224


def publish_memory(od: ODMatrix, levels: bool = False) -> int:
    """Bytes a publish of ``od`` holds at its peak (dense vectors over the domain)."""
    return od.domain_size * (LEVELS_CELL_BYTES if levels else PUBLISH_CELL_BYTES)


def too_large(od: ODMatrix, levels: bool = False,
              memory_budget: int = MEMORY_BUDGET_BYTES) -> str | None:
    """Why ``od`` cannot be published here (None when it can).

    A published table carries a noisy value for every cell of the domain — leaving the empty
    cells out would show exactly which commutes exist — so it is as large as the domain, and a
    whole-state or national tract table (10⁸–10¹⁰ cells) is not something to publish cell by
    cell: choose some areas or a coarser level. Below that, the publish's dense vectors must
    fit the memory budget (the app's per-session budget)."""
    advice = "To publish, choose some areas in the sidebar or roll up to the parent level."
    if od.domain_size > DENSE_CELL_LIMIT:
        return (f"{od.name} has {od.domain_size:,} possible commutes. A differentially private "
                "table publishes a noisy value for every one of them (leaving the empty ones out "
                "would show which commutes exist), and at most "
                f"{DENSE_CELL_LIMIT:,} can be published here. {advice}")
    need = publish_memory(od, levels)
    if need > memory_budget:
        return (f"Publishing {od.name} ({od.domain_size:,} possible commutes"
                f"{', with its parent level' if levels else ''}) would hold about "
                f"{need / 2 ** 30:.1f} GB at once; one publish may use "
                f"{memory_budget / 2 ** 30:.2f} GB so that the server stays up for everyone. "
                f"{advice}")
    return None


def _check(od: ODMatrix, source: dict, levels: bool = False) -> None:
    """Before any noise is drawn: the publish fits, and the manifest can say where its domain
    comes from."""
    problem = too_large(od, levels)
    if problem:
        raise ValueError(problem)
    if "domain" not in source:
        raise ValueError("say where the published domain comes from (a zones file, a bundled "
                         "geography, declared codes, or the data after acknowledging what it "
                         "reveals): see dpcore.interfaces.published_domain")


def publish(od: ODMatrix, mechanism: str, epsilon: float, *, delta: float = 0.0,
            neighbours: str = SUBSTITUTION, postprocess: str = "base_pos", source: dict,
            progress: Callable[[int, int], None] | None = None) -> Published:
    """One level, the whole budget. ``source`` is the manifest's ``input`` (:func:`input_entry`:
    what was published from and the public domain ``od`` is laid out on)."""
    _check(od, source)
    _post(postprocess, np.zeros(0))
    noise = calibrate(mechanism, epsilon, delta, neighbours)
    released = _post(postprocess, noisy(noise, od.to_dense(), progress))
    margin = margins.noise_margin(mechanism, noise.scale)
    (role,) = role_names(1, top_first=False)
    level = {"name": role, "cells": od.domain_size, "epsilon": noise.epsilon,
             "delta": noise.delta, "scale": noise.scale, "noise_variance": noise.variance,
             margins.COLUMN: margin}
    how = margins.FLAT_HOW.format(function="discrete_laplacian_scale_to_accuracy"
                                  if mechanism == DISCRETE_LAPLACE else
                                  "discrete_gaussian_scale_to_accuracy")
    return Published(_table(od, released, margin),
                     _manifest(noise, postprocess, source, [level], guarantee_text(noise),
                               released, margins.manifest_entry(how)),
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
    _check(od, source, levels=True)
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
    children = np.bincount(groups, minlength=parent.domain_size)
    fine_margin, coarse_margin = margins.wls(children, mechanism, fine_noise.scale,
                                             coarse_noise.scale, fine_noise.variance,
                                             coarse_noise.variance, postprocess)
    by_size = {int(m): [int(fine_margin[p]), None if math.isnan(coarse_margin[p])
                        else int(coarse_margin[p])]
               for m, p in zip(*np.unique(children, return_index=True))}
    fine_role, parent_role = role_names(2, top_first=False)
    levels = [{"name": fine_role, "cells": od.domain_size, "epsilon": fine_noise.epsilon,
               "delta": fine_noise.delta, "scale": fine_noise.scale,
               "noise_variance": fine_noise.variance,
               margins.COLUMN: {"by_cells_in_parent": {m: v[0] for m, v in by_size.items()}}},
              {"name": parent_role, "cells": parent.domain_size,
               "epsilon": coarse_noise.epsilon, "delta": coarse_noise.delta,
               "scale": coarse_noise.scale, "noise_variance": coarse_noise.variance,
               margins.COLUMN: {"by_cells_in_parent": {m: v[1] for m, v in by_size.items()}}}]
    rho = None if mechanism != GAUSSIAN else fine_noise.rho + coarse_noise.rho
    whole = Noise(mechanism, float(epsilon), float(delta), neighbours, math.nan, rho, None)
    manifest = _manifest(whole, postprocess, source, levels, guarantee_text(whole, levels=2),
                         fine, margins.manifest_entry(
                             margins.WLS_HOW,
                             margins.WLS_CLIPPED_PARENTS if postprocess == "base_pos" else ""))
    manifest["consistency"] = (
        f"weighted least squares over the two levels (Hay et al., VLDB 2010): every "
        f"{parent_role} flow equals the sum of its {fine_role} flows; budget split "
        f"{fine_share:.0%} fine / {1 - fine_share:.0%} parent")
    table = pd.concat([_table(od, fine, fine_margin[groups], fine_role),
                       _table(parent, coarse, coarse_margin, parent_role)], ignore_index=True)
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


# ------------------------------------------------------------------------ TopDown (InfTDA)
FLAT, WLS, TOPDOWN = "flat", "wls", "topdown"
#: The publishing methods a user picks between (page and ``publish --method``).
METHODS = {FLAT: "Flat: one level, OpenDP noise on every cell",
           WLS: "WLS: this level and its parent, weighted least squares, rounded within parents",
           TOPDOWN: "TopDown (InfTDA): every level, discrete Gaussian, integer Chebyshev fit "
                    "parent by parent"}


def wls_unavailable(od: ODMatrix) -> str | None:
    """Why WLS is not offered for ``od`` (None when it is): it publishes a level together with
    its parent level, and a table whose zones name no parent (the county data, an ED table
    rolled up to counties, an upload without a parent column) has none to build it from. The
    bundled data carry no grouping of counties (provinces, regions) to invent one from."""
    if od.has_parent_level:
        return None
    return (f"WLS is not offered here: it publishes a level together with its parent level "
            f"(EDs with their counties) and makes the two agree, and {od.name} has no parent "
            "level — its zones are not grouped into larger zones. For WLS, load data whose "
            "zones name a parent at its finest level (the electoral divisions, not rolled up; "
            "or an upload whose zones file has a parent column). Flat and TopDown publish this "
            "one level.")


#: Threads drawing OpenDP's noise for a TopDown publish (the machine's two cores).
TOPDOWN_WORKERS = 2
#: δ of a Gaussian publish when none is given: the page's default (the sidebar's δ).
DEFAULT_DELTA = 1e-6
#: The smallest share of ρ a TopDown level may get: below it a level's noise is so large that
#: its counts carry nothing (and 10⁻³⁰⁰ made OpenDP's calibration fail).
MIN_SHARE = 1e-6
#: What the publisher is told before a TopDown publish that fits the exact total.
TOPDOWN_TOTAL = (
    "TopDown publishes the exact number of commuters of this table: every level is fitted to "
    "it. Under substitution neighbours (one commute replaced by another) that number is the "
    "same in every neighbouring table, so it is public by that definition and costs no budget, "
    "but anyone can read it from the release. To keep it private, use add/remove neighbours: "
    "then the top level is published with noise and no exact total is published.")


def exact_total(neighbours: str, whole_table: bool) -> bool:
    """Whether TopDown fits its top level to the true n (see :func:`publish_topdown`)."""
    return neighbours == SUBSTITUTION and whole_table


def parse_shares(text: str) -> list[float]:
    """``--shares`` as numbers, each at least :data:`MIN_SHARE`, adding up to 1 (their count is
    checked against the levels once the data is read); ValueError in one line otherwise."""
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise ValueError("--shares is empty: give each level's share of ρ, top level first (e.g. "
                         "0.5,0.5), or leave --shares out for an even split")
    try:
        shares = [plain_number(item) for item in items]
    except ValueError:
        raise ValueError(f"--shares must be numbers separated by commas, one per level, top "
                         f"level first (e.g. 0.5,0.5); got {text!r}") from None
    if not all(math.isfinite(x) and x >= MIN_SHARE for x in shares):
        raise ValueError(f"every --shares value must be at least {MIN_SHARE:g}; got {text!r}")
    if not math.isclose(sum(shares), 1.0, abs_tol=1e-9):
        raise ValueError(f"the --shares values must add up to 1; {text!r} adds up to "
                         f"{sum(shares):g}")
    return shares


@dataclass(frozen=True)
class LevelBudget:
    """One level's share of a TopDown publish: ρ (zCDP), the discrete Gaussian's scale, the
    OpenDP measurement, and the level alone stated as (ε, δ) at δ·share."""

    name: str
    share: float
    rho: float
    scale: float
    epsilon: float
    delta: float
    measurement: object = field(repr=False, compare=False)


def topdown_budget(epsilon: float, delta: float, shares, names, neighbours: str = SUBSTITUTION
                   ) -> tuple[float, list[LevelBudget]]:
    """ρ for (ε, δ) by OpenDP's own conversion (``make_zCDP_to_approxDP`` + ``make_fix_delta``,
    tighter than the ρ = ln(1/δ)(√(1 + ε/ln(1/δ)) − 1)² the reference package uses), split over
    the levels by ``shares`` (zCDP composes by adding ρ). Each level's discrete Gaussian scale is
    σ = Δ₂/√(2ρ·share), raised if OpenDP's own privacy map says it spends more than ρ·share.
    Returns (total ρ, the levels)."""
    shares = [float(s) for s in shares]
    if len(shares) != len(names) or min(shares) < MIN_SHARE or not math.isclose(
            sum(shares), 1.0, abs_tol=1e-9):
        raise ValueError(f"the budget shares must be {len(names)} numbers of at least "
                         f"{MIN_SHARE:g} adding up to 1 (one per level: {', '.join(names)}); "
                         f"got {shares}")
    rho = calibrate(GAUSSIAN, epsilon, delta, neighbours).rho
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T=float)
    d_in = l2_sensitivity(neighbours)
    levels = []
    for name, share in zip(names, shares):
        scale = d_in / math.sqrt(2 * rho * share)  # ρ = Δ²/(2σ²), then OpenDP's map checks it
        measurement = space >> dp.m.then_gaussian(scale=scale)
        while measurement.map(d_in) > rho * share:  # rounding: never spend more than the share
            scale = math.nextafter(scale, math.inf)
            measurement = space >> dp.m.then_gaussian(scale=scale)
        level_delta = delta * share
        approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measurement), level_delta)
        levels.append(LevelBudget(name, share, float(measurement.map(d_in)), float(scale),
                                  float(approx.map(d_in)[0]), level_delta, measurement))
    return float(rho), levels


def certified_epsilon(levels: list[LevelBudget], delta: float, neighbours: str) -> float:
    """The ε OpenDP itself certifies at ``delta`` for the levels' measurements together
    (``make_composition``, then its zCDP → (ε, δ) conversion)."""
    dp = _dp()
    composed = dp.c.make_composition([level.measurement for level in levels])
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(composed), float(delta))
    return float(approx.map(l2_sensitivity(neighbours))[0])


def even_shares(count: int) -> list[float]:
    """The paper's split: ρ/T per level."""
    return [1 / count] * count


def publish_topdown(od: ODMatrix, epsilon: float, *, delta: float, shares=None,
                    neighbours: str = SUBSTITUTION, whole_table: bool = False, source: dict,
                    progress: Callable[[int, int], None] | None = None) -> Published:
    """Every level of ``od``'s hierarchy by TopDown (:mod:`dpcore.mechanisms.topdown`): the
    discrete Gaussian from OpenDP per level (ρ split by ``shares``, default even), fitted parent
    by parent from the top.

    The top level is fitted to the true total n only when n is the same in every neighbouring
    table (no privacy cost, the paper's "bounded" setting): substitution neighbours and
    ``whole_table`` (the caller's statement that ``od`` is the whole table, not a subset of
    areas — a commute replaced by one leaving the areas changes a subset's n). Otherwise the top
    level is its noisy counts clipped at 0 and n is never published exactly."""
    levels = topdown.hierarchy(od)
    for level in levels:
        _check(level.od, source)
    names = [level.name for level in levels]
    shares = even_shares(len(levels)) if shares is None else list(shares)
    rho, budget = topdown_budget(epsilon, delta, shares, names, neighbours)
    sizes = [level.od.domain_size for level in levels]

    def noise(number, counts):
        step = None if progress is None else (
            lambda done, _: progress(sum(sizes[:number]) + done, sum(sizes)))
        level = budget[number]
        level_noise = Noise(GAUSSIAN, level.epsilon, level.delta, neighbours, level.scale,
                            level.rho, level.measurement)
        return noisy(level_noise, counts, step, workers=TOPDOWN_WORKERS)
    root = od.n if exact_total(neighbours, whole_table) else None
    released = topdown.topdown(levels, root, noise)
    if progress is not None:
        progress(sum(sizes), sum(sizes))
    whole = Noise(GAUSSIAN, float(epsilon), float(delta), neighbours, math.nan, rho, None)
    bounds = margins.topdown_margins([b.scale for b in budget], sizes)
    roles = role_names(len(levels), top_first=True)
    entries = [{"name": role, "cells": level.od.domain_size, "share_of_rho": b.share,
                "rho_zcdp": b.rho, "epsilon_alone": b.epsilon, "delta_alone": b.delta,
                "scale": b.scale, "noise_variance": b.scale ** 2, margins.COLUMN: bound}
               for role, b, level, bound in zip(roles, budget, levels, bounds)]
    # the zones' parents, for the per-parent bound of the analyses (published_analyses): public
    # geography, but for a domain read from the data, whose zones on no row it would name
    public = source["domain"].get("source") != published_domain.DATA
    for entry, level in zip(entries[1:] if public else [], levels[1:]):
        entry["parents"] = {side: dict(zip(zones.ids.tolist(), zones.parent.tolist()))
                            for side, zones in (("origins", level.od.origins),
                                                ("destinations", level.od.destinations))}
    manifest = _manifest(whole, "base_pos", source, entries,
                         guarantee_text(whole, levels=len(levels)), released[-1],
                         margins.manifest_entry(margins.TOPDOWN_HOW))
    manifest["mechanism"] = METHODS[TOPDOWN]
    manifest["post_processing"] = (
        "TopDown (InfTDA, Boninsegna & Silvestri, arXiv 2412.09256): from the top level down, "
        "each parent's children fitted to the parent's published count by an integer Chebyshev "
        "fit (non-negative whole numbers that sum exactly to the parent); children of a parent "
        "published as 0 are not noised and are published as 0")
    manifest["total"]["how"] = (
        "every level sums to the true number of commuters: under substitution neighbours it is "
        "the same in every neighbouring table of the whole table, so publishing it costs no "
        "privacy" if root is not None else
        "the sum of the published cells; the top level is its noisy counts clipped at 0, so the "
        "number of commuters is not published exactly (it differs between neighbouring tables "
        "under add/remove neighbours or in a subset of areas)")
    manifest["consistency"] = ("every level's flows sum exactly to the flows of the level "
                               "above (" + " → ".join(roles) + ")")
    table = pd.concat([_table(level.od, values, bound, role)
                       for level, values, bound, role in zip(levels, released, bounds, roles)],
                      ignore_index=True)
    return Published(table, manifest, {level.name: values
                                       for level, values in zip(levels, released)})
