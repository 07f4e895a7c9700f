"""The classroom's question: where do you live → where do you work or study, over listed zones
plus "none of these"; and the zones a teacher may pick from a dataset."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from dpcore.data.od import ODMatrix
from dpcore.interfaces.classroom import (
    MAX_CELLS,
    MAX_NAME,
    MAX_TITLE,
    NONE_OF_THESE,
    ClassroomError,
)
from dpcore.scoring import ranks


@dataclass(frozen=True)
class Question:
    """Where do you live → where do you work or study, over the listed zones (names untrusted).

    The domain is every listed origin × destination pair **plus one cell, "none of these"**, the
    last (:data:`NONE_OF_THESE`): a student whose commute is not listed answers truthfully there
    instead of being pushed onto a wrong commute, so the listed estimates count only the students
    who take them, and the class learns how many commutes the list missed.
    """

    title: str
    origins: tuple[str, ...]
    destinations: tuple[str, ...]

    def __post_init__(self):
        if not self.origins or not self.destinations:
            raise ClassroomError("Pick at least one home zone and one work/study zone.")
        if len(str(self.title)) > MAX_TITLE:
            raise ClassroomError(f"The question has {len(str(self.title)):,} characters; at most "
                                 f"{MAX_TITLE} fit on a phone. Shorten it.")
        long = [z for z in self.origins + self.destinations if len(str(z)) > MAX_NAME]
        if long:
            raise ClassroomError(f"{len(long)} zone name(s) are longer than {MAX_NAME} characters "
                                 f"(e.g. one starting {str(long[0])[:30]!r}); pick other zones.")
        listed = len(self.origins) * len(self.destinations)
        if not 1 <= listed <= MAX_CELLS - 1:
            raise ClassroomError(
                f"The question has {len(self.origins)} home zones × {len(self.destinations)} "
                f"work/study zones = {listed} possible commutes; a classroom allows at most "
                f"{MAX_CELLS - 1} (plus \"none of these\"; a phone lists them all). Remove "
                "some zones.")

    @property
    def d(self) -> int:
        """Cells of the domain: the listed commutes and "none of these"."""
        return len(self.origins) * len(self.destinations) + 1

    @property
    def none_cell(self) -> int:
        return self.d - 1

    def cell(self, origin: int, destination: int) -> int:
        return origin * len(self.destinations) + destination

    def label(self, cell: int) -> str:
        if int(cell) == self.none_cell:
            return NONE_OF_THESE
        origin, destination = divmod(int(cell), len(self.destinations))
        return f"{self.origins[origin]} → {self.destinations[destination]}"

    def to_json(self) -> str:
        return json.dumps({"title": self.title, "origins": list(self.origins),
                           "destinations": list(self.destinations)})

    @classmethod
    def from_json(cls, text: str) -> Question:
        data = json.loads(text)
        return cls(data["title"], tuple(data["origins"]), tuple(data["destinations"]))


def default_zones(od: ODMatrix) -> tuple[list[str], list[str]]:
    """The busiest home and work zones of ``od`` (its parent level when it has one) such that
    origins × destinations + 1 ≤ :data:`MAX_CELLS`: the toy town's 7 homes × its 7 busiest
    destinations, a county table's 7 × 7 busiest counties."""
    if od.has_parent_level:
        od = od.aggregate()
    n_origins = min(od.n_origins, math.isqrt(MAX_CELLS - 1))
    n_destinations = min(od.n_destinations, (MAX_CELLS - 1) // n_origins)
    origins = ranks.top_cells(od.origin_totals(), n_origins)
    destinations = ranks.top_cells(od.destination_totals(), n_destinations)
    return ([str(x) for x in od.origins.labels[np.sort(origins)]],
            [str(x) for x in od.destinations.labels[np.sort(destinations)]])


def zone_choices(od: ODMatrix) -> tuple[list[str], list[str]]:
    """Every zone a teacher may pick for the question (the parent level when there is one)."""
    if od.has_parent_level:
        od = od.aggregate()
    return [str(x) for x in od.origins.labels], [str(x) for x in od.destinations.labels]

