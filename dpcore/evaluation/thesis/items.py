"""Every figure's and table's data, in the thesis's order, from one protocol's sweep table,
trial-0 snapshots and per-trial statistics, each judged (:mod:`.verdicts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import summaries
from dpcore.scoring import ranks
from dpcore.evaluation.thesis.protocol import (
    Absent, CENTRAL, ED_ORDER_TOP, Figure, HIGH_EPSILON, ITEMS, label, Levels, LOCAL,
    LOW_EPSILON, MAIN_POSTPROCESS, mechanism_specs, POSTPROCESS, RANK_TOP, Table
)
from dpcore.evaluation.thesis.times import TIMING_REPEATS
from dpcore.evaluation.thesis.verdicts import _judged
from dpcore.mechanisms import postprocess
from dpcore.mechanisms.count_profile import CountProfile


def _map_data(od: ODMatrix, lv: Levels) -> tuple[pd.DataFrame, dict | None]:
    """Fine-level zones with their position and subset; the land around them (offline)."""
    from dpcore.data import geography

    zones = od.origins.to_frame()
    names = {}
    for tag, scenario in zip(("D", "R"), lv.subsets):
        for area in scenario.view.areas:
            names[area] = f"{tag}: {scenario.label}"
    zones["subset"] = pd.Series(zones.get("parent", pd.Series(dtype=str))).map(names).fillna(
        "other zones")
    zones = zones[np.isfinite(zones["lat"]) & np.isfinite(zones["lon"])]
    if zones.empty:
        return zones, None
    bounds = [[zones["lat"].min(), zones["lon"].min()], [zones["lat"].max(), zones["lon"].max()]]
    return zones[["id", "label", "lat", "lon", "subset"]], geography.background(bounds)["land"]


@dataclass(frozen=True)
class Shared:
    """What every protocol's items share (made once per run): the levels' matrices, the coarse
    level's true counts, the top counts of each whole level, the running times, the map, and
    each whole level's count profile (the computed reasons of figures 5.2 and 5.3)."""

    matrices: dict
    truth: np.ndarray
    tops: dict
    times: pd.DataFrame
    map: tuple | None
    profiles: dict = field(default_factory=dict)


def shared(od: ODMatrix, lv: Levels, times: pd.DataFrame) -> Shared:
    matrices = {s.label: views.select(od, s.view) for s in lv.scenarios}
    tops = {s.label: -np.sort(-np.partition(matrices[s.label].to_dense(), -(RANK_TOP + 1))[
        -(RANK_TOP + 1):]).astype(float) for s in lv.whole}
    return Shared(matrices, matrices[lv.coarse.label].to_dense(), tops, times,
                  _map_data(od, lv) if len(lv.subsets) == 2 else None,
                  {s.label: CountProfile.of_matrix(matrices[s.label]) for s in lv.whole})


