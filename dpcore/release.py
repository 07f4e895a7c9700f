"""The release pipeline: settings in, one release out — released, post-processed and scored.

Every page, download, sweep and command that makes a release goes through :func:`run`, so the same
settings and seed give the same numbers everywhere (the Explore page, a sweep's trial 0, the Flow
map, ``python3 -m dpcore release`` and ``python3 -m dpcore sweep --trials 1``).

**What makes a release reproducible** is a :class:`ReleaseSpec` and the matrix it is made of:
the mechanism key, ε, the mechanism's other parameters (δ, neighbouring relation, its own options),
the post-processing, the seed and the trial number. The matrix is the dataset at the chosen
:class:`dpcore.data.views.View` (level, areas, population size).

**The seeding rule** (:mod:`dpcore.seeding`, the only place in the product where a seed becomes
random numbers): a release draws from the purpose ``"release"`` at the coordinates (mechanism key,
ε, trial), with ε as 0 for the baselines (which ignore it); so a mechanism's noise depends only on
the seed, its key, ε and the trial.

**Sparse releases** (:func:`sparse_route`). A matrix too large for a dense vector
(:attr:`ODMatrix.fits_dense` false, e.g. a whole US state or the nation at tract level) is released
by :mod:`dpcore.mechanisms.sparse_release` in O(non-zero cells + k), from the same random stream,
and published as a :class:`dpcore.mechanisms.sparse_vector.SparseVector`; :func:`true_values` gives
the truth in the matching form. A matrix that fits is released sparsely too when that is exact for
the mechanism (its sparse release has the dense one's distribution: ``sparse_release.EXACT``),
every post-processing asked acts cell by cell, and it is faster: the domain has at least
:data:`SPARSE_FROM_CELLS` cells and the sparse path's work (non-zero cells, plus n for GRR) is at
most :data:`SPARSE_MAX_WORK` of them (measured by ``bench/bench_routing.py``, release and scores:
at 10⁶–4·10⁶ cells the sparse path is 1.6–80× faster inside that bound, GRR slower outside it; at
ED level, 9.8 M cells and 3 % non-zero, 3× for GRR and 18–60× for the others). The rule depends on
the data's shape and the settings only, never on a clock, so every page, download and command
routes a release the same way and a seed gives the same numbers everywhere. What a sparse release
leaves out: metrics that need every cell's position (trip lengths, trip ends, sectors,
self-containment) are NaN, and views that need every cell (heat map, zone totals, roll-ups of the
release) are not offered for it; a caller that needs the full vector passes ``sparse=False``. The
views read either form through :mod:`dpcore.scoring.ranks` and :mod:`dpcore.evaluation.flows`,
so a page does not ask which path ran. Mechanisms and post-processings the sparse path cannot
release come back as the release's ``error``, with the reason.

Post-processing needs two things beyond the estimates, both handled here and nowhere else:
the significance cut needs the noise variance of an empty cell (public: it depends on ε, n and d only), and
Post-Pos answers aggregate queries from the raw estimates, so its metrics see the raw release too.
"""

from __future__ import annotations

import functools
import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from dpcore import mechanisms
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.mechanisms import postprocess, sparse_release
from dpcore.mechanisms.sparse_vector import SparseVector
from dpcore.scoring import metrics, sparse_metrics
from dpcore.scoring.ranks import PRESENT_AT
from dpcore.seeding import generator

#: Columns of the tidy table a scored release contributes to (one row per post-processing and
#: metric): the experiment runner's table and the command line's sweep file.
TIDY_COLUMNS = ["mechanism", "params", "epsilon", "postprocess", "trial", "metric", "value",
                "seconds"]
#: Released top cells a sparse release names (the flow map draws up to 1,000 of them).
SPARSE_TOP = 1_000
#: A domain that fits densely is released sparsely (when exact) from this many cells: below it a
#: dense release and all its metrics take well under a second (bench/bench_routing.py).
SPARSE_FROM_CELLS = 1_000_000
#: …and when its work is at most this share of the cells: the sparse path's cost grows with the
#: non-zero cells (GRR's also with n, its uniform reports thrown one by one), the dense path's
#: with all the cells.
SPARSE_MAX_WORK = 1 / 3


