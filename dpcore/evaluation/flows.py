"""Which commuting flows a flow map draws, and how each released flow compares with the truth.

A flow map cannot draw every cell of an origin–destination matrix (the ED level has 9.8 million)
and must not silently leave any kind of flow out. :func:`select` therefore splits the flows that
pass the user's filter (top k or a minimum count, optionally one zone's flows) into three groups:

* **lines** — between two different zones that both have a position: drawn as lines;
* **within** — inside one zone (origin = destination) that has a position: drawn as circles;
* **unplaced** — to or from a zone without a position ("Work/school from home", "Overseas"):
  listed beside the map.

Each group keeps at most ``cap`` flows (the largest), and says how many matched before the cap.

:func:`classify` names what the release did to each flow: close to the truth, over- or
under-estimated (by up to or more than :data:`FAR`), *invented* (true 0, yet present in the
release) or *lost* (true > 0, absent from the release). A flow is *present* in a release when it
shows as at least one commuter (released ≥ :data:`~dpcore.scoring.metrics.PRESENT_AT`), the definition the
metrics use. Width classes (:func:`width_breaks`, :func:`width_class`) let a map draw thousands of
flows as a handful of grouped lines.

Pure NumPy/pandas over dense count vectors in flat-index order (``ODMatrix.to_dense()``), or
over :class:`~dpcore.mechanisms.sparse_vector.SparseVector` s for a domain too large for them: then
:func:`select` looks only at the cells whose values are known (the non-empty commutes and the
released top) and above the value from which every cell is known
(:attr:`~dpcore.mechanisms.sparse_vector.SparseVector.known_from`), and says so in
:attr:`FlowSelection.note`; :func:`zones` counts true totals exactly and released totals over the
known cells only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.od import ARROW, ODMatrix
from dpcore.mechanisms.sparse_vector import SparseVector
from dpcore.scoring.metrics import PRESENT_AT
from dpcore.scoring.ranks import values_at

TRUE, RELEASED, DIFFERENCE = "true", "released", "difference"
#: What a map can show; the difference view sizes and ranks flows by max(true, released).
VIEWS = {TRUE: "True flows", RELEASED: "Released flows",
         DIFFERENCE: "Difference: released against true"}
FROM, TO, EITHER = "from", "to", "either"
DIRECTIONS = {EITHER: "From or to the zone", FROM: "From the zone (its residents)",
              TO: "To the zone (its workers and students)"}

#: Lines drawn by default: enough for every county pair worth seeing, few enough to stay fast.
DEFAULT_LINE_CAP = 1_000
#: Shortest line drawn by default, as a share of the map's width: a shorter line hides under the
#: points of its two zones (a national map's largest flows join neighbouring tracts). 3 %, not
#: 5 %: at 5 % Ireland's rule was 10 km and hid its largest flow between two counties, South
#: Dublin → Dublin City (9.5 km between their points).
SHORTEST_SHARE = 0.03
KM_PER_DEGREE = 111.2
#: Relative errors up to CLOSE count as close to the truth; beyond FAR as far off.
CLOSE, FAR = 0.10, 0.50

CLOSE_TO_TRUE, OVER, OVER_FAR, UNDER, UNDER_FAR, INVENTED, LOST = (
    "close", "over", "over_far", "under", "under_far", "invented", "lost")


def _percent(share: float) -> str:
    return f"{share * 100:.3g}%"


def status_labels(close: float = CLOSE, far: float = FAR, short: bool = False) -> dict[str, str]:
    """Status key → what it means, in legend order, for the class bounds ``close`` and ``far``;
    ``short``: a few words each, for a table column (the legend says them in full)."""
    if short:
        return {OVER_FAR: f"over by > {_percent(far)}",
                OVER: f"over by {_percent(close)}–{_percent(far)}",
                CLOSE_TO_TRUE: f"within {_percent(close)}",
                UNDER: f"under by {_percent(close)}–{_percent(far)}",
                UNDER_FAR: f"under by > {_percent(far)}",
                INVENTED: "invented (true 0)", LOST: "lost (shows none)"}
    return {
        OVER_FAR: f"Over-estimated by more than {_percent(far)}",
        OVER: f"Over-estimated by {_percent(close)}–{_percent(far)}",
        CLOSE_TO_TRUE: f"Within {_percent(close)} of the truth",
        UNDER: f"Under-estimated by {_percent(close)}–{_percent(far)}",
        UNDER_FAR: f"Under-estimated by more than {_percent(far)}",
        INVENTED: "Invented: nobody commutes here, the release shows commuters",
        LOST: "Lost: people commute here, the release shows none",
    }


#: The table's "Shown as" values, what each means (the column's help).
SHOWN_AS = {"line": "a line between two zones", "ring": "a ring around its zone (within one zone)",
            "listed, same zone": "within one zone: listed beside the map (rings off)",
            "listed, no position": "listed beside the map: a zone has no position (e.g. home)"}

#: Status key → what it means, in legend order (the default bounds).
STATUSES = status_labels()

LINES, WITHIN, UNPLACED = "lines", "within", "unplaced"
GROUPS = (LINES, WITHIN, UNPLACED)
#: Columns of every frame :func:`select` returns (see :func:`flow_frame`).
FLOW_COLUMNS = ["cell", "origin", "destination", "origin_label", "destination_label", "true",
                "released", "difference", "status", "shown", "origin_lat", "origin_lon",
                "destination_lat", "destination_lon"]


# ------------------------------------------------------------------------------ classification
def classify(true_counts, released, close: float = CLOSE, far: float = FAR) -> np.ndarray:
    """Status key (:data:`STATUSES`) of each flow; ``""`` where neither true nor released.

    Relative error is (released − true) / true; ``close`` and ``far`` bound its classes.
    """
    t = np.asarray(true_counts, dtype=float)
    r = np.asarray(released, dtype=float)
    if t.shape != r.shape:
        raise ValueError(f"true counts and released values differ in shape: {t.shape} vs {r.shape}")
    present = r >= PRESENT_AT
    observed = t > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(observed, (r - t) / np.where(observed, t, 1.0), 0.0)
    out = np.full(t.shape, "", dtype=object)
    both = observed & present
    out[both & (np.abs(relative) <= close)] = CLOSE_TO_TRUE
    out[both & (relative > close) & (relative <= far)] = OVER
    out[both & (relative > far)] = OVER_FAR
    out[both & (relative < -close) & (relative >= -far)] = UNDER
    out[both & (relative < -far)] = UNDER_FAR
    out[~observed & present] = INVENTED
    out[observed & ~present] = LOST
    return out


def shown_values(view: str, true_counts, released=None) -> np.ndarray:
    """The value a view ranks, filters and sizes flows by: true, released or max of the two."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}")
    t = np.asarray(true_counts)
    if view == TRUE:
        return t
    if released is None:
        raise ValueError(f"the {VIEWS[view].lower()} view needs released values")
    r = np.asarray(released)
    return r if view == RELEASED else np.maximum(t, r)


