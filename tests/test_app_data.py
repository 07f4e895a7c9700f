"""AppTest of the Data page: uploads through the real file uploader, every notice shown, no traceback.

The expected messages are not copied here: each test asks :func:`dpcore.importers.import_od` what
it says about the same bytes and checks that the page shows exactly that, in the right kind of box.
"""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore import importers
from ui import state

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA_PAGE = "pages/1_Data.py"
CSV = "text/csv"


def plain(markdown: str) -> str:
    """Undo ui.safe.markdown's backslash escapes, to compare with the importer's own text."""
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
        assert any(notice.message in box and notice.location in box and notice.fix in box
                   for box in shown), (notice, shown)
    for kind in ("error", "warning", "info"):
        assert len(boxes(at, kind)) == sum(n.level == kind for n in notices)


@pytest.fixture
def page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(DATA_PAGE).run()
    assert not at.exception
    return at


def test_without_a_file_the_page_explains_the_formats_and_offers_the_examples(page):
    assert page.title[0].value == "Your data"
    assert any("Long format" in md.value for md in page.markdown)
    buttons = {button.proto.label for button in page.get("download_button")}
    assert buttons == {f"{key}.csv" for key in importers.EXAMPLES}
    assert set(page.selectbox(key=state.UPLOAD_FORMAT).options) == set(importers.FORMATS.values())


@pytest.mark.parametrize("example", ["long", "long_coordinates", "powscar", "lodes", "matrix",
                                     "persons"])
def test_a_valid_upload_shows_its_figures_notices_and_preview(page, example):
    data = importers.EXAMPLES[example].encode()
    expected = importers.import_od(data, f"{example}.csv")
    upload(page, f"{example}.csv", data)
    summary = expected.matrix.summary()
    assert figures_shown(page)["Commuters (n)"] == f"{summary['n']:,}"
    assert figures_shown(page)["Domain |X|"] == f"{summary['domain_size']:,}"
    assert_every_notice_shown(page, expected.notices)
    assert any(importers.FORMATS[expected.format] in box for box in boxes(page, "success"))
    preview = page.dataframe[0].value
    assert list(preview["count"]) == list(expected.matrix.top(20)["count"])


def test_use_this_dataset_makes_the_upload_current_on_the_home_page(page):
    data = importers.EXAMPLES["matrix"].encode()
    matrix = importers.import_od(data, "commutes.csv").matrix
    upload(page, "commutes.csv", data)
    page.button(key=state.USE_UPLOAD).click().run()
    assert not page.exception
    assert page.session_state[state.CURRENT_DATASET] == state.UPLOADED
    assert any("current dataset" in box for box in boxes(page, "success"))
    page.switch_page("app.py").run()
    assert not page.exception
    assert page.selectbox(key=state.DATASET_PICKER).value == state.UPLOADED
    assert figures_shown(page)["Commuters (n)"] == f"{matrix.n:,}"
    assert list(page.dataframe[0].value["commute"]) == list(matrix.top(10)["commute"])


def test_an_upload_is_never_visible_to_another_session(page):
    upload(page, "mine.csv", importers.EXAMPLES["long"].encode())
    page.button(key=state.USE_UPLOAD).click().run()
    other = AppTest.from_file(APP, default_timeout=30).run()  # same process, shared caches
    assert state.UPLOADED not in other.selectbox(key=state.DATASET_PICKER).options
    assert all("mine.csv" not in option for option in other.selectbox(key=state.DATASET_PICKER).options)


