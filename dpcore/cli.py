"""Command line: ``python -m dpcore {datasets,mechanisms,release,sweep} …``.

Parsing and printing only; the work is done by :mod:`dpcore.datasets`, :mod:`dpcore.importers`,
:mod:`dpcore.mechanisms`, :mod:`dpcore.postprocess`, :mod:`dpcore.experiment` and
:mod:`dpcore.export`. Bad input gives a one-line message (and the importer's notices for files),
never a traceback. Exit codes: 0 success, 1 the input file is invalid, 2 a bad command line.

Examples::

    python -m dpcore datasets
    python -m dpcore datasets --file flows.csv --format long
    python -m dpcore mechanisms
    python -m dpcore release --dataset ireland_county --mechanism oue --epsilon 1 --seed 7 \\
        --out oue.csv
    python -m dpcore sweep --dataset ireland_county --mechanisms laplace,oue --epsilons 0.5,1,5 \\
        --trials 10 --jobs 2 --out sweep.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from dpcore import (datasets, experiment, export, importers, mechanisms, national, postprocess,
                    release, views)
from dpcore.od import DomainTooLargeError, ODMatrix

EXIT_INVALID_INPUT, EXIT_USAGE = 1, 2
_SEVERITY = {"error": 0, "warning": 1, "info": 2}


class _InvalidInput(Exception):
    """The input file could not be imported (its notices have been printed)."""


# ----------------------------------------------------------------------------------------- output
def _table(headers: list[str], rows: list[list]) -> str:
    """Aligned plain-text table; numbers right-aligned with thousands separators."""
    def cell(value):
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return f"{value:,}"
        return str(value)

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
    """The file's bytes, at most one more than the importer accepts (it reports the size)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(importers.MAX_UPLOAD_BYTES + 1)
    except OSError as err:
        raise OSError(f"cannot read {path}: {err.strerror or err}") from None


def _import_file(args) -> importers.ImportResult:
    """Import ``--file`` (and ``--zones``), printing every notice as the Data page lists them."""
    zones = (_read_file(args.zones), Path(args.zones).name) if args.zones else None
    try:
        result = importers.import_od(_read_file(args.file), Path(args.file).name,
                                     format=args.format, level=args.level, zones=zones)
    except importers.ImportFailed as failure:
        for notice in sorted(failure.notices, key=lambda n: _SEVERITY[n.level]):
            print(notice, file=sys.stderr)
        raise _InvalidInput from None
    for notice in sorted(result.notices, key=lambda n: _SEVERITY[n.level]):
        print(notice)
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
    try:
        return param.kind(float(text)) if param.kind in (int, float) else param.kind(text)
    except ValueError:
        raise ValueError(f"the '{param.name}' parameter must be a number; got {text!r}") from None


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


def _csv_list(text: str, kind=str) -> list:
    items = [item.strip() for item in text.split(",") if item.strip()]
    try:
        return [kind(item) for item in items]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of numbers; got {text!r}") from None


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
        print(_table(_FIGURE_HEADERS, [_figures_row(Path(args.file).name,
                                                     importers.FORMATS[result.format],
                                                     result.matrix)]))
        return 0
    chosen = [datasets.DATASETS[args.dataset]] if args.dataset else datasets.list_datasets()
    rows = [_figures_row(info.key, info.title, datasets.load(info.key)) for info in chosen]
    print(_table(_FIGURE_HEADERS, rows))
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
    print(_table(["key", "name", "model", "guarantee", "fast release", "parameters"], rows))
    return 0


def _view(args) -> views.View:
    return views.View(views.LEVEL_PARENT if args.roll_up else views.LEVEL_AS_LOADED,
                      tuple(args.area))


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
    true = od.to_dense()
    result = release.run(od, spec, true_counts=true, score=False)
    frame = release.release_table(od, true, result.released, args.only_nonzero)
    export.write_safe_csv(frame, args.out)
    print(f"{args.mechanism} eps={args.epsilon:g}: released {od.domain_size} cells in "
          f"{_duration(result.seconds)} (seed {seed}, {args.postprocess}; {len(frame)} rows → "
          f"{args.out})")
    return 0


