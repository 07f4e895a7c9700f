"""Internals of :mod:`dpcore.importers`: reading text, recognising columns, checking values and
one module per file format. Import the public interface from :mod:`dpcore.importers`."""