# ------------------------------------------------------------------------------------- roll-up
def roll_up(od: ODMatrix, true_counts, released=None):
    """The matrix, true counts and released values summed to the parent level (ED → county).

    Summing released values is post-processing of the release: privacy is unchanged, and the
    noise of the many small cells adds up in each parent flow. Returns ``(parent matrix, true,
    released)`` with dense vectors over the parent domain (released None when not given).
    """
    parent = od.aggregate()
    o_map = parent.origins.index_of(od.origins.parent)
    d_map = parent.destinations.index_of(od.destinations.parent)
    parent_flat = (o_map[:, None] * parent.n_destinations + d_map[None, :]).reshape(-1)

    def summed(values):
        values = np.asarray(values, dtype=float).reshape(-1)
        if values.size != od.domain_size:
            raise ValueError(f"expected {od.domain_size:,} values over the domain of {od.name}, "
                             f"got {values.size:,}")
        return np.bincount(parent_flat, weights=values, minlength=parent.domain_size)

    true_parent = np.rint(summed(true_counts)).astype(np.int64)
    return parent, true_parent, None if released is None else summed(released)


# ----------------------------------------------------------------------------------- the zones
def zones(od: ODMatrix, counts, keep_empty: bool = True) -> pd.DataFrame:
    """Every zone once (origins, then destination-only zones), with its totals under ``counts``.

    Columns: ``id``, ``label``, ``lat``, ``lon``, ``residents`` (commuters living there: its
    origin total), ``jobs`` (commuters arriving: its destination total), ``placed`` (has a
    position). Negative released totals (raw noise) are kept: callers size points by clipped values.
    ``keep_empty=False`` leaves out zones with neither residents nor jobs (e.g. the counties
    outside a rolled-up subset), so that a map fits the zones that matter.
    """
    if isinstance(counts, SparseVector):
        cells, values = counts.known()
        o, d = np.divmod(cells, od.n_destinations)
        out_totals = np.bincount(o, weights=values, minlength=od.n_origins)
        in_totals = np.bincount(d, weights=values, minlength=od.n_destinations)
    else:
        grid = np.asarray(counts, dtype=float).reshape(od.n_origins, od.n_destinations)
        out_totals = grid.sum(axis=1)
        in_totals = grid.sum(axis=0)
    origin_ids = pd.Index(od.origins.ids)
    extra = ~pd.Index(od.destinations.ids).isin(origin_ids)
    destination_rows = pd.Index(od.destinations.ids).get_indexer(origin_ids)
    frame = pd.DataFrame({
        "id": np.concatenate([od.origins.ids, od.destinations.ids[extra]]),
        "label": np.concatenate([od.origins.labels, od.destinations.labels[extra]]),
        "lat": np.concatenate([od.origins.lat, od.destinations.lat[extra]]),
        "lon": np.concatenate([od.origins.lon, od.destinations.lon[extra]]),
        "residents": np.concatenate([out_totals, np.zeros(int(extra.sum()))]),
        "jobs": np.concatenate([np.where(destination_rows >= 0,
                                         in_totals[np.maximum(destination_rows, 0)], 0.0),
                                in_totals[extra]]),
    })
    frame["placed"] = np.isfinite(frame["lat"]) & np.isfinite(frame["lon"])
    if not keep_empty:
        frame = frame[(frame["residents"] != 0) | (frame["jobs"] != 0)].reset_index(drop=True)
    return frame


