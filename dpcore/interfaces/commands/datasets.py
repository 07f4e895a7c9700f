"""``datasets`` (the bundled datasets, or a file checked) and ``mechanisms`` (every mechanism and
its parameters): listings printed as aligned tables.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from dpcore import mechanisms
from dpcore.data import datasets, importers, national
from dpcore.data.od import ODMatrix
from dpcore.interfaces import arguments
from dpcore.text import visible
from dpcore.interfaces.commands.common import (
    _say,
    _import_file,
    _check_file_options,
    _add_input,
)


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


def add(commands: argparse._SubParsersAction) -> None:
    """The ``datasets`` and ``mechanisms`` subcommands."""
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
