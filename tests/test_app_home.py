"""AppTest of the home page: the figures shown are dpcore's, per dataset, and follow the picker."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from ui.components import navigation, state, widgets

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def figures_shown(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def expected_figures(matrix: ODMatrix) -> dict[str, str]:
    s = matrix.summary()
    return {
        "Commuters (n)": f"{s['n']:,}", "Origins": f"{s['origins']:,}",
        "Destinations": f"{s['destinations']:,}", "Domain |X|": f"{s['domain_size']:,}",
        "Non-empty cells": f"{s['nonzero']:,}", "Empty cells": f"{s['sparsity']:.1%}",
        "Cells with count 1": f"{s['cells_count_1']:,}",
        "Cells with count < 10": f"{s['cells_under_10']:,}",
    }


@pytest.fixture
def home() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    return at


def test_default_dataset_figures_and_synthetic_label(home):
    matrix = datasets.load(state.DEFAULT_DATASET)
    assert figures_shown(home) == expected_figures(matrix)
    assert any("calibrated to published 2016 census margins" in box.value for box in home.info)
    top = home.dataframe[0].value
    assert list(top["count"]) == list(matrix.top(10)["count"])
    assert list(top["commute"]) == list(matrix.top(10)["commute"])


@pytest.mark.parametrize("key", ["toy_town", "ireland_ed"])
def test_switching_dataset_changes_the_figures(home, key):
    before = figures_shown(home)
    home.selectbox(key=state.DATASET_PICKER).set_value(key).run()
    assert not home.exception
    matrix = datasets.load(key)
    assert figures_shown(home) == expected_figures(matrix) != before
    assert home.session_state[state.CURRENT_DATASET] == key
    assert list(home.dataframe[0].value["commute"]) == list(matrix.top(10)["commute"])
    assert any(datasets.DATASETS[key].source in box.value for box in home.info)


def test_the_exposure_sentence_quotes_the_small_cell_counts(home):
    home.selectbox(key=state.DATASET_PICKER).set_value("ireland_ed").run()
    summary = datasets.load("ireland_ed").summary()
    sentence = next(md.value for md in home.markdown if "exactly one commuter" in md.value)
    assert f"**{summary['cells_count_1']:,}**" in sentence
    assert f"**{summary['cells_under_10']:,}**" in sentence


def test_data_without_small_cells_says_so():
    zones = ZoneSet.from_ids(["North", "South"])
    big = ODMatrix.from_pairs("big", zones, zones, [0, 1], [1, 0], [40, 25])
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state[state.UPLOADED_MATRIX] = big
    at.session_state[state.UPLOADED_FILENAME] = "big.csv"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.run()
    assert figures_shown(at)["Cells with count < 10"] == "0"
    assert any("No origin–destination cell here holds fewer than ten" in md.value
               for md in at.markdown)


def hostile_upload() -> ODMatrix:
    """A tiny upload whose zone names try Markdown, HTML and a Streamlit directive."""
    names = ["![pixel](http://evil.example/p.png)", "<script>alert(1)</script>", ":red[Big]"]
    zones = ZoneSet.from_ids(names)
    return ODMatrix.from_pairs("upload", zones, zones, [0, 1, 2], [1, 2, 0], [1, 5, 12])


def test_the_session_upload_is_offered_and_shown_without_a_synthetic_label():
    at = AppTest.from_file(APP, default_timeout=30)
    upload = hostile_upload()
    at.session_state[state.UPLOADED_MATRIX] = upload
    at.session_state[state.UPLOADED_FILENAME] = "[click](http://evil.example).csv"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.run()
    assert not at.exception
    picker = at.selectbox(key=state.DATASET_PICKER)
    assert picker.value == state.UPLOADED
    assert picker.options[picker.index] == "Your upload"
    # the full name under the picker, escaped (no link)
    (full,) = [c.value for c in at.caption if "evil" in c.value]
    assert full.startswith("Your upload") and "\\[click\\]" in full
    assert figures_shown(at) == expected_figures(upload)
    assert not at.info  # no "synthetic" label on the user's own data
    # Zone names reach the page only through the dataframe, verbatim.
    assert set(at.dataframe[0].value["commute"]) == set(upload.cell_labels())
    rendered = " ".join(el.value for el in [*at.markdown, *at.caption, *at.title])
    assert "](http" not in rendered and "<script>" not in rendered and ":red[" not in rendered


def test_a_stale_upload_choice_falls_back_to_the_default():
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED  # chosen, but no upload is kept
    at.run()
    assert not at.exception
    assert at.selectbox(key=state.DATASET_PICKER).value == state.DEFAULT_DATASET
    assert figures_shown(at) == expected_figures(datasets.load(state.DEFAULT_DATASET))


def test_links_to_every_page_that_exists(home):
    linked = {link.proto.page for link in home.main.get("page_link")}
    pages = {re.sub(r"^\d+_", "", path.stem) for path in (ROOT / "pages").glob("*.py")}
    assert "Data" in pages
    assert linked == pages - {"Home"}


def test_navigation_lists_every_page_under_its_old_url():
    """app.py's st.navigation: every file in pages/ once, in file order, at the URL path Streamlit
    derived from its name before (links in docs and saved URLs use them), the home page first."""
    files = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "pages").glob("*.py"))
    assert [info.path for info in navigation.PAGES] == files
    assert navigation.HOME.title == "Home" and navigation.HOME.url_path == ""
    for info in navigation.PAGES[1:]:
        assert info.url_path == re.sub(r"^\d+_", "", Path(info.path).stem)
    assert "Plan & publish" in [info.title for info in navigation.PAGES]


def test_the_app_draws_its_menu_of_every_page_in_order(home):
    """The sidebar menu is the app's own (st.page_link per page; Streamlit's automatic one is off in
    config.toml): every page once, in navigation order, with its title."""
    menu = home.sidebar.get("page_link")
    assert [link.proto.label for link in menu] == [info.title for info in navigation.PAGES]
    assert [link.proto.page for link in menu] == [info.url_path for info in navigation.PAGES]


def test_the_automatic_page_list_is_off():
    """Without this setting a first visit through a deep link would show Streamlit's own list of
    pages/ (starting with "app") beside the app's menu."""
    config = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    assert re.search(r"^showSidebarNavigation\s*=\s*false", config, re.M)


def test_where_next_says_what_each_page_does_without_repeating_its_name(home):
    """Each link's description is a whole paragraph (not a line cut mid-sentence) and does not
    start with the page's own name ("Tradeoffs / Tradeoffs: how …")."""
    captions = [caption.value for caption in home.caption]
    for info in navigation.PAGES[1:]:
        summary = widgets._page_summary(ROOT / info.path, info.title)
        assert summary in captions
        assert summary.endswith("."), summary
        assert not summary.lower().startswith(info.title.lower()), summary