# -------------------------------------------------------------------------------------- seeding
def fresh_seed() -> int:
    """A seed from the operating system's entropy (printed, so the release can be repeated)."""
    return int(np.random.SeedSequence().entropy % 2**32)


# ------------------------------------------------------------------------------------- settings
def _with_defaults(key: str, params) -> dict:
    """Every declared parameter other than ε, defaults filled in: one spec, one way to write it
    (so equal releases have equal specs, and every table states the full settings)."""
    given = dict(params.items() if isinstance(params, Mapping) else params)
    try:
        declared = mechanisms.get(key).params
    except KeyError:  # an unknown mechanism: building the spec says so
        return given
    return {**{p.name: p.default for p in declared if p.name != "epsilon"}, **given}


def _frozen_params(params) -> tuple[tuple[str, object], ...]:
    items = params.items() if isinstance(params, Mapping) else params
    return tuple(sorted((str(name), value) for name, value in items))


@dataclass(frozen=True)
class ReleaseSpec:
    """Everything that determines one release of a given matrix (hashable: a cache key).

    ``params`` are the mechanism's parameters other than ε (δ, neighbours, its own options) as
    sorted ``(name, value)`` pairs, declared defaults filled in; unknown names are an error when
    the mechanism is built.
    ``postprocess`` lists the post-processings to score the release after (the first is the one
    shown as "the" release).
    """

    mechanism: str
    epsilon: float
    params: tuple[tuple[str, object], ...] = ()
    postprocess: tuple[str, ...] = ("base",)
    seed: int = 0
    trial: int = 0

    def __post_init__(self):
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "params", _frozen_params(_with_defaults(self.mechanism,
                                                                        self.params)))
        methods = ((self.postprocess,) if isinstance(self.postprocess, str)
                   else tuple(self.postprocess))
        object.__setattr__(self, "postprocess", methods)

    @property
    def params_label(self) -> str:
        """``delta=1e-06, neighbours=substitution``: the parameters as one readable string."""
        return ", ".join(f"{name}={value}" for name, value in self.params)

    def build(self) -> mechanisms.Mechanism:
        """The mechanism (ValueError/TypeError name a bad or unknown parameter)."""
        if "epsilon" in dict(self.params):
            raise ValueError(f"give ε as the release's epsilon, not among the parameters of "
                             f"{self.mechanism!r}")
        return mechanisms.build(self.mechanism, epsilon=self.epsilon, **dict(self.params))

    def generator(self) -> np.random.Generator:
        # A baseline ignores ε, so its draws do too: one draw per trial, flat across an ε grid.
        epsilon = self.epsilon if mechanisms.get(self.mechanism).uses_epsilon else 0.0
        return generator(self.seed, "release", self.mechanism, epsilon, self.trial)

    def with_postprocess(self, methods) -> ReleaseSpec:
        return replace(self, postprocess=methods)


#: Parameters every mechanism that has them shares on a page (one ε, δ and neighbouring relation
#: for all the mechanisms compared); the others are each mechanism's own.
SHARED_PARAMS = ("epsilon", "delta", "neighbours")


@dataclass(frozen=True)
class RunSettings:
    """What a page's run controls choose: the data, several mechanisms and one set of shared
    parameters (hashable: a cache key; plain data: it goes into URLs and onto the command line).

    ``areas`` restricts the data to zones in these areas (see :class:`dpcore.data.views.View`).
    ``options`` holds each mechanism's own parameters as ``((key, ((name, value), …)), …)``.
    ``spec(key)`` is the release of one of them.
    """

    dataset: str
    level: str
    areas: tuple[str, ...]
    mechanisms: tuple[str, ...]
    epsilon: float
    delta: float
    neighbours: str
    options: tuple[tuple[str, tuple[tuple[str, object], ...]], ...]
    postprocess: str
    seed: int

    @property
    def view(self) -> views.View:
        return views.View(self.level, self.areas)

    def own_params(self, key: str) -> dict:
        """Parameters of mechanism ``key`` other than ε: the shared δ and neighbouring relation
        where it declares them, and its own options."""
        shared = mechanisms.declared(key, {"delta": self.delta, "neighbours": self.neighbours})
        return {**shared, **dict(dict(self.options).get(key, ()))}

    def spec(self, key: str, trial: int = 0) -> ReleaseSpec:
        """Mechanism ``key``'s release with these settings."""
        return ReleaseSpec(key, self.epsilon, self.own_params(key), (self.postprocess,),
                           self.seed, trial)

    def command(self, key: str, source: str | None = None, out: str = "release.csv") -> str:
        """The command line that makes the same release; ``source`` replaces ``--dataset KEY``
        (e.g. ``--file flows.csv`` for an uploaded file)."""
        spec = self.spec(key)
        parts = ["python3 -m dpcore release", source or f"--dataset {self.dataset}"]
        if self.level == views.LEVEL_PARENT:
            parts.append("--roll-up")
        parts += [f"--area {shlex.quote(area)}" for area in self.areas]
        parts += [f"--mechanism {key}", f"--epsilon {spec.epsilon!r}"]
        parts += [f"--delta {value!r}" if name == "delta" else f"--param {name}={value}"
                  for name, value in spec.params]
        parts += [f"--postprocess {self.postprocess}", f"--seed {self.seed}", f"--out {out}"]
        return " ".join(parts)


