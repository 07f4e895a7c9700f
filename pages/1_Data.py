"""Upload your own commuting data: CSV files in five formats, checked row by row.

Thin page: the import flow and the examples are drawn by :mod:`ui.upload.flow`.
"""

import streamlit as st

from dpcore.data import importers
from ui.components import controls, huge, navigation, state
from ui.upload import flow

st.set_page_config(page_title="Data · Commuting Privacy Lab", page_icon="📄",
                   layout="wide")
navigation.menu(controls.keep())

st.title("Your data")
st.markdown(
    "Import origin–destination commuting counts from a CSV file (comma, semicolon or tab; UTF-8 "
    "or Latin-1; gzip-compressed is fine). Every problem found is listed with the row, the column "
    "and how to fix it, and every automatic correction is reported. **Your file stays in this "
    "browser session**: it is not stored on the server, not written to disk and not shown to "
    "anyone else.")

size_limit_mb = importers.MAX_UPLOAD_BYTES // 2**20
commuting_file = st.file_uploader("Commuting file", key=state.UPLOAD_FILE,
                                  max_upload_size=size_limit_mb)
zones_file = st.file_uploader("Zones file (optional): zone, lat, lon and optionally parent — adds "
                              "coordinates", key=state.UPLOAD_ZONES, max_upload_size=size_limit_mb)
format_column, level_column = st.columns(2)
file_format = format_column.selectbox("Format", list(importers.FORMATS), key=state.UPLOAD_FORMAT,
                                      format_func=importers.FORMATS.__getitem__)
level = flow.level_picker(file_format, level_column)

if commuting_file is None:
    flow.forget()
    flow.kept_upload_note()
    st.info("Choose a file above, or try one of the examples below.")
else:
    attempt = flow.run_import(commuting_file, zones_file, file_format, level)
    flow.show(commuting_file, attempt)

huge.national_offer()

with st.expander("Accepted formats, with example files", expanded=commuting_file is None):
    flow.examples()
