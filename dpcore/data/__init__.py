"""The OD data model, bundled and synthetic datasets, importers, geography and views."""
