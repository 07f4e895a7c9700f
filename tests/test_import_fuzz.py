"""Property-based tests of the importer (hypothesis): whatever bytes are uploaded, the import
either succeeds or fails with documented problem codes (:data:`dpcore.data.importing.notices.PROBLEMS`)
— never another exception, never the "unexpected problem" fallback.

Two strategies: arbitrary bytes, and CSV-like files assembled from the header names, values and
troublemakers (quotes, separators, dotted numbers, invisible characters, long values) that the
importer treats specially, in several encodings, optionally gzip-compressed. The fast profile runs
in the normal suite with a fixed seed (derandomised, so it cannot flake); the long profile
(``slow``) explores thousands of random examples.
"""

from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpcore.data.importers import EXAMPLES, FORMATS, LEVELS, ImportFailed, import_od
from dpcore.data.importing.notices import PROBLEMS

_COMMON = {"deadline": None, "database": None,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
FAST = settings(max_examples=50, derandomize=True, **_COMMON)
LONG = settings(max_examples=2500, **_COMMON)

HEADER_NAMES = ["origin", "destination", "count", "from", "to", "n", "flow", "origin_lat",
                "origin_lon", "destination_lat", "destination_lon", "origin_name", "lat", "lon",
                "zone", "parent", "label", "w_geocode", "h_geocode", "S000",
                "RESIDENCE_ED_GUID", "RESIDENCE_CSOED_LABEL", "RESIDENCE_COUNTY_LABEL",
                "POWSC_ED_GUID", "POWSC_CSOED_LABEL", "POWSC_COUNTY_LABEL", "COUNT", ""]
VALUES = ["", "0", "1", "7", "-3", "2.000", "2.5", "2.0", "1e3", "1e400", "nan", "inf", "+4",
          "12,5", "Total", "Maynooth", "maynooth", "Ｍaynooth", "May\u200bnooth", "\u202eNaas",
          "53.38", "-6.59", "91", "01001020100100", "010010201001000", "٠١", '"', '""', "\n",
          "a,b", "x;y", "\t", "sep=,", "\x1b[2J", "\x00", "N" * 201, "9" * 400,
          "Work/school from home"]
DELIMITERS = [",", ";", "\t", "|"]
EXAMPLE_HEADERS = [example.split("\n", 1)[0].split(",") for example in EXAMPLES.values()]

cell = st.one_of(st.sampled_from(VALUES), st.text(max_size=8))


@st.composite
def csv_files(draw) -> bytes:
    """A small delimited file: a header of known (or random) names and rows of tricky values."""
    delimiter = draw(st.sampled_from(DELIMITERS))
    if draw(st.booleans()):  # a real format's header, so its own checks run on the values
        header = draw(st.sampled_from(EXAMPLE_HEADERS))
    else:
        header = draw(st.lists(st.one_of(st.sampled_from(HEADER_NAMES), st.text(max_size=6)),
                               min_size=1, max_size=6))
    width = len(header)
    rows = draw(st.lists(st.lists(cell, min_size=max(width - 1, 0), max_size=width + 1),
                         max_size=8))
    lines = [delimiter.join(header)] + [delimiter.join(row) for row in rows]
    if draw(st.booleans()):
        lines.insert(0, draw(st.sampled_from(["", "sep=,", "sep=;", '"sep=\t"', "sep=:"])))
    text = draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines)
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "cp1252", "utf-32"]))
    data = text.encode(encoding, errors="replace")
    return gzip.compress(data, mtime=0) if draw(st.booleans()) else data


def assert_imports_or_fails_cleanly(data: bytes, **options) -> None:
    try:
        result = import_od(data, "fuzz.csv", **options)
    except ImportFailed as failure:
        codes = [notice.code for notice in failure.errors]
        assert codes, "ImportFailed without an error"
        assert set(codes) <= set(PROBLEMS), [str(n) for n in failure.errors]
        return
    assert result.matrix.n > 0
    assert not [n for n in result.notices if n.level == "error"]
    for zones in (result.matrix.origins, result.matrix.destinations):
        assert zones.ids.dtype == object and zones.labels.dtype == object


options = st.fixed_dictionaries({
    "format": st.sampled_from(list(FORMATS)),
}).flatmap(lambda chosen: st.fixed_dictionaries({
    "format": st.just(chosen["format"]),
    "level": st.sampled_from([None, *LEVELS.get(chosen["format"], ())]),
}))


@FAST
@given(data=st.binary(max_size=2048))
@example(data=b"sep=,")  # found by the long profile: nothing after Excel's separator line,
@example(data=b"sep=,\n\n\x01")  # or blank lines
def test_any_bytes_import_or_fail_with_a_documented_code(data):
    assert_imports_or_fails_cleanly(data)


@FAST
@given(data=csv_files(), chosen=options)
def test_any_csv_like_file_imports_or_fails_with_a_documented_code(data, chosen):
    assert_imports_or_fails_cleanly(data, **chosen)


@settings(FAST, max_examples=25)
@given(zones=csv_files())
def test_any_zones_file_imports_or_fails_with_a_documented_code(zones):
    assert_imports_or_fails_cleanly(EXAMPLES["long"].encode(), zones=(zones, "zones.csv"))


@pytest.mark.slow
@LONG
@given(data=st.one_of(st.binary(max_size=8192), csv_files()), chosen=options,
       zones=st.none() | csv_files())
def test_thousands_of_random_files_import_or_fail_with_a_documented_code(data, chosen, zones):
    assert_imports_or_fails_cleanly(data, zones=None if zones is None else (zones, "zones.csv"),
                                    **chosen)
