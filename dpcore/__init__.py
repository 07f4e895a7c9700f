"""dpcore: the compute core of the Commuting Privacy Lab (plain Python + NumPy, no Streamlit).

Modules: :mod:`dpcore.od` (the OD data model), :mod:`dpcore.datasets` (bundled data),
:mod:`dpcore.importers` (CSV import and validation), :mod:`dpcore.mechanisms` (every DP mechanism),
:mod:`dpcore.postprocess`, :mod:`dpcore.metrics`, :mod:`dpcore.experiment`, :mod:`dpcore.cli`;
for the Learn page :mod:`dpcore.learn`, :mod:`dpcore.privacy_theory`, :mod:`dpcore.amplification`
and :mod:`dpcore.accuracy`.
"""

from dpcore.od import DENSE_CELL_LIMIT, DomainTooLargeError, ODMatrix, ZoneSet

__all__ = ["DENSE_CELL_LIMIT", "DomainTooLargeError", "ODMatrix", "ZoneSet"]
