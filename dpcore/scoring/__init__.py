"""How one release is scored against the truth: its metrics (a sparse release's in
``sparse_metrics``) and ranks; below :mod:`dpcore.release`, which scores every release with them."""
