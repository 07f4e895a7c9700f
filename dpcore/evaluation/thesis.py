"""The experiments of the thesis's results chapter, as one sweep and the tables behind its figures.

Finnegan, *Local Differential Privacy Mechanisms for Frequency Estimation with Application to
Mobility Data* (University of Padova, 2023/24), chapter 5: two central mechanisms (Laplace, the
stability histogram with δ = 1/(2n)) and four local ones (randomised response, unary encoding,
optimised local hashing, the Hadamard mechanism), ε = 0.5, 1, …, 5, ten trials each, at county and
electoral-division (ED) level, with three post-processings (Base, Base-Pos, Base-Cut), the ED
subsets Dublin City and Cavan + Leitrim (figure 5.17), the top-10 rank tables (tables 5.1–5.4) and
the running times (sections 5.1.2, 5.2.2, 5.4.3).

Everything is one :func:`dpcore.evaluation.experiment.run` grid (so it runs in this process, on a process
pool or on a Dask cluster, and gives the same numbers), and every figure is a slice of its tidy
table summarised over trials (:func:`dpcore.evaluation.summaries.summarise`). This module makes data only;
drawing is left to the caller (the ``report`` package draws it with plotly).

Where this departs from the thesis, on purpose: every mechanism runs at ED level too (the fast
releases make unary encoding and local hashing feasible there; the thesis stopped at randomised
response and Hadamard), and the subsets are swept over the whole ε grid (the thesis fixed ε = 5).
"""

from __future__ import annotations

import concurrent.futures as futures
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from dpcore import mechanisms, release
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import experiment, ranks, summaries
from dpcore.evaluation.experiment import Scenario
from dpcore.interfaces import export, grids
from dpcore.mechanisms import postprocess

CENTRAL = ("laplace", "stability_histogram")
LOCAL = ("grr", "oue", "olh", "hm")
MECHANISMS = CENTRAL + LOCAL
POSTPROCESS = ("base", "base_pos", "base_cut")
#: The post-processing of the thesis's LDP analysis ("Base-Pro": negative counts set to 0).
MAIN_POSTPROCESS = "base_pos"
#: ε of the rank tables: the thesis's most and least private settings.
RANK_EPSILONS = (0.5, 5.0)
RANK_TOP = 10
TRIALS = 10
#: What the figures show (the thesis's RMSE and maximum error): the cheap cell-error metrics.
METRICS = ("rmse", "max_error_freq")


@dataclass(frozen=True)
class Levels:
    """The scenarios of a dataset: its coarse and fine level (either may be missing) and the ED
    subsets of figure 5.17 found in it."""

    coarse: Scenario | None
    fine: Scenario | None
    subsets: tuple[Scenario, ...]

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        return tuple(s for s in (self.coarse, self.fine) if s is not None) + self.subsets

    @property
    def whole(self) -> tuple[Scenario, ...]:
        return tuple(s for s in (self.coarse, self.fine) if s is not None)


def levels(od: ODMatrix) -> Levels:
    """County and ED level of data with a parent level (ED data rolls up to counties), else the
    data as loaded; the subsets Dublin City and Cavan + Leitrim where those parent zones exist."""
    irish = "ireland" in od.name.lower()
    coarse_name, fine_name = ("County", "ED") if irish else ("Parent zones", "Zones")
    if not od.has_parent_level:
        label = "County" if irish else "As loaded"
        return Levels(Scenario(label, views.View()), None, ())
    present = set(views.areas(od))
    subsets = tuple(Scenario(f"{' and '.join(areas)} ({fine_name})",
                             views.View(views.LEVEL_AS_LOADED, areas))
                    for areas in views.THESIS_SUBSETS if present.issuperset(areas))
    return Levels(Scenario(coarse_name, views.View(views.LEVEL_PARENT)),
                  Scenario(fine_name, views.View()), subsets)


def mechanism_specs(od: ODMatrix) -> list[tuple[str, dict]]:
    """The six mechanisms; the stability histogram with the thesis's δ = 1/(2n)."""
    return [(key, {"delta": 1 / (2 * od.n)} if mechanisms.get(key).uses_delta else {})
            for key in MECHANISMS]


@dataclass(frozen=True)
class Figure:
    """The data of one figure: mean over trials with its 95 % interval, per series."""

    ref: str
    title: str
    caption: str
    data: pd.DataFrame
    metric: str
    colour: str = "mechanism"
    dash: str | None = None
    facet: str | None = None
    log_y: bool = True


@dataclass(frozen=True)
class Table:
    ref: str
    title: str
    caption: str
    data: pd.DataFrame


