"""Error against ε on one answer a planner will use ("inflow to Dublin City", "commutes of
0–10 km"), per mechanism: theory beside experiment.

* **Theory** — the standard deviation of the released answer at the true total, from the
  closed-form variance of a sum (:class:`dpcore.analyses.intervals.Interval`, covariances
  included): for an unbiased release its expected RMSE. Only raw releases of the mechanisms
  :data:`~dpcore.analyses.intervals.COVERED` have one; the others get none. A sparse release
  (:func:`dpcore.release.sparse_route`) sums its unnamed empty cells at their mean, which can only
  lower the error variance (Rao–Blackwell): there the sd is an upper bound (``exact`` False).
* **Experiment** — seeded repeated releases through the one release pipeline
  (:func:`dpcore.release.run`, post-processing Base), the answer computed on each, and its RMSE
  against the true answer with a 95 % chi-square interval: if the errors are normal with sd σ,
  T·MSE/σ² follows χ²_T, so [√(T·MSE/χ²_{T,0.975}), √(T·MSE/χ²_{T,0.025})] covers σ (answers are
  sums of many cells' noise, close to normal).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats

from dpcore import mechanisms, release
from dpcore.analyses import answers, selection as sel
from dpcore.analyses.intervals import COVERED, PUBLISHED_ONLY, Interval
from dpcore.data.od import ODMatrix

FLOWS = {"inflow": "inflow", "outflow": "outflow", "live_and_work": "live and work",
         "jobs": "jobs", "employed_residents": "employed residents"}
THEORY_COLUMNS = ["mechanism", "epsilon", "true", "sd", "exact"]
RMSE_COLUMNS = ["mechanism", "epsilon", "true", "rmse", "low", "high", "trials"]


def choices(od: ODMatrix, chosen: sel.Selection, side: str = "work"
            ) -> dict[str, tuple[answers.Query, int]]:
    """The answers one can follow against ε for a selection: label → (query, part index). The
    flows always; the distance bands when the zones have positions."""
    found = {f"{FLOWS[q.analysis]} — {q.selection}": (q, 0) for q in answers.flows(od, chosen)}
    try:
        (query,) = answers.distance(od, chosen, side)
    except ValueError:   # no positions, or too large a block: flows only
        return found
    for i, part in enumerate(query.parts[:-1]):   # the last part: commutes without a position
        who = "workers in" if side == "work" else "residents of"
        found[f"commutes of {part} — {who} {query.selection}"] = (query, i)
    return found


def _specs(specs) -> list[tuple[str, dict]]:
    return [(s, {}) if isinstance(s, str) else (s[0], dict(s[1])) for s in specs]


def has_theory(key: str) -> bool:
    """Whether a raw release of ``key`` has a closed-form sd of a sum."""
    return key in COVERED and key not in PUBLISHED_ONLY


def theory(od: ODMatrix, truth, query: answers.Query, part: int, specs, epsilons
           ) -> pd.DataFrame:
    """sd of the released answer at the true total, per mechanism with a closed form and ε, and
    whether it is exact (a dense release) or an upper bound (a sparse one)."""
    total, cells = (np.asarray(x)[part] for x in query.compute(truth))
    rows = []
    for key, params in _specs(specs):
        if not has_theory(key):
            continue
        for epsilon in epsilons:
            rule = Interval(key, mechanisms.build(key, epsilon=epsilon, **params), n=od.n,
                            d=od.domain_size)
            sparse = release.sparse_route(od, release.ReleaseSpec(key, epsilon,
                                                                  tuple(params.items())))
            rows.append({"mechanism": key, "epsilon": float(epsilon), "true": float(total),
                         "sd": math.sqrt(max(float(rule.variance([cells], [total])[0]), 0.0)),
                         "exact": not sparse})
    return pd.DataFrame(rows, columns=THEORY_COLUMNS)


def experiment(od: ODMatrix, truth, query: answers.Query, part: int, specs, epsilons,
               trials: int, seed: int = 0,
               progress: Callable[[int, int], bool | None] | None = None) -> pd.DataFrame:
    """One row per release: mechanism, ε, trial, the true and the released answer.
    ``progress(done, total)`` after each release; False stops (the rows so far are returned)."""
    true = float(np.asarray(query.compute(truth)[0])[part])
    dense = truth if isinstance(truth, np.ndarray) else None
    specs = _specs(specs)
    total, rows = len(specs) * len(epsilons) * trials, []
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
                if progress is not None and progress(len(rows), total) is False:
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
