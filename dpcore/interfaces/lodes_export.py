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

import numpy as np
import pandas as pd

from dpcore.data.od import ODMatrix

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
    date = createdate or datetime.date.today().strftime("%Y%m%d")
    frame = pd.DataFrame({
        "w_geocode": _geocodes(od.destinations.ids)[cells % od.n_destinations],
        "h_geocode": _geocodes(od.origins.ids)[cells // od.n_destinations],
        "S000": values[cells].astype(np.int64)})
    for column in BREAKDOWNS:
        frame[column] = ""
    frame["createdate"] = date
    return frame.sort_values(["w_geocode", "h_geocode"], kind="stable").reset_index(drop=True)

