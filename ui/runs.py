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

import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import streamlit as st

from dpcore import experiment, explore, metrics, postprocess
from dpcore.od import ODMatrix
from ui import data, state
from ui.controls import LEVEL_PARENT, RunSettings

#: Single releases kept per server (bundled data). At ED level each holds a 78 MB vector.
RELEASE_CACHE_ENTRIES = 24
#: Sweep chunks (one mechanism × one ε) kept per server.
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
    metrics: dict = field(default_factory=dict)
    seconds: float = float("nan")
    postprocess_seconds: float = float("nan")
    bits_per_user: float | None = None
    error: str | None = None

    @property
    def checks(self) -> list[metrics.PlannerCheck]:
        return metrics.planner_checks(self.metrics) if self.metrics else []


# ------------------------------------------------------------------------------------ plumbing
def _uploaded(settings: RunSettings) -> bool:
    return settings.dataset == state.UPLOADED


def _memo(name: str, key: tuple, compute):
    """Session-only memo for uploaded data: the last few results, in this session alone."""
    upload = st.session_state.get(state.UPLOADED_MATRIX)
    memo = st.session_state.setdefault(_MEMO, {"upload": None, "entries": OrderedDict()})
    if memo["upload"] is not upload:  # a new upload: forget everything about the old one
        memo["upload"], memo["entries"] = upload, OrderedDict()
    entries = memo["entries"]
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
    if not _uploaded(settings):
        return _bundled_view(settings.dataset, settings.level, settings.areas)
    upload = st.session_state[state.UPLOADED_MATRIX]
    return _memo("view", (settings.level, settings.areas),
                 lambda: explore.view(upload, settings.level == LEVEL_PARENT, settings.areas))


@st.cache_resource(max_entries=8)
def _bundled_dense(dataset: str, level: str, areas: tuple[str, ...]) -> np.ndarray:
    dense = _bundled_view(dataset, level, areas).to_dense()
    dense.flags.writeable = False
    return dense


def true_counts(settings: RunSettings) -> np.ndarray:
    """Dense true counts of the view (read-only)."""
    if not _uploaded(settings):
        return _bundled_dense(settings.dataset, settings.level, settings.areas)
    return _memo("dense", (settings.level, settings.areas), lambda: view(settings).to_dense())


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
    return Release(key, released, values, seconds, post_seconds,
                   mechanism.bits_per_user(od.domain_size))


@st.cache_data(max_entries=RELEASE_CACHE_ENTRIES, show_spinner=False)
def _bundled_release(settings: RunSettings, key: str, k: int, top_n: int) -> Release:
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
    return _memo("release", (single, key, k, top_n),
                 lambda: _release(view(settings), true_counts(settings), single, key, k, top_n))


def releases(settings: RunSettings, k: int = 10, top_n: int = 100) -> dict[str, Release]:
    """Every chosen mechanism's release, in the order chosen."""
    return {key: release(settings, key, k, top_n) for key in settings.mechanisms}
