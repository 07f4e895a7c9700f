"""The ε planner: the smallest ε at which each mechanism meets a target a planner sets.

A target is a metric of :data:`dpcore.scoring.metrics.METRICS` and a level ("RMSE ≤ 5 commuters",
"GEH < 5 on ≥ 85 % of cells"), or the planner's acceptance checks as a whole (:data:`CHECKS`:
every check of :func:`dpcore.scoring.metrics.planner_checks` that applies passes), and for searched
answers the probability with which a release must meet it.

How an answer is found (the ``method`` column says which):

* **closed form** — RMSE of the raw release (post-processing Base) is √(mean per-cell variance +
  bias²) from the mechanism's closed-form variance (:func:`dpcore.evaluation.summaries.theoretical_rmse`),
  decreasing in ε, solved for the target by Brent's method on log ε. Each evaluation is a weighted
  sum over the distinct true counts (:class:`dpcore.mechanisms.count_profile.CountProfile`), so it
  costs the same at ED level (9.8 M cells) as at county level. MAE of an *unbiased*
  mechanism: exact for Laplace (E|Z| = b), discrete Laplace (2α/(1 − α²)) and Gaussian (σ√(2/π));
  for the local mechanisms, whose per-cell error is a sum of many independent reports, the normal
  approximation E|Z| ≈ σ√(2/π) (said so in ``method``). These are expected values: a single
  release's RMSE scatters around them.
* **search** — for every other metric, post-processing or a biased mechanism: releases at ε on a
  geometric grid, up to ``trials`` draws each, through the one release pipeline
  (:func:`dpcore.evaluation.experiment.run`, or the page's cached sweep runner); a draw passes when it meets
  the target; bisection finds the smallest grid ε whose pass rate over ``trials`` draws reaches the
  probability asked (assuming the pass rate grows with ε, as it does for every metric here on
  average). Draws at an ε stop as soon as its verdict is certain — with 20 draws and 0.9 asked,
  3 failures fail it whatever the other 17 would do — so the answer is exactly the one all
  ``trials`` draws give (each draw is the same however many run), at a fraction of the releases
  (Find ε for the six default mechanisms at county level: 720 releases before, ≈ 200 now). The
  answer's ε is always drawn ``trials`` times; the other ε tried show the draws made
  (``trials`` column of ``tried``). The pass probability comes with a Wilson score interval
  (Wilson, JASA 1927).

Baselines (not DP) ignore ε: they are evaluated once, and their answer is "meets the target at
any ε" or "never", never an ε.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from dpcore import mechanisms
from dpcore.data.od import ODMatrix
from dpcore.evaluation import experiment, summaries
from dpcore.mechanisms.base import EPSILON
from dpcore.mechanisms.count_profile import CountProfile
from dpcore.scoring import metrics

#: The "planner's checks as a whole" target: every applicable acceptance check passes.
CHECKS = "checks"
#: Output columns of :func:`plan_table` (the command line's plan.csv).
COLUMNS = ["mechanism", "metric", "target", "epsilon", "method", "expected", "pass_probability",
           "pass_low", "pass_high"]
#: Range of ε searched: down to 0.001, up to the mechanisms' own limit.
EPSILON_RANGE = (1e-3, float(EPSILON.high))
#: The search grid: 60 geometric steps over the range (each ≈ 13 % above the last).
SEARCH_GRID = tuple(float(e) for e in np.geomspace(*EPSILON_RANGE, 60))

CLOSED, CLOSED_NORMAL, SEARCH = "closed form", "closed form (normal approximation)", "search"
NOT_DP_ANY, NOT_DP_NEVER = "not DP: meets it at any ε", "not DP: never meets it"
UNREACHABLE, STOPPED = "not met for any ε ≤ 20", "stopped"


@dataclass(frozen=True)
class Target:
    """``metric`` (a key of METRICS, or CHECKS), its threshold ``value`` (ignored for CHECKS)
    and the probability a searched answer must reach."""

    metric: str
    value: float = float("nan")
    probability: float = 0.9

    def __post_init__(self):
        if self.metric != CHECKS and self.metric not in metrics.METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; valid: {CHECKS}, "
                             f"{', '.join(metrics.METRICS)}")
        if self.metric != CHECKS and not math.isfinite(self.value):
            raise ValueError(f"give a target value for {self.metric}")
        if not 0 < self.probability <= 1:
            raise ValueError(f"the pass probability must be in (0, 1]; got {self.probability}")

    def met(self, values: dict) -> bool:
        """Whether one release's metrics meet the target."""
        if self.metric == CHECKS:
            return all(check.passed is not False for check in metrics.planner_checks(values))
        value, better = values[self.metric], metrics.METRICS[self.metric].better
        if not math.isfinite(value):
            return False
        if better == "lower":
            return value <= self.value
        if better == "higher":
            return value >= self.value
        return abs(value) <= self.value

    def describe(self) -> str:
        if self.metric == CHECKS:
            return "every planner check passes"
        info = metrics.METRICS[self.metric]
        if self.metric == "geh_pass_share":
            return f"GEH < 5 on ≥ {self.value:.0%} of cells"
        sign = {"lower": "≤", "higher": "≥", "zero": "within ±"}[info.better]
        shown = f"{self.value:.0%}" if info.unit == "share" else f"{self.value:g}"
        unit = "" if info.unit in ("share", "") else f" {info.unit}"
        return f"{info.label} {sign} {shown}{unit}"


