"""Error against ε on one answer a planner will use ("inflow to Dublin City", "commutes of
0–10 km"), per mechanism: theory beside experiment.

* **Theory** — the standard deviation of the released answer at the true total, from the
  closed-form variance of a sum (:class:`dpcore.analyses.intervals.Interval`, covariances
  included): for an unbiased release its expected RMSE. Only raw releases of the mechanisms
  :data:`~dpcore.analyses.intervals.COVERED` have one, and OnTheMap's synthesizer, whose raw
  answer is biased: its curve is the expected RMSE √(bias² + variance) from its law at the true
  table (:class:`dpcore.analyses.synthesized.Theory`); the others get none. OnTheMap's
  **debiased estimate** (the number its interval is around, :mod:`.synthesized`) is followed as
  its own series :data:`DEBIASED`: unbiased, its theory is its sd (the 95 % half-width / 1.96),
  where every workplace of the answer gets the normal law. A sparse release
  (:func:`dpcore.release.sparse_route`) sums its unnamed empty cells at their mean, which can only
  lower the error variance (Rao–Blackwell): there the sd is an upper bound (``exact`` False), as
  it is for Hadamard response at ε ≤ 1 (its variance is bounded, :mod:`.intervals`).
* **Experiment** — seeded repeated releases through the one release pipeline
  (:func:`dpcore.release.run`, post-processing Base), the answer computed on each, and its RMSE
  against the true answer with a 95 % chi-square interval: if the errors are normal with sd σ,
  T·MSE/σ² follows χ²_T, so [√(T·MSE/χ²_{T,0.975}), √(T·MSE/χ²_{T,0.025})] covers σ (answers are
  sums of many cells' noise, close to normal).

A **share** (:mod:`dpcore.analyses.shares`: the share under 10 km, the live-and-work share) is
followed in percentage points: its theory is the delta method's sd at the true A and C, for the
laws whose share interval is offered (:data:`dpcore.analyses.shares.OFFERED`) only; a release
whose total is not positive has no share, and its ε then has no RMSE.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats

from dpcore import mechanisms, release
from dpcore.analyses import answers, selection as sel, shares, synthesized
from dpcore.analyses.intervals import COVERED, PUBLISHED_ONLY, Interval
from dpcore.data.od import ODMatrix

FLOWS = {"inflow": "inflow", "outflow": "outflow", "live_and_work": "live and work",
         "jobs": "jobs", "employed_residents": "employed residents"}
THEORY_COLUMNS = ["mechanism", "epsilon", "true", "sd", "exact"]
RMSE_COLUMNS = ["mechanism", "epsilon", "true", "rmse", "low", "high", "trials"]
#: The series of OnTheMap's debiased estimate, beside its raw synthetic answer's.
DEBIASED = "onthemap_debiased"
#: The share followed against ε beside the distance bands: the first band's upper edge (km).
SHARE_KM = answers.BANDS_KM[1]


class ShareAnswer:
    """A share followed like a sum's part: ``compute(values)`` → ([share in per cent], [cells of
    its total]); ``share`` keeps its two sums for the theory."""

    unit = "percentage points"

    def __init__(self, share: shares.Share):
        self.share = share

    def compute(self, values):
        (a, c), cells = self.share.compute(values)
        return np.array([100 * shares.share_of(a, c)]), np.array([cells.sum()])


def unit(query) -> str:
    """What the answer's error is counted in."""
    return getattr(query, "unit", "commuters")


def choices(od: ODMatrix, chosen: sel.Selection, side: str = "work"
            ) -> dict[str, tuple[answers.Query, int]]:
    """The answers one can follow against ε for a selection: label → (query, part index). The
    flows always; the distance bands when the zones have positions."""
    found = {f"{FLOWS[q.analysis]} — {q.selection}": (q, 0) for q in answers.flows(od, chosen)}
    held = "jobs held by residents" if side == "work" else "residents working there"
    found[f"share of {held} (%) — {chosen.name}"] = (
        ShareAnswer(shares.live_and_work(od, chosen, side)), 0)
    try:
        (query,) = answers.distance(od, chosen, side)
    except ValueError:   # no positions, or too large a block: flows only
        return found
    who = "workers in" if side == "work" else "residents of"
    for i, part in enumerate(query.parts[:-1]):   # the last part: commutes without a position
        found[f"commutes of {part} — {who} {query.selection}"] = (query, i)
    found[f"share within {SHARE_KM:g} km (%) — {who} {chosen.name}"] = (
        ShareAnswer(shares.within(od, chosen, side, SHARE_KM)), 0)
    return found


def _specs(specs) -> list[tuple[str, dict]]:
    return [(s, {}) if isinstance(s, str) else (s[0], dict(s[1])) for s in specs]


def has_theory(key: str, query=None) -> bool:
    """Whether a raw release of ``key`` has a closed-form sd of a sum (a share: an offered
    delta-method sd)."""
    if isinstance(query, ShareAnswer):
        return key in shares.OFFERED and key not in PUBLISHED_ONLY
    return key in COVERED and key not in PUBLISHED_ONLY or key == synthesized.KEY


