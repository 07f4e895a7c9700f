"""Cached dpcore calls for the pages: the chosen view of the data, single releases, sweeps.

Bundled datasets are public and the same for everyone, so their results are cached across sessions
(``st.cache_data``/``st.cache_resource`` with ``max_entries``), keyed by dataset key, settings and
seed. An uploaded dataset is never put in a global cache: its results are memoised in this
session's ``st.session_state`` only (a few entries, dropped with the session), so one user's upload
can never be seen by another session.

Every function takes a :class:`ui.controls.RunSettings` (hashable) and returns plain data; errors a
user can cause (a subset with nothing in it, Base-Cut for a mechanism without a closed-form
variance, k larger than the domain) come back as messages, never as tracebacks.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd
import streamlit as st

from dpcore import experiment, explore, mechanisms, metrics, postprocess
from dpcore.od import ODMatrix
from ui import budget, data, state
from ui.controls import LEVEL_AS_LOADED, LEVEL_PARENT, RunSettings

#: Single releases kept per server (bundled data): bounded in bytes by ui/budget.py.
RELEASE_CACHE_ENTRIES = budget.RELEASE_CACHE_ENTRIES
#: Finished sweep jobs (one release, scored after each post-processing) kept per server, and per
#: session for an upload.
SWEEP_CACHE_ENTRIES = 2000
#: Entries of the per-session memo used for an uploaded dataset.
SESSION_MEMO_ENTRIES = 16
_MEMO = "run_session_memo"


@dataclass(frozen=True)
class Release:
    """One mechanism's release with these settings, scored.

    ``released`` is the post-processed vector over the view's domain (read-only); ``seconds`` the
    mechanism's release time and ``postprocess_seconds`` that of the post-processing; ``error`` a
    message instead of everything else when the release could not be made.
    """

    mechanism: str
    released: np.ndarray | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    seconds: float = float("nan")
    postprocess_seconds: float = float("nan")
    bits_per_user: float | None = None
    error: str | None = None

    @property
    def checks(self) -> list[metrics.PlannerCheck]:
        return metrics.planner_checks(self.metrics) if self.metrics else []


@dataclass(frozen=True)
class Scenario:
    """One version of the data a sweep runs on: a level/subset, optionally subsampled to n."""

    label: str
    level: str
    areas: tuple[str, ...] = ()
    n: int | None = None


# ------------------------------------------------------------------------------------ plumbing
def _uploaded(settings: RunSettings) -> bool:
    return settings.dataset == state.UPLOADED


def _session_memo() -> dict:
    """This session's memo for its upload; emptied when the upload changes."""
    upload = st.session_state.get(state.UPLOADED_MATRIX)
    memo = st.session_state.setdefault(_MEMO, {"upload": None})
    if memo["upload"] is not upload or "entries" not in memo:  # forget the old upload
        memo.update(upload=upload, entries=OrderedDict(), sweeps=_Store(SWEEP_CACHE_ENTRIES))
    return memo


def session_memo(name: str, key: tuple, compute):
    """Session-only memo for uploaded data: the last few results, in this session alone (every
    page caches computations on an upload here, never in a global cache)."""
    entries = _session_memo()["entries"]
    full_key = (name, key)
    if full_key in entries:
        entries.move_to_end(full_key)
        return entries[full_key]
    value = compute()
    entries[full_key] = value
    while len(entries) > SESSION_MEMO_ENTRIES:
        entries.popitem(last=False)
    return value


def _freeze(matrix: ODMatrix) -> ODMatrix:
    for array in (matrix.rows, matrix.cols, matrix.counts):
        array.flags.writeable = False
    return matrix


@st.cache_resource(max_entries=16, show_spinner="Preparing the data…")
def _bundled_view(dataset: str, level: str, areas: tuple[str, ...]) -> ODMatrix:
    """A level/subset of a bundled dataset, shared read-only (one object, so metrics reuse the
    trip lengths they measured on it)."""
    return _freeze(explore.view(data.bundled(dataset), level == LEVEL_PARENT, areas))


def view(settings: RunSettings) -> ODMatrix:
    """The matrix the settings select (ValueError with a message when the subset is empty)."""
    return _base_matrix(settings.dataset, Scenario("", settings.level, settings.areas))


@st.cache_resource(max_entries=budget.DENSE_CACHE_ENTRIES)
def _bundled_dense(dataset: str, level: str, areas: tuple[str, ...]) -> np.ndarray:
    dense = _bundled_view(dataset, level, areas).to_dense()
    dense.flags.writeable = False
    return dense


