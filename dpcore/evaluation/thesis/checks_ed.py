"""The checks of section 5.4, the ED level: figures 5.12–5.17 (the bars, county against ED,
Hadamard's ordering of the top 100 read as one draw, the two subsets).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.evaluation.thesis.checks import (
    _below, _curve, _curve_se, empty_cell_sd, _fmt, _gap_se, TOLERANCE_TEXT, _upper, _verdict
)
from dpcore.evaluation.thesis.checks_local import _bar_error, _bar_error_se, _value_agreement
from dpcore.evaluation.thesis.protocol import (
    DECIDING_TRIALS, ED_ORDER_TOP, Figure, label, LOCAL, PLAUSIBLE, Verdict
)


def _judge_5_12(f: Figure) -> Verdict:
    data = f.data
    rhos = {key: _value_agreement(data[data["mechanism"] == key])
            for key in ("grr", "hm") if (data["mechanism"] == key).any()}
    errors = {key: _bar_error(data[data["mechanism"] == key]) for key in rhos}
    ours = "; ".join(f"{label(k)} rank correlation {rhos[k]:.2f}, mean |error| "
                     f"{_fmt(errors[k])}" for k in rhos)
    se = {key: _bar_error_se(data[data["mechanism"] == key]) for key in rhos}
    ok = bool(_below(errors["hm"], errors["grr"], se["hm"], se["grr"]))
    eps, n, d = f.context["epsilon"], f.context["n"], f.context["d"]
    law = {key: empty_cell_sd(key, eps, n, d) * np.sqrt(2 / np.pi) for key in rhos}
    return _verdict(f, "At ED level randomised response loses all utility on the top 30; the "
                       "Hadamard mechanism keeps some.",
                    f"randomised response's mean |error| over the top 30 larger than Hadamard's; "
                    f"{TOLERANCE_TEXT.replace('two curves', 'the two')} (s.e. from the 30 bars)",
                    ours, ok,
                    f"Hadamard's mean |error| {_fmt(errors['hm'])} against randomised "
                    f"response's {_fmt(errors['grr'])}"
                    f"{_gap_se(errors['hm'], errors['grr'], se['hm'], se['grr'])}; the formulas' "
                    f"expected |error| of an empty cell at ε = {eps:g} (s.d. × √(2/π), n = "
                    f"{n:,}, |X| = {d:,}): randomised response {_fmt(law['grr'])}, Hadamard "
                    f"{_fmt(law['hm'])}")


def _judge_5_13(f: Figure) -> Verdict:
    """Ratios of each mechanism's ED curve to its county curve against 2 (randomised response) and
    0.5–2 (Hadamard), each up to the noise: the ratio's s.e. from both curves' (delta method)."""
    data, (coarse, fine) = f.data, f.context["levels"]
    keys = [key for key in LOCAL if ((data["mechanism"] == key) & (data["scenario"] == fine)).any()]
    ratio, ratio_se = {}, {}
    for key in keys:
        a, b = _curve(data, mechanism=key, scenario=fine), _curve(data, mechanism=key,
                                                                   scenario=coarse)
        sa, sb = _curve_se(data, mechanism=key, scenario=fine), _curve_se(data, mechanism=key,
                                                                           scenario=coarse)
        ratio[key] = a / b
        ratio_se[key] = ratio[key] * np.sqrt((sa / a) ** 2 + (sb / b) ** 2)
    zero = 0 * ratio["grr"]
    rr_worse = bool(_below(2 + zero, ratio["grr"], zero, ratio_se["grr"]).all())
    hm_stable = bool((_below(0.5 + zero, ratio["hm"], zero, ratio_se["hm"])
                      & _below(ratio["hm"], 2 + zero, ratio_se["hm"], zero)).all())
    ours = ", ".join(f"{label(k)} ED / county {r.min():.2f}–{r.max():.2f}"
                     for k, r in ratio.items())
    first, last = float(ratio["grr"].index[0]), float(ratio["grr"].index[-1])
    dims = f.context.get("dims", {})
    law = {}
    if coarse in dims and fine in dims:
        for key in ("grr", "hm"):
            law[key] = [empty_cell_sd(key, e, *dims[fine]) / empty_cell_sd(key, e, *dims[coarse])
                        for e in (ratio[key].index[0], ratio[key].index[-1])]
    rr_fine, rr_coarse = (float(_curve(data, mechanism="grr", scenario=lv).iloc[0])
                          for lv in (fine, coarse))
    note = (f"randomised response's ratio {ratio['grr'].min():.2f}–{ratio['grr'].max():.2f} "
            f"(RMSE {_fmt(rr_fine)} at {fine} against {_fmt(rr_coarse)} at {coarse}, ε = "
            f"{first:g}), Hadamard's {ratio['hm'].min():.2f}–{ratio['hm'].max():.2f}")
    if law:
        note += (f"; the formulas' ratio of empty-cell s.d. (ED / county, ε = {first:g} and "
                 f"{last:g}): randomised response {law['grr'][0]:.2f} and {law['grr'][1]:.2f}, "
                 f"Hadamard {law['hm'][0]:.2f} and {law['hm'][1]:.2f}")
    return _verdict(f, "Randomised response's RMSE is much worse at ED level than at county "
                       "level; Hadamard's stays about the same.",
                    "randomised response's ED RMSE > 2 × its county RMSE at every ε; Hadamard's "
                    "ratio within 0.5–2 at every ε; each up to 2 standard errors of the ratio "
                    "(from the trials' spread)", ours, rr_worse and hm_stable, note)


def _judge_5_14(f: Figure) -> Verdict:
    data, n, d = f.data, f.context["n"], f.context["d"]
    rr, hm = _curve(data, mechanism="grr"), _curve(data, mechanism="hm")
    se_rr, se_hm = _curve_se(data, mechanism="grr"), _curve_se(data, mechanism="hm")
    rr_change = float(rr.iloc[0] / rr.iloc[-1])
    stable = bool(_below(rr.iloc[0], 1.5 * rr.iloc[-1], se_rr.iloc[0], 1.5 * se_rr.iloc[-1]))
    falling = bool(_below(hm.iloc[-1], hm.iloc[0], se_hm.iloc[-1], se_hm.iloc[0]))
    first, last = float(rr.index[0]), float(rr.index[-1])
    return _verdict(f, "Randomised response's maximum error stays stable for every ε; "
                       "Hadamard's falls with ε.",
                    "randomised response's maximum error at the first ε < 1.5 × its value at the "
                    f"last; Hadamard's lower at the last ε; {TOLERANCE_TEXT}",
                    f"randomised response falls {rr_change:.1f}× from ε = {first:g} to {last:g}; "
                    f"Hadamard {'falls' if falling else 'does not fall'}", stable and falling,
                    "; ".join(([] if stable else [
                        f"randomised response's s.d. √(n(e^ε + d − 2))/(e^ε − 1) (chapter 3) "
                        f"falls from {_fmt(empty_cell_sd('grr', first, n, d))} at ε = {first:g} "
                        f"to {_fmt(empty_cell_sd('grr', last, n, d))} at ε = {last:g}: its "
                        f"formula predicts no plateau"]) + ([] if falling else [
                        f"Hadamard's maximum {_fmt(hm.iloc[-1])} at ε = {last:g} against "
                        f"{_fmt(hm.iloc[0])} at ε = {first:g}; its formula's s.d. "
                        f"{_fmt(empty_cell_sd('hm', first, n, d))} and "
                        f"{_fmt(empty_cell_sd('hm', last, n, d))}"])))


def _judge_5_15(f: Figure) -> Verdict:
    """The thesis's figure is one draw, judged like its rank tables: the probability over this
    run's trials of the outcome it shows (:func:`_ordered_well`), plausible when its 95 % upper
    bound is at least :data:`PLAUSIBLE`; not decided while that outcome is unseen in fewer than
    :data:`DECIDING_TRIALS` trials. The figure drawn is trial 0."""
    thesis_text = ("The Hadamard mechanism ranks the top 40 well, then loses the order; some of "
                   "the top 100 are ranked below 200 (e.g. 1,631st, 686,843rd).")
    criterion = (f"the thesis's single draw plausible: P(more than half of the true top "
                 f"{TOP_WELL} released among the top {TOP_WELL}, and at least one of the top "
                 f"{TOP_FAR} released below rank {FAR_RANK}) ≥ {PLAUSIBLE:.0%} (95 % upper "
                 f"bound) over this run's trials. “More than half”: the weakest reading of "
                 f"“performs well for the top 40” that the thesis's own draw allows (it "
                 f"released its 24th commute 1,631st)")
    data = f.data
    share0 = float((data.loc[data["true_rank"] <= TOP_WELL, "released_rank"] <= TOP_WELL).mean())
    far0 = int((data["released_rank"] > FAR_RANK).sum())
    ours = (f"trial 0 (drawn): {share0:.0%} of the top {TOP_WELL} released among the top "
            f"{TOP_WELL}, {far0} of the top {TOP_FAR} below rank {FAR_RANK}")
    trials = f.context.get("trials", pd.DataFrame())
    rows = (trials[(trials["mechanism"] == "hm")].dropna(subset=["top40_within_40"])
            if len(trials) else trials)
    if rows.empty:
        return _verdict(f, thesis_text, criterion, ours, None, "no per-trial ranks of the top "
                                                               f"{TOP_FAR} in this run")
    share, far = rows["top40_within_40"], rows["top100_below_200"]
    hits = int(sum(_ordered_well(a, b) for a, b in zip(share, far)))
    m, upper = len(rows), _upper(hits, len(rows))
    ours += (f"; over {m} trials: share of the top {TOP_WELL} among the top {TOP_WELL} median "
             f"{share.median():.0%} (range {share.min():.0%}–{share.max():.0%}), top {TOP_FAR} "
             f"below rank {FAR_RANK} median {far.median():.0f} (range {far.min():.0f}–"
             f"{far.max():.0f}); P(the thesis's outcome) = {hits}/{m} (95 % upper bound "
             f"{upper:.2f})")
    if hits == 0 and upper >= PLAUSIBLE:
        return _verdict(f, thesis_text, criterion, ours, None,
                        f"an outcome never seen in fewer than {DECIDING_TRIALS} trials cannot be "
                        f"ruled out (0 of {m})")
    well = float(np.mean(share > TOP_WELL_SHARE))
    some_far = float(np.mean(far >= 1))
    return _verdict(f, thesis_text, criterion, ours, upper >= PLAUSIBLE,
                    f"over {m} trials more than half of the top {TOP_WELL} are released among "
                    f"the top {TOP_WELL} in {well:.0%} of them and some of the top {TOP_FAR} "
                    f"fall below rank {FAR_RANK} in {some_far:.0%}" + _spread_note(data))


def _spread_note(data: pd.DataFrame) -> str:
    """How far apart the top commutes' true counts are (what the noise must not bridge)."""
    if "true" not in data or data.empty:
        return ""
    true = data.sort_values("true_rank")["true"].to_numpy(dtype=float)
    at = min(TOP_WELL, true.size) - 1
    return (f"; the true top {true.size} run from {_fmt(true[0])} to {_fmt(true[-1])} commuters "
            f"(the {at + 1}th: {_fmt(true[at])})")


