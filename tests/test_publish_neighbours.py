"""Issue 29's rule for everything a publisher shares: every byte of the publication folder
(``--out``) and of every publish download is a function of the mechanism's output and public
inputs only. Anything else (the audit record, the side-by-side comparison, the planner's
accuracy figures) is computed from the confidential table and must say so in its first line.

How it is checked: the mechanism's output is held fixed. ``publish.noisy`` — the one place
OpenDP's noise enters, for flat, WLS and TopDown — is replaced by a function that returns the same
values whatever the counts, i.e. the noise realisation that makes two neighbouring tables'
outputs equal (it has positive probability under both, which is all DP allows an adversary to
exploit). The clock, the manifest's random id and the ledger's key are fixed, and each publish
gets a fresh ledger, so nothing else may differ: two tables one commuter apart, uploaded under
different file names (with zones files of different names), must give byte-identical shared
files — a file's name can say whom the data is about, so no shared file may carry it.
``comparison.csv`` in the folder (issue 29: 18–20 of its 48 rows changed between neighbours)
fails this; the control test shows the check catches exactly that.
"""

from __future__ import annotations

import datetime as real_datetime
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import confidential, export
from dpcore.data.importers import import_od
from dpcore.interfaces import cli, ledger, publish, publish_compare, published_domain
from tests.downloads import Downloads
from ui.components import state

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Plan_and_publish.py")
ZONES = [f"Z{i}" for i in range(1, 8)]
ZONES_FILE = "zone,parent\n" + "".join(f"{z},{'P' if z < 'Z4' else 'Q'}\n" for z in ZONES)
KNOWN = [("Z1", "Z2", 3), ("Z2", "Z3", 2), ("Z3", "Z1", 1), ("Z1", "Z1", 4), ("Z2", "Z2", 1),
         ("Z4", "Z5", 6)]
#: Two tables one commuter apart (substitution: the last commuter's commute differs).
NEIGHBOURS = (("Z6", "Z7"), ("Z1", "Z2"))
#: The names each of the two is uploaded under (data file, zones file): nothing shared names them.
NAMES = (("flows.csv", "zones.csv"),
         ("acme_staff_home_addresses_2026.csv", "acme_office_zones.csv"))
PRIVATE_STARTS = (f"# {confidential.FIRST_LINE}".encode(),
                  f'{{"private": "{confidential.FIRST_LINE}"'.encode(),
                  f"<!-- {confidential.FIRST_LINE} -->".encode())


def table_bytes(extra: tuple[str, str] | None) -> bytes:
    counts = {(o, d): c for o, d, c in KNOWN}
    if extra is not None:
        counts[extra] = counts.get(extra, 0) + 1
    return ("origin,destination,count\n"
            + "".join(f"{o},{d},{c}\n" for (o, d), c in counts.items())).encode()