@dataclass
class Chapter:
    """What :func:`run` made: the tidy table, the figures and tables, the settings."""

    dataset: str
    settings: dict
    table: pd.DataFrame
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    seconds: float = float("nan")


def _names(keys) -> str:
    return ", ".join(mechanisms.get(k).name for k in keys)


def _figures(table: pd.DataFrame, lv: Levels, settings: str) -> list[Figure]:
    def figure(ref, title, metric, keys, scenarios, methods, note, **style):
        rows = table[table["mechanism"].isin(keys)
                     & table["scenario"].isin([s.label for s in scenarios])
                     & table["postprocess"].isin(methods)]
        data = summaries.summarise(rows, metric, by=["mechanism", "scenario", "postprocess",
                                                     "epsilon"])
        methods_named = ", ".join(postprocess.METHODS[m][0] for m in methods)
        caption = (f"{ref}. Mechanisms: {_names(keys)}. Data: "
                   f"{', '.join(s.label for s in scenarios)}. Post-processing: {methods_named}. "
                   f"{note + ' ' if note else ''}{settings}")
        return Figure(ref, title, caption, data, metric, **style)

    whole = lv.whole
    fine = [lv.fine] if lv.fine else []
    coarse = [lv.coarse] if lv.coarse else []
    main = [MAIN_POSTPROCESS]
    two_levels = {"dash": "scenario"} if len(whole) > 1 else {}
    out = [
        figure("Thesis figure 5.2", "RMSE of the central mechanisms", "rmse", CENTRAL, whole,
               ["base"], "Raw releases.", **two_levels),
        figure("Thesis figure 5.3", "Maximum error of the central mechanisms (relative "
               "frequency)", "max_error_freq", CENTRAL, whole, ["base"], "Raw releases.",
               **two_levels),
        figure("Thesis figure 5.7", "RMSE of the local mechanisms", "rmse", LOCAL, coarse or whole,
               main, "Negative counts set to 0 (Base-Pos), as in the thesis."),
        figure("Thesis figure 5.8", "Maximum error of the local mechanisms (relative "
               "frequency)", "max_error_freq", LOCAL, coarse or whole, main,
               "Negative counts set to 0, as in the thesis."),
    ]
    for scenario in whole:
        out.append(figure(f"Thesis figure 5.10 ({scenario.label} level)",
                          f"RMSE by post-processing, {scenario.label} level", "rmse", MECHANISMS,
                          [scenario], list(POSTPROCESS),
                          "One panel per mechanism; the thesis showed the local mechanisms at "
                          "county level.", colour="postprocess", facet="mechanism"))
    if fine:
        out += [
            figure("Thesis figure 5.13", "RMSE of the local mechanisms, county against ED "
                   "level", "rmse", LOCAL, whole, main, "", dash="scenario"),
            figure("Thesis figure 5.14", "Maximum error of the local mechanisms at ED level "
                   "(relative frequency)", "max_error_freq", LOCAL, fine, main, ""),
        ]
    out.append(figure("All mechanisms compared", "RMSE of every mechanism", "rmse", MECHANISMS,
                      whole, main, "Base-Pos; central and local side by side.", **two_levels))
    if lv.subsets:
        out.append(figure("Thesis figure 5.17", "RMSE of the local mechanisms on two ED subsets "
                          "of equal domain size", "rmse", LOCAL, lv.subsets, main,
                          "Same |X|, different n: Dublin City against rural Cavan and Leitrim "
                          "(the thesis fixed ε = 5; here the whole grid).", dash="scenario"))
    return out


def _rank_tables(od: ODMatrix, lv: Levels, specs, seed: int, settings: str,
                 stop: threading.Event | None = None) -> list[Table]:
    """Tables 5.1–5.4: the true top-10 commutes and the rank each mechanism's release (trial 0,
    Base-Pos: the same release as the sweep's trial 0) gives them. Returns what it has made when
    ``stop`` is set (checked before each release)."""
    numbers = iter(range(1, 5))
    out = []
    for scenario in lv.whole:
        matrix = views.select(od, scenario.view)
        truth = matrix.to_dense()
        for epsilon in RANK_EPSILONS:
            pairs = {}
            for key, params in specs:
                if stop is not None and stop.is_set():
                    return out
                spec = release.ReleaseSpec(key, epsilon, params, (MAIN_POSTPROCESS,), seed, 0)
                released = release.run(matrix, spec, true_counts=truth, score=False).released
                pairs[key] = ranks.rank_pairs(truth, released, RANK_TOP)
            names = {key: mechanisms.get(key).name for key, _ in specs}
            ref = f"Thesis table 5.{next(numbers)}"
            out.append(Table(ref, f"Top {RANK_TOP} commutes at {scenario.label} level, "
                                  f"ε = {epsilon:g}",
                             f"{ref}. The true top {RANK_TOP} commutes of {matrix.name} "
                             f"(|X| = {matrix.domain_size:,}) and the rank each release gives "
                             f"them (1 = busiest; trial 0, Base-Pos). {settings}",
                             ranks.rank_table(matrix, pairs, RANK_TOP, names)))
    return out


