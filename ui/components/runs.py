"""Caches in front of :mod:`dpcore.release` and :mod:`dpcore.evaluation.experiment`: nothing else.

The pages ask for views of the data, single releases and sweeps; this module makes them through
dpcore's one pipeline and keeps them. Bundled datasets are public and the same for everyone, so
their results are cached across sessions (``st.cache_resource``, or a byte-bounded store), keyed
by the release's settings. An uploaded dataset is never put in a global cache: its results are
memoised in this session's ``st.session_state`` only (a few entries, dropped with the session), so one
user's upload can never be seen by another session.

Errors a user can cause (a subset with nothing in it, the significance cut for a mechanism
without a closed-form variance, a parameter out of range) come back as messages, never as
tracebacks.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from dpcore import release
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import experiment, summaries
from dpcore.evaluation.experiment import Scenario
from dpcore.release import ReleaseResult, RunSettings
from dpcore.scoring import ranks
from ui.components import budget, data, slots, state
from ui.components.memo import BoundedMemo

#: Finished sweep jobs (one release, scored after each post-processing) kept per server, and per
#: session for an upload.
SWEEP_CACHE_ENTRIES = 2000
#: Entries of the per-session memo used for an uploaded dataset (and at most
#: ui/budget.SESSION_MEMO_BYTES bytes).
SESSION_MEMO_ENTRIES = 16
SESSION_MEMO_BYTES = budget.SESSION_MEMO_BYTES
#: Metrics of releases kept per session for an upload (a few numbers each; the releases
#: themselves are in the bounded memo above).
METRICS_ENTRIES = 200
_MEMO = "run_session_memo"


# ------------------------------------------------------------------------------------ plumbing
def _uploaded(dataset: str) -> bool:
    return dataset == state.UPLOADED


def _session_memo() -> dict:
    """This session's memo for its upload; emptied when the upload changes."""
    upload = st.session_state.get(state.UPLOADED_MATRIX)
    memo = st.session_state.setdefault(_MEMO, {"upload": None})
    if memo["upload"] is not upload or "entries" not in memo:  # forget the old upload
        memo.update(upload=upload, entries=BoundedMemo(SESSION_MEMO_ENTRIES, SESSION_MEMO_BYTES),
                    sweeps=BoundedMemo(SWEEP_CACHE_ENTRIES),
                    metrics=BoundedMemo(METRICS_ENTRIES))
    return memo


def session_memo(name: str, key: tuple, compute):
    """Session-only memo for uploaded data: the last few results, in this session alone (every
    page caches computations on an upload here, never in a global cache), bounded in entries
    and bytes (:class:`ui.components.memo.BoundedMemo`)."""
    return _session_memo()["entries"].get_or_compute((name, key), compute)


def _freeze(matrix: ODMatrix) -> ODMatrix:
    for array in (matrix.rows, matrix.cols, matrix.counts):
        array.flags.writeable = False
    return matrix


@st.cache_resource(max_entries=16, show_spinner="Preparing the data…")
def _bundled_view(dataset: str, view: views.View) -> ODMatrix:
    """A level/subset of a bundled dataset, shared read-only (one object, so metrics reuse the
    trip lengths they measured on it)."""
    return _freeze(views.select(data.bundled(dataset), view))


@st.cache_resource(max_entries=budget.DENSE_CACHE_ENTRIES)
def _bundled_dense(dataset: str, view: views.View) -> np.ndarray:
    dense = release.true_values(_bundled_view(dataset, view))
    if isinstance(dense, np.ndarray):
        dense.flags.writeable = False
    return dense


def matrix_of(dataset: str, view: views.View) -> ODMatrix:
    """The matrix of a view (before any subsampling); ValueError with a message when empty."""
    if not _uploaded(dataset):
        return _bundled_view(dataset, view.whole)
    upload = st.session_state[state.UPLOADED_MATRIX]
    return session_memo("view", view.whole, lambda: views.select(upload, view.whole))


def true_counts_of(dataset: str, view: views.View) -> np.ndarray:
    """True counts of a view (:func:`dpcore.release.true_values`: dense, or sparse over a huge
    domain; read-only for bundled data)."""
    if not _uploaded(dataset):
        return _bundled_dense(dataset, view.whole)
    return session_memo("dense", view.whole,
                        lambda: release.true_values(matrix_of(dataset, view)))


