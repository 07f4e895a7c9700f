"""What the pages say and offer on a huge domain, in one place.

A matrix too large for a dense vector (more than :data:`dpcore.data.od.DENSE_CELL_LIMIT` cells:
a whole US state or the nation at tract level) is released sparsely by dpcore's one pipeline
(:mod:`dpcore.release`), and the views read the result without asking which path ran. What
needs every cell's released value — the heat map, zone totals of a release, roll-ups of a
release — is replaced by one sentence saying why (:func:`unavailable`).
"""

from __future__ import annotations

import threading

import streamlit as st

from dpcore.data import national
from dpcore.data.od import DENSE_CELL_LIMIT, ODMatrix
from dpcore.mechanisms import postprocess, sparse_release
from dpcore.mechanisms.sparse_vector import RANK_NOTE, SparseVector
from dpcore.release import SPARSE_TOP, ReleaseResult
from ui.components import charts, data

#: One generation of the national dataset at a time in this server process: two sessions
#: clicking at once would otherwise each spend ~20 s and ~1 GB making the same file.
_MAKING = threading.Lock()
#: Zones offered in a huge dataset's zone pickers (those with the most commuters living there).
PICKER_ZONES = 1_000


def is_huge(od: ODMatrix) -> bool:
    return not od.fits_dense


def is_sparse(released) -> bool:
    """Whether a release is sparse (a huge domain, or :func:`dpcore.release.sparse_route` chose
    it at e.g. ED level): views that need every cell's released value do not take it."""
    return isinstance(released, SparseVector)


def why(od: ODMatrix) -> str:
    """The reason, in one sentence fragment."""
    return (f"this dataset has {od.domain_size:,} possible commutes, more than the "
            f"{DENSE_CELL_LIMIT:,} a dense release holds, so each release is sparse: only its "
            f"{od.nonzero:,} non-empty commutes and the {SPARSE_TOP:,} largest released flows are "
            "known one by one, the other empty cells as a distribution")


def unavailable(od: ODMatrix, what: str) -> bool:
    """On a huge domain, say that ``what`` is not shown and why, and return True."""
    if is_huge(od):
        st.info(f"{what} is not shown: {why(od)}.")
        return True
    return False


def release_note(od: ODMatrix, results: dict[str, ReleaseResult]) -> None:
    """Under sparse releases: how they were made, and what is approximate in each."""
    done = {key: result for key, result in results.items() if not result.error}
    sparse = [charts.name(key) for key, result in done.items() if result.sparse]
    if not sparse:
        return
    how = (why(od) if is_huge(od) else
           f"{', '.join(sparse)} released only the {od.nonzero:,} non-empty of the "
           f"{od.domain_size:,} possible commutes one by one, the empty ones as a distribution "
           "(the same law as a cell-by-cell release, many times faster on a domain this sparse)")
    st.caption(f"Sparse releases: {how} (exact in distribution: docs/HUGE_DOMAINS.md). Scores "
               "that need every cell's position (trip lengths, trip ends, sectors, "
               "self-containment) are n/a.")
    for key, result in done.items():
        if result.approximation:
            st.caption(f"⚠ **{charts.name(key)}: approximate.** {result.approximation}")
    ranked = [charts.name(key) for key, result in done.items()
              if result.sparse and result.released.rank_note]
    if ranked:
        st.caption(f"**Ranks ({', '.join(ranked)}).** {RANK_NOTE}")


def postprocess_methods(od: ODMatrix) -> list[str]:
    """Post-processings a release of ``od`` can use (a sparse release: those cell by cell)."""
    if is_huge(od):
        return list(sparse_release.METHODS)
    return list(postprocess.METHODS)


def national_offer() -> None:
    """The Data page's offer of the national synthetic dataset, generated on first use."""
    st.header("National-scale synthetic data")
    st.markdown(f"{data.NATIONAL_DESCRIPTION} It is not shipped with the app: the first use "
                "generates it (about 20 seconds, ≈ 100 MB in the cache folder "
                f"`$DPCORE_CACHE`), then every session shares it.")
    if st.button("Use the national synthetic dataset", key="national_use",
                 icon=":material/public:"):
        if not national.cache_path().exists():
            with st.spinner("Generating the national synthetic dataset (about 20 s)…"), _MAKING:
                if not national.cache_path().exists():   # another session may have made it
                    national.make()                      # while this one waited
        data.select(national.KEY)
        st.success(f"{national.TITLE} is now the current dataset: open Explore, Tradeoffs or "
                   "the Flow map.")
