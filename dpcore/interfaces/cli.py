"""Command line: ``python -m dpcore {datasets,mechanisms,release,sweep,heavy-hitters,plan,publish,lodes-records,ledger,reproduce-thesis} …``.

Parsing and printing only; the work is done by :mod:`dpcore.data.datasets`, :mod:`dpcore.data.importers`,
:mod:`dpcore.mechanisms`, :mod:`dpcore.mechanisms.postprocess`, :mod:`dpcore.evaluation.experiment` and
:mod:`dpcore.export`. Bad input gives a one-line message (and the importer's notices for files),
never a traceback. Exit codes: 0 success, 1 the input file is invalid (``ledger``: the ledger was
tampered with), 2 a bad command line.

Examples::

    python -m dpcore datasets
    python -m dpcore datasets --file flows.csv --format long
    python -m dpcore mechanisms
    python -m dpcore release --dataset ireland_county --mechanism oue --epsilon 1 --seed 7 \\
        --out oue.csv
    python -m dpcore sweep --dataset ireland_county --mechanisms laplace,oue --epsilons 0.5,1,5 \\
        --trials 10 --jobs 2 --out sweep.csv
    python -m dpcore heavy-hitters --dataset ireland_ed --protocol pem --epsilon 2 --k 20 \
        --seed 7 --out top20.csv
    python -m dpcore plan --dataset ireland_county --mechanisms laplace,olh --metric rmse \
        --target 5 --out plan.csv
    python -m dpcore plan --dataset ireland_county --mechanisms laplace,grr --answers inflow \
        --within 2% --out plan_answers.csv
    python -m dpcore publish --dataset ireland_county --mechanism discrete_laplace \
        --epsilon 1 --out published/
    python -m dpcore publish --file flows.csv --domain-zones zones.csv \\
        --mechanism discrete_laplace --epsilon 1 --label "Kildare 2016" --out published/ \\
        --audit private/audit.json --compare 5 --compare-out private/comparison.csv
    python -m dpcore lodes-records published/ --out lodes/
    python -m dpcore ledger --verify published/
    python -m dpcore ledger --migrate                  # once, after upgrading an unkeyed ledger
    python -m dpcore sweep … --scheduler local          # or --scheduler tcp://host:8786
    python -m dpcore reproduce-thesis --scheduler local --out thesis/
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from dpcore import confidential, export, mechanisms, release
from dpcore.data import datasets, importers, national, views
from dpcore.data.importing.notices import Report
from dpcore.data.importing.reading import check_size
from dpcore.analyses import planning
from dpcore.data.od import DomainTooLargeError, ODMatrix
from dpcore.evaluation import experiment, planner
from dpcore.interfaces import (
    analyse,
    arguments,
    ledger,
    lodes_export,
    publish,
    publish_compare,
    publish_targets,
    published_domain,
)
from dpcore.limits import (
    DELTA,
    EPSILON,
    FINE_SHARE,
    HEAVY_HITTERS_K,
    PASS_PROBABILITY,
    SEED,
    TOP_K,
    TOP_N,
    TRIALS,
)
from dpcore.mechanisms import postprocess
from dpcore.scoring import metrics
from dpcore.text import plain_number, visible

EXIT_INVALID_INPUT, EXIT_USAGE = 1, 2
_SEVERITY = {"error": 0, "warning": 1, "info": 2}


class _InvalidInput(Exception):
    """The input file could not be imported (its notices have been printed)."""


# ----------------------------------------------------------------------------------------- output
def _say(text, *, error: bool = False, lines: bool = False) -> None:
    """Print to stdout (stderr for errors) with every terminal control escaped; a message stays
    on one line, a table (``lines``) keeps its line breaks."""
    print(visible(text, keep="\n" if lines else ""), file=sys.stderr if error else sys.stdout)


def _table(headers: list[str], rows: list[list]) -> str:
    """Aligned plain-text table; numbers right-aligned with thousands separators."""
    def cell(value):
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return f"{value:,}"
        return visible(value)

    cells = [[cell(v) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, np.integer)) for row in rows) for i in
               range(len(headers))]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def _figures_row(key: str, title: str, od: ODMatrix) -> list:
    return [key, title, od.n, od.n_origins, od.n_destinations, od.domain_size, od.nonzero]


_FIGURE_HEADERS = ["key", "title", "n", "origins", "destinations", "|X|", "non-zero"]


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


# ------------------------------------------------------------------------------------------ input
def _read_file(path: str) -> bytes:
    """The file's bytes; a file over the importer's limit is refused with its real size
    (ImportFailed, whose notices the callers print) before it is read."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > importers.MAX_UPLOAD_BYTES:
                report = Report(Path(path).name)
                check_size(size, report)
            return handle.read(importers.MAX_UPLOAD_BYTES + 1)  # a pipe has no size: read on
    except OSError as err:
        raise OSError(f"cannot read {path}: {err.strerror or err}") from None


