"""The Data page's import flow: import once per distinct input, keep everything in this session.

The uploaded bytes, the import result and the chosen dataset live only in ``st.session_state``:
never in ``st.cache_data``/``st.cache_resource`` (shared by all sessions), never on disk. Any
exception the importer did not anticipate becomes a friendly message, never a traceback.

One import at a time per session (:class:`ImportSlots`): Streamlit's fast reruns start a new
script run when the user picks another file while the previous one is still being parsed (a
parse cannot be interrupted), so without it two parses would hold memory at once.
"""

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from dpcore.data import importers
from ui.components import budget, data, navigation, safe, state, widgets

log = logging.getLogger(__name__)

#: Failure codes that come with the file's header, so the user can say which column is which.
MAPPABLE = {"unmapped_columns", "ambiguous_columns"}
NOT_IN_FILE = "— not in the file —"
_SEVERITY = {"error": 0, "warning": 1, "info": 2}  # the order notices are shown in


@dataclass(frozen=True)
class Attempt:
    """One import of the uploaded file with given options, and what came of it."""

    fingerprint: tuple
    filename: str
    result: importers.ImportResult | None = None
    notices: tuple = ()
    header: tuple[str, ...] | None = None  # set when the user must map the columns
    suggested: dict = field(default_factory=dict)
    unexpected: str | None = None  # name of an exception the importer did not anticipate


class ImportSlots:
    """Which file each session is importing: at most one per session."""

    def __init__(self):
        self._lock = threading.Lock()
        self._busy: dict[str, str] = {}

    def take(self, session: str, name: str) -> str | None:
        """Take the session's slot for ``name``; if it is busy, the file being imported."""
        with self._lock:
            busy = self._busy.get(session)
            if busy is None:
                self._busy[session] = name
            return busy

    def release(self, session: str) -> None:
        with self._lock:
            self._busy.pop(session, None)

    def wait(self, session: str, name: str, show: Callable[[str], None],
             sleep: Callable[[float], None] = time.sleep) -> None:
        """Take the slot, saying (``show``) what it waits for while another import holds it.
        ``show`` draws on the page, so a newer rerun of the session interrupts the wait."""
        while (busy := self.take(session, name)) is not None:
            show(f"“{busy}” is still being imported in this session. One import runs at a time "
                 f"(so that a session cannot hold two files in memory at once): “{name}” will "
                 "be imported as soon as it has finished.")
            sleep(WAIT_POLL_SECONDS)


SLOTS = ImportSlots()
WAIT_POLL_SECONDS = 0.5


def mapping_for(upload) -> dict[str, str] | None:
    """The column mapping the user gave for this very file, if any."""
    mapping = st.session_state[state.COLUMN_MAPPING]
    return mapping["columns"] if mapping and mapping["file_id"] == upload.file_id else None


def run_import(upload, zones, file_format: str, level: str | None) -> Attempt:
    """Import the upload unless exactly this input was just imported; remember the outcome."""
    columns = mapping_for(upload)
    fingerprint = (upload.file_id, zones.file_id if zones else None, file_format, level,
                   tuple(sorted(columns.items())) if columns else None)
    previous = st.session_state[state.IMPORT_ATTEMPT]
    if previous is not None and previous.fingerprint == fingerprint:
        return previous
    st.session_state[state.IMPORT_ATTEMPT] = None  # let the previous matrix go before parsing
    session = get_script_run_ctx().session_id
    waiting = st.empty()
    SLOTS.wait(session, upload.name, lambda message: waiting.info(safe.markdown(message),
                                                                  icon=":material/hourglass:"))
    try:
        waiting.empty()
        with st.spinner(f"Importing {upload.name}…"):
            result = importers.import_dense_or_sparse(
                upload.getvalue(), upload.name, format=file_format, level=level, columns=columns,
                zones=(zones.getvalue(), zones.name) if zones else None,
                memory_budget=budget.SESSION_WORK_BYTES)
        attempt = Attempt(fingerprint, upload.name, result=result, notices=tuple(result.notices))
    except importers.ImportFailed as failure:
        mappable = failure.columns is not None and any(
            n.code in MAPPABLE and n.file == upload.name for n in failure.notices)
        attempt = Attempt(fingerprint, upload.name, notices=tuple(failure.notices),
                          header=tuple(failure.columns) if mappable else None,
                          suggested=dict(failure.suggested))
    except Exception as error:  # noqa: BLE001 — the user sees a message, the log the traceback
        log.exception("unexpected failure importing %r", upload.name)
        attempt = Attempt(fingerprint, upload.name, unexpected=type(error).__name__)
    finally:
        SLOTS.release(session)
    st.session_state[state.IMPORT_ATTEMPT] = attempt
    return attempt


#: The importers' level keys in words (POWSCAR: Irish electoral divisions; LODES: US census).
LEVEL_WORDS = {"ed": "electoral division", "county": "county", "tract": "census tract",
               "block": "census block"}


def level_picker(file_format: str, where) -> str | None:
    """The level to import at, for formats that have levels (None: the importer chooses)."""
    levels = importers.LEVELS.get(file_format)
    if not levels:
        where.caption("POWSCAR and LODES files can be imported at several levels: choose their "
                      "format to pick one.")
        return None
    return where.selectbox("Level", [None, *levels], key=state.level_widget(file_format),
                           format_func=lambda level: (LEVEL_WORDS.get(level, level) if level
                                                      else "automatic (the importer chooses)"))


