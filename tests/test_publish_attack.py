"""The attack of issue 20 on published files: an adversary who knows every record but one tries
each candidate for the last record, re-imports the table it would make, publishes it with the
same settings and compares everything the published files contain apart from the noisy values
(the counts, their total and the date). Before the fix the manifest's SHA-256 of the input
singled out the hidden commuter among 37 candidates, and a domain read from the rows told
neighbouring tables apart by their zones. With a public domain every candidate must match.

The same attack on a data-derived domain (allowed only after an explicit acknowledgement) does
single candidates out: that run shows the comparison is sharp enough to catch a leak.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import views
from dpcore.data.importers import import_od
from dpcore.interfaces import cli, publish, published_domain
from tests.downloads import Downloads
from ui.components import state

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Plan_and_publish.py")
ZONES = [f"Z{i}" for i in range(1, 8)]  # the public geography: 7 zones, 49 cells
#: What the adversary knows: six rows (17 commuters) among the first five zones only.
KNOWN = [("Z1", "Z2", 3), ("Z2", "Z3", 2), ("Z3", "Z1", 1), ("Z1", "Z1", 4), ("Z2", "Z2", 1),
         ("Z4", "Z5", 6)]
#: Where the last commuter may commute: 37 cells of the domain, some in zones nobody else uses.
CANDIDATES = [(o, d) for o in ZONES for d in ZONES][12:49]
HIDDEN = ("Z6", "Z7")  # the truth, in two zones no other commuter uses


def table_bytes(extra: tuple[str, str]) -> bytes:
    """The long-format file of the known rows plus one commuter on ``extra`` (7 rows when the
    cell is new, as in the issue)."""
    counts: dict[tuple[str, str], int] = {(o, d): c for o, d, c in KNOWN}
    counts[extra] = counts.get(extra, 0) + 1
    return ("origin,destination,count\n"
            + "".join(f"{o},{d},{c}\n" for (o, d), c in counts.items())).encode()


def without_noise(manifest: dict) -> dict:
    """Everything the manifest says apart from the noisy values (the total), the date and what
    the budget ledger adds (a random id and the entry's running number: neither depends on the
    rows)."""
    kept = json.loads(json.dumps(manifest))
    kept.pop("date")
    kept.pop("id", None)
    kept.pop("ledger_entry", None)
    kept["total"].pop("value")
    return kept


def fingerprint(release_csv: bytes, manifest: bytes) -> str:
    """What the adversary recomputes from a candidate: the files minus their noisy values."""
    header = release_csv.decode().splitlines()[0]
    return json.dumps([header, without_noise(json.loads(manifest))], sort_keys=True)


def singled_out(published: str, candidates: dict) -> list:
    """The candidates whose recomputed files match the published ones."""
    return [cell for cell, print_ in candidates.items() if print_ == published]


def test_candidates_cover_the_hidden_commuter_and_new_zones():
    assert len(CANDIDATES) == 37 and HIDDEN in CANDIDATES
    assert len(table_bytes(HIDDEN).decode().splitlines()) == 1 + 7
    used = {z for o, d, _ in KNOWN for z in (o, d)}
    assert {"Z6", "Z7"} - used == {"Z6", "Z7"}


# ----------------------------------------------------------------------------- command line
def cli_publish(tmp_path: Path, name: str, extra, domain_options: list[str]) -> str:
    data = tmp_path / f"{name}.csv"
    data.write_bytes(table_bytes(extra))
    # The uploaded name is the publisher's own; the adversary uses the same one.
    flows = tmp_path / name / "flows.csv"
    flows.parent.mkdir()
    flows.write_bytes(data.read_bytes())
    out = tmp_path / name / "published"
    code = cli.main(["publish", "--file", str(flows), "--mechanism", "discrete_laplace",
                     "--epsilon", "1", "--out", str(out), *domain_options])
    assert code == 0
    return fingerprint((out / "release.csv").read_bytes(), (out / "manifest.json").read_bytes())


def zones_file(tmp_path: Path) -> Path:
    path = tmp_path / "zones.csv"
    path.write_text("zone\n" + "\n".join(ZONES) + "\n")
    return path


def test_cli_output_does_not_single_out_the_last_commuter(tmp_path, capsys):
    options = ["--domain-zones", str(zones_file(tmp_path))]
    published = cli_publish(tmp_path, "truth", HIDDEN, options)
    tried = {cell: cli_publish(tmp_path, f"c{i}", cell, options)
             for i, cell in enumerate(CANDIDATES)}
    assert len(singled_out(published, tried)) == len(CANDIDATES)
    manifest = json.loads(published)[1]
    assert manifest["input"]["domain"]["source"] == published_domain.ZONES_FILE
    assert manifest["levels"][0]["cells"] == len(ZONES) ** 2


def test_the_attack_singles_candidates_out_when_the_domain_comes_from_the_data(tmp_path):
    """The control: the comparison above does catch a leak (here the one the user accepted)."""
    published = cli_publish(tmp_path, "truth", HIDDEN, ["--domain-from-data"])
    tried = {cell: cli_publish(tmp_path, f"c{i}", cell, ["--domain-from-data"])
             for i, cell in enumerate(CANDIDATES)}
    matches = singled_out(published, tried)
    assert HIDDEN in matches and len(matches) < len(CANDIDATES) // 2


def test_a_file_without_a_public_domain_is_refused_with_the_reason(tmp_path, capsys):
    flows = tmp_path / "flows.csv"
    flows.write_bytes(table_bytes(HIDDEN))
    code = cli.main(["publish", "--file", str(flows), "--mechanism", "discrete_laplace",
                     "--epsilon", "1", "--out", str(tmp_path / "out")])
    assert code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "--domain-zones" in err and "--domain-from-data" in err
    assert "which zones have at least one commuter" in err
    assert not (tmp_path / "out").exists()


def test_the_audit_record_stays_out_of_the_published_folder(tmp_path):
    flows = tmp_path / "flows.csv"
    flows.write_bytes(table_bytes(HIDDEN))
    out = tmp_path / "out"
    base = ["publish", "--file", str(flows), "--mechanism", "discrete_laplace", "--epsilon", "1",
            "--out", str(out), "--domain-zones", str(zones_file(tmp_path))]
    assert cli.main(base + ["--audit", str(out / "audit.json")]) == cli.EXIT_USAGE
    assert not out.exists()
    assert cli.main(base + ["--audit", str(tmp_path / "audit.json")]) == 0
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert audit["commuters"] == 18 and len(audit["sha256_of_files"]) == 64
    assert audit["files"] == ["flows.csv"] and len(audit["sha256_of_table"]) == 64
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "release.csv"]
    assert "sha256" not in (out / "manifest.json").read_text()


# ----------------------------------------------------------------------------------- dpcore
@pytest.mark.parametrize("levels", [False, True])
def test_neighbouring_tables_publish_the_same_cells_and_zones_over_a_public_domain(levels):
    """With and without one commuter (in zones nobody else uses): the same levels[].cells, the
    same domain entry and the same zones possible in release.csv."""
    text = "zone,parent\n" + "".join(f"{z},{'P' if z < 'Z4' else 'Q'}\n" for z in ZONES)
    domain = published_domain.of_zones_file(text.encode(), "zones.csv")
    results = []
    for extra in (HIDDEN, ("Z1", "Z2")):
        od = published_domain.apply(import_od(table_bytes(extra), "flows.csv").matrix, domain)
        source = publish.input_entry("Test town", views.View(), domain.manifest_entry())
        call = publish.publish_levels if levels else publish.publish
        results.append(call(od, publish.DISCRETE_LAPLACE, 1.0, source=source))
    with_one, without = results
    assert without_noise(with_one.manifest) == without_noise(without.manifest)
    assert [lv["cells"] for lv in with_one.manifest["levels"]] == \
        ([49, 4] if levels else [49])
    if not levels:  # the zones release.csv can name (the levels' frames are concatenated)
        for column in ("origin", "destination"):
            assert list(with_one.table[column].cat.categories) == ZONES
            assert list(without.table[column].cat.categories) == ZONES
    assert {k: v.size for k, v in with_one.released.items()} == \
        {k: v.size for k, v in without.released.items()}


def test_zones_of_the_data_outside_the_domain_are_named():
    od = import_od(table_bytes(HIDDEN), "flows.csv").matrix
    with pytest.raises(ValueError, match="“Z6”, “Z7”.*Add them to the domain"):
        published_domain.apply(od, published_domain.of_codes("Z1 Z2 Z3 Z4 Z5"))


# ------------------------------------------------------------------------------------- page
def page_publish(extra, downloads: Downloads) -> str:
    """The adversary's own session: the candidate table re-imported as an upload, the same
    declared codes as the domain, Publish, and the two files the page offers."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = import_od(table_bytes(extra), "flows.csv").matrix
    at.session_state[state.UPLOADED_FILENAME] = "flows.csv"
    at.run()
    at.radio(key="publish_domain_source").set_value(published_domain.CODES).run()
    at.text_area(key="publish_domain_codes").set_value(", ".join(ZONES)).run()
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    return fingerprint(downloads.by_key(at, "publish_csv"),
                       downloads.by_key(at, "publish_manifest"))


