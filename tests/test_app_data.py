"""AppTest of the Data page: real file-uploader uploads, every notice shown, never a traceback.

The expected messages are not copied here: each test asks :func:`dpcore.data.importers.import_od` what
it says about the same bytes and checks that the page shows exactly that, in the right kind of box.
"""

import csv
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import importers
from dpcore.text import visible
from tests.test_import_limits import gzip_bomb
from ui.components import state

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA_PAGE = "pages/1_Data.py"
CSV = "text/csv"


def plain(markdown: str) -> str:
    """Undo ui.components.safe.markdown's backslash escapes, to compare with the importer's own text."""
    return re.sub(r"\\(.)", r"\1", markdown)


def boxes(at: AppTest, kind: str) -> list[str]:
    return [plain(box.value) for box in getattr(at, kind)]


def figures_shown(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key=state.UPLOAD_FILE).set_value((name, data, CSV)).run()
    assert not at.exception, at.exception
    return at


def assert_every_notice_shown(at: AppTest, notices) -> None:
    for notice in notices:
        shown = boxes(at, notice.level)
        message, location, fix = (visible(text) for text in
                                  (notice.message, notice.location, notice.fix))
        assert any(message in box and location in box and fix in box
                   for box in shown), (notice, shown)
    for kind in ("error", "warning", "info"):
        assert len(boxes(at, kind)) == sum(n.level == kind for n in notices)


@pytest.fixture
def data_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.switch_page(DATA_PAGE).run()
    assert not at.exception
    return at


def test_without_a_file_the_page_explains_the_formats_and_offers_the_examples(data_page):
    assert data_page.title[0].value == "Your data"
    assert any("Long format" in md.value for md in data_page.markdown)
    buttons = {button.proto.label for button in data_page.get("download_button")}
    assert buttons == {f"{key}.csv" for key in importers.EXAMPLES}
    formats = data_page.selectbox(key=state.UPLOAD_FORMAT).options
    assert set(formats) == set(importers.FORMATS.values())


@pytest.mark.parametrize("example", ["long", "long_coordinates", "powscar", "lodes", "matrix",
                                     "persons"])
def test_a_valid_upload_shows_its_figures_notices_and_preview(data_page, example):
    data = importers.EXAMPLES[example].encode()
    expected = importers.import_od(data, f"{example}.csv")
    upload(data_page, f"{example}.csv", data)
    summary = expected.matrix.summary()
    assert figures_shown(data_page)["Commuters (n)"] == f"{summary['n']:,}"
    assert figures_shown(data_page)["Domain |X|"] == f"{summary['domain_size']:,}"
    assert_every_notice_shown(data_page, expected.notices)
    assert any(importers.FORMATS[expected.format] in box for box in boxes(data_page, "success"))
    preview = data_page.dataframe[0].value
    assert list(preview["count"]) == list(expected.matrix.top(20)["count"])


def test_use_this_dataset_makes_the_upload_current_on_the_home_page(data_page):
    data = importers.EXAMPLES["matrix"].encode()
    matrix = importers.import_od(data, "commutes.csv").matrix
    upload(data_page, "commutes.csv", data)
    data_page.button(key=state.USE_UPLOAD).click().run()
    assert not data_page.exception
    assert data_page.session_state[state.CURRENT_DATASET] == state.UPLOADED
    assert any("current dataset" in box for box in boxes(data_page, "success"))
    data_page.switch_page("pages/0_Home.py").run()
    assert not data_page.exception
    assert data_page.selectbox(key=state.DATASET_PICKER).value == state.UPLOADED
    assert figures_shown(data_page)["Commuters (n)"] == f"{matrix.n:,}"
    assert list(data_page.dataframe[0].value["commute"]) == list(matrix.top(10)["commute"])
    data_page.switch_page(DATA_PAGE).run()  # the uploader is empty again, the upload is kept
    assert data_page.file_uploader(key=state.UPLOAD_FILE).value is None
    assert any("keeps your upload **commutes.csv**" in box for box in boxes(data_page, "info"))


