"""The checks of section 5.1, the central mechanisms: figures 5.1–5.4 (the Laplace bars, the two
curves' order at each level, the stability histogram's zeros).
"""

from __future__ import annotations

import pandas as pd

from dpcore.evaluation.thesis import reasons
from dpcore.evaluation.thesis.checks import (
    _below, _curve, _curve_se, empty_cell_sd, _fmt, _stated, TOLERANCE_TEXT, _verdict
)
from dpcore.evaluation.thesis.protocol import CENTRAL, Figure, HIGH_EPSILON, label, Verdict


def _judge_5_1(f: Figure) -> Verdict:
    thesis_text = ("The two levels' counts differ greatly (the busiest ED commute is 5,871, 0.21 % "
                   "of n); Laplace noise at ε = 0.5 leaves the top 30 nearly unchanged.")
    data, n = f.data, f.context["n"]
    change = float((data["released"] - data["true"]).abs().div(data["true"]).max())
    tops = data[data["rank"] == 1].set_index("panel")["true"]
    criterion = "every top-30 count within 5 % of its true value"
    ours = f"largest relative change in the top 30: {change:.2%}"
    agrees = change <= 0.05
    if len(tops) == 2:
        coarse, fine = tops.iloc[0], tops.iloc[1]
        criterion += "; busiest coarse commute ≥ 10 × the busiest fine one"
        ours += (f"; busiest commutes {_fmt(coarse)} and {_fmt(fine)} ({fine / n:.2%} of n), "
                 f"ratio {coarse / fine:.0f}")
        agrees = agrees and coarse >= 10 * fine
    return _verdict(f, thesis_text, criterion, ours, agrees, _note_5_1(f, change))


def _note_5_1(f: Figure, change: float) -> str:
    """Why the top 30 move as they do: the smallest of their counts against Laplace's s.d. at this
    ε (the law), and the two levels' busiest commutes."""
    data, eps = f.data, f.context["epsilon"]
    sd = empty_cell_sd("laplace", eps, f.context["n"], f.context["d"])
    worst = data.loc[(data["released"] - data["true"]).abs().div(data["true"]).idxmax()]
    smallest = float(data["true"].min())
    text = (f"the largest change, {change:.2%}, is of a commute of {_fmt(worst['true'])}; the "
            f"smallest top-30 count here is {_fmt(smallest)}, and Laplace's s.d. at ε = {eps:g} "
            f"is {_fmt(sd)} (√2/ε), {sd / smallest:.2%} of it: 5 % holds within 2 s.d. only for "
            f"counts ≥ {_fmt(40 * sd)}")
    tops = data[data["rank"] == 1].set_index("panel")["true"]
    if len(tops) == 2:
        text += (f"; the busiest commutes of the two levels are {_fmt(tops.iloc[0])} and "
                 f"{_fmt(tops.iloc[1])}, a ratio of {tops.iloc[0] / tops.iloc[1]:.1f}")
    return text


def _central_order(f: Figure, thesis_text: str, what: str, coarse_below: bool) -> Verdict:
    """The thesis's order of the two central curves: at the coarse level the stability
    histogram below Laplace (``coarse_below``) or above it, the other way at the fine level."""
    lv = f.context["levels"]
    first, second = ("below", "above") if coarse_below else ("above", "below")
    criterion = (f"{what}: stability histogram {first} Laplace at {lv[0]} level at most ε"
                 + (f", {second} it at {lv[1]} level at most ε" if len(lv) > 1 else "")
                 + f"; {TOLERANCE_TEXT}")
    parts, agrees = [], True
    for level, below in zip(lv, (coarse_below, not coarse_below)):
        lap = _curve(f.data, mechanism="laplace", scenario=level)
        stab = _curve(f.data, mechanism="stability_histogram", scenario=level)
        se_lap = _curve_se(f.data, mechanism="laplace", scenario=level)
        se_stab = _curve_se(f.data, mechanism="stability_histogram", scenario=level)
        share = float((_below(stab, lap, se_stab, se_lap) if below
                       else _below(lap, stab, se_lap, se_stab)).mean())
        word = "below" if below else "above"
        parts.append(f"{level}: stability histogram {word} Laplace (up to the noise) at "
                     f"{share:.0%} of ε "
                     f"(ratio {stab.iloc[0] / lap.iloc[0]:.2f} at ε = {lap.index[0]:g}, "
                     f"{stab.iloc[-1] / lap.iloc[-1]:.2f} at ε = {lap.index[-1]:g})")
        agrees = agrees and share >= 0.5
    note = reasons.central_note(f.metric, f.context.get("profiles", {}),
                                f.context.get("opendp", False), f.data) or "; ".join(
        f"{level}: Laplace {_fmt(lap)}, stability histogram {_fmt(stab)} at ε = {e:g} (no count "
        f"profile to evaluate the laws on; the stability histogram's threshold there is τ = "
        f"{reasons.threshold(e, int(f.context['sizes'].get(level, f.context['n'])), False):.2f} "
        f"for n = {int(f.context['sizes'].get(level, f.context['n'])):,})"
        for level in lv for e, lap, stab in [(
            float(f.data["epsilon"].min()),
            float(_curve(f.data, mechanism="laplace", scenario=level).iloc[0]),
            float(_curve(f.data, mechanism="stability_histogram", scenario=level).iloc[0]))])
    return _verdict(f, thesis_text, criterion, "; ".join(parts), agrees, note)


def _judge_5_2(f):
    return _central_order(f, "The stability histogram beats Laplace at county level; Laplace wins "
                             "at ED level, the two converging as ε grows.", "RMSE", True)


def _judge_5_3(f):
    return _central_order(
        f, "The stability histogram has the higher maximum error at county level, Laplace at ED "
           "level; they get closer as ε grows.", "maximum error", False)


def _rank_agreement(frame: pd.DataFrame, top: int) -> float:
    """Spearman correlation of true and released ranks among the ``top`` true commutes."""
    head = frame[frame["true_rank"] <= top]
    if len(head) < 3:
        return float("nan")
    return float(head["true_rank"].corr(head["released_rank"], method="spearman"))


def _judge_5_4(f: Figure) -> Verdict:
    data, d = f.data, f.context["d"]
    head = min(600, d)
    parts, agrees = [], True
    for key in CENTRAL:
        frame = data[data["mechanism"] == key]
        rho = _rank_agreement(frame, head)
        zeros = int(frame["released_zero"].sum())
        part = f"{label(key)}: rank correlation over the top {head} {rho:.3f}, {zeros} zeros"
        if key == "stability_histogram" and zeros:
            lowest = int(frame.loc[frame["released_zero"], "true_rank"].min())
            part += f" (all at true rank ≥ {lowest} of {d})"
            agrees = agrees and lowest > d - 2 * zeros
        parts.append(part)
        agrees = agrees and rho >= 0.99
    trials = f.context["trials"]
    stab = trials[trials["mechanism"] == "stability_histogram"]["zeros"]
    stated, text = _stated(stab, 96, "stability histogram zeros")
    note = reasons.stability_zeros_note(f.context["true_counts"], trials, 96, HIGH_EPSILON)
    return _verdict(f, "Both follow the true order almost perfectly for about the first 600 "
                       "commutes; the stability histogram sets 96 commutes to 0, all among the "
                       "least popular.",
                    f"rank correlation ≥ 0.99 over the top {head} for both; every zeroed commute "
                    f"in the bottom 2 × (number of zeros); the thesis's 96 zeros within the "
                    f"trials' spread", "; ".join(parts) + "; " + text, agrees and stated, note)
