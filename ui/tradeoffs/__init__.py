"""The Tradeoffs page: :mod:`.sections` draws error against ε, population and domain size, the
release times and the link to the thesis report; the sweeps themselves run in :mod:`ui.components.runs`."""
