"""A release written as synthetic commuter records in the LODES OD layout.

LODES 8 origin–destination files (LODESTechDoc 8.4) have the columns ``w_geocode, h_geocode,
S000, SA01–SA03, SE01–SE03, SI01–SI03, createdate``: one row per workplace–home pair with at least
one job, ``S000`` the jobs, the others the same jobs split by age, earnings and industry, and
the date the file was made (YYYYMMDD). So planners can load a release in the tools they already
use, :func:`lodes_table` writes any release whose values are non-negative whole numbers (the
OnTheMap synthesizer's, or another mechanism's after a post-processing that rounds to
non-negative integers) in that layout:

* ``S000`` is the released count; only non-zero pairs are listed, as in LODES.
* The age, earnings and industry columns are **left empty**: a release has no breakdown. (LODES
  itself never leaves them empty; a tool that needs numbers must treat empty as unknown, not 0.)
* Geocodes: a zone id of 15 digits (a census block) is written as it is; 11 digits (a tract) or
  5 (a county) are padded with zeros to 15, a block code that names no real block, so the file
  must be read back at the zone's own level (``--level tract`` / ``county``). Any other zone id
  (e.g. an Irish ED) is written as it is: the layout, but not GEOIDs, which the product's LODES
  importer refuses (read such a file as the long format).

Zone ids come from uploaded files: write the table with
:func:`dpcore.export.write_safe_csv` (formula-safe), as ``release --lodes-out`` does.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix
from dpcore.interfaces.ledger import role_names
from dpcore.text import visible

BREAKDOWNS = ("SA01", "SA02", "SA03", "SE01", "SE02", "SE03", "SI01", "SI02", "SI03")
COLUMNS = ("w_geocode", "h_geocode", "S000", *BREAKDOWNS, "createdate")
#: Zeros that pad a tract (11 digits) or county (5) GEOID to a 15-digit block code.
PADDING = {15: "", 11: "0000", 5: "0000000000"}


def _geocodes(ids: np.ndarray) -> np.ndarray:
    """Zone ids as LODES geocodes: GEOID prefixes padded to 15 digits, other ids unchanged."""
    ids = np.asarray(ids, dtype=object).astype(str)
    lengths = {len(i) for i in ids}
    if all(i.isascii() and i.isdigit() for i in ids) and len(lengths) == 1 \
            and lengths <= set(PADDING):
        return np.char.add(ids, PADDING[lengths.pop()]).astype(object)
    return ids.astype(object)


def lodes_table(od: ODMatrix, released, createdate: str | None = None) -> pd.DataFrame:
    """The release ``released`` (dense, over ``od``'s domain) as a LODES OD table: one row per
    non-zero cell. A value that is negative or not whole is refused (ValueError): synthetic
    records are whole commuters."""
    if not isinstance(released, np.ndarray):
        raise ValueError("A sparse release holds most of its cells only as a distribution, so it "
                         "cannot be written as commuter records; release a smaller view.")
    values = np.asarray(released, dtype=float)
    if values.shape != (od.domain_size,):
        raise ValueError(f"The release has {values.size:,} values but the table has "
                         f"{od.domain_size:,} cells.")
    bad = ~np.isfinite(values) | (values < 0) | (values != np.rint(values))
    if bad.any():
        cell = int(np.flatnonzero(bad)[0])
        raise ValueError(f"LODES records are whole commuters, but released cell {cell} is "
                         f"{values[cell]:g}; choose a post-processing that gives non-negative "
                         f"whole numbers ('round') or the OnTheMap synthesizer.")
    cells = np.flatnonzero(values)
    return _records(_geocodes(od.destinations.ids)[cells % od.n_destinations],
                    _geocodes(od.origins.ids)[cells // od.n_destinations],
                    values[cells].astype(np.int64), createdate)


def _records(workplaces, homes, counts, createdate: str | None) -> pd.DataFrame:
    """The LODES OD table of these (workplace, home, count) rows, breakdowns empty."""
    frame = pd.DataFrame({"w_geocode": workplaces, "h_geocode": homes, "S000": counts})
    for column in BREAKDOWNS:
        frame[column] = ""
    frame["createdate"] = createdate or datetime.date.today().strftime("%Y%m%d")
    return frame.sort_values(["w_geocode", "h_geocode"], kind="stable").reset_index(drop=True)


def published_records(folder) -> tuple[pd.DataFrame, dict, str | None]:
    """A published folder (``release.csv`` + ``manifest.json``, :mod:`dpcore.interfaces.publish`)
    as LODES OD records: the table, the manifest (unchanged, to be kept beside the records) and
    the level written (None for a one-level publication). With several levels only the fine
    level is written (the others are its sums); ``createdate`` is the manifest's date. A count
    that is negative or not whole (post-processing ``base`` keeps negative noise) is refused
    (ValueError naming its row): publish with ``base_pos`` or ``round`` to write records."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        table = pd.read_csv(folder / "release.csv", dtype={"origin": str, "destination": str,
                                                           "level": str}, keep_default_na=False)
    except FileNotFoundError as error:
        raise ValueError(f"{folder} is not a published folder: {Path(error.filename).name} is "
                         "missing (a publish writes release.csv and manifest.json).") from None
    except (json.JSONDecodeError, UnicodeDecodeError, pd.errors.ParserError) as error:
        raise ValueError(f"{folder} is not a readable published folder: {error}") from None
    if not isinstance(manifest, dict) or not {"origin", "destination", "count"} <= set(table):
        raise ValueError(f"{folder} is not a published folder: release.csv needs the columns "
                         "origin, destination and count, manifest.json an object.")
    level = None
    if "level" in table:
        level = role_names(1, top_first=False)[0]
        table = table[table["level"] == level]
    counts = pd.to_numeric(table["count"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(counts) | (counts < 0) | (counts != np.rint(counts))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"LODES records are whole commuters, but the published count of "
            f"{visible(table['origin'].iloc[row])} → {visible(table['destination'].iloc[row])} "
            f"is {counts[row]:g}; only a publication post-processed to non-negative "
            f"whole numbers (base_pos or round) can be written as records.")
    date = str(manifest.get("date", ""))[:10].replace("-", "")
    keep = counts > 0
    records = _records(_geocodes(table["destination"].to_numpy())[keep],
                       _geocodes(table["origin"].to_numpy())[keep],
                       counts[keep].astype(np.int64), date if date.isdigit() else None)
    return records, manifest, level
