"""Issue 29's rule on the analysis pages: a download holding true counts, or error measured
against them, is for the publisher's eyes only, so its button ends "— not for publication" and
the file's first line says so (:mod:`dpcore.confidential`), as on Plan & publish.

Every download button of Explore (each tab), Tradeoffs (after a sweep) and the Flow map is
pressed; the only ones allowed to be plain are listed in ``PUBLIC`` with the reason.
"""

from __future__ import annotations

import html
import io
import zipfile
from pathlib import Path

import pytest

from dpcore import confidential
from tests.app_pages import run_page
from tests.downloads import PRIVATE_CSV_LINE, Downloads
from ui.components import charts

PAGES = Path(__file__).resolve().parent.parent / "pages"
#: Downloads that hold no true count and no error against the truth.
PUBLIC = {"tradeoffs_times_csv": "release times per mechanism",
          "tradeoffs_times_html": "release times per mechanism"}
PRIVATE_STARTS = (PRIVATE_CSV_LINE, f"<!-- {confidential.FIRST_LINE} -->".encode())


def pressed(at, downloads: Downloads) -> dict[str, tuple[str, bytes]]:
    """Every download button of the latest run: key → (label, bytes)."""
    return {button.proto.id.rsplit("-", 1)[-1]: (button.proto.label, downloads.data(button))
            for button in at.get("download_button")}


def assert_private(found: dict[str, tuple[str, bytes]]) -> None:
    for key, (label, content) in found.items():
        if key in PUBLIC:
            assert not content.startswith(PRIVATE_STARTS), key
            continue
        assert label.endswith(charts.PRIVATE_SUFFIX), (key, label)
        if content.startswith(b"PK"):  # a zip: a notice first, then each file marked
            with zipfile.ZipFile(io.BytesIO(content)) as archive:
                names = archive.namelist()
                assert names[0] == "NOT-FOR-PUBLICATION.txt", names
                for name in names[1:]:
                    assert archive.read(name).startswith(PRIVATE_STARTS), name
            continue
        assert content.startswith(PRIVATE_STARTS), (key, content[:80])


EXPLORE_TABS = {"What happened": set(),
                "Ordering": {"explore_ordering_csv", "explore_ordering_html"},
                "Heat map": {"explore_heatmap_csv", "explore_heatmap_html"},
                "True top 10": {"explore_top10_csv"},
                "Scores": {"explore_scores_csv"},
                "Heavy hitters": {"explore_hh_chart_csv", "explore_hh_chart_html",
                                  "explore_hh_pem_csv", "explore_hh_treehist_csv"},
                "Downloads": {"release_download_laplace", "release_download_oue"}}


@pytest.mark.parametrize("tab", list(EXPLORE_TABS))
def test_explore_downloads_are_marked_not_for_publication(monkeypatch, tab):
    downloads = Downloads(monkeypatch)
    at = run_page(str(PAGES / "2_Explore.py"),
                  {"mech": ["laplace", "oue"], "tab": tab, "hh_k": "8"}, "toy_town", {},
                  timeout=240)
    found = pressed(at, downloads)
    # the bars above the tabs (truth beside release), then the tab's own
    assert set(found) == {"explore_bars_csv", "explore_bars_html"} | EXPLORE_TABS[tab]
    assert_private(found)
    if tab == "Downloads":  # true_count beside released_count
        body = found["release_download_laplace"][1][len(PRIVATE_CSV_LINE):]
        assert body.startswith(b"origin,destination,true_count,released_count")
    assert any(charts.PRIVATE_CAPTION in caption.value for caption in at.caption)


def small_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report.html", "<html><body><h1>Report</h1></body></html>")
        archive.writestr("table_5.1.csv", "a,b\r\n1,2\r\n")
    return buffer.getvalue()


