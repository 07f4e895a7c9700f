"""The README stays a true front door: short, both commands as written (.ci/run reads the test
command from it), one line per page of the app, and every link going somewhere. What moved from
it to docs/ stays true too: the upload examples (docs/UPLOADING.md) import as the format they
illustrate, and the dataset table (docs/DATASETS.md) matches the bundled data."""

import re
import subprocess
from pathlib import Path

import pytest

from dpcore.data import datasets, importers
from ui.components import navigation

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
UPLOADING = (ROOT / "docs" / "UPLOADING.md").read_text(encoding="utf-8")
DATASETS = (ROOT / "docs" / "DATASETS.md").read_text(encoding="utf-8")
EXAMPLES = dict(re.findall(r"<!-- example: (\w+) -->\n```csv\n(.*?)```", UPLOADING, re.DOTALL))


def test_every_upload_format_has_an_example():
    assert set(EXAMPLES) == (set(importers.FORMATS) - {"auto"}) | {"zones"}


@pytest.mark.parametrize("key", sorted(set(EXAMPLES) - {"zones"}))
def test_each_example_is_detected_as_its_format_and_imports_cleanly(key):
    result = importers.import_od(EXAMPLES[key].encode(), f"{key}.csv")
    assert result.format == key
    assert not [n for n in result.notices if n.level != "info"]


def test_the_zones_example_adds_coordinates_to_the_long_example():
    result = importers.import_od(EXAMPLES["long"].encode(), "long.csv",
                                 zones=(EXAMPLES["zones"].encode(), "zones.csv"))
    assert result.matrix.origins.has_coordinates.all()
    assert not [n for n in result.notices if n.level != "info"]


@pytest.mark.parametrize("key", list(datasets.DATASETS))
def test_the_dataset_table_matches_the_data(key):
    [row] = [line for line in DATASETS.splitlines()
             if line.startswith("|") and f"(`{key}`)" in line]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    s = datasets.load(key).summary()
    assert cells[1] == f"{s['origins']:,} origins × {s['destinations']:,} destinations"
    assert cells[2:] == [f"{s[name]:,}" for name in
                         ("n", "domain_size", "nonzero", "cells_count_1", "cells_under_10")]


def test_the_commands_are_there_and_ci_reads_the_test_command():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    run = ("python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt "
           "&& streamlit run app.py\n")
    assert run in blocks  # a fresh virtual environment, not the system's Python
    after_marker = README.split("<!-- test-command -->\n", 1)[1]
    assert after_marker.startswith("```bash\npython3 -m pip install -r requirements-test.txt && "
                                   "python3 -m pytest -n 2\n```")


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_one_line_per_page_in_the_menus_order():
    section = README.split("## What each page answers\n", 1)[1].split("\n## ", 1)[0]
    titles = re.findall(r"^- \*\*(.+?)\*\* — \S", section, re.MULTILINE)
    assert titles == [page.title for page in navigation.PAGES]
    assert len([line for line in section.splitlines() if line.startswith("- ")]) == len(titles)


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                        for p in (ROOT / "docs").glob("*.md"))])
def test_every_relative_link_leads_to_a_file(page):
    path = ROOT / page
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    missing = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert not missing, missing


def test_the_static_folder_exists_from_the_first_start():
    """Streamlit warns "no static folder found" when ``static/`` is missing; it is committed (with
    a README), only its generated ``leaflet/`` is ignored."""
    root = Path(__file__).resolve().parent.parent
    tracked = subprocess.run(["git", "ls-files", "static"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.split()
    assert "static/README.md" in tracked
