"""The command line's input checks: option types from the declared ranges, ``--out`` and ``--force``,
worker processes capped at the cores, and every error turned into a one-line message.

The ranges themselves live with the things they bound (:mod:`dpcore.limits`, the mechanisms'
:class:`~dpcore.mechanisms.base.Param`); this module only makes argparse use them, so
``--epsilon 1e-12`` fails before anything is loaded with the same range and reason as the pages.
Everything a command prints passes through :func:`dpcore.text.visible` (:func:`escaped_output`),
so a value holding control or bidirectional characters is quoted escaped, never obeyed by the
terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from pathlib import Path

import numpy as np

from dpcore.interfaces.store import StoreUnavailable
from dpcore.limits import workers
from dpcore.mechanisms.base import Param
from dpcore.text import plain_number, visible


class _VisibleStream:
    """A text stream that writes control and bidirectional characters escaped (line breaks and
    the carriage return of a progress line stay)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(visible(text, keep="\n\r"))

    def __getattr__(self, name):  # flush, isatty, encoding, … of the real stream
        return getattr(self._stream, name)


@contextlib.contextmanager
def escaped_output():
    """Within it, everything printed to stdout and stderr — messages, tables, argparse's usage
    and "invalid choice: …" — shows control and bidirectional characters escaped."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _VisibleStream(sys.stdout), _VisibleStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


def number(param: Param, option: str):
    """An argparse ``type`` for ``option``: the text as ``param``'s kind, checked against its
    declared range ("1e4" is accepted as a whole number, "1_0" and "١٠" are not numbers: see
    :func:`dpcore.text.plain_number`; the message names option, value, range and why)."""
    def parse(text: str):
        try:
            value = plain_number(text, whole=param.kind is int)
        except ValueError:
            kind = "a whole number" if param.kind is int else "a number"
            raise argparse.ArgumentTypeError(
                f"{option} must be {kind} in {param.interval()}; got {text!r}.") from None
        try:
            return param.check(value, "", subject=option)
        except (ValueError, TypeError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = param.name  # argparse names the type in its own messages
    return parse


def real(option: str):
    """An argparse ``type`` for a finite number with no declared range of its own
    (``--target``: the metric's threshold), read the plain way
    (:func:`dpcore.text.plain_number`). ``--target nan`` was "give a target value"."""
    def parse(text: str) -> float:
        try:
            value = plain_number(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{option} must be a finite number such as 5 or "
                                             f"0.25; got {text!r}.")
        return value
    parse.__name__ = option.lstrip("-")
    return parse


def jobs(text: str) -> int:
    """``--jobs``: -1 (every core) or a whole number ≥ 1; capped at the cores by :func:`prepare`."""
    try:
        value = plain_number(text, whole=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number (-1: every core); got "
                                         f"{text!r}.") from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"--jobs must be -1 (every core) or at least 1; got "
                                         f"{value}.")
    return value


def add_force(commands: argparse._SubParsersAction) -> None:
    """Give every command that writes (``--out``) a ``--force`` to overwrite what is there."""
    for parser in set(commands.choices.values()):
        if any("--out" in action.option_strings for action in parser._actions):
            parser.add_argument("--force", action="store_true",
                                help="overwrite --out if it exists (default: refuse)")


#: Options whose empty value means something (an unlabelled publication).
MAY_BE_EMPTY = ("label",)


def prepare(args: argparse.Namespace) -> None:
    """Checks that need the whole command line, before any work: an empty value (``--audit ""``
    wrote no audit record, ``--domain-codes ""`` fell back to another domain, as if the option
    were not given), ``--out`` or ``--lodes-out`` would overwrite something (without
    ``--force``), ``--jobs`` above the cores (capped, and said on stderr)."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if name not in MAY_BE_EMPTY and any(isinstance(v, str) and not v.strip() for v in values):
            option = "--" + name.replace("_", "-")
            raise ValueError(f"{option} is empty: give it a value (or leave {option} out if "
                             "it is optional: its default is in --help)")
    for flag in ("out", "lodes_out"):
        out = getattr(args, flag, None)
        if out is not None and not getattr(args, "force", False):
            _refuse_overwrite(Path(out), "--" + flag.replace("_", "-"))
    if getattr(args, "jobs", None) is not None:
        args.jobs, note = workers(args.jobs, "--jobs")
        if note:
            print(f"note: {note}", file=sys.stderr)


def _refuse_overwrite(path: Path, flag: str = "--out") -> None:
    """ValueError when ``path`` holds earlier results (a file, or a folder that is not empty)."""
    if path.is_dir():
        if any(path.iterdir()):
            raise ValueError(f"{flag} {path} is a folder that already holds files (earlier "
                             "results?); add --force to write into it anyway, or choose a new "
                             "folder.")
    elif path.exists():
        raise ValueError(f"{flag} {path} already exists; add --force to overwrite it, or choose "
                         "another name.")


#: Errors that a bad command line or bad data can cause and that are said, not traced back.
#: (:class:`StoreUnavailable`: the app's database, e.g. the budget ledger's, cannot serve now.)
EXPECTED = (ValueError, TypeError, KeyError, OSError, MemoryError, ArithmeticError,
            np.linalg.LinAlgError, StoreUnavailable)


def message(error: BaseException) -> str | None:
    """The one-line message for an error a command can meet, or None when it is a bug (the caller
    lets it through with its traceback). OpenDP's errors name the library's refusal."""
    if _is_opendp(error):
        return (f"OpenDP refused these settings ({getattr(error, 'variant', 'error')}: "
                f"{str(getattr(error, 'message', error)).strip()}); choose a larger ε or δ, or "
                "another mechanism.")
    if isinstance(error, MemoryError):
        return ("not enough memory for this command; use a smaller view (--area, --roll-up), "
                "fewer trials, mechanisms or ε values.")
    if isinstance(error, (ArithmeticError, np.linalg.LinAlgError)):
        return (f"the computation failed ({type(error).__name__}: {error}); the settings are "
                "probably at the edge of their ranges; try less extreme values.")
    if isinstance(error, StoreUnavailable) and error.detail:  # the operator runs the command
        return f"{error} ({error.detail})"
    if isinstance(error, EXPECTED):
        return str(error.args[0] if isinstance(error, KeyError) and error.args else error)
    return None


def _is_opendp(error: BaseException) -> bool:
    """OpenDP's exception, recognised without importing OpenDP (it loads a native library)."""
    return any(cls.__module__.startswith("opendp") for cls in type(error).__mro__)