@dataclass(frozen=True)
class ZoneTotals:
    """One zone's commuters: leaving it, arriving in it and staying in it, true and released."""

    zone: str
    label: str
    out_true: float
    out_released: float
    in_true: float
    in_released: float
    within_true: float
    within_released: float

    def to_frame(self) -> pd.DataFrame:
        """Three rows (from, to, within) × true and released, for a small table."""
        return pd.DataFrame({
            "commuters": ["living here (from the zone)", "working or studying here (to the zone)",
                          "both (within the zone)"],
            "true": [self.out_true, self.in_true, self.within_true],
            "released": [self.out_released, self.in_released, self.within_released],
        })


def _position(ids: np.ndarray, zone: str) -> int | None:
    found = np.flatnonzero(ids == str(zone))
    return int(found[0]) if found.size else None


def _zone_positions(od: ODMatrix, zone: str) -> tuple[int | None, int | None]:
    """Row (as origin) and column (as destination) of a zone id; None where it is not one."""
    origin, destination = _position(od.origins.ids, zone), _position(od.destinations.ids, zone)
    if origin is None and destination is None:
        raise KeyError(f"unknown zone id {zone!r} in {od.name}")
    return origin, destination


def zone_totals(od: ODMatrix, zone: str, true_counts, released=None) -> ZoneTotals:
    """Totals in, out and within one zone (by id); released totals NaN when not given, and for
    a sparse release (a zone's row holds thousands of empty cells whose values were not drawn)."""
    o, d = _zone_positions(od, zone)
    label = od.origins.labels[o] if o is not None else od.destinations.labels[d]

    def sums(values):
        if values is None or (isinstance(values, SparseVector) and values.top_flat is not None):
            return math.nan, math.nan, math.nan
        if isinstance(values, SparseVector):   # true counts: exact from the non-empty cells
            origin, destination = np.divmod(values.flat, od.n_destinations)
            out = float(values.values[origin == o].sum())
            into = float(values.values[destination == d].sum())
            within = float(values.values[(origin == o) & (destination == d)].sum())
            return out, into, within
        grid = np.asarray(values, dtype=float).reshape(od.n_origins, od.n_destinations)
        out = float(grid[o].sum()) if o is not None else 0.0
        into = float(grid[:, d].sum()) if d is not None else 0.0
        within = float(grid[o, d]) if o is not None and d is not None else 0.0
        return out, into, within

    (out_t, in_t, within_t), (out_r, in_r, within_r) = sums(true_counts), sums(released)
    return ZoneTotals(str(zone), str(label), out_t, out_r, in_t, in_r, within_t, within_r)