def _cmd_sweep(args) -> int:
    keys = _csv_list(args.mechanisms)
    if not keys:
        raise ValueError("--mechanisms needs at least one mechanism key")
    for key in keys:
        mechanisms.get(key)  # unknown keys fail here, listing the valid ones
    per_key = _params(args.param, keys)
    if args.delta is not None and not any(mechanisms.get(key).uses_delta for key in keys):
        raise ValueError(f"none of {', '.join(keys)} uses δ; leave out --delta")
    specs = []
    for key in keys:
        params = dict(per_key[key])
        if args.delta is not None and mechanisms.get(key).uses_delta:
            params["delta"] = args.delta
        specs.append((key, params))
    epsilons = _csv_list(args.epsilons, float)
    methods = _csv_list(args.postprocess)
    od = _load(args)

    def progress(done, total):
        if sys.stderr.isatty():
            print(f"\r{done}/{total} releases", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)

    started = time.perf_counter()
    table = experiment.run(od, specs, epsilons, postprocess=methods, trials=args.trials,
                           seed=args.seed, n_jobs=args.jobs, k=args.k, top_n=args.top_n,
                           scenarios=[experiment.Scenario("all", _view(args))],
                           progress=progress)
    export.write_safe_csv(table, args.out)
    print(f"sweep: {len(keys)} mechanism(s) × {len(epsilons)} ε × {args.trials} trial(s) = "
          f"{table.attrs['jobs_done']} releases, {len(methods)} post-processing: {len(table):,} "
          f"rows in {_duration(time.perf_counter() - started)} → {args.out}")
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
    listing.add_argument("--scale", type=float, default=1.0, help=argparse.SUPPRESS)
    listing.set_defaults(handler=_cmd_datasets)

    commands.add_parser("mechanisms", help="list every mechanism and its parameters") \
        .set_defaults(handler=_cmd_mechanisms)

    release = commands.add_parser("release", help="release one matrix with one mechanism")
    _add_input(release, required=True)
    _add_view(release)
    release.add_argument("--mechanism", required=True, help="a key from `mechanisms`")
    release.add_argument("--epsilon", type=float, required=True)
    release.add_argument("--delta", type=float, help="for (ε, δ) mechanisms (default theirs)")
    release.add_argument("--postprocess", default="base",
                         help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    release.add_argument("--seed", type=int, help="seed of the release (default: random, printed)")
    release.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                         help="another mechanism parameter (repeatable)")
    release.add_argument("--only-nonzero", action="store_true",
                         help="write only cells whose true or rounded released count is not 0")
    release.add_argument("--out", required=True, metavar="OUT.csv")
    release.set_defaults(handler=_cmd_release)

    sweep = commands.add_parser("sweep", help="run the experiment runner over a grid")
    _add_input(sweep, required=True)
    _add_view(sweep)
    sweep.add_argument("--mechanisms", required=True, metavar="K1,K2,…")
    sweep.add_argument("--epsilons", required=True, metavar="E1,E2,…")
    sweep.add_argument("--delta", type=float, help="δ for the mechanisms that use one")
    sweep.add_argument("--postprocess", default="base", metavar="KEY[,KEY…]",
                       help=f"from {', '.join(postprocess.METHODS)} (default base)")
    sweep.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="a parameter of the mechanisms that declare it (repeatable)")
    sweep.add_argument("--trials", type=int, default=1)
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--jobs", type=int, default=1, help="worker processes (-1: every core)")
    sweep.add_argument("--k", type=int, default=10, help="size of the top-k sets (default 10)")
    sweep.add_argument("--top-n", type=int, default=100,
                       help="true flows ranked for Spearman/Kendall (default 100)")
    sweep.add_argument("--out", required=True, metavar="OUT.csv")
    sweep.set_defaults(handler=_cmd_sweep)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 invalid input file, 2 bad command line)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed the usage and what was wrong
        return int(exit_.code or 0)
    try:
        return args.handler(args)
    except _InvalidInput:
        return EXIT_INVALID_INPUT
    except (ValueError, TypeError, KeyError, OSError, DomainTooLargeError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {message}", file=sys.stderr)
        return EXIT_USAGE
