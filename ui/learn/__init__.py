"""The Learn page: :mod:`.lessons` (one lesson per screen on the current dataset) and
:mod:`.figures` (their charts; the ε ruler is also drawn by Plan & publish)."""