def true_counts(settings: RunSettings) -> np.ndarray:
    """Dense true counts of the view (read-only for bundled data)."""
    return true_counts_of(settings.dataset, Scenario("", settings.level, settings.areas))


# ------------------------------------------------------------------------------ single release
def _release(od: ODMatrix, counts: np.ndarray, settings: RunSettings, key: str, k: int,
             top_n: int) -> Release:
    try:
        mechanism = settings.build(key)
        rng = explore.rng_for(settings.seed, key)
        started = time.perf_counter()
        raw = mechanism.release(counts, rng)
        seconds = time.perf_counter() - started
        variance = (postprocess.zero_cell_variance(mechanism, od.n, od.domain_size)
                    if settings.postprocess == "base_cut" else None)
        started = time.perf_counter()
        released = postprocess.apply(settings.postprocess, raw, od.n, variance)
        post_seconds = time.perf_counter() - started
        values = metrics.compute(counts, released, od, k=k, top_n=top_n,
                                 raw=raw if settings.postprocess == "post_pos" else None)
    except ValueError as error:
        return Release(key, error=str(error))
    released.flags.writeable = False
    return Release(key, released, MappingProxyType(values), seconds, post_seconds,
                   mechanism.bits_per_user(od.domain_size))


@st.cache_resource(max_entries=RELEASE_CACHE_ENTRIES, show_spinner=False)
def _bundled_release(settings: RunSettings, key: str, k: int, top_n: int) -> Release:
    # A resource, not cache_data: at ED level a release is a 78 MB vector that cache_data would
    # pickle on the way in and copy on every rerun (~0.3 s). The vector is read-only and the
    # metrics a read-only mapping, so sessions can share the one object safely.
    od = _bundled_view(settings.dataset, settings.level, settings.areas)
    return _release(od, _bundled_dense(settings.dataset, settings.level, settings.areas),
                    settings, key, k, top_n)


def _single(settings: RunSettings, key: str) -> RunSettings:
    """Settings with only what matters to one mechanism's release (a sharper cache key)."""
    own = tuple((k, v) for k, v in settings.options if k == key)
    return RunSettings(settings.dataset, settings.level, settings.areas, (key,), settings.epsilon,
                       settings.delta, settings.neighbours, own, settings.postprocess,
                       settings.seed)


def release(settings: RunSettings, key: str, k: int = 10, top_n: int = 100) -> Release:
    """Mechanism ``key`` released with these settings and scored (cached per seed)."""
    single = _single(settings, key)
    if not _uploaded(settings):
        return _bundled_release(single, key, k, top_n)
    return session_memo("release", (single, key, k, top_n), lambda: _release(
        view(settings), true_counts(settings), single, key, k, top_n))


def releases(settings: RunSettings, k: int = 10, top_n: int = 100) -> dict[str, Release]:
    """Every chosen mechanism's release, in the order chosen."""
    return {key: release(settings, key, k, top_n) for key in settings.mechanisms}


@st.cache_data(max_entries=RELEASE_CACHE_ENTRIES, show_spinner=False)
def _bundled_ordering(settings: RunSettings, key: str, cells: int) -> pd.DataFrame:
    truth = _bundled_dense(settings.dataset, settings.level, settings.areas)
    return explore.rank_pairs(truth, _bundled_release(settings, key, 10, 100).released, cells)


def ordering(settings: RunSettings, key: str, cells: int) -> pd.DataFrame:
    """True against released ranks of the top ``cells`` true commutes for mechanism ``key``
    (:func:`dpcore.explore.rank_pairs`), cached like the release itself."""
    single = _single(settings, key)
    if not _uploaded(settings):
        return _bundled_ordering(single, key, cells)
    return session_memo("ordering", (single, key, cells), lambda: explore.rank_pairs(
        true_counts(settings), release(settings, key).released, cells))


#: Metrics on the cards and in the scorecard, in display order.
SCORECARD = ("rmse", "mae", "max_error", "topk_recall", "kendall_tau", "geh_pass_share",
             "false_positive_cells", "false_zero_cells")


def scorecard(results: dict[str, Release]) -> pd.DataFrame:
    """One row per mechanism: the headline metrics, release time and bits per commuter."""
    rows = []
    for key, result in results.items():
        if result.error:
            continue
        row = {"mechanism": key}
        row.update({metrics.METRICS[m].label: result.metrics[m] for m in SCORECARD})
        row["Release time (s)"] = result.seconds
        row["Bits per commuter"] = result.bits_per_user
        rows.append(row)
    return pd.DataFrame(rows)



