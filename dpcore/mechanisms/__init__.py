"""Registry of every mechanism, by key.

Each mechanism module defines its classes and decorates them with :func:`register`; importing the
modules below fills the registry. ``get("oue")`` returns the class, ``names(model="local")`` the
keys.
"""

from __future__ import annotations

from dpcore.mechanisms.base import (
    ADD_REMOVE,
    BASELINE,
    CENTRAL,
    LOCAL,
    NOT_DP,
    SHUFFLED,
    SUBSTITUTION,
    CentralMechanism,
    LocalMechanism,
    Mechanism,
    Param,
)

_REGISTRY: dict[str, type[Mechanism]] = {}


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: add a mechanism to the registry under its ``key``."""
    if cls.key in _REGISTRY:
        raise ValueError(f"mechanism key {cls.key!r} registered twice")
    _REGISTRY[cls.key] = cls
    return cls


def get(key: str) -> type[Mechanism]:
    """The mechanism class for ``key``; an unknown key raises KeyError listing the valid ones."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown mechanism {key!r}; valid keys: {', '.join(_REGISTRY)}") from None


def names(model: str | None = None) -> list[str]:
    """Registered keys in registration order, optionally only those of one model."""
    return [k for k, cls in _REGISTRY.items() if model is None or cls.model == model]


def build(key: str, **values) -> Mechanism:
    """Build a mechanism by key. Every value is passed on: an unknown parameter is a TypeError and
    a bad value a TypeError or ValueError, each naming the parameter (see :class:`Param`)."""
    return get(key)(**values)


def declared(key: str, values: dict) -> dict:
    """The entries of ``values`` that mechanism ``key`` declares as parameters: for callers that
    offer the same shared settings (δ, neighbouring relation) to several mechanisms at once."""
    names_ = {p.name for p in get(key).params}
    return {name: value for name, value in values.items() if name in names_}


# Importing the modules registers their mechanisms (order = display order).
from dpcore.mechanisms import (  # noqa: E402,F401
    baselines,
    central,
    hadamard,
    local,
    onthemap,
    sketches,
)

__all__ = ["ADD_REMOVE", "BASELINE", "CENTRAL", "LOCAL", "NOT_DP", "SHUFFLED", "SUBSTITUTION",
           "CentralMechanism", "LocalMechanism", "Mechanism", "Param", "build", "declared", "get",
           "names", "register"]