def _import_file(args) -> importers.ImportResult:
    """Import ``--file`` (and ``--zones``) as the Data page does (a domain beyond the dense limit
    for the sparse release, under the same limits), printing every notice as the page lists them."""
    try:
        zones = (_read_file(args.zones), Path(args.zones).name) if args.zones else None
        result = importers.import_dense_or_sparse(_read_file(args.file), Path(args.file).name,
                                                  format=args.format, level=args.level,
                                                  zones=zones)
    except importers.ImportFailed as failure:
        for notice in sorted(failure.notices, key=lambda n: _SEVERITY[n.level]):
            _say(notice, error=True)
        raise _InvalidInput from None
    for notice in sorted(result.notices, key=lambda n: _SEVERITY[n.level]):
        _say(notice)
    return result


def _check_file_options(args) -> None:
    if not args.file and (args.level or args.zones or args.format != "auto"):
        raise ValueError("--format, --level and --zones describe an input file: use them with "
                         "--file")


def _load(args) -> ODMatrix:
    _check_file_options(args)
    if args.file:
        return _import_file(args).matrix
    return datasets.load(args.dataset)


def _convert(param: mechanisms.Param, text: str):
    """A command-line string as the parameter's type (range checks are the mechanism's)."""
    if param.choices is not None:
        for choice in param.choices:
            if str(choice) == text:
                return choice
        return text  # the mechanism names the valid choices
    whole = param.kind is int
    try:
        return plain_number(text, whole) if param.kind in (int, float) else param.kind(text)
    except ValueError:
        raise ValueError(f"the '{param.name}' parameter must be {'a whole' if whole else 'a'} "
                         f"number; got {text!r}") from None


def _params(pairs: list[str], keys: list[str]) -> dict[str, dict]:
    """``--param name=value`` options → parameters per mechanism (only those that declare them)."""
    per_key: dict[str, dict] = {key: {} for key in keys}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--param must look like name=value; got {pair!r}")
        if name in ("epsilon", "delta"):
            raise ValueError(f"give {name} with --{name}, not --param")
        found = False
        for key in keys:
            declared = {p.name: p for p in mechanisms.get(key).params}
            if name in declared:
                per_key[key][name] = _convert(declared[name], text.strip())
                found = True
        if not found:
            valid = sorted({p.name for key in keys for p in mechanisms.get(key).params}
                           - {"epsilon", "delta"})
            raise ValueError(f"no chosen mechanism has a parameter {name!r}; their parameters "
                             f"are {valid or 'ε only'}")
    return per_key


def _csv_list(text: str, option: str, numbers: bool = False) -> list:
    """``option``'s comma-separated items (numbers read the plain way); ValueError naming the
    option when the list or one of its items is empty ("", "1,,2": a slip, never "the default")
    or an item is not a number."""
    items = [item.strip() for item in text.split(",")]
    kind = "numbers" if numbers else "names"
    if not all(items):
        raise ValueError(f"{option} must be {kind} separated by commas, none of them empty; got "
                         f"{text!r}")
    try:
        return [plain_number(item) for item in items] if numbers else items
    except ValueError:
        raise ValueError(f"{option} must be numbers separated by commas (e.g. 0.5,1,2); got "
                         f"{text!r}") from None


# ------------------------------------------------------------------------------------- commands
def _cmd_datasets(args) -> int:
    if args.make:
        path, seconds = national.make(args.scale)
        od = national.load(path)
        print(f"wrote {path} in {seconds:.1f} s")
        print(_table(_FIGURE_HEADERS, [_figures_row(national.KEY, national.TITLE, od)]))
        return 0
    _check_file_options(args)
    if args.file:
        result = _import_file(args)
        _say(_table(_FIGURE_HEADERS, [_figures_row(Path(args.file).name,
                                                    importers.FORMATS[result.format],
                                                    result.matrix)]), lines=True)
        return 0
    chosen = [datasets.DATASETS[args.dataset]] if args.dataset else datasets.list_datasets()
    rows = [_figures_row(info.key, info.title, datasets.load(info.key)) for info in chosen]
    _say(_table(_FIGURE_HEADERS, rows), lines=True)
    return 0


def _describe_param(param: mechanisms.Param) -> str:
    return f"{param.name} ∈ {param.interval()} (default {param.default})"


def _cmd_mechanisms(args) -> int:
    rows = []
    for key in mechanisms.names():
        cls = mechanisms.get(key)
        rows.append([key, cls.name, cls.model, cls().guarantee,
                     "exact" if cls.approximation is None else "approximate",
                     "; ".join(_describe_param(p) for p in cls.params)])
    _say(_table(["key", "name", "model", "guarantee", "fast release", "parameters"], rows),
         lines=True)
    return 0


def _view(args) -> views.View:
    return views.View(views.LEVEL_PARENT if args.roll_up else views.LEVEL_AS_LOADED,
                      tuple(args.area))


#: What the command line says of a table it wrote with the true counts in it or measured
#: against them (:func:`dpcore.confidential.write_csv` marks the file's first line).
PRIVATE_NOTE = "NOT FOR PUBLICATION: computed from the true counts, its first line says so"


