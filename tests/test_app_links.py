"""A link whose value cannot be used says so in one line (parameter, value, what is valid, what is
used instead), and the page runs with the value it names (issue 11)."""

import re

import pytest

from tests.app_pages import open_page
from ui.components.controls import KEYS

EXPLORE = "../pages/2_Explore.py"


def raw_notices(at) -> list[str]:
    """The link notices as sent (Markdown)."""
    return [w.value for w in at.warning if w.value.startswith("The link's value")]


def notices(at) -> list[str]:
    """The link notices as read on screen (the Markdown escapes removed)."""
    return [notice.replace("\\", "") for notice in raw_notices(at)]


@pytest.mark.parametrize("query, words, setting", [
    ({"eps": "1e-17"}, ["eps=1e-17", "ε in [1e-06, 20]", "using 1 instead"],
     ("epsilon", 1.0)),
    ({"eps": "abc"}, ["eps=abc", "ε in [1e-06, 20]", "using 1 instead"],
     ("epsilon", 1.0)),
    ({"seed": "-3"}, ["seed=-3", "a whole number in [0, 9007199254740991]", "using 0 instead"],
     ("seed", 0)),
    ({"mech": ["laplace", "nope"]}, ["mech=nope", "mechanism keys: laplace", "using laplace"],
     ("mechanisms", ("laplace",))),
    ({"opt": "hm.t=999"}, ["opt=hm.t=999", "hm.t one of auto, 1, 2,", "using hm.t=auto"], None),
    # Issue 40: float("1_0") and int("1_0") are 10; a link's numbers are read the plain way.
    ({"eps": "1_0"}, ["eps=1_0", "ε in [1e-06, 20]", "using 1 instead"], ("epsilon", 1.0)),
    ({"seed": "1_0"}, ["seed=1_0", "a whole number in [0, 9007199254740991]", "using 0 instead"],
     ("seed", 0)),
    ({"eps": "٢"}, ["eps=٢", "ε in [1e-06, 20]", "using 1 instead"], ("epsilon", 1.0)),
])
def test_a_run_setting_out_of_range_is_named_with_its_range_and_what_is_used(query, words,
                                                                              setting):
    at = open_page(EXPLORE, dataset="ireland_county", **({"mech": "laplace"} | query))
    found = notices(at)
    assert len(found) == 1, found
    for word in words:
        assert word in found[0], (word, found[0])
    if setting:
        name, value = setting
        assert at.session_state[KEYS[name].value] == value
    assert at.get("plotly_chart")  # the page ran with the value named


def test_a_page_setting_out_of_range_is_named_and_the_default_used():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace", k="9999", scope="7")
    found = notices(at)
    assert len(found) == 2, found
    assert any("k=9999" in n and "a whole number from 5 to 50" in n and "using 30 instead" in n
               for n in found)
    assert any("scope=7" in n and "one of 100, 1000" in n for n in found)
    assert at.slider(key="kept_widget_explore_k").value == 30
    bars = [f for f in at.get("plotly_chart") if "The 30 busiest commutes" in f.proto.spec]
    assert bars


def test_a_page_setting_with_digit_grouping_is_named_and_the_default_used():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace", k="2_0")
    found = notices(at)
    assert len(found) == 1 and "k=2_0" in found[0] and "using 30 instead" in found[0], found
    assert at.slider(key="kept_widget_explore_k").value == 30


def test_an_unknown_dataset_in_a_link_is_named():
    at = open_page(EXPLORE, dataset="atlantis", mech="laplace")
    found = notices(at)
    assert len(found) == 1 and "dataset=atlantis" in found[0]
    assert "ireland_county" in found[0]


def test_a_valid_link_gives_no_notice_and_a_hostile_one_stays_inert():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace", eps="2", k="10")
    assert not notices(at)
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace",
                   eps="![x](http://e.example/a.png)" + "9" * 500)
    (notice,) = raw_notices(at)
    assert not re.search(r"(?<!\\)\]\(http|(?<!\\)!\[", notice)  # only escaped forms
    assert "![x](http" in notices(at)[0]  # shown as text
    assert len(notice) < 400  # the value is cut short


def test_mechanisms_typed_comma_separated_in_a_link_are_read_like_repeated_ones():
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace, oue,hr")
    assert not notices(at)
    assert at.session_state[KEYS["mechanisms"].value] == ("laplace", "oue", "hr")
    at = open_page(EXPLORE, dataset="ireland_county", mech="laplace,nope")
    (notice,) = notices(at)
    assert "mech=nope" in notice and "using laplace instead" in notice
