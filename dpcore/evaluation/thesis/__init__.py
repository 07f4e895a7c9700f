"""The experiments of the thesis's results chapter: every figure and table, and a verdict on each,
as the thesis is written and as its code ran (:mod:`dpcore.evaluation.thesis.as_run`).

Finnegan, *Local Differential Privacy Mechanisms for Frequency Estimation with Application to
Mobility Data* (2023/24), chapter 5: two central mechanisms (Laplace, the stability histogram with
δ = 1/(2n)) and four local ones (randomised response, unary encoding, optimised local hashing, the
Hadamard mechanism as chapter 3 defines it: one coefficient per person, t = 1), ε = 0.5, 1, …, 5,
ten trials each, at county and electoral-division (ED) level, with the thesis's three
post-processings (Base, Base-Pro = Base-Pos, and its own Base-Cut: :func:`postprocess.base_cut`).

:func:`run` makes, in the thesis's order, its seventeen figures and four tables
(:data:`ITEMS`), a running-time table made as the thesis made it (every user simulated, on a
stated subsample with a linear extrapolation checked on two sizes) beside our aggregate
release, and for each item a :class:`Verdict`: does the run agree with what the thesis says
about that item (an ordering, a trend, a crossing, a zero count, a rank list)? Verdicts are
computed from the item's data by :data:`JUDGES` — never written in — and say why when they
differ (different data, the thesis's own formula predicts otherwise, a protocol difference).

The error curves are one :func:`dpcore.evaluation.experiment.run` grid (in this process, on a
process pool — every core by default — or on a Dask cluster, with the same numbers); the bars,
orderings and rank tables come from trial 0 of the same releases. This module makes data only;
the ``report`` package draws it.

Two protocols (:data:`thesis_as_run.PROTOCOLS`): as written and as run, each a setting of five
named switches. Every item is built and judged under each; a "differs" gets its reason by
rebuilding the item with one switch toggled at a time (:func:`explain`). The thesis's stated
numbers are judged against the trials' spread and its rank tables as probabilities over trials.

Where this departs from the thesis, on purpose: the subsets are swept over the whole ε grid (the
thesis fixed ε = 5); at ED level, as there, only the central mechanisms, randomised response and
Hadamard run.

The package, by what changes together:

- :mod:`.protocol` — the chapter's mechanisms, levels, ε, trial counts and items, and the data
  classes every part shares (:class:`Figure`, :class:`Table`, :class:`Verdict`, :class:`Chapter`);
  :mod:`.as_run` — the thesis's code as it ran (the protocols' switches).
- :mod:`.trials` — :func:`run`: the written sweep, the trial-0 releases and the CSVs;
  :mod:`.variants` — the as-run and rounded releases and the extra deciding trials;
  :mod:`.times` — the running times, measured and checked; :mod:`.items` — every figure's and
  table's data from a protocol's releases.
- The checks, grouped as the chapter groups its figures (helpers in :mod:`.checks`):
  :mod:`.checks_central` (5.1–5.4), :mod:`.checks_local` (5.5–5.8, tables 5.1 and 5.2, the rank
  tables' check), :mod:`.checks_postprocessing` (5.9–5.11), :mod:`.checks_ed` (5.12–5.17).
- :mod:`.verdicts` — each item's judge, the verdict tables and the computed reason of a
  difference (:func:`explain`, the laws of :mod:`.reasons`); :mod:`.planted` — each agreement
  judged again on breaks planted in the item's data ("cannot tell" when its check agrees too).
"""

from dpcore.evaluation.thesis import as_run, reasons
from dpcore.evaluation.thesis.checks import empty_cell_sd
from dpcore.evaluation.thesis.checks_postprocessing import THESIS_ZEROS_5_9
from dpcore.evaluation.thesis.protocol import (
    CENTRAL, DECIDING_TRIALS, FINE_MECHANISMS, FINE_POSTPROCESS, FINE_RUN_TRIALS,
    FINE_STATED_TRIALS, HIGH_EPSILON, ITEMS, LOCAL, LOW_EPSILON, MAIN_POSTPROCESS, MECHANISMS,
    METRICS, PLAUSIBLE, POSTPROCESS, STATED_TRIALS, TRIALS, Absent, Chapter, Figure, Levels,
    Snapshot, Table, Verdict, label, levels, mechanism_specs,
)
from dpcore.evaluation.thesis.times import running_times
from dpcore.evaluation.thesis.trials import run, slug, write_csvs
from dpcore.evaluation.thesis.variants import Variants, compose, variant_sweep
from dpcore.evaluation.thesis.verdicts import (
    JUDGES, data_facts, explain, judge, summary, verdict_table,
)

__all__ = [
    "CENTRAL", "DECIDING_TRIALS", "FINE_MECHANISMS", "FINE_POSTPROCESS", "FINE_RUN_TRIALS",
    "FINE_STATED_TRIALS", "HIGH_EPSILON", "ITEMS", "JUDGES", "LOCAL", "LOW_EPSILON",
    "MAIN_POSTPROCESS", "MECHANISMS", "METRICS", "PLAUSIBLE", "POSTPROCESS", "STATED_TRIALS",
    "THESIS_ZEROS_5_9", "TRIALS", "Absent", "Chapter", "Figure", "Levels", "Snapshot", "Table",
    "Variants", "Verdict", "as_run", "compose", "data_facts", "empty_cell_sd", "explain", "judge",
    "label", "levels", "mechanism_specs", "reasons", "run", "running_times", "slug",
    "summary", "variant_sweep", "verdict_table", "write_csvs",
]
