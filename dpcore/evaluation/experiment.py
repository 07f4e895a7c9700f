"""Experiment runner: data scenarios × mechanisms × ε grid × trials → one tidy table.

A *job* is one :class:`dpcore.release.ReleaseSpec` on one :class:`Scenario`: one release through
:func:`dpcore.release.run`, scored after every requested post-processing. The grid of jobs is
built here and nowhere else (:func:`plan`), trial by trial, so a sweep stopped early has every
curve with fewer trials. Each job's randomness follows the seeding rule of :mod:`dpcore.release`
(seed, mechanism, ε, trial), so the table is the same whatever ``n_jobs`` is, in whatever order jobs
finish, and trial 0 of a sweep is the release the pages and ``python3 -m dpcore release`` make with
the same seed.

Usable from pages (progress callback, cancellation, one job at a time for caching) and scripts::

    table = run(datasets.load("ireland_county"), ["laplace", ("gaussian", {"delta": 1e-8})],
                epsilons=[0.5, 1, 5], postprocess=["base", "norm_sub"], trials=10, seed=1)
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from dpcore import limits, release, seeding
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.limits import RELEASES, TRIALS

#: Columns of the tidy table: a release's rows, then the scenario's label and population size.
COLUMNS = release.TIDY_COLUMNS + ["scenario", "n"]

#: How often (s) a parallel run looks at the cancel event while jobs are running.
_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Scenario:
    """One version of the data a sweep runs on: a labelled :class:`dpcore.data.views.View`."""

    label: str = "all"
    view: views.View = field(default_factory=views.View)
    #: Score this scenario after only these of the run's post-processings (None: all of them).
    postprocess: tuple[str, ...] | None = None

    def methods(self, run_methods: tuple[str, ...]) -> tuple[str, ...]:
        if self.postprocess is None:
            return run_methods
        return tuple(m for m in run_methods if m in self.postprocess)


@dataclass(frozen=True)
class Job:
    """One release to make and score; ``index`` is its position in the fixed job order."""

    index: int
    scenario: Scenario
    spec: release.ReleaseSpec


def _normalise_mechanisms(specs) -> list[tuple[str, dict]]:
    out = []
    for spec in ([specs] if isinstance(specs, str) else specs):
        key, params = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1] or {}))
        if "epsilon" in params:
            raise ValueError(f"give ε through epsilons=…, not in the parameters of {key!r}")
        out.append((key, params))
    if not out:
        raise ValueError("choose at least one mechanism")
    return out


def plan(mechanism_specs, epsilons: Iterable[float], *, postprocess: Iterable[str] = ("base",),
         trials: int = 1, seed: int = 0, scenarios: Iterable[Scenario] = (Scenario(),),
         first_trial: int = 0) -> list[Job]:
    """The jobs of a run in their fixed order: trial, then scenario, mechanism and ε (trials
    ``first_trial`` to ``trials`` − 1: a trial's draws depend on its number, not on how many
    trials run, so a run can be continued).

    Every mechanism is built once per ε here, so invalid parameters fail before anything runs,
    with the mechanism's own message (parameter, valid range, value received).
    """
    specs = _normalise_mechanisms(mechanism_specs)
    epsilons = [float(e) for e in epsilons]
    scenarios = tuple(scenarios)
    methods = tuple(postprocess)
    if not epsilons:
        raise ValueError("choose at least one ε")
    if not scenarios:
        raise ValueError("choose at least one version of the data")
    trials = TRIALS.check(trials, "a run")
    grid = [release.ReleaseSpec(key, epsilon, params, methods, seed, 0)
            for key, params in specs for epsilon in epsilons]
    first_trial = min(max(int(first_trial), 0), int(trials))
    total = (trials - first_trial) * len(scenarios) * len(grid)
    if not RELEASES.contains(total):
        raise ValueError(f"This run asks for {total:,} releases ({trials:,} trials × "
                         f"{len(scenarios)} version(s) of the data × {len(specs)} mechanism(s) × "
                         f"{len(epsilons)} ε); at most {RELEASES.high:,} fit in one run. "
                         f"{RELEASES.why}")
    for spec in grid:
        spec.build()
    return [Job(index, scenario, release.ReleaseSpec(
                spec.mechanism, spec.epsilon, spec.params, scenario.methods(methods), seed, trial))
            for index, (trial, scenario, spec) in enumerate(
                (t, s, g) for t in range(first_trial, int(trials)) for s in scenarios
                for g in grid)]


def subsampled(matrix: ODMatrix, view: views.View, seed: int, trial: int) -> ODMatrix:
    """``matrix`` (the view before subsampling) with ``view.n`` commuters drawn for this trial,
    from the seeding rule's ``"subsample"`` stream; ``matrix`` itself when no subsample is asked."""
    if view.n is None or view.n >= matrix.n:
        return matrix
    rng = seeding.generator(seed, "subsample", view.level, *view.areas, int(view.n), trial)
    return views.subsample(matrix, view.n, rng)


