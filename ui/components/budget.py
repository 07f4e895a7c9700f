"""The server's memory budget, stated in one place: what the shared caches may hold, and how much
dense work one rerun of one session may do.

The app runs as one process for a team or a classroom. Its memory is (a) the bundled datasets,
loaded once; (b) the shared caches of releases on bundled data, bounded here in bytes (each entry
count is the byte budget over the largest entry, since ``st.cache_resource`` bounds entries only);
(c) each session's working set while its page reruns: a release over a dense domain holds a few
vectors of |X| × 8 bytes at once, and the page keeps one per chosen mechanism. (c) is checked
before the work starts (:func:`dense_work_problem`), so one session cannot take the server down,
and the figures below keep ten sessions on the ED data within 16 GB (``bench/bench_memory.py``).
A domain too large for a dense vector is released sparsely (:mod:`dpcore.release`): its vectors
hold one value per non-zero cell, so its work is counted in non-zero cells
(:func:`dpcore.release.work_cells`; what one release holds is the pipeline's figure,
:func:`dpcore.release.dense_work_bytes`).
"""

from __future__ import annotations

import streamlit as st

from dpcore.data.od import MEMORY_BUDGET_BYTES, ODMatrix
from dpcore.release import BYTES_PER_CELL, TRANSIENT_VECTORS, dense_work_bytes, work_cells

MIB = 2 ** 20
#: |X| of the largest bundled dataset (ireland_ed: 3,126 × 3,130); a test checks it is the largest.
LARGEST_BUNDLED_CELLS = 9_784_380
LARGEST_BUNDLED_VECTOR = LARGEST_BUNDLED_CELLS * BYTES_PER_CELL  # 78 MB

#: Releases of bundled data kept for every session (one vector each, plus small metrics).
RELEASE_CACHE_BYTES = 800 * MIB
RELEASE_CACHE_ENTRIES = max(4, RELEASE_CACHE_BYTES // LARGEST_BUNDLED_VECTOR)   # 10
#: Dense true counts of bundled views (levels, area subsets) kept for every session.
DENSE_CACHE_BYTES = 320 * MIB
DENSE_CACHE_ENTRIES = max(2, DENSE_CACHE_BYTES // LARGEST_BUNDLED_VECTOR)       # 4

#: Dense work one session's rerun may hold at once: the released vectors it keeps (one per
#: mechanism) plus one release's transient working set. Explore's six default mechanisms at ED
#: level need 16 × 78 MB = 1.25 GB; ten such sessions at once plus the caches stay under 16 GB.
SESSION_WORK_BYTES = MEMORY_BUDGET_BYTES  # also what an import or a publish may hold
#: What one session's memo of results on its upload may keep between reruns (ui/components/memo.py; also
#: bounded to ui.components.runs.SESSION_MEMO_ENTRIES entries). The memo holds the vectors a rerun keeps (the
#: view, its dense counts, a release per mechanism), which the rerun's budget above already
#: counts: with the same bound, an idle session holds no more than a working one may. Explore's
#: six default mechanisms over 9.8 million cells keep 8 × 78 MB = 0.6 GB, which fits.
SESSION_MEMO_BYTES = SESSION_WORK_BYTES


def most_mechanisms(cells: int) -> int:
    """How many mechanisms fit the per-session budget over ``cells`` (0: not even one)."""
    return max(0, SESSION_WORK_BYTES // (cells * BYTES_PER_CELL) - TRANSIENT_VECTORS)


def dense_work_problem(cells: int, mechanisms: int) -> str | None:
    """None when the work fits the per-session budget, else a message saying what to change."""
    if mechanisms == 0 or dense_work_bytes(cells, mechanisms) <= SESSION_WORK_BYTES:
        return None
    need = dense_work_bytes(cells, mechanisms) / 2 ** 30
    fits = most_mechanisms(cells)
    advice = (f"pick at most {fits} mechanism{'s' if fits > 1 else ''}, or " if fits else "")
    return (f"{mechanisms} mechanism{'s' if mechanisms > 1 else ''} over {cells:,} possible "
            f"commutes would hold about {need:.1f} GB at once; one session may use "
            f"{SESSION_WORK_BYTES / 2 ** 30:.1f} GB so that the server stays up for everyone. "
            f"To continue, {advice}roll up to the parent level or choose fewer areas in the "
            "sidebar.")


def stop_if_too_big(od: ODMatrix, mechanisms: int) -> None:
    """Before the work: show the problem and stop the page when it exceeds the session budget."""
    problem = dense_work_problem(work_cells(od), mechanisms)
    if problem:
        st.warning(problem)
        st.stop()
