"""The Places page on a published ED folder in Chromium, as a planner uses it: the folder's two
files (a WLS publish of two counties' EDs, written by the real command) put into the page's
uploaders, the answers drawn with the caption saying how their intervals were obtained, the
live-and-work shares with their ranges, the public download of the shares (no
not-for-publication line, no true column, dpcore's numbers); then the public ED zones file
uploaded beside them and the distance bands picked, with the share within 10 km. No host but the
app's is contacted (conftest's ``third_party`` fixture)."""

import io

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from dpcore.analyses import selection as sel, shares
from dpcore.data.datasets import DATA_DIR
from dpcore.interfaces import cli, published_analyses as published
from tests.browser.test_journeys import chart_title, choose, clean, open_app, settled
from ui.places import published as mode, view

pytestmark = pytest.mark.browser


def _upload(page: Page, label: str, path) -> None:
    (page.get_by_test_id("stFileUploader").filter(has_text=label)
     .locator("input[type=file]").set_input_files(str(path)))
    settled(page)


def _shares_downloaded(page: Page) -> pd.DataFrame:
    """The shares' public download, as a user clicks it: no not-for-publication line (the
    release's own answers and ranges only), the public columns."""
    with page.expect_download() as caught:
        page.get_by_role("button", name="Shares (CSV, public)").click()
    text = open(caught.value.path(), encoding="utf-8").read()
    assert not text.startswith("#")
    table = pd.read_csv(io.StringIO(text))
    assert list(table.columns) == mode.SHARE_SHOWN
    return table


def test_a_published_ed_folder_with_its_shares_and_public_download(page: Page, app_url,
                                                                   third_party, tmp_path):
    folder = tmp_path / "ed_wls"
    assert cli.main(["publish", "--dataset", "ireland_ed", "--area", "Leitrim", "--area",
                     "Sligo", "--domain-dataset", "ireland_ed", "--method", "wls",
                     "--mechanism", "discrete_laplace", "--postprocess", "base", "--epsilon",
                     "1", "--out", str(folder)]) == 0
    found = published.load(folder)
    zone = list(dict.fromkeys([*found.od.origins.ids, *found.od.destinations.ids]))[0]
    chosen = sel.zones(found.od, [zone])
    want = shares.evaluate([shares.live_and_work(found.od, chosen, side)
                            for side in ("work", "home")], None, found.values, found.interval)

    open_app(page, app_url, "Places")
    page.get_by_text(mode.SOURCES["published"]).click()
    settled(page)
    _upload(page, "release.csv", folder / "release.csv")
    _upload(page, "manifest.json", folder / "manifest.json")
    expect(chart_title(page, "Inflow, outflow, live and work: the published answers")
           ).to_be_visible(timeout=60_000)
    # one series (no true one beside it), so the interval's legend is the caption under it
    expect(page.get_by_text(f"Whiskers and intervals: {found.interval.method}.")).to_be_visible()
    expect(page.locator(".js-plotly-plot .legendtext", has_text="True")).to_have_count(0)

    table = _shares_downloaded(page)
    assert np.allclose(table["released (%)"], 100 * want["released"], equal_nan=True)
    assert np.allclose(table["high (%)"], 100 * want["high"])
    assert table["method"].str.startswith("range:").all()

    _upload(page, "Zones file (optional)", DATA_DIR / "ireland_ed.zones.csv")
    choose(page, "Analysis", view.ANALYSES["distance"])
    settled(page)
    expect(chart_title(page, "Distance bands: the published answers")
           ).to_be_visible(timeout=60_000)
    within = _shares_downloaded(page)
    assert list(within["share"]) == [f"Share of its workers' commutes under {view.SHARE_KM:g} km"]
    assert within["method"].str.startswith("range:").all() and within["low (%)"].notna().all()
    clean(page)
    assert third_party == []
