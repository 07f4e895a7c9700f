"""The 95 % interval of an answer on an OnTheMap release: debiased from the synthesizer's known law.

OnTheMap's synthesizer (:mod:`dpcore.mechanisms.onthemap`) adds no noise: per workplace d it
draws m synthetic homes from a Dirichlet–multinomial with parameters n(d) + α(d) over its k
candidate origins. Its answers are **biased towards uniform**: E[s_i] = m(n_i + α)/A with
A = n + kα, so a released sum s_S has no interval around itself (its bias depends on the
confidential n_S, and at ε = 1 the prior outweighs the data). The law is known exactly, so the
bias can be removed:

* **Per unit** — a workplace, or with candidates 'parent' each of its two candidate groups (the
  origins in its own parent area, the others), synthesized apart with its own size. By the
  Dirichlet's aggregation property s_S ~ Beta-binomial(m; n_S + |S|α, A − n_S − |S|α), units
  independent. So n̂_S = s_S·A/m − |S|α is unbiased for n_S, with variance
  (A/m)²·m·Q(1 − Q)·(A + m)/(A + 1), Q = (n_S + |S|α)/A, taken at n̂_S clipped to [0, m]
  (plug-in) and, as a guard for low synthetic counts, at that estimate ± 1.96 sd too (the
  largest of the three). A set covering a whole unit (a workplace's jobs) has Q = 1: exact.
* **The answer**: Σ over units of n̂_S ± 1.96 sd (variance summed), low at least 0. m is each
  unit's released total and α the mechanism's own function of m and k
  (:meth:`~dpcore.mechanisms.onthemap.OnTheMapSynthesizer.prior_for`): public.
* **Small workplaces** (m < :data:`SMALL_WORKPLACE`): a worker moves the estimate by A/m (40 and
  more at ε = 1), so the normal law fails there (measured: ``test_shortfall_without_the_guards``).
  Their part of a set (not the whole unit) is bounded instead: it lies in [0, m], which widens
  the interval's upper end by m (the estimate shows it clipped to [0, m]).
* **Noisy totals** (``total='noisy'``): m = n + Z (discrete Laplace, public scale), so A is
  estimated by m + kα and n̂_S gains Q·(m − n) to first order: Var(Z)·Q² is added per unit. A
  workplace with m below :data:`NOISY_SDS` noise sds is beyond that first order: an answer
  drawing on one gets no interval (its total may be far from n, or 0).

Each answer's sums per unit come from one pass per query (:class:`PerUnit`: the query's
block of cells grouped by part and unit with a bincount; the comparison of every area by its
areas' blocks), and the bounds are computed for every (part, unit) at once
(:class:`Entries`). A sparse release (the national tracts) names its non-empty cells; each
workplace's other cells are taken at its empty-cell mean, as every sparse sum is
(:mod:`dpcore.analyses.sums`): the estimate is then the dense one's expectation given the
release, still unbiased, and the dense variance bounds its variance. No interval after
post-processing other than 'base', and the method says why. Coverage and times:
``tests/test_analyses_synthesized.py``, ``bench/bench_analyses.py``, docs/ANALYSES.md.

The same law at the true table (:class:`Theory`) gives the planner's half-widths, and for
Tradeoffs the error against ε of the raw synthetic answer (bias² + variance) and of the debiased
estimate (its sd).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore import release
from dpcore.analyses import answers, sums
from dpcore.analyses.intervals import Z_NORMAL
from dpcore.mechanisms import onthemap as otm
from dpcore.mechanisms.central import l1_sensitivity
from dpcore.mechanisms.sparse_vector import SparseVector

KEY = "onthemap"
#: Units × cells up to which the per-unit evaluation runs (the county: 35 × 1,085; two ED
#: Workplaces (units) drawn with fewer workers get the bound [0, m] instead of the normal law.
SMALL_WORKPLACE = 20
#: With noisy totals, the noise sds below which a workplace is too small for the first-order
#: correction of its estimated A.
NOISY_SDS = 10.0
#: Relative slack added to every half-width for floating-point rounding of A/m and α.
ROUNDING = 1e-9

METHOD = ("debiased from the synthesizer's known law, ±1.96 sd: the synthetic answer itself is "
          "biased towards uniform by the prior α and has no interval (its bias depends on the "
          "confidential counts), so the interval is around the unbiased estimate "
          "n̂ = Σ_d (s_S(d)·A/m − |S|α), A = m + kα per workplace d, variance "
          "Σ_d (A/m)²·Var s_S(d) (Beta-binomial, at n̂ clipped to [0, m]); a workplace of fewer "
          f"than {SMALL_WORKPLACE} workers adds its part's bound [0, m] instead")
NOISY_NOTE = ("; noisy totals: + Var(noise)·Q² per workplace for the estimated A, and no interval "
              f"for answers on a workplace under {NOISY_SDS:g} noise sds ({{small:,.0f}} workers)")
PARENT_NOTE = "; candidates 'parent': each workplace's two candidate groups apart"
NO_SHARE = ("the synthetic share is a ratio of two sums biased towards uniform; only the sums get "
            "a debiased interval here (the table above), not their ratio")
NOT_BASE = ("no interval: the synthetic table after '{post}' no longer follows the synthesizer's "
            "law; choose the post-processing 'base'")
SPARSE_NOTE = ("; sparse release: the cells it does not name at their workplace's mean (their "
               "expected value given the release)")
PARENT_SPARSE = ("candidates 'parent' has no sparse release (each workplace's candidate origins "
                 "are then an area, not the whole table)")
#: Units × cells up to which the planner evaluates the law for its family "pairs" (every cell
#: of the table named: :func:`too_large`); the other families are not limited.
MOST_UNIT_CELLS = 20_000_000
TOO_LARGE = ("no interval: not computed: {units:,} workplaces × {cells:,} cells is beyond the "
             f"{MOST_UNIT_CELLS:,} the planner evaluates the law on")
#: Parent areas × workplaces up to which the comparison of every parent area is evaluated:
#: each area's outflow has an entry per workplace outside it (the national tracts' 3,000-odd
#: counties × 85,000 tracts would be 2.6·10⁸ entries, gigabytes).
MOST_AREA_ENTRIES = 20_000_000
PARENTS_NOTE = ("; the comparison of every parent area gets no interval on this table: "
                "{areas:,} areas × {workplaces:,} workplaces is beyond the "
                f"{MOST_AREA_ENTRIES:,} its per-workplace terms are evaluated on")
#: Named cells (a dense release's non-zero ones) up to which the comparison of every zone is
#: evaluated: each zone's outflow has a term per named cell of its row (measured on the
#: national tracts' 8.1 M: 13 s and 3 GB more memory).
MOST_ZONE_ENTRIES = 4_000_000
ZONES_NOTE = ("; the comparison of every zone gets no interval on this release: its {cells:,} "
              "non-empty cells are beyond the "
              f"{MOST_ZONE_ENTRIES:,} its per-workplace terms are evaluated on")
NOT_SUMS = ("no interval: {analysis!r} is neither one block's sums nor the comparison of every "
            "area, the analyses the per-workplace law is evaluated on")


def noise_variance(mechanism) -> float:
    """Var of the discrete-Laplace noise of a noisy total (0 with exact totals)."""
    if mechanism.total != otm.NOISY:
        return 0.0
    rate = mechanism.epsilon * mechanism.total_share / l1_sensitivity(mechanism.neighbours)
    a = math.exp(-rate)
    return 2 * a / (1 - a) ** 2


def small_size(mechanism) -> float:
    """The size below which a workplace does not get the normal law (module docstring)."""
    if mechanism.total == otm.NOISY:
        return NOISY_SDS * math.sqrt(noise_variance(mechanism))
    return SMALL_WORKPLACE


class Units:
    """The synthesizer's units of a table: one per workplace, or with candidates 'parent' one
    per non-empty candidate group of a workplace (its own parent area's origins, the others),
    each workplace's groups in that order. ``k``: each unit's candidate origins."""

    def __init__(self, od, mechanism):
        self.od, d = od, od.n_destinations
        self.parent = mechanism.candidates == otm.PARENT
        if not self.parent:
            self.unit_in, self.unit_out = np.arange(d), None
            self.k = np.full(d, od.n_origins, dtype=np.int64)
            self.n = d
            return
        origin_areas, destination_areas = mechanism.areas
        codes, inverse = np.unique(np.concatenate([origin_areas, destination_areas]).astype(str),
                                   return_inverse=True)
        self.o_code, self.d_code = inverse[:origin_areas.size], inverse[origin_areas.size:]
        k_in = np.bincount(self.o_code, minlength=codes.size)[self.d_code]
        k_out = od.n_origins - k_in
        has = np.stack([k_in > 0, k_out > 0], axis=1).ravel()   # per workplace: in, out
        number = np.cumsum(has) - 1
        self.unit_in = np.where(k_in > 0, number[0::2], -1)
        self.unit_out = np.where(k_out > 0, number[1::2], -1)
        self.k = np.stack([k_in, k_out], axis=1).ravel()[has]
        self.n = int(has.sum())

    def of(self, o, d) -> np.ndarray:
        """The unit of cells (o, d) (index arrays, broadcast)."""
        o, d = np.broadcast_arrays(np.asarray(o), np.asarray(d))
        if not self.parent:
            return self.unit_in[d]
        return np.where(self.o_code[o] == self.d_code[d], self.unit_in[d], self.unit_out[d])

    def totals(self, values) -> np.ndarray:
        """Each unit's total in ``values`` (its m in a release)."""
        od = self.od
        if isinstance(values, SparseVector):
            if self.parent:
                raise ValueError(PARENT_SPARSE)
            found = sums.group_sums(values, od, np.arange(od.n_origins),
                                    np.arange(od.n_destinations), "col")[0]
        elif not self.parent:
            found = np.asarray(values, dtype=float).reshape(od.n_origins,
                                                            od.n_destinations).sum(axis=0)
        else:
            unit = self.of(np.arange(od.n_origins)[:, None],
                           np.arange(od.n_destinations)[None, :])
            found = np.bincount(unit.ravel(), weights=np.asarray(values, dtype=float),
                                minlength=self.n)
        # counts of (synthetic) workers: a sparse release's are summed from named cells and
        # empty-cell means, so not exactly integers
        return np.rint(found)


class NotSums(TypeError):
    """A query did arithmetic on its per-unit sums: it is not one block's sums."""


def _not_sums(*_, **__):
    raise NotSums("per-unit sums are not an array")


class Entries:
    """A query's sums per (part, unit): for each, the part (−1: every part of the query), the
    unit, its cells in the part (|S_u|), the vector's sum over them (s_S(u)) and a weight (±1:
    a sparse vector's named cells replace the shared unnamed one's term)."""

    __array__ = _not_sums   # arithmetic on them (the comparison's) is not taken for sums

    def __init__(self, part, unit, inside, s, weight=None):
        self.part, self.unit = np.asarray(part, np.int64), np.asarray(unit, np.int64)
        self.inside, self.s = np.asarray(inside, float), np.asarray(s, float)
        self.weight = np.ones(self.s.size) if weight is None else np.asarray(weight, float)

    @classmethod
    def join(cls, found: list, sizes) -> Entries:
        """The entries of several queries (``sizes``: their parts) as one answer list: parts
        shifted, a query's shared entries (part −1) marked −1 − its number."""
        at = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        part = [np.where(e.part >= 0, e.part + start, -1 - q)
                for q, (e, start) in enumerate(zip(found, at))]
        joined = cls(np.concatenate(part), *(np.concatenate([getattr(e, name) for e in found])
                                             for name in ("unit", "inside", "s", "weight")))
        joined.sizes = np.asarray(sizes, dtype=np.int64)
        return joined

    def total(self, x: np.ndarray) -> np.ndarray:
        """Per answer: Σ weight·x over its entries and its query's shared ones."""
        x = self.weight * x
        own = self.part >= 0
        found = np.bincount(self.part[own], weights=x[own], minlength=int(self.sizes.sum()))
        shared = np.bincount(-1 - self.part[~own], weights=x[~own], minlength=self.sizes.size)
        return found + np.repeat(shared, self.sizes)


class Block:
    """A query's block as :func:`dpcore.analyses.sums.group_sums` named it, not yet summed."""

    __array__ = _not_sums

    def __init__(self, traced: PerUnit, *block):
        self.traced, self.block = traced, block

    def entries(self) -> Entries:
        return self.traced.sums_of(*self.block)


class PerUnit:
    """A vector whose sums (:func:`dpcore.analyses.sums.group_sums`) are :class:`Entries`:
    one pass over the cells a query selects, grouped by part and unit (no pass per unit)."""

    __array__ = _not_sums   # a query reading the vector itself (every OD pair)

    def __init__(self, units: Units, values):
        self.units, self.values = units, values
        self.sparse = isinstance(values, SparseVector)
        if self.sparse and units.parent:
            raise ValueError(PARENT_SPARSE)

    def per_unit_sums(self, rows, cols, by, size) -> Block:
        """The hook :func:`dpcore.analyses.sums.group_sums` calls: the block, summed only when
        the query returns it as it is (a query doing arithmetic on it is not one block's)."""
        return Block(self, rows, cols, by, size)

    def sums_of(self, rows, cols, by, size) -> Entries:
        """The block's :class:`Entries`."""
        if isinstance(by, str) and by == "pairs":
            values = sums.group_sums(self.values, self.units.od, rows, cols, "pairs")[0]
            return Entries(np.arange(rows.size), self.units.of(rows, cols), np.ones(rows.size),
                           values)
        if isinstance(by, str) and by == "row" and not self.units.parent:
            return self._rows(rows, cols)
        if self.sparse:
            return self._sparse(rows, cols, by, size)
        return self._dense(rows, cols, by)

    def _means(self) -> np.ndarray:
        """Per workplace, the value its unnamed cells are summed at (0 for a dense vector)."""
        od = self.units.od
        if not self.sparse:
            return np.zeros(od.n_destinations)
        return np.broadcast_to(np.asarray(sums.named_mean(self.values, od), float),
                               (od.n_destinations,))

    def _named(self, rows, cols) -> tuple[np.ndarray, ...]:
        """The block positions (r, c) and values of its named cells (a dense vector: its
        non-zero cells)."""
        if self.sparse:
            named = list(sums.named_in_block(self.values, self.units.od, rows, cols))
            return tuple(np.concatenate([x[i] for x in named]) for i in range(3))
        od = self.units.od
        grid = np.asarray(self.values).reshape(od.n_origins, od.n_destinations)
        whole = rows.size == od.n_origins and cols.size == od.n_destinations \
            and np.array_equal(rows, np.arange(rows.size)) \
            and np.array_equal(cols, np.arange(cols.size))
        block = grid if whole else grid[np.ix_(rows, cols)]
        r, c = np.nonzero(block)
        return r, c, block[r, c].astype(float)

    def _rows(self, rows, cols) -> Entries:
        """"row" (one cell per part and workplace): one entry per workplace shared by every
        part, at its unnamed-cell value, replaced at the named cells (so the national tracts'
        85,000 homes × a county's workplaces are not written out)."""
        mean = self._means()
        r, c, value = self._named(rows, cols)
        every = cols.size
        return Entries(np.concatenate([np.full(every, -1), r, r]),
                       np.concatenate([cols, cols[c], cols[c]]),
                       np.ones(every + 2 * r.size),
                       np.concatenate([mean[cols], value, mean[cols[c]]]),
                       np.concatenate([np.ones(every + r.size), -np.ones(r.size)]))

    def comparison(self, query) -> Entries | None:
        """The comparison of every zone or parent area (:func:`answers.comparison`) and the
        planner's every OD pair, which are not one block's sums: its areas' blocks (inflow:
        homes outside × its workplaces; outflow: its homes × workplaces outside;
        live-and-work: its homes × its workplaces), the pairs cell by cell; None for another
        query."""
        od = self.units.od
        if query.analysis == "pairs" and len(query.parts) == od.domain_size:
            # the planner's family of every OD pair (:func:`planning.family_query`)
            return self.sums_of(np.repeat(np.arange(od.n_origins), od.n_destinations),
                                      np.tile(np.arange(od.n_destinations), od.n_origins),
                                      "pairs", od.domain_size)
        if query.analysis not in answers.COMPARED:
            return None
        if query.selection == "every zone":
            ids = np.union1d(od.origins.ids, od.destinations.ids)
            if len(query.parts) == ids.size and not too_many_cells(self.values):
                return self._zones(query.analysis, ids)
        if od.origins.parent is None or query.parts != ("",):
            return None
        parents, o_label, d_label = sums.parent_labels(od)
        if query.selection not in parents or too_many_areas(od):
            return None
        at = parents.index(query.selection)
        home, work = o_label == at, d_label == at
        rows, cols = {"inflow": (~home, work), "outflow": (home, ~work),
                      "live_and_work": (home, work)}[query.analysis]
        return self.sums_of(np.flatnonzero(rows), np.flatnonzero(cols), "all", 1)

    def _zones(self, kind: str, ids: np.ndarray) -> Entries:
        """Every zone's inflow (its workplace's units less the cell from its own home),
        outflow (its home's row less that cell) or live-and-work (that cell)."""
        od, units = self.units.od, self.units
        index = pd.Index(ids)
        origin_of, workplace_of = np.full(ids.size, -1), np.full(ids.size, -1)
        origin_of[index.get_indexer(od.origins.ids)] = np.arange(od.n_origins)
        workplace_of[index.get_indexer(od.destinations.ids)] = np.arange(od.n_destinations)
        both = np.flatnonzero((origin_of >= 0) & (workplace_of >= 0))
        o, d = origin_of[both], workplace_of[both]
        cell = self.sums_of(o, d, "pairs", both.size)   # (o_z, d_z), part = its place
        if kind == "live_and_work":
            return Entries(both, cell.unit, cell.inside, cell.s)
        if kind == "outflow":
            row = self._rows(np.arange(od.n_origins), np.arange(od.n_destinations)) \
                if not units.parent else self._dense(np.arange(od.n_origins),
                                                     np.arange(od.n_destinations), "row")
            zone_of_origin = index.get_indexer(od.origins.ids)
            shared = row.part < 0
            no_home = np.flatnonzero(origin_of < 0)   # such a zone has no row: no shared part
            return Entries(
                np.concatenate([np.where(shared, -1, zone_of_origin[np.maximum(row.part, 0)]),
                                both, np.repeat(no_home, shared.sum())]),
                *(np.concatenate([getattr(row, name), getattr(cell, name),
                                  np.tile(getattr(row, name)[shared], no_home.size)])
                  for name in ("unit", "inside", "s")),
                np.concatenate([row.weight, -np.ones(both.size),
                                np.tile(-row.weight[shared], no_home.size)]))
        # inflow: each unit of the zone's workplace, less the zone's own home's cell in it
        m = units.totals(self.values)
        zone = np.flatnonzero(workplace_of >= 0)
        column = workplace_of[zone]
        home_unit = np.full(ids.size, -1)
        home_unit[both] = cell.unit
        value = np.zeros(ids.size)
        value[both] = cell.s
        groups = [units.unit_in[column]] + ([units.unit_out[column]] if units.parent else [])
        parts, unit = np.concatenate([zone] * len(groups)), np.concatenate(groups)
        keep = unit >= 0
        parts, unit = parts[keep], unit[keep]
        mine = home_unit[parts] == unit
        return Entries(parts, unit, units.k[unit] - mine, m[unit] - np.where(mine, value[parts],
                                                                             0.0))

    def _dense(self, rows, cols, by) -> Entries:
        """The block's cells grouped by (part, unit) with one bincount: a unit is a block
        column (and, candidates 'parent', whether the home is in the workplace's area)."""
        od, units = self.units.od, self.units
        grid = np.asarray(self.values).reshape(od.n_origins, od.n_destinations)
        block = grid[np.ix_(rows, cols)]
        split = 2 if units.parent else 1
        width = cols.size * split
        local = np.arange(cols.size)[None, :] * split
        if units.parent:
            local = local + (units.o_code[rows][:, None] != units.d_code[cols][None, :])
        if isinstance(by, str):   # "col" and "all": the part is the column's, or the only one
            part = np.arange(rows.size)[:, None] if by == "row" else None
        else:
            part = np.asarray(by)
        key = np.broadcast_to(local if part is None else part * width + local, block.shape)
        values = block
        if part is not None and not isinstance(by, str):
            keep = part >= 0
            key, values = key[keep], block[keep]
        key, values = key.ravel(), np.ravel(values)
        space = width * (1 if part is None else (rows.size if isinstance(by, str) else
                                                 int(part.max(initial=-1)) + 1))
        inside = np.bincount(key, minlength=space)
        total = np.bincount(key, weights=values, minlength=space)
        used = np.flatnonzero(inside)
        found, at = np.divmod(used, width)
        column = cols[at // split]
        unit = (np.where(at % split == 0, units.unit_in[column], units.unit_out[column])
                if units.parent else column)
        if part is None:
            found = at // split if by == "col" else np.zeros(used.size, np.int64)
        return Entries(found, unit, inside[used], total[used])

    def _sparse(self, rows, cols, by, size) -> Entries:
        """Named cells exactly, every other cell at its workplace's unnamed-cell mean
        (:func:`dpcore.analyses.sums.empty_mean`)."""
        mean = self._means()
        r, c, value = self._named(rows, cols)
        width = cols.size
        if isinstance(by, str):   # "all" or "col": one entry per workplace
            key_part = np.zeros(width, np.int64) if by == "all" else np.arange(width)
            key_col, inside, key = np.arange(width), np.full(width, float(rows.size)), c
        else:
            labels = np.asarray(by)
            keep = labels >= 0
            cell_key = labels * width + np.arange(width)[None, :]
            inside = np.bincount(cell_key[keep], minlength=size * width).astype(float)
            key_part, key_col = np.divmod(np.arange(size * width), width)
            label = labels[r, c]
            r, c, value, key = (x[label >= 0] for x in (r, c, value, label * width + c))
        count = np.bincount(key, minlength=key_col.size)
        found = np.bincount(key, weights=value, minlength=key_col.size)
        total = found + (inside - count) * mean[cols[key_col]]
        used = inside > 0
        return Entries(key_part[used], cols[key_col[used]], inside[used], total[used])


def entries(units: Units, queries, values) -> list[Entries | None]:
    """Every query's :class:`Entries` on ``values``: a block's sums in one pass, the
    comparison of every area by its areas' blocks; None for a query that is neither."""
    traced, found = PerUnit(units, values), []
    for query in queries:
        try:
            result = query.compute(traced)[0]
        except NotSums:
            result = None
        found.append(result.entries() if isinstance(result, Block)
                     else traced.comparison(query))
    return found


def too_many_cells(values) -> str | None:
    """Why the comparison of every zone is not evaluated on ``values``, or None."""
    cells = (values.flat.size + values.top_outside_flat()[0].size
             if isinstance(values, SparseVector) else int(np.count_nonzero(values)))
    return ZONES_NOTE.format(cells=cells) if cells > MOST_ZONE_ENTRIES else None


def too_many_areas(od) -> str | None:
    """Why the comparison of every parent area is not evaluated on ``od``, or None."""
    if od.origins.parent is None:
        return None
    areas = len(sums.parent_labels(od)[0])
    if areas * od.n_destinations <= MOST_AREA_ENTRIES:
        return None
    return PARENTS_NOTE.format(areas=areas, workplaces=od.n_destinations)


def too_large(od, mechanism) -> str | None:
    """Why the planner does not evaluate the law for every OD pair of ``od`` (that family names
    every cell per unit), or None; its other families are planned at any size."""
    units = Units(od, mechanism)
    if units.n * od.domain_size > MOST_UNIT_CELLS:
        return TOO_LARGE.format(units=units.n, cells=od.domain_size)
    return None


def priors(mechanism, units: Units, m: np.ndarray) -> np.ndarray:
    """Each unit's prior α (the mechanism's, from its size m and candidates k)."""
    alpha = np.zeros(m.size)
    for size in np.unique(units.k):   # one prior per number of candidates (its own test)
        at = units.k == size
        alpha[at] = mechanism.prior_for(np.rint(m[at]).astype(np.int64), int(size))
    return alpha


def _variance(scale, value, inside, alpha, total, m):
    """The Beta-binomial variance of the estimate (A/m)²·Var s_S at n_S = value, and Q."""
    share = (np.clip(value, 0.0, m) + inside * alpha) / total
    return scale * share * (1 - share), share


def bounds(mechanism, units: Units, m, alpha, found: Entries) -> tuple[np.ndarray, ...]:
    """(low, high, estimate) per answer from the per-unit sums of a release (module
    docstring)."""
    noise, small = noise_variance(mechanism), small_size(mechanism)
    at = found.unit
    m, k, alpha, inside, s = m[at], units.k[at], alpha[at], found.inside, found.s
    total = m + k * alpha
    big = m >= small
    partial = inside < k
    safe_m = np.where(m > 0, m, 1.0)
    # a whole unit (Q = 1) is its total, exactly: not left to the rounding of s·A/m − kα
    guess = np.where(partial, s * total / safe_m - inside * alpha, s)
    scale = total ** 2 * (total + m) / (safe_m * (total + 1))
    plug, share = _variance(scale, guess, inside, alpha, total, m)
    spread = Z_NORMAL * np.sqrt(plug)
    var = np.maximum(plug, np.maximum(_variance(scale, guess - spread, inside, alpha, total, m)[0],
                                      _variance(scale, guess + spread, inside, alpha, total, m)[0]))
    share = np.where(partial, share, 1.0)
    var = np.where(partial, var, 0.0) + noise * share ** 2
    normal = big & (m > 0)
    bounded = ~big & (m > 0)   # exact totals: a whole unit is exact, a part in [0, m]
    shown = np.where(partial, np.clip(guess, 0.0, m), s)
    estimate = found.total(np.where(normal, guess, 0.0) + np.where(bounded, shown, 0.0))
    centre = found.total(np.where(normal, guess, 0.0) + np.where(bounded & ~partial, s, 0.0))
    wide = found.total(np.where(bounded & partial, m, 0.0))
    sd = np.sqrt(np.maximum(found.total(np.where(normal, var, 0.0)), 0.0))
    # + floating rounding, so that an exact answer (a workplace's jobs) covers itself
    half = Z_NORMAL * sd + ROUNDING * (np.abs(estimate) + 1.0)
    low, high = np.maximum(centre - half, 0.0), centre + half + wide
    if noise:   # small workplaces with noisy totals: beyond the first-order correction
        refused = found.total((~big & (found.weight > 0)).astype(float)) > 0
        low, high, estimate = (np.where(refused, np.nan, x) for x in (low, high, estimate))
    return low, high, estimate


class Synthesized:
    """The interval rule of one OnTheMap release (module docstring): ``method``, ``covered``,
    and ``all_bounds`` → per query (low, high, estimate), for
    :func:`dpcore.analyses.answers.evaluate`."""

    def __init__(self, od, mechanism, released, postprocess: str = "base"):
        self.od, self.mechanism, self.released = od, mechanism, released
        self.units = Units(od, mechanism)
        if postprocess != "base":
            self.method = NOT_BASE.format(post=postprocess)
        elif isinstance(released, SparseVector) and self.units.parent:
            self.method = "no interval: " + PARENT_SPARSE
        else:
            self.method = METHOD + (
                NOISY_NOTE.format(small=small_size(mechanism))
                if mechanism.total == otm.NOISY else "") + (
                PARENT_NOTE if mechanism.candidates == otm.PARENT else "") + (
                SPARSE_NOTE if isinstance(released, SparseVector) else "") + (
                too_many_areas(od) or "") + (
                too_many_cells(released) or "")
        self.covered = self.method.startswith(METHOD)

    def all_bounds(self, queries, answers, cells) -> list[tuple]:
        """(low, high, estimate) of every query's answers."""
        sizes = [len(q.parts) for q in queries]
        if not self.covered:
            return [(np.full(size, np.nan),) * 3 for size in sizes]
        found = entries(self.units, queries, self.released)
        empty = Entries([], [], [], [])
        joined = Entries.join([e if e is not None else empty for e in found], sizes)
        m = self.units.totals(self.released)
        low, high, estimate = bounds(self.mechanism, self.units, m,
                                     priors(self.mechanism, self.units, m), joined)
        split = np.cumsum(sizes)[:-1]
        result = zip(*(np.split(x, split) for x in (low, high, estimate)))
        return [r if e is not None else (np.full(size, np.nan),) * 3
                for e, size, r in zip(found, sizes, result)]


def rule(od, mechanism, released, postprocess: str = "base") -> Synthesized:
    """The interval rule of an OnTheMap release ``released`` of ``od`` by ``mechanism`` (bound
    to the table: :func:`dpcore.release.check`)."""
    return Synthesized(od, mechanism, released, postprocess)


# ------------------------------------------------------------------- the law at the true table
def bound(od, params: dict, epsilon: float):
    """The mechanism with ``params`` at ε, bound to ``od`` as the release pipeline binds it."""
    return release.check(release.ReleaseSpec(KEY, float(epsilon), tuple(dict(params).items())),
                         od)


class Theory:
    """OnTheMap's law at the true table for a set of answers, at any ε: the 95 % half-width of
    the debiased interval (the planner's targets) and the expected RMSE of the raw synthetic
    answer (Tradeoffs). The per-unit sums are made once; each ε only recomputes α. With noisy
    totals m is taken at its mean n (α and A at n), the noise entering through Var(Z)·Q²."""

    def __init__(self, od, truth, params: dict, queries):
        self.od, self.params = od, dict(params)
        self.bind = lambda epsilon: bound(od, self.params, epsilon)
        mechanism = self.bind(1.0)
        self.units = Units(od, mechanism)
        found = entries(self.units, queries, truth)
        missing = [q.analysis for q, e in zip(queries, found) if e is None]
        #: None, or why the law is not evaluated (a query that is not sums of cells)
        self.method = NOT_SUMS.format(analysis=missing[0]) if missing else None
        if self.method is None:
            self.found = Entries.join(found, [len(q.parts) for q in queries])
            self.m = self.units.totals(truth)
            self.answers = self.found.total(self.found.s)

    def law(self, epsilon: float) -> tuple:
        """At ε: the bound mechanism, and per entry m, k, A, Q and the estimate's variance
        (A/m)²·Var s_S at the true n_S."""
        mechanism = self.bind(epsilon)
        at = self.found.unit
        alpha = priors(mechanism, self.units, self.m)[at]
        m, k = self.m[at], self.units.k[at]
        total = m + k * alpha
        share = (self.found.s + self.found.inside * alpha) / total
        safe_m = np.where(m > 0, m, 1.0)
        var = total ** 2 * (total + m) / (safe_m * (total + 1)) * share * (1 - share)
        return mechanism, m, k, total, share, var

    def _spread(self, epsilon: float) -> tuple[np.ndarray, ...]:
        """Per answer: the sd of its normal part, the bound m its small workplaces add, and
        whether it has no interval (noisy totals on a small workplace)."""
        mechanism, m, k, _, share, var = self.law(epsilon)
        noise, small = noise_variance(mechanism), small_size(mechanism)
        found = self.found
        big = (m >= small) & (m > 0)
        sd = np.sqrt(np.maximum(found.total(np.where(big, var + noise * share ** 2, 0.0)), 0.0))
        wide = found.total(np.where(~big & (found.inside < k), m, 0.0))
        refused = (found.total((~big & (found.weight > 0)).astype(float)) > 0 if noise
                   else np.zeros(sd.size, dtype=bool))
        return sd, wide, refused

    def half_widths(self, epsilon: float) -> np.ndarray:
        """The debiased interval's half-width per answer at its true value (inf: no interval)."""
        sd, wide, refused = self._spread(epsilon)
        return np.where(refused, np.inf, Z_NORMAL * sd + wide)

    def estimate_sd(self, epsilon: float) -> np.ndarray:
        """The sd of the debiased estimate per answer (its expected RMSE: it is unbiased), i.e.
        the half-width / 1.96; NaN where a small workplace's part is bounded instead (the
        estimate clipped to [0, m] has no closed-form sd) or there is no interval."""
        sd, wide, refused = self._spread(epsilon)
        return np.where(refused | (wide > 0), np.nan, sd)

    def raw_rmse(self, epsilon: float) -> np.ndarray:
        """√(bias² + variance) of the raw synthetic answer Σ s_S per answer: E s_S = mQ,
        Var s_S = mQ(1 − Q)(A + m)/(A + 1) per unit (with noisy totals + Var(Z)·Q²)."""
        mechanism, m, _, total, share, _ = self.law(epsilon)
        bias = self.found.total(m * share - self.found.s)
        var = self.found.total(m * share * (1 - share) * (total + m) / (total + 1)
                               + noise_variance(mechanism) * share ** 2)
        return np.sqrt(bias ** 2 + np.maximum(var, 0.0))
