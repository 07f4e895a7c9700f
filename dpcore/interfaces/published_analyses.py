"""A published folder (``release.csv`` + ``manifest.json``) as the input of the analyses, read
alone: no true table, no confidential input.

The folder gives the published counts of the cells it lists (every other cell of the domain is
published as 0), each level's size and the noise's law (mechanism, scale, post-processing) in the
manifest, so every answer's interval comes from public facts, as the folder's own margins do
(:mod:`dpcore.evaluation.margins`). Every publish of ``python3 -m dpcore publish`` is read:

* **flat** (one level, discrete Laplace or discrete Gaussian, Base or Base-Pos): the rules of
  :mod:`dpcore.analyses.intervals` with the manifest's noise;
* **WLS** (a level and its parent level, made consistent by least squares and rounded within
  parents): answered at either level (:func:`read`'s ``level``). With Base, a bound
  (:class:`FittedBound`): a fitted sum's error is its least-squares part — a weighted sum of the
  two levels' independent noises whose variance is at most k·v (k cells of the level, v its
  noise variance: the fit only shrinks it, whatever the parents' sizes, which the folder does not
  give) — plus the rounding, under 1 per fine cell and at most ½ per parent cell. With Base-Pos
  no interval: clipping biases a sum by an amount that depends on how many of its cells are
  empty, which is confidential;
* **TopDown** (every level, fitted parent by parent): the manifest's margins come from one union
  bound over every cell of every level at β = 5 % (:func:`dpcore.mechanisms.topdown.error_bound`),
  so the margin M of every level holds for all cells at once with probability ≥ 95 %, and the
  published levels add up exactly (whole counts ≥ 0, each parent cell the sum of its children).
  A sum of k cells is within k·M; with the zone-to-parent map (the manifest's ``parents``,
  written by publishes since this rule, or a zones file's parents: :func:`placed`) a level below
  the top gets the tighter :class:`ParentBound` (the same event, no further split).

Zones are known by the ids in ``release.csv``. A level's zone count on each side comes from the
manifest (:func:`_sides`); a zone seen on one side only is taken to be in the other side's
domain too while that side has zones not seen; zones of the domain that appear on no row (all
their cells published as 0) are kept as "unlisted" placeholders, so that every sum counts its
cells right. The folder holds no positions and no zone-to-parent map: distance and direction
need positions and say so, unless a zones file of the public geography is given beside it
(:func:`placed`: positions, and parents for parent selections and TopDown's per-parent
bound); otherwise the parent areas are analysed as the zones of the parent level.

Bad files get one message naming the file, the field or row, and how to fix it (uploads on the
Places page: :func:`read`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.analyses.intervals import Z_LAPLACE, Z_NORMAL, Interval
from dpcore.data.importing.notices import ImportFailed, Report
from dpcore.data.importing.zones import apply_zones, read_zone_list
from dpcore.data.od import DENSE_CELL_LIMIT, ODMatrix, ZoneSet
from dpcore.interfaces import publish
from dpcore.text import visible

UNLISTED = "(unlisted {side} {k})"
FLAT, WLS, TOPDOWN = publish.FLAT, publish.WLS, publish.TOPDOWN
#: How each kind of folder is named in messages and on the page.
KINDS = {FLAT: "flat (one level)", WLS: "WLS (a level and its parent, least squares)",
         TOPDOWN: "TopDown (every level, fitted parent by parent)"}
FINE = "fine level"
METHOD_WLS = ("bound: WLS's fitted sum = a weighted sum of the two levels' independent noises "
              "(variance at most k·{variance:.4g} for k cells of this level: the fit only "
              "shrinks it) ±{z:.2f} sd, plus the rounding within parents ({rounding}); from the "
              "manifest's noise alone")
METHOD_WLS_CLIPPED = ("no interval: WLS with base_pos sets negative fitted counts to 0, which "
                      "biases a sum by an amount that depends on how many of its cells are empty "
                      "(confidential); a folder published with base gets intervals")
METHOD_TOPDOWN = ("bound: TopDown's margin ±{margin:,} holds for every cell of every level at once "
                  "with ≥ 95 % (manifest), so a sum of k cells is within k·{margin:,}; valid but "
                  "wide{why}")
WHY_NO_MAP = (" (the tighter per-parent bound needs the zone-to-parent map: the manifest's "
              "'parents' of a newer publish, or a zones file with parents)")
WHY_TOO_LARGE = (" (no per-parent bound for a level of {pairs:,} parent cells × {cells:,} cells: "
                 "one pass of each sum per parent cell, more than {limit:,} cells)")
WHY_OTHER_PARENTS = (" (the parents given do not add this level's published counts up to the "
                     "level above's, so they are not the publish's: no per-parent bound)")
METHOD_PARENTS = ("bound: TopDown's margins (±{fine:,} per cell of this level, ±{parent:,} per cell "
                  "of the level above) hold for every cell of both levels at once with ≥ 95 % "
                  "(one union bound, manifest), and each parent cell's cells add up exactly to its "
                  "published count; so a sum's p cells out of a parent cell's m err by at most "
                  "min(p·{fine:,}, {parent:,} + (m − p)·{fine:,}), added over the parent cells "
                  "(parents from {source})")
PARENTS_MANIFEST = "the manifest's zone-to-parent map"
PARENTS_ZONES = "the zones file"
#: Most (parent cells × cells of the level) the per-parent bound sums over per analysis (one
#: pass of each sum per parent cell); beyond it a folder keeps the k·M bound.
PARENT_PASS_LIMIT = 50_000_000

#: The quantile factors of a two-sided 97.5 % bound (two sums together at ≥ 95 %, union bound):
#: the normal's, and one Laplace's over its sd (ln 40/√2, as :data:`Z_LAPLACE` is ln 20/√2).
Z_NORMAL_JOINT = 2.241402727604947
Z_LAPLACE_JOINT = math.log(40) / math.sqrt(2)
JOINT_TOPDOWN = "TopDown's margin holds for every cell at once, so A's and C's bounds ±k·M hold together"
JOINT_WLS = ("WLS's bounds of A and of C, each at 97.5 % (±{z:.2f} sd plus the rounding), hold "
             "together with ≥ 95 % (union bound)")


@dataclass(frozen=True)
class PublishedNoise:
    """The noise law a manifest states, with the interface :class:`Interval` reads."""

    key: str
    scale: float
    noise_variance: float

    @property
    def alpha(self) -> float:   # discrete Laplace: P[Z = z] ∝ α^|z|, α = e^{−1/scale}
        return math.exp(-1.0 / self.scale)

    @property
    def sigma(self) -> float:   # discrete Gaussian
        return self.scale

    def variance(self, counts, n=None, d=None):
        return np.full(np.shape(counts), self.noise_variance)


class FittedBound:
    """The interval rule of a WLS or TopDown level (module docstring): ``bounds(answers,
    cells)`` and ``method``, as :class:`Interval`. ``per_cell`` is the rounding (WLS) or the
    simultaneous margin (TopDown) added per cell; ``variance`` the per-cell noise variance bound
    (0 for TopDown); ``z`` the noise's quantile factor; ``covered`` False: no interval.

    ``joint_bounds`` are bounds that hold for *two* sums together with ≥ 95 % (a share's A and
    C, :func:`dpcore.analyses.shares.ranged`): ``joint_z`` is the quantile factor that gives them
    (TopDown's margin is simultaneous already: the same bounds; WLS: each sum at 97.5 %, union
    bound), ``joint`` says how, in words."""

    def __init__(self, method: str, variance: float = 0.0, z: float = 0.0,
                 per_cell: float = 0.0, covered: bool = True, joint_z: float = 0.0,
                 joint: str = ""):
        self.method, self.variance, self.z = method, variance, z
        self.per_cell, self.covered = per_cell, covered
        self.joint_z, self.joint = joint_z, joint

    def bounds(self, answers, cells, z: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        answers = np.asarray(answers, dtype=float)
        if not self.covered:
            return np.full(answers.shape, np.nan), np.full(answers.shape, np.nan)
        cells = np.asarray(cells, dtype=float)
        half = (self.z if z is None else z) * np.sqrt(cells * self.variance) \
            + self.per_cell * cells
        return np.maximum(answers - half, 0.0), answers + half

    def joint_bounds(self, answers, cells) -> tuple[np.ndarray, np.ndarray]:
        return self.bounds(answers, cells, self.joint_z)


class ParentBound(FittedBound):
    """A TopDown level's bound with its parents known (module docstring): on the event where every
    cell of this level errs by at most M and every cell of the level above by at most M_P (both
    manifest margins, ≥ 95 % together), the cells of a sum that are p of a parent cell's m err by
    at most min(p·M, M_P + (m − p)·M): the m cells' errors add up to the parent's. Cells whose
    zone has no known parent count M each; a parent cell's m is counted with the zones of unknown
    parent that the geography leaves room for on each side (an upper bound: the bound stays
    sound).

    ``all_bounds`` (answers' queries) and ``joint_bounds`` with ``compute`` (a share's A and C)
    find each sum's p per parent cell by summing the parent cell's indicator the way the answer
    sums the counts; without ``compute`` only the cell counts are known: k·M."""

    def __init__(self, margin: int, parent_margin: int, cell_parent: np.ndarray,
                 capacity: np.ndarray, source: str):
        super().__init__(METHOD_PARENTS.format(fine=margin, parent=parent_margin, source=source),
                         per_cell=float(margin), joint=JOINT_TOPDOWN)
        self.parent_margin, self.cell_parent, self.capacity = parent_margin, cell_parent, capacity
        self._halves = weakref.WeakKeyDictionary()   # per compute: its sums' cells do not change

    def half_widths(self, compute, cells) -> np.ndarray:
        """Per sum of ``compute`` (values → (sums, …)) over ``cells`` cells, the bound."""
        if compute not in self._halves:
            self._halves[compute] = self._half_widths(compute, cells)
        return self._halves[compute]

    def _half_widths(self, compute, cells) -> np.ndarray:
        fine, indicator = self.per_cell, np.zeros(self.cell_parent.size)
        cells = np.asarray(cells, dtype=float)
        half, placed = np.zeros(cells.shape), np.zeros(cells.shape)
        # p ≤ k cells of a parent cell lower a sum's bound below p·M only if 2p·M > m·M + M_P:
        # the other parent cells' cells count M each (below), exactly as the minimum would
        most = 2 * (cells.max() if cells.size else 0) * fine
        can = (self.capacity > 0) & (self.capacity * fine + self.parent_margin < most)
        for parent in np.flatnonzero(can):
            inside = self.cell_parent == parent
            indicator[inside] = 1.0
            p = np.asarray(compute(indicator)[0], dtype=float).reshape(cells.shape)
            indicator[inside] = 0.0
            half += np.minimum(p * fine, self.parent_margin + (self.capacity[parent] - p) * fine)
            placed += p
        return half + (cells - placed) * fine

    def all_bounds(self, queries, answers, cells) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for query, answer, count in zip(queries, answers, cells):
            half, answer = self.half_widths(query.compute, count), np.asarray(answer, dtype=float)
            out.append((np.maximum(answer - half, 0.0), answer + half))
        return out

    def joint_bounds(self, answers, cells, compute=None) -> tuple[np.ndarray, np.ndarray]:
        if compute is None:
            return super().joint_bounds(answers, cells)
        answers = np.asarray(answers, dtype=float)
        half = self.half_widths(compute, cells)
        return np.maximum(answers - half, 0.0), answers + half


def parent_rule(margin: int, parent_margin: int, od: ODMatrix, values: np.ndarray, o_parent,
                d_parent, parent_counts: pd.Series, source: str, geography=None):
    """:class:`ParentBound` of a TopDown level whose zones' parents are ``o_parent`` and
    ``d_parent`` (ids of the level above, "" where unknown); ``geography``: each side's zones
    per parent id in the publish's geography (Series), which bounds how many zones of unknown
    parent a parent can hold (the map's, or the zones file's). The k·M rule saying why when the
    parents do not add this level up to the level above's published ``parent_counts`` (indexed
    by origin, destination: a map of another geography) or the bound would cost too many
    passes."""
    # a parent that is not a zone of the level above (a zones file makes a zone it does not
    # name its own parent) is unknown: the zone may be in any parent
    o_parent, d_parent = (np.where(np.isin(np.asarray(x, dtype=str), parent_counts.index.levels[k]
                                           .astype(str)), np.asarray(x, dtype=str), "")
                          for k, x in enumerate((o_parent, d_parent)))
    o_ids, o_at = np.unique(o_parent, return_inverse=True)
    d_ids, d_at = np.unique(d_parent, return_inverse=True)
    o_known, d_known = o_ids != "", d_ids != ""
    o_at = np.where(o_known[o_at], o_at, -1)
    d_at = np.where(d_known[d_at], d_at, -1)
    pairs = o_ids.size * d_ids.size
    if pairs * od.domain_size > PARENT_PASS_LIMIT:
        return topdown_rule(margin, WHY_TOO_LARGE.format(pairs=pairs, cells=od.domain_size,
                                                         limit=PARENT_PASS_LIMIT))
    o, d = np.divmod(np.arange(od.domain_size), od.n_destinations)
    cell_parent = np.where((o_at[o] >= 0) & (d_at[d] >= 0), o_at[o] * d_ids.size + d_at[d], -1)
    # each side's zones per parent, with every zone of unknown parent (may belong to any)
    o_room = np.bincount(o_at[o_at >= 0], minlength=o_ids.size) + np.sum(o_at < 0)
    d_room = np.bincount(d_at[d_at >= 0], minlength=d_ids.size) + np.sum(d_at < 0)
    if geography is not None:   # no more zones than the geography gives the parent
        o_room = np.minimum(o_room, geography[0].reindex(o_ids).fillna(np.inf).to_numpy())
        d_room = np.minimum(d_room, geography[1].reindex(d_ids).fillna(np.inf).to_numpy())
    capacity = np.outer(o_room * o_known, d_room * d_known).ravel()
    known = np.bincount(cell_parent[cell_parent >= 0], minlength=pairs)
    capacity = np.where(known > 0, capacity, 0)
    rolled = np.bincount(cell_parent[cell_parent >= 0], weights=values[cell_parent >= 0],
                         minlength=pairs)
    published = parent_counts.reindex(pd.MultiIndex.from_product([o_ids, d_ids])).fillna(0)
    published = published.to_numpy(dtype=float)
    exact = (o_at >= 0).all() and (d_at >= 0).all()
    if np.any(rolled > published) or (exact and not np.array_equal(rolled, published)):
        return topdown_rule(margin, WHY_OTHER_PARENTS)
    return ParentBound(margin, parent_margin, cell_parent, capacity, source)


@dataclass(frozen=True, eq=False)
class Folder:
    od: ODMatrix          # the level's zones (no counts)
    values: np.ndarray    # the level's published counts over its dense domain
    interval: object      # Interval or FittedBound
    kind: str             # FLAT, WLS or TOPDOWN
    level: str            # the level answered ("fine level", "parent level", …)
    levels: tuple         # every level the folder publishes
    above: tuple | None = None   # TopDown below the top: (the level above's margin, its counts)


def _zones(seen, other, total: int, side: str) -> ZoneSet:
    """The ids seen on this side; then, while the domain has zones not seen here, the ids seen
    only on the other side (a zone all of whose cells on this side were published as 0), then
    placeholders."""
    ids = list(dict.fromkeys(seen))
    room = max(total - len(ids), 0)
    known = set(ids)
    ids += [zone for zone in dict.fromkeys(other) if zone not in known][:room]
    missing = max(total - len(ids), 0)
    return ZoneSet.from_ids(ids + [UNLISTED.format(side=side, k=k + 1) for k in range(missing)])


def _sides(cells: int, domain: dict, origins: int, destinations: int, level: str,
           seen: int, wls_parent: bool) -> tuple[int, int]:
    """The level's zones on each side: the manifest's domain when the level spans it; else the
    zones seen when they fill the level; else a square (a subset of areas keeps the commutes
    within them, and a parent level groups one zone set: the same zones on both sides). A WLS
    parent level of a subset spans every parent, but its cells outside the areas (no fine cell)
    are 0 exactly, noise-free (:func:`publish.least_squares`): the ``seen`` zones of either side
    are kept on both."""
    whole = (domain.get("origins"), domain.get("destinations"))
    if all(isinstance(x, int) and x > 0 for x in whole) and whole[0] * whole[1] == cells:
        return whole
    if origins * destinations == cells:
        return origins, destinations
    side = math.isqrt(cells)
    if side * side == cells and max(origins, destinations) <= side:
        return side, side
    if wls_parent and seen * seen <= cells:
        return seen, seen
    raise ValueError(f"manifest.json's {level!r} has {cells:,} cells, and release.csv's rows of "
                     f"it name {origins:,} origin and {destinations:,} destination zones: the "
                     "number of zones on each side cannot be told. Analyse the folder as "
                     "`python3 -m dpcore publish` wrote it (its two files unchanged).")


def _kind(manifest: dict) -> str:
    mechanism = manifest.get("mechanism")
    levels = manifest["levels"]
    if mechanism == publish.METHODS[TOPDOWN]:
        return TOPDOWN
    if mechanism in publish.MECHANISMS.values() and len(levels) in (1, 2):
        return FLAT if len(levels) == 1 else WLS
    raise ValueError(
        f"manifest.json's 'mechanism' is {visible(str(mechanism))[:80]!r} with {len(levels)} "
        f"level(s): analyses read the folders of `python3 -m dpcore publish` (flat or WLS with "
        f"{' or '.join(publish.MECHANISMS)}, or TopDown). Upload the manifest.json written "
        "beside this release.csv.")


def _number(entry: dict, field: str, where: str) -> float:
    value = entry.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"manifest.json's {where} needs '{field}' as a positive number; got "
                         f"{visible(repr(value))[:60]}. Upload the manifest.json written beside "
                         "this release.csv.")
    return float(value)


def _levels(manifest: dict) -> list[dict]:
    levels = manifest.get("levels")
    if not isinstance(levels, list) or not levels or not all(isinstance(x, dict) for x in levels):
        raise ValueError("manifest.json has no 'levels' list (one entry per published level, "
                         "with its name, cells, scale and noise_variance). Upload the "
                         "manifest.json written beside this release.csv.")
    for k, entry in enumerate(levels):
        for field in ("cells", "scale", "noise_variance"):
            _number(entry, field, f"levels[{k}]")
        if len(levels) > 1 and not isinstance(entry.get("name"), str):
            raise ValueError(f"manifest.json's levels[{k}] has no 'name' (the level column of "
                             "release.csv names the levels).")
    return levels


def _counts(table: pd.DataFrame, several: bool) -> pd.DataFrame:
    """release.csv checked: its columns, a whole count on every row, ids present, no cell twice
    (rows are numbered as a spreadsheet shows them: the header is row 1)."""
    needed = {"origin", "destination", "count"} | ({"level"} if several else set())
    missing = needed - set(table.columns)
    if missing:
        raise ValueError(f"release.csv lacks the column(s) {', '.join(sorted(missing))} (it has "
                         f"{visible(', '.join(map(str, table.columns)))[:120]}): upload the "
                         "release.csv of a publish, unchanged.")
    counts = pd.to_numeric(table["count"], errors="coerce")
    bad = np.flatnonzero(~np.isfinite(counts.to_numpy(dtype=float))
                         | (counts.to_numpy(dtype=float) % 1 != 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"release.csv row {k + 2}: count {visible(str(table['count'].iloc[k]))[:40]!r} "
                         "is not a whole number; every published count is one.")
    for column in ("origin", "destination"):
        empty = np.flatnonzero(table[column].str.strip() == "")
        if empty.size:
            raise ValueError(f"release.csv row {int(empty[0]) + 2}: the {column} is empty; "
                             "every row names its origin and destination zones.")
    keys = ["level", "origin", "destination"] if several else ["origin", "destination"]
    twice = np.flatnonzero(table.duplicated(keys))
    if twice.size:
        k = int(twice[0])
        raise ValueError(f"release.csv row {k + 2} repeats the cell "
                         f"{visible(table.origin.iloc[k])[:60]} → "
                         f"{visible(table.destination.iloc[k])[:60]}: each cell is published "
                         "once.")
    return table.assign(count=counts.to_numpy(dtype=float))


def topdown_rule(margin: int, why: str = "") -> FittedBound:
    """A TopDown level's rule from its published margin M: a sum of k cells within ±k·M (the
    module docstring; also what :mod:`.topdown_targets` plans with); ``why`` no tighter one."""
    return FittedBound(METHOD_TOPDOWN.format(margin=margin, why=why), per_cell=float(margin),
                       joint=JOINT_TOPDOWN)


def _rule(kind: str, manifest: dict, entry: dict, post, level: str, od: ODMatrix, total: float):
    """The interval rule of the level answered (module docstring)."""
    laplace = manifest["mechanism"] == publish.MECHANISMS[publish.DISCRETE_LAPLACE]
    if kind == TOPDOWN:
        margin = entry.get(publish.margins.COLUMN)
        if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
            return FittedBound(f"no interval: manifest.json's level {level!r} states no whole "
                               f"'{publish.margins.COLUMN}'", covered=False)
        return topdown_rule(margin)
    if kind == WLS:
        if post != "base":
            return FittedBound(METHOD_WLS_CLIPPED, covered=False)
        z = Z_LAPLACE if laplace else Z_NORMAL
        step, rounding = (1.0, "under 1 per cell") if level == FINE else (0.5, "at most ½ per cell")
        joint_z = Z_LAPLACE_JOINT if laplace else Z_NORMAL_JOINT
        return FittedBound(METHOD_WLS.format(variance=entry["noise_variance"], z=z,
                                             rounding=rounding),
                           float(entry["noise_variance"]), z, step, joint_z=joint_z,
                           joint=JOINT_WLS.format(z=joint_z))
    noise = PublishedNoise("discrete_laplace" if laplace else "discrete_gaussian",
                           float(entry["scale"]), float(entry["noise_variance"]))
    return Interval(noise.key, noise, post, n=total, d=od.domain_size)


def read(manifest, table: pd.DataFrame, level: str | None = None) -> Folder:
    """The published counts of one ``level`` (default the finest) and their interval rule, from
    the manifest (parsed JSON) and release.csv (ids as text); ValueError with a message naming
    the file and what to fix."""
    if not isinstance(manifest, dict):
        raise ValueError("manifest.json must hold one JSON object (the publish's manifest); "
                         f"it holds a {type(manifest).__name__}.")
    levels = _levels(manifest)
    kind = _kind(manifest)
    names = [entry.get("name", FINE) for entry in levels]
    chosen = level or (FINE if FINE in names else names[-1])
    if chosen not in names:
        raise ValueError(f"this {KINDS[kind]} folder publishes the level(s) "
                         f"{', '.join(map(repr, names))}; there is no level {visible(chosen)[:60]!r}")
    entry = levels[names.index(chosen)]
    posts = {text: key for key, text in publish.POSTPROCESS.items()}
    post = posts.get(manifest.get("post_processing"))
    if kind != TOPDOWN and post is None:
        raise ValueError(f"manifest.json's 'post_processing' is "
                         f"{visible(str(manifest.get('post_processing')))[:80]!r}; a publish "
                         f"states one of: {'; '.join(publish.POSTPROCESS.values())}.")
    table = whole = _counts(table, len(levels) > 1)
    if len(levels) > 1:
        unknown = np.flatnonzero(~table["level"].isin(names))
        if unknown.size:
            k = int(unknown[0])
            raise ValueError(f"release.csv row {k + 2}: level "
                             f"{visible(table['level'].iloc[k])[:60]!r} is not one of the "
                             f"manifest's levels ({', '.join(names)}): the two files come from "
                             "different publishes.")
        whole, table = table, table[table["level"] == chosen]
    domain = manifest.get("input", {}).get("domain", {}) if isinstance(
        manifest.get("input"), dict) else {}
    cells = int(entry["cells"])
    n_o, n_d = _sides(cells, domain if isinstance(domain, dict) else {},
                      table.origin.nunique(), table.destination.nunique(), chosen,
                      len(set(table.origin) | set(table.destination)),
                      kind == WLS and chosen != FINE)
    if n_o * n_d > DENSE_CELL_LIMIT:
        raise ValueError(f"the folder's level {chosen!r} has {n_o * n_d:,} cells, more than the "
                         f"{DENSE_CELL_LIMIT:,} analysed from a folder")
    parents = _parent_map(entry) if kind == TOPDOWN else None
    # the map names every zone of the level: those on no row are named, not placeholders
    origins = _zones(table.origin, parents["origins"] if parents else table.destination, n_o,
                     "origin")
    destinations = _zones(table.destination, parents["destinations"] if parents
                          else table.origin, n_d, "destination")
    if len(origins.ids) > n_o or len(destinations.ids) > n_d:
        raise ValueError(f"release.csv's rows of {chosen!r} name more zones than the manifest's "
                         f"{cells:,} cells allow: the two files come from different publishes.")
    od = ODMatrix.from_pairs("published folder", origins, destinations, [], [], [])
    values = np.zeros(od.domain_size)
    values[origins.index_of(table.origin) * od.n_destinations
           + destinations.index_of(table.destination)] = table["count"].to_numpy()
    total = manifest.get("total", {}).get("value") if isinstance(manifest.get("total"),
                                                                 dict) else None
    total = float(total) if isinstance(total, (int, float)) else float(values.sum())
    rule = _rule(kind, manifest, entry, post, chosen, od, total)
    above = _above(levels, names, chosen, whole) if kind == TOPDOWN and isinstance(
        rule, FittedBound) and rule.covered else None
    if above is not None and parents:
        sides = [[parents[side].get(zone, "") for zone in zones.ids]
                 for side, zones in (("origins", od.origins), ("destinations", od.destinations))]
        rule = parent_rule(int(rule.per_cell), above[0], od, values, *sides, above[1],
                           PARENTS_MANIFEST, [pd.Series(list(parents[side].values()))
                                              .value_counts() for side in parents])
    elif above is not None:
        rule = topdown_rule(int(rule.per_cell), WHY_NO_MAP)
    return Folder(od, values, rule, kind, chosen, tuple(names), above)


def _parent_map(entry: dict) -> dict | None:
    """A TopDown level's zone-to-parent map ({"origins": {zone: parent}, "destinations": …},
    written by ``publish``), as text; None when the entry has none (an older publish) or it is
    not that shape."""
    parents = entry.get("parents")
    if not isinstance(parents, dict) or not all(
            isinstance(parents.get(side), dict) for side in ("origins", "destinations")):
        return None
    return {side: {str(zone): str(parent) for zone, parent in parents[side].items()}
            for side in ("origins", "destinations")}


def _above(levels: list[dict], names: list[str], chosen: str, table: pd.DataFrame):
    """A TopDown level's level above: (its whole margin, its counts by origin and destination);
    None for the top level or a level above without a whole margin."""
    at = names.index(chosen)
    margin = levels[at - 1].get(publish.margins.COLUMN) if at > 0 else None
    if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
        return None
    rows = table[table["level"] == names[at - 1]]
    return margin, rows.set_index(["origin", "destination"])["count"]


def placed(folder: Folder, data: bytes, filename: str = "zones file") -> Folder:
    """The folder's zones given positions (and parents) by a zones file (zone, lat, lon[,
    parent]; e.g. ``data/ireland_ed.zones.csv``): public geography beside the release, so that
    distance, direction, a radius, shares within a distance and parent areas can be answered.
    The counts are the folder's, unchanged; so are the intervals, but that a TopDown level whose
    manifest has no zone-to-parent map gets the per-parent bound from the file's parents (checked
    against the level above's counts: :func:`parent_rule`). ValueError naming the file and what
    to fix when it cannot be read or places none of the folder's zones."""
    try:
        od = apply_zones(folder.od, bytes(data), filename, Report(filename))
        listed = pd.Series(read_zone_list(bytes(data), filename)[0].parent).value_counts()
    except ImportFailed as error:
        raise ValueError(str(error)) from None
    if not (od.origins.has_coordinates.any() or od.destinations.has_coordinates.any()):
        raise ValueError(f"{visible(filename)[:80]} places none of the folder's zones (no row "
                         "names one of its ids with a latitude and longitude): give the zones "
                         "file of the geography the release was published over.")
    rule = folder.interval
    if folder.above is not None and not isinstance(rule, ParentBound) and od.has_parent_level:
        rule = parent_rule(int(rule.per_cell), folder.above[0], od, folder.values,
                           od.origins.parent, od.destinations.parent, folder.above[1],
                           PARENTS_ZONES, (listed, listed))
    return dataclasses.replace(folder, od=od, interval=rule)


def parse_manifest(text) -> dict:
    """manifest.json's text (or bytes) as JSON, or a message saying where it is broken."""
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise ValueError("manifest.json is not UTF-8 text: upload the manifest.json a publish "
                         "wrote.") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"manifest.json is not valid JSON (line {error.lineno}, column "
                         f"{error.colno}: {error.msg}): upload the manifest.json a publish "
                         "wrote, unchanged.") from None


def parse_release(source) -> pd.DataFrame:
    """release.csv (a path, or bytes of an upload) with every id as text, or a message."""
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    try:
        table = pd.read_csv(source, dtype=str, keep_default_na=False, encoding="utf-8")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"release.csv cannot be read as CSV ({visible(str(error))[:160]}): "
                         "upload the release.csv a publish wrote, unchanged.") from None
    return table


def load(folder, level: str | None = None) -> Folder:
    """A folder on disk (module docstring; :func:`read`)."""
    folder = Path(folder)
    try:
        manifest = (folder / "manifest.json").read_bytes()
        table = (folder / "release.csv").read_bytes()
    except OSError as error:
        raise ValueError(f"{folder} is not a published folder (release.csv and manifest.json "
                         f"readable): {error}") from None
    return read(parse_manifest(manifest), parse_release(table), level)
