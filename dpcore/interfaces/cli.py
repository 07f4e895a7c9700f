"""Command line: ``python -m dpcore {datasets,mechanisms,release,sweep,heavy-hitters,plan,publish,lodes-records,ledger,reproduce-thesis} …``.

Parsing and dispatch here; each group of subcommands (its parser and its body) lives in
:mod:`dpcore.interfaces.commands` (``analyse`` in :mod:`dpcore.interfaces.analyse`), their
shared helpers in :mod:`dpcore.interfaces.commands.common`. Parsing and printing only; the work
is done by :mod:`dpcore.data.datasets`, :mod:`dpcore.data.importers`,
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
import re
import sys

from dpcore.data.od import DomainTooLargeError
from dpcore.interfaces import analyse, arguments
from dpcore.interfaces.commands import datasets, plan, publishing, releases, reproduce
from dpcore.interfaces.commands.common import (
    EXIT_INVALID_INPUT,
    EXIT_USAGE,
    _InvalidInput,
    _add_input,
    _load,
    _say,
)


# -------------------------------------------------------------------------------------- parsing
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dpcore", description=(
        "Commuting Privacy Lab: differential privacy on origin–destination commuting data."))
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for group in (datasets, releases, plan, publishing, reproduce):  # the order --help lists
        group.add(commands)
    analyse.add(commands, _add_input, _load)
    arguments.add_force(commands)
    return parser


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
