"""The budget ledger: append-only, hash-chained (an edit or a removal is detected), kept across
processes, and its totals under each composition theorem (shown only where tighter)."""

import math
import sqlite3
import subprocess
import sys

import pytest

from dpcore.data import datasets
from dpcore.interfaces import classroom, cli, ledger, publish, published_domain

#: The manifest's input entry: a bundled dataset's public geography.
SOURCE = publish.input_entry("test", "test", {"source": published_domain.BUNDLED})


def level(name="county", epsilon=1.0, delta=0.0, rho=None):
    return ledger.LevelCost(name, epsilon, delta, rho)


def fill(store):
    store.append("toy_town", "flat", [level(epsilon=1.0)], 1.0, 0.0, None, "m1")
    store.append("toy_town", "topdown", [level("county", 0.7, 5e-7, 0.0125),
                                         level("ED", 0.7, 5e-7, 0.0125)], 1.0, 1e-6, 0.025, "m2")
    store.append("ireland_ed", "wls", [level(epsilon=0.5)], 0.5, 0.0, None, "m3")


def test_chain_detects_edits_and_removals(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    entries = store.entries()
    assert [e.number for e in entries] == [1, 2, 3]
    assert entries[0].previous == ledger.GENESIS
    assert [e.previous for e in entries[1:]] == [e.hash for e in entries[:-1]]
    assert store.verify() is None
    with sqlite3.connect(store.path) as db:  # the app refuses edits ...
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE publications SET epsilon = 0.1 WHERE number = 2")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("DELETE FROM publications WHERE number = 2")
    with sqlite3.connect(store.path) as db:  # ... and someone going around it is caught
        db.execute("DROP TRIGGER publications_no_update")
        db.execute("UPDATE publications SET epsilon = 0.1 WHERE number = 2")
    assert store.verify() == "entry 2 was changed after it was recorded"
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER publications_no_delete")
        db.execute("DELETE FROM publications WHERE number = 2")
    assert store.verify() == "entry 2 is missing (the next one is 3)"


def test_a_rewritten_chain_still_breaks_at_the_next_entry(tmp_path):
    """Changing an entry and its own hash does not help: the next entry names the old hash."""
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    forged = store.entries()[0]
    forged = ledger.Entry(**{**forged.__dict__, "epsilon": 0.01, "hash": ""})
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER publications_no_update")
        db.execute("UPDATE publications SET epsilon = ?, hash = ? WHERE number = 1",
                   (0.01, forged.digest()))
    assert store.verify() == "entry 2 does not follow entry 1"


def test_the_ledger_survives_a_new_process(tmp_path, monkeypatch):
    monkeypatch.setenv(classroom.FOLDER_VARIABLE, str(tmp_path))
    store = ledger.LedgerStore()
    assert store.path == tmp_path / classroom.DATABASE_NAME  # the classroom's database file
    fill(store)
    code = ("from dpcore.interfaces import ledger; s = ledger.LedgerStore(); "
            "s.append('toy_town', 'flat', [ledger.LevelCost('c', 2.0, 0.0, None)], 2.0, 0.0, "
            "None, 'm4'); print(len(s.entries()), s.verify())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ})
    assert out.stdout.split() == ["4", "None"]
    assert [e.manifest_id for e in ledger.LedgerStore().entries()] == ["m1", "m2", "m3", "m4"]


def test_totals_show_only_tighter_compositions():
    two = [ledger.Entry(i, "t", "d", "flat", (), 1.0, 0.0, None, "m", "") for i in (1, 2)]
    totals = ledger.totals(two)
    assert totals["composition"].tolist() == ["basic (budgets add up)"]  # advanced is worse
    assert totals["epsilon"].iloc[0] == 2.0
    many = [ledger.Entry(i, "t", "d", "flat", (), 0.1, 0.0, None, "m", "") for i in range(200)]
    totals = ledger.totals(many).set_index("composition")
    advanced = math.sqrt(2 * math.log(1e6) * 200 * 0.01) + 200 * 0.1 * math.expm1(0.1)
    assert totals.loc["advanced (δ′ = 1e-06)", "epsilon"] == pytest.approx(advanced)
    assert advanced < 20
    gaussian = [ledger.Entry(i, "t", "d", "topdown", (), 1.0, 1e-6, 0.025, "m", "")
                for i in range(4)]
    totals = ledger.totals(gaussian)
    rho = 0.1
    assert totals["epsilon"].iloc[-1] == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e6)))
    assert totals["composition"].iloc[-1] == "zCDP (ρ = 0.1 in all)"
    assert totals["delta"].iloc[0] == pytest.approx(4e-6)


def test_table_shows_a_dash_for_no_rho_and_totals_per_dataset(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    shown = ledger.table(store.entries())
    assert shown["ρ (zCDP)"].tolist() == ["—", "0.025", "—"]
    assert "None" not in shown.to_string()
    by = ledger.totals_by_dataset(store.entries())
    basic = by[by["composition"].str.startswith("basic")].set_index("dataset")
    assert basic.loc["toy_town", "epsilon"] == 2.0 and basic.loc["ireland_ed", "epsilon"] == 0.5
    assert basic.loc["toy_town", "publications"] == 2


def test_record_names_the_entry_in_the_manifest(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    result = publish.publish_topdown(datasets.load("toy_town"), 1.0, delta=1e-6,
                                     whole_table=True, source=SOURCE)
    entry = ledger.record(store, result, "toy_town", "topdown (gaussian)")
    assert result.manifest["ledger_entry"]["number"] == entry.number == 1
    assert "hash" not in result.manifest["ledger_entry"]
    assert entry.manifest_id == result.manifest["id"] and len(entry.manifest_id) == 32
    assert entry.rho == pytest.approx(result.manifest["rho_zcdp"])
    assert entry.levels[0].rho == pytest.approx(result.manifest["levels"][0]["rho_zcdp"])


def test_cli_publish_records_and_ledger_shows_it(tmp_path, capsys):
    out = tmp_path / "published"
    assert cli.main(["publish", "--dataset", "ireland_ed", "--area", "Leitrim", "--method",
                     "topdown", "--epsilon", "1", "--delta", "1e-6", "--compare", "2",
                     "--out", str(out)]) == 0
    manifest = __import__("json").loads((out / "manifest.json").read_text())
    assert manifest["ledger_entry"]["number"] == 1
    comparison = __import__("pandas").read_csv(out / "comparison.csv")
    assert set(comparison["method"]) == {"flat", "wls", "topdown"}
    assert cli.main(["publish", "--dataset", "toy_town", "--mechanism", "discrete_laplace",
                     "--epsilon", "0.5", "--out", str(tmp_path / "second")]) == 0
    capsys.readouterr()
    assert cli.main(["ledger", "--out", str(tmp_path / "ledger.csv")]) == 0
    printed = capsys.readouterr().out
    assert "topdown (gaussian)" in printed and "flat (discrete_laplace)" in printed
    assert "intact" in printed and "None" not in printed
    assert cli.main(["publish", "--dataset", "toy_town", "--method", "topdown",
                     "--mechanism", "discrete_laplace", "--epsilon", "1",
                     "--out", str(tmp_path / "third")]) == cli.EXIT_USAGE


def test_cli_ledger_fails_on_a_broken_chain(tmp_path, capsys):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER publications_no_update")
        db.execute("UPDATE publications SET dataset = 'elsewhere' WHERE number = 3")
    assert cli.main(["ledger", "--folder", str(tmp_path)]) == cli.EXIT_INVALID_INPUT
    assert "BROKEN — entry 3 was changed after it was recorded" in capsys.readouterr().out
