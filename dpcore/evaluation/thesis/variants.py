"""The releases beside the written sweep: the as-run ones (:mod:`.as_run`), the written local ones
rounded, and per trial the zeros and top ranks behind the stated numbers and rank tables — with
extra trials at the finer level while an outcome is still unseen; and :func:`compose`, which picks
a protocol's releases from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import threading
import time
from typing import Callable

import numpy as np
import pandas as pd

from dpcore import mechanisms, release, seeding
from dpcore.data import ordinal, views
from dpcore.data.od import ODMatrix
from dpcore.evaluation.thesis import as_run
from dpcore.evaluation.thesis.checks_ed import FAR_RANK, _ordered_well, TOP_FAR, TOP_WELL
from dpcore.evaluation.thesis.checks_local import _exact, THESIS_TABLES
from dpcore.scoring import ranks
from dpcore.evaluation.thesis.protocol import (
    BAR_TOP, CENTRAL, DECIDING_TRIALS, ED_ORDER_TOP, FINE_MECHANISMS, FINE_RUN_TRIALS,
    FINE_STATED_TRIALS, HIGH_EPSILON, label, Levels, levels, LOCAL, MAIN_POSTPROCESS,
    MECHANISMS, _params, RANK_EPSILONS, RANK_TOP, Snapshot, STATED_TRIALS
)


def _events(fine: bool, epsilon: float, key: str) -> list[tuple[str, Callable]]:
    """The thesis's single-draw outcomes that involve ``key`` at this level and ε: its rank
    table's (:data:`THESIS_TABLES`) and, at the finer level and ε = 5, figure 5.15's; each a
    (name, test of a per-trial row)."""
    found = []
    table = THESIS_TABLES.get((fine, epsilon))
    if table is not None and key in table[1]:
        what, test = table[1][key]
        found.append((what, lambda row, t=test: t(row["worst_rank"], row["exact"])))
    if fine and epsilon == HIGH_EPSILON and key == "hm":
        found.append(("figure 5.15's ordering", lambda row: _ordered_well(
            row["top40_within_40"], row["top100_below_200"])))
    return found


def _undecided(rows: list[dict], events) -> bool:
    """Whether more trials could still change a verdict on these rows (one mechanism, one setting,
    one rounding): some outcome not seen yet, in fewer than :data:`DECIDING_TRIALS` trials."""
    return len(rows) < DECIDING_TRIALS and any(not any(test(row) for row in rows)
                                               for _, test in events)


@dataclass
class Variants:
    """The releases the pipeline makes beside the written sweep: the as-run ones
    (:mod:`as_run`), the written local ones rounded (for the Base-Pro switch), and per
    trial at ε = 0.5 and 5 the zeros and top-10 ranks of every release (the stated numbers and
    the rank tables' probabilities).

    ``rows``: tidy rows (mechanism, variant, epsilon, postprocess, trial, metric, value,
    scenario, n); ``per_trial``: one row per (scenario, ε, mechanism, variant, rounded, trial);
    ``snaps``: trial-0 :class:`Snapshot` by (scenario, ε, mechanism, variant, rounded)."""

    rows: pd.DataFrame
    per_trial: pd.DataFrame
    snaps: dict
    #: the extra trials at the finer level (:func:`_undecided`): (scenario, ε, mechanism,
    #: variant) → (trials in all, CPU seconds of the extra ones)
    extra: dict = field(default_factory=dict)

    def merged(self, other: Variants) -> Variants:
        return Variants(pd.concat([self.rows, other.rows], ignore_index=True),
                        pd.concat([self.per_trial, other.per_trial], ignore_index=True),
                        self.snaps | other.snaps, self.extra | other.extra)

    def extra_text(self) -> str:
        """The extra trials, for the settings: which setting ran how many, and their CPU time."""
        if not self.extra:
            return "none needed"
        seconds = sum(cpu for _, cpu in self.extra.values())
        return (", ".join(f"{label(key)} ({variant}) at ε = {epsilon:g}: {trials} trials"
                          for (_, epsilon, key, variant), (trials, _) in sorted(self.extra.items()))
                + f"; {seconds:.1f} s of CPU")


def _written_release(matrix, truth, key, params, epsilon, seed, trial):
    """The written mechanism's raw release: the sweep's own (same seed, same stream, the draw
    :func:`dpcore.release.run` makes, without its copy for the Base post-processing)."""
    spec = release.ReleaseSpec(key, epsilon, params, ("base",), seed, trial)
    return np.asarray(release.check(spec, matrix).release(truth, spec.generator()), dtype=float)


def _made(key, raw, n, coarse, rounded):
    """A release after the post-processings its figures use (central: as released)."""
    if key in CENTRAL:
        return {"base": raw}
    made = {"base": raw, "base_pos": as_run.base_pro(raw, rounded)}
    if coarse:
        made["base_cut"] = as_run.base_cut(raw, n, rounded)
    return made


def _score(truth, released, n, coarse: bool = False) -> dict:
    """RMSE and maximum error; at the coarse level also the RMSE over every cell but cell 0 (the
    cell OLH as run loses: figure 5.7's reason)."""
    error = np.abs(released - truth)
    scores = {"rmse": float(np.sqrt(np.mean(error ** 2))), "max_error_freq": float(error.max() / n)}
    if coarse and error.size > 1:
        scores["rmse_without_cell_0"] = float(np.sqrt(np.mean(error[1:] ** 2)))
    return scores


def _trial_ranks(shown, cells, fine_hm: bool, released=None) -> dict:
    """One release's per-trial rank statistics: the worst rank of the true top 10 and whether they
    keep their order; for the Hadamard release at the finer level and ε = 5 (figure 5.15) also the
    share of the true top 40 released among the top 40 and how many of the top 100 fall below
    rank 200. ``released``: the cells' ranks when already known (:func:`_hr_ranks`)."""
    if released is None:
        released = ranks.ordinal_ranks(shown, cells)
    out = {"worst_rank": int(released[:RANK_TOP].max()),
           "exact": bool(_exact(pd.Series(released[:RANK_TOP]))),
           "top40_within_40": np.nan, "top100_below_200": np.nan}
    if fine_hm:
        out["top40_within_40"] = float(np.mean(released[:TOP_WELL] <= TOP_WELL))
        out["top100_below_200"] = int(np.sum(released[:TOP_FAR] > FAR_RANK))
    return out


@dataclass(frozen=True)
class _Cells:
    """A level's cells as :func:`_hr_ranks` needs them (made once): the non-empty cells and their
    counts, the empty cells, the identity permutation and where the true top cells sit among
    the non-empty ones."""

    present: np.ndarray
    people: np.ndarray
    empty: np.ndarray
    identity: np.ndarray
    top: np.ndarray
    top_at: np.ndarray

    @classmethod
    def of(cls, truth: np.ndarray, top: np.ndarray) -> _Cells | None:
        present = np.flatnonzero(truth)
        if not (truth[top] > 0).all():
            return None
        return cls(present, truth[present], np.flatnonzero(truth == 0),
                   np.arange(truth.size), top, np.searchsorted(present, top))


def _hr_ranks(epsilon: float, cells: _Cells, roundings, rng: np.random.Generator) -> dict:
    """The ranks of the true top cells in one Hadamard Response release (the blocked form, ε > 1),
    by Base-Pro rounding, drawn without arranging the release by cell.

    Hadamard Response sends cell x as symbol π(x), π a uniform permutation, and releases e[π(x)]
    for cell x, e the estimates by symbol (:class:`dpcore.mechanisms.hadamard.HadamardResponse`).
    A rank compares values, so of π only its values at the non-empty cells matter (a uniform
    injection into the symbols), and, where a top cell's value is tied, how many of the cells
    tied with it have a smaller index (ties go to the smaller cell index). So: the counts placed
    at their symbols and released with the identity permutation (the same protocol: e); the
    values above each top cell's counted over e; its ties with non-empty cells counted from the
    injection; and the empty cells behind the symbols tied at each value — a uniform sample
    without replacement of the empty cells, the rest of a uniform π — drawn only as how many fall
    between consecutive top cells' indices (a multivariate hypergeometric draw per tied value,
    from what earlier values left). Exact in distribution for each rounding (each draws its own
    ties). Saves drawing the 9.8 M-long permutation and arranging the release by it."""
    d = cells.identity.size
    symbols = rng.choice(d, size=cells.present.size, replace=False)
    arranged = np.zeros(d, dtype=cells.people.dtype)
    arranged[symbols] = cells.people
    estimates = as_run.release("hm", arranged, None, epsilon, rng, permutation=cells.identity)
    # the empty cells between consecutive top-cell indices (top cells are non-empty)
    bounds = np.sort(cells.top)
    between = np.diff(np.searchsorted(cells.empty, np.concatenate(([0], bounds, [d]))))
    out = {}
    for rounded in roundings:
        shown = as_run.base_pro(estimates, rounded)
        values = shown[symbols[cells.top_at]]
        above, equal = ordinal.above_and_before(shown, values, np.full(values.size, d))
        released = 1 + above
        tied = np.flatnonzero(equal > 1)  # ``equal`` counts the cell itself
        if tied.size:
            levels = np.unique(values[tied])
            present_values = shown[symbols]
            near = np.flatnonzero(np.isin(present_values, levels))
            near_values, near_cells = present_values[near], cells.present[near]
            left = between.copy()
            for level in levels:
                here = tied[values[tied] == level]
                empty_tied = int(equal[here[0]]) - int(np.count_nonzero(near_values == level))
                drawn = rng.multivariate_hypergeometric(left, empty_tied)
                left -= drawn
                below = np.cumsum(drawn)  # empty tied cells below bounds[j]: below[j]
                for i in here:
                    released[i] += (np.count_nonzero((near_values == level)
                                                     & (near_cells < cells.top[i]))
                                    + below[np.searchsorted(bounds, cells.top[i])])
        out[rounded] = released
    return out


def _snapshot(matrix, truth, key, epsilon, made, coarse) -> Snapshot:
    shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
    ordering = {}
    if epsilon == HIGH_EPSILON and coarse:
        wanted = ("base",) if key in CENTRAL else tuple(made) if key == "hm" else (
            MAIN_POSTPROCESS,)
        ordering = {m: ranks.rank_pairs(truth, made[m]) for m in wanted}
    elif epsilon == HIGH_EPSILON and key == "hm":
        ordering = {MAIN_POSTPROCESS: ranks.rank_pairs(truth, shown, ED_ORDER_TOP)}
    return Snapshot(ranks.top_flows(matrix, truth, {key: shown}, BAR_TOP),
                    ranks.rank_pairs(truth, shown, RANK_TOP), ordering)


def _variant_plan(lv: Levels, trials: int) -> list[tuple]:
    """(scenario, mechanism, variant, roundings, trials) of :func:`variant_sweep`: at county level
    every mechanism both ways; at the finer level what the thesis ran there (central, randomised
    response, Hadamard); on the subsets the local ones."""
    plan = []
    for scenario in lv.scenarios:
        coarse = scenario == lv.coarse
        keys = MECHANISMS if coarse else FINE_MECHANISMS if scenario == lv.fine else LOCAL
        count = trials if scenario != lv.fine else min(trials, FINE_RUN_TRIALS)
        for key in keys:
            local = key in LOCAL
            if key != "oue":  # unary encoding ran as written
                plan.append((scenario, key, "run", (False, True) if local else (False,), count))
            if local:
                plan.append((scenario, key, "written", (False, True), count))
            elif scenario in lv.whole:  # for the rank tables' probabilities only
                plan.append((scenario, key, "written", (False,), count))
    return plan


def variant_sweep(od: ODMatrix, lv: Levels, epsilons, trials: int, seed: int,
                  stop: threading.Event | None = None, fine: bool | None = None,
                  keys: tuple | None = None, variant_only: str | None = None) -> Variants:
    """Every release of :func:`_variant_plan` over the ε grid (and :data:`STATED_TRIALS` trials at
    ε = 0.5 and 5 at county level), scored by RMSE and maximum error. The written releases are
    the sweep's own draws; the as-run ones use the stream ``"thesis-as-run"``. ``fine``: only the
    finer level (True), or every other (False); ``keys`` and ``variant_only``: only these
    mechanisms, only this variant (to share the work among processes).

    At the finer level and ε = 0.5 and 5, :data:`FINE_STATED_TRIALS` trials to begin with; while
    an outcome of the thesis's ED tables or figure 5.15 involving this mechanism is unseen in
    some rounding (:func:`_undecided`), further releases of this mechanism alone, up to
    :data:`DECIDING_TRIALS`: the same releases, only more of them."""
    rows, per_trial, snaps, extras = [], [], {}, {}
    matrices, by_symbol = {}, {}
    for scenario, key, variant, roundings, count in _variant_plan(lv, trials):
        if fine is not None and (scenario == lv.fine) != fine:
            continue  # ``fine``: only the finer level (True) or all but it (False)
        if (keys is not None and key not in keys) or variant_only not in (None, variant):
            continue
        if scenario.label not in matrices:
            matrix = views.select(od, scenario.view)
            truth_ = matrix.to_dense().astype(np.int64)
            matrices[scenario.label] = (matrix, truth_, matrix.to_items(),
                                        ranks.top_cells(truth_, TOP_FAR))
        matrix, truth, items, top = matrices[scenario.label]
        coarse, n = scenario == lv.coarse, matrix.n
        params = _params(key, od.n)
        for epsilon in sorted(set(epsilons) | set(RANK_EPSILONS)):  # the tables' ε always
            on_grid = epsilon in epsilons
            if not on_grid and scenario not in lv.whole:
                continue
            if variant == "written" and key in CENTRAL and epsilon not in RANK_EPSILONS:
                continue  # the written central releases are the sweep's: needed per trial only
            extra = (STATED_TRIALS if coarse else FINE_STATED_TRIALS
                     if scenario == lv.fine else count)
            planned = (max(count if on_grid else 1, extra) if epsilon in RANK_EPSILONS
                       else count)
            events = (_events(True, epsilon, key)
                      if scenario == lv.fine and epsilon in RANK_EPSILONS else [])
            mine = {rounded: [] for rounded in roundings}  # this setting's per-trial rows
            trial = -1
            while True:
                trial += 1
                if trial >= planned and not any(_undecided(found, events)
                                                 for found in mine.values()):
                    break
                if stop is not None and stop.is_set():
                    return Variants(pd.DataFrame(rows), pd.DataFrame(per_trial), snaps, extras)
                if trial == planned:
                    extra_started = time.process_time()
                generator = seeding.generator(seed, "thesis-as-run", key, epsilon, trial,
                                              scenario.label)
                if (trial >= planned and variant == "run" and key == "hm"
                        and mechanisms.build("hr", epsilon=epsilon).blocked):
                    # an extra trial needs only the ranks: drawn by symbol (_hr_ranks)
                    if scenario.label not in by_symbol:
                        by_symbol[scenario.label] = _Cells.of(truth, top)
                    if by_symbol[scenario.label] is not None:
                        fine_hm = scenario == lv.fine and epsilon == HIGH_EPSILON
                        for rounded, released in _hr_ranks(epsilon, by_symbol[scenario.label],
                                                           roundings, generator).items():
                            row = {"scenario": scenario.label, "epsilon": epsilon,
                                   "mechanism": key, "variant": variant, "rounded": rounded,
                                   "trial": trial, "zeros": np.nan, "zeros_cut": np.nan,
                                   **_trial_ranks(None, top, fine_hm, released)}
                            per_trial.append(row)
                            mine[rounded].append(row)
                        continue
                raw = (_written_release(matrix, truth, key, params, epsilon, seed, trial)
                       if variant == "written" else as_run.release(key, truth, items, epsilon,
                                                                   generator))
                for rounded in roundings:
                    made = _made(key, raw, n, coarse, rounded)
                    tag = "_round" if rounded else ""
                    if on_grid and trial < count and (variant == "run" or rounded):
                        for method, values in made.items():
                            if method == "base" and rounded:
                                continue
                            for metric, value in _score(truth, values, n, coarse).items():
                                rows.append({"mechanism": key, "variant": variant,
                                             "epsilon": epsilon, "postprocess": method + tag,
                                             "trial": trial, "metric": metric, "value": value,
                                             "scenario": scenario.label, "n": n})
                    if epsilon in RANK_EPSILONS and scenario in lv.whole:
                        shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
                        fine_hm = (scenario == lv.fine and epsilon == HIGH_EPSILON
                                   and key == "hm")
                        row = {"scenario": scenario.label, "epsilon": epsilon, "mechanism": key,
                               "variant": variant, "rounded": rounded, "trial": trial,
                               "zeros": int((shown < ranks.PRESENT_AT).sum()),
                               "zeros_cut": int((made["base_cut"] < ranks.PRESENT_AT).sum())
                               if "base_cut" in made else np.nan,
                               **_trial_ranks(shown, top[:TOP_FAR if fine_hm else RANK_TOP],
                                              fine_hm)}
                        per_trial.append(row)
                        mine[rounded].append(row)
                        if trial == 0 and not (variant == "written" and not rounded):
                            snaps[(scenario.label, epsilon, key, variant, rounded)] = _snapshot(
                                matrix, truth, key, epsilon, made, coarse)
            if trial > planned:
                extras[(scenario.label, epsilon, key, variant)] = (
                    trial, time.process_time() - extra_started)
    return Variants(pd.DataFrame(rows), pd.DataFrame(per_trial), snaps, extras)


def compose(protocol, written: pd.DataFrame, written_snaps: dict, variants: Variants
            ) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """A protocol's sweep table, trial-0 snapshots and per-trial statistics: for each mechanism
    the written or as-run releases (:meth:`as_run.Protocol.variant`), the local ones'
    Base-Pos and Base-Cut rounded when Base-Pro rounds. A mechanism without releases in the
    chosen setting at some level (e.g. unary encoding rounded at ED level: the thesis did not run
    it there) is left out of that level."""
    mine = variants.rows
    parts = []
    for key in MECHANISMS:
        variant = protocol.variant(key)
        rounded = protocol.rounded and key in LOCAL
        rows = (written[written["mechanism"] == key].assign(variant="written")
                if variant == "written" else mine[(mine["mechanism"] == key)
                                                  & (mine["variant"] == "run")])
        if rounded:
            raw = rows[rows["postprocess"] == "base"]
            pool = mine[(mine["mechanism"] == key) & (mine["variant"] == variant)]
            kept = pool[pool["postprocess"].str.endswith("_round")].assign(
                postprocess=lambda f: f["postprocess"].str.replace("_round", "", regex=False))
            levels_ = set(kept["scenario"])
            rows = pd.concat([raw[raw["scenario"].isin(levels_)], kept], ignore_index=True)
        else:
            rows = rows[~rows["postprocess"].str.endswith("_round")]
        parts.append(rows)
    table = pd.concat(parts, ignore_index=True)
    snaps = {}
    for (level, epsilon, key), snap in written_snaps.items():
        variant = protocol.variant(key)
        rounded = protocol.rounded and key in LOCAL
        found = snap if variant == "written" and not rounded else variants.snaps.get(
            (level, epsilon, key, variant, rounded))
        if found is not None:
            snaps[(level, epsilon, key)] = found
    for (level, epsilon, key, variant, rounded), snap in variants.snaps.items():
        if variant == protocol.variant(key) and rounded == (protocol.rounded and key in LOCAL):
            snaps.setdefault((level, epsilon, key), snap)
    trials = variants.per_trial
    if len(trials):
        mechanism = trials["mechanism"]
        chosen = (trials["variant"] == mechanism.map(protocol.variant)) & (
            trials["rounded"] == (mechanism.isin(LOCAL) & protocol.rounded))
        trials = trials[chosen]
    return table, snaps, trials