def test_an_upload_is_never_visible_to_another_session(data_page):
    upload(data_page, "mine.csv", importers.EXAMPLES["long"].encode())
    data_page.button(key=state.USE_UPLOAD).click().run()
    other = AppTest.from_file(APP, default_timeout=30).run()  # same process, shared caches
    options = other.selectbox(key=state.DATASET_PICKER).options
    assert state.UPLOADED not in options and all("mine.csv" not in option for option in options)


CORPUS = ROOT / "tests" / "malformed"
FIXTURES = ROOT / "tests" / "fixtures"


def corpus_cases() -> list[dict]:
    """The malformed corpus's own table of cases, minus those the data_page cannot express.

    Rows with a ``columns`` mapping are API calls (the mapping UI is tested separately); an
    unknown format, or a level the format does not have, cannot be chosen from the pickers.
    """
    def expressible(case):
        file_format = case["format"] or "auto"
        return (not case["columns"] and file_format in importers.FORMATS
                and (file_format == "auto" or not case["level"]
                     or case["level"] in importers.LEVELS.get(file_format, ())))

    with open(CORPUS / "cases.csv", newline="", encoding="utf-8") as cases:
        return [case for case in csv.DictReader(cases) if expressible(case)]


def outcome(data: bytes, name: str, **options):
    """What the importer says about a file: (notices, imported?)."""
    try:
        return importers.import_od(data, name, **options).notices, True
    except importers.ImportFailed as failure:
        return failure.notices, False


@pytest.mark.parametrize("case", corpus_cases(),
                         ids=lambda case: f"{case['file']}-{case['code']}")
def test_every_corpus_file_shows_its_message_and_no_traceback(data_page, case):
    """Each malformed file through the page, with the corpus's format, level and zones pairing."""
    if case["zones_for"]:
        main, zones = FIXTURES / case["zones_for"], CORPUS / case["file"]
    else:
        main, zones = (CORPUS / case["file"]).resolve(), None
    file_format, level = case["format"] or "auto", case["level"] or None
    if level and file_format == "auto":  # the data_page offers levels once the format is chosen
        file_format = importers.import_od(main.read_bytes(), main.name).format
    data_page.selectbox(key=state.UPLOAD_FORMAT).set_value(file_format)
    if level:  # the level picker appears once the format is chosen
        data_page.run().selectbox(key=state.level_widget(file_format)).set_value(level)
    if zones:
        data_page.file_uploader(key=state.UPLOAD_ZONES).set_value(
            (zones.name, zones.read_bytes(), CSV))
    upload(data_page, main.name, main.read_bytes())

    notices, imported = outcome(main.read_bytes(), main.name, format=file_format, level=level,
                                zones=(zones.read_bytes(), zones.name) if zones else None)
    assert_every_notice_shown(data_page, notices)
    assert any(case["contains"].strip() in box for box in boxes(data_page, case["expect"]))
    assert bool(data_page.metric) == imported
    assert bool([b for b in data_page.button if b.key == state.USE_UPLOAD]) == imported