def test_tradeoffs_downloads_are_marked_not_for_publication(monkeypatch):
    """The sweeps and heavy-hitter recall run; the thesis report's computation is replaced by a
    small zip of the same kind (it is tested in test_thesis.py and, built from the page, in
    test_app_tradeoffs_cluster.py): what is checked here is the page's marking of it."""
    from report import thesis_html

    from dpcore.evaluation import thesis
    monkeypatch.setattr(thesis, "run", lambda *args, **kwargs: type(
        "Chapter", (), {"seconds": 1.0})())
    monkeypatch.setattr(thesis_html, "zipped", lambda chapter: small_zip())
    downloads = Downloads(monkeypatch)
    at = run_page(str(PAGES / "3_Tradeoffs.py"), {"mech": "laplace", "grid": "1",
                                                   "trials": "1", "hh_k": "8"}, "toy_town", {},
                  timeout=240)
    at.button(key="tradeoffs_epsilon_run").click().run()
    at.button(key="tradeoffs_hh_run").click().run()
    at.button(key="thesis_report_build").click().run()
    assert not at.exception, at.exception
    found = pressed(at, downloads)
    assert {"tradeoffs_epsilon_csv", "tradeoffs_epsilon_html",
            "tradeoffs_epsilon_every_release_csv", "tradeoffs_hh_chart_csv",
            "tradeoffs_hh_every_run_csv", "thesis_report_download", *PUBLIC} <= set(found)
    assert_private(found)


def test_flow_map_downloads_are_marked_not_for_publication(monkeypatch):
    downloads = Downloads(monkeypatch)
    at = run_page(str(PAGES / "4_Flow_map.py"), {"mech": ["laplace"]}, "toy_town", {},
                  timeout=240)
    found = pressed(at, downloads)
    maps = [key for key in found if key.endswith("_html")]
    assert maps and "flowmap_map_csv" in found
    assert_private(found)
    for key in maps:  # the banner is inside the page's body, where a reader sees it
        page = found[key][1].decode()
        body = page[page.index("<body>"):]
        assert body.startswith("<body><p") and html.escape(confidential.FIRST_LINE) in body[:400]


def test_a_zip_is_marked_file_by_file():
    """The thesis report (a zip of report.html and CSVs) carries the line in each file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report.html", "<html><body><h1>Report</h1></body></html>")
        archive.writestr("table.csv", "a,b\r\n1,2\r\n")
        archive.writestr("figure.png", b"\x89PNG")
    with zipfile.ZipFile(io.BytesIO(confidential.zip_marked(buffer.getvalue()))) as marked:
        assert marked.namelist() == ["NOT-FOR-PUBLICATION.txt", "report.html", "table.csv",
                                     "figure.png"]
        assert marked.read("NOT-FOR-PUBLICATION.txt").decode().startswith(
            confidential.FIRST_LINE)
        assert marked.read("table.csv") == PRIVATE_CSV_LINE + b"a,b\r\n1,2\r\n"
        page = marked.read("report.html").decode()
        assert page.startswith(f"<!-- {confidential.FIRST_LINE} -->")
        assert "<body><p" in page and page.endswith("<h1>Report</h1></body></html>")
        assert marked.read("figure.png") == b"\x89PNG"


@pytest.mark.parametrize("page, query, stem", [
    ("6_Plan_and_publish.py", {"mech": ["laplace", "grr"], "pp": "base", "target": "rmse"},
     "plan_ruler"),
    ("5_Learn.py", {"lesson": "epsilon"}, "learn_ruler")])
def test_the_public_epsilon_ruler_is_not_marked(monkeypatch, page, query, stem):
    """Issue 42: epsilon_ruler.csv holds the public deployed budgets and nothing computed from
    the confidential table, yet Plan labelled it "not for publication". Its CSV is plain (the
    deployments table itself); on Plan the figure, which also draws the ε the plan needs, stays
    marked."""
    from dpcore.export import safe_csv
    from dpcore.theory import deployments

    downloads = Downloads(monkeypatch)
    at = run_page(str(PAGES / page), query, "toy_town", {}, timeout=240)
    found = pressed(at, downloads)
    label, content = found[f"{stem}_csv"]
    assert not label.endswith(charts.PRIVATE_SUFFIX)
    public = safe_csv(deployments.ruler())
    assert content == (public.encode() if isinstance(public, str) else public)
    label, content = found[f"{stem}_html"]
    marked = stem == "plan_ruler"
    assert label.endswith(charts.PRIVATE_SUFFIX) == marked
    assert content.startswith(PRIVATE_STARTS) == marked
    if marked:                                   # the plan's own ε is drawn on it
        fig = next(c for c in at.get("plotly_chart") if "ε ruler" in c.proto.spec)
        assert "needs" in fig.proto.spec
