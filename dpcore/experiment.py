"""Experiment runner: dataset × mechanisms × ε grid × post-processing × trials → one tidy table.

A *job* is one (mechanism, parameters, ε, trial): one fast release, then every requested
post-processing of it and the metrics of each. Jobs are independent, so they run in parallel across
processes (``n_jobs``); each job draws from its own generator, spawned from ``SeedSequence(seed)`` in
the fixed job order (mechanism, then ε, then trial), so the table is the same whatever ``n_jobs`` is
and in whatever order the jobs finish.

Usable from pages (a progress callback and cancellation) and from scripts::

    table = run(datasets.load("ireland_county"), ["laplace", ("gaussian", {"delta": 1e-8})],
                epsilons=[0.5, 1, 5], postprocess=["base", "norm_sub"], trials=10, seed=1)
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from dpcore import mechanisms, metrics, postprocess as post
from dpcore.od import ODMatrix

COLUMNS = ["mechanism", "params", "epsilon", "postprocess", "trial", "metric", "value", "seconds"]

#: How often (s) a parallel run looks at the cancel event while jobs are running.
_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Job:
    """One release to make and score; ``index`` is its position in the fixed job order."""

    index: int
    mechanism: str
    params: tuple[tuple[str, object], ...]
    epsilon: float
    trial: int
    seed: np.random.SeedSequence

    @property
    def params_label(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.params)


@dataclass(frozen=True)
class _Context:
    """What every job reads: the true matrix, its dense counts and the scoring settings."""

    od: ODMatrix
    true_counts: np.ndarray
    postprocess: tuple[str, ...]
    k: int
    top_n: int


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


def plan(mechanism_specs, epsilons: Iterable[float], trials: int = 1, seed: int = 0) -> list[Job]:
    """The jobs of a run in their fixed order, each with its own spawned seed.

    Every mechanism is built once per ε here, so invalid parameters fail before anything runs,
    with the mechanism's own message (parameter, valid range, value received).
    """
    specs = _normalise_mechanisms(mechanism_specs)
    epsilons = [float(e) for e in epsilons]
    if not epsilons:
        raise ValueError("choose at least one ε")
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"trials must be a whole number ≥ 1; got {trials!r}")
    grid = []
    for key, params in specs:
        cls = mechanisms.get(key)
        declared = {p.name for p in cls.params}
        unknown = set(params) - declared
        if unknown:
            raise ValueError(f"{cls.name} [{key}] has no parameter(s) {sorted(unknown)}; its "
                             f"parameters are {sorted(declared)}")
        for epsilon in epsilons:
            mechanisms.build(key, epsilon=epsilon, **params)
            grid += [(key, tuple(sorted(params.items())), epsilon, trial)
                     for trial in range(int(trials))]
    seeds = np.random.SeedSequence(seed).spawn(len(grid))
    return [Job(i, key, params, epsilon, trial, s)
            for i, ((key, params, epsilon, trial), s) in enumerate(zip(grid, seeds))]


def _execute(context: _Context, job: Job) -> list[tuple]:
    """Release once, then post-process and score: one row per (post-processing, metric)."""
    mechanism = mechanisms.build(job.mechanism, epsilon=job.epsilon, **dict(job.params))
    rng = np.random.default_rng(job.seed)
    n = context.od.n
    started = time.perf_counter()
    raw = mechanism.release(context.true_counts, rng)
    seconds = time.perf_counter() - started
    variance = (post.zero_cell_variance(mechanism, n, context.od.domain_size)
                if "base_cut" in context.postprocess else None)
    rows = []
    for method in context.postprocess:
        released = post.apply(method, raw, n, variance)
        values = metrics.compute(context.true_counts, released, context.od, context.k,
                                 context.top_n, raw=raw if method == "post_pos" else None)
        rows += [(job.index, job.mechanism, job.params_label, job.epsilon, method, job.trial,
                  name, value, seconds) for name, value in values.items()]
    return rows


# A worker process keeps the context it was given at start-up (sent once, not with every job).
_worker_context: _Context | None = None


def _init_worker(od: ODMatrix, methods: tuple[str, ...], k: int, top_n: int) -> None:
    global _worker_context
    _worker_context = _Context(od, od.to_dense(), methods, k, top_n)


def _execute_in_worker(job: Job) -> list[tuple]:
    return _execute(_worker_context, job)


def _check_postprocess(methods, jobs: list[Job], od: ODMatrix) -> tuple[str, ...]:
    methods = tuple(methods)
    if not methods:
        raise ValueError("choose at least one post-processing method (e.g. 'base')")
    unknown = [m for m in methods if m not in post.METHODS]
    if unknown:
        raise ValueError(f"unknown post-processing {unknown}; valid keys: {', '.join(post.METHODS)}")
    if "base_cut" in methods:
        configurations = {(job.mechanism, job.params, job.epsilon) for job in jobs}
        for key, params, epsilon in sorted(configurations, key=str):
            mechanism = mechanisms.build(key, epsilon=epsilon, **dict(params))
            if post.zero_cell_variance(mechanism, od.n, od.domain_size) is None:
                raise ValueError(f"Base-Cut needs a closed-form noise variance, which "
                                 f"{mechanism.name} [{key}] does not have; leave "
                                 f"base_cut out for it")
    return methods


def run(od: ODMatrix, mechanism_specs, epsilons: Iterable[float], *,
        postprocess: Iterable[str] = ("base",), trials: int = 1, seed: int = 0, n_jobs: int = 1,
        k: int = 10, top_n: int = 100,
        progress: Callable[[int, int], bool | None] | None = None,
        cancel: threading.Event | None = None) -> pd.DataFrame:
    """Run every job and return the tidy table (:data:`COLUMNS`), in the fixed job order.

    Parameters
    ----------
    od : ODMatrix
        The true matrix (its dense form must fit in memory).
    mechanism_specs : str or sequence of str or (key, params dict)
        Mechanisms and their parameters other than ε, e.g. ``("gaussian", {"delta": 1e-8})``.
    epsilons : iterable of float
        The ε grid.
    postprocess : iterable of str
        Keys of :data:`dpcore.postprocess.METHODS`; each release is scored after each of them.
    trials, seed : int
        Repetitions per (mechanism, ε), and the seed all job generators are spawned from.
    n_jobs : int
        Worker processes; 1 runs in this process, ``-1`` uses every core.
    k, top_n : int
        Passed to :func:`dpcore.metrics.compute`.
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
    jobs = plan(mechanism_specs, epsilons, trials, seed)
    context = _Context(od, od.to_dense(), _check_postprocess(postprocess, jobs, od), k, top_n)
    workers = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    if workers < 1:
        raise ValueError(f"n_jobs must be ≥ 1 or -1 (every core); got {n_jobs!r}")
    workers = min(workers, len(jobs))

    results: list[list[tuple]] = []
    cancelled = False

    def finished(rows) -> bool:
        """Record one job; False when the caller wants to stop."""
        results.append(rows)
        wants_more = progress(len(results), len(jobs)) if progress is not None else None
        return wants_more is not False and not (cancel is not None and cancel.is_set())

    if cancel is not None and cancel.is_set():
        cancelled = True
    elif workers == 1:
        for job in jobs:
            if not finished(_execute(context, job)):
                cancelled = len(results) < len(jobs)
                break
    else:
        cancelled = _run_in_pool(context, jobs, workers, finished, cancel)

    rows = sorted((row for job_rows in results for row in job_rows), key=lambda row: row[0])
    table = pd.DataFrame([row[1:] for row in rows], columns=COLUMNS)
    table.attrs.update(jobs_done=len(results), jobs_total=len(jobs), cancelled=cancelled)
    return table


def _run_in_pool(context: _Context, jobs, workers, finished, cancel) -> bool:
    """Run jobs in worker processes; True if the run was cancelled before the end."""
    # forkserver: safe to start from a multi-threaded process (the Streamlit server), and the
    # preloaded server forks workers with dpcore already imported. Workers get the sparse matrix
    # once and densify it themselves.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["dpcore.experiment"])
    pool = futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker,
        initargs=(context.od, context.postprocess, context.k, context.top_n))
    try:
        pending = {pool.submit(_execute_in_worker, job) for job in jobs}
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