def test_an_unexpected_crash_becomes_a_friendly_message(data_page, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(importers, "import_od", crash)
    upload(data_page, "any.csv", b"origin,destination,count\nA,B,1\n")
    [message] = boxes(data_page, "error")
    assert "any.csv could not be imported" in message and "RuntimeError" in message
    assert "How to fix" in message and "Traceback" not in message and "boom" not in message


def test_a_gzip_bomb_is_refused_on_the_page_with_the_upload_limit(data_page):
    """Generated (the corpus holds small files only): 1 MB of gzip inflating past 100 MB."""
    bomb = gzip_bomb(importers.MAX_UPLOAD_BYTES + 2**20)
    notices, imported = outcome(bomb, "bomb.csv.gz")
    assert not imported and notices[-1].code == "file_too_large"
    upload(data_page, "bomb.csv.gz", bomb)
    assert_every_notice_shown(data_page, notices)
    assert any("Decompressed, the file is larger than 100 MB" in box
               for box in boxes(data_page, "error"))
    assert not data_page.metric


def test_unrecognised_columns_are_mapped_by_the_user(data_page):
    data = b"a;b;c\nNorth;South;3\nNorth;East;4\nEast;South;1\n"
    with pytest.raises(importers.ImportFailed) as failure:
        importers.import_od(data, "codes.csv")
    assert failure.value.code == "unmapped_columns"
    upload(data_page, "codes.csv", data)
    assert any("Could not tell which column" in box for box in boxes(data_page, "error"))
    file_id = data_page.session_state[state.IMPORT_ATTEMPT].fingerprint[0]
    pickers = {role: data_page.selectbox(key=state.mapping_widget(file_id, role))
               for role in ("origin", "destination", "count")}
    assert set(pickers["origin"].options) == {"— not in the file —", "a", "b", "c"}
    pickers["origin"].set_value("a")
    pickers["destination"].set_value("b")
    pickers["count"].set_value("c")
    data_page.button(key=state.APPLY_MAPPING).click().run()
    assert not data_page.exception
    expected = importers.import_od(data, "codes.csv",
                                   columns={"origin": "a", "destination": "b", "count": "c"})
    assert not boxes(data_page, "error")
    assert figures_shown(data_page)["Commuters (n)"] == f"{expected.matrix.n:,}"
    assert_every_notice_shown(data_page, expected.notices)
    # The mapping stays offered, filled in, so it can be corrected.
    assert data_page.selectbox(key=pickers["origin"].key).value == "a"


def test_the_level_of_a_powscar_file_can_be_chosen(data_page):
    data = importers.EXAMPLES["powscar"].encode()
    data_page.selectbox(key=state.UPLOAD_FORMAT).set_value("powscar").run()
    level = data_page.selectbox(key=state.level_widget("powscar"))
    # words, not the importer's keys ("ed")
    assert level.options == ["automatic (the importer chooses)", "electoral division", "county"]
    level.set_value("county").run()
    upload(data_page, "powscar.csv", data)
    assert any(box.value.endswith(", county level.") for box in data_page.success)
    county = importers.import_od(data, "powscar.csv", format="powscar", level="county").matrix
    ed = importers.import_od(data, "powscar.csv", format="powscar", level="ed").matrix
    assert county.n_origins != ed.n_origins
    assert figures_shown(data_page)["Origins"] == f"{county.n_origins:,}"
    data_page.selectbox(key=state.level_widget("powscar")).set_value("ed").run()
    assert figures_shown(data_page)["Origins"] == f"{ed.n_origins:,}"
    assert any(box.value.endswith(", electoral division level.") for box in data_page.success)


def test_hostile_zone_names_stay_text(data_page):
    names = ("![pixel](http://evil.example/p.png)", "<img src=x onerror=alert(1)>")
    data = f"origin,destination,count\n{names[0]},{names[1]},3\n".encode()
    upload(data_page, "[x](http://evil.example).csv", data)
    assert set(data_page.dataframe[0].value["commute"]) == {f"{names[0]} → {names[1]}"}
    kinds = ("markdown", "caption", "success", "info", "warning", "error")
    rendered = " ".join(el.value for kind in kinds for el in getattr(data_page, kind))
    assert "](http" not in rendered and "<img" not in rendered


def test_removing_the_file_forgets_the_import(data_page):
    upload(data_page, "flows.csv", importers.EXAMPLES["long"].encode())
    assert data_page.session_state[state.IMPORT_ATTEMPT] is not None
    data_page.file_uploader(key=state.UPLOAD_FILE).set_value(None).run()
    assert not data_page.exception
    assert data_page.session_state[state.IMPORT_ATTEMPT] is None
    assert not data_page.metric


def test_a_successful_import_says_so_first_and_folds_its_notes(data_page):
    """The success message comes before any other box; the importer's notes (info) are folded
    in one collapsed expander instead of a column of boxes above it."""
    data_page.selectbox(key=state.UPLOAD_FORMAT).set_value("powscar").run()
    upload(data_page, "powscar.csv", importers.EXAMPLES["powscar"].encode())
    kinds = [node.type for node in data_page.main
             if getattr(node, "type", None) in ("success", "info", "warning", "error")]
    assert kinds[0] == "success" and len(kinds) > 1, kinds
    assert data_page.info, "the example has notes"
    [expander] = [e for e in data_page.expander if "on the import" in e.label]
    assert len(expander.info) == len(data_page.info)
    assert not expander.proto.expanded