def theory(od: ODMatrix, truth, query: answers.Query, part: int, specs, epsilons
           ) -> pd.DataFrame:
    """sd of the released answer at the true total, per mechanism with a closed form and ε, and
    whether it is exact (a dense release) or an upper bound (a sparse one, or Hadamard response
    at ε ≤ 1: :meth:`~dpcore.mechanisms.hadamard.HadamardResponse.sum_variance`)."""
    total, cells = (np.asarray(x)[part] for x in query.compute(truth))
    rows = []
    for key, params in _specs(specs):
        if not has_theory(key, query):
            continue
        if key == synthesized.KEY:
            rows += _synthesized_theory(od, truth, query, part, params, epsilons, total)
            continue
        for epsilon in epsilons:
            rule = Interval(key, mechanisms.build(key, epsilon=epsilon, **params), n=od.n,
                            d=od.domain_size)
            sparse = release.sparse_route(od, release.ReleaseSpec(key, epsilon,
                                                                  tuple(params.items())))
            if isinstance(query, ShareAnswer):
                (a, c), (m_a, m_c) = query.share.compute(truth)
                sd = 100 * float(shares.sd(rule, a, m_a, c, m_c))
            else:
                sd = math.sqrt(max(float(rule.variance([cells], [total])[0]), 0.0))
            rows.append({"mechanism": key, "epsilon": float(epsilon), "true": float(total),
                         "sd": sd, "exact": rule.exact and not sparse})
    return pd.DataFrame(rows, columns=THEORY_COLUMNS)


def _synthesized_theory(od: ODMatrix, truth, query, part: int, params: dict, epsilons,
                        total: float) -> list[dict]:
    """OnTheMap's raw synthetic answer: its expected RMSE, bias included (its answers are
    biased towards uniform), from the law at the true table; none where the law is not
    evaluated (too large a table)."""
    theory = synthesized.Theory(od, truth, params, [query])
    if theory.method is not None:
        return []
    rows = [{"mechanism": synthesized.KEY, "epsilon": float(epsilon), "true": float(total),
             "sd": float(theory.raw_rmse(epsilon)[part]), "exact": True} for epsilon in epsilons]
    debiased = [(float(epsilon), float(theory.estimate_sd(epsilon)[part])) for epsilon in epsilons]
    return rows + [{"mechanism": DEBIASED, "epsilon": epsilon, "true": float(total), "sd": sd,
                    "exact": True} for epsilon, sd in debiased if math.isfinite(sd)]


def _debiased(od: ODMatrix, query, part: int, params: dict, epsilon: float, vector) -> float:
    """OnTheMap's debiased estimate of the answer on one release (NaN: none, e.g. a share)."""
    if isinstance(query, ShareAnswer):
        return math.nan
    rule = synthesized.rule(od, synthesized.bound(od, params, epsilon), vector)
    return float(rule.all_bounds([query], None, None)[0][2][part])


def experiment(od: ODMatrix, truth, query: answers.Query, part: int, specs, epsilons,
               trials: int, seed: int = 0,
               progress: Callable[[int, int], bool | None] | None = None) -> pd.DataFrame:
    """One row per release: mechanism, ε, trial, the true and the released answer; an OnTheMap
    release adds a row :data:`DEBIASED` with its debiased estimate (where it has one).
    ``progress(done, total)`` after each release; False stops (the rows so far are returned)."""
    true = float(np.asarray(query.compute(truth)[0])[part])
    dense = truth if isinstance(truth, np.ndarray) else None
    specs = _specs(specs)
    total, rows, done = len(specs) * len(epsilons) * trials, [], 0
    for key, params in specs:
        for epsilon in epsilons:
            for trial in range(trials):
                spec = release.ReleaseSpec(key, epsilon, tuple(params.items()), ("base",), seed,
                                           trial)
                vector = release.run(od, spec, true_counts=dense, score=False,
                                     keep_raw=False).outputs["base"].released
                rows.append({"mechanism": key, "epsilon": float(epsilon), "trial": trial,
                             "true": true,
                             "released": float(np.asarray(query.compute(vector)[0])[part])})
                if key == synthesized.KEY:
                    estimate = _debiased(od, query, part, params, epsilon, vector)
                    if math.isfinite(estimate):
                        rows.append({**rows[-1], "mechanism": DEBIASED, "released": estimate})
                done += 1
                if progress is not None and progress(done, total) is False:
                    return pd.DataFrame(rows)
    return pd.DataFrame(rows, columns=["mechanism", "epsilon", "trial", "true", "released"])


def rmse_interval(errors: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """RMSE of ``errors`` and its chi-square interval for the sd of normal errors."""
    errors = np.asarray(errors, dtype=float)
    t = errors.size
    mse = float(np.mean(errors ** 2))
    tail = (1 - confidence) / 2
    return (math.sqrt(mse), math.sqrt(t * mse / stats.chi2.ppf(1 - tail, t)),
            math.sqrt(t * mse / stats.chi2.ppf(tail, t)))


def rmse(table: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism and ε: RMSE of the answer over the releases, its interval, the trials."""
    rows = []
    for (key, epsilon), group in table.groupby(["mechanism", "epsilon"], sort=False):
        value, low, high = rmse_interval(group["released"] - group["true"])
        rows.append({"mechanism": key, "epsilon": epsilon, "true": group["true"].iloc[0],
                     "rmse": value, "low": low, "high": high, "trials": len(group)})
    return pd.DataFrame(rows, columns=RMSE_COLUMNS)
