"""Grids of values typed by people: "0.5, 1, 2" for ε, population sizes for n.

Typed grids come from text boxes and URLs, so every entry is checked and a wrong one is named in the
message; the inverse formatting round-trips through :func:`parse_grid`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcore.mechanisms.base import EPSILON
from dpcore.text import plain_number

THESIS_EPSILONS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)


def parse_grid(text: str, what: str = "ε", low: float | None = None, high: float | None = None,
               whole: bool = False) -> tuple:
    """Numbers typed as "0.5, 1, 2" (commas, semicolons or spaces) → sorted unique tuple.

    Each must lie in (low, high]; without bounds, in ε's declared range (the one every mechanism
    checks, so a grid can never hold an ε a mechanism refuses). ``whole`` requires whole numbers.
    Entries are read the plain way (:func:`dpcore.text.plain_number`: "1_0" is not 10). A
    ValueError says which entry is wrong and why.
    """
    parts = [p for p in text.replace(";", " ").replace(",", " ").split() if p]
    if not parts:
        raise ValueError(f"Type at least one value of {what}, e.g. 0.5, 1, 2.")
    declared = low is None and high is None
    values = []
    for part in parts:
        try:
            value = plain_number(part)
        except ValueError:
            raise ValueError(f"“{part}” is not a number; type values of {what} separated by "
                             "commas, e.g. 0.5, 1, 2.") from None
        inside = EPSILON.contains(value) if declared else low < value <= high
        if not (math.isfinite(value) and inside):
            raise ValueError(f"{what} = {part} is outside {EPSILON.interval()}. {EPSILON.why}"
                             if declared else f"{what} = {part} is outside ({low:g}, {high:g}].")
        if whole and value != int(value):
            raise ValueError(f"{what} = {part} must be a whole number.")
        values.append(int(value) if whole else value)
    return tuple(sorted(set(values)))


def format_grid(values) -> str:
    """The inverse of :func:`parse_grid`: "0.5, 1, 1.5" (whole numbers in full: "2748530")."""
    return ", ".join(str(int(v)) if float(v).is_integer() else f"{v:g}" for v in values)


def population_grid(n: int, points: int = 5, smallest: int = 1000) -> tuple[int, ...]:
    """Log-spaced population sizes up to the whole population n (2 significant digits)."""
    if n <= smallest:
        return (int(n),)
    raw = np.geomspace(max(smallest, n / 1000), n, points)[:-1]
    rounded = {int(float(f"{v:.2g}")) for v in raw}
    return tuple(sorted(v for v in rounded if 0 < v < n)) + (int(n),)
