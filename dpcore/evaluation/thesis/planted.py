"""Can a check tell a broken release from a correct one? Three planted breaks — no noise, the
noise × 10, a constant bias of :data:`BIAS` commuters per cell — applied to an item's own data as
each broken release would have made it, and the item judged again (:func:`blind_to`). A check
that still agrees on a planted break cannot tell that break from this run's release: its
verdict is replaced by "cannot tell" with the breaks named (:func:`judged`), computed on the
item, never listed by hand.

Where the data of a break follows from the item's own data:

- bars (figures 5.1, 5.5, 5.6, 5.12): each released count becomes its true count, the true count
  plus ten times its error, or itself plus the bias — exactly;
- error curves (figures 5.2, 5.3, 5.7, 5.8, 5.10, 5.13, 5.14): no noise gives error 0; noise × 10
  multiplies every trial's RMSE and maximum error by 10 (exact for the raw releases; after
  Base-Pos and Base-Cut as if their share of the error did not change). A bias is not derived:
  its effect on an RMSE depends on the release's mean error (b² + 2b·ē), which the curves do not
  keep (the stability histogram's, for one, is negative: it zeroes small counts);
- rank tables (5.1–5.4): no noise keeps the exact order in every trial; a constant bias moves
  no rank (every count shifts alike), so the trials are unchanged;
- orderings and their stated zero counts (figures 5.4, 5.9, 5.11, 5.15): no noise releases every
  count as it is (zeros: the empty cells; order exact); a bias larger than the noise keeps the
  ranks and zeroes nothing.

The other items' data (error curves and Base-Cut's zeros, figure 5.11, under a bias; the data facts 5.16, 5.17; the running
times; rank tables and orderings under noise × 10) do not follow from the item alone: they are shown to
discriminate by planting the break in the release itself (``tests/test_thesis_as_run.py``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dpcore.evaluation.thesis.protocol import Figure, RANK_TOP, Table
from dpcore.scoring.ranks import PRESENT_AT

BREAKS = ("no noise", "noise × 10", "bias")
#: The planted bias (commuters per cell): the size of the randomised-response defect's.
BIAS = 2_000.0
_ERRORS = ("rmse", "max_error_freq")


def _bars(data: pd.DataFrame, kind: str) -> pd.DataFrame:
    true, released = data["true"].astype(float), data["released"].astype(float)
    new = {"no noise": true, "noise × 10": true + 10 * (released - true),
           "bias": released + BIAS}[kind]
    return data.assign(released=new)


def _lines(f: Figure, kind: str) -> pd.DataFrame | None:
    data = f.data.copy()
    if f.metric not in _ERRORS or not {"mean", "sd", "low", "high"} <= set(data) or kind == "bias":
        return None
    cols = ["mean", "sd", "low", "high"]
    data[cols] = 0.0 if kind == "no noise" else data[cols] * 10
    return data


def _table(t: Table, kind: str) -> Table | None:
    trials = t.context.get("trials")
    if kind == "noise × 10" or trials is None:
        return None
    if kind == "no noise":
        trials = trials.assign(worst_rank=RANK_TOP, exact=True)
    return replace(t, context=t.context | {"trials": trials})


def _ordering(f: Figure, kind: str) -> Figure | None:
    """An ordering's pairs and its trials' counts: no noise releases every count as it is (the
    zeros are the empty cells, the order exact); a bias larger than the noise moves no rank and
    leaves no count below one commuter. Base-Cut's zeros under a bias depend on the released
    values themselves: not derived (figure 5.11)."""
    data, trials = f.data, f.context.get("trials")
    if kind == "noise × 10" or (kind == "bias" and f.facet == "postprocess"):
        return None
    if kind == "no noise":
        data = data.assign(released=data["true"], released_rank=data["true_rank"],
                           released_zero=data["true"] < PRESENT_AT)
        truth = f.context.get("true_counts")
        empty = np.nan if truth is None else int((np.asarray(truth) < PRESENT_AT).sum())
        changes = {"zeros": empty, "zeros_cut": empty, "top40_within_40": 1.0,
                   "top100_below_200": 0}
    else:
        released = data["released"] + BIAS
        data = data.assign(released=released, released_zero=released < PRESENT_AT)
        changes = {"zeros": 0}
    context = dict(f.context)
    if trials is not None and len(trials):
        context["trials"] = trials.assign(**{k: v for k, v in changes.items() if k in trials})
    return replace(f, data=data, context=context)


def plant(item, kind: str):
    """``item`` as a release with the break ``kind`` would have made it, or None when that does not
    follow from the item's data alone."""
    if isinstance(item, Table):
        return _table(item, kind)
    if not isinstance(item, Figure) or item.data is None or item.data.empty:
        return None
    if item.kind == "bars" and {"true", "released"} <= set(item.data):
        return replace(item, data=_bars(item.data, kind))
    if item.kind == "ordering" and {"true", "released", "true_rank"} <= set(item.data):
        return _ordering(item, kind)
    if item.kind == "lines":
        data = _lines(item, kind)
        return None if data is None else replace(item, data=data)
    return None


def blind_to(item, judge) -> tuple[str, ...]:
    """The planted breaks (:data:`BREAKS`) on which ``judge`` still agrees."""
    blind = []
    for kind in BREAKS:
        broken = plant(item, kind)
        # "no noise" makes errors 0 and their ratios 0/0: NaN judged as such, not a warning
        with np.errstate(divide="ignore", invalid="ignore"):
            if broken is not None and judge(broken).agrees:
                blind.append(kind)
    return tuple(blind)


def judged(item, verdict, judge):
    """``verdict``, or — when it agrees but the check agrees too on a planted break — a "cannot
    tell" verdict naming the breaks; a "differs" stands (the check found a departure)."""
    if verdict.agrees is not True or verdict.kind == "data":
        return verdict
    blind = blind_to(item, judge)
    if not blind:
        return verdict
    what = ", ".join("a constant bias of +{:,.0f} per cell".format(BIAS) if k == "bias"
                     else ("no noise at all" if k == "no noise" else "ten times the noise")
                     for k in blind)
    return replace(verdict, agrees=None, blind=blind,
                   reason=f"this check cannot tell a release with {what} from this one: planted "
                          f"in this item's own data, the check agrees there too (on this run's "
                          f"release it agrees)")
