"""Tables show no toolbar "Download as CSV": Streamlit's own export writes cells as they are, so a
zone label such as ``=HYPERLINK(…)`` from an upload would become a spreadsheet formula. The app's
own downloads (neutralised by dpcore.export.safe_csv) are the way to get a table."""

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

FORMULA = '=HYPERLINK("http://evil.example","x")'


def hover_toolbar(page: Page, table) -> None:
    """Hover the table until its toolbar (with its Search button) shows."""
    table.hover()
    expect(page.get_by_test_id("stElementToolbar").filter(
        has=page.get_by_role("button", name="Search")).first).to_be_visible()


def test_tables_with_uploaded_labels_offer_no_toolbar_download(page: Page, app_url):
    page.goto(f"{app_url}/Data")
    quoted = FORMULA.replace('"', '""')
    data = f'origin,destination,count\n"{quoted}",Town,3\nTown,Town,5\n'.encode()
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files({"name": "formula.csv", "mimeType": "text/csv",
                                                   "buffer": data}))
    expect(page.get_by_text("Imported formula.csv as")).to_be_visible()
    table = page.get_by_test_id("stDataFrame").first
    expect(table).to_be_visible()
    hover_toolbar(page, table)
    expect(page.get_by_role("button", name="Download as CSV")).to_have_count(0)


def test_the_explore_table_has_the_apps_own_download_instead(page: Page, app_url):
    page.goto(f"{app_url}/Explore?dataset=toy_town&mech=laplace")
    expect(page.get_by_role("heading", name="Explore a release")).to_be_visible()
    page.get_by_role("tab", name="Scores").click()   # (the true top 10 is an HTML table now)
    expect(page.get_by_role("button", name="Table (CSV)").first).to_be_visible(timeout=90_000)
    table = page.get_by_test_id("stDataFrame").locator("visible=true").first
    table.scroll_into_view_if_needed()
    hover_toolbar(page, table)
    expect(page.get_by_role("button", name="Download as CSV")).to_have_count(0)
