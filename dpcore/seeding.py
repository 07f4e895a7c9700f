"""The seeding rule, the only place in the product where a seed becomes random numbers (below the
data, so that synthetic datasets draw by it too; :mod:`dpcore.release` draws every release by it).

The generator of a purpose is ``numpy.random.default_rng(SeedSequence(seed, spawn_key=key))`` with
``key = (crc32(purpose), *coordinates)``, where a text coordinate enters as its CRC-32, a whole
number as itself and a float as the 64 bits of its IEEE-754 pattern. A release uses the purpose
``"release"`` and the coordinates (mechanism key, ε, trial), with ε as 0 for the baselines
(which ignore it); a subsample the purpose ``"subsample"`` and (level, areas…, n, trial). So a
mechanism's noise depends only on the seed, its key, ε and the trial: not on which other
mechanisms run beside it, on the order jobs run in, on the number of worker processes, or on
parameters such as δ (two δ values at one seed share
their underlying random numbers, which makes their comparison sharper). ``SeedSequence`` hashes
the key into independent, well-mixed streams (O'Neill, "PCG: a family of simple fast
space-efficient statistically good algorithms", 2014; NumPy's ``SeedSequence`` documentation).
"""

from __future__ import annotations

import zlib

import numpy as np


def _words(coordinate) -> int:
    if isinstance(coordinate, str):
        return zlib.crc32(coordinate.encode())
    if isinstance(coordinate, (bool, np.bool_)):
        return int(coordinate)
    if isinstance(coordinate, (int, np.integer)):
        if coordinate < 0:
            raise ValueError(f"seed coordinates must be ≥ 0; got {coordinate}")
        return int(coordinate)
    if isinstance(coordinate, (float, np.floating)):
        return int(np.float64(coordinate).view(np.uint64))
    raise TypeError(f"cannot key a random stream by {coordinate!r}")


def generator(seed: int, purpose: str, *coordinates) -> np.random.Generator:
    """The random generator for ``purpose`` at these coordinates (the seeding rule above)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"the seed must be a whole number ≥ 0; got {seed!r}")
    key = tuple(_words(c) for c in (purpose, *coordinates))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))