# ------------------------------------------------------------------------------------- sweeps
@dataclass(frozen=True)
class SweepSpec:
    """A sweep: scenarios × mechanisms (with their own parameters) × ε × trials, scored after each
    post-processing. Hashable, so it can key caches and live in the session."""

    dataset: str
    scenarios: tuple[Scenario, ...]
    mechanisms: tuple[tuple[str, tuple[tuple[str, object], ...]], ...]
    epsilons: tuple[float, ...]
    postprocess: tuple[str, ...]
    trials: int
    seed: int
    k: int = 10
    top_n: int = 100

    def jobs(self) -> list[tuple]:
        """(scenario, mechanism, params, ε, trial), one release each, trial by trial: a sweep
        stopped early has every curve, with fewer trials."""
        return [(scenario, key, params, epsilon, trial) for trial in range(self.trials)
                for scenario in self.scenarios for key, params in self.mechanisms
                for epsilon in self.epsilons]


def mechanism_specs(settings: RunSettings, keys=None) -> tuple:
    """``((key, own params), …)`` of the chosen mechanisms, for a :class:`SweepSpec`."""
    return tuple((key, tuple(sorted(settings.own_params(key).items())))
                 for key in (settings.mechanisms if keys is None else keys))


@dataclass
class Sweep:
    """What a sweep has so far: the tidy table of finished releases and failures by mechanism."""

    table: pd.DataFrame
    done: int
    total: int
    errors: dict[str, str]

    @property
    def complete(self) -> bool:
        return self.done == self.total


class _Store:
    """A bounded, thread-safe map of finished sweep jobs (shared by sessions for bundled data)."""

    def __init__(self, capacity: int):
        self.capacity, self.entries, self.lock = capacity, OrderedDict(), threading.Lock()

    def get(self, key):
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
            return self.entries.get(key)

    def put(self, key, value) -> None:
        with self.lock:
            self.entries[key] = value
            while len(self.entries) > self.capacity:
                self.entries.popitem(last=False)


@st.cache_resource
def _shared_store() -> _Store:
    return _Store(SWEEP_CACHE_ENTRIES)


def _store(dataset: str) -> _Store:
    """Where finished jobs are kept: shared for bundled data, this session's own for an upload."""
    return _shared_store() if dataset != state.UPLOADED else _session_memo()["sweeps"]


def _base_matrix(dataset: str, scenario: Scenario) -> ODMatrix:
    if dataset != state.UPLOADED:
        return _bundled_view(dataset, scenario.level, scenario.areas)
    upload = st.session_state[state.UPLOADED_MATRIX]
    return session_memo("view", (scenario.level, scenario.areas), lambda: explore.view(
        upload, scenario.level == LEVEL_PARENT, scenario.areas))


def _seed(*parts) -> int:
    """A 63-bit seed derived from the sweep seed and a job's coordinates."""
    words = [zlib.crc32(str(p).encode()) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(2, np.uint64)[0] >> np.uint64(1))


def _scenario_matrix(spec: SweepSpec, scenario: Scenario, trial: int) -> ODMatrix:
    od = _base_matrix(spec.dataset, scenario)
    if scenario.n is None or scenario.n >= od.n:
        return od
    rng = np.random.default_rng(_seed(spec.seed, "subsample", scenario.n, trial))
    return explore.subsample(od, scenario.n, rng)


def _run_job(spec: SweepSpec, job: tuple, methods: tuple[str, ...]) -> pd.DataFrame:
    scenario, key, params, epsilon, trial = job
    od = _scenario_matrix(spec, scenario, trial)
    table = experiment.run(od, [(key, dict(params))], [epsilon], postprocess=methods, trials=1,
                           seed=_seed(spec.seed, key, f"{epsilon:.12g}", trial), k=spec.k,
                           top_n=spec.top_n)
    return table.assign(trial=trial, scenario=scenario.label, n=od.n)