def _times(table: pd.DataFrame, settings: str) -> Table:
    times = summaries.release_times(table)
    times = times.assign(mechanism=times["mechanism"].map(lambda k: mechanisms.get(k).name))
    return Table("Thesis sections 5.1.2, 5.2.2, 5.4.3", "Running time of one release",
                 "Running times (thesis sections 5.1.2, 5.2.2 and 5.4.3): mean time of one fast "
                 "release (aggregate-level sampling, not per-user simulation), seconds, over every "
                 "ε and trial, measured inside the workers running side by side. " + settings,
                 times.rename(columns={"seconds": "mean seconds"}))


def run(od: ODMatrix, *, epsilons=grids.THESIS_EPSILONS, trials: int = TRIALS, seed: int = 0,
        n_jobs: int = 1, scheduler=None,
        progress: Callable[[int, int], bool | None] | None = None, cancel=None) -> Chapter:
    """Run the chapter's sweep on ``od`` and build its figures and tables.

    ``n_jobs``, ``scheduler``, ``progress`` and ``cancel`` are :func:`dpcore.evaluation.experiment.run`'s.
    """
    started = time.perf_counter()
    lv = levels(od)
    specs = mechanism_specs(od)
    epsilons = tuple(float(e) for e in epsilons)
    settings = {"dataset": od.name, "commuters n": f"{od.n:,}",
                "ε grid": ", ".join(f"{e:g}" for e in epsilons), "trials per point": trials,
                "seed": seed, "stability histogram δ": f"1/(2n) = {1 / (2 * od.n):.3g}",
                "data": ", ".join(s.label for s in lv.scenarios),
                "post-processing": ", ".join(postprocess.METHODS[m][0] for m in POSTPROCESS)}
    line = (f"Settings: {od.name}, ε ∈ {{{', '.join(f'{e:g}' for e in epsilons)}}}, "
            f"{trials} trial(s) per point, seed {seed}, stability histogram δ = 1/(2n) = "
            f"{1 / (2 * od.n):.3g}; bands are 95 % confidence intervals of the mean.")
    # The rank tables' releases (24, half of them at ED level: seconds) are made in a thread of
    # this process while the sweep runs, instead of after it: here the process mostly waits for
    # the workers (or for NumPy, which releases the GIL).
    stop = threading.Event()
    with futures.ThreadPoolExecutor(1, thread_name_prefix="thesis-ranks") as pool:
        ranked = pool.submit(_rank_tables, od, lv, specs, seed, line, stop)
        try:
            table = experiment.run(od, specs, epsilons, postprocess=POSTPROCESS, trials=trials,
                                   seed=seed, n_jobs=n_jobs, metrics=METRICS,
                                   scenarios=lv.scenarios, progress=progress, cancel=cancel,
                                   scheduler=scheduler)
        except BaseException:
            stop.set()  # an error or Ctrl-C: do not wait for the remaining rank releases
            raise
        chapter = Chapter(od.name, settings, table)
        if table.attrs.get("cancelled"):
            stop.set()
            chapter.seconds = time.perf_counter() - started
            return chapter
        rank_tables = ranked.result()
    chapter.figures = _figures(table, lv, line)
    chapter.tables = rank_tables + [_times(table, line)]
    chapter.seconds = time.perf_counter() - started
    return chapter


def slug(ref: str) -> str:
    """A file name for a figure or table reference ("Thesis figure 5.10 (ED level)" →
    "figure_5.10_ed_level")."""
    text = ref.lower().replace("thesis ", "")
    return "_".join("".join(c if c.isalnum() or c == "." else " " for c in text).split())


def write_csvs(chapter: Chapter, out: Path) -> list[Path]:
    """The tidy data behind every figure and table, and the whole sweep, as formula-safe CSVs."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in ([("sweep", chapter.table)]
                        + [(slug(f.ref), f.data) for f in chapter.figures]
                        + [(slug(t.ref), t.data) for t in chapter.tables]):
        path = out / f"{name}.csv"
        export.write_safe_csv(frame, path)
        written.append(path)
    return written
