"""The Plan & publish page in Chromium, with every request outside the app blocked: a searched
answer behind Find, drawn as a sentence, ★ markers on the curve and the ε ruler; then a publish
that lands in the budget ledger.

Screenshot: tests/artifacts/screenshots/plan-*.png (the docs' picture: scripts/screenshots.py).
"""

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def settled(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def no_traceback(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "Traceback" not in page.content()


def test_plan_page_finds_epsilon_offline(page: Page, app_url, network, screenshot):
    page.goto(f"{app_url}/Plan_and_publish?mech=laplace&mech=olh&mech=suppression")
    expect(page.get_by_role("heading", name="Plan & publish")).to_be_visible()
    expect(page.get_by_text("not differentially private").first).to_be_visible()
    trials = page.get_by_role("spinbutton", name="Draws per ε")
    trials.fill("5")
    trials.press("Enter")
    settled(page)
    page.get_by_role("button", name="Find ε").click()
    expect(page.get_by_text(re.compile(r"^Laplace needs ε ≈ [\d.]+ for GEH < 5"))).to_be_visible(
        timeout=120_000)
    expect(page.get_by_text("meets it whatever ε, with no privacy guarantee",
                            exact=False).first).to_be_visible()
    expect(page.locator(".js-plotly-plot text", has_text="the smallest ε meeting the target")
           .first).to_be_visible()
    expect(page.locator(".js-plotly-plot text", has_text="The ε ruler").first).to_be_visible()
    expect(page.get_by_text("Today's disclosure control beside DP")).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("plan-searched")

    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text(re.compile(r"^Published: [\d,]+ rows"))).to_be_visible()
    expect(page.get_by_role("button", name="manifest.json")).to_be_visible()
    expect(page.get_by_text("Spent so far, per label")).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("plan-published")


def test_topdown_publish_lands_in_the_ledger_and_compares(page: Page, app_url, network,
                                                           screenshot):
    """TopDown on two counties' EDs: the budget per level, Publish, the ledger entry with its
    intact chain, then flat / WLS / TopDown side by side with the chart over ε."""
    page.goto(f"{app_url}/Plan_and_publish?dataset=ireland_ed&areas=Leitrim&mech=laplace")
    expect(page.get_by_role("heading", name="Publish a release")).to_be_visible(timeout=120_000)
    page.get_by_text("TopDown (InfTDA)", exact=False).first.click()
    settled(page)
    expect(page.get_by_text("each level adds at most twice its largest noise",
                            exact=False)).to_be_visible()
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text(re.compile(r"^Published: [\d,]+ rows \(ledger entry \d+\)"))
           ).to_be_visible(timeout=120_000)
    expect(page.get_by_text("Keyed chain intact", exact=False)).to_be_visible()
    releases = page.get_by_role("spinbutton", name="Releases per method and ε")
    releases.fill("2")
    releases.press("Enter")
    settled(page)
    page.get_by_role("button", name="Compare").click()
    expect(page.locator(".js-plotly-plot text", has_text="over ε").first).to_be_visible(
        timeout=180_000)
    expect(page.get_by_role("button", name="Data (CSV) — not for publication").last
           ).to_be_visible()
    settled(page)
    no_traceback(page)
    screenshot("plan-topdown")


def test_an_upload_is_published_only_over_a_domain_the_user_names(page: Page, app_url, network,
                                                                    screenshot):
    """Upload, then Plan & publish: no Publish button until the domain's source is chosen; the
    data's own zones need the acknowledgement; declared codes publish, and the manifest says so
    (with no hash of the rows); the ledger and the manifest show the label typed, never the file's
    name."""
    page.goto(f"{app_url}/Data")
    (page.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(
         {"name": "flows.csv", "mimeType": "text/csv",
          "buffer": b"origin,destination,count\nA,B,3\nB,C,2\nC,A,1\nA,A,4\n"}))
    page.get_by_role("button", name="Use this dataset").click()
    expect(page.get_by_text("This is the current dataset on every page")).to_be_visible()
    page.locator(".st-key-app_menu").get_by_role("link", name=re.compile("^Plan")).click()
    expect(page.get_by_role("heading", name="Publish a release")).to_be_visible()
    expect(page.get_by_text("Choose where the published zones come from")).to_be_visible()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_have_count(0)
    page.get_by_text("the zones found in the data", exact=False).click()
    expect(page.get_by_text("publishes which zones have at least one commuter",
                            exact=False)).to_be_visible()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_have_count(0)
    page.get_by_text("a list of zone codes you declare").click()
    codes = page.get_by_role("textbox", name=re.compile("Zone codes"))
    codes.fill("A, B, C, D")
    codes.press("Control+Enter")
    settled(page)
    label = page.get_by_role("textbox", name=re.compile("Label for the budget ledger"))
    label.fill("Test commuters 2026")
    label.press("Enter")
    settled(page)
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text(re.compile(r"^Published: [\d,]+ rows"))).to_be_visible()
    page.get_by_text("The manifest").click()
    expect(page.get_by_text('"declared_codes"')).to_be_visible()
    manifest = page.get_by_test_id("stJson").inner_text()
    assert "sha256" not in manifest
    # the manifest names the label typed and levels by role, never the upload's file name
    assert "flows.csv" not in manifest and "Test commuters 2026" in manifest
    assert "fine level" in manifest
    expect(page.get_by_text("Keyed chain intact", exact=False)).to_be_visible()
    ledger = page.get_by_test_id("stTable").filter(has_text="Test commuters 2026")
    expect(ledger.first).to_be_visible()
    assert "flows.csv" not in ledger.first.inner_text()
    settled(page)
    no_traceback(page)
    screenshot("plan-published-upload")
