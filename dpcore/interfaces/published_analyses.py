"""A published folder (``release.csv`` + ``manifest.json``) as the input of the analyses, read
alone: no true table, no confidential input.

The folder gives the published counts of the cells it lists (every other cell of the domain is
published as 0), the domain's size and the noise's law (mechanism, scale, post-processing) in the
manifest, so every answer's interval comes from public facts, as the folder's own margins do
(:mod:`dpcore.evaluation.margins`). Supported: a flat publish (one level) with OpenDP's discrete
Laplace or discrete Gaussian, post-processed with Base or Base-Pos. WLS and TopDown folders are
refused with a message (their fitted cells have no interval here yet).

Zones are known by the ids in ``release.csv``. A zone seen on one side only is taken to be in
the other side's domain too while that side has zones not seen; zones of the domain that appear
on no row (all their cells published as 0) are kept as "unlisted" placeholders, so that every sum
counts its cells right. The folder holds no positions: distance and direction need them and say so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.analyses.intervals import Interval
from dpcore.data.od import DENSE_CELL_LIMIT, ODMatrix, ZoneSet
from dpcore.interfaces import publish

UNLISTED = "(unlisted {side} {k})"


@dataclass(frozen=True)
class PublishedNoise:
    """The noise law a manifest states, with the interface :class:`Interval` reads."""

    key: str
    scale: float
    noise_variance: float

    @property
    def alpha(self) -> float:   # discrete Laplace: P[Z = z] ∝ α^|z|, α = e^{−1/scale}
        return math.exp(-1.0 / self.scale)

    @property
    def sigma(self) -> float:   # discrete Gaussian
        return self.scale

    def variance(self, counts, n=None, d=None):
        return np.full(np.shape(counts), self.noise_variance)


@dataclass(frozen=True, eq=False)
class Folder:
    od: ODMatrix          # the domain's zones (no counts)
    values: np.ndarray    # the published counts over the dense domain
    interval: Interval


def _zones(seen, other, total: int | None, side: str) -> ZoneSet:
    """The ids seen on this side; then, while the domain has zones not seen here, the ids seen
    only on the other side (a zone all of whose cells on this side were published as 0), then
    placeholders."""
    ids = list(dict.fromkeys(seen))
    room = max((total or 0) - len(ids), 0)
    known = set(ids)
    ids += [zone for zone in dict.fromkeys(other) if zone not in known][:room]
    missing = max((total or 0) - len(ids), 0)
    return ZoneSet.from_ids(ids + [UNLISTED.format(side=side, k=k + 1) for k in range(missing)])


def load(folder) -> Folder:
    """The folder's published counts and the interval rule of its noise (module docstring)."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        table = pd.read_csv(folder / "release.csv", dtype={"origin": str, "destination": str},
                            keep_default_na=False)
    except (OSError, ValueError) as error:
        raise ValueError(f"{folder} is not a published folder (release.csv and manifest.json "
                         f"readable): {error}") from None
    keys = {text: key for key, text in publish.MECHANISMS.items()}
    levels = manifest.get("levels") or []
    if manifest.get("mechanism") not in keys or len(levels) != 1:
        raise ValueError("analyses of a published folder support flat publishes (one level, "
                         "discrete Laplace or discrete Gaussian); this folder is "
                         f"{str(manifest.get('mechanism', 'unknown'))[:80]!r}")
    posts = {text: key for key, text in publish.POSTPROCESS.items()}
    post = posts.get(manifest.get("post_processing"), manifest.get("post_processing"))
    missing = {"origin", "destination", "count"} - set(table.columns)
    if missing:
        raise ValueError(f"release.csv lacks the column(s) {', '.join(sorted(missing))}")
    domain = manifest.get("input", {}).get("domain", {})
    origins = _zones(table.origin, table.destination, domain.get("origins"), "origin")
    destinations = _zones(table.destination, table.origin, domain.get("destinations"),
                          "destination")
    od = ODMatrix.from_pairs("published folder", origins, destinations, [], [], [])
    if od.domain_size > DENSE_CELL_LIMIT:
        raise ValueError(f"the folder's domain has {od.domain_size:,} cells, more than the "
                         f"{DENSE_CELL_LIMIT:,} analysed from a folder")
    values = np.zeros(od.domain_size)
    flat = (origins.index_of(table.origin) * od.n_destinations
            + destinations.index_of(table.destination))
    values[flat] = pd.to_numeric(table["count"], errors="raise").to_numpy(dtype=float)
    level = levels[0]
    noise = PublishedNoise(
        "discrete_gaussian" if keys[manifest["mechanism"]] == publish.GAUSSIAN
        else "discrete_laplace", float(level["scale"]), float(level["noise_variance"]))
    total = float(manifest.get("total", {}).get("value", values.sum()))
    return Folder(od, values, Interval(noise.key, noise, post, n=total, d=od.domain_size))
