"""Untrusted text shown back to a person (control and bidirectional characters made visible), and
numbers typed by a person read only in the plain way.

A value typed into a link, a command line or a file can hold characters that drive a terminal
(C0/C1 controls such as ESC) or reorder the text around them (the bidirectional overrides and
isolates, e.g. U+202E RIGHT-TO-LEFT OVERRIDE, the "Trojan Source" characters of Boucher & Anderson
2021), so a message quoting it would say something other than what it means. Every message that
quotes such a value — the command line's and the pages' — passes it through :func:`visible`.

Python's ``float()`` and ``int()`` read more than people mean: ``float("1_0")`` is 10 (digit
grouping, PEP 515), ``float("١٠")`` is 10 too (any Unicode decimal digits), so ``--epsilon 1_0``
published at ε = 10. Every number typed on the command line or in a link is read by
:func:`plain_number`, which accepts only ASCII digits, one optional decimal point, an optional
exponent (and ``inf``/``nan``, so the range check can say what is wrong with them).
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, the bidirectional embeddings/overrides (U+202A–U+202E), marks
#: (U+200E, U+200F, U+061C) and isolates (U+2066–U+2069).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: A number written the plain way: "12", "-0.5", ".5", "1e-6", "+3E2"; inf and nan by name.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)",
                           re.ASCII | re.IGNORECASE)
_PLAIN_WHOLE = re.compile(r"[+-]?\d+", re.ASCII)


def has_controls(text) -> bool:
    """Whether ``text`` holds a control or bidirectional character (for inputs that refuse them
    rather than show them escaped, e.g. the budget ledger's label)."""
    return _CONTROLS.search(str(text)) is not None


def visible(text, keep: str = "") -> str:
    """``text`` with every control and bidirectional character written as its Python escape
    (U+202E → ``\\u202e``, ESC → ``\\x1b``), except the characters in ``keep`` (e.g. ``"\\n"``
    for a table's line breaks)."""
    return _CONTROLS.sub(
        lambda m: m.group() if m.group() in keep else m.group().encode("unicode_escape").decode(),
        str(text))


def plain_number(text, whole: bool = False) -> float | int:
    """``text`` (surrounding spaces ignored) as a float, or with ``whole`` as an int ("1e4" and
    "2.0" are whole too: 10000, 2); ValueError for anything not written the plain way ("1_0",
    "١٠", "0x10", "") and, with ``whole``, for a number that is not whole."""
    stripped = str(text).strip()
    if whole and _PLAIN_WHOLE.fullmatch(stripped):
        return int(stripped)
    if not _PLAIN_NUMBER.fullmatch(stripped):
        raise ValueError(f"not a number written with the digits 0-9: {text!r}")
    value = float(stripped)
    if whole:
        if not value.is_integer():
            raise ValueError(f"not a whole number: {text!r}")
        return int(value)
    return value