def _cmd_release(args) -> int:
    params = _params(args.param, [args.mechanism])[args.mechanism]
    if args.delta is not None:
        if not mechanisms.get(args.mechanism).uses_delta:
            raise ValueError(f"{args.mechanism} is ε-DP and has no δ; leave out --delta")
        params["delta"] = args.delta
    seed = args.seed if args.seed is not None else release.fresh_seed()
    spec = release.ReleaseSpec(args.mechanism, args.epsilon, params, (args.postprocess,), seed)
    spec.build()  # a bad parameter fails before the data is loaded
    if args.postprocess not in postprocess.METHODS:
        raise ValueError(f"unknown post-processing {args.postprocess!r}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    od = views.select(_load(args), _view(args))
    true = release.true_values(od)
    result = release.run(od, spec, true_counts=true, score=False)
    records = (lodes_export.lodes_table(od, result.released) if args.lodes_out else None)
    frame = release.release_table(od, true, result.released, args.only_nonzero)
    confidential.write_csv(frame, args.out)  # true_count beside released_count
    written = (f"; written: {release.SPARSE_TABLE_NOTE.format(top=release.SPARSE_TOP)}"
               if result.sparse else "")
    _say(f"{args.mechanism} eps={args.epsilon:g}: released {od.domain_size} cells in "
         f"{_duration(result.seconds)} (seed {seed}, {args.postprocess}; {len(frame)} rows → "
         f"{args.out}{written}; {PRIVATE_NOTE})")
    if records is not None:   # checked before anything was written
        export.write_safe_csv(records, args.lodes_out)
        _say(f"{len(records)} LODES records → {args.lodes_out} (released counts only)")
    return 0


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        print(f"\r{done}/{total} releases", end="" if done < total else "\n",
              file=sys.stderr, flush=True)


def _scheduler(args) -> str | None:
    """``--scheduler`` checked before any data is loaded (Dask itself is imported later)."""
    if args.scheduler is None:
        return None
    import logging

    from dpcore.evaluation import cluster

    logging.getLogger("distributed").setLevel(logging.ERROR)  # its start/stop chatter
    return cluster.check_scheduler(args.scheduler)


def _load_for_report(args) -> ODMatrix:
    """``--dataset`` is a bundled key or a file to import."""
    if args.dataset in datasets.DATASETS:
        return datasets.load(args.dataset)
    args.file, args.format, args.level, args.zones = args.dataset, "auto", args.level, None
    return _import_file(args).matrix


def _cmd_reproduce_thesis(args) -> int:
    from dpcore import grids
    from dpcore.evaluation import thesis

    epsilons = grids.parse_grid(args.epsilons)
    scheduler = _scheduler(args)
    od = _load_for_report(args)
    try:  # plotly draws the report; dpcore itself only makes its data
        from report import thesis_html
    except ImportError as error:
        raise OSError(f"the report needs the repository's report package and plotly "
                      f"(python3 -m pip install -r requirements.txt): {error}") from None
    chapter = thesis.run(od, epsilons=epsilons, trials=args.trials, seed=args.seed,
                         n_jobs=args.jobs, scheduler=scheduler, progress=_progress,
                         source=datasets.DATASETS.get(args.dataset), protocol=args.protocol)
    private = args.dataset not in datasets.DATASETS   # the user's own table
    path = thesis_html.write(chapter, Path(args.out), private=private)
    verdicts = thesis.summary(chapter)
    tallies = []
    for name, rows in verdicts.groupby("Protocol", sort=False):
        tally = rows["Verdict"].value_counts()
        facts = tally.get("data alike", 0) + tally.get("data differ", 0)
        tallies.append(f"{name}: {tally.get('agrees', 0)} agree with the thesis, "
                       f"{tally.get('differs', 0)} differ, {facts} data facts, "
                       f"{tally.get('not checked', 0)} not checked, "
                       f"{tally.get('cannot tell', 0)} whose check cannot tell a planted break")
    print(f"reproduce-thesis: {chapter.table.attrs['jobs_done']:,} releases on {od.name} in "
          f"{_duration(chapter.seconds)}; {len(chapter.figures)} figures and "
          f"{len(chapter.tables)} tables ({'; '.join(tallies)}) → "
          f"{path} (and their CSVs in {args.out})" + (f"; {PRIVATE_NOTE}" if private else ""))
    return 0


def _mechanism_specs(args) -> list[tuple[str, dict]]:
    """``--mechanisms``, ``--param`` and ``--delta`` as (key, params) pairs, checked before any
    data is loaded (unknown keys fail listing the valid ones; δ goes to those that use it)."""
    keys = _csv_list(args.mechanisms, "--mechanisms")
    for key in keys:
        mechanisms.get(key)
    per_key = _params(args.param, keys)
    return [(key, {**per_key[key], **({"delta": args.delta} if args.delta is not None and
                                       mechanisms.get(key).uses_delta else {})})
            for key in keys]


def _cmd_sweep(args) -> int:
    specs = _mechanism_specs(args)
    keys = [key for key, _ in specs]
    if args.delta is not None and not any(mechanisms.get(key).uses_delta for key in keys):
        raise ValueError(f"none of {', '.join(keys)} uses δ; leave out --delta")
    epsilons = _csv_list(args.epsilons, "--epsilons", numbers=True)
    methods = _csv_list(args.postprocess, "--postprocess")
    od = _load(args)

    started = time.perf_counter()
    table = experiment.run(od, specs, epsilons, postprocess=methods, trials=args.trials,
                           seed=args.seed, n_jobs=args.jobs, k=args.k, top_n=args.top_n,
                           scenarios=[experiment.Scenario("all", _view(args))],
                           progress=_progress, scheduler=_scheduler(args))
    confidential.write_csv(table, args.out)  # errors measured against the true counts
    _say(f"sweep: {len(keys)} mechanism(s) × {len(epsilons)} ε × {args.trials} trial(s) = "
         f"{table.attrs['jobs_done']} releases, {len(methods)} post-processing: {len(table):,} "
         f"rows in {_duration(time.perf_counter() - started)} → {args.out} ({PRIVATE_NOTE})")
    return 0


def _cmd_heavy_hitters(args) -> int:
    from dpcore.evaluation import heavy_hitters

    if args.protocol not in heavy_hitters.PROTOCOLS:
        raise ValueError(f"unknown protocol {args.protocol!r}; choose one of "
                         f"{', '.join(heavy_hitters.PROTOCOLS)}")
    mechanisms.build("olh", epsilon=args.epsilon)  # a bad ε fails before the data is loaded
    seed = args.seed if args.seed is not None else release.fresh_seed()
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    found = heavy_hitters.find(args.protocol, od, args.epsilon, args.k, seed)
    seconds = time.perf_counter() - started
    table = heavy_hitters.compare(od, found, args.k)
    confidential.write_csv(table, args.out)  # the true top k beside the ones found
    score = heavy_hitters.scores(od, found, args.k)
    _say(f"{args.protocol} eps={args.epsilon:g}: top {args.k} of {od.domain_size} cells in "
         f"{_duration(seconds)}, recall {score['recall']:.0%}, precision "
         f"{score['precision']:.0%} (seed {seed}; {len(table)} rows → {args.out}; {PRIVATE_NOTE})")
    return 0


def _cmd_plan(args) -> int:
    specs = _mechanism_specs(args)
    if args.postprocess not in postprocess.METHODS:
        raise ValueError(f"unknown post-processing {args.postprocess!r}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    if (args.metric is None) == (args.answers is None):
        raise ValueError("give a target: --metric (with --target), or --answers with --within")
    if args.answers is not None:
        return _plan_answers(args, specs)
    target = planner.Target(args.metric, float("nan") if args.target is None else args.target,
                            args.probability)
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    answers = planner.plan(od, specs, target, postprocess=args.postprocess, trials=args.trials,
                           seed=args.seed, force_search=args.search, progress=_progress)
    confidential.write_csv(planner.plan_table(answers), args.out)  # ε chosen on the true table
    print(planner.sentence(answers, lambda key: mechanisms.get(key).name))
    print(f"plan: {len(answers)} mechanism(s) in {_duration(time.perf_counter() - started)} "
          f"→ {args.out} ({PRIVATE_NOTE})")
    return 0


def _plan_answers(args, specs) -> int:
    """``plan --answers``: the smallest ε per mechanism (raw releases) and for a flat OpenDP
    publish with discrete Laplace noise at which every answer meets the margin."""
    if args.within is None:
        raise ValueError("--answers needs --within: commuters (50) or a percentage (2%)")
    target = planning.parse_target(args.answers, args.within)
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    truth = release.true_values(od)
    plans = planning.plan(od, truth, specs, target)
    plans.append(publish_targets.plan(od, truth, publish.DISCRETE_LAPLACE, target))
    confidential.write_csv(planning.table(plans), args.out)   # ε chosen on the true table
    for plan in plans:
        print(f"{plan.mechanism}: ε = {plan.epsilon:.4g} ({plan.method})")
    print(f"plan: {target.describe()}: {len(plans)} answer(s) in "
          f"{_duration(time.perf_counter() - started)} → {args.out} ({PRIVATE_NOTE})")
    return 0


def _domain(args) -> published_domain.Domain | None:
    """The published domain the options name, checked before any data is loaded (None: the
    bundled dataset's own geography, or the data's zones with ``--domain-from-data``)."""
    if args.domain_zones:
        try:
            domain = published_domain.of_zones_file(_read_file(args.domain_zones),
                                                    Path(args.domain_zones).name)
        except importers.ImportFailed as failure:
            for notice in failure.notices:
                _say(notice, error=True)
            raise _InvalidInput from None
        for notice in sorted(domain.notices, key=lambda n: _SEVERITY[n.level]):
            _say(notice)
        return domain
    if args.domain_dataset:
        return published_domain.of_dataset(args.domain_dataset)
    if args.domain_codes:
        return published_domain.of_codes(args.domain_codes)
    if args.file and not args.domain_from_data:
        raise ValueError("publishing a file needs its domain (the zones a release can contain) "
                         "from a public source: --domain-zones ZONES.csv, --domain-dataset KEY "
                         "(a bundled geography) or --domain-codes A,B,…. "
                         f"{published_domain.DATA_DERIVED_RISK} To take the zones from the data "
                         "all the same, add --domain-from-data.")
    return None


def _cmd_publish(args) -> int:
    """Publish into ``--out`` (release.csv and manifest.json only); what is computed from the
    confidential table (``--audit``, ``--compare-out``) goes outside it, marked as such."""
    method = args.method or (publish.WLS if args.levels else publish.FLAT)
    if method == publish.TOPDOWN and args.mechanism != publish.GAUSSIAN:
        raise ValueError("TopDown publishes with the discrete Gaussian (zCDP): use --mechanism "
                         "gaussian or leave it out")
    mechanism = publish.GAUSSIAN if method == publish.TOPDOWN else args.mechanism
    delta = args.delta
    if delta is None and mechanism == publish.GAUSSIAN:
        delta = publish.DEFAULT_DELTA
        _say(f"note: no --delta given: using δ = {delta:g}, the page's default (give --delta to "
             "choose another)")
    options = dict(delta=delta or 0.0, neighbours=args.neighbours)
    # Settings, the domain and the private files' places are checked before the data is loaded.
    label = ledger.check_label(args.label)
    shares = publish.parse_shares(args.shares) if args.shares is not None else None
    publish.calibrate(mechanism, args.epsilon, options["delta"], args.neighbours)
    postprocess_key = args.postprocess or ("base" if method == publish.WLS else "base_pos")
    if args.audit:
        confidential.check_place(args.audit, args.out, "--audit")
    if args.compare and not args.compare_out:
        raise ValueError("--compare measures the methods against the confidential table: name "
                         "where its results go with --compare-out PATH.csv, outside --out")
    if args.compare_out:
        if not args.compare:
            raise ValueError("--compare-out is where --compare N writes: give --compare too")
        confidential.check_place(args.compare_out, args.out, "--compare-out")
    epsilons = (_csv_list(args.compare_epsilons, "--compare-epsilons", numbers=True)
                if args.compare_epsilons is not None else [args.epsilon])
    domain = _domain(args)
    data = _load(args)
    if domain is None:
        domain = (published_domain.of_dataset(args.dataset, data) if args.dataset
                  else published_domain.of_data(data))
    od = views.select(published_domain.apply(data, domain), _view(args))
    options["source"] = publish.input_entry(label, _view(args), domain.manifest_entry())

    def progress(done, total):
        if sys.stderr.isatty():
            print(f"\r{done:,}/{total:,} cells", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)

    started = time.perf_counter()
    if method == publish.TOPDOWN:
        if publish.exact_total(args.neighbours, not args.area):
            _say(f"note: {publish.TOPDOWN_TOTAL} (--neighbours add_remove)")
        result = publish.publish_topdown(od, args.epsilon, shares=shares, progress=progress,
                                         whole_table=not args.area, **options)
    elif method == publish.WLS:
        result = publish.publish_levels(od, args.mechanism, args.epsilon,
                                        fine_share=args.fine_share, postprocess=postprocess_key,
                                        progress=progress, **options)
    else:
        result = publish.publish(od, args.mechanism, args.epsilon, postprocess=postprocess_key,
                                 progress=progress, **options)
    entry = ledger.record(ledger.LedgerStore(), result, label, f"{method} ({mechanism})")
    csv_path, manifest_path = result.write(args.out)
    print(result.manifest["guarantee"])
    if not domain.public:
        _say(f"warning: the domain was taken from the data. {published_domain.DATA_DERIVED_RISK}",
             error=True)
    print(f"publish: {len(result.table):,} rows in {_duration(time.perf_counter() - started)} → "
          f"{csv_path}, {manifest_path}; ledger entry {entry.number}"
          + ("" if label else " (unlabelled: give --label to group it with others about the "
                              "same people)"))
    if args.audit:
        files = [args.file] + ([args.zones] if args.zones else []) if args.file else \
            datasets.DATASETS[args.dataset].files
        path = confidential.write(args.audit, confidential.json_text(
            publish.audit_record(od, files)), args.out, "--audit")
        print(f"private audit record (NOT FOR PUBLICATION: keep it apart) → {path}")
    if args.compare:
        _compare(args, od, epsilons, options["delta"] or publish.DEFAULT_DELTA)
    return 0


def _compare(args, od: ODMatrix, epsilons: list[float], delta: float) -> None:
    """Flat, WLS and TopDown side by side at the chosen budget (seeded simulated releases,
    measured against the confidential table: written outside --out, marked private)."""
    results = publish_compare.compare(od, epsilons, delta, trials=args.compare,
                                      seed=args.seed, neighbours=args.neighbours,
                                      whole_table=not args.area, progress=_progress)
    path = confidential.write(args.compare_out, confidential.csv_bytes(results), args.out,
                              "--compare-out")
    side = publish_compare.table(results, args.epsilon if args.epsilon in epsilons
                                 else epsilons[0])
    print(side.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"comparison (NOT FOR PUBLICATION: measured against the confidential table): "
          f"{args.compare} releases per method and ε → {path}")


def _cmd_lodes_records(args) -> int:
    """Write a published folder as LODES OD records beside an unchanged copy of its manifest
    (the guarantee and settings of the counts the records hold)."""
    records, _, level = lodes_export.published_records(args.folder)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    export.write_safe_csv(records, out / "od.csv")
    source, copy = Path(args.folder) / "manifest.json", out / "manifest.json"
    if source.resolve() != copy.resolve():
        copy.write_bytes(source.read_bytes())
    which = f" (the {level}; the other levels are its sums)" if level else ""
    _say(f"{len(records):,} LODES records{which} → {out / 'od.csv'}, manifest → {copy}; the "
         "age, earnings and industry columns are empty (see docs/ONTHEMAP.md)")
    return 0


def _cmd_ledger(args) -> int:
    store = ledger.LedgerStore(args.folder)
    if args.migrate:
        return _migrate_ledger(store)
    check = store.check()
    if check.refusal is not None:
        _say(f"ledger ({store.path}): REFUSED — {check.refusal.for_operator()}", error=True)
        return EXIT_INVALID_INPUT
    entries = check.entries
    problems = check.problems + ledger.check_anchors(entries, args.verify or [])
    shown = ledger.table(entries)
    print(shown.to_string(index=False) if len(shown) else
          "No entry is left to show." if problems else "No publication recorded yet.")
    print(ledger.totals_by_label(entries).to_string(
        index=False, float_format=lambda v: f"{v:.4g}", na_rep="") if entries else "")
    anchors = f"; {len(args.verify)} published folder(s) checked" if args.verify else ""
    if problems:
        _say(f"ledger ({store.path}): TAMPERED — "
             + "; ".join(problem.for_operator() for problem in problems), error=True)
    else:
        print(f"ledger ({store.path}): intact, {len(entries)} entries, keyed chain and head "
              f"record agree{anchors}")
    if args.out:
        export.write_safe_csv(shown, args.out)
    return 0 if not problems else EXIT_INVALID_INPUT


def _migrate_ledger(store: ledger.LedgerStore) -> int:
    """``ledger --migrate``: the operator moves an earlier version's unkeyed ledger (once)."""
    try:
        entries = store.migrate()
    except ledger.Refused as refusal:
        _say(f"ledger ({store.path}): {refusal}", error=True)
        return EXIT_INVALID_INPUT
    print(ledger.table(entries).to_string(index=False))
    print(f"ledger ({store.path}): moved {len(entries) - 1} entries of the unkeyed ledger into "
          "the keyed one; entry 1 records the migration. Check above that they are your "
          "publications: the unkeyed table had no key, so anyone who could write the database "
          "could have written it.")
    return 0


# -------------------------------------------------------------------------------------- parsing
def _add_view(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--roll-up", action="store_true",
                        help="roll the data up to its parent zones (e.g. ED → county)")
    parser.add_argument("--area", action="append", default=[], metavar="ID",
                        help="keep only commutes within this area: a parent zone id when the "
                             "data has a parent level, else a zone id (repeatable)")


def _add_input(parser: argparse.ArgumentParser, required: bool) -> None:
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--dataset", choices=list(datasets.DATASETS), help="a bundled dataset")
    source.add_argument("--file", metavar="PATH", help="a file to import (CSV)")
    parser.add_argument("--format", default="auto", choices=list(importers.FORMATS),
                        help="format of --file (default: detect)")
    parser.add_argument("--level", help="level of --file: ed or county (POWSCAR); block, tract "
                                        "or county (LODES)")
    parser.add_argument("--zones", metavar="PATH", help="optional zones file for --file "
                                                        "(zone, lat, lon[, parent])")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dpcore", description=(
        "Commuting Privacy Lab: differential privacy on origin–destination commuting data."))
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("datasets", help="list the bundled datasets, or check a file")
    _add_input(listing, required=False)
    listing.add_argument("--make", choices=[national.KEY],
                         help="generate a national-scale synthetic dataset into the cache folder "
                              "($DPCORE_CACHE, default ~/.cache/dpcore)")
    listing.add_argument("--scale", type=arguments.real("--scale"), default=1.0,
                         help=argparse.SUPPRESS)
    listing.set_defaults(handler=_cmd_datasets)

    commands.add_parser("mechanisms", help="list every mechanism and its parameters") \
        .set_defaults(handler=_cmd_mechanisms)

    release = commands.add_parser("release", help="release one matrix with one mechanism")
    _add_input(release, required=True)
    _add_view(release)
    release.add_argument("--mechanism", required=True, help="a key from `mechanisms`")
    release.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    release.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                         help="for (ε, δ) mechanisms (default theirs)")
    release.add_argument("--postprocess", default="base",
                         help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    release.add_argument("--seed", type=arguments.number(SEED, "--seed"),
                         help="seed of the release (default: random, printed)")
    release.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                         help="another mechanism parameter (repeatable)")
    release.add_argument("--only-nonzero", action="store_true",
                         help="write only cells whose true or rounded released count is not 0")
    release.add_argument("--out", required=True, metavar="OUT.csv")
    release.add_argument("--lodes-out", metavar="OD.csv",
                         help="also write the release as synthetic commuter records in the LODES "
                              "OD layout (needs non-negative whole numbers; see docs/ONTHEMAP.md)")
    release.set_defaults(handler=_cmd_release)

    sweep = commands.add_parser("sweep", help="run the experiment runner over a grid")
    _add_input(sweep, required=True)
    _add_view(sweep)
    sweep.add_argument("--mechanisms", required=True, metavar="K1,K2,…")
    sweep.add_argument("--epsilons", required=True, metavar="E1,E2,…")
    sweep.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                       help="δ for the mechanisms that use one")
    sweep.add_argument("--postprocess", default="base", metavar="KEY[,KEY…]",
                       help=f"from {', '.join(postprocess.METHODS)} (default base)")
    sweep.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="a parameter of the mechanisms that declare it (repeatable)")
    sweep.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=1)
    sweep.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    sweep.add_argument("--jobs", type=arguments.jobs, default=1,
                       help="worker processes (-1: every core; at most the cores)")
    _add_scheduler(sweep)
    sweep.add_argument("--k", type=arguments.number(TOP_K, "--k"), default=10,
                       help="size of the top-k sets (default 10)")
    sweep.add_argument("--top-n", type=arguments.number(TOP_N, "--top-n"), default=100,
                       help="true flows ranked for Spearman/Kendall (default 100)")
    sweep.add_argument("--out", required=True, metavar="OUT.csv")
    sweep.set_defaults(handler=_cmd_sweep)

    hitters = commands.add_parser(
        "heavy-hitters", help="find the top k commutes with PEM or TreeHist (ε-LDP)",
        description="Writes the true top k and the cells found (true and estimated counts, "
                    "ranks, found/missed), the same as the Explore page at this ε and seed.")
    _add_input(hitters, required=True)
    _add_view(hitters)
    hitters.add_argument("--protocol", required=True, choices=["pem", "treehist"])
    hitters.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    hitters.add_argument("--k", type=arguments.number(HEAVY_HITTERS_K, "--k"), default=10,
                         help="commutes to find (default 10)")
    hitters.add_argument("--seed", type=arguments.number(SEED, "--seed"),
                         help="seed (default: random, printed)")
    hitters.add_argument("--out", required=True, metavar="OUT.csv")
    hitters.set_defaults(handler=_cmd_heavy_hitters)

    plan = commands.add_parser("plan", help="the smallest ε at which each mechanism meets a "
                                            "target")
    _add_input(plan, required=True)
    _add_view(plan)
    plan.add_argument("--mechanisms", required=True, metavar="K1,K2,…")
    plan.add_argument("--metric", choices=[planner.CHECKS, *metrics.METRICS],
                      help=f"a metric, or '{planner.CHECKS}' (every planner check passes)")
    plan.add_argument("--answers", choices=list(planning.FAMILIES),
                      help="instead of --metric: a family of analysis answers (inflow, outflow, "
                           "live_and_work of every zone, or every OD pair), each of whose 95 %% "
                           "intervals must be within --within")
    plan.add_argument("--within", metavar="MARGIN",
                      help="with --answers: commuters (50) or a percentage of each answer (2%%)")
    plan.add_argument("--target", type=arguments.real("--target"),
                      help="the metric's threshold (not used with 'checks')")
    plan.add_argument("--probability", type=arguments.number(PASS_PROBABILITY, "--probability"),
                      default=0.9,
                      help="pass probability a searched answer must reach (default 0.9)")
    plan.add_argument("--postprocess", default="base",
                      help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    plan.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                      help="δ for the mechanisms that use one")
    plan.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="a parameter of the mechanisms that declare it (repeatable)")
    plan.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=20,
                      help="releases per searched ε")
    plan.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    plan.add_argument("--search", action="store_true",
                      help="search even where a closed form exists")
    plan.add_argument("--out", required=True, metavar="OUT.csv")
    plan.set_defaults(handler=_cmd_plan)

    out = commands.add_parser("publish", help="publish a release with OpenDP's noise and a "
                                              "manifest (not seeded)")
    _add_input(out, required=True)
    _add_view(out)
    out.add_argument("--method", choices=list(publish.METHODS),
                     help="flat: one level; wls: this level and its parent, least squares; "
                          "topdown: every level by TopDown (InfTDA, discrete Gaussian). "
                          "Default flat (wls with --levels)")
    out.add_argument("--mechanism", default=publish.GAUSSIAN, choices=list(publish.MECHANISMS),
                     help="noise of flat and wls (default gaussian; topdown: gaussian only)")
    out.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    out.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                     help="for gaussian (default 1e-6, as on the page)")
    out.add_argument("--label", metavar="TEXT",
                     help="who the data is about, for the budget ledger (e.g. \"Kildare commuters "
                          "2016\"): publications with one label compose; shown to everyone "
                          "using this server, so never a file name")
    out.add_argument("--neighbours", default="substitution",
                     choices=["substitution", "add_remove"])
    out.add_argument("--postprocess", choices=list(publish.POSTPROCESS),
                     help="base (keep negatives) or base_pos (negatives to 0); default base_pos, "
                          "base with --levels")
    out.add_argument("--levels", action="store_true",
                     help="the same as --method wls")
    out.add_argument("--fine-share", type=arguments.number(FINE_SHARE, "--fine-share"),
                     default=0.5,
                     help="with --levels: the zones' share of ε (default 0.5)")
    out.add_argument("--shares", metavar="S1,S2,…",
                     help="with --method topdown: each level's share of ρ, top level first, "
                          "each ≥ 1e-6, adding up to 1 (default even)")
    out.add_argument("--compare", type=arguments.number(TRIALS, "--compare"), metavar="RELEASES",
                     help="also measure flat, WLS and TopDown side by side at this budget over "
                          "this many seeded simulated releases each (into --compare-out)")
    out.add_argument("--compare-out", metavar="PATH.csv",
                     help="where --compare writes, outside --out: it is measured against the "
                          "confidential table, NOT FOR PUBLICATION")
    out.add_argument("--compare-epsilons", metavar="E1,E2,…",
                     help="with --compare: the ε values to compare at (default: --epsilon)")
    out.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0,
                     help="seed of --compare's releases (the publication itself is never "
                          "seeded)")
    out.add_argument("--out", required=True, metavar="DIR",
                     help="directory for release.csv and manifest.json (nothing else goes "
                          "there)")
    domain = out.add_mutually_exclusive_group()
    domain.add_argument("--domain-zones", metavar="PATH",
                        help="the published domain: a public zones file (zone[, parent]) "
                             "listing the zones a release can contain (may be the --zones file)")
    domain.add_argument("--domain-dataset", choices=list(datasets.DATASETS), metavar="KEY",
                        help="the published domain: a bundled dataset's geography")
    domain.add_argument("--domain-codes", metavar="A,B,…",
                        help="the published domain: these zone codes (origins and destinations)")
    domain.add_argument("--domain-from-data", action="store_true",
                        help="take the domain from the data's zones, accepting that this "
                             "publishes which zones have commuters")
    out.add_argument("--audit", metavar="PATH",
                     help="also write a private audit record (SHA-256 of the input, number of "
                          "commuters) here, outside --out: NOT FOR PUBLICATION")
    out.set_defaults(handler=_cmd_publish)

    records = commands.add_parser("lodes-records", help="a published folder's release as LODES "
                                                         "OD records, with its manifest")
    records.add_argument("folder", metavar="PUBLISHED_DIR",
                         help="a folder written by publish (release.csv and manifest.json)")
    records.add_argument("--out", required=True, metavar="DIR",
                         help="directory for od.csv (LODES OD layout) and a copy of manifest.json")
    records.set_defaults(handler=_cmd_lodes_records)

    book = commands.add_parser("ledger", help="every publication recorded in the budget ledger, "
                                              "the totals per label and the keyed chain's check "
                                              "(exit 1 when tampered with)")
    book.add_argument("--folder", metavar="DIR", help="folder of the app's database (default: "
                                                      "$DPCORE_CLASSROOM_DIR or the cache)")
    book.add_argument("--out", metavar="OUT.csv", help="also write the entries as CSV")
    task = book.add_mutually_exclusive_group()
    task.add_argument("--verify", nargs="+", metavar="DIR",
                      help="published folders whose manifests anchor the ledger: check that the "
                           "entry each names is still there, unchanged")
    task.add_argument("--migrate", action="store_true",
                      help="move the unkeyed ledger of a version before the keyed one into a "
                           "keyed ledger that has no entry yet (once; entry 1 records it). Check "
                           "the entries it prints: the unkeyed table could be anyone's")
    book.set_defaults(handler=_cmd_ledger)
    thesis = commands.add_parser(
        "reproduce-thesis", help="rerun the thesis's chapter 5 experiments into an HTML report",
        description="Reruns the experiments of the thesis's chapter 5 (central and local "
                    "mechanisms, ε grid, trials, county and ED level, post-processing, the ED "
                    "subsets, rank tables, running times) and writes report.html (self-contained, "
                    "works offline) with the CSV behind every figure and table.")
    thesis.add_argument("--dataset", default="ireland_ed", metavar="KEY|FILE",
                        help="a bundled dataset (ireland_ed: both levels, the default; "
                             "ireland_county: county level only) or a CSV file to import")
    thesis.add_argument("--level", help="level of a POWSCAR or LODES file (as for --file)")
    thesis.add_argument("--epsilons", default="0.5,1,1.5,2,2.5,3,3.5,4,4.5,5", metavar="E1,E2,…")
    thesis.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=10)
    thesis.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    thesis.add_argument("--protocol", choices=("written", "run", "both"), default="both",
                        help="the thesis as written (chapter 3's definitions), as run (what its "
                             "code computed, defects included), or both side by side (default)")
    thesis.add_argument("--jobs", type=arguments.jobs, default=-1,
                        help="worker processes without --scheduler (default -1: every core)")
    _add_scheduler(thesis)
    thesis.add_argument("--out", required=True, metavar="DIR")
    thesis.set_defaults(handler=_cmd_reproduce_thesis)
    analyse.add(commands, _add_input, _load)
    arguments.add_force(commands)
    return parser


