"""Streamlit code of the pages in ``pages/`` (never imported by dpcore), grouped by the screen it serves.

* :mod:`ui.components` — what every page shares: the current dataset, run controls, cached runs,
  charts, panels, navigation, session state, untrusted-text escaping.
* :mod:`ui.upload` — the Data page's import flow.
* :mod:`ui.explore` — Explore's own sections (the OD heat map).
* :mod:`ui.tradeoffs` — the Tradeoffs page's sweeps and curves.
* :mod:`ui.maps` — the Flow map: folium layers, zone areas, offline Leaflet files.
* :mod:`ui.learn` — the Learn page's lessons and their figures.
* :mod:`ui.publish` — Plan & publish: the ε planner and the publishing section.
* :mod:`ui.classroom` — the Classroom: teacher's and student's screens, the phone component.

Imports flow one way: pages → screen packages → :mod:`ui.components` → :mod:`dpcore`.
"""

from ui.components import startup  # noqa: F401,E402 — once per process: see its docstring
