"""Tradeoffs: how error falls with ε, population size and domain size, per mechanism.

Thin page: sweeps are specified here, run and cached by :mod:`ui.runs` (one cached job per
release, so Stop, a smaller grid and coming back all reuse them), summarised by
:mod:`dpcore.explore` and drawn by :mod:`ui.charts`.
"""

import pandas as pd
import streamlit as st

from dpcore import explore, metrics, postprocess
from ui import charts, controls, panels, runs
from ui.controls import kept

st.set_page_config(page_title="Tradeoffs · Commuting Privacy Lab",
                   page_icon="📈", layout="wide")
settings = controls.run_controls()
st.title("Privacy–utility tradeoffs")
if not settings.mechanisms:
    st.info("Choose at least one mechanism in the sidebar.")
    st.stop()
try:
    od = runs.view(settings)
except ValueError as error:
    st.warning(str(error))
    st.stop()

left, middle, right = st.columns([2, 3, 1])
metric = kept(left.selectbox, "Metric", "tradeoffs_metric", "rmse", url="metric",
              options=list(metrics.METRICS),
              format_func=lambda m: f"{metrics.METRICS[m].label} "
                                    f"({metrics.METRICS[m].unit or '—'})")
grid_text = kept(middle.text_input, "ε grid", "tradeoffs_grid",
                 explore.format_grid(explore.THESIS_EPSILONS), url="grid",
                 help="Any values in (0, 20], separated by commas; the thesis used 0.5 … 5.")
trials = kept(right.number_input, "Trials", "tradeoffs_trials", 5, url="trials", min_value=1,
              max_value=100,
              help="Releases per point; the band is the 95 % confidence interval of the mean.")
log_y = kept(st.toggle, "Log scale for the metric", "tradeoffs_log_y", True, url="log_y")
try:
    epsilons = explore.parse_grid(grid_text)
except ValueError as error:
    st.error(str(error))
    st.stop()
info = metrics.METRICS[metric]
y_title = f"{info.label} ({info.unit})" if info.unit else info.label
mechanism_specs = runs.mechanism_specs(settings)
here = runs.Scenario("chosen data", settings.level, settings.areas)


def sweep_chart(spec, key, title, x="epsilon", x_title="ε (privacy budget)", style=None,
                theory=None, theory_label="theory", log_x=False):
    """Run/peek a sweep and draw its mean curves with bands and downloads."""
    found = panels.sweep_runner(spec, key)
    if found.table.empty:
        return found
    by = ["mechanism", x] + ([style] if style else [])
    summary = explore.summarise(found.table, metric, by=by)
    fig = charts.curves(summary, x, title, x_title, y_title, style=style, theory=theory,
                        theory_label=theory_label, log_x=log_x, log_y=log_y)
    charts.show(fig, summary, key, key)
    return found


st.header("Error against ε")
main = runs.SweepSpec(settings.dataset, (here,), mechanism_specs, epsilons,
                      (settings.postprocess,), trials, settings.seed)
with_theory = (settings.postprocess in postprocess.NEVER_WORSE_THAN_RAW
               and metric in ("rmse", "rmse_freq"))
exact_theory = settings.postprocess == "base"
main_found = sweep_chart(main, "tradeoffs_epsilon", f"{info.label} against ε "
                         f"({postprocess.METHODS[settings.postprocess][0]})",
                         theory=runs.theory(main, metric) if with_theory else None,
                         theory_label="theory" if exact_theory else "theory bound")
if not with_theory:
    st.caption("Theory curves are drawn for RMSE when the post-processing is Base, Base-Pos, "
               "Post-Pos, Norm or Norm-Sub, where the variance gives them in closed form.")
elif exact_theory:
    st.caption("Dotted: the expected RMSE from each mechanism's closed-form variance (none for "
               "mechanisms without a closed form).")
else:
    st.caption(f"Dotted: the expected RMSE of the *raw* release from each mechanism's closed-form "
               f"variance — an upper bound here, because "
               f"{postprocess.METHODS[settings.postprocess][0]} projects the release onto a set "
               "holding every possible true table and so can only shrink its error.")

st.header("Post-processing compared (thesis figure 5.10)")
methods = kept(st.multiselect, "Post-processing methods", "tradeoffs_methods",
               ["base", "base_pos", "base_cut"], options=list(postprocess.METHODS),
               format_func=lambda k: postprocess.METHODS[k][0])
if methods:
    sweep_chart(runs.SweepSpec(settings.dataset, (here,), mechanism_specs, epsilons,
                               tuple(methods), trials, settings.seed), "tradeoffs_postprocess",
                f"{info.label} against ε by post-processing", style="postprocess")

st.header("Error against population size n (as seed 000)")
sizes_text = kept(st.text_input, "Population sizes n", "tradeoffs_sizes",
                  explore.format_grid(explore.population_grid(od.n)),
                  help=f"Commuters drawn at random without replacement from the {od.n:,}; "
                       f"ε is the sidebar's ({settings.epsilon:g}).")
try:
    sizes = explore.parse_grid(sizes_text, "n", 0, od.n, whole=True)
    scenarios = tuple(runs.Scenario(f"n = {n:,}", settings.level, settings.areas, n)
                      for n in sizes)
    sweep_chart(runs.SweepSpec(settings.dataset, scenarios, mechanism_specs, (settings.epsilon,),
                               (settings.postprocess,), trials, settings.seed), "tradeoffs_n",
                f"{info.label} against population size (ε = {settings.epsilon:g})", x="n",
                x_title="Commuters n (log scale)", log_x=True)
except ValueError as error:
    st.error(str(error))

st.header("Error against domain size and subset (thesis figures 5.13, 5.17)")
options = runs.scenario_options(settings)
chosen = kept(st.multiselect, "Data to compare", "tradeoffs_scenarios",
              list(options)[:3], options=list(options))
domain = runs.SweepSpec(settings.dataset, tuple(options[c] for c in chosen if c in options),
                        mechanism_specs, epsilons, (settings.postprocess,), trials, settings.seed)
domain_found = sweep_chart(domain, "tradeoffs_domain", f"{info.label} against ε by data",
                           style="scenario") if chosen else None

st.header("Release time per mechanism")
times = explore.release_times(pd.concat(
    [found.table for found in (main_found, domain_found) if found is not None]))
if len(times):
    charts.show(charts.runtime_bars(times, "Mean release time per mechanism"), times,
                "release_times", "tradeoffs_times")
else:
    st.caption("Run a sweep above to measure release times.")
