"""CSV import: every format, encodings and delimiters, column recognition, and the malformed corpus.

The corpus in ``tests/malformed/`` pairs each bad file with the notice it must produce
(``cases.csv``: code, level, row as a spreadsheet shows it, column and a phrase of the message).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore.data.importers as importers
from dpcore.data.importers import (
    EXAMPLES,
    FORMATS,
    LEVELS,
    MAX_UPLOAD_BYTES,
    ImportFailed,
    ImportResult,
    Notice,
    describe_formats,
    import_od,
)
from dpcore.data.importing.names import MAX_NAME_CHARS
from dpcore.data.importing.reading import MAX_COLUMNS
from dpcore.data.od import DENSE_CELL_LIMIT, MEMORY_BUDGET_BYTES, ODMatrix, ZoneSet

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
MALFORMED = HERE / "malformed"
CASES = list(csv.DictReader((MALFORMED / "cases.csv").open(encoding="utf-8")))


def fixture(name: str) -> tuple[bytes, str]:
    return (FIXTURES / name).read_bytes(), name


def codes(notices) -> list[str]:
    return [n.code for n in notices]


def cells(matrix: ODMatrix) -> dict[tuple[str, str], int]:
    """Non-zero cells keyed by (origin id, destination id)."""
    frame = matrix.to_frame()
    return dict(zip(zip(frame["origin"], frame["destination"]), frame["count"].tolist()))


def same_matrix(a: ODMatrix, b: ODMatrix) -> bool:
    return (list(a.origins.ids) == list(b.origins.ids)
            and list(a.destinations.ids) == list(b.destinations.ids)
            and np.array_equal(a.to_dense(), b.to_dense()))


# ------------------------------------------------------------------------------ malformed corpus
def _run_case(case):
    data = (MALFORMED / case["file"]).read_bytes()
    kwargs = {"format": case["format"] or "auto", "level": case["level"] or None,
              "columns": json.loads(case["columns"]) if case["columns"] else None}
    if case["zones_for"]:
        kwargs["zones"] = (data, case["file"])
        return import_od(*fixture(case["zones_for"]), **kwargs)
    return import_od(data, Path(case["file"]).name, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['file']}-{c['code']}" for c in CASES])
def test_malformed_file_gives_its_message(case):
    if case["expect"] == "error":
        with pytest.raises(ImportFailed) as caught:
            _run_case(case)
        notices = caught.value.notices
        assert caught.value.errors, "ImportFailed without an error notice"
    else:
        notices = _run_case(case).notices
    matching = [n for n in notices if n.code == case["code"] and n.level == case["expect"]]
    assert matching, f"no {case['expect']} {case['code']!r}; got {[str(n) for n in notices]}"
    notice = matching[0]
    assert notice.file == Path(case["file"]).name
    assert case["contains"] in str(notice), str(notice)
    assert notice.row == (int(case["row"]) if case["row"] else None)
    assert notice.column == (case["column"] or None)
    assert "unexpected_error" not in codes(notices)
    for n in notices:
        if n.level != "info":
            assert n.fix, f"{n.code} has no fix"


def test_corpus_covers_every_file_and_is_large_enough():
    files = {p.name for p in MALFORMED.iterdir()} - {"cases.csv"}
    listed = {c["file"] for c in CASES}
    assert files <= listed, f"files without an expected message: {sorted(files - listed)}"
    assert len(files) >= 25
    assert len({c["code"] for c in CASES}) >= 25


def test_import_failed_carries_code_and_readable_text():
    with pytest.raises(ImportFailed) as caught:
        import_od(*[(MALFORMED / "count_negative.csv").read_bytes(), "count_negative.csv"])
    err = caught.value
    assert err.code == "count_negative"
    text = str(err)
    assert "count_negative.csv, row 4 (header = row 1), column “count”" in text
    assert "How to fix:" in text


def test_notice_str_is_one_line_with_location_message_and_fix():
    notice = Notice("error", "count_negative", "The count is negative.", "a.csv", 7, "n",
                    "Correct it.")
    assert str(notice) == ("Error in a.csv, row 7 (header = row 1), column “n”: The count is "
                           "negative. How to fix: Correct it.")
    assert str(Notice("info", "bom_stripped", "BOM removed.", "a.csv")) == \
        "Note in a.csv: BOM removed."


# ------------------------------------------------------------------------------- limits
def test_file_over_the_size_limit_is_refused_before_parsing():
    with pytest.raises(ImportFailed) as caught:
        import_od(b"x" * (MAX_UPLOAD_BYTES + 1), "huge.csv")
    assert caught.value.code == "file_too_large"
    assert f"the limit is {MAX_UPLOAD_BYTES // 2**20} MB" in str(caught.value)


def test_domain_too_large_explains_and_suggests_a_subset():
    side = int(np.sqrt(DENSE_CELL_LIMIT)) + 10
    text = "origin,destination,count\n" + "".join(f"o{i},d{i},1\n" for i in range(side))
    with pytest.raises(ImportFailed) as caught:
        import_od(text.encode(), "big.csv")
    err = caught.value
    assert err.code == "domain_too_large"
    assert f"{side:,} origins × {side:,} destinations" in str(err)
    assert f"{DENSE_CELL_LIMIT:,}" in str(err) and "keep only the region" in str(err)


def _lodes_text(n_blocks: int) -> str:
    """n_blocks home blocks in one tract, each working in its own block of another tract."""
    rows = [f"0100102020{i:05d},0100102010{i:05d},1,1,0,0,1,0,0,0,0,1,20230101"
            for i in range(n_blocks)]
    return ("w_geocode,h_geocode,S000,SA01,SA02,SA03,SE01,SE02,SE03,SI01,SI02,SI03,"
            "createdate\n" + "\n".join(rows) + "\n")


def test_lodes_block_level_too_large_suggests_roll_up():
    data = _lodes_text(int(np.sqrt(DENSE_CELL_LIMIT)) + 10).encode()
    with pytest.raises(ImportFailed) as caught:
        import_od(data, "od.csv", level="block")
    assert caught.value.code == "domain_too_large"
    assert "at tract level it would be 1 × 1 = 1 cells" in str(caught.value)
    result = import_od(data, "od.csv")  # default: the finest level that fits
    assert result.level == "tract" and "level_chosen" in codes(result.notices)
    assert result.matrix.n == int(np.sqrt(DENSE_CELL_LIMIT)) + 10


def test_unexpected_errors_become_import_failed(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(importers, "import_long", broken)
    with pytest.raises(ImportFailed) as caught:
        import_od(*fixture("long.csv"))
    assert caught.value.code == "unexpected_error"
    assert "RuntimeError: boom" in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_unknown_format_and_level_are_import_failures():
    for kwargs, code in (({"format": "xlsx"}, "unknown_format"),
                         ({"format": "lodes", "level": "ed"}, "bad_level")):
        with pytest.raises(ImportFailed) as caught:
            import_od(*fixture("long.csv"), **kwargs)
        assert caught.value.code == code


# ------------------------------------------------------------------------------- long format
def test_long_fixture_counts_match_the_file():
    data, name = fixture("long.csv")
    result = import_od(data, name)
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert isinstance(result, ImportResult) and result.format == "long"
    assert result.matrix.n == sum(int(r["count"]) for r in rows)
    assert cells(result.matrix) == {(r["origin"], r["destination"]): int(r["count"])
                                    for r in rows}
    assert result.columns == {"origin": "origin", "destination": "destination", "count": "count"}
    assert not result.warnings


def test_long_with_coordinates_places_each_zone():
    result = import_od(*fixture("long_coordinates.csv"))
    origins = result.matrix.origins
    i = origins.index_of(["Celbridge"])[0]
    assert (origins.lat[i], origins.lon[i]) == (53.3399, -6.5390)
    assert origins.has_coordinates.all() and result.matrix.destinations.has_coordinates.all()


def test_random_matrix_round_trips_through_long_csv(rng):
    origins = ZoneSet.from_ids([f"{i:05d}" for i in range(40)])  # leading zeros must survive
    destinations = ZoneSet.from_ids([f"D{i}" for i in range(25)])
    dense = rng.poisson(0.7, size=len(origins) * len(destinations))
    original = ODMatrix.from_dense("random", origins, destinations, dense)
    buffer = io.StringIO()
    original.to_frame()[["origin", "destination", "count"]].to_csv(buffer, index=False)
    imported = import_od(buffer.getvalue().encode(), "random.csv").matrix
    assert cells(imported) == cells(original)
    assert imported.n == original.n and "00007" in imported.origins.ids


@pytest.mark.parametrize("header", [
    ("From", "To", "Trips"), ("ORIGIN_ZONE", "DEST_ZONE", "FLOW"), ("home", "work", "n"),
    ("O", "D", "Count"), ("originId", "destinationId", "commuters"),
    ("Residence", "Workplace", "Persons"), ("orig", "dest", "value")])
def test_common_column_names_are_recognised(header):
    text = ",".join(header) + "\nA,B,3\nB,B,4\n"
    result = import_od(text.encode(), "variants.csv")
    assert result.columns == dict(zip(("origin", "destination", "count"), header))
    assert cells(result.matrix) == {("A", "B"): 3, ("B", "B"): 4}


def test_coordinate_column_variants_are_recognised():
    text = ("from,to,n,Origin Latitude,origin_lng,dest_lat,DestLongitude\n"
            "A,B,3,53.1,-6.1,53.2,-6.2\n")
    result = import_od(text.encode(), "coords.csv")
    assert result.columns["origin_lat"] == "Origin Latitude"
    assert result.columns["destination_lon"] == "DestLongitude"
    assert result.matrix.destinations.lat[0] == 53.2


def test_unrecognised_columns_can_be_mapped_by_the_user():
    data = b"alpha,beta,gamma,remark\nA,B,3,x\nB,A,2,y\n"
    with pytest.raises(ImportFailed) as caught:
        import_od(data, "mystery.csv")
    assert caught.value.code == "unmapped_columns"
    assert caught.value.columns == ["alpha", "beta", "gamma", "remark"]
    mapping = {"origin": "alpha", "destination": "beta", "count": "gamma"}
    result = import_od(data, "mystery.csv", columns=mapping)
    assert result.columns == mapping
    assert cells(result.matrix) == {("A", "B"): 3, ("B", "A"): 2}
    assert "Ignored: “remark”" in str(next(n for n in result.notices
                                          if n.code == "columns_used"))


def test_partly_recognised_columns_are_suggested():
    with pytest.raises(ImportFailed) as caught:
        import_od(b"origin,destination,zzz\nA,B,3\n", "partial.csv", format="long")
    assert caught.value.code == "unmapped_columns"
    assert caught.value.suggested == {"origin": "origin", "destination": "destination"}


def test_every_automatic_correction_is_reported():
    messy = (b"\xef\xbb\xbf origin , destination ,count\n"
             b"  Maynooth ,Naas, 3\n\n"
             b"Naas,Naas,0\n"
             b"Maynooth,Naas,2\n")
    result = import_od(messy, "messy.csv")
    assert cells(result.matrix) == {("Maynooth", "Naas"): 5}
    assert {"bom_stripped", "whitespace_trimmed", "empty_rows_skipped", "zero_counts_dropped",
            "duplicate_rows"} <= set(codes(result.notices))
    assert list(result.matrix.destinations.ids) == ["Naas"]  # the zero row's zone is kept
    assert list(result.matrix.origins.ids) == ["Maynooth", "Naas"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "latin-1", "cp1252", "utf-16"])
@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_encodings_and_delimiters_are_detected(encoding, delimiter):
    rows = [("origin", "destination", "count"), ("Dún Laoghaire", "Naas", "3"),
            ("Naas", "Dún Laoghaire", "4"), ("Naas", "Naas", "5")]
    text = "\r\n".join(delimiter.join(r) for r in rows) + "\r\n"
    result = import_od(text.encode(encoding), "enc.csv")
    assert cells(result.matrix) == {("Dún Laoghaire", "Naas"): 3, ("Naas", "Dún Laoghaire"): 4,
                                    ("Naas", "Naas"): 5}
    expected_notice = {"utf-8": None, "utf-8-sig": "bom_stripped", "latin-1": "encoding_latin1",
                       "cp1252": "encoding_latin1", "utf-16": "encoding_utf16"}[encoding]
    if expected_notice:
        assert expected_notice in codes(result.notices)


def test_semicolon_files_may_use_decimal_commas_in_coordinates():
    text = ("origin;destination;count;origin_lat;origin_lon;destination_lat;destination_lon\n"
            "A;B;3;53,35;-6,26;53,22;-6,66\n")
    result = import_od(text.encode(), "eu.csv")
    assert result.matrix.origins.lat[0] == 53.35 and result.matrix.destinations.lon[0] == -6.66
    assert "decimal_comma" in codes(result.notices)


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_decimal_comma_counts_are_read_in_files_not_separated_by_commas(delimiter):
    """A spreadsheet where the comma is the decimal mark writes 1 as “1,0”: long and matrix."""
    long = delimiter.join(("origin", "destination", "count")) + "\n" + \
        delimiter.join(("A", "B", "1,0")) + "\n" + delimiter.join(("B", "A", "12")) + "\n"
    result = import_od(long.encode(), "eu.csv")
    assert cells(result.matrix) == {("A", "B"): 1, ("B", "A"): 12}
    note = next(n for n in result.notices if n.code == "decimal_comma")
    assert note.level == "info" and note.row == 2 and "“1,0” as 1" in note.message
    matrix = "\n".join(delimiter.join(row) for row in
                       (("zone", "A", "B"), ("A", "0", "3,0"), ("B", "2,0", "0"))) + "\n"
    assert cells(import_od(matrix.encode(), "eu_matrix.csv").matrix) == {("A", "B"): 3,
                                                                         ("B", "A"): 2}


@pytest.mark.parametrize("text, code, words", [
    ("origin;destination;count\nA;B;2,5\n", "count_fractional", "not a whole number"),
    ("origin;destination;count\nA;B;2,000\n", "count_ambiguous",
     "as 2 (a decimal comma) or as 2,000 (a comma separating thousands)"),
    ('origin,destination,count\nA,B,"1,0"\n', "count_not_numeric", "found “1,0”"),
])
def test_decimal_commas_change_nothing_that_was_refused_for_a_reason(text, code, words):
    """2,5 people is still fractional; “2,000” is ambiguous where the comma is the decimal mark;
    in a comma-separated file a quoted “1,0” is still not a count."""
    with pytest.raises(ImportFailed) as failed:
        import_od(text.encode(), "eu.csv")
    errors = [n for n in failed.value.notices if n.level == "error"]
    assert [n.code for n in errors] == [code] and words in errors[0].message


def test_gzip_compressed_upload_is_decompressed_and_reported():
    data, name = fixture("long.csv")
    result = import_od(gzip.compress(data), name + ".gz")
    assert same_matrix(result.matrix, import_od(data, name).matrix)
    assert "decompressed" in codes(result.notices)


# ------------------------------------------------------------------------- persons and matrix
def test_persons_fixture_counts_each_row_as_one_person():
    data, name = fixture("persons.csv")
    result = import_od(data, name)
    rows = list(csv.reader(io.StringIO(data.decode())))[1:]
    assert result.format == "persons"
    assert result.matrix.n == len(rows)
    assert cells(result.matrix)[("Celbridge", "Dublin City")] == rows.count(
        ["Celbridge", "Dublin City"]) == 3
    assert "duplicate_rows" not in codes(result.notices)  # repeats are the format, not an error


def test_persons_file_with_an_unnamed_count_column_is_not_read_as_persons():
    with pytest.raises(ImportFailed) as caught:
        import_od(b"origin,destination,qq\nA,B,7\nB,A,2\n", "maybe_counts.csv")
    assert caught.value.code == "unmapped_columns"


def test_long_file_with_numeric_zones_and_unknown_names_is_not_taken_for_a_matrix():
    with pytest.raises(ImportFailed) as caught:
        import_od(b"a,b,c\n1,2,5\n2,1,7\n", "codes.csv")
    assert caught.value.code == "unmapped_columns"
    square = import_od(b"zone,1,2\n1,0,5\n2,7,0\n", "square.csv")
    assert square.format == "matrix" and cells(square.matrix) == {("1", "2"): 5, ("2", "1"): 7}


def test_matrix_fixture_keeps_file_order_and_reads_blank_cells_as_zero():
    data, name = fixture("matrix.csv")
    result = import_od(data, name)
    assert result.format == "matrix"
    frame = pd.read_csv(io.BytesIO(data), index_col=0).fillna(0).astype(int)
    assert list(result.matrix.origins.ids) == list(frame.index)
    assert list(result.matrix.destinations.ids) == list(frame.columns)
    assert np.array_equal(result.matrix.to_dense(), frame.to_numpy().ravel())
    assert "blank_cells_zero" in codes(result.notices)


# --------------------------------------------------------------------------------- POWSCAR
def test_powscar_is_read_as_latin1_with_irish_labels():
    result = import_od(*fixture("powscar.csv"), level="county")
    assert result.format == "powscar" and result.level == "county"
    assert "Dún-Laoghaire Rathdown" in result.matrix.origins.ids
    assert "encoding_latin1" in codes(result.notices)
    with open(FIXTURES / "powscar.csv", encoding="latin-1", newline="") as f:
        total = sum(int(r["COUNT"]) for r in csv.DictReader(f))
    assert result.matrix.n == total


def test_powscar_ed_level_aggregates_exactly_to_county_level():
    ed = import_od(*fixture("powscar.csv"), level="ed").matrix
    county = import_od(*fixture("powscar.csv"), level="county").matrix
    assert ed.has_parent_level
    assert ed.origins.parent_zones.ids.tolist() == county.origins.ids.tolist()
    assert same_matrix(ed.aggregate(), county)


def test_powscar_special_destinations_are_destination_only_without_coordinates():
    ed = import_od(*fixture("powscar.csv")).matrix
    specials = ["No fixed place of work", "Northern Ireland", "Overseas",
                "Work/school from home"]
    assert set(specials) <= set(ed.destinations.ids)
    assert not set(specials) & set(ed.origins.ids)
    positions = ed.destinations.index_of(specials)
    assert not ed.destinations.has_coordinates[positions].any()
    assert ed.destinations.parent[positions].tolist() == specials  # their own parents
    labels = dict(zip(ed.origins.ids, ed.origins.labels))
    assert labels["2AE19629-1A39-13A3-E055-000000000301"] == "Clonskeagh-Belfield"


def test_powscar_subset_by_county_keeps_its_eds():
    ed = import_od(*fixture("powscar.csv")).matrix
    kildare = ed.subset_by_parent(["Kildare"])
    assert kildare.n_origins == 2 and kildare.n_destinations == 2
    assert kildare.n == 4477 + 718 + 2210


# ----------------------------------------------------------------------------------- LODES
def test_lodes_home_is_origin_work_is_destination_and_codes_keep_zeros():
    result = import_od(*fixture("lodes.csv"), level="block")
    matrix = result.matrix
    assert cells(matrix)[("010010201001003", "010010201001000")] == 2  # h → w
    assert all(len(z) == 15 and z.startswith("01") for z in matrix.origins.ids)
    assert matrix.origins.parent_zones.ids.tolist() == ["01001020100", "01001020200",
                                                       "01003011402"]


@pytest.mark.parametrize("fine, coarse", [("block", "tract"), ("tract", "county")])
def test_lodes_levels_roll_up_exactly(fine, coarse):
    fine_matrix = import_od(*fixture("lodes.csv"), level=fine).matrix
    coarse_matrix = import_od(*fixture("lodes.csv"), level=coarse).matrix
    assert same_matrix(fine_matrix.aggregate(), coarse_matrix)
    digits = {"tract": 11, "county": 5}[coarse]
    assert all(len(z) == digits for z in coarse_matrix.origins.ids)


def test_lodes_county_zones_point_to_their_state():
    matrix = import_od(*fixture("lodes.csv"), level="county").matrix
    assert matrix.origins.ids.tolist() == ["01001", "01003"]
    assert matrix.origins.parent.tolist() == ["01", "01"]


# ------------------------------------------------------------------------------ zones file
def test_zones_file_adds_positions_labels_and_parents():
    result = import_od(*fixture("long.csv"), zones=fixture("zones.csv"))
    matrix = result.matrix
    assert matrix.origins.has_coordinates.all()
    i = matrix.origins.index_of(["Naas"])[0]
    assert (matrix.origins.lat[i], matrix.origins.parent[i]) == (53.2206, "Kildare")
    rolled = matrix.aggregate()
    raw = cells(import_od(*fixture("long.csv")).matrix)
    kildare = {"Maynooth", "Celbridge", "Leixlip", "Naas"}
    assert cells(rolled)[("Kildare", "Dublin")] == sum(
        c for (o, d), c in raw.items() if o in kildare and d == "Dublin City")
    parents = matrix.origins.parent_zones
    k = parents.index_of(["Kildare"])[0]
    assert parents.lat[k] == pytest.approx(np.mean([53.3815, 53.3399, 53.3659, 53.2206]))


def test_zones_file_places_parent_level_zones_of_powscar():
    zones = ("zone,lat,lon\n2AE19629-1A39-13A3-E055-000000000101,53.3815,-6.5910\n"
             "Kildare,53.16,-6.91\n").encode()
    matrix = import_od(*fixture("powscar.csv"), zones=(zones, "ed_zones.csv")).matrix
    i = matrix.origins.index_of(["2AE19629-1A39-13A3-E055-000000000101"])[0]
    assert matrix.origins.lat[i] == 53.3815
    counties = matrix.origins.parent_zones
    assert counties.lat[counties.index_of(["Kildare"])[0]] == 53.16
    assert same_matrix(matrix.aggregate(), import_od(*fixture("powscar.csv"),
                                                     level="county").matrix)


# --------------------------------------------------------------------- formats and the help text
def test_every_format_has_a_description_and_levels_are_listed():
    assert set(FORMATS) == {"auto", "long", "powscar", "lodes", "matrix", "persons"}
    assert LEVELS == {"powscar": ("ed", "county"), "lodes": ("block", "tract", "county")}


@pytest.mark.parametrize("key", [k for k in EXAMPLES if k != "zones"])
def test_help_examples_import_and_are_detected(key):
    zones = (EXAMPLES["zones"].encode(), "zones.csv") if key in ("long", "persons") else None
    result = import_od(EXAMPLES[key].encode(), f"{key}.csv", zones=zones)
    assert not result.warnings
    assert result.format == {"long_coordinates": "long"}.get(key, key)
    assert result.matrix.n > 0
    assert "format_detected" in codes(result.notices)


def test_describe_formats_shows_every_example_and_the_limits():
    text = describe_formats()
    for example in EXAMPLES.values():
        assert example in text
    assert f"{MAX_UPLOAD_BYTES // 2**20} MB" in text and f"{DENSE_CELL_LIMIT:,}" in text
    assert f"at most {MAX_COLUMNS:,} columns" in text
    assert f"at most {MAX_NAME_CHARS} characters" in text
    assert f"more than {MEMORY_BUDGET_BYTES / 2**30:.2f} GB of memory" in text


def test_zones_file_with_a_county_column_uses_it_as_parent():
    zones = ("ED,County,lat,lon\nMaynooth,Kildare,53.3815,-6.5910\n"
             "Naas,Kildare,53.2206,-6.6593\n").encode()
    result = import_od(*fixture("long.csv"), zones=(zones, "eds.csv"))
    origins = result.matrix.origins
    assert origins.parent[origins.index_of(["Naas"])[0]] == "Kildare"
    assert origins.parent[origins.index_of(["Leixlip"])[0]] == "Leixlip"  # not listed: own parent
    assert "own_parent" in codes(result.notices)


def test_zones_file_with_unknown_columns_offers_no_mapping():
    with pytest.raises(ImportFailed) as caught:
        import_od(*fixture("long.csv"), zones=(b"a,b,c\nMaynooth,1,2\n", "odd.csv"))
    assert caught.value.code == "unmapped_columns"
    assert caught.value.columns is None  # the UI maps the main file's columns only
    assert caught.value.errors[0].file == "odd.csv"


def test_level_for_a_format_without_levels_is_ignored_and_reported():
    result = import_od(*fixture("long.csv"), level="county")
    assert result.level is None and "level_ignored" in codes(result.notices)


def test_powscar_headers_with_spaces_are_recognised():
    data = EXAMPLES["powscar"].replace("_", " ").title().encode("latin-1")
    result = import_od(data, "powscar_titles.csv")
    assert result.format == "powscar" and result.level == "ed"
    assert result.matrix.n == sum(int(line.rsplit(",", 1)[1])
                                  for line in EXAMPLES["powscar"].splitlines()[1:])
