"""What the Explore and Tradeoffs pages compute about one release or a sweep, apart from metrics.

* :func:`view` — the level (as loaded, or rolled up to parent zones) and area subset of a matrix
  the user chose; :func:`view_areas` lists the areas one can choose;
* :func:`top_flows` — the true top-k commutes with each mechanism's released count and error
  (the bars of thesis figures 5.1, 5.5, 5.6, 5.12);
* :func:`released_ranks` / :func:`rank_table` — the rank each release gives the true top flows
  (thesis figures 5.4, 5.9, 5.11, 5.15 and tables 5.1–5.4);
* :func:`summary_sentence` — what happened, in one plain sentence;
* :func:`theoretical_rmse` — the RMSE a mechanism is expected to have, from its closed-form
  variance (and exact mean, where it is biased);
* :func:`pass_rates` — the share of repeated draws that pass each planner check.

Pure NumPy/pandas; the pages only draw what these return.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.mechanisms.base import EPSILON
from dpcore.metrics import PRESENT_AT, PlannerCheck, planner_checks
from dpcore.od import ODMatrix, ZoneSet


# ----------------------------------------------------------------------------- level and subset
def roll_up_possible(od: ODMatrix) -> bool:
    """Whether the matrix has a coarser level to roll up to (e.g. EDs within counties)."""
    return (od.has_parent_level and od.origins.parent_zones is not None
            and od.destinations.parent_zones is not None)


def _union(first: ZoneSet, second: ZoneSet) -> dict[str, str]:
    out = {str(i): str(label) for i, label in zip(first.ids, first.labels)}
    for zone_id, label in zip(second.ids, second.labels):
        out.setdefault(str(zone_id), str(label))
    return out


def view_areas(od: ODMatrix, rolled_up: bool = False) -> dict[str, str]:
    """Area id → label that :func:`view` can restrict to, in zone order.

    The parent zones (e.g. counties) when the viewed level has a parent level, else the zones of
    that level themselves (origins, then destination-only zones).
    """
    if roll_up_possible(od) and not rolled_up:
        return _union(od.origins.parent_zones, od.destinations.parent_zones)
    if rolled_up:
        if not roll_up_possible(od):
            raise ValueError(f"{od.name} has no parent level to roll up to.")
        return _union(od.origins.parent_zones, od.destinations.parent_zones)
    return _union(od.origins, od.destinations)


def view(od: ODMatrix, rolled_up: bool = False, areas=()) -> ODMatrix:
    """The matrix at the chosen level, restricted to commutes within the chosen areas.

    With a parent level, ``areas`` are parent ids (``subset_by_parent``: the thesis's Dublin City
    and Cavan + Leitrim ED subsets); otherwise they are zone ids, kept as origins and as
    destinations. Raises ValueError when nothing would be left to release.
    """
    matrix = od.aggregate() if rolled_up else od
    areas = tuple(map(str, areas))
    if areas:
        known = view_areas(od, rolled_up)
        unknown = [a for a in areas if a not in known]
        if unknown:
            raise ValueError(f"unknown area(s) {unknown[:3]} in {od.name}.")
        if matrix.has_parent_level:
            matrix = matrix.subset_by_parent(areas)
        else:
            wanted = set(areas)
            matrix = matrix.subset([z for z in matrix.origins.ids if z in wanted],
                                   [z for z in matrix.destinations.ids if z in wanted])
    if matrix.domain_size < 2 or matrix.n == 0:
        raise ValueError(f"The chosen areas leave {matrix.domain_size} possible commute(s) and "
                         f"{matrix.n} commuter(s): choose more areas (or none, for everything).")
    return matrix


def rng_for(seed: int, key: str) -> np.random.Generator:
    """The generator of mechanism ``key`` for draw ``seed``: its own stream, so a mechanism's
    release depends on the seed alone, not on which other mechanisms are run beside it."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(key.encode())]))


# --------------------------------------------------------------------------------------- ranks
def top_cells(values: np.ndarray, n: int) -> np.ndarray:
    """Flat indices of the n largest values, largest first, ties broken by index."""
    values = np.asarray(values)
    n = min(int(n), values.size)
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    kth = np.partition(values, values.size - n)[values.size - n]
    candidates = np.flatnonzero(values >= kth)
    return candidates[np.lexsort((candidates, -values[candidates]))[:n]]


