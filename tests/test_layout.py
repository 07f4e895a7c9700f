"""The house as the README describes it: the design card's top level, ``ui/`` grouped by screen,
imports flowing one way, and no product module citing a file the repository lacks."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "dpcore").rglob("*.py")),
           *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "report").rglob("*.py"))]
SCREENS = ("upload", "explore", "tradeoffs", "maps", "learn", "publish", "classroom")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_top_level_is_the_design_cards():
    for name in ("app.py", "pages", "dpcore", "data", "tests", "requirements.txt", "README.md"):
        assert (ROOT / name).exists(), name
    assert not (ROOT / "app_pages").exists()
    assert len(list((ROOT / "pages").glob("*.py"))) == 8


def test_ui_is_grouped_by_screen_with_the_shared_pieces_in_one_place():
    assert sorted(p.name for p in (ROOT / "ui").glob("*.py")) == ["__init__.py"]
    for package in ("components", *SCREENS):
        init = ROOT / "ui" / package / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init


def test_imports_flow_one_way():
    for path in PRODUCT:
        modules = imported_modules(path)
        where = path.relative_to(ROOT).as_posix()
        if where.startswith(("dpcore/", "report/")):
            assert not {m for m in modules if m.split(".")[0] in ("streamlit", "ui")}, where
        if where.startswith("ui/components/"):
            assert not {m for m in modules if m.split(".")[:2][-1] in SCREENS and m.startswith("ui.")}, where


def test_no_product_module_cites_a_file_the_repository_lacks():
    """A docstring pointing readers at ``SOMETHING.md`` must point at a file that is here."""
    for path in PRODUCT:
        for cited in re.findall(r"\b([\w/.-]+\.md)\b", path.read_text(encoding="utf-8")):
            name = Path(cited).name
            found = list(ROOT.glob(f"**/{name}"))
            assert found, f"{path.relative_to(ROOT)} cites {cited}, which is not in the repository"


def test_every_page_draws_the_apps_menu_first():
    """Streamlit runs a deep-linked page without app.py until some session has run st.navigation,
    so the menu is drawn by each page (ui/components/navigation.py), right after its page config,
    its links carrying the settings every page shares (controls.keep, issue 42)."""
    for path in sorted((ROOT / "pages").glob("*.py")):
        calls = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                 if line.startswith(("st.", "navigation."))]
        assert calls[0].startswith("st.set_page_config("), path.name
        assert calls[1] in ("navigation.menu(controls.keep())", "navigation.menu(shared)"), \
            path.name
