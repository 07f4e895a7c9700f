"""Pages on a domain that fits densely but is released sparsely where that is exact and faster
(:func:`dpcore.release.sparse_route`: the ED level): the same sections run, and what needs every
cell's released value says which releases it leaves out instead of failing."""

from pathlib import Path

import pytest

from tests.app_pages import open_page, text

PAGES = Path(__file__).resolve().parent.parent / "pages"
EXPLORE, FLOW_MAP = str(PAGES / "2_Explore.py"), str(PAGES / "4_Flow_map.py")
ED = {"dataset": "ireland_ed", "level": "as_loaded"}


@pytest.mark.slow
def test_explore_mixes_sparse_and_dense_releases_at_ed_level():
    at = open_page(EXPLORE, mech=["oue", "laplace"], **ED)
    captions = " ".join(c.value for c in at.caption)
    oue = "Optimised unary encoding"
    assert f"Sparse releases: {oue} released only the 292,596 non-empty" in captions
    assert "Optimised unary encoding:" in text(at) and "Laplace:" in text(at)
    assert not at.warning
    at.query_params["tab"] = "Heat map"
    at.run()
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert f"Not in the heat map: {oue}" in captions   # Laplace (dense) is still shown there


@pytest.mark.slow
def test_flow_map_of_a_sparse_release_at_ed_level():
    at = open_page(FLOW_MAP, mech=["oue"], **ED)
    assert not at.warning
    # no roll-up of a sparse release
    assert not [t for t in at.toggle if t.key == "kept_widget_flowmap_roll_up"]
    at.radio(key="kept_widget_flowmap_view").set_value("released").run()
    assert not at.exception and any("lines drawn" in c.value for c in at.caption)
