"""Issue 29's smaller points on `publish`: every --shares problem is one line before the data
is read; a Gaussian publish without --delta takes the page's δ and says so; a zones file that
does not fit two levels gets notices saying what was done; a file over the limit is reported at
its real size; TopDown's exact total is stated when it is published."""

from __future__ import annotations

import json

import pytest

from dpcore.data import importers
from dpcore.data.importers import MAX_UPLOAD_BYTES
from dpcore.interfaces import cli, publish, published_domain
from dpcore.interfaces.commands import publishing

FLOWS = "origin,destination,count\nZ1,Z2,3\nZ2,Z3,2\nZ3,Z1,1\nZ4,Z4,5\n"


@pytest.fixture
def never_imports(monkeypatch):
    """Fails the test if the data is read: the problem must be found before."""
    def refuse(args):
        raise AssertionError("the data was imported before the options were checked")
    monkeypatch.setattr(publishing, "_load", refuse)  # where publish looks it up


@pytest.mark.parametrize("argv, message", [
    (["--shares", "1e-300,1"], "every --shares value must be at least 1e-06; got '1e-300,1'"),
    (["--shares", "a,b"], "--shares must be numbers separated by commas"),
    (["--shares", "-0.5,1.5"], "every --shares value must be at least 1e-06; got '-0.5,1.5'"),
    (["--shares=-0.5,1.5"], "every --shares value must be at least 1e-06; got '-0.5,1.5'"),
    (["--shares", "0.3,0.3"], "must add up to 1; '0.3,0.3' adds up to 0.6"),
    (["--shares", "0.5,,0.5"], "--shares must be numbers separated by commas"),
    (["--label", "a\x07b"], "control characters"),
    (["--shares", ""], "--shares is empty: give it a value (or leave --shares out"),  # was: even
    (["--shares", " , "], "--shares is empty: give each level's share of ρ"),
    (["--audit", ""], "--audit is empty"),                  # was: no audit record, silently
    (["--domain-codes", ""], "--domain-codes is empty"),    # was: the bundled geography
    (["--domain-zones", " "], "--domain-zones is empty"),
    (["--shares", "0.5,0_5"], "--shares must be numbers separated by commas"),  # 0_5 is 5
    (["--shares", "0.5,٠.5"], "--shares must be numbers separated by commas"),  # Arabic-Indic 0
    (["--compare", "2"], "--compare-out PATH.csv"),
])
def test_bad_options_are_one_line_before_the_data_is_read(tmp_path, capsys, never_imports,
                                                          argv, message):
    code = cli.main(["publish", "--dataset", "toy_town", "--method", "topdown", "--epsilon", "1",
                     "--delta", "1e-6", "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_valid_shares_are_used(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["publish", "--dataset", "ireland_ed", "--area", "Leitrim", "--method",
                     "topdown", "--epsilon", "1", "--delta", "1e-6", "--shares", "0.25,0.75",
                     "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [lv["share_of_rho"] for lv in manifest["levels"]] == [0.25, 0.75]


@pytest.mark.parametrize("method", ["topdown", "flat"])
def test_a_gaussian_publish_without_delta_takes_the_pages_default_and_says_so(tmp_path, capsys,
                                                                               method):
    out = tmp_path / "out"
    assert cli.main(["publish", "--dataset", "toy_town", "--method", method, "--epsilon", "1",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no --delta given: using δ = 1e-06, the page's default" in printed
    assert json.loads((out / "manifest.json").read_text())["delta"] == publish.DEFAULT_DELTA == 1e-6


def test_topdown_states_the_exact_total_when_it_publishes_it(tmp_path, capsys):
    base = ["publish", "--dataset", "toy_town", "--method", "topdown", "--epsilon", "1",
            "--delta", "1e-6"]
    assert cli.main(base + ["--out", str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    assert publish.TOPDOWN_TOTAL in printed and "--neighbours add_remove" in printed
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert "every level sums to the true number of commuters" in manifest["total"]["how"]
    assert cli.main(base + ["--neighbours", "add_remove", "--out", str(tmp_path / "b")]) == 0
    assert publish.TOPDOWN_TOTAL not in capsys.readouterr().out


def test_zones_files_beyond_two_levels_get_notices(tmp_path, capsys):
    (tmp_path / "flows.csv").write_text(FLOWS)
    (tmp_path / "zones.csv").write_text("zone,parent\nZ1,P\nZ2,P\nZ3,Q\nZ4,\nP,R\nQ,R\n")
    assert cli.main(["publish", "--file", str(tmp_path / "flows.csv"), "--domain-zones",
                     str(tmp_path / "zones.csv"), "--method", "wls", "--epsilon", "1",
                     "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert ("2 listed zones are also the parent of other listed zones (“P” and “Q”): "
            "the file has more than the two levels") in printed
    assert "The domain was made of the 4 zones that are no zone's parent" in printed
    assert ("1 zone has no parent in the zones file (“Z4”): each was made its own "
            "parent") in printed
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [lv["cells"] for lv in manifest["levels"]] == [16, 9]  # 4 zones; parents P, Q, Z4


def test_a_two_level_zones_file_gets_no_level_notice():
    domain = published_domain.of_zones_file(b"zone,parent\nZ1,P\nZ2,Q\n", "zones.csv")
    assert not [n for n in domain.notices if n.code in published_domain.LEVEL_NOTICES]
    assert list(domain.origins.parent_zones.ids) == ["P", "Q"]


@pytest.mark.parametrize("option", ["--file", "--domain-zones"])
def test_a_file_over_the_limit_is_reported_at_its_real_size(tmp_path, capsys, option):
    big = tmp_path / "big.csv"
    with open(big, "wb") as handle:  # sparse: 114 MB on paper, nothing on disk
        handle.truncate(114_000_000)
    flows = tmp_path / "flows.csv"
    flows.write_text(FLOWS)
    argv = (["--file", str(big), "--domain-from-data"] if option == "--file"
            else ["--file", str(flows), "--domain-zones", str(big)])
    code = cli.main(["publish", *argv, "--epsilon", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INVALID_INPUT
    assert "The file is 108.7 MB (114,000,000 bytes); the limit is 100 MB (104,857,600 " \
           "bytes)" in err
    assert f"{MAX_UPLOAD_BYTES + 1:,}" not in err


def test_an_escape_sequence_in_a_zone_name_never_reaches_release_csv_raw(tmp_path, capsys):
    """Issue 40: ``ESC [ 31m`` in a zone name reached release.csv raw with --domain-from-data
    (``cat release.csv`` turned the terminal red). The importer writes control characters as
    escapes, so the file holds inert text and imports back with the same zone names."""
    flows = tmp_path / "flows.csv"
    flows.write_text("origin,destination,count\nA\x1b[31mRED,B,30\nB,A\x1b[31mRED,20\n"
                     "B,B,40\nC\x9b31m,B,10\n", encoding="utf-8")      # ESC; U+009B, C1 "CSI"
    out = tmp_path / "out"
    assert cli.main(["publish", "--file", str(flows), "--domain-from-data", "--mechanism",
                     "discrete_laplace", "--epsilon", "5", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    raw = (out / "release.csv").read_bytes()
    for shown in (printed.out + printed.err, raw.decode()):
        assert "\x1b" not in shown and "\x9b" not in shown
    back = importers.import_od(raw, "release.csv").matrix
    data = importers.import_od(flows.read_bytes(), "flows.csv").matrix
    assert set(back.origins.ids) <= set(data.origins.ids) == {"A\\x1b[31mRED", "B", "C\\x9b31m"}
    assert set(back.destinations.ids) <= set(data.destinations.ids)
    assert "A\\x1b[31mRED" in set(back.origins.ids) | set(back.destinations.ids)