@dataclass
class Answer:
    """One mechanism's answer. ``epsilon`` is NaN for baselines, inf when no ε ≤ 20 meets the
    target; ``expected`` the metric's expected (closed form) or mean (searched) value at
    ``epsilon``; ``tried`` the searched ε with their pass rates and metric means."""

    mechanism: str
    target: Target
    epsilon: float
    method: str
    expected: float = float("nan")
    pass_probability: float = float("nan")
    pass_low: float = float("nan")
    pass_high: float = float("nan")
    tried: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["epsilon", "mean", "pass_probability", "pass_low", "pass_high", "trials"]))

    def row(self) -> dict:
        return {"mechanism": self.mechanism, "metric": self.target.metric,
                "target": self.target.value, "epsilon": self.epsilon, "method": self.method,
                "expected": self.expected, "pass_probability": self.pass_probability,
                "pass_low": self.pass_low, "pass_high": self.pass_high}


def wilson(passed: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good at 0 and 1, unlike the Wald one)."""
    if trials == 0:
        return float("nan"), float("nan")
    z = stats.norm.isf((1 - confidence) / 2)
    p = passed / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials ** 2)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


# ------------------------------------------------------------------------------- closed form
_EXACT_MAE = {  # E|noise| of the mechanisms whose noise law is known exactly
    "laplace": lambda m: m.scale,
    "discrete_laplace": lambda m: 2 * m.alpha / (1 - m.alpha ** 2),
    "gaussian": lambda m: m.sigma * math.sqrt(2 / math.pi),
}


def expected_error(mechanism: mechanisms.Mechanism, metric: str, profile: CountProfile
                   ) -> tuple[float, str] | None:
    """The expected RMSE or MAE of a raw release, with how it is known; None without a closed
    form (another metric, or MAE of a biased mechanism)."""
    if metric == "rmse":
        value = summaries.theoretical_rmse(mechanism, profile)
        return None if value is None else (value, CLOSED)
    if metric != "mae" or getattr(mechanism, "expected", None) is not None:
        return None
    if mechanism.key in _EXACT_MAE:
        return float(_EXACT_MAE[mechanism.key](mechanism)), CLOSED
    variance = profile.variance(mechanism)
    if variance is None:
        return None
    return profile.mean(np.sqrt(variance)) * math.sqrt(2 / math.pi), CLOSED_NORMAL


def has_closed_form(key: str, params: dict, metric: str, postprocess: str,
                    profile: CountProfile) -> bool:
    """Whether :func:`closed_form` answers this (raw releases of RMSE, or MAE when unbiased)."""
    if postprocess != "base" or metric not in ("rmse", "mae"):
        return False
    try:
        return expected_error(mechanisms.build(key, **params), metric, profile) is not None
    except ValueError:   # a mechanism that cannot be built on this domain: searched
        return False


def closed_form(key: str, params: dict, profile: CountProfile, target: Target) -> Answer:
    """Smallest ε whose expected RMSE/MAE (raw release) is at most the target value."""
    def error(epsilon):
        return expected_error(mechanisms.build(key, epsilon=epsilon, **params), target.metric,
                              profile)

    low, high = EPSILON_RANGE
    at_low, method = error(low)
    if not mechanisms.get(key).uses_epsilon:
        return Answer(key, target, float("nan"),
                      NOT_DP_ANY if at_low <= target.value else NOT_DP_NEVER, at_low)
    at_high, _ = error(high)
    if at_high > target.value:
        return Answer(key, target, math.inf, UNREACHABLE, at_high)
    if at_low <= target.value:
        return Answer(key, target, low, method + f" (already met at ε = {low:g})", at_low)
    root = optimize.brentq(lambda x: error(math.exp(x))[0] - target.value, math.log(low),
                           math.log(high), xtol=1e-12, rtol=1e-12)
    epsilon = math.exp(root)
    return Answer(key, target, epsilon, method, error(epsilon)[0])


# ------------------------------------------------------------------------------------ search
#: ``runner(key, params, epsilon, trials, progress) -> tidy table`` of the releases at one ε
#: numbered by ``trials`` (a range of trial numbers; columns as
#: :data:`dpcore.evaluation.experiment.COLUMNS`); ``progress(done, total)`` per release,
#: returning False to stop.
Runner = Callable[[str, dict, float, range, Callable], pd.DataFrame]


def pipeline_runner(od: ODMatrix, postprocess: str, seed: int) -> Runner:
    """Releases through :func:`dpcore.evaluation.experiment.run` (the one pipeline) in this process."""
    def run(key, params, epsilon, trials, progress):
        return experiment.run(od, [(key, params)], [epsilon], postprocess=(postprocess,),
                              trials=trials.stop, first_trial=trials.start, seed=seed,
                              progress=progress)
    return run


def _evaluate(table: pd.DataFrame, target: Target) -> dict:
    """Pass rate (with its interval) and the metric's mean over the trials of one ε."""
    draws = [dict(zip(rows["metric"], rows["value"]))
             for _, rows in table.groupby("trial", sort=True)]
    passed = sum(target.met(values) for values in draws)
    low, high = wilson(passed, len(draws))
    metric = "geh_pass_share" if target.metric == CHECKS else target.metric
    mean = float(np.mean([values[metric] for values in draws])) if draws else float("nan")
    return {"mean": mean, "pass_probability": passed / max(len(draws), 1), "pass_low": low,
            "pass_high": high, "trials": len(draws)}


