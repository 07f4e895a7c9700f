"""Zone names as text: one spelling per name (Unicode NFKC, no invisible characters), bounded.

Two names that look identical must not become two zones. NFKC normalisation (Unicode Standard
Annex #15) folds compatibility variants — full-width letters, ligatures, no-break spaces, composed
and decomposed accents — into one spelling, and format characters (Unicode category Cf: zero-width
space and joiners, byte-order marks, bidirectional controls, soft hyphens) are removed, since they
are invisible on screen. Both corrections are reported. Names are capped at
:data:`MAX_NAME_CHARS` characters, so one hostile value cannot inflate every list of zones.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd

from dpcore.data.importing.notices import Report, quoted, rows_phrase

#: Longest zone id or label accepted, in characters (the longest Irish ED or US place name is
#: under 100; a spreadsheet cell pasted by mistake is far longer).
MAX_NAME_CHARS = 200


def visible(text: str) -> str:
    """The name with invisible and control characters written as ⟨U+200B⟩, for messages."""
    return "".join(f"⟨U+{ord(ch):04X}⟩" if unicodedata.category(ch) in ("Cf", "Cc") else ch
                   for ch in text)


def clean_names(values: pd.Series, rows: np.ndarray, column: str | None, report: Report
                ) -> pd.Series:
    """``values`` normalised to NFKC without format characters; error if a name is too long.

    Only distinct non-ASCII values are examined (ASCII text is already NFKC and has no format
    characters), so this costs little on large files. Stops the import (``name_too_long``) when a
    name exceeds :data:`MAX_NAME_CHARS`, before or after normalisation (NFKC can lengthen text).
    """
    codes, uniques = pd.factorize(values)
    uniques = np.asarray(uniques, dtype=object)
    cleaned = uniques.copy()
    length = np.fromiter((len(name) for name in uniques), dtype=np.int64, count=len(uniques))
    for i in np.flatnonzero(~pd.Series(uniques, dtype=object).str.isascii().to_numpy(dtype=bool)
                            & (length <= MAX_NAME_CHARS)):
        name = unicodedata.normalize("NFKC", uniques[i])
        name = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
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
    message = (f"Zone names with invisible characters or compatibility forms (such as full-width "
               f"letters) were respelled in a standard form (Unicode NFKC) on "
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
                    fix="Nothing to do; the names look the same as before.")