def sweep(spec: SweepSpec, compute: bool = False, progress=None) -> Sweep:
    """The sweep's finished jobs; with ``compute`` also run the missing ones, in order.

    ``progress(done, total)`` is called after each job (a page updates its progress bar there;
    Streamlit stops the script at that call when the user presses Stop, and every job finished
    so far stays cached). Jobs are cached individually, so a smaller grid, fewer trials or a
    return to the page reuses them.
    """
    store = _store(spec.dataset)
    frames, errors, done = [], {}, 0
    jobs = spec.jobs()
    for job in jobs:
        key = job[1]
        scenario = job[0]  # its label is for display: equal data share cached releases
        where = (spec.dataset, scenario.level, scenario.areas, scenario.n, *job[1:])
        keys = {m: (where, m, spec.seed, spec.k, spec.top_n) for m in spec.postprocess}
        found = {m: store.get(k) for m, k in keys.items()}
        missing = tuple(m for m, value in found.items() if value is None)
        if missing and compute:
            if key in errors:  # it failed on an earlier job: the same settings fail again
                found.update(dict.fromkeys(missing, errors[key]))
            else:
                try:
                    table = _run_job(spec, job, missing)
                    found.update({m: table[table["postprocess"] == m] for m in missing})
                except ValueError as error:  # a setting this mechanism cannot run with
                    found.update(dict.fromkeys(missing, str(error)))
            for method in missing:
                store.put(keys[method], found[method])
            missing = ()
        if missing:
            continue
        for value in found.values():
            if isinstance(value, str):
                errors[key] = value
            else:
                frames.append(value.assign(scenario=scenario.label))
        done += 1
        if progress is not None:
            progress(done, len(jobs))
    columns = experiment.COLUMNS + ["scenario", "n"]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return Sweep(table, done, len(jobs), errors)


def theory(spec: SweepSpec, metric: str) -> pd.DataFrame:
    """Expected RMSE of each mechanism at each ε of the sweep (raw releases), where it exists.

    Columns ``scenario``, ``mechanism``, ``x`` (ε), ``value`` (commuters, or share of n for
    ``rmse_freq``). Empty for other metrics.
    """
    if metric not in ("rmse", "rmse_freq"):
        return pd.DataFrame(columns=["scenario", "mechanism", "x", "value"])
    rows = []
    for scenario in spec.scenarios:
        od = _base_matrix(spec.dataset, scenario)
        counts = (true_counts_of(spec.dataset, scenario) if scenario.n is None else None)
        if counts is None:
            continue
        for key, params in spec.mechanisms:
            for epsilon in spec.epsilons:
                try:
                    value = explore.theoretical_rmse(
                        mechanisms.build(key, epsilon=epsilon, **dict(params)), counts)
                except ValueError:
                    value = None
                if value is not None:
                    rows.append((scenario.label, key, epsilon,
                                 value / od.n if metric == "rmse_freq" else value))
    return pd.DataFrame(rows, columns=["scenario", "mechanism", "x", "value"])


def true_counts_of(dataset: str, scenario: Scenario) -> np.ndarray:
    """Dense true counts of a scenario's level/subset (read-only for bundled data)."""
    if dataset != state.UPLOADED:
        return _bundled_dense(dataset, scenario.level, scenario.areas)
    return session_memo("dense", (scenario.level, scenario.areas),
                        lambda: _base_matrix(dataset, scenario).to_dense())


def repeated_draws(settings: RunSettings, draws: int) -> SweepSpec:
    """Independent releases of every chosen mechanism with these settings (for pass rates)."""
    return SweepSpec(settings.dataset, (Scenario("current", settings.level, settings.areas),),
                     mechanism_specs(settings), (settings.epsilon,), (settings.postprocess,),
                     int(draws), settings.seed)


def pass_rates(found: Sweep) -> dict[str, pd.DataFrame]:
    """Per mechanism: the share of the finished draws that pass each planner check."""
    return {key: explore.pass_rates(draws)
            for key, draws in explore.checks_by_draw(found.table).items()}


def scenario_options(settings: RunSettings) -> dict[str, Scenario]:
    """Versions of the current dataset to compare: rolled up, the thesis's subsets, the chosen
    areas, and everything as loaded — each labelled with its domain size d."""
    base = _base_matrix(settings.dataset, Scenario("", LEVEL_AS_LOADED))
    candidates = []
    if explore.roll_up_possible(base):  # subsets of fine zones within parent areas
        candidates.append(("Rolled up to parent zones", LEVEL_PARENT, ()))
        areas = explore.view_areas(base)
        candidates += [(" + ".join(group), LEVEL_AS_LOADED, group)
                       for group in explore.THESIS_SUBSETS if all(a in areas for a in group)]
    if settings.areas:
        candidates.append(("Chosen areas", settings.level, settings.areas))
    candidates.append(("Everything as loaded", LEVEL_AS_LOADED, ()))
    out = {}
    for label, level, chosen in candidates:
        try:
            od = _base_matrix(settings.dataset, Scenario(label, level, chosen))
        except ValueError:
            continue
        full = f"{label} (d = {od.domain_size:,}, n = {od.n:,})"
        out[full] = Scenario(full, level, chosen)
    return out