# ------------------------------------------------------------------------------------ selection
@dataclass(frozen=True)
class FlowSelection:
    """The flows a map shows, in three groups (see the module docstring), largest first.

    ``matched`` counts, per group, the flows that passed the filter before the cap was applied;
    ``note`` says what a sparse release's selection could not look at.
    """

    view: str
    lines: pd.DataFrame
    within: pd.DataFrame
    unplaced: pd.DataFrame
    matched: dict
    cap: int
    note: str | None = None
    #: Lines shorter than this many km were left out (their count: ``too_short``).
    min_km: float = 0.0
    too_short: int = 0

    def truncated(self, group: str = LINES) -> int:
        """How many matching flows of ``group`` the cap left out."""
        return self.matched[group] - len(getattr(self, group))

    def listing(self, group: str) -> pd.DataFrame:
        """One group as a compact table for the lists beside a map: ``commute`` ("Origin →
        Destination", or the zone alone for flows within one zone), ``true``, ``released``."""
        frame = getattr(self, group)
        commute = frame["origin_label"].astype(str)
        if group != WITHIN:
            commute = commute + ARROW + frame["destination_label"].astype(str)
        return pd.DataFrame({"commute": commute, "true": frame["true"],
                             "released": frame["released"]})

    def table(self, rings: bool = True) -> pd.DataFrame:
        """Every flow shown, in any of the three forms, as a readable table (for download).

        Columns: origin and destination ids and names, true, released, difference, what the
        release did (the status in words) and how the map shows the flow (:data:`SHOWN_AS`:
        a few words, so that the table fits beside the map at 1,280 px). ``rings``: whether
        the map draws the within-zone flows (a layer of their own, off by default on the page:
        where zones are many, the largest flows are nearly all within one zone and their rings
        cover the lines between zones); if not, they are listed beside it.
        """
        forms = {LINES: "line", WITHIN: "ring" if rings else "listed, same zone",
                 UNPLACED: "listed, no position"}
        parts = [getattr(self, group).assign(shown_as=form) for group, form in forms.items()]
        frame = pd.concat(parts, ignore_index=True)
        return pd.DataFrame({
            "origin_id": frame["origin"], "origin": frame["origin_label"],
            "destination_id": frame["destination"], "destination": frame["destination_label"],
            "true": frame["true"], "released": frame["released"],
            "difference": frame["difference"],
            "release_effect": frame["status"].map(lambda key: STATUSES.get(key, "")),
            "shown_as": frame["shown_as"],
        })


def flow_frame(od: ODMatrix, cells, true_counts, released=None, shown=None) -> pd.DataFrame:
    """One row per flat cell index: everything a map and its tables need (:data:`FLOW_COLUMNS`)."""
    cells = np.asarray(cells, dtype=np.int64)
    o, d = np.divmod(cells, od.n_destinations)
    t = values_at(true_counts, cells).astype(float)
    r = (np.full(cells.size, np.nan) if released is None
         else values_at(released, cells).astype(float))
    return pd.DataFrame({
        "cell": cells,
        "origin": od.origins.ids[o], "destination": od.destinations.ids[d],
        "origin_label": od.origins.labels[o], "destination_label": od.destinations.labels[d],
        "true": t, "released": r, "difference": r - t,
        "status": classify(t, r) if released is not None else np.full(cells.size, "", object),
        "shown": t if shown is None else values_at(shown, cells).astype(float),
        "origin_lat": od.origins.lat[o], "origin_lon": od.origins.lon[o],
        "destination_lat": od.destinations.lat[d], "destination_lon": od.destinations.lon[d],
    }, columns=FLOW_COLUMNS)


def _group_codes(od: ODMatrix, cells: np.ndarray) -> np.ndarray:
    """Group of each cell as an index into :data:`GROUPS`: within one placed zone, a line
    between two placed zones, else unplaced."""
    o, d = np.divmod(cells, od.n_destinations)
    placed = od.origins.has_coordinates[o] & od.destinations.has_coordinates[d]
    own_column = pd.Index(od.destinations.ids).get_indexer(od.origins.ids)
    codes = np.where(placed, GROUPS.index(LINES), GROUPS.index(UNPLACED)).astype(np.int8)
    codes[placed & (own_column[o] == d)] = GROUPS.index(WITHIN)
    return codes