def ordinal_ranks(values: np.ndarray, cells) -> np.ndarray:
    """Rank (1 = largest) of each cell among all ``values``, ties broken by flat index.

    Equivalent to the position in a stable descending sort, without sorting the domain: one
    histogram over edges at each queried value v and just above it (``nextafter``) counts, for
    every v, the values above it and those equal to it; equal values at a smaller index are then
    counted per tied value. So the rank of a top flow among 9.8 M released cells (thesis table
    5.3: "5031772") costs about one pass.
    """
    values = np.asarray(values)
    cells = np.asarray(cells, dtype=np.int64)
    if cells.size == 0:
        return np.empty(0, dtype=np.int64)
    queried = values[cells].astype(float)
    levels = np.unique(queried)  # ascending
    edges = np.empty(2 * levels.size + 2)
    edges[0], edges[-1] = -np.inf, np.inf
    edges[1:-1:2], edges[2:-1:2] = levels, np.nextafter(levels, np.inf)
    counts, _ = np.histogram(values, edges)  # bin 2i+1 holds the values equal to levels[i]
    above = np.append(np.cumsum(counts[::-1])[::-1], 0)[2::2]  # values > levels[i]
    slot = np.searchsorted(levels, queried)
    ranks = above[slot] + 1
    tied = counts[1::2] > 1
    if tied[0]:  # the lowest level: often the many released zeros
        where = slot == 0
        ranks[where] += np.searchsorted(np.flatnonzero(values == levels[0]), cells[where])
    tied[0] = False
    if tied.any():  # the others together: one hashed membership pass, then a small sort
        tied_levels = levels[tied]
        positions = np.flatnonzero(pd.Series(values).isin(tied_levels).to_numpy())
        group = np.searchsorted(tied_levels, values[positions])
        keys = np.sort(group.astype(np.int64) * values.size + positions)
        where = tied[slot]
        query_group = np.searchsorted(tied_levels, queried[where]).astype(np.int64) * values.size
        ranks[where] += (np.searchsorted(keys, query_group + cells[where])
                         - np.searchsorted(keys, query_group))
    return ranks.astype(np.int64)


def rank_pairs(true_counts, released, n: int | None = None) -> pd.DataFrame:
    """True rank against released rank for the top ``n`` true cells (all cells when None).

    Columns: ``cell`` (flat index), ``true_rank``, ``released_rank``, ``true``, ``released`` and
    ``released_zero`` (shown as less than one commuter, i.e. absent from the release) — the data
    of the thesis's ordering scatters (figures 5.4, 5.9, 5.11, 5.15).
    """
    t = np.asarray(true_counts)
    r = np.asarray(released, dtype=float)
    cells = top_cells(t, t.size if n is None else n)
    return pd.DataFrame({"cell": cells, "true_rank": np.arange(1, cells.size + 1),
                         "released_rank": ordinal_ranks(r, cells), "true": t[cells],
                         "released": r[cells], "released_zero": r[cells] < PRESENT_AT})


def rank_table(od: ODMatrix, pairs: dict[str, pd.DataFrame], k: int = 10,
               names: dict[str, str] | None = None) -> pd.DataFrame:
    """Thesis tables 5.1–5.4: the true top-k commutes and the rank each release gave them.

    ``pairs`` maps mechanism key → :func:`rank_pairs` (over at least the top k).
    """
    frames = list(pairs.values())
    if not frames:
        return pd.DataFrame(columns=["Commute", "True count", "True rank"])
    top = frames[0].head(k)
    table = pd.DataFrame({"Commute": od.cell_labels(top["cell"].to_numpy()),
                          "True count": top["true"].to_numpy(),
                          "True rank": top["true_rank"].to_numpy()})
    for key, frame in pairs.items():
        table[(names or {}).get(key, key)] = frame["released_rank"].to_numpy()[:len(top)]
    return table


def top_flows(od: ODMatrix, true_counts, released: dict[str, np.ndarray], k: int = 30
              ) -> pd.DataFrame:
    """The true top-k commutes with each release's count and error, one row per (cell, release).

    Only commutes someone makes are listed (fewer than k when fewer are non-empty). Columns:
    ``rank``, ``commute``, ``mechanism``, ``true``, ``released``, ``error`` (released −
    true, commuters): the data of the noisy-vs-true bars (thesis figures 5.1, 5.5, 5.6, 5.12).
    """
    t = np.asarray(true_counts)
    cells = top_cells(t, min(k, np.count_nonzero(t)))
    labels = od.cell_labels(cells)
    frames = [pd.DataFrame({"rank": np.arange(1, cells.size + 1), "commute": labels,
                            "mechanism": key, "true": t[cells],
                            "released": np.asarray(values, dtype=float)[cells]})
              for key, values in released.items()]
    if not frames:
        return pd.DataFrame(columns=["rank", "commute", "mechanism", "true", "released", "error"])
    out = pd.concat(frames, ignore_index=True)
    out["error"] = out["released"] - out["true"]
    return out


