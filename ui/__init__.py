"""Streamlit helpers shared by the pages (never imported by dpcore).

:mod:`ui.data` is where every page gets its dataset (the current one, bundled or uploaded);
:mod:`ui.state` names the session-state keys of the dataset choice and the home and Data pages;
:mod:`ui.widgets` draws pieces several pages share; :mod:`ui.upload` is the Data page's import
flow; :mod:`ui.safe` makes untrusted text inert. The analysis pages' run controls, cached runs,
charts and maps are in :mod:`ui.controls`, :mod:`ui.runs`, :mod:`ui.charts`, :mod:`ui.maps`.
"""

from ui import startup  # noqa: F401,E402 — once per process: see its docstring
