"""dpcore: the compute core of the Commuting Privacy Lab (plain Python + NumPy, no Streamlit).

Modules: :mod:`dpcore.data.od` (the OD data model), :mod:`dpcore.data.datasets` (bundled data),
:mod:`dpcore.data.importers` (CSV import and validation), :mod:`dpcore.mechanisms` (every DP mechanism),
:mod:`dpcore.mechanisms.postprocess`, :mod:`dpcore.scoring.metrics`, :mod:`dpcore.evaluation.experiment`, :mod:`dpcore.interfaces.cli`;
for the Learn page :mod:`dpcore.theory.learn`, :mod:`dpcore.theory.privacy_theory`, :mod:`dpcore.theory.amplification`
and :mod:`dpcore.theory.accuracy`.
"""

from dpcore.data.od import DENSE_CELL_LIMIT, DomainTooLargeError, ODMatrix, ZoneSet

__all__ = ["DENSE_CELL_LIMIT", "DomainTooLargeError", "ODMatrix", "ZoneSet"]
