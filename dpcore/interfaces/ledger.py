"""A privacy budget ledger: every publish of a session, and what they cost together.

Releases about the same people compose: their budgets add up (basic composition), or grow like
the square root of their number (advanced composition, Dwork, Rothblum, Vadhan, "Boosting and
differential privacy", FOCS 2010, in its form for different ε_i: ε' = √(2 ln(1/δ')·Σε_i²) +
Σε_i(e^{ε_i} − 1), δ' added to Σδ_i), or — when Gaussian noise is used — through zCDP, where ρ
adds up exactly (Bun, Steinke, "Concentrated differential privacy", TCC 2016: an ε-DP release is
ε²/2-zCDP, and ρ-zCDP gives (ρ + 2√(ρ ln(1/δ)), δ)-DP). A ledger only grows: the only way to
"reset" it is to start a new one, which does not make the earlier releases any less public.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field

import pandas as pd

#: δ' of advanced composition and the δ at which a zCDP total is stated.
SLACK_DELTA = 1e-6


@dataclass(frozen=True)
class Entry:
    what: str
    epsilon: float
    delta: float
    rho: float | None  # the release's zCDP parameter, when it has one (Gaussian)
    date: str


@dataclass
class Ledger:
    entries: list[Entry] = field(default_factory=list)
    started: str = field(default_factory=lambda: _now())

    def add(self, what: str, epsilon: float, delta: float = 0.0, rho: float | None = None
            ) -> None:
        self.entries.append(Entry(what, float(epsilon), float(delta), rho, _now()))

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([e.__dict__ for e in self.entries],
                            columns=["what", "epsilon", "delta", "rho", "date"])

    def totals(self, slack: float = SLACK_DELTA) -> pd.DataFrame:
        """The total guarantee of every entry together, under each composition theorem that
        applies. Columns ``composition``, ``epsilon``, ``delta``."""
        if not self.entries:
            return pd.DataFrame(columns=["composition", "epsilon", "delta"])
        eps = [e.epsilon for e in self.entries]
        deltas = sum(e.delta for e in self.entries)
        rows = [("basic (budgets add up)", sum(eps), deltas)]
        advanced = (math.sqrt(2 * math.log(1 / slack) * sum(x * x for x in eps))
                    + sum(x * math.expm1(x) for x in eps))
        rows.append((f"advanced (δ′ = {slack:g})", advanced, deltas + slack))
        if any(e.rho is not None for e in self.entries):
            pure = [e for e in self.entries if e.rho is None]
            if all(e.delta == 0 for e in pure):
                rho = sum(e.rho if e.rho is not None else e.epsilon ** 2 / 2
                          for e in self.entries)
                rows.append((f"zCDP (ρ = {rho:.4g} in all)",
                             rho + 2 * math.sqrt(rho * math.log(1 / slack)), slack))
        return pd.DataFrame(rows, columns=["composition", "epsilon", "delta"])


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
