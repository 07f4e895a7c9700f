"""The verdict table of a ``reproduce-thesis`` run as Markdown, one verdict column per protocol
(what docs/SWEEPS_AND_THESIS_REPORT.md shows, pasted from an actual run).

    python3 -m report.thesis_markdown thesis/            # reads thesis/verdicts.csv
    python3 -m report.thesis_markdown thesis/ --full     # with what each check found
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

MARK = {"agrees": "✓ agrees", "differs": "✗ differs", "not checked": "– not checked",
        "cannot tell": "? cannot tell",
        "data alike": "data fact: alike", "data differ": "data fact: differs"}


def _cell(text, limit: int | None) -> str:
    text = "" if pd.isna(text) else str(text).replace("|", "\\|").replace("\n", " ")
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def table(verdicts: pd.DataFrame, full: bool = False) -> str:
    """Item, then per protocol its verdict and (for a difference) its computed reason."""
    protocols = list(dict.fromkeys(verdicts["Protocol"]))
    head = ["Item"] + [f"{p}" for p in protocols] + [f"why ({p})" for p in protocols]
    if full:
        head += [f"this run ({p})" for p in protocols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for item, rows in verdicts.groupby("Item", sort=False):
        by = rows.set_index("Protocol")
        cells = [item] + [MARK.get(by.at[p, "Verdict"], by.at[p, "Verdict"]) for p in protocols]
        cells += [_cell(by.at[p, "Why it differs"], None if full else 160)
                  if by.at[p, "Verdict"] in ("differs", "cannot tell") else ""
                  for p in protocols]
        if full:
            cells += [_cell(by.at[p, "This run"], None) for p in protocols]
        lines.append("| " + " | ".join(cells) + " |")
    tally = "; ".join(f"{p}: " + ", ".join(
        f"{n} {w}" for w, n in verdicts[verdicts["Protocol"] == p]["Verdict"].value_counts()
        .items()) for p in protocols)
    return f"({tally})\n\n" + "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args(argv)
    verdicts = pd.read_csv(args.folder / "verdicts.csv", keep_default_na=False)
    print(table(verdicts, args.full))


if __name__ == "__main__":
    main()
