"""Hostile or extreme uploads that are generated rather than kept in tests/malformed/: the input
limits (size, decompressed size, columns, name length, value length), the memory of zone labels,
and the rules for ambiguous counts and invisible characters.

Timings are not asserted here; bench/bench_import_limits.py measures them.
"""

from __future__ import annotations

import re
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from dpcore.data.importers import MAX_UPLOAD_BYTES, ImportFailed, import_od
from dpcore.data.importing.names import MAX_NAME_CHARS
from dpcore.data.importing.notices import PROBLEMS, UNEXPECTED
from dpcore.data.importing.reading import MAX_COLUMNS, MAX_FIELD_CHARS
from dpcore.data.od import ZoneSet

DPCORE = Path(__file__).resolve().parent.parent / "dpcore" / "data"


def failure(data: bytes, name: str = "upload.csv", **kwargs) -> ImportFailed:
    with pytest.raises(ImportFailed) as caught:
        import_od(data, name, **kwargs)
    return caught.value


def long_file(rows: list[tuple[str, str, str]]) -> bytes:
    return ("origin,destination,count\n"
            + "".join(f"{o},{d},{c}\n" for o, d, c in rows)).encode()


# --------------------------------------------------------------------------------- zone names
def test_zone_labels_take_memory_in_proportion_to_their_text():
    """Fixed-width '<U…' arrays give every zone the longest label's width (the issue's 20 GiB)."""
    names = [f"Zone {i}" for i in range(300)] + ["L" * MAX_NAME_CHARS]
    matrix = import_od(long_file([(name, "Naas", "1") for name in names]), "long.csv").matrix
    for array in (matrix.origins.ids, matrix.origins.labels, matrix.cell_labels()):
        assert array.dtype == object
        assert all(type(item) is str for item in array)
    zones = ZoneSet.from_ids(["a", "b" * 10_000], parent=["p", "q"])
    assert zones.labels.dtype == zones.parent.dtype == object
    assert zones.take([0]).labels.dtype == object


def test_zone_names_up_to_the_limit_are_accepted_and_longer_ones_named_with_row_and_column():
    longest = "N" * MAX_NAME_CHARS
    matrix = import_od(long_file([(longest, "Naas", "2"), ("Naas", "Naas", "1")]), "ok.csv").matrix
    assert longest in list(matrix.origins.ids)
    # Past the first rows (where the delimiter is sniffed), a value may exceed the CSV field limit.
    err = failure(long_file([("Naas", "Naas", "1")] * 35 + [("Naas", "X" * 1_000_000, "2")]))
    notice = err.errors[0]
    assert (notice.code, notice.row, notice.column) == ("name_too_long", 37, "destination")
    assert "has 1,000,000 characters" in notice.message
    assert f"at most {MAX_NAME_CHARS} characters" in notice.message
    assert len(str(err)) < 1000  # the long value is not copied into the message


def test_long_labels_in_a_label_column_are_refused_too():
    data = b"origin,destination,count,origin_name\nA,B,1," + b"x" * 201 + b"\n"
    notice = failure(data).errors[0]
    assert (notice.code, notice.row, notice.column) == ("name_too_long", 2, "origin_name")


def test_names_differing_only_by_invisible_characters_are_one_zone_and_reported():
    data = long_file([("Maynooth", "Naas", "1"), ("May\u200bnooth", "Naas", "2"),
                      ("\u202eNaas", "Naas", "4"), ("Ｎａａｓ", "Maynooth", "8")])
    result = import_od(data, "invisible.csv")
    assert sorted(result.matrix.origins.ids) == ["Maynooth", "Naas"]
    assert result.matrix.n == 15
    normalised = [n for n in result.notices if n.code == "names_normalised"]
    assert [n.level for n in normalised] == ["warning"]
    assert "May⟨U+200B⟩nooth" in normalised[0].message and normalised[0].row == 3


def test_names_respelled_without_merging_are_an_info_notice():
    result = import_od(long_file([("Ｎａａｓ", "Cork", "3")]), "wide_letters.csv")
    assert list(result.matrix.origins.ids) == ["Naas"]
    (notice,) = [n for n in result.notices if n.code == "names_normalised"]
    assert notice.level == "info" and "“Ｎａａｓ” → “Naas”" in notice.message


# --------------------------------------------------------------------------------- counts
@pytest.mark.parametrize("counts, expected", [
    (["2.0", "3"], [2, 3]),            # one decimal: not a thousands group
    (["1234.000", "2"], [1234, 2]),    # four digits before the dot: not a thousands group
    (["2.000", "2.5"], None),          # "2.5" shows the dot is decimal: 2.5 is fractional
])
def test_dotted_counts_that_are_not_ambiguous_keep_their_reading(counts, expected):
    data = long_file([(f"Z{i}", "D", count) for i, count in enumerate(counts)])
    if expected is None:
        assert failure(data).code == "count_fractional"
    else:
        assert import_od(data, "dots.csv").matrix.origin_totals().tolist() == expected


@pytest.mark.parametrize("count, readings", [("2.000", ("2", "2,000")),
                                             ("12.500", ("12.5", "12,500"))])
def test_a_count_with_three_digits_after_one_dot_names_both_readings(count, readings):
    notice = failure(long_file([("A", "B", count), ("B", "A", "7")])).errors[0]
    assert (notice.code, notice.row, notice.column) == ("count_ambiguous", 2, "count")
    assert f"as {readings[0]} (a decimal point) or as {readings[1]}" in notice.message


