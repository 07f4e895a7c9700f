"""The checks of section 5.3, post-processing: figures 5.9–5.11 (the zero counts after Base-Pro,
the order Base-Cut < Base-Pos < Base, Hadamard's orderings by post-processing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.evaluation.thesis import reasons
from dpcore.evaluation.thesis.checks import (
    _below, _curve, _curve_se, _fmt, _gap_se, _stated, TOLERANCE_TEXT, _verdict
)
from dpcore.evaluation.thesis.protocol import Figure, HIGH_EPSILON, label, LOCAL, Verdict


def _zeros(frame: pd.DataFrame) -> int:
    return int(frame["released_zero"].sum())


#: The thesis's zero counts of figure 5.9 (Base-Pro, county, ε = 5).
THESIS_ZEROS_5_9 = {"grr": 0, "oue": 329, "olh": 338, "hm": 363}


def _judge_5_9(f: Figure) -> Verdict:
    trials = f.context["trials"]
    texts, ok = [], True
    for key, stated in THESIS_ZEROS_5_9.items():
        found = trials[trials["mechanism"] == key]["zeros"]
        good, text = _stated(found, stated, f"{label(key)} zeros")
        ok, texts = ok and good, texts + [text]
    note = reasons.local_zeros_note(f.context["true_counts"], trials, THESIS_ZEROS_5_9,
                                    HIGH_EPSILON, reasons.SHORT_NAMES)
    return _verdict(f, "Randomised response sets no commute to 0; unary encoding, local hashing "
                       "and Hadamard set 329, 338 and 363 to 0 (Hadamard the most).",
                    "each of the thesis's zero counts within the trials' spread (trial-0 "
                    "release drawn)", "; ".join(texts), ok, note)


def _above(low: float, high: float) -> str:
    """How far ``low`` is above (or at) ``high``, relatively."""
    if low == high:
        return "equal"
    excess = low / high - 1 if high else float("inf")
    return f"{100 * excess:+.2f} %" if abs(excess) >= 1e-4 else f"{100 * excess:+.2g} %"


def _judge_5_10(f: Figure) -> Verdict:
    """Each break of Base-Cut < Base-Pos < Base is a finding of its own, with the curves' values
    and the relative gap (:func:`explain` adds which protocol difference removes it)."""
    data, findings, failing = f.data, [], []
    gains = {}
    names = {"base": "Base", "base_pos": "Base-Pos", "base_cut": "Base-Cut"}
    for key in LOCAL:
        curve = {m: _curve(data, mechanism=key, postprocess=m) for m in names}
        se = {m: _curve_se(data, mechanism=key, postprocess=m) for m in names}
        for e in curve["base"].index:
            broken = False
            for low, high in (("base_cut", "base_pos"), ("base_pos", "base")):
                a, b = float(curve[low][e]), float(curve[high][e])
                sa, sb = float(se[low][e]), float(se[high][e])
                if not _below(a, b, sa, sb):
                    broken = True
                    findings.append((((key, float(e)), f"{names[low]} < {names[high]}"),
                                     f"{label(key)} at ε = {e:g}: {names[low]} {_fmt(a)} not "
                                     f"below {names[high]} {_fmt(b)} ({_above(a, b)}"
                                     f"{_gap_se(a, b, sa, sb)})"))
            if broken:
                failing.append(f"{label(key)} at ε = {e:g}")
        base, cut = curve["base"], curve["base_cut"]

        def gain(i):  # Base-Cut's relative gain over Base at the i-th ε, and its s.e.
            g = 1 - cut.iloc[i] / base.iloc[i]
            return float(g), float((1 - g) * np.hypot(se["base_cut"].iloc[i] / cut.iloc[i],
                                                      se["base"].iloc[i] / base.iloc[i]))
        (first, s_first), (last, s_last) = gain(0), gain(-1)
        gains[key] = (first, last)
        if not _below(last, first, s_last, s_first):
            findings.append((((key, None), "gain shrinks"),
                             f"{label(key)}: Base-Cut's gain over Base grows from {first:.0%} "
                             f"to {last:.0%}{_gap_se(last, first, s_last, s_first)}"))
    ours = ("Base-Cut < Base-Pos < Base everywhere" if not failing
            else "order broken for " + ", ".join(failing[:6]) + ("…" if len(failing) > 6 else ""))
    ours += "; Base-Cut's gain over Base " + ", ".join(
        f"{label(k)} {a:.0%} → {b:.0%}" for k, (a, b) in gains.items())
    return _verdict(f, "Base-Cut < Base-Pos < Base in RMSE for all four local mechanisms at every "
                       "ε; little difference at ε = 5.",
                    "Base-Cut < Base-Pos < Base at every ε for every local mechanism; Base-Cut's "
                    f"relative gain smaller at the last ε than at the first; {TOLERANCE_TEXT}",
                    ours, not findings, "; ".join(text for _, text in findings),
                    findings=tuple(findings))


def _judge_5_11(f: Figure) -> Verdict:
    data = f.data
    cut = data[data["postprocess"] == "base_cut"]
    kept, dropped = cut[~cut["released_zero"]], cut[cut["released_zero"]]
    popular = bool(len(kept) and len(dropped)
                   and kept["true_rank"].median() < dropped["true_rank"].median())
    trials = f.context["trials"]
    hm = trials[trials["mechanism"] == "hm"]
    pos_ok, pos = _stated(hm["zeros"], 363, "zeros after Base-Pos")
    cut_ok, cut_text = _stated(hm["zeros_cut"], 782, "after Base-Cut")
    ours = (f"{pos}; {cut_text}; trial 0: median true rank of the kept commutes "
            f"{kept['true_rank'].median():.0f}, of the zeroed {dropped['true_rank'].median():.0f}")
    return _verdict(f, "Moving from Base-Pos to Base-Cut, the zeroed commutes go from 363 to 782; "
                       "the kept ones are the most frequented.",
                    "363 and 782 within the trials' spread; the kept commutes have the lower "
                    "(more popular) median true rank", ours, pos_ok and cut_ok and popular,
                    reasons.base_cut_note(f.context.get("true_counts", ()), trials, (363, 782),
                                          HIGH_EPSILON))