def check(spec: ReleaseSpec, od: ODMatrix) -> mechanisms.Mechanism:
    """Build the mechanism and check the post-processings against it, before anything runs."""
    if not spec.postprocess:
        raise ValueError("choose at least one post-processing method (e.g. 'base')")
    unknown = [m for m in spec.postprocess if m not in postprocess.METHODS]
    if unknown:
        raise ValueError(f"unknown post-processing {unknown}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    mechanism = spec.build()
    if postprocess.NEEDS_VARIANCE.intersection(spec.postprocess):
        _empty_cell_variance(mechanism, spec, od)
    if hasattr(mechanism, "for_destinations"):     # synthesizes per destination (column)
        mechanism = mechanism.for_destinations(od.n_destinations, od.origins.parent,
                                               od.destinations.parent)
    return mechanism


@functools.lru_cache(maxsize=256)
def _zero_cell_variance(key: str, epsilon: float, params: tuple, n: int, d: int) -> float | None:
    # Var* depends only on the mechanism's settings, n and d, never on the data or the seed:
    # made once per sweep point, not per trial (at ED level each is a pass over 9.8 M cells).
    return postprocess.zero_cell_variance(ReleaseSpec(key, epsilon, params).build(), n, d)


def _empty_cell_variance(mechanism: mechanisms.Mechanism, spec: ReleaseSpec,
                         od: ODMatrix) -> float:
    variance = _zero_cell_variance(spec.mechanism, spec.epsilon, spec.params, od.n,
                                   od.domain_size)
    if variance is None:
        raise ValueError(f"The significance cut needs a closed-form noise variance, which "
                         f"{mechanism.name} [{mechanism.key}] does not have; choose another "
                         f"post-processing for it")
    return variance


# -------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Scored:
    """One post-processing of a release: the published vector (read-only; a
    :class:`SparseVector` over a huge domain) and its metrics."""

    released: np.ndarray | SparseVector
    metrics: Mapping[str, float]
    seconds: float


@dataclass(frozen=True)
class ReleaseResult:
    """A release made with ``spec``: the raw estimates (None when not kept: :func:`run`'s
    ``keep_raw``) and each post-processing, scored.

    ``error`` replaces everything else when a setting the user chose cannot be used (a
    parameter out of range, the significance cut for a mechanism without a closed-form variance): see
    :func:`attempt`. ``approximation`` says what is not exact in distribution, where something
    is (a sparse release's, :attr:`dpcore.mechanisms.sparse_release.SparseRelease.approximation`).
    """

    spec: ReleaseSpec
    raw: np.ndarray | SparseVector | None = None
    outputs: Mapping[str, Scored] = field(default_factory=dict)
    seconds: float = float("nan")
    bits_per_user: float | None = None
    error: str | None = None
    approximation: str | None = None

    @property
    def sparse(self) -> bool:
        """Whether the release is a :class:`SparseVector` (:func:`sparse_route`)."""
        return isinstance(self.raw, SparseVector)

    @property
    def scorable(self) -> bool:
        """Whether :func:`scored` scores it (a dense release; not an ``error``)."""
        return not (self.error or self.sparse)

    @property
    def mechanism(self) -> str:
        return self.spec.mechanism

    @property
    def first(self) -> Scored | None:
        return self.outputs.get(self.spec.postprocess[0]) if self.outputs else None

    @property
    def released(self) -> np.ndarray | None:
        """The release after the first post-processing: what the pages show and download."""
        return None if self.first is None else self.first.released

    @property
    def metrics(self) -> Mapping[str, float]:
        return {} if self.first is None else self.first.metrics

    @property
    def postprocess_seconds(self) -> float:
        return float("nan") if self.first is None else self.first.seconds

    @property
    def checks(self) -> list[metrics.PlannerCheck]:
        return metrics.planner_checks(dict(self.metrics)) if self.metrics else []

    def tidy(self) -> pd.DataFrame:
        """One row per (post-processing, metric), columns :data:`TIDY_COLUMNS`."""
        rows = [(self.spec.mechanism, self.spec.params_label, self.spec.epsilon, method,
                 self.spec.trial, name, value, self.seconds)
                for method, scored in self.outputs.items()
                for name, value in scored.metrics.items()]
        return pd.DataFrame(rows, columns=TIDY_COLUMNS)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def true_values(od: ODMatrix) -> np.ndarray | SparseVector:
    """The true counts a release is compared with: dense when the domain fits, else sparse."""
    return od.to_dense() if od.fits_dense else SparseVector.counts(od)


def sparse_route(od: ODMatrix, spec: ReleaseSpec) -> bool:
    """Whether :func:`run` releases ``od`` by the sparse path (the rule in the module docstring)."""
    if not od.fits_dense:
        return True
    work = od.nonzero + (od.n if spec.mechanism == "grr" else 0)
    return (spec.mechanism in sparse_release.EXACT
            and all(method in sparse_release.METHODS for method in spec.postprocess)
            and od.domain_size >= SPARSE_FROM_CELLS
            and work <= SPARSE_MAX_WORK * od.domain_size)


def run(od: ODMatrix, spec: ReleaseSpec, *, true_counts: np.ndarray | None = None, k: int = 10,
        top_n: int = 100, score: bool = True, only=None, sparse: bool | None = None,
        keep_raw: bool = True) -> ReleaseResult:
    """Release ``od`` with ``spec``, post-process it each way asked and score each.

    ``true_counts`` is ``od.to_dense()`` when the caller already has it (pages cache it).
    ``score=False`` skips the metrics of a dense release (a release for download only, or one
    scored later by :func:`scored`); ``only`` keeps just those metrics
    (:func:`dpcore.scoring.metrics.compute`). ``sparse`` chooses the path; by default
    :func:`sparse_route` does. ``keep_raw=False`` keeps only the post-processed vectors of a
    dense release (``raw`` is None; Post-Pos, whose metrics read the raw estimates, keeps them
    anyway), the last one written over the raw estimates where it acts cell by cell: one
    vector over the domain per release instead of two (a page that keeps its releases).
    Raises ValueError for settings that cannot be used, with a message for the user.
    """
    if sparse_route(od, spec) if sparse is None else sparse:
        return _run_sparse(od, spec, k=k, top_n=top_n, score=score, only=only)
    mechanism = check(spec, od)
    truth = od.to_dense() if true_counts is None else true_counts
    started = time.perf_counter()
    raw = mechanism.release(truth, spec.generator())
    seconds = time.perf_counter() - started
    variance = (_empty_cell_variance(mechanism, spec, od)
                if postprocess.NEEDS_VARIANCE.intersection(spec.postprocess) else None)
    keep_raw = (keep_raw or "post_pos" in spec.postprocess
                or np.may_share_memory(raw, truth))    # never written over: the true counts
    outputs = {}
    for number, method in enumerate(spec.postprocess, 1):
        started = time.perf_counter()
        released = postprocess.apply(method, raw, od.n, variance,
                                     overwrite=not keep_raw and number == len(spec.postprocess))
        post_seconds = time.perf_counter() - started
        outputs[method] = Scored(_read_only(released), MappingProxyType({}), post_seconds)
    result = ReleaseResult(spec, _read_only(raw) if keep_raw else None,
                           MappingProxyType(outputs), seconds,
                           mechanism.bits_per_user(od.domain_size))
    return scored(result, od, true_counts=truth, k=k, top_n=top_n, only=only) if score else result


def scored(result: ReleaseResult, od: ODMatrix, *, true_counts: np.ndarray | None = None,
           k: int = 10, top_n: int = 100, only=None) -> ReleaseResult:
    """``result`` (made by :func:`run` with ``score=False``) with each output scored: the same
    metrics :func:`run` gives with ``score=True``, sharing the result's vectors. So a page can
    release once and score only as far as it shows (a summary first, every metric when asked):
    at ED level the full metrics of a dense release cost more than drawing it. A sparse release
    is scored as it is drawn (its metrics need the draw's empty-cell distribution), so it is
    returned unchanged, as is an ``error``."""
    if not result.scorable:
        return result
    truth = od.to_dense() if true_counts is None else true_counts
    outputs = {method: replace(output, metrics=MappingProxyType(metrics.compute(
        truth, output.released, od, k=k, top_n=top_n,
        raw=result.raw if method == "post_pos" else None, only=only)))
        for method, output in result.outputs.items()}
    return replace(result, outputs=MappingProxyType(outputs))


def _run_sparse(od: ODMatrix, spec: ReleaseSpec, *, k: int, top_n: int, score: bool, only
                ) -> ReleaseResult:
    """:func:`run` by :mod:`dpcore.mechanisms.sparse_release` (exact as its docstring says)."""
    try:
        drawn = sparse_release.run(od, spec, keep=max(SPARSE_TOP, k))
    except ValueError as error:
        raise ValueError(f"{str(error).rstrip('.')}. The domain has {od.domain_size:,} cells, "
                         f"so releases are sparse: only its {od.nonzero:,} non-empty cells are "
                         "drawn one by one.") from None
    mechanism = spec.build()
    # Every empty cell at or above 0.5 is in the kept top unless the top is full; then those
    # strictly above its last value are.
    full = drawn.top_flat.size >= drawn.keep
    known_from = float(np.nextafter(drawn.top_values[-1], np.inf)) if full else PRESENT_AT
    raw = SparseVector(od.domain_size, od.flat_index, drawn.nonzero, drawn.zeros, drawn.top_flat,
                       drawn.top_values, known_from, sparse_release.noise_law(mechanism),
                       drawn.by_column)
    outputs = {}
    for method in spec.postprocess:
        started = time.perf_counter()
        released = raw if method == "base" else raw.clipped()   # Base-Pos, Post-Pos per cell
        post_seconds = time.perf_counter() - started
        values = sparse_metrics.score(drawn, method, k, top_n) if score else {}
        if only is not None:
            values = {name: values[name] for name in only}
        outputs[method] = Scored(released, MappingProxyType(values), post_seconds)
    return ReleaseResult(spec, raw, MappingProxyType(outputs), drawn.seconds,
                         mechanism.bits_per_user(od.domain_size),
                         approximation=drawn.approximation)


def drawn(od: ODMatrix, spec: ReleaseSpec, *, true_counts: np.ndarray | None = None,
          k: int = 10, top_n: int = 100) -> ReleaseResult:
    """The release as a page keeps it (:func:`attempt`): scored only if sparse (:func:`scored`
    scores the rest as far as the page shows), and keeping only its post-processed vector (no
    page reads the raw estimates of a dense release but Post-Pos's metrics, which keep them): at
    ED level 78 MB per release instead of 156 MB, in a cache and in every rerun that holds it."""
    return attempt(od, spec, true_counts=true_counts, k=k, top_n=top_n,
                   score=sparse_route(od, spec), keep_raw=False)


def attempt(od: ODMatrix, spec: ReleaseSpec, **options) -> ReleaseResult:
    """:func:`run`, with a setting the user cannot use returned as ``error`` instead of raised
    (and, as a last guard, any arithmetic failure: a page shows a message, never a traceback)."""
    try:
        return run(od, spec, **options)
    except (ValueError, TypeError, ArithmeticError) as error:
        return ReleaseResult(spec, error=str(error))


# ---------------------------------------------------------------------------- a page's releases
#: Every dense vector is float64.
BYTES_PER_CELL = 8
#: Peak of one release + post-processing + metrics, in dense vectors (measured at ED level by
#: bench/bench_memory.py: 6.3 to 6.8 for the local mechanisms, 9.8 for Laplace).
TRANSIENT_VECTORS = 10
#: Domains from this many cells release a page's mechanisms in two threads: NumPy's noise draws
#: and array passes release the GIL, so at ED level (9.8 M cells) the six default mechanisms took
#: 2.6 s one after another and 1.3 s in two threads. On small domains the work is Python, which
#: threads do not speed up.
PARALLEL_FROM_CELLS = 1_000_000


def work_cells(od: ODMatrix) -> int:
    """Cells each vector of a release of ``od`` holds: |X|, or its non-zero cells when the
    release is sparse (the kept top and the empty cells' distribution are small beside them)."""
    return od.domain_size if od.fits_dense else od.nonzero


def dense_work_bytes(cells: int, mechanisms: int) -> int:
    """Bytes a page holds at once to release and score ``mechanisms`` mechanisms over ``cells``."""
    return cells * BYTES_PER_CELL * (mechanisms + TRANSIENT_VECTORS)


@dataclass(frozen=True)
class Schedule:
    """How a page's work over one matrix runs, one job per key (:func:`schedule`): ``groups``,
    each run in order in a thread of its own (one group: in order, in the caller's thread);
    ``large``: large-domain work (:data:`PARALLEL_FROM_CELLS`), which a server may make take
    turns (``ui/components/slots.py``)."""

    groups: tuple[tuple[str, ...], ...]
    large: bool


def schedule(od: ODMatrix, keys, specs: Mapping[str, ReleaseSpec] | None = None,
             budget_bytes: int | None = None) -> Schedule:
    """How a page's jobs over ``od`` run, one per key (a release, or the ranking of one): on a
    small domain, with one job or on one core, in order here; else each job on its own, two
    threads taking them in turn. For releases (``specs``: key → its spec) whose dense ones
    (:func:`sparse_route`), two at once, would hold more than ``budget_bytes`` (each its
    :data:`TRANSIENT_VECTORS` working vectors, beside one kept vector per release), the dense
    ones run one after another in one thread, the sparse ones beside them."""
    keys, large = list(keys), od.domain_size >= PARALLEL_FROM_CELLS
    if not large or len(keys) < 2 or (os.cpu_count() or 1) < 2:
        return Schedule((tuple(keys),), large)
    dense = [key for key in keys if specs is not None and not sparse_route(od, specs[key])]
    if budget_bytes is None or dense_work_bytes(work_cells(od), len(dense) + TRANSIENT_VECTORS
                                                ) <= budget_bytes:
        return Schedule(tuple((key,) for key in keys), large)
    return Schedule(tuple(tuple(group) for group in (dense, [k for k in keys if k not in dense])
                          if group), large)


# ------------------------------------------------------------------------------------- download
#: What a sparse release's table lists (its other cells were never drawn one by one).
SPARSE_TABLE_NOTE = ("only the non-empty true cells and the released top {top:,} (a sparse "
                     "release: the other empty cells' values exist only as a distribution)")


def release_table(od: ODMatrix, true_counts, released, only_nonzero: bool = False
                  ) -> pd.DataFrame:
    """A release as a table: ``origin``, ``destination`` (zone ids), ``true_count``,
    ``released_count``, one row per cell (``only_nonzero``: cells whose true or rounded
    released count is not 0; a :class:`SparseVector` release: :data:`SPARSE_TABLE_NOTE`).
    The page's download and the command line write this same table."""
    if isinstance(released, SparseVector):
        cells, values = released.known()
        truth = np.rint(SparseVector.counts(od).at(cells)).astype(np.int64)
    else:
        truth, values = np.asarray(true_counts), np.asarray(released, dtype=float)
        cells = np.arange(od.domain_size)
        if only_nonzero:
            cells = np.flatnonzero((truth != 0) | (np.rint(values) != 0))
        truth, values = truth[cells], values[cells]
    return pd.DataFrame({
        "origin": pd.Categorical.from_codes(cells // od.n_destinations, od.origins.ids),
        "destination": pd.Categorical.from_codes(cells % od.n_destinations, od.destinations.ids),
        "true_count": truth,
        "released_count": values,
    })
