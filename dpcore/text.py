"""Untrusted text shown back to a person: control and bidirectional characters made visible.

A value typed into a link, a command line or a file can hold characters that drive a terminal
(C0/C1 controls such as ESC) or reorder the text around them (the bidirectional overrides and
isolates, e.g. U+202E RIGHT-TO-LEFT OVERRIDE, the "Trojan Source" characters of Boucher & Anderson
2021), so a message quoting it would say something other than what it means. Every message that
quotes such a value — the command line's and the pages' — passes it through :func:`visible`.
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, the bidirectional embeddings/overrides (U+202A–U+202E), marks
#: (U+200E, U+200F, U+061C) and isolates (U+2066–U+2069).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text, keep: str = "") -> str:
    """``text`` with every control and bidirectional character written as its Python escape
    (U+202E → ``\\u202e``, ESC → ``\\x1b``), except the characters in ``keep`` (e.g. ``"\\n"``
    for a table's line breaks)."""
    return _CONTROLS.sub(
        lambda m: m.group() if m.group() in keep else m.group().encode("unicode_escape").decode(),
        str(text))
