"""Streamlit helpers shared by the pages (never imported by dpcore).

:mod:`ui.state` names every session-state key, :mod:`ui.data` is where pages get their dataset,
:mod:`ui.widgets` draws the shared pieces, :mod:`ui.upload` runs the Data page's import flow,
:mod:`ui.safe` makes untrusted text inert.
"""
