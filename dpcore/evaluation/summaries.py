"""Plain-language and statistical summaries of releases and sweeps.

* :func:`summary_sentence` — what happened to one release, in one sentence a planner can repeat;
* :func:`theoretical_rmse` — the RMSE a mechanism is expected to have, from its closed-form
  variance (and exact mean, where it is biased): the "theory" beside every experiment;
* :func:`summarise` — mean and confidence interval over trials, for the curves against ε or n;
* :func:`pass_rates` / :func:`checks_by_draw` — how often repeated draws pass each planner check;
* :func:`release_times` — mean release time per mechanism from a sweep.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from dpcore import mechanisms
from dpcore.mechanisms.count_profile import CountProfile
from dpcore.scoring import metrics
from dpcore.scoring.metrics import PlannerCheck, planner_checks


def _plural(count: float, one: str, many: str) -> str:
    count = int(round(count))
    return f"{count:,} {one if count == 1 else many}"


def _percent(share: float) -> str:
    """A share as a percentage that never rounds a part to the whole (or to nothing)."""
    value = 100 * share
    if value == 0 or value == 100 or 10 <= value < 99.5:
        return f"{value:.0f} %"
    return f"{value:.2g} %" if value < 10 else f"{min(value, 99.9):.1f} %"


def _commuters(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


#: The metrics :func:`summary_sentence` reads (a page scores its releases this far first).
SENTENCE_METRICS = ("rmse", "rmse_real", "false_positive_cells", "false_zero_cells",
                    "erased_share", "invented_share")
#: Share of the real commutes erased above which a sentence says the all-cells error misleads.
MOSTLY_ERASED = 0.5


def summary_sentence(name: str, pairs: pd.DataFrame, values: dict[str, float], k: int = 10) -> str:
    """What happened to one release, in one plain sentence.

    ``pairs`` is :func:`rank_pairs` over at least the top k; ``values`` the metrics of
    :func:`dpcore.scoring.metrics.compute` (at least :data:`SENTENCE_METRICS`). The error over
    the real commutes stands beside the error over all cells, with the shares of real commutes
    erased and of released commutes invented: on a huge, mostly empty domain the all-cells RMSE
    rewards a release that keeps nearly everything at 0, so when a release erased most real
    commutes (:data:`MOSTLY_ERASED`) the sentence says so, and, only when its all-cells error is
    below its real-commute error, says that comparison (never "small" or "large" alone).
    """
    top = pairs.head(k)
    kept = int((top["released_rank"] == top["true_rank"]).sum())
    inside = int((top["released_rank"] <= len(top)).sum())
    parts = [f"{name}: {kept} of the {len(top)} busiest commutes kept their rank"
             + (f" and {inside} stayed in the top {len(top)}" if inside > kept else "")]
    invented, vanished = values.get("false_positive_cells", 0), values.get("false_zero_cells", 0)
    invented_share = values.get("invented_share", math.nan)
    erased = values.get("erased_share", math.nan)
    parts.append(
        f"{_plural(invented, 'empty commute was', 'empty commutes were')} reported as non-empty"
        + (f" ({_percent(invented_share)} of the commutes it shows)"
           if math.isfinite(invented_share) else "")
        + f" and {_plural(vanished, 'real commute', 'real commutes')}"
        + (f" ({_percent(erased)} of the real ones)" if math.isfinite(erased) else "")
        + " as empty")
    rmse, rmse_real = values.get("rmse", math.nan), values.get("rmse_real", math.nan)
    if math.isfinite(rmse_real):
        parts.append(f"a real commute is off by {_commuters(rmse_real)} commuters (RMSE over the "
                     f"real commutes), a cell by {_commuters(rmse)} over all cells, empty ones "
                     "included")
    elif math.isfinite(rmse):
        parts.append(f"a typical cell is off by {_commuters(rmse)} commuters (RMSE)")
    sentence = "; ".join(parts) + "."
    if math.isfinite(erased) and erased > MOSTLY_ERASED:
        sentence += f" It erased most real commutes ({_percent(erased)})"
        if math.isfinite(rmse) and math.isfinite(rmse_real) and rmse < rmse_real:
            # RMSE² over all cells is the cell-weighted mean of the real and the empty cells'
            # MSE, so it is below the real commutes' only because the empty cells are nearer
            sentence += (f": its error over all cells ({_commuters(rmse)}) is below its error "
                         f"on the real commutes ({_commuters(rmse_real)}) only because it also "
                         "averages the empty cells, where it is nearer exact — not from "
                         "accuracy on the commutes")
        sentence += "."
    return sentence


def theoretical_rmse(mechanism, true_counts: CountProfile | np.ndarray) -> float | None:
    """Expected RMSE per cell of the *raw* release: √(mean(Var + bias²)), in commuters.

    From the mechanism's closed-form per-cell ``variance`` (and its exact ``expected`` value when
    it is biased, e.g. the stability histogram), over the distinct counts of ``true_counts`` (a
    :class:`CountProfile`, or dense counts, profiled here: build the profile once when evaluating
    many mechanisms or ε). None when the mechanism has no closed form.
    Strictly √E[MSE], which Jensen puts slightly above E[RMSE] for small domains.
    """
    profile = (true_counts if isinstance(true_counts, CountProfile)
               else CountProfile.of_counts(true_counts))
    variance = profile.variance(mechanism)
    if variance is None:
        return None
    mse = np.asarray(variance, dtype=float)
    expected = getattr(mechanism, "expected", None)
    if expected is not None:
        mse = mse + (np.asarray(expected(profile.values), dtype=float) - profile.values) ** 2
    return math.sqrt(profile.mean(mse))


def pass_rates(draws: list[list[PlannerCheck]]) -> pd.DataFrame:
    """Share of draws passing each planner check, over the draws where it applies.

    ``draws`` holds :func:`dpcore.scoring.metrics.planner_checks` of each draw. Columns: ``key``,
    ``label``, ``threshold``, ``pass_rate`` (NaN when it never applies), ``draws``, ``source``.
    """
    rows = {}
    for checks in draws:
        for check in checks:
            row = rows.setdefault(check.key, {"key": check.key, "label": check.label,
                                              "threshold": check.threshold, "passed": 0,
                                              "draws": 0, "source": check.source})
            if check.passed is not None:
                row["draws"] += 1
                row["passed"] += int(check.passed)
    table = pd.DataFrame(list(rows.values()),
                         columns=["key", "label", "threshold", "passed", "draws", "source"])
    table["pass_rate"] = np.where(table["draws"] > 0, table["passed"] / table["draws"].clip(1),
                                  np.nan)
    return table[["key", "label", "threshold", "pass_rate", "draws", "source"]]


def summarise(table: pd.DataFrame, metric: str, by=("mechanism", "epsilon"),
              confidence: float = 0.95) -> pd.DataFrame:
    """Mean of ``metric`` over trials with a Student-t confidence interval, per group.

    ``table`` is tidy (``metric``, ``value`` and the ``by`` columns, one row per trial). Columns
    of the result: the ``by`` columns, ``mean``, ``low``, ``high``, ``sd``, ``trials``; with one
    trial the interval is the point itself (no spread to estimate).
    """
    by = list(by)
    rows = table[table["metric"] == metric]
    grouped = rows.groupby(by, sort=False, dropna=False)["value"]
    out = grouped.agg(mean="mean", sd="std", trials="count").reset_index()
    half = stats.t.ppf(0.5 + confidence / 2, np.maximum(out["trials"] - 1, 1)) \
        * out["sd"].fillna(0) / np.sqrt(out["trials"])
    half = np.where(out["trials"] > 1, half, 0.0)
    out["low"], out["high"] = out["mean"] - half, out["mean"] + half
    return out


def checks_by_draw(table: pd.DataFrame) -> dict[str, list[list[PlannerCheck]]]:
    """Planner checks of every release in a tidy experiment table, per mechanism.

    ``table`` has one row per (mechanism, trial, metric) for a single ε and post-processing, as
    :func:`dpcore.evaluation.experiment.run` returns; each trial's metrics become one list of checks.
    """
    out: dict[str, list[list[PlannerCheck]]] = {}
    for (key, _), rows in table.groupby(["mechanism", "trial"], sort=False):
        out.setdefault(key, []).append(planner_checks(dict(zip(rows["metric"], rows["value"]))))
    return out


def release_times(table: pd.DataFrame) -> pd.DataFrame:
    """Mean release time per mechanism and data scenario from a sweep's tidy table.

    Each release appears once per metric and post-processing in the table; it is counted once.
    Columns: ``mechanism``, ``scenario``, ``seconds`` (mean), ``releases``.
    """
    columns = ["mechanism", "scenario", "seconds", "releases"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    jobs = table.drop_duplicates(["mechanism", "params", "scenario", "n", "epsilon", "trial"])
    out = jobs.groupby(["mechanism", "scenario"], sort=False)["seconds"].agg(
        seconds="mean", releases="count").reset_index()
    return out[columns]


def pass_rates_by_mechanism(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`pass_rates` of each mechanism's draws in a tidy table of repeated releases."""
    return {key: pass_rates(draws) for key, draws in checks_by_draw(table).items()}


