"""What every subcommand shares: printing (terminal controls escaped), reading --dataset or
--file as the Data page does, --param and comma lists read strictly, the input, view and
--scheduler options, and the exit codes :mod:`dpcore.interfaces.cli` returns.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dpcore import mechanisms
from dpcore.data import datasets, importers, views
from dpcore.data.importing.notices import Report
from dpcore.data.importing.reading import check_size
from dpcore.data.od import ODMatrix
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


def _view(args) -> views.View:
    return views.View(views.LEVEL_PARENT if args.roll_up else views.LEVEL_AS_LOADED,
                      tuple(args.area))


#: What the command line says of a table it wrote with the true counts in it or measured
#: against them (:func:`dpcore.confidential.write_csv` marks the file's first line).
PRIVATE_NOTE = "NOT FOR PUBLICATION: computed from the true counts, its first line says so"


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


def _add_scheduler(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler", metavar="local|tcp://HOST:PORT",
                        help="run the releases on Dask: 'local' starts a cluster of this "
                             "machine's cores, an address uses a running scheduler (its workers "
                             "need dpcore); default: this process (--jobs)")
