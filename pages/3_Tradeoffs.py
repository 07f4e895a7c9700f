"""Tradeoffs: how error falls with ε, population size and domain size, per mechanism.

Thin page: sweeps are specified here, run and cached by :mod:`ui.components.runs` (one cached job per
release, so Stop, a smaller grid and coming back all reuse them) and drawn by :mod:`ui.tradeoffs.sections`.
"""

import streamlit as st

from dpcore import grids
from dpcore.data import views
from dpcore.evaluation.experiment import Scenario
from dpcore.mechanisms import postprocess
from dpcore.mechanisms.base import EPSILON
from dpcore.scoring import metrics
from ui.components import budget, controls, huge, navigation, panels, runs
from ui.tradeoffs import analysis, sections
from ui.components import heavy_hitters as heavy_hitters_ui
from ui.components.viewstate import kept

st.set_page_config(page_title="Tradeoffs · Commuting Privacy Lab",
                   page_icon="📈", layout="wide")
navigation.menu(controls.keep())
settings = controls.run_controls()
st.title("Privacy–utility tradeoffs")
sections.scheduler_note()
od = panels.view_or_stop(settings)
budget.stop_if_too_big(od, 1)  # sweeps release one at a time

left, middle, right = st.columns([2, 3, 1])
metric = kept(left.selectbox, "Metric", "tradeoffs_metric", "rmse", url="metric",
              options=list(metrics.METRICS),
              format_func=lambda m: f"{metrics.METRICS[m].label} "
                                    f"({metrics.METRICS[m].unit or '—'})")
grid_text = kept(middle.text_input, "ε grid", "tradeoffs_grid",
                 grids.format_grid(grids.THESIS_EPSILONS), url="grid",
                 help=f"Any values in {EPSILON.interval()}, separated by commas; the thesis used "
                      "0.5 … 5.")
trials = kept(right.number_input, "Trials", "tradeoffs_trials", 5, url="trials", min_value=1,
              max_value=100,
              help="Releases per point; the band is the 95 % confidence interval of the mean.")
log_y = kept(st.toggle, "Log scale for the metric", "tradeoffs_log_y", True, url="log_y")
try:
    epsilons = grids.parse_grid(grid_text)
except ValueError as error:
    st.error(str(error))
    st.stop()
specs = runs.mechanism_specs(settings)
options = runs.scenario_options(settings)
# The sidebar's data under the name the domain-size comparison gives it, so that the release-time
# chart counts a version of the data once, not as "chosen data" and again as "Everything…".
here = next((scenario for scenario in options.values() if scenario.view == settings.view),
            Scenario("chosen data", settings.view))


def sweep(scenarios, grid, methods) -> runs.SweepSpec:
    return runs.SweepSpec(settings.dataset, tuple(scenarios), specs, tuple(grid), tuple(methods),
                          trials, settings.seed)


st.header("Error against ε")
main = sections.epsilon_section(sweep([here], epsilons, [settings.postprocess]),
                                 settings.postprocess, metric, log_y)

st.header("Error against ε on one answer (inflow, distance band)")
analysis.section(settings, od, epsilons, trials)

st.header("Post-processing compared (thesis figure 5.10)")
available = huge.postprocess_methods(od)
methods = kept(st.multiselect, "Post-processing methods", "tradeoffs_methods",
               [m for m in ("base", "base_pos", "base_cut") if m in available], options=available,
               format_func=lambda k: postprocess.METHODS[k].name,
               help=postprocess.definitions(available))
if methods:
    sections.sweep_chart(sweep([here], epsilons, methods), "tradeoffs_postprocess",
                          f"{metrics.METRICS[metric].label} against ε by post-processing", metric,
                          log_y, style="postprocess")

st.header("Error against population size n (as in low-population telemetry experiments)")
sizes_text = kept(st.text_input, "Population sizes n", "tradeoffs_sizes",
                  grids.format_grid(grids.population_grid(od.n)),
                  help=f"Commuters drawn at random without replacement from the {od.n:,}; "
                       f"ε is the sidebar's ({settings.epsilon:g}).")
try:
    sizes = grids.parse_grid(sizes_text, "n", 0, od.n, whole=True)
    scenarios = [Scenario(f"n = {n:,}", views.View(settings.level, settings.areas, n))
                 for n in sizes]
    sections.sweep_chart(sweep(scenarios, [settings.epsilon], [settings.postprocess]),
                          "tradeoffs_n", f"{metrics.METRICS[metric].label} against population "
                          f"size (ε = {settings.epsilon:g})", metric, log_y, x="n",
                          x_title="Commuters n (log scale)", log_x=True)
except ValueError as error:
    st.error(str(error))

st.header("Error against domain size and subset (thesis figures 5.13, 5.17)")
chosen = kept(st.multiselect, "Data to compare", "tradeoffs_scenarios",
              list(options)[:3], options=list(options))
domain = (sections.sweep_chart(sweep([options[c] for c in chosen if c in options], epsilons,
                                      [settings.postprocess]), "tradeoffs_domain",
                                f"{metrics.METRICS[metric].label} against ε by data", metric,
                                log_y, style="scenario") if chosen else None)

st.header("Release time per mechanism")
sections.release_times([main, domain])

st.header("The thesis's chapter 5, reproduced")
sections.thesis_report(settings, epsilons, trials)

heavy_hitters_ui.recall_section(settings, od, epsilons, trials, main)
