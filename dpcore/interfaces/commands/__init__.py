"""The command line's subcommands, one module per group that changes together; each has
``add(commands)``, which :mod:`dpcore.interfaces.cli` calls to register its parsers and handlers."""
