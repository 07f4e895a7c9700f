"""Placeholder: filled in by the mechanisms work."""
