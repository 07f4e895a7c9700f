"""Session-state keys and defaults of the current dataset, the home page and the Data page.

The run controls shared by the analysis pages keep their own keys in :mod:`ui.components.controls`.

Everything here lives in one browser session's ``st.session_state`` and dies with it. The uploaded
dataset in particular is never cached across sessions and never written to disk.

Widget keys get their own names because Streamlit deletes a widget's state when the user moves to a
page that does not draw it; values that must survive page changes (the current dataset, the
upload) are kept under separate, non-widget keys.
"""

import streamlit as st

#: Bundled dataset shown to a new visitor: realistic yet small enough to load instantly.
DEFAULT_DATASET = "ireland_county"
#: Value of :data:`CURRENT_DATASET` that means "the file imported in this session".
UPLOADED = "uploaded"

# --- values that survive page changes ---------------------------------------------------------
#: The dataset every page works on: a key of ``dpcore.data.datasets.DATASETS`` or :data:`UPLOADED`.
CURRENT_DATASET = "current_dataset"
#: The ODMatrix the user chose to use ("Use this dataset" on the Data page), or None.
UPLOADED_MATRIX = "uploaded_matrix"
#: Name of the file it came from, shown next to it.
UPLOADED_FILENAME = "uploaded_filename"
#: The Data page's last import attempt (:class:`ui.upload.flow.Attempt`), so reruns do not re-parse.
IMPORT_ATTEMPT = "import_attempt"
#: Column mapping the user gave for the current upload: ``{"file_id": …, "columns": {role: col}}``.
COLUMN_MAPPING = "column_mapping"

# --- widget keys --------------------------------------------------------------------------------
DATASET_PICKER = "home_dataset_picker"
UPLOAD_FILE = "data_upload_file"
UPLOAD_ZONES = "data_upload_zones"
UPLOAD_FORMAT = "data_upload_format"
USE_UPLOAD = "data_use_upload"
MAPPING_FORM = "data_mapping_form"
APPLY_MAPPING = "data_apply_mapping"


def level_widget(file_format: str) -> str:
    """Key of the level picker of one format (each format has its own levels)."""
    return f"data_upload_level_{file_format}"


def example_download(example: str) -> str:
    """Key of the download button of one example file."""
    return f"data_example_{example}"


def mapping_widget(file_id: str, role: str) -> str:
    """Key of the column-mapping selectbox for one role (origin, destination, count, …).

    Keyed by the upload too, so a new file starts from the importer's suggestions.
    """
    return f"data_map_{file_id}_{role}"


DEFAULTS = {
    CURRENT_DATASET: DEFAULT_DATASET,
    UPLOADED_MATRIX: None,
    UPLOADED_FILENAME: None,
    IMPORT_ATTEMPT: None,
    COLUMN_MAPPING: None,
}


def init() -> None:
    """Give every key its default unless this session has a value (call first on each page)."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