def _sparse_candidates(true_counts: SparseVector, released: SparseVector | None, view: str
                       ) -> tuple[np.ndarray, np.ndarray, float]:
    """The cells whose values the view knows (flat order), the view's values there, and the
    value from which it knows every cell."""
    if released is None or view == TRUE:
        return true_counts.flat, true_counts.values, true_counts.known_from
    cells, r = released.known()   # the data's non-zero cells and the released top
    return (cells, shown_values(view, true_counts.at(cells), r),
            max(true_counts.known_from, released.known_from))


def _lengths_km(od: ODMatrix, cells: np.ndarray) -> np.ndarray:
    """Straight-line length of each flow in km (equirectangular: fine at a map's scale)."""
    o, d = np.divmod(cells, od.n_destinations)
    lat1, lat2 = od.origins.lat[o], od.destinations.lat[d]
    north = lat2 - lat1
    east = (od.destinations.lon[d] - od.origins.lon[o]) * np.cos(np.radians((lat1 + lat2) / 2))
    return KM_PER_DEGREE * np.hypot(north, east)


def map_width_km(od: ODMatrix) -> float:
    """The larger side, in km, of the box around every placed zone (0 if fewer than two)."""
    placed = od.origins.has_coordinates
    if placed.sum() < 2:
        return 0.0
    lat, lon = od.origins.lat[placed], od.origins.lon[placed]
    middle = math.radians((lat.min() + lat.max()) / 2)
    return KM_PER_DEGREE * max(lat.max() - lat.min(), (lon.max() - lon.min()) * math.cos(middle))


def default_min_km(od: ODMatrix) -> float:
    """The default shortest line: :data:`SHORTEST_SHARE` of the map's width, rounded down to
    1, 2 or 5 × 10^k km (0 below 1 km: nothing left out on a town's map)."""
    length = SHORTEST_SHARE * map_width_km(od)
    if length < 1:
        return 0.0
    exponent = 10.0 ** math.floor(math.log10(length))
    return max(step for step in (1, 2, 5) if step * exponent <= length) * exponent