class _FixedDatetime(real_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return real_datetime.datetime(2026, 11, 27, 12, 0, tzinfo=tz)


@pytest.fixture
def fixed_output(monkeypatch, tmp_path):
    """The mechanism's output, the clock, the manifest id and the ledger key held fixed; returns
    a function that points the app's database at a fresh folder (a fresh ledger)."""
    def output(noise, counts, progress=None, workers=1):
        size = np.asarray(counts).size
        if progress is not None:
            progress(size, size)
        return np.arange(size, dtype=np.int64) % 5
    monkeypatch.setattr(publish, "noisy", output)
    monkeypatch.setattr(publish.datetime, "datetime", _FixedDatetime)
    monkeypatch.setattr(ledger, "_now", lambda: "2026-11-27T12:00:00+00:00")
    monkeypatch.setattr(ledger.secrets, "token_hex", lambda n=16: "ab" * n)
    monkeypatch.setenv(ledger.KEY_VARIABLE, "cd" * 32)
    folders = iter(range(10 ** 6))

    def fresh_ledger() -> None:
        monkeypatch.setenv("DPCORE_CLASSROOM_DIR", str(tmp_path / f"db{next(folders)}"))
    return fresh_ledger


def is_private(content: bytes) -> bool:
    return content.startswith(PRIVATE_STARTS)


def names_no_file(shared: dict[str, bytes]) -> bool:
    """No shared file holds any of the file names, nor the second pair's stems or "acme" (the
    first pair's stems, "flows" and "zones", are ordinary words of a manifest)."""
    words = {*NAMES[0], *NAMES[1], *(name.rsplit(".", 1)[0] for name in NAMES[1]), "acme"}
    return not any(w.encode() in content for content in shared.values() for w in words)


# ----------------------------------------------------------------------------- command line
METHODS = {"flat": ["--method", "flat"], "wls": ["--method", "wls"],
           "topdown": ["--method", "topdown", "--delta", "1e-6"]}
EXTRAS = {"plain": [], "compare": ["--compare", "2"], "audit": [],
          "compare+audit": ["--compare", "2"]}


def cli_files(tmp_path: Path, run: str, extra, method: str, extras: str,
              neighbours: str = "substitution", names=NAMES[0]) -> tuple[dict, dict]:
    """(files in --out, files written outside it) of one CLI publish, by name → bytes;
    ``names``: the data file's and the zones file's names."""
    home = tmp_path / run
    home.mkdir()
    flows, zones = home / names[0], home / names[1]
    flows.write_bytes(table_bytes(extra))
    zones.write_text(ZONES_FILE)
    out, private = home / "published", home / "private"
    options = list(EXTRAS[extras])
    if "compare" in extras:
        options += ["--compare-out", str(private / "comparison.csv")]
    if "audit" in extras:
        options += ["--audit", str(private / "audit.json")]
    code = cli.main(["publish", "--file", str(flows), "--domain-zones",
                     str(zones), "--epsilon", "1", "--neighbours", neighbours,
                     "--label", "Test town 2026", "--out", str(out), *METHODS[method], *options])
    assert code == 0
    shared = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    kept = {p.name: p.read_bytes() for p in sorted(private.iterdir())} if private.exists() \
        else {}
    return shared, kept


@pytest.mark.parametrize("extras", list(EXTRAS))
@pytest.mark.parametrize("method", list(METHODS))
def test_cli_folder_is_the_same_for_neighbouring_tables(tmp_path, fixed_output, method, extras,
                                                        capsys):
    runs = []
    for number, (extra, names) in enumerate(zip(NEIGHBOURS, NAMES)):
        fixed_output()
        runs.append(cli_files(tmp_path, f"t{number}", extra, method, extras, names=names))
    (shared, kept), (other_shared, other_kept) = runs
    assert sorted(shared) == ["manifest.json", "release.csv"]
    assert shared == other_shared  # every byte: nothing but the release and public inputs
    assert names_no_file(shared)
    expected = {"compare": {"comparison.csv"}, "audit": {"audit.json"}, "plain": set(),
                "compare+audit": {"comparison.csv", "audit.json"}}[extras]
    assert set(kept) == expected
    assert all(is_private(content) for content in kept.values())
    if extras == "compare+audit":  # what stays private does depend on the rows
        assert kept != other_kept


def test_cli_topdown_under_add_remove_publishes_no_exact_total(tmp_path, fixed_output, capsys):
    """Add/remove neighbours: one table has a commuter more, and still every shared byte is
    the same (TopDown's top level is noisy, not fitted to n)."""
    runs = []
    for number, extra in enumerate((NEIGHBOURS[0], None)):
        fixed_output()
        runs.append(cli_files(tmp_path, f"t{number}", extra, "topdown", "compare",
                              neighbours="add_remove"))
    assert runs[0][0] == runs[1][0]
    assert "publishes the exact number of commuters" not in capsys.readouterr().out


def test_the_check_catches_the_old_comparison_in_the_folder(tmp_path, fixed_output, capsys):
    """The control: the layout before issue 29 wrote the comparison into --out. Added back, the
    folders of neighbouring tables differ, so the test above would have failed."""
    folders = []
    for number, extra in enumerate(NEIGHBOURS):
        fixed_output()
        shared, _ = cli_files(tmp_path, f"t{number}", extra, "topdown", "plain")
        od = published_domain.apply(import_od(table_bytes(extra), "flows.csv").matrix,
                                            published_domain.of_zones_file(
                                                ZONES_FILE.encode(), "zones.csv"))
        results = publish_compare.compare(od, [1.0], 1e-6, trials=2, seed=0, whole_table=True)
        path = tmp_path / f"old{number}.csv"
        export.write_safe_csv(results, path)  # as the old `publish --compare` did, into --out
        folders.append({**shared, "comparison.csv": path.read_bytes()})
    assert folders[0]["release.csv"] == folders[1]["release.csv"]
    assert folders[0]["comparison.csv"] != folders[1]["comparison.csv"]
    assert folders[0] != folders[1]


@pytest.mark.parametrize("place", ["published/comparison.csv", "published/sub/c.csv",
                                   "published"])
def test_private_files_are_refused_inside_the_folder(tmp_path, place, capsys):
    (tmp_path / "flows.csv").write_bytes(table_bytes(NEIGHBOURS[0]))
    base = ["publish", "--file", str(tmp_path / "flows.csv"), "--domain-codes", ",".join(ZONES),
            "--epsilon", "1", "--out", str(tmp_path / "published")]
    assert cli.main(base + ["--compare", "2", "--compare-out", str(tmp_path / place)]) == \
        cli.EXIT_USAGE
    assert "--compare-out must not go into the publication folder" in capsys.readouterr().err
    assert cli.main(base + ["--audit", str(tmp_path / place)]) == cli.EXIT_USAGE
    assert "--audit must not go into the publication folder" in capsys.readouterr().err
    assert cli.main(base + ["--compare", "2"]) == cli.EXIT_USAGE
    assert "--compare-out PATH.csv" in capsys.readouterr().err
    assert not (tmp_path / "published").exists()


# ------------------------------------------------------------------------------------- page
def page_downloads(extra, method: str, downloads: Downloads, names=NAMES[0]) -> dict[str, bytes]:
    """Every download the page offers after Publish and Compare, by button key → bytes;
    ``names``: the upload's and the zones file's names."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["mech"] = ["laplace"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = import_od(table_bytes(extra), names[0]).matrix
    at.session_state[state.UPLOADED_FILENAME] = names[0]
    at.run()
    at.radio(key="publish_domain_source").set_value(published_domain.ZONES_FILE).run()
    at.file_uploader(key="publish_domain_zones").set_value(
        (names[1], ZONES_FILE.encode(), "text/csv")).run()
    at.radio(key="publish_method").set_value(method).run()
    at.text_input(key=f"publish_label_{state.UPLOADED}").set_value("Test town 2026").run()
    at.button(key="publish_go").click().run()
    at.number_input(key="publish_compare_trials").set_value(2).run()
    at.button(key="publish_compare_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    found = {}
    for button in at.get("download_button"):
        key = button.proto.id.rsplit("-", 1)[-1]
        found[key] = downloads.data(button)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("method", ["flat", "wls", "topdown"])
def test_page_downloads_are_the_same_for_neighbouring_tables(fixed_output, monkeypatch, method):
    downloads = Downloads(monkeypatch)
    runs = []
    for extra, names in zip(NEIGHBOURS, NAMES):
        fixed_output()
        runs.append(page_downloads(extra, method, downloads, names))
    first, second = runs
    assert set(first) == set(second)
    assert {"publish_csv", "publish_manifest", "publish_audit",
            "publish_compare_chart_csv"} <= set(first)
    shared = {key for key, content in first.items() if not is_private(content)}
    # the ε ruler's CSV is public: deployed budgets only (issue 42), the same for both tables
    assert shared == {"publish_csv", "publish_manifest", "plan_ruler_csv"}
    assert {key: first[key] for key in shared} == {key: second[key] for key in shared}
    assert names_no_file({key: first[key] for key in shared})
    private = set(first) - shared
    assert all(is_private(second[key]) for key in private)
    assert first["publish_compare_chart_csv"] != second["publish_compare_chart_csv"]