class Stopped(Exception):
    """The user stopped a search (the answers found so far are kept)."""


def decided(passed: int, drawn: int, trials: int, probability: float) -> bool | None:
    """Whether ``trials`` draws will reach pass rate ``probability``, known after ``drawn`` of
    them with ``passed`` passes: True or False once the remaining draws cannot change it, else
    None."""
    if passed / trials >= probability:
        return True
    if (passed + trials - drawn) / trials < probability:
        return False
    return None


def _next_draws(passed: int, drawn: int, trials: int, probability: float) -> int:
    """Fewest further draws that could settle the verdict (all passing, or all failing)."""
    remaining = trials - drawn
    to_pass = next((k for k in range(remaining + 1) if (passed + k) / trials >= probability),
                   remaining)
    to_fail = next((k for k in range(remaining + 1)
                    if (passed + remaining - k) / trials < probability), remaining)
    return max(1, min(to_pass, to_fail))


def search(key: str, params: dict, target: Target, runner: Runner, trials: int,
           progress: Callable[[int], bool | None] | None = None) -> Answer:
    """Bisection over :data:`SEARCH_GRID` for the smallest ε whose pass rate over ``trials``
    draws reaches the target's probability, each ε drawn only until its verdict is certain
    (:func:`decided`); the answer's ε all ``trials`` times. ``progress(releases_done)`` after
    each release; False stops (raises Stopped)."""
    done = 0
    tables: dict[float, list[pd.DataFrame]] = {}
    tried: dict[float, dict] = {}

    def draw(epsilon, more: int) -> dict:
        nonlocal done
        first = sum(table["trial"].nunique() for table in tables.get(epsilon, []))

        stop = []

        def each(finished, total):
            wants = None if progress is None else progress(done + finished)
            if wants is False:   # also after a batch's last release, which cancels nothing
                stop.append(True)
            return wants
        table = runner(key, params, epsilon, range(first, first + more), each)
        done += more
        if stop or table.attrs.get("cancelled"):
            raise Stopped
        tables.setdefault(epsilon, []).append(table)
        tried[epsilon] = _evaluate(pd.concat(tables[epsilon], ignore_index=True), target)
        return tried[epsilon]

    def passes(epsilon) -> bool:
        values = {"trials": 0, "pass_probability": 0.0}
        while True:
            drawn = values["trials"]
            passed = round(values["pass_probability"] * drawn)
            verdict = decided(passed, drawn, trials, target.probability)
            if verdict is not None:
                return verdict
            values = draw(epsilon, _next_draws(passed, drawn, trials, target.probability))

    def complete(epsilon) -> dict:
        """All ``trials`` draws at ``epsilon`` (the answer's figures)."""
        missing = trials - tried[epsilon]["trials"]
        return draw(epsilon, missing) if missing > 0 else tried[epsilon]

    def answer(epsilon, method, values) -> Answer:
        frame = pd.DataFrame([{"epsilon": e, **v} for e, v in sorted(tried.items())])
        return Answer(key, target, epsilon, method, values["mean"], values["pass_probability"],
                      values["pass_low"], values["pass_high"], frame)

    if not mechanisms.get(key).uses_epsilon:
        values = draw(1.0, trials)
        return answer(float("nan"), NOT_DP_ANY if values["pass_probability"]
                      >= target.probability else NOT_DP_NEVER, values)
    grid = SEARCH_GRID
    # grid[hi] passes (hi = len(grid): beyond the grid); grid[lo] fails (lo = -1: below it).
    lo, hi = -1, len(grid)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(grid[mid]):
            hi = mid
        else:
            lo = mid
    if hi == len(grid):
        return answer(math.inf, UNREACHABLE, tried[grid[-1]])
    values = complete(grid[hi])
    return answer(grid[hi], SEARCH, values)