# --------------------------------------------------------------------------------- sizes
def test_size_message_for_a_file_just_over_the_limit_shows_two_different_sizes():
    err = failure(b"x" * (MAX_UPLOAD_BYTES + 1))
    sizes = re.findall(r"\(([\d,]+) bytes\)", str(err))
    assert sizes == [f"{MAX_UPLOAD_BYTES + 1:,}", f"{MAX_UPLOAD_BYTES:,}"]


def gzip_bomb(inflated_bytes: int) -> bytes:
    """A gzip member of ``inflated_bytes`` of a repeated CSV row, compressed piece by piece."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = b"Maynooth,Naas,1\n" * (2**20 // 16)
    parts = [compressor.compress(b"origin,destination,count\n")]
    parts += [compressor.compress(piece) for _ in range(inflated_bytes // len(piece))]
    return b"".join(parts) + compressor.flush()


def test_gzip_bomb_is_stopped_at_the_upload_limit_with_bounded_memory():
    bomb = gzip_bomb(MAX_UPLOAD_BYTES + 8 * 2**20)
    assert len(bomb) < 2**20  # a small upload ...
    tracemalloc.start()
    try:
        err = failure(bomb, "bomb.csv.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.code == "file_too_large"
    assert f"Decompressed, the file is larger than 100 MB ({MAX_UPLOAD_BYTES:,} bytes)" in str(err)
    # ... whose text is never held beyond the limit plus one piece (plus the BytesIO's slack).
    assert peak < MAX_UPLOAD_BYTES * 1.3, f"peak {peak / 2**20:.0f} MB"


def test_gzip_upload_within_the_limit_still_imports():
    data = gzip_bomb(2**20)
    result = import_od(data, "ok.csv.gz")
    assert result.matrix.n == 65536 and "decompressed" in [n.code for n in result.notices]


# --------------------------------------------------------------------------------- shape
def test_a_65000_column_header_is_refused_with_the_column_limit():
    header = ",".join("a" for _ in range(65_000))
    err = failure((header + "\n" + header.replace("a", "1") + "\n").encode(), "wide.csv")
    notice = err.errors[0]
    assert (notice.code, notice.row) == ("too_many_columns", 1)
    assert f"The header has 65,000 columns (comma-separated); at most {MAX_COLUMNS:,}" in str(err)


def test_a_file_with_exactly_the_column_limit_imports():
    names = ["origin", "destination", "count"] + [f"x{i}" for i in range(MAX_COLUMNS - 3)]
    data = (",".join(names) + "\nA,B,3" + ",0" * (MAX_COLUMNS - 3) + "\n").encode()
    assert import_od(data, "wide.csv").matrix.n == 3


@pytest.mark.parametrize("separator", [",", ";"])
def test_a_line_over_the_csv_field_limit_in_the_first_rows_names_its_row(separator):
    rows = ["origin,destination,count", "A,B,1", "", "C,D," + "9" * (MAX_FIELD_CHARS + 1)]
    notice = failure("\n".join(rows).replace(",", separator).encode()).errors[0]
    assert (notice.code, notice.row) == ("line_too_long", 4)
    assert f"more than {MAX_FIELD_CHARS:,} characters" in notice.message


def test_a_long_count_further_down_is_quoted_short():
    rows = [("A", "B", "1")] * 40 + [("C", "D", "9" * 200_000)]
    err = failure(long_file(rows))
    assert err.code == "count_not_numeric" and len(str(err)) < 1000  # too long to be a float


@pytest.mark.parametrize("line, separator", [("sep=\t", "\t"), ('"sep=;"', ";"), ("SEP=,", ",")])
def test_excel_separator_lines_name_the_separator_even_a_tab(line, separator):
    data = f"{line}\norigin,destination,count\nA,B,-1\n".replace(",", separator).encode()
    err = failure(data)
    assert (err.code, err.errors[0].row) == ("count_negative", 3)
    assert [n.code for n in err.notices][0] == "separator_line_skipped"


# --------------------------------------------------------------------------------- codes
def test_every_code_the_importer_can_fail_with_is_documented():
    source = "\n".join(p.read_text(encoding="utf-8") for p in
                       [DPCORE / "importers.py", *sorted((DPCORE / "importing").glob("*.py"))])
    failing = set(re.findall(r'report\.(?:fail|error)\(\s*"([a-z_0-9]+)"', source))
    assert failing, "no failure codes found: the pattern is out of date"
    assert failing <= set(PROBLEMS), failing - set(PROBLEMS)
    assert UNEXPECTED not in PROBLEMS
    unused = set(PROBLEMS) - failing
    assert not unused, f"documented but never raised: {unused}"


def test_object_label_arrays_keep_the_matrix_helpers_working():
    zones = ZoneSet.from_ids(["a", "b"], labels=["Alpha", "Beta"])
    from dpcore.data.od import ODMatrix
    matrix = ODMatrix.from_pairs("m", zones, zones, [0, 1], [1, 0], [3, 4])
    assert list(matrix.cell_labels()) == ["Alpha → Beta", "Beta → Alpha"]
    assert matrix.top(1)["commute"].tolist() == ["Beta → Alpha"]
    assert np.array_equal(matrix.subset(["b"], ["a"]).to_dense(), [4])