def execute(job: Job, matrix: ODMatrix, true_counts: np.ndarray | None = None, *, k: int = 10,
            top_n: int = 100, only=None) -> pd.DataFrame:
    """Run one job on its scenario's matrix; its rows of the tidy table (:data:`COLUMNS`), for
    every metric or ``only`` those."""
    table = release.run(matrix, job.spec, true_counts=true_counts, k=k, top_n=top_n,
                        only=only).tidy()
    return table.assign(scenario=job.scenario.label, n=matrix.n)


def _truth(matrix: ODMatrix):
    """The matrix's true counts (:func:`dpcore.release.true_values`), read-only when dense: every
    job of a trial shares them, and the metrics keep what they derive from a truth vector that
    cannot change (its observed cells) for the next release scored against it."""
    truth = release.true_values(matrix)
    if isinstance(truth, np.ndarray):
        truth.flags.writeable = False
    return truth


class Subsamples:
    """The subsample of the trial being run, with its dense counts, shared by that trial's jobs.

    Jobs run trial by trial (:func:`plan`), so one subsample is kept at a time."""

    def __init__(self):
        self.key, self.value = None, None

    def of(self, whole: ODMatrix, dense: np.ndarray, job: Job) -> tuple[ODMatrix, np.ndarray]:
        """``whole`` (the view before subsampling, and its counts) at the job's population."""
        view = job.scenario.view
        if view.n is None or view.n >= whole.n:
            return whole, dense
        key = (view, job.spec.seed, job.spec.trial)
        if key != self.key:
            matrix = subsampled(whole, view, job.spec.seed, job.spec.trial)
            self.key, self.value = key, (matrix, _truth(matrix))
        return self.value


class _Data:
    """The matrices a run's jobs need, made once each: views of the dataset, subsamples per
    trial, and their dense counts (a worker process keeps its own)."""

    def __init__(self, od: ODMatrix):
        self.od, self.views, self.samples = od, {}, Subsamples()

    def whole(self, view: views.View) -> tuple[ODMatrix, np.ndarray]:
        """The view before subsampling, and its dense counts."""
        if view.whole not in self.views:
            matrix = views.select(self.od, view.whole)
            self.views[view.whole] = (matrix, _truth(matrix))
        return self.views[view.whole]

    def matrix(self, job: Job) -> tuple[ODMatrix, np.ndarray]:
        return self.samples.of(*self.whole(job.scenario.view), job)

    def execute(self, job: Job, scoring: dict) -> pd.DataFrame:
        """The job's rows; ``scoring`` holds :func:`execute`'s ``k``, ``top_n`` and ``only``."""
        matrix, dense = self.matrix(job)
        return execute(job, matrix, dense, **scoring).assign(_index=job.index)


def _check(jobs: list[Job], data: _Data) -> None:
    """Every (mechanism, parameters, ε, post-processing) checked on the data before any run."""
    seen = set()
    for job in jobs:
        key = (job.spec.mechanism, job.spec.params, job.spec.epsilon, job.scenario.view.whole)
        if key not in seen:
            seen.add(key)
            release.check(job.spec, data.whole(job.scenario.view)[0])


