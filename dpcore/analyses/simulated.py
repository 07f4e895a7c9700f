"""The 95 % interval of an answer where no closed form holds: simulated on a public stand-in.

:mod:`.intervals` gives exact laws (and the Base-Pos bound) for the mechanisms whose sums have
one — every unbiased local and central mechanism under Base, HR, HM, dBitFlip, subset selection
and CMS/HCMS included, on every table size. The releases it leaves without an interval — any
mechanism after Norm (the shift to total n) — get an interval simulated from the release
alone:

1. **The stand-in**: the release projected to whole counts ≥ 0 that add up to n (Norm-Sub,
   then rounded: :func:`dpcore.mechanisms.postprocess.round_total`, the product's own "round"
   post-processing). It is made from the release and n alone (n is the public number of
   commuters every post-processing already uses), never from the true table.
2. **The draws**: :data:`DRAWS` releases of the stand-in by the *same* mechanism, parameters,
   ε/δ and post-processing (:func:`dpcore.release.run`), draw k seeded from public values only:
   (:data:`SIMULATION_SEED`, "release", mechanism, ε, trial :data:`FIRST_TRIAL` + k).
3. **The interval** (basic bootstrap): each answer's errors e_k = A(draw k) − A(stand-in),
   sorted; low = answer − e_(K+1−j), high = answer − e_(j), with K = 199 and j = 5, both at
   least 0 (a count is). *Basic*, not percentile: a release biased by its post-processing has
   the bias subtracted (a percentile interval would add it instead). If the real table's error
   law were the stand-in's, the released error would be exchangeable with the K draws' and the
   interval would cover with exactly (K + 1 − 2j)/(K + 1) = 95 % (whole-number ties only raise
   it); K = 199 is the smallest K giving that with j ≥ 5 order statistics in each tail, so one
   draw more or less moves an end by little. **Not a guarantee**: it holds only as far as the
   stand-in's error law is the real one's (``tests/test_analyses_simulated.py`` measures it).

Cost (``bench/bench_analyses_simulated.py``): K releases plus every answer on each. The draws
of a table up to :data:`CACHED_CELLS` cells are kept (a few, least recently used), so a page
rerun with a new selection re-sums them without releasing again. A page computes them up to
:data:`LIVE_CELLS` cells (HR and HM up to :data:`LIVE_REPORTS` reports: their releases
cost time per report); the CLI up to :data:`MOST_CELLS` (a dense release only); beyond, the
rule says why it did not.

Refused (:data:`REFUSED`, :data:`REFUSED_POST`): where the simulation was measured to fall
short — the SDC baselines, top-k, the stability histogram and OnTheMap's synthesizer (their
output depends on the true table beyond added noise), and every post-processing that clips,
cuts or projects (its bias depends on which true cells are small, which the stand-in does not
show). Each says so with the coverage measured. Post-processings of a release whose closed form
or bound holds keep that rule, and OnTheMap's releases get the debiased interval of its own law
(:mod:`.synthesized`) instead of the refused simulation (:func:`rule`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from dpcore import mechanisms, release as releases
from dpcore.analyses import synthesized
from dpcore.analyses.intervals import Interval
from dpcore.mechanisms import postprocess
from dpcore.mechanisms.sparse_vector import SparseVector

DRAWS = 199
#: The order statistic taken from each tail: (DRAWS + 1) · 2.5 %.
ORDER = 5
#: The draws' seed (public: it draws the stand-in's noise, never the release's) and the first
#: trial number (far from the trials a page or an experiment uses).
SIMULATION_SEED = 20_261_130
FIRST_TRIAL = 1_000_000
#: Cells up to which a page computes the simulation (bench, load ≈ 9 on 2 cores: 0.3–0.5 s
#: per mechanism's first answer set on the county's 1,085 cells, 0.25–1.5 s at 19,881 ED
#: cells, up to 2.2 s at 44,944), the CLI's limit (a dense release; one of the ED table's
#: 9.8 M cells takes 3 s, so 199 would take 11 min per mechanism), and the tables whose draws
#: are kept between calls (199 × 20,000 × 8 bytes = 32 MB each at most).
LIVE_CELLS = 20_000
#: Mechanisms whose release costs time per report (a Hadamard transform per person), and the
#: reports up to which a page simulates them (bench: HR 15 ms per release at 220,000 reports,
#: 60 ms at the county's 2.7 M, so 199 draws ≈ 3 s and ≈ 13 s).
PER_REPORT = ("hr", "hm")
LIVE_REPORTS = 200_000
MOST_CELLS = 1_000_000
CACHED_CELLS = 20_000
KEPT = 4

#: The method sentence: its words before the colon are the chart legend's.
METHOD = (f"simulated on a public stand-in, {DRAWS} draws, not a guarantee: the stand-in is the "
          "release projected to whole counts ≥ 0 summing to n (Norm-Sub, rounded), released "
          f"{DRAWS} times again by the same mechanism and post-processing at the same settings "
          f"(public seed {SIMULATION_SEED}); interval = answer − the 97.5 % and 2.5 % quantiles "
          "of the draws' errors around the stand-in's answer (basic bootstrap), ends at least "
          "0; it holds as far as the real table's error law is the stand-in's")
TOO_LARGE_LIVE = ("no interval: not computed here: too large for a live page ({size}; "
                  f"the simulated interval needs {DRAWS} releases); use `python3 -m dpcore "
                  "analyse …` with the same settings")
TOO_LARGE = ("no interval: not computed: {cells:,} cells is too large for the simulated interval "
             f"({DRAWS} dense releases; at most {MOST_CELLS:,} cells), and no closed form holds "
             "for this release")
SPARSE = ("no interval: not computed: a sparse release has no dense stand-in to simulate from, "
          "and no closed form holds for this release")
#: Why no simulated interval is given, with the shortfall measured by
#: tests/test_analyses_simulated.py::test_refused (K = 39 draws, pooled coverage of inflow,
#: outflow, live-and-work and A → B answers at ε = 1): per mechanism, and per post-processing.
MEASURED = "measured coverage {share} % ({mechanism}, {table}, {releases} releases)"
WHY_MECHANISM = ("no interval: {name}'s output depends on the confidential table beyond added "
                 "noise (it removes, rounds or re-synthesizes cells), so a stand-in made from "
                 "the output does not carry its error: simulated intervals fell short, "
                 "{measured} in tests/test_analyses_simulated.py::test_refused")
WHY_POST = ("no interval: {name} moves a sum by an amount that depends on which cells of the "
            "confidential table are small, and the stand-in made from the release does not "
            "carry it: simulated intervals fell short, {measured} in "
            "tests/test_analyses_simulated.py::test_refused")
#: (mechanism or post-processing, the mechanism and table measured, pooled coverage %).
SHORTFALLS = {
    "stability_histogram": ("stability_histogram", "toy_town", 8),
    "topk": ("topk", "ireland_county", 10),
    "onthemap": ("onthemap", "ireland_county", 4),
    "suppression": ("suppression", "toy_town", 19),
    "rounding": ("rounding", "toy_town", 12),
    "random_rounding": ("random_rounding", "toy_town", 26),
    "cell_key": ("cell_key", "toy_town", 22),
    "base_pos": ("oue", "toy_town", 75),
    "norm_sub": ("grr", "ireland_county", 64),
    "round": ("grr", "ireland_county", 64),
    "norm_mul": ("grr", "ireland_county", 36),
    "norm_cut": ("grr", "ireland_county", 40),
    "base_cut": ("grr", "ireland_county", 40),
    "significance_cut": ("grr", "ireland_county", 12),
}
#: Releases per shortfall measurement (the test's).
SHORTFALL_RELEASES = 20


def _why(what: str) -> str:
    mechanism, table, share = SHORTFALLS[what]
    measured = MEASURED.format(share=share, mechanism=mechanism, table=table,
                               releases=SHORTFALL_RELEASES)
    if what in postprocess.METHODS:
        return WHY_POST.format(name=postprocess.METHODS[what].name, measured=measured)
    return WHY_MECHANISM.format(name=mechanisms.get(what).name, measured=measured)


REFUSED = {key: _why(key) for key in SHORTFALLS if key not in postprocess.METHODS}
REFUSED_POST = {key: _why(key) for key in SHORTFALLS if key in postprocess.METHODS}
REFUSED_POST["post_pos"] = ("no interval: Post-Pos clips each query's raw sum (the answers "
                            "here sum the per-cell release, which is Base-Pos: "
                            + REFUSED_POST["base_pos"].removeprefix("no interval: ") + ")")


#: Mechanisms whose intervals come from their own known law instead of a simulation
#: (:mod:`.synthesized`: OnTheMap's, debiased), though the simulation's shortfall stays measured.
DEBIASED = (synthesized.KEY,)


def stand_in(released, n: int) -> np.ndarray:
    """The public stand-in: ``released`` as whole counts ≥ 0 adding up to ``n``."""
    return postprocess.apply("round", np.asarray(released, dtype=float), int(n)).astype(np.int64)


def _digest(*parts) -> str:
    hashed = hashlib.blake2b(digest_size=16)
    for part in parts:
        hashed.update(np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray)
                      else repr(part).encode())
    return hashed.hexdigest()


#: Kept draws: key → (DRAWS × cells) array, least recently used first; shared by a server's
#: sessions (threads), hence the lock.
_KEPT: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def draws(od, spec: releases.ReleaseSpec, standin: np.ndarray):
    """The :data:`DRAWS` releases of the stand-in (module docstring), one vector at a time."""
    key = _digest(DRAWS, spec, standin, od.origins.ids, od.destinations.ids,
                  od.origins.parent if od.origins.parent is not None else "",
                  od.destinations.parent if od.destinations.parent is not None else "")
    with _LOCK:
        kept = _KEPT.get(key)
        if kept is not None:
            _KEPT.move_to_end(key)
    if kept is not None:
        yield from kept
        return
    keep = od.domain_size <= CACHED_CELLS
    made = []
    for k in range(DRAWS):
        drawn = replace(spec, seed=SIMULATION_SEED, trial=FIRST_TRIAL + k)
        vector = releases.run(od, drawn, true_counts=standin, score=False, sparse=False,
                              keep_raw=False).outputs[spec.postprocess[0]].released
        if keep:
            made.append(vector)
        yield vector
    if keep:
        with _LOCK:
            _KEPT[key] = np.stack(made)
            while len(_KEPT) > KEPT:
                _KEPT.popitem(last=False)


class Simulated:
    """The simulated interval rule of one release (module docstring): ``method``, ``covered``
    and ``all_bounds``, which :func:`dpcore.analyses.answers.evaluate` calls with every query
    at once (the draws are made once for all of them)."""

    def __init__(self, od, spec: releases.ReleaseSpec, released, *, live: bool):
        self.od, self.spec = od, spec
        self.released = released
        cells = od.domain_size
        key, post = spec.mechanism, spec.postprocess[0]
        if key in REFUSED:
            self.method = REFUSED[key]
        elif post in REFUSED_POST:
            self.method = REFUSED_POST[post]
        elif isinstance(released, SparseVector):
            self.method = SPARSE
        elif cells > MOST_CELLS:
            self.method = TOO_LARGE.format(cells=cells)
        elif live and cells > LIVE_CELLS:
            self.method = TOO_LARGE_LIVE.format(size=f"{cells:,} cells")
        elif live and key in PER_REPORT and od.n > LIVE_REPORTS:
            self.method = TOO_LARGE_LIVE.format(size=f"{od.n:,} reports, each release "
                                                     "transforms every one")
        else:
            self.method = METHOD
        self.covered = self.method == METHOD

    def all_bounds(self, queries, answers, cells) -> list[tuple[np.ndarray, np.ndarray]]:
        """(low, high) of every query's answers, from one pass over the draws."""
        if not self.covered:
            return [(np.full(np.shape(a), np.nan), np.full(np.shape(a), np.nan))
                    for a in answers]
        standin = stand_in(self.released, self.od.n)
        centre = [query.compute(standin)[0] for query in queries]
        errors = [np.empty((DRAWS, np.size(c))) for c in centre]
        for k, vector in enumerate(draws(self.od, self.spec, standin)):
            for query, base, error in zip(queries, centre, errors):
                error[k] = query.compute(vector)[0] - base
        out = []
        for answer, error in zip(answers, errors):
            error.sort(axis=0)
            answer = np.asarray(answer, dtype=float)
            out.append((np.maximum(answer - error[DRAWS - ORDER], 0.0),
                        np.maximum(answer - error[ORDER - 1], 0.0)))
        return out


def rule(od, spec: releases.ReleaseSpec, released, *, sparse: bool = False,
         live: bool = True) -> Interval | Simulated | synthesized.Synthesized:
    """The interval rule of ``released`` (``spec``'s release of ``od``): OnTheMap's debiased
    law (:mod:`.synthesized`), the closed form or bound of :class:`Interval` where one holds,
    else the simulation; ``live``: a page (the smaller size limit)."""
    if spec.mechanism in DEBIASED:   # its known law, debiased
        return synthesized.rule(od, releases.check(spec, od), released, spec.postprocess[0])
    closed = Interval(spec.mechanism, spec.build(), spec.postprocess[0], n=od.n,
                      d=od.domain_size, sparse=sparse)
    return closed if closed.covered else Simulated(od, spec, released, live=live)