def max_releases(trials: int) -> int:
    """Most releases one searched answer makes (for a progress bar's total)."""
    return trials * math.ceil(math.log2(len(SEARCH_GRID) + 1))


def plan(od: ODMatrix, mechanism_specs, target: Target, *, postprocess: str = "base",
         trials: int = 20, seed: int = 0, runner: Runner | None = None,
         force_search: bool = False,
         progress: Callable[[int, int], bool | None] | None = None) -> list[Answer]:
    """Each mechanism's answer, closed form where it exists (unless ``force_search``), else
    searched. ``mechanism_specs``: keys or ``(key, params)``. ``progress(done, total)`` counts
    releases; returning False stops: the answers so far are returned, the rest marked stopped."""
    profile = CountProfile.of_matrix(od)
    runner = runner or pipeline_runner(od, postprocess, seed)
    specs = [(s, {}) if isinstance(s, str) else (s[0], dict(s[1])) for s in mechanism_specs]
    searched = [not force_search and has_closed_form(k, p, target.metric, postprocess, profile)
                for k, p in specs]
    total = sum(max_releases(trials) for closed in searched if not closed)
    answers, done = [], 0
    for (key, params), closed in zip(specs, searched):
        if closed:
            answers.append(closed_form(key, params, profile, target))
            continue
        base = done

        def step(finished):
            return None if progress is None else progress(base + finished, total)
        try:
            answer = search(key, params, target, runner, trials, step)
        except Stopped:
            answers += [Answer(k, target, float("nan"), STOPPED) for k, _ in
                        specs[len(answers):]]
            break
        done += max_releases(trials)
        answers.append(answer)
    if progress is not None and total:
        progress(total, total)
    return answers


def plan_table(answers: list[Answer]) -> pd.DataFrame:
    """The answers as one table (:data:`COLUMNS`)."""
    return pd.DataFrame([a.row() for a in answers], columns=COLUMNS)


def _epsilon_text(epsilon: float) -> str:
    return f"{epsilon:.2g}" if epsilon < 0.1 else f"{epsilon:.3g}"


def sentence(answers: list[Answer], names: Callable[[str], str]) -> str:
    """The answers in one sentence: "OLH needs ε ≈ 4.6 to keep GEH < 5 on 85 % of cells (in 90 %
    of releases); Laplace needs 0.02." ``names`` maps a key to its display name."""
    parts = []
    goal = answers[0].target.describe() if answers else ""
    for i, a in enumerate(answers):
        name = names(a.mechanism)
        if a.method in (NOT_DP_ANY, NOT_DP_NEVER):
            parts.append(f"{name} {'meets it' if a.method == NOT_DP_ANY else 'never meets it'} "
                         "whatever ε, with no privacy guarantee")
        elif a.method == STOPPED:
            parts.append(f"{name} was not searched (stopped)")
        elif math.isinf(a.epsilon):
            parts.append(f"{name} does not reach it at any ε ≤ {EPSILON_RANGE[1]:g}")
        else:
            what = (f" for {goal}" + (f" in {a.target.probability:.0%} of releases"
                                      if a.method == SEARCH else " on average")) if not parts \
                else ""
            verb = "needs ε ≈" if not parts else "needs"
            parts.append(f"{name} {verb} {_epsilon_text(a.epsilon)}{what}")
    return "; ".join(parts) + "." if parts else ""