def view(settings: RunSettings) -> ODMatrix:
    """The matrix the settings select (ValueError with a message when the subset is empty)."""
    return matrix_of(settings.dataset, settings.view)


def true_counts(settings: RunSettings) -> np.ndarray:
    """Dense true counts of the view (read-only for bundled data)."""
    return true_counts_of(settings.dataset, settings.view)


# ------------------------------------------------------------------------------ single release
#: Shared releases and orderings kept per server: bounded in bytes (ui/components/budget.py), and in entries
#: only loosely, so that at county level (10 KB a release) twenty sessions changing ε together do
#: not evict each other's releases between a page's two reads of them (a fixed count sized for
#: 78 MB ED vectors, 10, made every such change compute its releases twice or more).
SHARED_ENTRIES = 4_000


@st.cache_resource
def _shared_releases() -> BoundedMemo:
    return BoundedMemo(SHARED_ENTRIES, budget.RELEASE_CACHE_BYTES)


@st.cache_resource
def _shared_orderings() -> BoundedMemo:
    return BoundedMemo(SHARED_ENTRIES, budget.RELEASE_CACHE_BYTES // 8)


def _bundled_release(dataset: str, view: views.View, spec: release.ReleaseSpec, k: int,
                     top_n: int, od: ODMatrix, dense) -> ReleaseResult:
    # Kept as the object itself (not pickled like st.cache_data): at ED level a release is a
    # 78 MB vector that would be copied on every rerun (~0.3 s). The vectors are read-only and
    # the metrics a read-only mapping, so sessions can share the one object safely. ``od`` and
    # ``dense`` are the view's shared matrix and true counts, fetched once per rerun by the
    # caller (each cache lookup hashes the view: ~0.4 ms, 30 times a rerun at county level).
    return _shared_releases().get_or_compute(
        (dataset, view, spec, k, top_n),
        lambda: release.drawn(od, spec, true_counts=dense, k=k, top_n=top_n))


@st.cache_resource
def _shared_metrics() -> BoundedMemo:
    return BoundedMemo(SHARED_ENTRIES)


def _release_job(settings: RunSettings, k: int, top_n: int, only,
                 held: Mapping[str, ReleaseResult] | None = None):
    """``key → scored release`` for these settings (``only``: just these metrics; ``held``:
    releases this rerun already has, scored further without being fetched again). Everything
    that reads this session's state (the upload, its memo) is fetched here, in the script's
    thread, so the returned function may run in a worker thread. The release and its metrics
    are kept apart: scoring it further later (a page's Scores) does not draw it again."""
    od, truth = view(settings), true_counts(settings)
    if not _uploaded(settings.dataset):
        dataset, chosen = settings.dataset, settings.view
        memo = _shared_metrics()
        shared_od, shared_dense = _bundled_view(dataset, chosen), _bundled_dense(dataset, chosen)

        def unscored(spec):
            return _bundled_release(dataset, chosen, spec, k, top_n, shared_od, shared_dense)
        place = (dataset, chosen)
    else:
        releases_memo, memo = _session_memo()["entries"], _session_memo()["metrics"]

        def unscored(spec):
            return releases_memo.get_or_compute(
                ("release", (settings.view, spec, k, top_n)),
                lambda: release.drawn(od, spec, true_counts=truth, k=k, top_n=top_n))
        place = (settings.view,)

    def job(key: str) -> ReleaseResult:
        spec = settings.spec(key)
        result = held[key] if held and key in held else unscored(spec)
        if not result.scorable or only == ():
            return result
        found = memo.get_or_compute((*place, spec, k, top_n, only), lambda: {
            method: output.metrics for method, output in release.scored(
                result, od, true_counts=truth, k=k, top_n=top_n, only=only).outputs.items()})
        return replace(result, outputs=MappingProxyType({
            method: replace(output, metrics=found[method])
            for method, output in result.outputs.items()}))
    return job


def release_of(settings: RunSettings, key: str, k: int = 10, top_n: int = 100,
               only=None) -> ReleaseResult:
    """Mechanism ``key`` released with these settings and scored (cached per seed; ``only``:
    just these metrics, see :func:`dpcore.scoring.metrics.compute`; ``()``: none, unless
    the release is sparse)."""
    return _release_job(settings, k, top_n, only)(key)


#: A rerun's large-domain work (its releases, then its orderings) is done by at most this many
#: reruns of this process at once, first come first served (``$DPCORE_COMPUTE_SLOTS``; unset: no
#: limit). ``scripts/serve --replicas N`` sets cores ÷ N.
_SLOTS = slots.from_environment()


def _threaded(plan: release.Schedule, job) -> dict:
    """``job(key)`` for every key, as :func:`dpcore.release.schedule` planned: each group in
    order in its own thread, large-domain work in this process's compute slots. The workers get
    the script's context, so the caches they use know whose run it is (``job`` itself must not
    read session state)."""
    if not plan.large:
        return {key: job(key) for group in plan.groups for key in group}
    with _SLOTS:
        if len(plan.groups) < 2:
            return {key: job(key) for key in plan.groups[0]}
        context = get_script_run_ctx()
        with ThreadPoolExecutor(2, initializer=lambda: add_script_run_ctx(
                threading.current_thread(), context)) as pool:
            done = pool.map(lambda group: [(key, job(key)) for key in group], plan.groups)
            return dict(pair for group in done for pair in group)


def releases(settings: RunSettings, k: int = 10, top_n: int = 100, only=None,
             held: Mapping[str, ReleaseResult] | None = None) -> dict[str, ReleaseResult]:
    """Every chosen mechanism's release, in the order chosen (run as
    :func:`dpcore.release.schedule` decides within the session's memory budget,
    :mod:`ui.components.budget`; ``only``: as for :func:`release_of`; ``held``: this rerun's
    earlier :func:`releases` with the same settings, scored further from the releases it holds,
    so a busy server's evictions never make a rerun draw a release twice)."""
    keys = list(settings.mechanisms)
    plan = release.schedule(view(settings), keys, {key: settings.spec(key) for key in keys},
                            budget.SESSION_WORK_BYTES)
    found = _threaded(plan, _release_job(settings, k, top_n, only, held))
    return {key: found[key] for key in keys}


@st.cache_resource(max_entries=budget.DENSE_CACHE_ENTRIES * 4)
def _bundled_true_top(dataset: str, view: views.View, cells: int) -> np.ndarray:
    """The top ``cells`` true commutes of a bundled view (every mechanism's ordering starts from
    them: found once, not once per mechanism — 0.2 s each on the national data)."""
    return ranks.top_cells(_bundled_dense(dataset, view), cells)


def _bundled_ordering(dataset: str, view: views.View, spec: release.ReleaseSpec,
                      cells: int, released: np.ndarray, dense, top: np.ndarray) -> pd.DataFrame:
    """``dense``, ``top``: the view's true counts and top ``cells``, fetched once per rerun by
    the caller (as :func:`_bundled_release`)."""
    def compute():
        return ranks.rank_pairs(dense, released, cells, cells=top)

    # A copy: the frame is shared by sessions, and a page may add columns to what it gets.
    return _shared_orderings().get_or_compute((dataset, view, spec, cells), compute).copy()


def _ordering_job(settings: RunSettings, released: Mapping[str, np.ndarray], cells: int):
    """``key →`` the ordering of ``released[key]``, safe in a worker thread (as
    :func:`_release_job`)."""
    if not _uploaded(settings.dataset):
        dataset, chosen = settings.dataset, settings.view   # the lookups in the script's thread
        dense, top = _bundled_dense(dataset, chosen), _bundled_true_top(dataset, chosen, cells)
        return lambda key: _bundled_ordering(dataset, chosen, settings.spec(key), cells,
                                             released[key], dense, top)
    memo, truth = _session_memo()["entries"], true_counts(settings)
    return lambda key: memo.get_or_compute(
        ("ordering", (settings.view, settings.spec(key), cells)),
        lambda: ranks.rank_pairs(truth, released[key], cells))


def orderings(settings: RunSettings, released: Mapping[str, np.ndarray], cells: int
              ) -> dict[str, pd.DataFrame]:
    """True against released ranks of the top ``cells`` true commutes
    (:func:`dpcore.scoring.ranks.rank_pairs`) for each mechanism of ``released`` (key → its
    released vector, as :func:`releases` gave them in this rerun: ranked from the vectors the
    rerun holds, never drawn again because a busy server evicted them meanwhile). Cached like
    the releases; run as :func:`dpcore.release.schedule` decides (ranking a release holds no
    more than a copy of it, so any two may run at once)."""
    keys = list(released)
    found = _threaded(release.schedule(view(settings), keys),
                      _ordering_job(settings, released, cells))
    return {key: found[key] for key in keys}


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

    def jobs(self) -> list[experiment.Job]:
        return experiment.plan([(key, dict(params)) for key, params in self.mechanisms],
                               self.epsilons, postprocess=self.postprocess, trials=self.trials,
                               seed=self.seed, scenarios=self.scenarios)


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


@st.cache_resource
def _shared_store() -> BoundedMemo:
    """Finished sweep jobs on bundled data, shared by every session (bounded in entries)."""
    return BoundedMemo(SWEEP_CACHE_ENTRIES)


def job_store(dataset: str) -> BoundedMemo:
    """Where finished jobs are kept: shared for bundled data, this session's own for an upload
    (other sweeps, such as the heavy-hitter runs, keep theirs here under keys of their own)."""
    return _shared_store() if not _uploaded(dataset) else _session_memo()["sweeps"]


def _execute(spec: SweepSpec, job: experiment.Job, samples: experiment.Subsamples
             ) -> pd.DataFrame:
    """One job through dpcore's pipeline, on its scenario's (cached) matrix."""
    whole = matrix_of(spec.dataset, job.scenario.view)
    matrix, dense = samples.of(whole, true_counts_of(spec.dataset, job.scenario.view), job)
    return experiment.execute(job, matrix, dense, k=spec.k, top_n=spec.top_n)


def _unusable(spec: SweepSpec) -> dict[str, str]:
    """Mechanisms whose parameters cannot be used at some ε of the sweep, with the reason."""
    errors = {}
    for key, params in spec.mechanisms:
        for epsilon in spec.epsilons:
            try:
                release.ReleaseSpec(key, epsilon, params).build()
            except (ValueError, TypeError) as error:
                errors[key] = str(error)
                break
    return errors


def _keys(spec: SweepSpec, job: experiment.Job) -> dict[str, tuple]:
    """Cache key of each post-processing of a job (the scenario's label is for display only:
    equal data share cached releases)."""
    return {m: (spec.dataset, job.scenario.view, job.spec.with_postprocess((m,)), spec.k,
                spec.top_n) for m in job.spec.postprocess}


def sweep(spec: SweepSpec, compute: bool = False, progress=None) -> Sweep:
    """The sweep's finished jobs; with ``compute`` also run the missing ones, in order (on the
    configured Dask scheduler, if any: :func:`scheduler_address`).

    ``progress(done, total)`` is called after each job (a page updates its progress bar there;
    Streamlit stops the script at that call when the user presses Stop, and every job finished
    so far stays cached). Jobs are cached one per post-processing, so a smaller grid, fewer
    trials, another post-processing or a return to the page reuses them.
    """
    store = job_store(spec.dataset)
    frames, done, samples = [], 0, experiment.Subsamples()
    errors = _unusable(spec)
    runnable = tuple(m for m in spec.mechanisms if m[0] not in errors)
    jobs = replace(spec, mechanisms=runnable).jobs() if runnable else []
    address = scheduler_address() if compute else None
    if address and jobs:
        _compute_on_cluster(spec, jobs, store, address, progress)
        compute, progress = False, None
    for job in jobs:
        mechanism = job.spec.mechanism
        keys = _keys(spec, job)
        found = {m: store.get(k) for m, k in keys.items()}
        missing = tuple(m for m, value in found.items() if value is None)
        if missing and compute:
            if mechanism in errors:  # it failed on an earlier job: the same settings fail again
                found.update(dict.fromkeys(missing, errors[mechanism]))
            else:
                try:
                    table = _execute(spec, experiment.Job(job.index, job.scenario,
                                                          job.spec.with_postprocess(missing)),
                                     samples)
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
                errors[mechanism] = value
            else:
                frames.append(value.assign(scenario=job.scenario.label))
        done += 1
        if progress is not None:
            progress(done, len(jobs))
    table = (pd.concat(frames, ignore_index=True) if frames
             else pd.DataFrame(columns=experiment.COLUMNS))
    return Sweep(table, done, len(jobs), errors)


# --------------------------------------------------------------------------- Dask scheduler
#: Environment variable with the Dask scheduler the sweeps run on: ``tcp://host:8786``, or
#: ``local`` for a cluster of this server's cores. Unset: sweeps run in the server process.
SCHEDULER_ENV = "DPCORE_SCHEDULER"


def scheduler_address() -> str | None:
    """The configured scheduler (:data:`SCHEDULER_ENV`, else ``scheduler`` in the ``[dpcore]``
    section of Streamlit's secrets), or None."""
    address = os.environ.get(SCHEDULER_ENV, "").strip()
    if not address and st.secrets.load_if_toml_exists():
        address = str(st.secrets.get("dpcore", {}).get("scheduler", "")).strip()
    return address or None


@st.cache_resource(show_spinner="Connecting to the Dask scheduler…")
def _connection(address: str) -> list:
    # In a list: a Client is awaitable, which st.cache_resource refuses to cache directly.
    from dpcore.evaluation import cluster

    return [cluster.connect(address)]


def client(address: str):
    """One Dask client per server and address (a ``local`` cluster lives as long as the
    server)."""
    return _connection(address)[0]


def _compute_on_cluster(spec: SweepSpec, jobs: list[experiment.Job], store: BoundedMemo,
                        address: str, progress) -> None:
    """Send the jobs with missing post-processings to the cluster and store each as it arrives
    (:func:`dpcore.evaluation.cluster.completed`). Stop interrupts the script at ``progress``; closing the
    stream then cancels the jobs still queued on the cluster."""
    from dpcore.evaluation import cluster

    todo, keys, done = [], {}, 0
    for job in jobs:
        job_keys = _keys(spec, job)
        missing = tuple(m for m, k in job_keys.items() if store.get(k) is None)
        if missing:
            todo.append(experiment.Job(job.index, job.scenario,
                                       job.spec.with_postprocess(missing)))
            keys[job.index] = job_keys
        else:
            done += 1
    od = (st.session_state[state.UPLOADED_MATRIX] if _uploaded(spec.dataset)
          else data.bundled(spec.dataset))
    with contextlib.closing(cluster.completed(client(address), od, todo,
                                              experiment.execute_on_worker, k=spec.k,
                                              top_n=spec.top_n)) as stream:
        for job, rows in stream:
            if isinstance(rows, ValueError):  # a setting this mechanism cannot run with
                found = dict.fromkeys(job.spec.postprocess, str(rows))
            elif isinstance(rows, BaseException):
                raise rows
            else:
                rows = rows.drop(columns="_index")
                found = {m: rows[rows["postprocess"] == m] for m in job.spec.postprocess}
            for method, value in found.items():
                store.put(keys[job.index][method], value)
            done += 1
            if progress is not None:
                progress(done, len(jobs))


def theory(spec: SweepSpec, metric: str) -> pd.DataFrame:
    """Expected RMSE of each mechanism at each ε of the sweep (raw releases), where it exists
    (:func:`dpcore.evaluation.summaries.theory_curves` on the scenarios' cached counts)."""
    truths = {scenario.label: true_counts_of(spec.dataset, scenario.view)
              for scenario in spec.scenarios if scenario.view.n is None}
    return summaries.theory_curves(truths, spec.mechanisms, spec.epsilons, metric)


def repeated_draws(settings: RunSettings, draws: int) -> SweepSpec:
    """Independent releases of every chosen mechanism with these settings (for pass rates)."""
    return SweepSpec(settings.dataset, (Scenario("current", settings.view),),
                     mechanism_specs(settings), (settings.epsilon,), (settings.postprocess,),
                     int(draws), settings.seed)


def scenario_options(settings: RunSettings) -> dict[str, Scenario]:
    """Versions of the current dataset to compare (:func:`dpcore.data.views.comparisons`) that are not
    empty, each labelled with its domain size d and population n."""
    base = matrix_of(settings.dataset, views.View())
    out = {}
    for label, candidate in views.comparisons(base, settings.view):
        try:
            od = matrix_of(settings.dataset, candidate)
        except ValueError:
            continue
        full = f"{label} (d = {od.domain_size:,}, n = {od.n:,})"
        out[full] = Scenario(full, candidate)
    return out
