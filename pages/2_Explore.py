"""Explore: one release — which commutes survive each mechanism at your privacy budget.

Thin page: settings from :mod:`ui.components.controls`, cached releases from :mod:`ui.components.runs` (dpcore's one
release pipeline), ranks and summaries from :mod:`dpcore.scoring.ranks` and :mod:`dpcore.evaluation.summaries`,
figures from :mod:`ui.components.charts`.
"""

import streamlit as st

from dpcore.evaluation import intervals, summaries
from dpcore.scoring import ranks
from ui.components import budget, charts, controls, huge, navigation, panels, runs
from ui.explore import heatmap
from ui.components import heavy_hitters as heavy_hitters_ui
from ui.components.viewstate import kept

st.set_page_config(page_title="Explore · Commuting Privacy Lab", page_icon="🔍",
                   layout="wide")
navigation.menu(controls.keep())
settings = controls.run_controls()
st.title("Explore a release")
od = panels.view_or_stop(settings)
budget.stop_if_too_big(od, len(settings.mechanisms))
st.caption(f"{od.n:,} commuters, {od.domain_size:,} possible commutes ({od.nonzero:,} non-empty); "
           f"ε = {settings.epsilon:g}, seed {settings.seed}. Every mechanism draws its own noise "
           "from the seed, so the same settings always give the same release — here, in the "
           "other pages and on the command line (see the “Downloads” tab below).")

left, middle, right = st.columns(3)
k = kept(left.slider, "Busiest commutes in the bars (k)", "explore_k", 30, url="k", min_value=5,
         max_value=50)
log_bars = kept(middle.toggle, "Log scale for the bars", "explore_log_bars", False,
                url="log_bars")
scopes = [100, 1000] + ([od.domain_size] if od.domain_size <= 50_000 else [])
scope = kept(right.selectbox, "Ordering of", "explore_scope", 100, url="scope", options=scopes,
             format_func=lambda n: "all commutes" if n == od.domain_size
             else f"the top {n:,} true commutes")

# Scored as far as the one-line summaries need; the Scores tab asks for every metric.
results = runs.releases(settings, only=summaries.SENTENCE_METRICS)
for key, result in results.items():
    if result.error:
        st.warning(f"**{charts.name(key)}** could not run with these settings: {result.error}")
released = {key: r.released for key, r in results.items() if not r.error}
if not released:
    st.stop()
huge.release_note(od, results)
truth = runs.true_counts(settings)

bars, how = intervals.of_top_flows(ranks.top_flows(od, truth, released, k),
                                   {key: settings.spec(key).build() for key in released},
                                   od.n, od.domain_size, settings.postprocess)
charts.show(charts.top_bars(bars, f"The {k} busiest commutes: true vs released (ε = "
                                  f"{settings.epsilon:g})", log_bars, how), bars, "top_flows",
            "explore_bars", private=True)
st.caption(charts.top_bars_caption(bars, how, log_bars))

# The answer is the chart above; the rest is one tab away, so the page fits a laptop screen. Only
# the open tab is computed and drawn (choosing another reruns the page from the caches), and the
# open tab is in the URL (``tab=``), so a link opens the same view.
VIEWS = ["What happened", "Ordering", "Heat map", "True top 10", "Scores",
         "Checks over repeated draws", "Heavy hitters", "Downloads"]
panel, view = panels.open_tab(dict(zip(VIEWS, VIEWS)), "tab", url=True)
if view in ("What happened", "Ordering", "True top 10"):
    pairs = runs.orderings(settings, released, min(scope, od.domain_size))

with panel:
    if view == "What happened":
        for key, result in results.items():
            if not result.error:
                st.markdown("- " + summaries.summary_sentence(charts.name(key), pairs[key],
                                                              result.metrics))

    elif view == "Ordering":
        labels = od.cell_labels(next(iter(pairs.values()))["cell"].to_numpy())
        log_ranks = kept(st.toggle, "Log axes for the ordering", "explore_log_ranks", False,
                         url="log_ranks")
        order = ranks.long_pairs(od, pairs)
        charts.show(charts.rank_scatter(pairs, labels, f"Ordering: true rank vs released rank (ε = "
                                                        f"{settings.epsilon:g})", log_ranks),
                    order, "ordering", "explore_ordering", private=True)

    elif view == "Heat map":
        heatmap.section(od, truth, released, settings.epsilon, "explore_heatmap")

    elif view == "True top 10":
        st.caption("The true top 10 and the rank each mechanism gave them.")
        table = ranks.rank_table(od, pairs, 10, {k: charts.short_name(k) for k in released})
        charts.wrapped_table(table)
        charts.table_download(table, "top10_ranks", "explore_top10", private=True)

    elif view == "Downloads":
        panels.release_downloads(settings, od, truth, results)

    elif view == "Scores":
        results = runs.releases(settings, held=results)
        charts.table_download(panels.scorecard(results), "scores", "explore_scores",
                              private=True)
        shown, key = panels.open_tab({k: charts.name(k) for k in released}, "explore_scores_tab")
        with shown:
            panels.cards(results[key], 10)
            st.markdown("**Planner's checks** (UK DfT TAG M3.1, TxDOT, ONS travel-to-work areas)")
            panels.checks(results[key])

    elif view == "Checks over repeated draws":
        draws = kept(st.number_input, "Draws", "explore_draws", 30, url="draws", min_value=2,
                     max_value=500,
                     help="How often each check passes over this many independent releases.")
        found = panels.sweep_runner(runs.repeated_draws(settings, draws), "explore_draws")
        rates = summaries.pass_rates_by_mechanism(found.table)
        if rates:
            st.caption(f"Share of {found.done // max(len(rates), 1):,} independent releases per "
                       "mechanism (same settings, fresh noise) that pass each check.")
            shown, key = panels.open_tab({k: charts.name(k) for k in rates}, "explore_rates_tab")
            with shown:
                panels.pass_probabilities(rates[key])

    elif view == "Heavy hitters":
        heavy_hitters_ui.section(settings, od)
