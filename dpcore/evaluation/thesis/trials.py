""":func:`run`, the chapter in one call: the written sweep (:mod:`dpcore.evaluation.experiment`),
the trial-0 and as-run releases beside it, the running times, every protocol's items and their
verdicts; and the CSVs behind them (:func:`write_csvs`).
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
from pathlib import Path
import threading
import time
from typing import Callable

import pandas as pd

from dpcore import limits, release
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import experiment
from dpcore.evaluation.thesis import as_run
from dpcore.evaluation.thesis.items import _items, shared
from dpcore.scoring import ranks
from dpcore.evaluation.thesis.protocol import (
    BAR_TOP, CENTRAL, Chapter, DECIDING_TRIALS, ED_ORDER_TOP, Figure, FINE_MECHANISMS,
    FINE_RUN_TRIALS, FINE_STATED_TRIALS, HIGH_EPSILON, Levels, levels, MAIN_POSTPROCESS,
    mechanism_specs, MECHANISMS, METRICS, POSTPROCESS, RANK_EPSILONS, RANK_TOP, Snapshot,
    STATED_TRIALS, Table, TRIALS
)
from dpcore import confidential, export, grids
from dpcore.evaluation.thesis.times import running_times
from dpcore.evaluation.thesis.variants import compose, variant_sweep
from dpcore.evaluation.thesis.verdicts import data_facts, explain, summary
from dpcore.mechanisms import postprocess


def _snapshots(od: ODMatrix, lv: Levels, specs, seed: int,
               stop: threading.Event | None = None) -> dict:
    """(level label, ε, mechanism) → :class:`Snapshot`, for ε = 0.5 and 5 at each whole level.
    Returns what it has made when ``stop`` is set (checked before each release)."""
    out = {}
    for scenario in lv.whole:
        matrix = views.select(od, scenario.view)
        truth = matrix.to_dense()
        coarse = scenario == lv.coarse
        methods = scenario.methods(POSTPROCESS)
        for epsilon in RANK_EPSILONS:
            for key, params in specs:
                if stop is not None and stop.is_set():
                    return out
                if scenario == lv.fine and key not in FINE_MECHANISMS:
                    continue
                spec = release.ReleaseSpec(key, epsilon, params, methods, seed, 0)
                outputs = release.run(matrix, spec, true_counts=truth, score=False).outputs
                made = {m: outputs[m].released for m in methods}
                shown = made["base"] if key in CENTRAL else made[MAIN_POSTPROCESS]
                ordering = {}
                if epsilon == HIGH_EPSILON and coarse:
                    wanted = (("base",) if key in CENTRAL
                              else POSTPROCESS if key == "hm" else (MAIN_POSTPROCESS,))
                    ordering = {m: ranks.rank_pairs(truth, made[m]) for m in wanted}
                elif epsilon == HIGH_EPSILON and key == "hm":
                    ordering = {MAIN_POSTPROCESS: ranks.rank_pairs(
                        truth, made[MAIN_POSTPROCESS], ED_ORDER_TOP)}
                out[(scenario.label, epsilon, key)] = Snapshot(
                    ranks.top_flows(matrix, truth, {key: shown}, BAR_TOP),
                    ranks.rank_pairs(truth, made[MAIN_POSTPROCESS], RANK_TOP), ordering)
                del outputs, made, shown
    return out


def _abandon(pool) -> None:
    """Stop a process pool now (Stop or an error): queued work dropped, running work killed."""
    if pool is None:
        return
    processes = list((pool._processes or {}).values())  # the executor offers no kill
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _written_sweep(od, lv: Levels, specs, epsilons, trials, seed, n_jobs, scheduler, progress,
                   cancel) -> pd.DataFrame:
    """The written protocol's sweep (:func:`dpcore.evaluation.experiment.run`): every mechanism
    at the coarse level and on the subsets, :data:`FINE_MECHANISMS` at the finer level — as the
    thesis ran it. Two runs, one progress count."""
    groups = [([s for s in lv.scenarios if s != lv.fine], specs)]
    if lv.fine is not None:
        groups.append(([lv.fine], [(k, p) for k, p in specs if k in FINE_MECHANISMS]))
    sizes = [trials * len(scenarios) * len(keys) * len(epsilons) for scenarios, keys in groups]
    tables, offset = [], 0
    for (scenarios, keys), size in zip(groups, sizes):
        counted = None if progress is None else (
            lambda done, total, o=offset: progress(o + done, sum(sizes)))
        table = experiment.run(od, keys, epsilons, postprocess=POSTPROCESS, trials=trials,
                               seed=seed, n_jobs=n_jobs, metrics=METRICS, scenarios=scenarios,
                               progress=counted, cancel=cancel, scheduler=scheduler)
        tables.append(table)
        offset += size
        if table.attrs.get("cancelled"):
            break
    out = pd.concat(tables, ignore_index=True)
    out.attrs.update(jobs_done=sum(t.attrs["jobs_done"] for t in tables),
                     jobs_total=sum(sizes),
                     cancelled=any(t.attrs.get("cancelled") for t in tables))
    return out


def run(od: ODMatrix, *, epsilons=grids.THESIS_EPSILONS, trials: int = TRIALS, seed: int = 0,
        n_jobs: int = -1, scheduler=None,
        progress: Callable[[int, int], bool | None] | None = None, cancel=None,
        source=None, protocol: str = "both") -> Chapter:
    """Run the chapter on ``od`` under the thesis's protocols: the written sweep, the as-run and
    rounded releases (:func:`variant_sweep`), trial-0 releases, running times, items, verdicts.

    ``protocol``: ``"written"``, ``"run"`` or ``"both"`` (the protocols shown; both are always
    computed, since a difference's reason toggles one switch of the other's). ``n_jobs``,
    ``scheduler``, ``progress`` and ``cancel`` are :func:`dpcore.evaluation.experiment.run`'s.
    ``source``: the bundled dataset's :class:`~dpcore.data.datasets.DatasetInfo`.
    """
    if protocol not in ("written", "run", "both"):
        raise ValueError(f"protocol must be written, run or both; got {protocol!r}")
    shown = [as_run.WRITTEN, as_run.RUN] if protocol == "both" else [as_run.PROTOCOLS[protocol]]
    started = time.perf_counter()
    lv = levels(od)
    specs = mechanism_specs(od)
    epsilons = tuple(float(e) for e in epsilons)
    settings = {"dataset": od.name, "commuters n": f"{od.n:,}",
                "ε grid": ", ".join(f"{e:g}" for e in epsilons), "trials per point": trials,
                "seed": seed, "stability histogram δ": f"1/(2n) = {1 / (2 * od.n):.3g}",
                "protocols": ", ".join(p.name for p in shown),
                "as written": "chapter 3's definitions: Hadamard mechanism t = 1, textbook "
                              "randomised response and local hashing, continuous Laplace, "
                              "stability histogram τ = 2·ln(2/δ)/ε + 1, Base-Pro unrounded",
                "as run": "; ".join(d.title + (" (defect of the original code)" if d.defect
                                               else "") for d in as_run.DIFFERENCES.values())
                          + f"; at {lv.fine.label if lv.fine else 'the finer'} level only what "
                            f"the thesis ran there (central, randomised response, Hadamard), "
                            f"{FINE_RUN_TRIALS} trials",
                "stated numbers and rank tables": f"{STATED_TRIALS} trials at "
                                                  f"{lv.coarse.label} level, ε = 0.5 and 5"
                + (f"; at {lv.fine.label} level {FINE_STATED_TRIALS}, and up to "
                   f"{DECIDING_TRIALS} of a mechanism whose outcome in tables 5.3, 5.4 or "
                   f"figure 5.15 is not yet seen" if lv.fine else ""),
                "data": ", ".join(s.label for s in lv.scenarios),
                "post-processing": ", ".join(postprocess.METHODS[m].name for m in POSTPROCESS)
                + f" (Base-Cut at {lv.coarse.label} level only, as in figure 5.10)"}
    line = (f"Settings: {od.name}, ε ∈ {{{', '.join(f'{e:g}' for e in epsilons)}}}, "
            f"{trials} trial(s) per point, seed {seed}, stability histogram δ = 1/(2n) = "
            f"{1 / (2 * od.n):.3g}.")
    # The trial-0 releases and the as-run releases are made in threads of this process while
    # the sweep runs: here the process mostly waits for the workers (or for NumPy, which
    # releases the GIL).
    stop = threading.Event()
    with futures.ThreadPoolExecutor(2, thread_name_prefix="thesis") as pool:
        # The finer level's as-run releases (the heaviest: 9.8 M cells at ED level) in processes
        # of their own, so that they do not wait for this process's interpreter (unless the run
        # is asked to stay in this process: n_jobs = 1): Hadamard's two variants (each up to
        # DECIDING_TRIALS releases at ε = 5 when its outcome is unseen) apart from the rest.
        in_process = scheduler is None and limits.workers(n_jobs, "n_jobs")[0] == 1
        fine_pool = (futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(
            "forkserver")) if lv.fine is not None and not in_process else None)
        made = pool.submit(_snapshots, od, lv, specs, seed, stop)
        variants = pool.submit(variant_sweep, od, lv, epsilons, trials, seed, stop,
                               None if fine_pool is None else False)
        fine_variants = [fine_pool.submit(variant_sweep, od, lv, epsilons, trials, seed, None,
                                          True, keys, variant_)
                         for keys, variant_ in ((("hm",), "run"), (("hm",), "written"),
                                                (tuple(k for k in MECHANISMS if k != "hm"), None))
                         ] if fine_pool else []
        try:
            table = _written_sweep(od, lv, specs, epsilons, trials, seed, n_jobs, scheduler,
                                   progress, cancel)
        except BaseException:
            stop.set()  # an error or Ctrl-C: do not wait for the remaining releases
            _abandon(fine_pool)
            raise
        chapter = Chapter(od.name, settings, table, source=source)
        if table.attrs.get("cancelled"):
            stop.set()
            _abandon(fine_pool)
            chapter.seconds = time.perf_counter() - started
            return chapter
        snaps, variants = made.result(), variants.result()
        if fine_pool:
            for part in fine_variants:
                variants = variants.merged(part.result())
            fine_pool.shutdown()
    times = running_times(views.select(od, lv.coarse.view), specs, seed)
    common = shared(od, lv, times)
    built: dict = {}

    def build(protocol_) -> list:
        if protocol_.switches not in built:
            composed, composed_snaps, per_trial = compose(protocol_, table, snaps, variants)
            built[protocol_.switches] = _items(od, lv, composed, composed_snaps, per_trial,
                                               common, line,
                                               protocol_.switches == as_run.RUN.switches,
                                               protocol_.switches)
        return built[protocol_.switches]

    chapter.data_facts = data_facts(common.truth, lv.coarse.label)
    chapter.by_protocol = {p.name: explain(p, build) for p in shown}
    chapter.items = chapter.by_protocol[shown[-1].name]
    chapter.variants = variants
    if lv.fine is not None:
        chapter.settings[f"extra trials at {lv.fine.label} level"] = variants.extra_text()
    chapter.seconds = time.perf_counter() - started
    return chapter


def slug(ref: str) -> str:
    """A file name for a figure or table reference ("Figure 5.10" → "figure_5.10")."""
    text = ref.lower().replace("thesis ", "")
    return "_".join("".join(c if c.isalnum() or c == "." else " " for c in text).split())


def write_csvs(chapter: Chapter, out: Path, private: bool = False) -> list[Path]:
    """The tidy data behind every figure and table, the verdicts and the whole sweep, as
    formula-safe CSVs (``private``: each under the not-for-publication line,
    :func:`dpcore.confidential.write_csv`)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    frames = [("sweep", chapter.table), ("verdicts", summary(chapter))]
    if chapter.variants is not None:
        frames.append(("sweep_as_run_and_rounded", chapter.variants.rows))
    groups = chapter.by_protocol or {"": chapter.items}
    frames += [(slug(f"{protocol} {item.ref}"), item.data) for protocol, items in groups.items()
               for item in items if isinstance(item, (Figure, Table))]
    for name, frame in frames:
        path = out / f"{name}.csv"
        (confidential.write_csv if private else export.write_safe_csv)(frame, path)
        written.append(path)
    return written
