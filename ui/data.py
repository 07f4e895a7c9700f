"""Where every page gets its dataset.

Bundled datasets are loaded once per server process (``st.cache_resource``: the same read-only
object for every session, its arrays made read-only so no page can alter what another sees). The
uploaded dataset lives only in this session's ``st.session_state`` — never in a global cache,
never on disk — so no other browser session can see it.
"""

from dataclasses import dataclass

import streamlit as st

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from ui import state


@dataclass(frozen=True)
class Current:
    """The dataset a page works on, with what the UI says about where it came from."""

    key: str
    title: str
    matrix: ODMatrix
    synthetic: bool
    source: str
    description: str


def _freeze(zones: ZoneSet) -> None:
    for array in (zones.ids, zones.labels, zones.lat, zones.lon, zones.parent):
        if array is not None:
            array.flags.writeable = False
    if zones.parent_zones is not None:
        _freeze(zones.parent_zones)


@st.cache_resource(show_spinner="Loading the dataset…")
def bundled(key: str) -> ODMatrix:
    """A bundled dataset, shared read-only by all sessions."""
    matrix = datasets.load(key)
    for array in (matrix.rows, matrix.cols, matrix.counts):
        array.flags.writeable = False
    _freeze(matrix.origins)
    _freeze(matrix.destinations)
    return matrix


def choices() -> dict[str, str]:
    """Dataset key → title for pickers: every bundled dataset, then this session's upload if any."""
    options = {info.key: info.title for info in datasets.list_datasets()}
    if st.session_state[state.UPLOADED_MATRIX] is not None:
        options[state.UPLOADED] = f"Your upload: {st.session_state[state.UPLOADED_FILENAME]}"
    return options


def select(key: str) -> None:
    """Make ``key`` (a bundled dataset or :data:`ui.state.UPLOADED`) the current dataset."""
    st.session_state[state.CURRENT_DATASET] = key


def keep_upload(matrix: ODMatrix, filename: str) -> None:
    """Store an imported matrix in this session and make it the current dataset."""
    st.session_state[state.UPLOADED_MATRIX] = matrix
    st.session_state[state.UPLOADED_FILENAME] = filename
    select(state.UPLOADED)


def current() -> Current:
    """The current dataset; falls back to the default when the stored choice no longer exists."""
    key = st.session_state[state.CURRENT_DATASET]
    upload = st.session_state[state.UPLOADED_MATRIX]
    if key == state.UPLOADED and upload is not None:
        return Current(key, choices()[key], upload, synthetic=False, source="Your upload",
                       description="Imported from your file. It exists only in this browser "
                                   "session: it is not stored on the server or shown to anyone "
                                   "else.")
    if key not in datasets.DATASETS:
        key = state.DEFAULT_DATASET
        select(key)
    info = datasets.DATASETS[key]
    return Current(key, info.title, bundled(key), info.synthetic, info.source, info.description)

