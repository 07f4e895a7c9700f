"""The running-time table: every user simulated (as written, vectorised over people; and as run,
by the operations the thesis's code performed for each person) on two subsample sizes,
extrapolated to all n, beside our aggregate release; and its check.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpcore import mechanisms, seeding
from dpcore.data.od import ODMatrix
from dpcore.evaluation.thesis import as_run
from dpcore.evaluation.thesis.checks import _fmt, _verdict
from dpcore.evaluation.thesis.protocol import HIGH_EPSILON, label, Table, Verdict

#: Per-user simulation for the running times: people in the first of the two timed subsamples
#: (drawn at random, with replacement) grows from this until one simulation takes TIMING_FLOOR
#: CPU seconds (or a quarter of the population). Small, because the original operations of local
#: hashing take ≈ 0.5 ms a person: the whole table costs a few CPU seconds.
TIMING_START, TIMING_FLOOR = 100, 0.02

#: The as-run column: the thesis's per-person operations (:func:`as_run.per_person`), all n.
ORIGINAL = "as run: original operations, all n (s)"


def _ratios(seconds: pd.Series) -> str:
    return (f"OLH/UE {seconds.get('olh', np.nan) / seconds.get('oue', np.nan):.1f}×, "
            f"UE/Hadamard {seconds.get('oue', np.nan) / seconds.get('hm', np.nan):.1f}×")


def _judge_times(t: Table) -> Verdict:
    """The thesis's order of its per-person times (RR, Hadamard ≪ UE < OLH), checked on the
    per-person times of the protocol shown; the ratios of both protocols beside the thesis's."""
    rows = t.data.set_index("key")
    column = ORIGINAL if t.context.get("as_run") else "per-user, all n (s)"
    per_user = rows[column]
    fast = max(per_user.get("grr", np.nan), per_user.get("hm", np.nan))
    unary, hashing = per_user.get("oue", np.nan), per_user.get("olh", np.nan)
    apart, ordered = fast * 10 < min(unary, hashing), unary < hashing
    thesis_seconds = pd.Series({k: v[0] for k, v in THESIS_SECONDS.items()})
    ours = (", ".join(f"{label(k)} {_fmt(v)} s" for k, v in per_user.items())
            + f" ({column}); ratios: thesis {_ratios(thesis_seconds)}; the original's "
              f"operations (as run) {_ratios(rows[ORIGINAL])}; vectorised "
              f"per-user simulation {_ratios(rows['per-user, all n (s)'])}; aggregate release "
              f"{_ratios(rows['aggregate release (s)'])}")
    return _verdict(t, "Simulating every user at county level: randomised response 9 s, "
                       "Hadamard 20 s, unary encoding 274 s, local hashing 2,296 s (RR, HM ≪ UE "
                       "< OLH).", "randomised response and Hadamard < 1/10 of unary encoding and "
                                  "local hashing; unary encoding < local hashing",
                    ours, apart and ordered,
                    "running times depend on the code and the machine: ours are not the "
                    "thesis's (an Intel i5, pure-LDP and its own Python)")


#: The thesis's running times, seconds (sections 5.1.2, 5.2.2, 5.4.3): county, ED.
THESIS_SECONDS = {"laplace": (4, 328.69), "stability_histogram": (5, 18), "grr": (9, 7),
                  "oue": (274, 154_272), "olh": (2_296, None), "hm": (20, 32)}


#: The time at 2m over the time at m that counts as linear, and how often larger sizes are tried.
LINEAR_RATIO, LINEAR_RETRIES = (1.6, 2.5), 3
#: Timings per subsample size; the smallest is kept (other work on the machine only adds).
TIMING_REPEATS = 3