@pytest.mark.slow
def test_page_output_does_not_single_out_the_last_commuter(monkeypatch):
    downloads = Downloads(monkeypatch)
    published = page_publish(HIDDEN, downloads)
    assert json.loads(published)[1]["input"]["domain"]["source"] == published_domain.CODES
    tried = {cell: page_publish(cell, downloads) for cell in CANDIDATES}
    assert len(singled_out(published, tried)) == len(CANDIDATES)


def test_page_files_of_neighbouring_tables_match_apart_from_the_noise(monkeypatch):
    """The quick version of the page's attack: one commuter in unused zones, or elsewhere."""
    downloads = Downloads(monkeypatch)
    published = page_publish(HIDDEN, downloads)
    assert page_publish(("Z1", "Z2"), downloads) == published
    header, manifest = json.loads(published)
    assert header == "origin,destination,count,margin_of_error_95"   # the margin: public law
    assert manifest["levels"][0]["cells"] == len(ZONES) ** 2
    assert manifest["margin_of_error"]["column"] == "margin_of_error_95"
    assert "sha256" not in published and "commuters\": " not in published


def test_page_takes_the_domain_from_an_uploaded_zones_file_and_names_missing_zones(monkeypatch):
    downloads = Downloads(monkeypatch)
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = import_od(table_bytes(HIDDEN), "flows.csv").matrix
    at.session_state[state.UPLOADED_FILENAME] = "flows.csv"
    at.run()
    at.radio(key="publish_domain_source").set_value(published_domain.ZONES_FILE).run()
    at.file_uploader(key="publish_domain_zones").set_value(
        ("zones.csv", ("zone\n" + "\n".join(ZONES[:5]) + "\n").encode(), "text/csv")).run()
    assert any("“Z6”, “Z7”" in e.value for e in at.error)  # the data has zones the list lacks
    assert not [b for b in at.button if b.key == "publish_go"]
    at.file_uploader(key="publish_domain_zones").set_value(
        ("zones2.csv", ("zone\n" + "\n".join(ZONES) + "\n").encode(), "text/csv")).run()
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    manifest = json.loads(downloads.by_key(at, "publish_manifest"))
    assert manifest["input"]["domain"] == {"source": published_domain.ZONES_FILE,
                                           "description": "a zones file the publisher supplied",
                                           "origins": 7, "destinations": 7}
    audit = json.loads(downloads.by_key(at, "publish_audit"))
    assert audit["commuters"] == 18 and "NOT FOR PUBLICATION" in audit["private"]


def test_page_publishes_an_upload_over_a_bundled_geography(monkeypatch):
    """Two commutes of Toy town's zones: the domain is the bundled geography's 7 × 8 zones."""
    downloads = Downloads(monkeypatch)
    flows = b"origin,destination,count\nHarbour,Station,4\nHillside,Work from home,2\n"
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = import_od(flows, "toy.csv").matrix
    at.session_state[state.UPLOADED_FILENAME] = "toy.csv"
    at.run()
    at.radio(key="publish_domain_source").set_value(published_domain.BUNDLED).run()
    at.selectbox(key="publish_domain_dataset").set_value("toy_town").run()
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    manifest = json.loads(downloads.by_key(at, "publish_manifest"))
    assert manifest["input"]["domain"]["source"] == published_domain.BUNDLED
    assert (manifest["input"]["domain"]["origins"], manifest["levels"][0]["cells"]) == (7, 56)