def _judge_5_16(f: Figure) -> Verdict:
    sizes = f.context["subsets"]
    (d_label, d_n, d_x), (r_label, r_n, r_x) = sizes
    ok = d_x == r_x == 26_244 and d_n == 218_860 and r_n == 38_630
    return _verdict(f, "Subset D (Dublin City) has 218,860 commuters and subset R (Cavan and "
                       "Leitrim) 38,630 (16 % of D), both with |X| = 26,244.",
                    "a fact about the data: the same n and |X| as the thesis's subsets",
                    f"{d_label}: n = {d_n:,}, |X| = {d_x:,}; {r_label}: n = {r_n:,} "
                    f"({r_n / d_n:.0%} of D), |X| = {r_x:,}", ok,
                    f"this data's subsets have n = {d_n:,} and {r_n:,}", kind="data")


def _judge_5_17(f: Figure) -> Verdict:
    data, (dublin, rural) = f.data, f.context["levels"]
    eps = float(data["epsilon"].max())
    at = data[data["epsilon"] == eps]
    lower = {key: bool(_below(_curve(at, mechanism=key, scenario=rural).iloc[0],
                              _curve(at, mechanism=key, scenario=dublin).iloc[0],
                              _curve_se(at, mechanism=key, scenario=rural).iloc[0],
                              _curve_se(at, mechanism=key, scenario=dublin).iloc[0]))
             for key in LOCAL}
    ours = f"ε = {eps:g}: RMSE lower on {rural} for " + (
        ", ".join(label(k) for k, v in lower.items() if v) or "none")
    return _verdict(f, "At ε = 5 every mechanism has a lower RMSE on R (fewer commuters) than on "
                       "D.", "a fact about the data: every local mechanism's RMSE lower on R at "
                             "the largest ε (count errors grow as √n: it holds whenever R has "
                             f"fewer commuters); {TOLERANCE_TEXT}", ours,
                    all(lower.values()), "the subsets' n here: " + ", ".join(
                        f"{s} {n:,}" for s, n in f.context["sizes"].items()), kind="data")


#: Figure 5.15 (ED, ε = 5, Hadamard): "performs well for the top 40 counts before the utility
#: decreases" — read as most (more than half) of the true top 40 released among the top 40: the
#: weakest reading of "well" its own draw allows (its 24th commute was released 1,631st, so not
#: all 40) — and "some of the top 100 … ranked lower than 200", its words.
TOP_WELL, TOP_WELL_SHARE, TOP_FAR, FAR_RANK = 40, 0.5, ED_ORDER_TOP, 200


def _ordered_well(share_top_well: float, below_far: float) -> bool:
    """Figure 5.15's outcome in one draw: more than half of the true top 40 released among the top
    40, and at least one of the top 100 released below rank 200."""
    return bool(share_top_well > TOP_WELL_SHARE and below_far >= 1)
