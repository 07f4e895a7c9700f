"""Registry of every mechanism, by key.

Each mechanism module defines its classes and decorates them with :func:`register`; importing the
modules below fills the registry. ``get("oue")`` returns the class, ``names(model="local")`` the
keys.
"""

from __future__ import annotations

from dpcore.mechanisms.base import (ADD_REMOVE, BASELINE, CENTRAL, LOCAL, NOT_DP, SHUFFLED,
                                    SUBSTITUTION, CentralMechanism, LocalMechanism, Mechanism,
                                    Param)

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
    """Build a mechanism by key. Every parameter is checked against the class's declarations:
    an unknown or ill-typed one is an error naming it (never silently dropped)."""
    return get(key)(**values)


def applicable(key: str, shared: dict) -> dict:
    """Those of ``shared`` that mechanism ``key`` declares: for settings given once to several
    mechanisms (one δ for all that use one, one neighbouring relation for the central ones)."""
    declared = {p.name for p in get(key).params}
    return {name: value for name, value in shared.items() if name in declared}


# Importing the modules registers their mechanisms (order = display order).
from dpcore.mechanisms import central, local, hadamard, baselines  # noqa: E402,F401

__all__ = ["ADD_REMOVE", "BASELINE", "CENTRAL", "LOCAL", "NOT_DP", "SHUFFLED", "SUBSTITUTION",
           "CentralMechanism", "LocalMechanism", "Mechanism", "Param", "applicable", "build", "get",
           "names", "register"]