def theory_curves(truths: dict[str, np.ndarray], mechanism_specs, epsilons, metric: str
                  ) -> pd.DataFrame:
    """Expected RMSE of each mechanism at each ε, per scenario, for raw releases.

    ``truths`` maps a scenario label to its dense true counts; ``mechanism_specs`` holds
    ``(key, ((name, value), …))``. Columns ``scenario``, ``mechanism``, ``x`` (ε), ``value``
    (commuters, or share of n for ``rmse_freq``); empty for other metrics and for mechanisms
    without a closed-form variance.
    """
    rows = []
    if metric in ("rmse", "rmse_freq"):
        for label, counts in truths.items():
            profile = CountProfile.of_counts(counts)
            n = profile.n
            for key, params in mechanism_specs:
                for epsilon in epsilons:
                    try:
                        value = theoretical_rmse(
                            mechanisms.build(key, epsilon=epsilon, **dict(params)), profile)
                    except ValueError:
                        value = None
                    if value is not None:
                        rows.append((label, key, epsilon,
                                     value / n if metric == "rmse_freq" else value))
    return pd.DataFrame(rows, columns=["scenario", "mechanism", "x", "value"])


#: Metrics on the cards and in the scorecard, in display order.
SCORECARD = ("rmse", "rmse_real", "mae", "max_error", "topk_recall", "kendall_tau",
             "geh_pass_share", "false_positive_cells", "invented_share", "false_zero_cells",
             "erased_share")


def scorecard(results: dict) -> pd.DataFrame:
    """One row per mechanism: the headline metrics, release time and bits per commuter
    (``results`` maps mechanism key → :class:`dpcore.release.ReleaseResult`; failed ones are
    left out)."""
    rows = []
    for key, result in results.items():
        if result.error:
            continue
        row = {"mechanism": key}
        row.update({metrics.METRICS[m].label: result.metrics[m] for m in SCORECARD})
        row["Release time (s)"] = result.seconds
        row["Bits per commuter"] = result.bits_per_user
        rows.append(row)
    return pd.DataFrame(rows)