MALFORMED = {
    "empty": b"",
    "header_only": b"origin,destination,count\n",
    "negative_count": b"origin,destination,count\nA,B,5\nA,C,-3\n",
    "fractional_count": b"origin,destination,count\nA,B,2.5\n",
    "not_a_number": b"origin;destination;count\nA;B;many\n",
    "missing_origin": b"origin,destination,count\nA,B,5\n,C,2\n",
    "excel_workbook": b"PK\x03\x04" + bytes(200),
    "matrix_negative": b"origin,A,B\nA,1,-2\nB,3,4\n",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_upload_shows_the_importers_errors_and_no_traceback(page, case):
    data = MALFORMED[case]
    with pytest.raises(importers.ImportFailed) as failure:
        importers.import_od(data, f"{case}.csv")
    upload(page, f"{case}.csv", data)
    assert failure.value.errors
    assert_every_notice_shown(page, failure.value.notices)
    assert not [b for b in page.button if b.key == state.USE_UPLOAD]
    assert not page.metric  # nothing imported, nothing to show


def test_an_unexpected_crash_becomes_a_friendly_message(page, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(importers, "import_od", crash)
    upload(page, "any.csv", b"origin,destination,count\nA,B,1\n")
    [message] = boxes(page, "error")
    assert "any.csv could not be imported" in message and "RuntimeError" in message
    assert "How to fix" in message and "Traceback" not in message and "boom" not in message


def test_unrecognised_columns_are_mapped_by_the_user(page):
    data = b"a;b;c\nNorth;South;3\nNorth;East;4\nEast;South;1\n"
    with pytest.raises(importers.ImportFailed) as failure:
        importers.import_od(data, "codes.csv")
    assert failure.value.code == "unmapped_columns"
    upload(page, "codes.csv", data)
    assert any("Could not tell which column" in box for box in boxes(page, "error"))
    pickers = {role: next(box for box in page.selectbox
                          if box.key and box.key.startswith("data_map_") and box.key.endswith(f"_{role}"))
               for role in ("origin", "destination", "count")}
    assert set(pickers["origin"].options) == {"— not in the file —", "a", "b", "c"}
    pickers["origin"].set_value("a")
    pickers["destination"].set_value("b")
    pickers["count"].set_value("c")
    page.button(key=state.APPLY_MAPPING).click().run()
    assert not page.exception
    expected = importers.import_od(data, "codes.csv",
                                   columns={"origin": "a", "destination": "b", "count": "c"})
    assert not boxes(page, "error")
    assert figures_shown(page)["Commuters (n)"] == f"{expected.matrix.n:,}"
    assert_every_notice_shown(page, expected.notices)
    # The mapping stays offered, filled in, so it can be corrected.
    assert page.selectbox(key=pickers["origin"].key).value == "a"


def test_the_level_of_a_powscar_file_can_be_chosen(page):
    data = importers.EXAMPLES["powscar"].encode()
    page.selectbox(key=state.UPLOAD_FORMAT).set_value("powscar").run()
    level = page.selectbox(key=state.level_widget("powscar"))
    assert level.options == ["automatic (the importer chooses)", *importers.LEVELS["powscar"]]
    level.set_value("county").run()
    upload(page, "powscar.csv", data)
    county = importers.import_od(data, "powscar.csv", format="powscar", level="county").matrix
    ed = importers.import_od(data, "powscar.csv", format="powscar", level="ed").matrix
    assert county.n_origins != ed.n_origins
    assert figures_shown(page)["Origins"] == f"{county.n_origins:,}"
    page.selectbox(key=state.level_widget("powscar")).set_value("ed").run()
    assert figures_shown(page)["Origins"] == f"{ed.n_origins:,}"


def test_hostile_zone_names_stay_text(page):
    names = ("![pixel](http://evil.example/p.png)", "<img src=x onerror=alert(1)>")
    data = f"origin,destination,count\n{names[0]},{names[1]},3\n".encode()
    upload(page, "[x](http://evil.example).csv", data)
    assert set(page.dataframe[0].value["commute"]) == {f"{names[0]} → {names[1]}"}
    rendered = " ".join(el.value for el in [*page.markdown, *page.caption, *page.success,
                                            *page.info, *page.warning, *page.error])
    assert "](http" not in rendered and "<img" not in rendered


def test_removing_the_file_forgets_the_import(page):
    upload(page, "flows.csv", importers.EXAMPLES["long"].encode())
    assert page.session_state[state.IMPORT_ATTEMPT] is not None
    page.file_uploader(key=state.UPLOAD_FILE).set_value(None).run()
    assert not page.exception
    assert page.session_state[state.IMPORT_ATTEMPT] is None
    assert not page.metric