# ------------------------------------------------------------------------------ plain language
def _plural(count: float, one: str, many: str) -> str:
    count = int(round(count))
    return f"{count:,} {one if count == 1 else many}"


def summary_sentence(name: str, pairs: pd.DataFrame, values: dict[str, float], k: int = 10) -> str:
    """What happened to one release, in one plain sentence.

    ``pairs`` is :func:`rank_pairs` over at least the top k; ``values`` the metrics of
    :func:`dpcore.metrics.compute`.
    """
    top = pairs.head(k)
    kept = int((top["released_rank"] == top["true_rank"]).sum())
    inside = int((top["released_rank"] <= len(top)).sum())
    parts = [f"{name}: {kept} of the {len(top)} busiest commutes kept their rank"
             + (f" and {inside} stayed in the top {len(top)}" if inside > kept else "")]
    invented, vanished = values.get("false_positive_cells", 0), values.get("false_zero_cells", 0)
    parts.append(f"{_plural(invented, 'empty commute was', 'empty commutes were')} reported as "
                 f"non-empty and {_plural(vanished, 'real commute', 'real commutes')} as empty")
    rmse = values.get("rmse", math.nan)
    if math.isfinite(rmse):
        size = f"{rmse:,.0f}" if rmse >= 100 else f"{rmse:.3g}"
        parts.append(f"a typical cell is off by {size} commuters (RMSE)")
    return "; ".join(parts) + "."


# ---------------------------------------------------------------------------------------- theory
def theoretical_rmse(mechanism, true_counts) -> float | None:
    """Expected RMSE per cell of the *raw* release: √(mean(Var + bias²)), in commuters.

    From the mechanism's closed-form per-cell ``variance`` (and its exact ``expected`` value when
    it is biased, e.g. the stability histogram). None when the mechanism has no closed form.
    Strictly √E[MSE], which Jensen puts slightly above E[RMSE] for small domains.
    """
    counts = np.asarray(true_counts)
    variance = mechanism.variance(counts)
    if variance is None:
        return None
    mse = np.asarray(variance, dtype=float)
    expected = getattr(mechanism, "expected", None)
    if expected is not None:
        mse = mse + (np.asarray(expected(counts), dtype=float) - counts) ** 2
    return float(np.sqrt(np.mean(mse)))


# ------------------------------------------------------------------------------ repeated draws
def pass_rates(draws: list[list[PlannerCheck]]) -> pd.DataFrame:
    """Share of draws passing each planner check, over the draws where it applies.

    ``draws`` holds :func:`dpcore.metrics.planner_checks` of each draw. Columns: ``key``,
    ``label``, ``threshold``, ``pass_rate`` (NaN when it never applies), ``draws``, ``source``.
    """
    rows = {}
    for checks in draws:
        for check in checks:
            row = rows.setdefault(check.key, {"key": check.key, "label": check.label,
                                              "threshold": check.threshold, "passed": 0,
                                              "draws": 0, "source": check.source})
            if check.passed is not None:
                row["draws"] += 1
                row["passed"] += int(check.passed)
    table = pd.DataFrame(list(rows.values()),
                         columns=["key", "label", "threshold", "passed", "draws", "source"])
    table["pass_rate"] = np.where(table["draws"] > 0, table["passed"] / table["draws"].clip(1),
                                  np.nan)
    return table[["key", "label", "threshold", "pass_rate", "draws", "source"]]


# ---------------------------------------------------------------------------------- subsampling
def subsample(od: ODMatrix, n: int, rng: np.random.Generator) -> ODMatrix:
    """``n`` commuters drawn without replacement from the matrix (same zones and domain).

    The population-size experiment of seed 000: fewer people, same map. Multivariate
    hypergeometric over the non-zero cells, so every commuter is equally likely to be kept.
    """
    n = int(n)
    if not 0 < n <= od.n:
        raise ValueError(f"the subsample size must be between 1 and n = {od.n:,}; got {n:,}.")
    kept = rng.multivariate_hypergeometric(od.counts, n, method="marginals")
    return ODMatrix.from_pairs(f"{od.name} ({n:,} commuters)", od.origins, od.destinations,
                               od.rows, od.cols, kept, od.description)


