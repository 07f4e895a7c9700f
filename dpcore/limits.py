"""The range of every number a person sets — on a page, in a link or on the command line — once.

The mechanisms' parameters (ε, δ, the neighbouring relation and each mechanism's own) are declared
beside the mechanisms (:mod:`dpcore.mechanisms.base`); the settings of a run are declared here with
the same :class:`~dpcore.mechanisms.base.Param`, so a page's widget, a link's value and a command's
option read one range and give one message for a value outside it (parameter, value, valid range,
why). The command line turns them into option types (:mod:`dpcore.interfaces.arguments`).
"""

from __future__ import annotations

import os

from dpcore.mechanisms.base import DELTA, EPSILON, Param

__all__ = ["DELTA", "EPSILON", "FINE_SHARE", "HEAVY_HITTERS_K", "PASS_PROBABILITY", "RELEASES",
           "SEED", "TOP_K", "TOP_N", "TRIALS", "cores", "workers"]

#: A run (sweep, plan, thesis report) keeps every release's scores until it ends: about 22 kB per
#: release at peak with every metric (tracemalloc over 400 releases of ireland_county), so 50,000
#: releases are about 1.1 GB — the most one run may hold on a shared server.
RELEASES = Param("releases", "Releases in one run", 1, int, low=1, high=50_000,
                 help="Trials × mechanisms × ε values × versions of the data.",
                 why="A run keeps every release's scores until it ends (about 22 kB each), so "
                     "more would exhaust the memory: use fewer trials, mechanisms or ε values, "
                     "or split the run into several.")
TRIALS = Param("trials", "Trials", 1, int, low=1, high=10_000,
               help="Releases per point (mechanism, ε, version of the data).",
               why="Beyond 10,000 trials the mean's confidence interval is already 100 times "
                   "narrower than one release's spread, and the run would not fit in memory "
                   "(every trial's scores are kept): use fewer trials.")
#: 2**53 − 1: the largest whole number a browser holds exactly, so a seed in a link or a page's
#: input reads back as the same seed.
SEED = Param("seed", "Seed", 0, int, low=0, high=2**53 - 1,
             help="The same seed gives the same noise.",
             why="Seeds are whole numbers from 0 to 2^53 − 1 (the largest a browser keeps exactly, "
                 "so a seed in a link reads back the same).")
TOP_K = Param("k", "Size of the top-k sets", 10, int, low=1, high=10_000,
              help="Commutes in the true and released top-k sets that the scores compare.",
              why="The top-k scores compare the busiest commutes; for more than 10,000 use the "
                  "cell-error metrics, which cover every cell.")
TOP_N = Param("top_n", "True flows ranked", 100, int, low=1, high=10_000,
              help="The busiest true commutes ranked for Spearman's and Kendall's correlations.",
              why="Kendall's correlation takes time growing with the square of the flows ranked; "
                  "for more than 10,000 use the cell-error metrics.")
HEAVY_HITTERS_K = Param("k", "Commutes to find (k)", 10, int, low=1, high=100,
                        help="How many of the busiest commutes PEM or TreeHist look for.",
                        why="PEM and TreeHist find a few busiest commutes; their candidate sets "
                            "grow with k while each round's share of the people shrinks. For "
                            "more, estimate every cell with a frequency oracle (sweep).")
PASS_PROBABILITY = Param("probability", "Pass probability", 0.9, float, low=0.5, high=0.99,
                         help="How often a searched ε must meet the target.",
                         why="Below 0.5 the plan would fail more often than it passes; at 1 no "
                             "finite number of draws can show it.")
FINE_SHARE = Param("fine_share", "Share of ε for the fine level", 0.5, float, low=0.1, high=0.9,
                   help="Publishing two levels: the zones' share of ε (and δ); the parent level "
                        "gets the rest.",
                   why="Below 0.1 or above 0.9 one of the two levels gets almost no budget and "
                       "its counts are mostly noise.")


def cores() -> int:
    """Cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers(requested: int, name: str = "jobs") -> tuple[int, str | None]:
    """Worker processes for ``requested`` (-1: every core), capped at :func:`cores`, and a note
    saying so when capped (more processes than cores only slow a run down and take memory).
    ValueError for 0 or below -1; ``name`` is the setting's name in the messages."""
    available = cores()
    if isinstance(requested, bool) or int(requested) != requested or (
            requested < 1 and requested != -1):
        raise ValueError(f"{name} must be -1 (every core) or a whole number from 1 to {available} "
                         f"(this machine's cores); got {requested!r}.")
    if requested == -1:
        return available, None
    if requested > available:
        return available, (f"{name} = {requested} asked, but this machine has {available} "
                           f"core{'s' if available > 1 else ''}: using {available} (more "
                           "processes than cores would only share them and use more memory).")
    return int(requested), None
