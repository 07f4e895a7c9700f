"""The published domain: which zones a release can contain, taken from a public source.

A differentially private table must not reveal which commutes exist, and the list of zones is
part of what it publishes (every cell of the domain gets a noisy value, the manifest states the
number of cells). If that list is *the zones found in the data*, one commuter in an otherwise
unused zone adds a row and a column, and the two neighbouring tables are told apart with
certainty, whatever the noise (issue 20: 8 vs 6 zones with and without one commuter). So the
domain comes from a public source the user names (the usual rule of DP systems, e.g. OpenDP's
and Tumult's public domains; Near & Abuah, *Programming Differential Privacy*, ch. 3):

* ``zones_file``: a zones file listing the zones (zone[, parent]);
* ``bundled_geography``: a bundled dataset's zone lists (public in this product);
* ``declared_codes``: a list of codes the user types;
* ``data``: the zones of the data, only after the user acknowledges what it reveals
  (:data:`DATA_DERIVED_RISK`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.data import datasets
from dpcore.data.importing.names import spelled
from dpcore.data.importing.zones import read_zone_list
from dpcore.data.od import ODMatrix, ZoneSet

ZONES_FILE, BUNDLED, CODES, DATA = ("zones_file", "bundled_geography", "declared_codes", "data")
SOURCES = {ZONES_FILE: "a zones file listing the zones",
           BUNDLED: "the zones of a bundled geography",
           CODES: "a list of zone codes you declare",
           DATA: "the zones found in the data (reveals which zones have commuters)"}
#: What a domain read from the rows gives away; the page and the command line show it and ask
#: for an explicit choice.
DATA_DERIVED_RISK = (
    "A domain taken from the data publishes which zones have at least one commuter: a zone "
    "with a single commuter adds a row and a column to the table, so anyone who knows everyone "
    "else can tell whether that person is in it, whatever ε says. The guarantee then holds only "
    "for commuters between zones that would be listed anyway. Use a public list of zones "
    "instead (a zones file, a bundled geography or the codes of the official geography) unless "
    "the list of zones is itself public knowledge.")
#: Notices of a zones file that say what was done with rows that do not fit two levels.
LEVEL_NOTICES = ("zones_third_level", "own_parent")
#: Most characters in a declared list of codes (a national geography's codes fit easily).
MAX_CODES_CHARS = 2_000_000


@dataclass(frozen=True)
class Domain:
    """Zones a release is published over, and where they come from."""

    origins: ZoneSet
    destinations: ZoneSet
    source: str
    description: str
    #: What was done with a zones file's rows that do not fit two levels (import notices).
    notices: tuple = field(default=(), compare=False)

    @property
    def public(self) -> bool:
        return self.source != DATA

    def manifest_entry(self) -> dict:
        """The manifest's ``domain``: its source and size (public facts only)."""
        entry = {"source": self.source, "description": self.description,
                 "origins": len(self.origins), "destinations": len(self.destinations)}
        if not self.public:
            entry["warning"] = DATA_DERIVED_RISK
        return entry


def of_dataset(key: str, loaded: ODMatrix | None = None) -> Domain:
    """A bundled dataset's geography (its origin and destination zones, with their parents);
    ``loaded``: the dataset already in memory (e.g. the generated national one)."""
    od = datasets.load(key) if loaded is None else loaded
    return Domain(od.origins, od.destinations, BUNDLED, f"bundled geography of {od.name} ({key})")


def of_zones_file(data: bytes, filename: str) -> Domain:
    """The zones a zones file lists, as origins and as destinations (ImportFailed if bad).
    ``filename`` is for the import's messages only: the description, which goes into the
    manifest, names no file (a file's name can say whom the data is about)."""
    zones, notices = read_zone_list(data, filename)
    return Domain(zones, zones, ZONES_FILE, "a zones file the publisher supplied",
                  tuple(notices))


def of_codes(text: str) -> Domain:
    """Codes separated by commas, semicolons, spaces or line breaks; repeats count once. Each is
    spelled as the importer spells zone names (:func:`dpcore.data.importing.names.spelled`: NFKC,
    no invisible characters, control characters escaped), so it matches the zone it names."""
    if len(text) > MAX_CODES_CHARS:
        raise ValueError(f"the list of codes has {len(text):,} characters; at most "
                         f"{MAX_CODES_CHARS:,} are accepted: use a zones file instead")
    codes = list(dict.fromkeys(spelled(c) for c in re.split(r"[\s,;]+", text) if c))
    if len(codes) < 2:
        raise ValueError("declare at least two zone codes (separated by commas, spaces or "
                         "line breaks)")
    zones = ZoneSet.from_ids(np.array(codes, dtype=object))
    return Domain(zones, zones, CODES, f"{len(codes):,} declared zone codes")


def of_data(od: ODMatrix) -> Domain:
    """The data's own zones: only after the user acknowledged :data:`DATA_DERIVED_RISK`."""
    return Domain(od.origins, od.destinations, DATA, "the zones found in the data")


def apply(od: ODMatrix, domain: Domain) -> ODMatrix:
    """``od``'s counts over the domain's zones (and the domain's parents, if it has any).

    Raises ValueError naming the data's zones that the domain lacks: their commuters would
    otherwise vanish silently (the message goes to the publisher, who holds the data)."""
    if domain.origins is od.origins and domain.destinations is od.destinations:
        return od
    o_map = pd.Index(domain.origins.ids).get_indexer(od.origins.ids)
    d_map = pd.Index(domain.destinations.ids).get_indexer(od.destinations.ids)
    used_o = np.unique(od.rows)
    used_d = np.unique(od.cols)
    missing = sorted(set(od.origins.ids[used_o[o_map[used_o] < 0]])
                     | set(od.destinations.ids[used_d[d_map[used_d] < 0]]))
    if missing:
        shown = ", ".join(f"“{z}”" for z in missing[:5]) + (
            f" and {len(missing) - 5:,} more" if len(missing) > 5 else "")
        raise ValueError(f"{len(missing):,} zone(s) of the data are not in the published domain "
                         f"({domain.description}): {shown}. Add them to the domain, or leave "
                         "their commuters out of the data.")
    return ODMatrix.from_pairs(od.name, domain.origins, domain.destinations, o_map[od.rows],
                               d_map[od.cols], od.counts, od.description)
