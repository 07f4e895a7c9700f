"""Once per server process, on the first import of :mod:`ui`: keep the libraries' own objects out
of the server's full garbage collections, and BLAS to one thread (:mod:`dpcore.blas`).

A full collection (``gc.collect(2)``; Streamlit's after every script run until issue 32, now
:mod:`dpcore.collector`'s timed one, every 5 s) walks every container object the process tracks,
and about 180,000 of them are NumPy's, pandas', plotly's, SciPy's and Streamlit's own, alive as
long as the server: that walk cost about 0.1 s, as much as the Explore page's whole work at
county level, and every session's reruns share one interpreter. ``gc.freeze()`` moves the objects
alive now to a permanent generation that later collections skip (they would never be freed
anyway), so a collection only walks what the sessions made. Memory is still collected as before.
"""

import gc

# Imported here, before the freeze, so that their module-level objects are among those frozen.
import numpy  # noqa: F401
import pandas  # noqa: F401
import plotly.graph_objects  # noqa: F401
import scipy.stats  # noqa: F401
import streamlit  # noqa: F401

import dpcore.release  # noqa: F401
from dpcore import blas, collector

# The sessions share the cores; BLAS threads spinning between dot products would take them.
blas.one_thread()
gc.freeze()
# Every page imports ui (app.py may not run: a first deep-link visit runs the page alone), so the
# timed collection that replaces Streamlit's per-rerun one starts here, once per process.
collector.start()
