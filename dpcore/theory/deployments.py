"""Privacy budgets of deployed differential privacy, for the "ε ruler" beside the user's ε.

An ε means little without its *privacy unit* (what one neighbouring change is: a person, a
user-day, a housing unit) and its *scope* (one release, one day, a year of data): a per-day ε
spent every day of a year is a far larger total. Each entry says both, and how sure the figure is:
values quoted by their owners in primary documents are marked ``verified``; figures only seen
quoted second-hand are marked so.

Sources: US Census Bureau, Disclosure Avoidance System production settings for the 2020
redistricting data (P.L. 94-171), 2021; Machanavajjhala et al., "Privacy: theory meets practice on
the map", ICDE 2008 (OnTheMap); Aktay et al., "Google COVID-19 community mobility reports:
anonymization process description", arXiv 2004.04145; Apple, "Learning with privacy at scale",
Machine Learning Journal 2017, as listed in D. Desfontaines, "A list of real-world uses of
differential privacy" (2021); the OpenDP deployments registry (Microsoft).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Deployment:
    name: str
    short: str
    epsilon: float
    delta: float | None
    unit: str
    scope: str
    model: str  # "central" or "local"
    verified: bool


DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("US 2020 Census, redistricting data (persons)", "Census persons", 17.14, 1e-10,
               "person", "whole release (zCDP ρ ≈ 2.56, converted)", "central", False),
    Deployment("US 2020 Census, redistricting data (housing units)", "Census housing", 2.47,
               1e-10, "housing unit", "whole release", "central", False),
    Deployment("US LEHD OnTheMap / LODES residences, (ε, δ)-probabilistic DP — not DP: with "
               "probability up to δ no bound; workplace totals published exactly (noise "
               "infusion, not DP)", "OnTheMap (pDP)", 8.6, 1e-5, "worker",
               "one annual release", "central", False),
    Deployment("Google COVID-19 mobility reports", "Google metric-day", 0.44, None,
               "user, one metric of one day", "per metric per day", "central", False),
    Deployment("Google COVID-19 mobility reports (all metrics)", "Google user-day", 2.64, None,
               "user-day", "per day", "central", False),
    Deployment("Apple QuickType suggestions", "Apple QuickType", 16.0, None, "user-day",
               "per day", "local", True),
    Deployment("Apple emoji suggestions", "Apple emoji", 4.0, None, "user-day", "per day",
               "local", True),
    Deployment("Apple Health type usage", "Apple Health", 2.0, None, "user-day", "per day",
               "local", True),
    Deployment("Microsoft Assistive AI", "Microsoft AI", 4.0, 1e-7, "user", "per release",
               "central", True),
)


def ruler() -> pd.DataFrame:
    """The deployments as a table (one row each, smallest ε first), with a plain-text label."""
    frame = pd.DataFrame([d.__dict__ for d in DEPLOYMENTS]).sort_values("epsilon",
                                                                        ignore_index=True)
    frame["source"] = frame["verified"].map({True: "primary source",
                                             False: "quoted second-hand"})
    return frame
