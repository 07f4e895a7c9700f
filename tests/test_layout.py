"""The house as docs/ARCHITECTURE.md describes it: the design card's top level, ``ui/`` grouped by screen,
imports flowing one way, and no product module citing a file the repository lacks."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "dpcore").rglob("*.py")),
           *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "report").rglob("*.py"))]
SCREENS = ("upload", "explore", "places", "tradeoffs", "maps", "learn", "publish", "classroom")
#: The layers, lowest first: a module imports only from its own layer and the ones below. Each
#: entry names its modules by prefix (``dpcore`` itself exactly: its ``__init__`` re-exports the
#: data model).
LAYERS = (
    # text made inert, the seeding rule, formula-safe and not-for-publication files, BLAS and
    # collector tuning: what everything may use, importing nothing of the product
    ("base", ("dpcore.text", "dpcore.seeding", "dpcore.export", "dpcore.confidential",
              "dpcore.blas", "dpcore.collector")),
    ("data", ("dpcore.data", "dpcore")),
    ("mechanisms", ("dpcore.mechanisms",)),
    # the ranges of every run setting and typed grids (ε's range is declared with the mechanisms)
    ("settings", ("dpcore.limits", "dpcore.grids")),
    # one release scored against the truth: the pipeline scores with it, the pages show it
    ("scoring", ("dpcore.scoring",)),
    ("release", ("dpcore.release",)),
    # sweeps, summaries, flows, the planner, heavy hitters, the thesis report's data
    ("evaluation", ("dpcore.evaluation",)),
    # privacy theory and the Learn page's computations (which use the heavy-hitter protocols)
    ("theory", ("dpcore.theory",)),
    # the planner's questions about places (inflow, distance, A → B) with their margins of error
    ("analyses", ("dpcore.analyses",)),
    # the thesis report drawn (plotly), for the command line and the page
    ("report", ("report",)),
    # the command line, publishing and its methods compared, the classroom store
    ("interfaces", ("dpcore.interfaces", "dpcore.__main__")),
    ("ui", ("ui",)),
    ("pages", ("pages", "app")),
)


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
    assert len(list((ROOT / "pages").glob("*.py"))) == 9


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


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of a dotted module name (longest prefix wins), else None."""
    found, length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = prefix == "dpcore"
            if (module == prefix or (not exact and module.startswith(prefix + "."))) \
                    and len(prefix) > length:
                found, length = index, len(prefix)
    return found


def dependencies(path: Path) -> set[str]:
    """The modules ``path`` imports, lazy ones included; ``from package import module`` names
    the module, not the package (``from dpcore import release`` depends on the pipeline, not on
    what ``dpcore/__init__.py`` re-exports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            folder = ROOT.joinpath(*node.module.split("."))
            for alias in node.names:
                submodule = (folder / f"{alias.name}.py").exists() or (folder / alias.name).is_dir()
                names.add(f"{node.module}.{alias.name}" if submodule else node.module)
    return names


def upward_imports(module: str, path: Path) -> list[str]:
    mine = layer_of(module)
    assert mine is not None, f"{module} is in no layer: add it to LAYERS"
    return [f"{module} ({LAYERS[mine][0]}) imports {name} ({LAYERS[layer_of(name)][0]})"
            for name in sorted(dependencies(path))
            if layer_of(name) is not None and layer_of(name) > mine]


def test_imports_point_down():
    """Layers, lowest first: base (dpcore.text, seeding, export, confidential) → data →
    mechanisms → settings (limits, grids) → scoring → release → evaluation (with the published
    releases' margins of error) → theory → analyses → report → interfaces → ui → pages and
    app.py. The release pipeline scores with ``dpcore.scoring`` below it, which the pages reach
    too; the CSVs' marks and typed grids sit below everything that
    writes or parses them; the comparison of publishing methods sits beside publishing; the
    report is drawn from evaluation's data and used by the command line and the pages. An import
    from a lower layer to a higher one (lazy ones inside functions included) fails here."""
    upward = [found for path in PRODUCT for found in upward_imports(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"), path)]
    assert not upward, "\n".join(upward)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    climbing = tmp_path / "release.py"
    climbing.write_text("def run():\n    from dpcore.evaluation import experiment\n"
                        "from dpcore import mechanisms, seeding\n", encoding="utf-8")
    assert upward_imports("dpcore.release", climbing) == [
        "dpcore.release (release) imports dpcore.evaluation.experiment (evaluation)"]
    assert upward_imports("dpcore.evaluation.experiment", climbing) == []
    assert layer_of("dpcore") == layer_of("dpcore.data.od") and layer_of("numpy") is None


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
