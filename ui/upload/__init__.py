"""The Data page: :mod:`.flow` checks and imports an uploaded commuting file (and zones file),
shows every problem with file, row, column and fix, and keeps the upload private to its session."""