def _cpu_seconds(work, repeats: int = TIMING_REPEATS) -> float:
    """CPU seconds of ``work()`` in this process, the least of ``repeats`` runs, so that other
    work on the machine does not count."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def _extrapolated(work, items: np.ndarray, rng) -> tuple[int, int, float, float, float]:
    """CPU seconds of ``work(people)`` for all n people, from two subsamples m and 2m (drawn at
    random, with replacement) and the straight line through them: m doubles from
    :data:`TIMING_START` until one run takes :data:`TIMING_FLOOR` s (or a quarter of n); when
    2m / m is not near 2 (fixed costs), larger sizes are tried. Returns m, 2m, the two times
    and the time for all n."""
    n = len(items)
    work(items[:100])  # warm-up (imports, caches)
    size, cap = min(TIMING_START, max(n // 4, 1)), max(n // 4, 1)
    while True:  # one run per size while searching: jump to the size that should take long
        probe = _cpu_seconds(lambda: work(items[rng.integers(0, n, size)]), 1)
        if probe >= TIMING_FLOOR or size >= cap:
            break
        size = min(cap, size * int(np.clip(TIMING_FLOOR / max(probe, 1e-6), 2, 16)))
    first = _cpu_seconds(lambda: work(items[rng.integers(0, n, size)]))
    for attempt in range(LINEAR_RETRIES):
        double = min(2 * size, n)
        second = _cpu_seconds(lambda: work(items[rng.integers(0, n, double)]))
        if (LINEAR_RATIO[0] <= second / max(first, 1e-9) <= LINEAR_RATIO[1]
                or 2 * double > n or attempt == LINEAR_RETRIES - 1):
            break
        size, first = double, second
    slope = max(second - first, 0.0) / max(double - size, 1)
    return size, double, first, second, second + slope * (n - double)


def _linear(first: float, second: float) -> str:
    return "yes" if LINEAR_RATIO[0] <= second / max(first, 1e-9) <= LINEAR_RATIO[1] else "no"


def running_times(matrix: ODMatrix, specs, seed: int, epsilon: float = HIGH_EPSILON
                  ) -> pd.DataFrame:
    """Running times at this level under both protocols, each extrapolated from two subsample
    sizes (:func:`_extrapolated`): as written, each mechanism's per-user ``simulate`` (every
    report made and aggregated, vectorised over people); as run, a Python loop over the people
    doing the operations the thesis's code did for each (:func:`as_run.per_person`: its list
    scan, its per-bit random call, pure-LDP's clients and servers with xxhash); beside them the
    CPU time of our aggregate release of the same counts (one exact draw)."""
    items = matrix.to_items()
    d, n = matrix.domain_size, matrix.n
    counts = matrix.to_dense()
    rng = seeding.generator(seed, "thesis-running-times")
    rows = []
    for key, params in specs:
        mechanism = mechanisms.build(key, epsilon=epsilon, **params)
        m, m2, first, second, full = _extrapolated(
            lambda people, m_=mechanism: m_.simulate(people, d, rng), items, rng)
        loop = _extrapolated(lambda people, k=key: as_run.per_person(k, people, d, epsilon, rng),
                             items, rng)
        agg = _cpu_seconds(lambda m_=mechanism: m_.release(counts, rng))
        county, ed = THESIS_SECONDS.get(key, (None, None))
        rows.append({"key": key, "Mechanism": label(key), "model": mechanism.model,
                     "timed people m, 2m": f"{m:,}, {m2:,}",
                     "seconds at m": first, "seconds at 2m": second,
                     "2m / m (2 = linear)": second / first if first > 0 else np.nan,
                     "linear": _linear(first, second),
                     "per-user, all n (s)": full,
                     "as run: m, 2m": f"{loop[0]:,}, {loop[1]:,}",
                     "as run: 2m / m": loop[3] / loop[2] if loop[2] > 0 else np.nan,
                     ORIGINAL: loop[4],
                     "aggregate release (s)": agg,
                     "per-user / aggregate": full / agg if agg > 0 else np.nan,
                     "thesis, county (s)": county, "thesis, ED (s)": ed})
    return pd.DataFrame(rows)
