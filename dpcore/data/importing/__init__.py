"""Internals of :mod:`dpcore.data.importers`: reading text, recognising columns, checking values and
one module per file format. Import the public interface from :mod:`dpcore.data.importers`."""
