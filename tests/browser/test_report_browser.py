"""The thesis report (``reproduce-thesis``) opened from disk in Chromium: every figure draws from the
inlined plotly.js and the page asks no server for anything.

``DPCORE_REPORT=path/to/report.html`` checks that report instead of a small one built here (the
figure in docs/SWEEPS_AND_THESIS_REPORT.md is a screenshot of the default run's report: set
``DPCORE_UPDATE_SCREENSHOT=1`` too, and the first ED figure is saved to
docs/thesis-report-figure.png).
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dpcore.data import datasets
from dpcore.evaluation import thesis
from report import thesis_html

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def report_path(tmp_path_factory) -> Path:
    if os.environ.get("DPCORE_REPORT"):
        return Path(os.environ["DPCORE_REPORT"]).resolve()
    chapter = thesis.run(datasets.load("ireland_county"), epsilons=(0.5, 2, 5), trials=2, seed=1,
                         n_jobs=1, source=datasets.DATASETS["ireland_county"])
    return thesis_html.write(chapter, tmp_path_factory.mktemp("report"))


def test_report_draws_every_figure_offline(page: Page, report_path, screenshot):
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report_path.as_uri())
    figures = page.locator(".js-plotly-plot")
    expected = report_path.read_text(encoding="utf-8").count('class="plotly-graph-div"')
    expect(figures).to_have_count(expected)
    for index in range(expected):  # each drew its axes (plotly ran)
        expect(figures.nth(index).locator(".main-svg").first).to_be_attached()
    expect(page.locator("table.data").first).to_be_visible()
    assert [url for url in requests if not url.startswith("file://")] == []
    screenshot("thesis-report")
    if os.environ.get("DPCORE_UPDATE_SCREENSHOT"):
        section = page.locator("section[id=\"figure_5.13\"]")
        target = section if section.count() else page.locator("section").first
        target.screenshot(path=str(DOCS / "thesis-report-figure.png"))