# ----------------------------------------------------------------------------------- summaries
def summarise(table: pd.DataFrame, metric: str, by=("mechanism", "epsilon"),
              confidence: float = 0.95) -> pd.DataFrame:
    """Mean of ``metric`` over trials with a Student-t confidence interval, per group.

    ``table`` is tidy (``metric``, ``value`` and the ``by`` columns, one row per trial). Columns
    of the result: the ``by`` columns, ``mean``, ``low``, ``high``, ``sd``, ``trials``; with one
    trial the interval is the point itself (no spread to estimate).
    """
    by = list(by)
    rows = table[table["metric"] == metric]
    grouped = rows.groupby(by, sort=False, dropna=False)["value"]
    out = grouped.agg(mean="mean", sd="std", trials="count").reset_index()
    half = stats.t.ppf(0.5 + confidence / 2, np.maximum(out["trials"] - 1, 1)) \
        * out["sd"].fillna(0) / np.sqrt(out["trials"])
    half = np.where(out["trials"] > 1, half, 0.0)
    out["low"], out["high"] = out["mean"] - half, out["mean"] + half
    return out


def long_pairs(od: ODMatrix, pairs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The rank pairs of several releases in one table (``mechanism`` and ``commute`` added)."""
    frames = [frame.assign(mechanism=key, commute=od.cell_labels(frame["cell"].to_numpy()))
              for key, frame in pairs.items()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def checks_by_draw(table: pd.DataFrame) -> dict[str, list[list[PlannerCheck]]]:
    """Planner checks of every release in a tidy experiment table, per mechanism.

    ``table`` has one row per (mechanism, trial, metric) for a single ε and post-processing, as
    :func:`dpcore.experiment.run` returns; each trial's metrics become one list of checks.
    """
    out: dict[str, list[list[PlannerCheck]]] = {}
    for (key, _), rows in table.groupby(["mechanism", "trial"], sort=False):
        out.setdefault(key, []).append(planner_checks(dict(zip(rows["metric"], rows["value"]))))
    return out


# ---------------------------------------------------------------------------------------- input
THESIS_EPSILONS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)


def parse_grid(text: str, what: str = "ε", low: float | None = None, high: float | None = None,
               whole: bool = False) -> tuple:
    """Numbers typed as "0.5, 1, 2" (commas, semicolons or spaces) → sorted unique tuple.

    Each must lie in (low, high]; without bounds, in ε's declared range (the one every mechanism
    checks, so a grid can never hold an ε a mechanism refuses). ``whole`` requires whole numbers.
    A ValueError says which entry is wrong and why.
    """
    parts = [p for p in text.replace(";", " ").replace(",", " ").split() if p]
    if not parts:
        raise ValueError(f"Type at least one value of {what}, e.g. 0.5, 1, 2.")
    declared = low is None and high is None
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"“{part}” is not a number; type values of {what} separated by "
                             "commas, e.g. 0.5, 1, 2.") from None
        inside = EPSILON.contains(value) if declared else low < value <= high
        if not (math.isfinite(value) and inside):
            raise ValueError(f"{what} = {part} is outside {EPSILON.interval()}. {EPSILON.why}"
                             if declared else f"{what} = {part} is outside ({low:g}, {high:g}].")
        if whole and value != int(value):
            raise ValueError(f"{what} = {part} must be a whole number.")
        values.append(int(value) if whole else value)
    return tuple(sorted(set(values)))


def format_grid(values) -> str:
    """The inverse of :func:`parse_grid`: "0.5, 1, 1.5" (whole numbers in full: "2748530")."""
    return ", ".join(str(int(v)) if float(v).is_integer() else f"{v:g}" for v in values)


def population_grid(n: int, points: int = 5, smallest: int = 1000) -> tuple[int, ...]:
    """Log-spaced population sizes up to the whole population n (2 significant digits)."""
    if n <= smallest:
        return (int(n),)
    raw = np.geomspace(max(smallest, n / 1000), n, points)[:-1]
    rounded = {int(float(f"{v:.2g}")) for v in raw}
    return tuple(sorted(v for v in rounded if 0 < v < n)) + (int(n),)


#: The thesis's ED subsets (figure 5.17): Dublin City, and the rural Cavan + Leitrim.
THESIS_SUBSETS = (("Dublin City",), ("Cavan", "Leitrim"))


def release_times(table: pd.DataFrame) -> pd.DataFrame:
    """Mean release time per mechanism and data scenario from a sweep's tidy table.

    Each release appears once per metric and post-processing in the table; it is counted once.
    Columns: ``mechanism``, ``scenario``, ``seconds`` (mean), ``releases``.
    """
    columns = ["mechanism", "scenario", "seconds", "releases"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    jobs = table.drop_duplicates(["mechanism", "params", "scenario", "n", "epsilon", "trial"])
    out = jobs.groupby(["mechanism", "scenario"], sort=False)["seconds"].agg(
        seconds="mean", releases="count").reset_index()
    return out[columns]