def _largest(cells: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The n cells with the largest values, largest first, ties broken by flat index."""
    if cells.size > n:
        kth = np.partition(values, values.size - n)[values.size - n]
        keep = values >= kth
        cells, values = cells[keep], values[keep]
    order = np.lexsort((cells, -values))[:n]
    return cells[order]


def select(od: ODMatrix, true_counts, released=None, *, view: str = TRUE,
           top_k: int | None = None, min_count: float | None = None, zone: str | None = None,
           direction: str = EITHER, cap: int = DEFAULT_LINE_CAP,
           min_km: float = 0.0) -> FlowSelection:
    """The flows a map of ``view`` shows, split into lines, within-zone and unplaced flows.

    Parameters
    ----------
    true_counts, released : array over the domain (flat-index order)
        Released values are post-processed estimates (may be fractional or negative).
    view : one of :data:`VIEWS`
        Flows are ranked and filtered by the view's value (:func:`shown_values`); a flow is
        shown only if that value is at least one commuter (≥ ``PRESENT_AT``).
    top_k : int ≥ 1, optional
        Keep the k largest flows of each group.
    min_count : float, optional
        Keep flows whose value is at least this many commuters.
    zone, direction : optional
        Only flows from (``FROM``), to (``TO``) or from or to (``EITHER``) the zone with this id.
    cap : int ≥ 1
        At most this many flows per group (the largest); :attr:`FlowSelection.matched` says
        how many matched.
    min_km : float ≥ 0
        Lines shorter than this are not drawn (counted in :attr:`FlowSelection.too_short`):
        ranked among the longer ones, they would hide under their zones' points.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; choose one of {', '.join(DIRECTIONS)}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1; got {top_k}")
    if cap < 1:
        raise ValueError(f"cap must be at least 1; got {cap}")
    threshold = max(PRESENT_AT, float(min_count) if min_count is not None else 0.0)
    note = None
    if isinstance(released, SparseVector) and not isinstance(true_counts, SparseVector):
        true_counts = SparseVector.counts(od)   # a sparse release of a domain that fits densely
    if isinstance(true_counts, SparseVector):
        t = true_counts
        known, shown, floor = _sparse_candidates(true_counts, released, view)
        if floor > threshold:
            note = (f"A sparse release names its values one by one only for the non-empty "
                    f"commutes and its largest released flows, so flows shown at less than "
                    f"{floor:,.1f} commuters are not listed.")
            threshold = floor
    else:
        t = np.asarray(true_counts).reshape(-1)
        if t.size != od.domain_size:
            raise ValueError(f"expected {od.domain_size:,} true counts over the domain of "
                             f"{od.name}, got {t.size:,}")
        if released is not None:
            released = np.asarray(released).reshape(-1)
            if released.size != od.domain_size:
                raise ValueError(f"expected {od.domain_size:,} released values over the domain "
                                 f"of {od.name}, got {released.size:,}")
        known, shown = None, shown_values(view, t, released)

    def value_of(cells):
        return shown[cells] if known is None else shown[np.searchsorted(known, cells)]

    if zone is None:
        cells = (np.flatnonzero(shown >= threshold) if known is None
                 else known[shown >= threshold])
    else:
        o, d = _zone_positions(od, zone)
        if known is None:
            row = (np.arange(od.n_destinations) + o * od.n_destinations
                   if o is not None and direction != TO else np.empty(0, np.int64))
            column = (np.arange(od.n_origins) * od.n_destinations + d
                      if d is not None and direction != FROM else np.empty(0, np.int64))
            cells = np.union1d(row, column)
        else:
            origin, destination = np.divmod(known, od.n_destinations)
            cells = known[((origin == o) & (direction != TO))
                          | ((destination == d) & (direction != FROM))]
        cells = cells[value_of(cells) >= threshold]

    if min_km < 0:
        raise ValueError(f"min_km must be at least 0; got {min_km}")
    codes = _group_codes(od, cells)
    groups = {name: codes == code for code, name in enumerate(GROUPS)}
    too_short = 0
    if min_km > 0:
        short = groups[LINES] & (_lengths_km(od, cells) < min_km)
        too_short = int(short.sum())
        groups[LINES] &= ~short

    frames, matched = {}, {}
    for name, mask in groups.items():
        group = cells[mask]
        matched[name] = int(min(group.size, top_k)) if top_k is not None else int(group.size)
        chosen = _largest(group, value_of(group), min(matched[name], cap))
        frames[name] = flow_frame(od, chosen, t, released, shown if known is None else None)
        if known is not None:
            frames[name]["shown"] = value_of(chosen).astype(float)
    return FlowSelection(view, frames[LINES], frames[WITHIN], frames[UNPLACED], matched, cap,
                         note, float(min_km), too_short)


# ---------------------------------------------------------------------------------- line widths
def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is ≥ value (and ≥ 1)."""
    if value <= 1:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5):
        if step * 10.0 ** exponent >= value * (1 - 1e-12):
            return step * 10.0 ** exponent
    return 10.0 ** (exponent + 1)


def _nice_below(value: float) -> float:
    """The next smaller of 1, 2, 5 × 10^k."""
    exponent = math.floor(math.log10(value) + 1e-12)
    mantissa = round(value / 10.0 ** exponent)
    return {1: 0.5, 2: 1.0, 5: 2.0}[mantissa] * 10.0 ** exponent


def width_breaks(largest: float, n_classes: int = 6) -> np.ndarray:
    """Upper bounds of width classes for values up to ``largest``, ascending.

    The bounds are consecutive round numbers (…, 1,000, 2,000, 5,000, 10,000) ending at the
    smallest one ≥ ``largest``, so that each is 2–2.5 times the one before and a class's line
    width can be proportional to its bound. Fewer classes when ``largest`` is small (never below 1).
    """
    if n_classes < 1:
        raise ValueError(f"n_classes must be at least 1; got {n_classes}")
    bounds = [_nice_ceiling(max(float(largest), 1.0))]
    while len(bounds) < n_classes and bounds[-1] > 1:
        bounds.append(_nice_below(bounds[-1]))
    return np.array(bounds[::-1])


def width_class(values, breaks) -> np.ndarray:
    """Index of the width class of each value: the first bound ≥ value (the last if above all)."""
    index = np.searchsorted(np.asarray(breaks, dtype=float), np.asarray(values, dtype=float),
                            side="left")
    return np.minimum(index, len(breaks) - 1)
