"""The verdicts: each item's judge (:data:`JUDGES`), the verdict tables, and the computed reason
of a difference — the item rebuilt with one protocol switch toggled at a time (:func:`explain`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from dpcore.evaluation.thesis import as_run, planted
from dpcore.evaluation.thesis.checks_central import _judge_5_1, _judge_5_2, _judge_5_3, _judge_5_4
from dpcore.evaluation.thesis.checks_ed import (
    _judge_5_12, _judge_5_13, _judge_5_14, _judge_5_15, _judge_5_16, _judge_5_17
)
from dpcore.evaluation.thesis.checks_local import (
    _judge_5_7, _judge_5_8, _judge_bars_local, _judge_table
)
from dpcore.evaluation.thesis.checks_postprocessing import _judge_5_10, _judge_5_11, _judge_5_9
from dpcore.evaluation.thesis.protocol import Absent, Chapter, Figure, HIGH_EPSILON, ITEMS, Verdict
from dpcore.evaluation.thesis.times import _judge_times


def summary(chapter: Chapter) -> pd.DataFrame:
    """The verdicts as one table: protocol, item, what the thesis says, the check, ours,
    verdict, why."""
    return pd.DataFrame([{"Protocol": v.protocol, "Item": v.ref, "Thesis": v.thesis,
                          "Check": v.criterion, "This run": v.ours, "Verdict": v.word,
                          "Why it differs": v.reason} for v in chapter.verdicts])


def verdict_table(chapter: Chapter) -> pd.DataFrame:
    """One row per item, one verdict column per protocol (the README's and docs' table)."""
    frame = summary(chapter)
    return frame.pivot(index="Item", columns="Protocol", values="Verdict").reindex(
        [ref for ref, _ in ITEMS])[list(chapter.by_protocol)]


JUDGES: dict[str, Callable] = {
    "Figure 5.1": _judge_5_1, "Figure 5.2": _judge_5_2, "Figure 5.3": _judge_5_3,
    "Figure 5.4": _judge_5_4, "Figure 5.5": _judge_bars_local, "Figure 5.6": _judge_bars_local,
    "Figure 5.7": _judge_5_7, "Figure 5.8": _judge_5_8, "Table 5.1": _judge_table,
    "Table 5.2": _judge_table, "Figure 5.9": _judge_5_9, "Figure 5.10": _judge_5_10,
    "Figure 5.11": _judge_5_11, "Figure 5.12": _judge_5_12, "Figure 5.13": _judge_5_13,
    "Figure 5.14": _judge_5_14, "Table 5.3": _judge_table, "Table 5.4": _judge_table,
    "Figure 5.15": _judge_5_15, "Figure 5.16": _judge_5_16, "Figure 5.17": _judge_5_17,
    "Running times": _judge_times,
}


def judge(item, planted_breaks: bool = False):
    """``item`` with its verdict computed from its data (:data:`JUDGES`); with
    ``planted_breaks``, "cannot tell" when the check agrees too on a break planted in the item's
    data (:func:`planted.judged`)."""
    from dataclasses import replace

    verdict = JUDGES[item.ref](item)
    if planted_breaks:
        verdict = planted.judged(item, verdict, JUDGES[item.ref])
    return replace(item, verdict=verdict)


def _judged(item):
    """:func:`judge`, or a "not checked" verdict when the ε grid is too short for a trend."""
    from dataclasses import replace

    if isinstance(item, Figure) and item.kind == "lines" and item.data["epsilon"].nunique() < 2:
        return replace(item, verdict=Verdict(item.ref, "", "", "one ε only", None,
                                             "needs at least two ε to compare curves"))
    return judge(item)


def data_facts(truth: np.ndarray, level: str) -> str:
    """What of the data decides the thesis's zero counts (5.4, 5.9, 5.11), computed: its empty and
    small cells at the coarse level. Data without non-empty commutes below the stability
    histogram's threshold (e.g. a published file whose small cells were suppressed) gives it
    nothing to zero."""
    counts = np.asarray(truth)
    present = counts[counts > 0]
    smallest = int(present.min()) if present.size else 0
    tau = as_run.stability_threshold(HIGH_EPSILON, int(counts.sum())) if present.size else 0.0
    small = int(((counts > 0) & (counts <= 10)).sum())
    text = (f"At {level} level: n = {int(counts.sum()):,}, |X| = {counts.size:,}, "
            f"{int((counts == 0).sum()):,} empty cells, {small:,}"
            f" of 1–10 commuters, {int(((counts > 0) & (counts < tau)).sum()):,} non-empty below "
            f"the stability histogram's threshold at ε = 5 (≈ {tau:.1f}); smallest non-zero count "
            f"{smallest:,}.")
    if present.size and not ((counts > 0) & (counts < tau)).any():
        text += (" No non-empty commute lies below the threshold: the stability histogram can "
                 "zero none here, so figure 5.4's 96 zeros cannot be reproduced on this data (as "
                 "on a published file whose small cells were suppressed).")
    return text


def _attributed(findings: tuple, toggles: list) -> str:
    """Each finding with the protocol differences whose toggling alone removes it (and what that
    toggled run finds at the same place instead), or that none does: computed, finding by
    finding."""
    parts = []
    for key, text in findings:
        removed = []
        for name, found in toggles:
            if key not in {k for k, _ in found}:
                instead = [t for k, t in found if k[0] == key[0]]
                removed.append(f"{name} alone removes it" + (
                    f" (that run finds there instead: {'; '.join(instead)})" if instead else ""))
        parts.append(text + " — " + ("; or ".join(removed) if removed
                                     else "no single protocol difference removes it"))
    return "; ".join(parts)


def explain(protocol, build: Callable) -> list:
    """The protocol's items, each "differs" given its computed reason: the item rebuilt with one
    protocol difference toggled at a time (:data:`as_run.DIFFERENCES`); the ones that flip
    it to "agrees" are named. When none does alone, the other protocol (all switched) is tried;
    when that does not either, no protocol difference explains it and what remains is said
    (the judge's computed facts about the data). Each "agrees" is judged again on breaks planted
    in its data (:func:`planted.judged`): "cannot tell" when its check agrees on one too (the
    toggled rebuilds keep the plain check: a switch that makes it agree flips it)."""
    from dataclasses import replace

    items = build(protocol)
    other = as_run.RUN if protocol.switches != as_run.RUN.switches else as_run.WRITTEN
    out = []
    for index, item in enumerate(items):
        verdict = item.verdict
        if isinstance(item, Absent):
            out.append(replace(item, protocol=protocol.name))
            continue
        if verdict is None or verdict.agrees is not False:  # an agreement is tested (.planted)
            out.append(item if verdict is None else replace(item, verdict=replace(
                planted.judged(item, verdict, JUDGES[item.ref]), protocol=protocol.name)))
            continue
        flips, toggles = [], []
        for key, difference in as_run.DIFFERENCES.items():
            toggled = build(protocol.toggled(key))[index].verdict
            verb = "switching off" if key in protocol.switches else "switching on"
            name = (f"{verb} “{difference.title}”"
                    + (" (a defect of the original code)" if difference.defect else ""))
            if toggled is not None and toggled.agrees:
                flips.append(name)
            if toggled is not None and toggled.agrees is not None:
                toggles.append((name, toggled.findings))
        if flips:
            reason = "computed: " + " or ".join(flips) + " alone makes it agree"
        elif build(other)[index].verdict.agrees:
            reason = (f"computed: no single difference flips it, all of them together (the "
                      f"{other.name} protocol) do")
        else:
            remains = (_attributed(verdict.findings, toggles) if verdict.findings
                       else verdict.data_note or f"this run: {verdict.ours}")
            reason = ("computed: no protocol difference flips it (each toggled alone, and all "
                      "at once); what remains: " + remains)
        out.append(replace(item, verdict=replace(verdict, reason=reason,
                                                 protocol=protocol.name)))
    return out