def forget() -> None:
    """No file is uploaded (any more): drop the last attempt and its matrix."""
    st.session_state[state.IMPORT_ATTEMPT] = None


def kept_upload_note() -> None:
    """Say which upload this session keeps: the uploader itself empties when the user leaves."""
    if st.session_state[state.UPLOADED_MATRIX] is not None:
        name = safe.markdown(st.session_state[state.UPLOADED_FILENAME])
        st.info(f"This session keeps your upload **{name}**; the home page's dataset picker "
                "switches between it and the bundled datasets. Upload another file to replace it.")


def _apply_mapping(file_id: str, header: tuple[str, ...]) -> None:
    columns = {role: st.session_state[state.mapping_widget(file_id, role)]
               for role in importers.OD_ROLES}
    st.session_state[state.COLUMN_MAPPING] = {
        "file_id": file_id, "header": header,
        "columns": {role: column for role, column in columns.items() if column != NOT_IN_FILE}}


def mapping_form(upload, attempt: Attempt) -> None:
    """Ask which column plays which role, when the importer could not tell (or the user did)."""
    stored = st.session_state[state.COLUMN_MAPPING]
    in_use = mapping_for(upload)
    header = attempt.header or (stored["header"] if in_use is not None else None)
    if header is None:
        return
    chosen = in_use if in_use is not None else attempt.suggested
    options = [NOT_IN_FILE, *header]
    with st.form(state.MAPPING_FORM):
        st.markdown("**Which column is which?** Choose the column of your file for each role; "
                    "leave optional roles as “not in the file”.")
        for role, meaning in importers.OD_ROLES.items():
            default = chosen.get(role)
            st.selectbox(f"{role.replace('_', ' ').capitalize()}: {meaning}", options,
                         index=options.index(default) if default in options else 0,
                         key=state.mapping_widget(upload.file_id, role))
        st.form_submit_button("Import with these columns", type="primary",
                              key=state.APPLY_MAPPING, on_click=_apply_mapping,
                              args=(upload.file_id, tuple(header)))


def _use(attempt: Attempt) -> None:
    data.keep_upload(attempt.result.matrix, attempt.filename)


def show(upload, attempt: Attempt) -> None:
    """Every notice (errors first), the column mapping if needed, then the imported matrix."""
    name = safe.markdown(attempt.filename)
    if attempt.unexpected:
        st.error(f"**{name} could not be imported** because of an unexpected problem "
                 f"({attempt.unexpected}). Nothing was imported and your file was not changed.  \n"
                 "How to fix: check that it is a text table (CSV) in one of the formats described "
                 "below and upload it again. If it is, this is a bug in the importer: please "
                 "report it with the file's first lines.")
        return
    notices = sorted(attempt.notices, key=lambda n: _SEVERITY[n.level])
    if attempt.result is not None:  # the outcome first, then what was corrected on the way
        result = attempt.result
        level = f", {LEVEL_WORDS.get(result.level, result.level)} level" if result.level else ""
        st.success(f"Imported **{name}** as {importers.FORMATS[result.format]}{level}.")
    for item in notices:
        if item.level != "info":
            widgets.notice(item)
    notes = [item for item in notices if item.level == "info"]
    if notes:
        with st.expander(f"{len(notes)} note{'s' if len(notes) > 1 else ''} on the import "
                         "(automatic corrections and what was read)"):
            for item in notes:
                widgets.notice(item)
    mapping_form(upload, attempt)
    if attempt.result is None:
        return
    matrix = attempt.result.matrix
    if st.session_state[state.UPLOADED_MATRIX] is matrix:
        st.success("This is the current dataset on every page, for this browser session only.")
        st.page_link(navigation.HOME.path, label="See it on the home page",
                     icon=":material/home:")
    else:
        st.button("Use this dataset", type="primary", key=state.USE_UPLOAD, on_click=_use,
                  args=(attempt,))
    widgets.figures(matrix)
    st.subheader("Preview: the busiest commutes")
    widgets.top_flows(matrix, k=20)
    with st.expander("Zones"):
        st.caption("Origins")
        st.dataframe(matrix.origins.to_frame(), hide_index=True, width="stretch")
        st.caption("Destinations")
        st.dataframe(matrix.destinations.to_frame(), hide_index=True, width="stretch")


def examples() -> None:
    """How each accepted format looks (the importer's own, tested examples), with downloads."""
    # Example files as wrapped code blocks: a long CSV header would otherwise make a scrolled
    # box that the keyboard cannot reach (axe: scrollable-region-focusable).
    for i, part in enumerate(re.split(r"```csv\n(.*?)```", importers.describe_formats(),
                                      flags=re.DOTALL)):
        if i % 2:
            st.code(part, language="csv", wrap_lines=True)
        elif part.strip():
            st.markdown(part)
    st.markdown("**Download the examples**")
    columns = st.columns(len(importers.EXAMPLES))
    for column, (key, text) in zip(columns, importers.EXAMPLES.items(), strict=True):
        column.download_button(f"{key}.csv", text.encode("utf-8"), file_name=f"example-{key}.csv",
                               mime="text/csv", key=state.example_download(key), on_click="ignore",
                               icon=":material/download:")
