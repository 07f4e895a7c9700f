"""OD matrix format: first column = origin zones, header row = destination zones, cells = counts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.importing.building import build_matrix, check_domain, zone_set
from dpcore.data.importing.notices import Report, quoted
from dpcore.data.importing.reading import Table
from dpcore.data.importing.values import parse_counts, require_present
from dpcore.data.od import ODMatrix


def import_matrix(table: Table, report: Report) -> ODMatrix:
    """Read a matrix; empty cells mean 0 (reported), repeated rows or columns are added up."""
    for position in (p for p in table.unnamed if p > 0):
        report.error("missing_value", f"Column {position + 1} has no destination name in the "
                     f"header.", row=1, column=table.header[position],
                     fix="Write the destination zone's name at the top of the column, or "
                         "delete the column.")
    destination_names = pd.Series(table.header[1:], dtype=str)
    check_domain(len(table.data), len(destination_names), report)
    frame, rows = table.take_positions(list(range(len(table.header))), report)
    origin_column = table.header[0]
    require_present(frame[0], rows, origin_column, "origin zone (first column)", report)
    o_codes, origins = zone_set(frame[0], rows, origin_column, report, sort=False)
    d_codes, destinations = zone_set(destination_names, np.ones(len(destination_names), int),
                                     None, report, sort=False)
    _report_repeats(frame[0], rows, "origin rows", origin_column, report)
    _report_repeats(destination_names, np.ones(len(destination_names), int), "destination columns",
                    None, report)

    cells = frame.drop(columns=0).to_numpy(dtype=object)
    n_rows, n_cols = cells.shape
    cell_rows = np.repeat(rows, n_cols)
    cell_columns = np.tile(np.asarray(table.header[1:], dtype=object), n_rows)
    counts = parse_counts(pd.Series(cells.ravel(), dtype=str), cell_rows, None, report,
                          blank_means_zero=True, cell_columns=cell_columns,
                          decimal_comma=table.delimiter != ",")
    nonzero = counts > 0
    o_cell = np.repeat(o_codes, n_cols)[nonzero]
    d_cell = np.tile(d_codes, n_rows)[nonzero]
    return build_matrix(table.file, f"Uploaded file {table.file} (OD matrix).", origins,
                        destinations, o_cell, d_cell, counts[nonzero], cell_rows[nonzero], report,
                        duplicates_expected=True)


def _report_repeats(names: pd.Series, rows: np.ndarray, what: str, column, report: Report) -> None:
    repeated = names.duplicated(keep=False).to_numpy()
    if repeated.any():
        report.warning("duplicate_rows",
                       f"Some zones have more than one of the {what} "
                       f"({quoted(pd.unique(names[repeated]))}); their counts were added up.",
                       row=rows[repeated][0], column=column,
                       fix="Nothing to do if that is intended; otherwise delete the repeats.")