def run(od: ODMatrix, mechanism_specs, epsilons: Iterable[float], *,
        postprocess: Iterable[str] = ("base",), trials: int = 1, seed: int = 0, n_jobs: int = 1,
        k: int = 10, top_n: int = 100, metrics: Iterable[str] | None = None,
        scenarios: Iterable[Scenario] = (Scenario(),),
        progress: Callable[[int, int], bool | None] | None = None,
        cancel: threading.Event | None = None, scheduler=None, first_trial: int = 0
        ) -> pd.DataFrame:
    """Run every job and return the tidy table (:data:`COLUMNS`), in the fixed job order.

    Parameters
    ----------
    od : ODMatrix
        The dataset (each scenario's view of it must fit in memory as a dense vector).
    mechanism_specs : str or sequence of str or (key, params dict)
        Mechanisms and their parameters other than ε, e.g. ``("gaussian", {"delta": 1e-8})``.
    epsilons : iterable of float
        The ε grid.
    postprocess : iterable of str
        Keys of :data:`dpcore.mechanisms.postprocess.METHODS`; each release is scored after each of them.
    trials, seed : int
        Repetitions per (scenario, mechanism, ε), and the seed of the seeding rule.
    first_trial : int
        Run trials ``first_trial`` … ``trials`` − 1 only (continuing a run that ran the
        earlier ones: each trial's draws are the same however many run).
    n_jobs : int
        Worker processes; 1 runs in this process, ``-1`` uses every core (never more than the
        cores: :func:`dpcore.limits.workers`).
    scheduler : str or distributed.Client, optional
        Run on Dask instead (:mod:`dpcore.evaluation.cluster`): ``"local"`` (a LocalCluster of this
        machine's cores), a scheduler address (``tcp://host:8786``) or a client; ``n_jobs`` is
        then ignored. The table is the same as without it.
    k, top_n : int
        Passed to :func:`dpcore.scoring.metrics.compute`.
    metrics : iterable of str, optional
        Score only these metrics (default: all); the cell-error ones alone are much cheaper
        (:data:`dpcore.scoring.metrics.CELL_ERRORS`).
    scenarios : iterable of Scenario
        Versions of the data (level, areas, population size); default: the whole dataset.
    progress : callable(done, total), optional
        Called after each job; returning False cancels the run.
    cancel : threading.Event, optional
        Set it (e.g. from another thread) to cancel the run.

    Returns
    -------
    pandas.DataFrame
        One row per (job, post-processing, metric); ``seconds`` is the job's release time (jobs
        running side by side share the cores). ``attrs`` holds ``jobs_done``, ``jobs_total`` and
        ``cancelled``; a cancelled run returns the jobs finished so far.
    """
    jobs = plan(mechanism_specs, epsilons, postprocess=postprocess, trials=trials, seed=seed,
                scenarios=scenarios, first_trial=first_trial)
    data = _Data(od)
    _check(jobs, data)
    scoring = {"k": k, "top_n": top_n, "only": None if metrics is None else tuple(metrics)}
    workers = min(limits.workers(n_jobs, "n_jobs")[0], len(jobs))

    results: list[pd.DataFrame] = []
    cancelled = False

    def finished(rows) -> bool:
        """Record one job; False when the caller wants to stop."""
        results.append(rows)
        wants_more = progress(len(results), len(jobs)) if progress is not None else None
        return wants_more is not False and not (cancel is not None and cancel.is_set())

    if cancel is not None and cancel.is_set():
        cancelled = True
    elif scheduler is not None:
        from dpcore.evaluation import cluster  # Dask only when asked for

        cancelled = cluster.run_jobs(scheduler, od, jobs, execute_on_worker, scoring, finished,
                                     cancel)
    elif workers == 1:
        for job in jobs:
            if not finished(data.execute(job, scoring)):
                cancelled = len(results) < len(jobs)
                break
    else:
        cancelled = _run_in_pool(od, jobs, workers, scoring, finished, cancel)

    table = (pd.concat(results, ignore_index=True).sort_values("_index", kind="stable")
             if results else pd.DataFrame(columns=COLUMNS + ["_index"]))
    table = table.drop(columns="_index").reset_index(drop=True)[COLUMNS]
    table.attrs.update(jobs_done=len(results), jobs_total=len(jobs), cancelled=cancelled)
    return table


# A worker process keeps the data it was given (sent once, not with every job) and the views and
# dense counts made from it, under the token of the run that sent it (the latest run only).
_worker_data: dict[str, _Data] = {}


def _init_worker(od: ODMatrix) -> None:
    _worker_data.clear()
    _worker_data["pool"] = _Data(od)


def _execute_in_worker(job: Job, scoring: dict) -> pd.DataFrame:
    return _worker_data["pool"].execute(job, scoring)


def execute_on_worker(od: ODMatrix, token: str, job: Job, scoring: dict) -> pd.DataFrame:
    """A job on a Dask worker: ``od`` is the run's scattered dataset, ``token`` names it."""
    data = _worker_data.get(token)
    if data is None:
        _worker_data.clear()
        data = _worker_data[token] = _Data(od)
    return data.execute(job, scoring)


def _run_in_pool(od: ODMatrix, jobs, workers, scoring, finished, cancel) -> bool:
    """Run jobs in worker processes; True if the run was cancelled before the end."""
    # forkserver: safe to start from a multi-threaded process (the Streamlit server), and the
    # preloaded server forks workers with dpcore already imported. Workers get the sparse matrix
    # once and densify it themselves.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["dpcore.evaluation.experiment"])
    pool = futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                       initializer=_init_worker, initargs=(od,))
    try:
        pending = {pool.submit(_execute_in_worker, job, scoring) for job in jobs}
        while pending:
            done, pending = futures.wait(pending, timeout=_POLL_SECONDS,
                                         return_when=futures.FIRST_COMPLETED)
            stop = cancel is not None and cancel.is_set()
            for future in done:
                stop = not finished(future.result()) or stop
            if stop and pending:
                return True
        return False
    finally:
        # On cancel or error, queued jobs are dropped; running ones finish and are discarded.
        pool.shutdown(wait=True, cancel_futures=True)
