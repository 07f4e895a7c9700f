"""One state shared by every page (issue 42), in AppTest: a page change gives every control the
value the user set (Streamlit gives a widget a new identity on each page), pages without run
controls keep the shared settings in their URL, the home page honours ``?dataset=``, Learn draws
the shared ε, and a setting missing from a session falls back to its documented default, said
in one line. The same in Chromium, through the menu's links: tests/browser/test_menu_browser.py."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_pages import epsilon_box, run_page
from ui.components import state
from ui.components.viewstate import current_key
from ui.components.controls import (DEFAULT_MECHANISMS, EPSILON_TYPED, FROM_URL_DONE, KEYS,
                                    nearest_step)

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
#: Settings a user chose: a typed ε between two slider steps, two mechanisms not the defaults.
CHOSEN = {KEYS["epsilon"].value: 2.7, KEYS["mechanisms"].value: ("grr", "laplace"),
          FROM_URL_DONE: True, state.CURRENT_DATASET: "toy_town"}


def shown(at: AppTest) -> dict:
    """The shared settings as the page's controls show them (None: not drawn)."""
    def value(kind, key):
        found = [w for w in at.get(kind) if w.key == key]
        return found[0].value if found else None
    mechanisms = value("multiselect", KEYS["mechanisms"].widget)
    return {"mechanisms": tuple(mechanisms) if mechanisms is not None else
            value("selectbox", KEYS["mechanisms"].widget + "_single"),
            "slider": value("select_slider", current_key(at.session_state, KEYS["epsilon"].widget)),
            "typed": value("number_input", current_key(at.session_state, EPSILON_TYPED)),
            "dataset": value("selectbox", state.DATASET_PICKER)}


def linked(at: AppTest, name: str) -> list[str]:
    """Every value of URL parameter ``name`` (AppTest keeps a lone value as a string)."""
    value = at.query_params.get(name, [])
    return [value] if isinstance(value, str) else list(value)


def app(page: str = "0_Home", session: dict | None = None, **query) -> AppTest:
    """The app (``app.py``, with its menu) run on ``pages/<page>.py``."""
    at = AppTest.from_file(APP, default_timeout=240)
    for key, value in (session or {}).items():
        at.session_state[key] = value
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    if page != "0_Home":
        at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def test_every_page_change_between_pages_with_run_controls_shows_the_users_settings():
    at = app(session=CHOSEN)
    expected = {"mechanisms": ("grr", "laplace"), "slider": nearest_step(2.7), "typed": 2.7,
                "dataset": "toy_town"}
    # Explore → Plan & publish → Explore → Flow map → Explore: each change of page, both ways
    # (Flow map draws one mechanism, the first of the user's).
    for page in ("2_Explore", "6_Plan_and_publish", "2_Explore", "4_Flow_map", "2_Explore"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        want = expected | ({"mechanisms": "grr"} if page == "4_Flow_map" else {})
        assert shown(at) == want, page
        assert linked(at, "mech") == ["grr", "laplace"] and linked(at, "eps") == ["2.7"]


@pytest.mark.parametrize("page", ["0_Home", "1_Data", "5_Learn", "7_Classroom"])
def test_a_page_without_run_controls_keeps_the_shared_settings_in_its_url(page):
    at = app(page, CHOSEN)
    assert linked(at, "mech") == ["grr", "laplace"]
    assert linked(at, "eps") == ["2.7"] and linked(at, "dataset") == ["toy_town"]
    assert "hm.t=auto" not in linked(at, "opt")  # only the chosen mechanisms'
    # The menu's links (and Home's "Where next") carry them: a link opened in a new tab keeps them.
    links = at.get("page_link")
    assert len(links) >= 8
    assert all("mech=grr&mech=laplace" in link.proto.query_string and
               "eps=2.7" in link.proto.query_string for link in links)


def test_the_home_page_honours_the_dataset_in_its_link():
    at = app(dataset="ireland_ed")
    assert at.selectbox(key=state.DATASET_PICKER).value == "ireland_ed"
    assert at.session_state[state.CURRENT_DATASET] == "ireland_ed"


def test_learn_draws_the_shared_epsilon():
    at = run_page(str(ROOT / "pages" / "5_Learn.py"), {"lesson": "epsilon"}, None, CHOSEN)
    assert shown(at)["slider"] == nearest_step(2.7) and shown(at)["typed"] == 2.7
    assert "after an ε = 2.7 release" in "\n".join(m.value for m in at.markdown)
    epsilon_box(at).set_value(4.0).run()
    assert at.session_state[KEYS["epsilon"].value] == 4.0 and linked(at, "eps") == ["4"]


@pytest.mark.parametrize("name, said, drawn", [
    ("epsilon", "“ε” was missing from this session; using its default (1)",
     {"slider": 1.0, "typed": 1.0}),
    ("mechanisms", "“mechanisms” was missing from this session; using its default "
                   f"({', '.join(DEFAULT_MECHANISMS)})", {"mechanisms": DEFAULT_MECHANISMS})])
def test_a_setting_missing_from_the_session_falls_back_to_its_default_and_says_so(name, said,
                                                                                   drawn):
    session = {k: v for k, v in CHOSEN.items() if k != KEYS[name].value}
    at = run_page(str(ROOT / "pages" / "2_Explore.py"), {}, None, session)
    assert {k: shown(at)[k] for k in drawn} == drawn
    assert any(said in c.value for c in at.caption), [c.value for c in at.caption]
