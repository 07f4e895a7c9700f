"""Zone names as text: one spelling per name (Unicode NFKC, no invisible characters, control
characters written as escapes), bounded.

Two names that look identical must not become two zones. NFKC normalisation (Unicode Standard
Annex #15) folds compatibility variants — full-width letters, ligatures, no-break spaces, composed
and decomposed accents — into one spelling, and format characters (Unicode category Cf: zero-width
space and joiners, byte-order marks, bidirectional controls, soft hyphens) are removed, since they
are invisible on screen. Control characters (C0, DEL, C1: an ESC that recolours a terminal, a tab
or line break inside a name) are written as their Python escapes (ESC → ``\x1b``,
:func:`dpcore.text.visible`), so the name that reaches every table, CSV and terminal is inert
text; an imported ``release.csv`` gives back the same names, since the escapes are plain text.
Every correction is reported. Names are capped at :data:`MAX_NAME_CHARS` characters, so one
hostile value cannot inflate every list of zones.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pandas as pd

from dpcore.data.importing.notices import Report, quoted, rows_phrase
from dpcore.text import visible as escaped

#: Longest zone id or label accepted, in characters (the longest Irish ED or US place name is
#: under 100; a spreadsheet cell pasted by mistake is far longer).
MAX_NAME_CHARS = 200
#: The control characters an ASCII name can hold (C0 and DEL).
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def visible(text: str) -> str:
    """The name with invisible and control characters written as ⟨U+200B⟩, for messages."""
    return "".join(f"⟨U+{ord(ch):04X}⟩" if unicodedata.category(ch) in ("Cf", "Cc") else ch
                   for ch in text)


def spelled(name: str) -> str:
    """One name in its one spelling: NFKC, format characters removed, controls escaped."""
    name = unicodedata.normalize("NFKC", name)
    return escaped("".join(ch for ch in name if unicodedata.category(ch) != "Cf"))


def clean_names(values: pd.Series, rows: np.ndarray, column: str | None, report: Report
                ) -> pd.Series:
    """``values`` normalised to NFKC without format characters, control characters escaped;
    error if a name is too long.

    Only distinct non-ASCII values, and ASCII ones holding a control character, are examined
    (other ASCII text is already NFKC and has neither), so this costs little on large files. Stops
    the import (``name_too_long``) when a name exceeds :data:`MAX_NAME_CHARS`, before or after
    the respelling (NFKC and escapes can lengthen text).
    """
    codes, uniques = pd.factorize(values)
    uniques = np.asarray(uniques, dtype=object)
    cleaned = uniques.copy()
    length = np.fromiter((len(name) for name in uniques), dtype=np.int64, count=len(uniques))
    text = pd.Series(uniques, dtype=object)
    examine = ~text.str.isascii().to_numpy(dtype=bool)
    if _ASCII_CONTROL.search("".join(uniques[~examine])):  # one pass over all the ASCII names
        examine |= text.str.contains(_ASCII_CONTROL).to_numpy(dtype=bool)
    for i in np.flatnonzero(examine & (length <= MAX_NAME_CHARS)):
        name = spelled(uniques[i])
        length[i] = len(name)
        if length[i] <= MAX_NAME_CHARS:
            cleaned[i] = name
    too_long = length > MAX_NAME_CHARS
    if too_long.any():
        first = int(np.flatnonzero(too_long[codes])[0])
        where = f" in column “{column}”" if column else ""
        report.fail("name_too_long",
                    f"A zone name{where} on row {rows[first]} has {length[codes[first]]:,} "
                    f"characters (it starts “{visible(uniques[codes[first]][:40])}…”); names "
                    f"may have at most {MAX_NAME_CHARS} characters.",
                    row=rows[first], column=column,
                    fix="Check that this column holds zone names or codes, and that a quote or "
                        "a separator has not joined several cells into one; shorten the name.")
    changed = cleaned != uniques
    if not changed.any():
        return values
    _report_normalised(uniques, cleaned, changed, codes, rows, column, report)
    return pd.Series(cleaned[codes], index=values.index, dtype=object)


def _report_normalised(uniques, cleaned, changed, codes, rows, column, report: Report) -> None:
    """Info when names were respelled; a warning when that made different names one zone."""
    merged = pd.Series(cleaned, dtype=object).duplicated(keep=False).to_numpy() & changed
    examples = [f"“{visible(before)}” → “{after}”"
                for before, after in zip(uniques[changed][:3], cleaned[changed][:3])]
    message = (f"Zone names with invisible or control characters or compatibility forms (such "
               f"as full-width letters) were respelled in a standard form (Unicode NFKC, control "
               f"characters written as escapes such as \\x1b) on "
               f"{rows_phrase(rows[changed[codes]])}: {', '.join(examples)}.")
    if merged.any():
        same = cleaned[merged][0]
        message += (f" Names that differed only in this way are now one zone, e.g. "
                    f"{quoted([visible(name) for name in uniques[cleaned == same]])}.")
        report.warning("names_normalised", message, row=rows[changed[codes]][0], column=column,
                       fix="Nothing to do if they are the same zone; otherwise give them names "
                           "that differ visibly.")
    else:
        report.info("names_normalised", message, row=rows[changed[codes]][0], column=column,
                    fix="Nothing to do; the names look the same as before (a control "
                        "character, invisible before, now shows as its escape).")
