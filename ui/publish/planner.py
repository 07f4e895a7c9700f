"""The Plan & publish page's planner section: target inputs, the search with progress and Stop,
the answer on the error-vs-ε curve, the sentence, the baselines beside DP and the ε ruler.

Closed-form answers are computed at once (they take well under a millisecond at county level).
Searched answers release through the shared sweep runner (:func:`ui.components.runs.sweep`), so every
release is cached one by one, shared with the Tradeoffs page, and kept when the user presses
Stop; the answers themselves are kept in the session under their settings.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore import mechanisms
from dpcore.evaluation import planner
from dpcore.evaluation.experiment import Scenario
from dpcore.limits import PASS_PROBABILITY
from dpcore.mechanisms.count_profile import CountProfile
from dpcore.release import RunSettings
from dpcore.scoring import metrics
from ui.components import charts, runs, safe
from ui.learn import figures
from ui.components.viewstate import kept

#: Default threshold per metric when the user picks it (planners' usual levels).
DEFAULT_TARGETS = {"rmse": 5.0, "mae": 5.0, "topk_recall": 0.9, "topk_precision": 0.9,
                   "kendall_tau": 0.9, "spearman_rho": 0.9, "geh_pass_share": 0.85,
                   "total_error_pct": 5.0, "trip_length_mean_error_pct": 5.0}
ANSWERS = "planner_answers"  # session key: {settings: answers}
#: ε on the curve's x axis.
CURVE_GRID = tuple(e for e in planner.SEARCH_GRID if e >= 0.01)


def _metric_label(metric: str) -> str:
    if metric == planner.CHECKS:
        return "Every planner check passes (TAG M3.1, TxDOT, ONS)"
    info = metrics.METRICS[metric]
    return f"{info.label} ({info.unit})" if info.unit else info.label


def target_inputs() -> tuple[planner.Target, int]:
    """The target (metric, threshold, probability) and the draws per searched ε."""
    left, middle, right, last = st.columns([3, 2, 2, 1])
    metric = kept(left.selectbox, "Target metric", "plan_metric", "geh_pass_share", url="target",
                  options=[planner.CHECKS, *metrics.METRICS], format_func=_metric_label)
    value = float("nan")
    if metric != planner.CHECKS:
        info = metrics.METRICS[metric]
        default = DEFAULT_TARGETS.get(metric, 0.9 if info.unit == "share" else 5.0)
        sign = {"lower": "at most", "higher": "at least", "zero": "within ±"}[info.better]
        value = kept(middle.number_input, f"Level: {info.label} {sign}", f"plan_value_{metric}",
                     default, min_value=0.0, format="%.4g",
                     help=f"{info.description} Unit: {info.unit or 'none'}.")
    else:
        middle.caption("Every acceptance check that applies to the data must pass.")
    probability = kept(right.slider, "In this share of releases", "plan_probability", 0.9,
                       min_value=PASS_PROBABILITY.low, max_value=PASS_PROBABILITY.high,
                       step=0.01,
                       help="For searched answers: the pass rate over repeated releases must "
                            "reach this. Closed-form answers are about the expected error.")
    trials = kept(last.number_input, "Draws per ε", "plan_trials", 20, min_value=5,
                  max_value=200, help="Releases at each ε the search tries.")
    return planner.Target(metric, value, probability), int(trials)


def _runner(settings: RunSettings) -> planner.Runner:
    """Searched releases through the shared, cached sweep runner (one ε at a time; the trials
    before ``trials.start`` come from its cache)."""
    def run(key, params, epsilon, trials, progress):
        spec = runs.SweepSpec(settings.dataset, (Scenario("current", settings.view),),
                              ((key, tuple(sorted(params.items()))),), (float(epsilon),),
                              (settings.postprocess,), trials.stop, settings.seed)
        found = runs.sweep(spec, compute=True, progress=None if progress is None else (
            lambda done, total: progress(max(done - trials.start, 0), len(trials))))
        if found.errors:
            raise ValueError(next(iter(found.errors.values())))
        table = found.table[found.table["trial"] >= trials.start]
        table.attrs.update(found.table.attrs)
        return table
    return run


def _key(settings: RunSettings, target: planner.Target, trials: int) -> tuple:
    return (settings.dataset, settings.view, runs.mechanism_specs(settings), settings.postprocess,
            settings.seed, target, trials)


def answers(settings: RunSettings, target: planner.Target, trials: int
            ) -> list[planner.Answer] | None:
    """The planner's answers: at once when every one is in closed form, else after the user
    presses Find (with a progress bar and Stop). None while a search is waiting to be run."""
    stored = st.session_state.setdefault(ANSWERS, {})
    key = _key(settings, target, trials)
    if key in stored:
        return stored[key]
    od = runs.view(settings)
    profile = CountProfile.of_matrix(od)
    specs = [(k, settings.own_params(k)) for k in settings.mechanisms]
    searched = [k for k, p in specs
                if not planner.has_closed_form(k, p, target.metric, settings.postprocess, profile)]
    if searched:
        place = st.empty()
        left, right, status = place.container().columns([2, 1, 4], vertical_alignment="center")
        names = ", ".join(charts.short_name(k) for k in searched)
        hint = (" Closed forms exist for raw releases: choose the post-processing Base in the "
                "sidebar for an instant answer." if target.metric in ("rmse", "mae")
                and settings.postprocess != "base" else "")
        status.caption(f"{names}: no closed form for this target, so ε is searched with "
                       f"{trials} releases per ε tried (at most "
                       f"{planner.max_releases(trials) * len(searched):,} releases).{hint}")
        if not left.button("Find ε", key="plan_find", type="primary",
                           icon=":material/search:"):
            return None
        right.button("Stop", key="plan_stop", icon=":material/stop:",
                     help="Stops after the current release; finished releases are kept.")
        bar = status.progress(0.0, "Starting…")
        try:
            result = planner.plan(od, specs, target, postprocess=settings.postprocess,
                                  trials=trials, seed=settings.seed,
                                  runner=_runner(settings),
                                  progress=lambda done, total: bar.progress(
                                      min(done / total, 1.0), f"{done:,} of at most {total:,} "
                                                              "releases"))
        except ValueError as error:  # a setting a mechanism cannot run with
            place.empty()
            st.warning(str(error))
            return None
        place.empty()
    else:
        result = planner.plan(od, specs, target, postprocess=settings.postprocess)
    stored[key] = result
    return result


def _epsilon_cell(answer: planner.Answer) -> str:
    if math.isnan(answer.epsilon):
        return "— (not DP)" if answer.method.startswith("not DP") else "—"
    if math.isinf(answer.epsilon):
        return f"> {planner.EPSILON_RANGE[1]:g}"
    return f"{answer.epsilon:.3g}"


def answer_table(found: list[planner.Answer]) -> pd.DataFrame:
    """One row per mechanism, as shown and downloaded."""
    rows = []
    for a in found:
        cls = mechanisms.get(a.mechanism)
        interval = ("" if math.isnan(a.pass_low)
                    else f"{a.pass_probability:.0%} ({a.pass_low:.0%}–{a.pass_high:.0%})")
        rows.append({"Mechanism": cls.name, "Guarantee": cls().guarantee,
                     "ε needed": _epsilon_cell(a), "How": a.method,
                     "Expected value": a.expected, "Pass rate (95 % CI)": interval})
    return pd.DataFrame(rows)


def curve(found: list[planner.Answer], settings: RunSettings, target: planner.Target
          ) -> tuple[go.Figure, pd.DataFrame]:
    """Error against ε per mechanism (closed form, or the ε the search tried) with a marker at
    each answer; baselines as flat dashed lines (ε does not apply); the target as a line."""
    profile = CountProfile.of_matrix(runs.view(settings))
    metric = "geh_pass_share" if target.metric == planner.CHECKS else target.metric
    fig, rows = go.Figure(), []
    for a in found:
        cls = mechanisms.get(a.mechanism)
        params = settings.own_params(a.mechanism)
        if a.method in (planner.CLOSED, planner.CLOSED_NORMAL) or (
                a.method == planner.UNREACHABLE and not len(a.tried)):
            xs = list(CURVE_GRID)
            ys = [planner.expected_error(mechanisms.build(a.mechanism, epsilon=e, **params),
                                         metric, profile)[0] for e in xs]
        else:
            xs, ys = list(a.tried["epsilon"]), list(a.tried["mean"])
        if not cls.uses_epsilon:
            xs, ys = [CURVE_GRID[0], CURVE_GRID[-1]], [a.expected] * 2
        name = charts.escape(cls.name)
        searched = len(a.tried) and cls.uses_epsilon  # the ε tried: markers on the line
        fig.add_scatter(x=xs, y=ys, mode="markers+lines" if searched else "lines",
                        name=name, line=dict(color=charts.colour(a.mechanism),
                                             dash="dash" if not cls.uses_epsilon else "solid"),
                        marker=dict(symbol=charts.symbol(a.mechanism)),
                        hovertemplate=f"<b>{name}</b><br>ε %{{x:.3g}}: %{{y:,.4g}}<extra></extra>")
        rows += [{"mechanism": a.mechanism, "epsilon": x, "value": y} for x, y in zip(xs, ys)]
        if math.isfinite(a.epsilon):
            fig.add_scatter(x=[a.epsilon], y=[a.expected], mode="markers", showlegend=False,
                            marker=dict(color=charts.colour(a.mechanism), size=16,
                                        symbol="star", line=dict(color="black", width=1)),
                            hovertemplate=f"<b>{name}</b>: needs ε = {a.epsilon:.3g}"
                                          "<extra></extra>")
    log_y = metric in ("rmse", "mae", "max_error")
    if target.metric != planner.CHECKS:
        charts.marker_line(fig, "y", target.value, log_y, line=dict(color="black", dash="dot"),
                           annotation_text=charts.escape(f"target: {target.describe()}"))
    charts.marker_line(fig, "x", settings.epsilon, True,
                       line=dict(color=figures.ACCENT_COLOUR),
                       annotation_text=f"your ε = {settings.epsilon:g}")
    info = metrics.METRICS[metric]
    y_title = f"{info.label} ({info.unit})" if info.unit else info.label
    title = (f"{info.label} against ε: ★ the smallest ε meeting the target"
             if target.metric != planner.CHECKS else
             "GEH < 5 share against ε (target: every planner check): ★ the answer")
    return charts.layout(fig, title, "ε (privacy budget, log scale)", y_title, log_x=True,
                         log_y=log_y), pd.DataFrame(rows)


def baselines_beside(settings: RunSettings, target: planner.Target) -> pd.DataFrame:
    """Today's disclosure control (not DP) on the same data: one release each, with its value of
    the target metric and whether it meets it."""
    rows = []
    for key in mechanisms.names(mechanisms.BASELINE):
        result = runs.release_of(settings, key)
        if result.error:
            continue
        values = dict(result.metrics)
        metric = "geh_pass_share" if target.metric == planner.CHECKS else target.metric
        rows.append({"Method (not DP)": mechanisms.get(key).name,
                     _metric_label(metric): values[metric],
                     "Meets the target": "yes" if target.met(values) else "no",
                     "Guarantee": mechanisms.NOT_DP})
    return pd.DataFrame(rows)


def section(settings: RunSettings) -> None:
    """The whole planner section."""
    target, trials = target_inputs()
    found = answers(settings, target, trials)
    if found is None:
        return
    sentence = planner.sentence(found, lambda k: mechanisms.get(k).name)
    st.markdown(f"**{safe.markdown(sentence)}**")
    table = answer_table(found)
    charts.wrapped_table(table)
    charts.table_download(planner.plan_table(found), "plan", "plan_answers", "Answers (CSV)",
                          private=True)
    fig, frame = curve(found, settings, target)
    charts.show(fig, frame, "plan_curve", "plan_curve", private=True)
    if any(a.method == planner.CLOSED_NORMAL for a in found):
        st.caption("MAE of local mechanisms: normal approximation (each cell's error is a sum of "
                   "many independent reports), E|error| ≈ σ·√(2/π).")
    st.caption("Closed form: the expected error of a raw release from the mechanism's variance; "
               "a single release scatters around it. Searched: bisection over 60 ε from 0.001 to "
               "20 with repeated releases (each cached, shared with Tradeoffs); the pass rate's "
               "95 % interval is Wilson's.")
    st.subheader("Today's disclosure control beside DP")
    beside = baselines_beside(settings, target)
    charts.wrapped_table(beside)
    st.caption("These methods are **not differentially private**: ε does not apply to them, "
               "and Learn's first lesson shows the differencing attack that defeats "
               "suppression and rounding. Add them in the sidebar to see them on the curve.")
    st.subheader("The ε ruler")
    marks = [(f"{mechanisms.get(a.mechanism).name} needs", a.epsilon, charts.colour(a.mechanism))
             for a in found if math.isfinite(a.epsilon)]
    fig, frame = figures.epsilon_ruler(settings.epsilon, marks)
    # the data are the public deployed budgets; the drawing adds the ε this plan needs
    charts.show(fig, frame, "epsilon_ruler", "plan_ruler", figure_private=True)
    st.caption("Each deployment's ε is for its own privacy unit and scope (hover a point); "
               "values quoted second-hand are marked so. The data (CSV) are these public "
               "budgets only; the figure also draws the ε this plan needs, computed from the "
               "confidential table.")