def _add_scheduler(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler", metavar="local|tcp://HOST:PORT",
                        help="run the releases on Dask: 'local' starts a cluster of this "
                             "machine's cores, an address uses a running scheduler (its workers "
                             "need dpcore); default: this process (--jobs)")


#: Options whose value is a list of numbers, which may start with a minus sign.
_NUMBER_LISTS = ("--shares", "--compare-epsilons")


def _joined_lists(argv: list[str]) -> list[str]:
    """``--shares -0.5,1.5`` as ``--shares=-0.5,1.5``: argparse reads a value starting with '-'
    and holding a comma as an option, and the range check then says what is wrong with it."""
    out, tokens = [], list(argv)
    while tokens:
        token = tokens.pop(0)
        if token in _NUMBER_LISTS and tokens and re.match(r"-[\d.]", tokens[0]):
            token = f"{token}={tokens.pop(0)}"
        out.append(token)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 invalid input file, 2 bad command line)."""
    with arguments.escaped_output():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(_joined_lists(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # argparse has printed the usage and what was wrong
        return int(exit_.code or 0)
    try:
        arguments.prepare(args)
        return args.handler(args)
    except _InvalidInput:
        return EXIT_INVALID_INPUT
    except Exception as err:  # noqa: BLE001 — said in one line when expected, else re-raised
        message = (str(err) if isinstance(err, DomainTooLargeError)
                   else arguments.message(err))
        if message is None:
            raise
        _say(f"error: {message}", error=True)
        return EXIT_USAGE
