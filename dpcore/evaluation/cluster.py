"""Experiment jobs on a Dask cluster: a local one on this machine's cores, or an existing one.

The experiment runner's jobs are independent and seeded by their own coordinates
(:func:`dpcore.seeding.generator`), so they can run on any worker in any order and still give the
table the in-process runner gives. This module only moves them (it knows nothing of what a job is; the runner passes the worker
function, so imports flow one way, experiment → cluster): the dataset is scattered to every
worker once (``broadcast=True``), each job is a small task that names it, results stream back in
the order they finish (``as_completed``) so progress and cancellation work. A job whose worker
dies is run again elsewhere by the scheduler (``distributed.scheduler.allowed-failures``), one that
raises is retried (``retries``); either way its result is taken once.

Dask (``dask``, ``distributed``; Rocklin, "Dask: parallel computation with blocked algorithms and
task scheduling", SciPy 2015) is imported only by this module, and this module only when a
scheduler is asked for: the app and the default runner never need it. Workers of a remote cluster
must be able to import :mod:`dpcore` (same version as the client).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from typing import Callable, Iterator

import pandas as pd

from dpcore.data.od import ODMatrix

#: ``--scheduler local``: a cluster of this machine's cores, started for the run.
LOCAL = "local"
#: Runs of one job allowed when it raises (the first, then the retries). A job whose worker dies
#: is rescheduled by Dask itself.
RETRIES = 3
#: How often (s) a stream looks at the cancel event while no job has finished.
_POLL_SECONDS = 0.1
_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://")


def check_scheduler(scheduler: str) -> str:
    """``scheduler`` stripped, or a ValueError saying what a valid one looks like."""
    text = str(scheduler).strip()
    if text == LOCAL or (text.startswith(_SCHEMES) and len(text.split("://", 1)[1]) > 0):
        return text
    raise ValueError(f"the scheduler must be 'local' (a cluster of this machine's cores) or a Dask "
                     f"scheduler address such as tcp://host:8786; got {scheduler!r}")


def connect(scheduler: str, workers: int | None = None):
    """A ``distributed.Client``: to a new LocalCluster (``"local"``: ``workers`` processes, default
    one per core, one thread each — releases are NumPy-bound and hold the GIL between calls) or to
    the scheduler at an address. The caller closes it (closing a local client stops its cluster)."""
    import distributed

    scheduler = check_scheduler(scheduler)
    if scheduler != LOCAL:
        try:
            return distributed.Client(scheduler, timeout=30)
        except OSError as error:
            raise OSError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
    # No address: the client starts a LocalCluster of its own and stops it when closed. Its
    # scheduler's HTTP endpoint moves off 8787 when that is taken, which is fine: no warning.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Port .* is already in use",
                                category=UserWarning)
        return distributed.Client(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                  processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR)


@contextlib.contextmanager
def client_for(scheduler) -> Iterator:
    """A client for ``scheduler``: an address or ``"local"`` (opened and closed here), or a
    ``distributed.Client`` the caller owns (used as it is)."""
    if not isinstance(scheduler, str):
        yield scheduler
        return
    client = connect(scheduler)
    try:
        yield client
    finally:
        client.close()


def completed(client, od: ODMatrix, jobs: list, task: Callable, *, k: int = 10,
              top_n: int = 100, only=None, cancel: threading.Event | None = None,
              retries: int = RETRIES) -> Iterator[tuple[object, object]]:
    """Run ``jobs`` (each with an ``index``) on the cluster as ``task(od, token, job, scoring)``
    (:func:`dpcore.evaluation.experiment.execute_on_worker`); yield ``(job, rows)`` as each
    finishes, where ``rows`` is its part of the tidy table (scored with ``k``, ``top_n``, ``only``)
    or the exception it raised.

    Stops early when ``cancel`` is set; leaving the loop early (break, an exception, cancel)
    cancels the jobs not yet finished, so a stopped sweep does not keep the cluster busy.
    """
    from distributed import as_completed

    if not jobs:
        return
    data = client.scatter(od, broadcast=True, hash=False)
    token = data.key
    scoring = {"k": k, "top_n": top_n, "only": only}
    by_future = {client.submit(task, data, token, job, scoring,
                               key=f"dpcore-job-{token}-{job.index}", retries=retries - 1,
                               pure=False): job
                 for job in jobs}
    stream = as_completed(by_future)
    try:
        while not stream.is_empty():
            if cancel is not None and cancel.is_set():
                return
            batch = stream.next_batch(block=False)
            if not batch:
                time.sleep(_POLL_SECONDS)
                continue
            for future in batch:
                outcome = (future.exception() if future.status == "error"
                           else future.result())
                yield by_future[future], outcome
                by_future.pop(future)
    finally:
        client.cancel(list(by_future) + [data])


def run_jobs(scheduler, od: ODMatrix, jobs: list, task: Callable, scoring: dict,
             finished: Callable[[pd.DataFrame], bool], cancel: threading.Event | None) -> bool:
    """The runner's seam (:func:`dpcore.evaluation.experiment.run` with ``scheduler=``): every job on the
    cluster, ``finished(rows)`` called as each arrives; True if stopped before the end."""
    with client_for(scheduler) as client, contextlib.closing(
            completed(client, od, jobs, task, cancel=cancel, **scoring)) as stream:
        count = 0
        for _job, outcome in stream:
            if isinstance(outcome, BaseException):
                raise outcome
            count += 1
            if not finished(outcome):
                return count < len(jobs)
        return count < len(jobs)
