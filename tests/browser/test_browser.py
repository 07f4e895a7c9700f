"""The real app in Chromium: home page, dataset switch, a valid and a malformed upload.

Screenshots go to tests/artifacts/screenshots/ (the docs' pictures: scripts/screenshots.py).
"""

import pytest
from playwright.sync_api import Page, expect

from dpcore.data import datasets, importers
from ui.components import widgets
from tests.browser.conftest import ROOT

pytestmark = pytest.mark.browser

VALID = ROOT / "tests" / "fixtures" / "long_coordinates.csv"
MALFORMED = ROOT / "tests" / "malformed" / "count_negative.csv"


def metric(page: Page, label: str):
    """The value element of the st.metric with this label."""
    return (page.get_by_test_id("stMetric").filter(has_text=label)
            .get_by_test_id("stMetricValue"))


def choose_dataset(page: Page, title: str) -> None:
    page.get_by_role("combobox", name="Dataset").click()
    page.get_by_role("option", name=title).click()


def home_drawn(page: Page) -> None:
    """Wait for the end of the home page (the table and the links), so screenshots are whole."""
    expect(page.get_by_test_id("stDataFrame")).to_be_visible()
    main = page.get_by_test_id("stMainBlockContainer")
    expect(main.get_by_test_id("stPageLink-NavLink").filter(has_text="Data")).to_be_visible()


def no_traceback(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "Traceback" not in page.content()


def test_home_page_shows_the_default_dataset_and_switches(page: Page, app_url, screenshot):
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Commuting Privacy Lab")).to_be_visible()
    county = datasets.load("ireland_county")
    expect(metric(page, "Commuters (n)")).to_have_text(f"{county.n:,}")
    expect(metric(page, "Domain |X|")).to_have_text(f"{county.domain_size:,}")
    expect(page.get_by_text("calibrated to published 2016 census margins").first).to_be_visible()
    home_drawn(page)
    no_traceback(page)
    screenshot("home-ireland-county")

    ed = datasets.load("ireland_ed")
    choose_dataset(page, widgets.picker_label("ireland_ed"))
    expect(metric(page, "Domain |X|")).to_have_text(f"{ed.domain_size:,}")
    expect(metric(page, "Cells with count 1")).to_have_text(f"{ed.summary()['cells_count_1']:,}")
    home_drawn(page)
    no_traceback(page)
    screenshot("home-ireland-ed")

    toy = datasets.load("toy_town")
    choose_dataset(page, widgets.picker_label("toy_town"))
    expect(metric(page, "Commuters (n)")).to_have_text(f"{toy.n:,}")
    expect(page.get_by_text("invented for teaching").first).to_be_visible()
    home_drawn(page)
    screenshot("home-toy-town")


def upload(page: Page, file) -> None:
    """Put a file (a path, or a Playwright file payload dict) into the "Commuting file" uploader."""
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(file if isinstance(file, dict) else str(file)))


def test_a_valid_upload_is_previewed_and_becomes_the_current_dataset(page: Page, app_url,
                                                                      screenshot):
    page.goto(f"{app_url}/Data")
    expect(page.get_by_role("heading", name="Your data")).to_be_visible()
    matrix = importers.import_od(VALID.read_bytes(), VALID.name).matrix
    upload(page, VALID)
    expect(page.get_by_text(f"Imported {VALID.name} as")).to_be_visible()
    expect(metric(page, "Commuters (n)")).to_have_text(f"{matrix.n:,}")
    expect(page.get_by_role("button", name="Use this dataset")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    no_traceback(page)
    screenshot("data-valid-upload")

    page.get_by_role("button", name="Use this dataset").click()
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible()
    page.get_by_role("link", name="See it on the home page").click()
    expect(page.get_by_role("heading", name="Commuting Privacy Lab")).to_be_visible()
    expect(page.get_by_role("combobox", name="Dataset")).to_have_value("Your upload")
    expect(metric(page, "Commuters (n)")).to_have_text(f"{matrix.n:,}")
    home_drawn(page)
    no_traceback(page)
    screenshot("home-with-upload")


def test_a_malformed_upload_shows_a_specific_error(page: Page, app_url, screenshot):
    page.goto(f"{app_url}/Data")
    with pytest.raises(importers.ImportFailed) as failure:
        importers.import_od(MALFORMED.read_bytes(), MALFORMED.name)
    [error] = failure.value.errors
    upload(page, MALFORMED)
    alert = page.get_by_test_id("stAlert").filter(has_text=error.message)
    expect(alert).to_be_visible()
    expect(alert).to_contain_text(error.location)
    expect(alert).to_contain_text(error.fix)
    expect(page.get_by_role("button", name="Use this dataset")).to_have_count(0)
    no_traceback(page)
    screenshot("data-malformed-upload")


def test_hostile_names_are_shown_as_text_not_markup(page: Page, app_url, screenshot):
    """Markdown/HTML in a file name and zone names must not become links, images or tags."""
    page.goto(f"{app_url}/Data")
    name = "[click](http://evil.example) <b>x</b>.csv"
    data = (b"origin,destination,count\n"
            b"\"![pixel](http://evil.example/p.png)\",<img src=x onerror=alert(1)>,3\n")
    upload(page, {"name": name, "mimeType": "text/csv", "buffer": data})
    expect(page.get_by_test_id("stAlert").filter(has_text=f"Imported {name} as")).to_be_visible()
    expect(page.locator("a[href*='evil.example']")).to_have_count(0)
    expect(page.locator("img[src*='evil.example'], img[src='x']")).to_have_count(0)
    expect(page.get_by_test_id("stMain").locator("b", has_text="x")).to_have_count(0)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    no_traceback(page)
    screenshot("data-hostile-names")
