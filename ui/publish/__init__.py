"""Plan & publish: :mod:`.planner` (the smallest ε per mechanism for a target, baselines, the ε
ruler) and :mod:`.publishing` (a release through OpenDP with its manifest, and the budget ledger)."""