def _items(od: ODMatrix, lv: Levels, table: pd.DataFrame, snaps: dict, per_trial: pd.DataFrame,
           common: Shared, settings: str, loop_times: bool = False,
           switches: frozenset = frozenset()) -> list:
    coarse, fine = lv.coarse, lv.fine
    whole = list(lv.whole)
    matrices, times = common.matrices, common.times
    size = {label_: (m.n, m.domain_size) for label_, m in matrices.items()}

    def trials_at(level, epsilon):
        if per_trial.empty:
            return per_trial
        return per_trial[(per_trial["scenario"] == level.label)
                         & (per_trial["epsilon"] == epsilon)]
    bars = "Bars: true count and released count of each of the true busiest commutes (trial 0)."

    def lines(ref, title, metric, keys, scenarios, methods, drawn, **style):
        rows = table[table["mechanism"].isin(keys)
                     & table["scenario"].isin([s.label for s in scenarios])
                     & table["postprocess"].isin(methods)]
        data = summaries.summarise(rows, metric, by=["mechanism", "scenario", "postprocess",
                                                     "epsilon"])
        named = ", ".join(postprocess.METHODS[m].name for m in methods)
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} Mechanisms: "
                   f"{', '.join(label(k) for k in keys)}. Data: "
                   f"{', '.join(s.label for s in scenarios)}. Post-processing: {named}. "
                   f"Each point is the mean over trials; error bars are 95 % confidence "
                   f"intervals of the mean. {settings}")
        first = scenarios[0].label
        context = {"levels": [s.label for s in scenarios], "n": size[first][0],
                   "d": size[first][1], "sizes": {s.label: size[s.label][0] for s in scenarios},
                   "dims": {s.label: size[s.label] for s in scenarios}}
        return Figure(ref, title, caption, data, "lines", metric, context=context, **style)

    def ordering(ref, title, frames: dict, drawn, context, facet):
        data = pd.concat([frame.assign(**{facet: key}) for key, frame in frames.items()],
                         ignore_index=True) if frames else pd.DataFrame()
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} Each dot is a commute: its true rank "
                   f"(x) against the rank the release gives it (y, 1 = busiest; trial 0); dots "
                   f"released as 0 (less than half a commuter) are marked apart; the diagonal "
                   f"is the true order. {settings}")
        return Figure(ref, title, caption, data, "ordering", facet=facet, context=context)

    def snap(level, epsilon, key):
        return snaps.get((level.label, epsilon, key))

    def top_bars(ref, title, level_list, epsilon, keys, facet, drawn):
        frames = []
        for level in level_list:
            for key in keys:
                found = snap(level, epsilon, key)
                if found is not None:
                    frames.append(found.top.assign(panel=level.label if facet == "panel"
                                                   else label(key)))
        data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        level = level_list[0].label
        caption = (f"Thesis {ref.lower()}. Drawn: {drawn} {bars} ε = {epsilon:g}. Data: "
                   f"{', '.join(s.label for s in level_list)}. {settings}")
        return Figure(ref, title, caption, data, "bars", facet="panel",
                      context={"n": od.n, "d": size[level][1], "epsilon": epsilon})

    def top_counts(level):
        return common.tops[level.label]

    def rank_table(ref, title, level, epsilon):
        pairs = {key: snap(level, epsilon, key).pairs for key, _ in mechanism_specs(od)
                 if snap(level, epsilon, key) is not None}
        matrix = matrices[level.label]
        data = ranks.rank_table(matrix, pairs, RANK_TOP, {k: label(k) for k in pairs})
        caption = (f"Thesis {ref.lower()}. The true top {RANK_TOP} commutes of {matrix.name} "
                   f"(|X| = {matrix.domain_size:,}) and the rank each release gives them "
                   f"(1 = busiest; trial 0, Base-Pos). {settings}")
        return Table(ref, title, caption, data, context={
            "epsilon": epsilon, "fine": level == fine, "n": matrix.n, "d": matrix.domain_size,
            "top_counts": top_counts(level), "trials": trials_at(level, epsilon)})

    titles = dict(ITEMS)
    items: list = []
    no_fine = "the data has no finer level (load ED-level data for the ED items)"

    items.append(top_bars("Figure 5.1", titles["Figure 5.1"], whole, LOW_EPSILON, ["laplace"],
                          "panel", "the Laplace mechanism's release, one panel per level."))
    items.append(lines("Figure 5.2", titles["Figure 5.2"], "rmse", CENTRAL, whole, ["base"],
                       "RMSE (commuters per cell) of the raw releases against ε.",
                       dash="scenario" if len(whole) > 1 else None))
    items.append(lines("Figure 5.3", titles["Figure 5.3"], "max_error_freq", CENTRAL, whole,
                       ["base"], "largest error of any cell as a share of n, raw releases.",
                       dash="scenario" if len(whole) > 1 else None))
    for central in items[-2:]:  # figures 5.2, 5.3: the laws their computed reasons evaluate
        central.context.update(profiles=common.profiles,
                               opendp="central_opendp" in switches)
    items.append(ordering("Figure 5.4", titles["Figure 5.4"],
                          {k: snap(coarse, HIGH_EPSILON, k).ordering["base"] for k in CENTRAL
                           if snap(coarse, HIGH_EPSILON, k)},
                          "the central mechanisms' raw releases at ε = 5, county level.",
                          {"d": size[coarse.label][1], "true_counts": common.truth,
                           "trials": trials_at(coarse, HIGH_EPSILON)}, "mechanism"))
    for ref, epsilon in (("Figure 5.5", LOW_EPSILON), ("Figure 5.6", HIGH_EPSILON)):
        items.append(top_bars(ref, titles[ref], [coarse], epsilon, LOCAL, "mechanism",
                              "the local mechanisms' releases (Base-Pos), one panel each."))
    figure_5_7 = lines("Figure 5.7", titles["Figure 5.7"], "rmse", LOCAL, [coarse],
                       [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε, negative "
                       "counts set to 0 (Base-Pos) as in the thesis.")
    without = table[(table["metric"] == "rmse_without_cell_0") & (table["mechanism"] == "olh")
                    & (table["scenario"] == coarse.label)
                    & (table["postprocess"] == MAIN_POSTPROCESS)]
    if "olh_lost_cell_0" in switches and len(without):  # the reason of figure 5.7's local hashing curve
        from dataclasses import replace
        figure_5_7 = replace(figure_5_7, context=figure_5_7.context | {
            "without_cell_0": summaries.summarise(without, "rmse_without_cell_0",
                                                  by=["mechanism", "epsilon"]),
            "cell_0": int(common.truth[0])})
    items.append(figure_5_7)
    items.append(lines("Figure 5.8", titles["Figure 5.8"], "max_error_freq", LOCAL, [coarse],
                       [MAIN_POSTPROCESS], "largest error of any cell as a share of n, "
                       "Base-Pos."))
    items.append(rank_table("Table 5.1", titles["Table 5.1"], coarse, LOW_EPSILON))
    items.append(rank_table("Table 5.2", titles["Table 5.2"], coarse, HIGH_EPSILON))
    items.append(ordering("Figure 5.9", titles["Figure 5.9"],
                          {k: snap(coarse, HIGH_EPSILON, k).ordering[MAIN_POSTPROCESS]
                           for k in LOCAL if snap(coarse, HIGH_EPSILON, k)},
                          "the local mechanisms' releases at ε = 5 after Base-Pos.",
                          {"d": size[coarse.label][1], "true_counts": common.truth,
                           "trials": trials_at(coarse, HIGH_EPSILON)}, "mechanism"))
    items.append(lines("Figure 5.10", titles["Figure 5.10"], "rmse", LOCAL, [coarse],
                       list(POSTPROCESS), "RMSE against ε after Base, Base-Pos and the thesis's "
                       "Base-Cut, one panel (with its own y-axis) per mechanism.",
                       colour="postprocess", facet="mechanism", independent_y=True))
    hm = snap(coarse, HIGH_EPSILON, "hm")
    items.append(ordering("Figure 5.11", titles["Figure 5.11"],
                          hm.ordering if hm else {},
                          "the Hadamard mechanism's release at ε = 5 after each "
                          "post-processing, one panel each.",
                          {"n": size[coarse.label][0], "trials": trials_at(coarse, HIGH_EPSILON),
                           "true_counts": common.truth},
                          "postprocess"))
    if fine:
        items.append(top_bars("Figure 5.12", titles["Figure 5.12"], [fine], HIGH_EPSILON,
                              ("grr", "hm"), "mechanism", "randomised response's and the "
                              "Hadamard mechanism's releases (Base-Pos)."))
        items.append(lines("Figure 5.13", titles["Figure 5.13"], "rmse", LOCAL, whole,
                           [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε at both "
                           "levels (solid: county, dashed: ED), Base-Pos.", dash="scenario"))
        items.append(lines("Figure 5.14", titles["Figure 5.14"], "max_error_freq", LOCAL,
                           [fine], [MAIN_POSTPROCESS], "largest error of any cell as a share "
                           "of n at ED level, Base-Pos."))
        items.append(rank_table("Table 5.3", titles["Table 5.3"], fine, LOW_EPSILON))
        items.append(rank_table("Table 5.4", titles["Table 5.4"], fine, HIGH_EPSILON))
        hm_fine = snap(fine, HIGH_EPSILON, "hm")
        fine_n, fine_d = size[fine.label]
        items.append(ordering("Figure 5.15", titles["Figure 5.15"],
                              {"hm": hm_fine.ordering[MAIN_POSTPROCESS]} if hm_fine else {},
                              f"the Hadamard mechanism's release at ε = 5 (Base-Pos), the true "
                              f"top {ED_ORDER_TOP} ED commutes.",
                              {"epsilon": HIGH_EPSILON, "n": fine_n, "d": fine_d,
                               "top_counts": top_counts(fine),
                               "trials": trials_at(fine, HIGH_EPSILON)}, "mechanism"))
    else:
        items += [Absent(ref, titles[ref], no_fine) for ref in (
            "Figure 5.12", "Figure 5.13", "Figure 5.14", "Table 5.3", "Table 5.4", "Figure 5.15")]
    if len(lv.subsets) == 2:
        zones, land = common.map
        subsets = [(s.label, size[s.label][0], size[s.label][1]) for s in lv.subsets]
        items.append(Figure("Figure 5.16", titles["Figure 5.16"],
                            "Thesis figure 5.16. Drawn: every zone of the finer level at its "
                            "position, coloured by subset (D red, R blue), over the land "
                            "outline (Natural Earth, bundled; no map tiles). " + settings,
                            zones, "map", context={"subsets": subsets, "land": land}))
        items.append(lines("Figure 5.17", titles["Figure 5.17"], "rmse", LOCAL, lv.subsets,
                           [MAIN_POSTPROCESS], "RMSE (commuters per cell) against ε on the two "
                           "subsets of equal domain size (solid: D, dashed: R), Base-Pos; the "
                           "thesis fixed ε = 5, here the whole grid.", dash="scenario"))
    else:
        items += [Absent(ref, titles[ref], "the data has no Dublin City and Cavan + Leitrim "
                                           "areas") for ref in ("Figure 5.16", "Figure 5.17")]
    items.append(Table("Running times", titles["Running times"],
                       f"Running times as the thesis measured them (sections 5.1.2, 5.2.2, 5.4.3)"
                       f": every person's report made and aggregated (local; central: every "
                       f"row counted into the histogram, then released) at {coarse.label} level "
                       f"— as written by each mechanism's per-user simulation (vectorised over "
                       f"people), as run by the thesis's Python loop over the people (local "
                       f"hashing: pure-LDP's server loop over all d cells per person, CRC-32 in "
                       f"place of xxhash) — "
                       f"ε = {HIGH_EPSILON:g}, on subsamples of m and 2m people (CPU seconds, "
                       f"least of {TIMING_REPEATS} runs), extrapolated linearly to all n = "
                       f"{size[coarse.label][0]:,}; beside the CPU time of our exact aggregate "
                       f"release of the same counts (one draw from the counts' law, least of "
                       f"{TIMING_REPEATS}). Thesis columns: its times (Intel i5, per-user "
                       f"Python code; no local hashing at ED level). "
                       f"{settings}", times, context={"d": size[coarse.label][1],
                                                      "as_run": loop_times}))
    return [item if isinstance(item, Absent) else _judged(item) for item in items]
