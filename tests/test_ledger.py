"""The budget ledger: append-only, keyed (HMAC) chain with a head record outside the database
and anchors in every manifest, so that an edit, a removal, a truncation, a dropped table or a
re-sealed entry is reported; labels the publisher types, never a file name; kept across
processes; totals per label under each composition theorem (shown only where tighter)."""

import hashlib
import json
import math
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from dpcore.data import datasets, views
from dpcore.interfaces import classroom, cli, ledger, publish, published_domain
from dpcore.interfaces.store import StoreUnavailable
from dpcore.mechanisms.central import analytic_gaussian_sigma
from dpcore.theory import composition

#: The manifest's input entry: a bundled dataset's public geography.
SOURCE = publish.input_entry("test", views.View(), {"source": published_domain.BUNDLED})


def level(name="fine level", epsilon=1.0, delta=0.0, rho=None):
    return ledger.LevelCost(name, epsilon, delta, rho)


def fill(store):
    store.append("Toy town 2026", "flat", [level(epsilon=1.0)], 1.0, 0.0, None, "m1")
    store.append("Toy town 2026", "topdown", [level("parent level", 0.7, 5e-7, 0.0125),
                                              level("fine level", 0.7, 5e-7, 0.0125)],
                 1.0, 1e-6, 0.025, "m2")
    store.append("Ireland 2016", "wls", [level(epsilon=0.5)], 0.5, 0.0, None, "m3")


def tamper(store, *statements):
    """Someone with write access to the database file, going around the app's triggers."""
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER IF EXISTS ledger_no_update")
        db.execute("DROP TRIGGER IF EXISTS ledger_no_delete")
        for statement in statements:
            db.execute(*statement) if isinstance(statement, tuple) else db.execute(statement)


def test_an_intact_chain_is_intact_and_the_app_refuses_edits(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    entries = store.entries()
    assert [e.number for e in entries] == [1, 2, 3]
    assert entries[0].previous == ledger.GENESIS
    assert [e.previous for e in entries[1:]] == [e.mac for e in entries[:-1]]
    assert store.verify() == []
    assert store.keys.head() == (3, entries[-1].mac)
    with sqlite3.connect(store.path) as db:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE ledger SET epsilon = 0.1 WHERE number = 2")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("DELETE FROM ledger WHERE number = 2")


@pytest.mark.parametrize("statements, problem", [
    (["UPDATE ledger SET epsilon = 0.1 WHERE number = 2"],
     ["entry 2 was changed after it was recorded (its MAC does not match the server's key)"]),
    (["DELETE FROM ledger WHERE number = 2"], ["the ledger lost entry 2"]),
    (["DELETE FROM ledger WHERE number = 3"], ["the ledger lost entry 3 (the newest recorded "
                                               "is 3)"]),
    (["DELETE FROM ledger"], ["the ledger lost entries 1…3 (the newest recorded is 3)"]),
    (["DROP TABLE ledger"], ["the ledger lost entries 1…3 (the newest recorded is 3)"]),
    (["UPDATE ledger SET number = 9 WHERE number = 1", "UPDATE ledger SET number = 1 WHERE "
      "number = 2", "UPDATE ledger SET number = 2 WHERE number = 9"],
     ["entry 1 does not follow entry 0",
      "entry 1 was changed after it was recorded (its MAC does not match the server's key)",
      "entry 2 does not follow entry 1",
      "entry 2 was changed after it was recorded (its MAC does not match the server's key)",
      "entry 3 does not follow entry 2"]),
])
def test_every_kind_of_tampering_is_reported(tmp_path, statements, problem):
    """Issue 29: deleting the newest entry, deleting every entry and dropping the table were
    reported as intact by the unkeyed chain."""
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    tamper(store, *statements)
    assert store.verify() == problem


def test_an_edited_entry_resealed_without_the_key_is_caught(tmp_path):
    """Re-sealing with a recomputed digest (SHA-256, as the unkeyed chain allowed, or an HMAC
    under a guessed key) changes the entry and every MAC after it: the key is not in the
    database, so the forger cannot make MACs that match."""
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    entries = store.entries()
    forged, previous = [], ledger.GENESIS
    for entry in entries:
        entry = ledger.Entry(**{**entry.__dict__, "previous": previous,
                                "epsilon": 0.01 if entry.number == 1 else entry.epsilon})
        entry = ledger.Entry(**{**entry.__dict__, "mac": entry.seal(b"a guessed key")})
        forged.append(entry)
        previous = entry.mac
    tamper(store, *[("UPDATE ledger SET epsilon = ?, previous = ?, mac = ? WHERE number = ?",
                     (e.epsilon, e.previous, e.mac, e.number)) for e in forged])
    problems = store.verify()
    assert [p for p in problems if "MAC does not match" in p] == [
        f"entry {n} was changed after it was recorded (its MAC does not match the server's key)"
        for n in (1, 2, 3)]
    assert "entry 3 is not the one recorded as the newest" in problems


def test_the_key_is_made_once_owner_only_apart_from_the_database_and_its_folder(tmp_path):
    """Issue 40: the key and head lived in the database's folder, which its writers can write."""
    store = ledger.LedgerStore(tmp_path)
    assert not store.keys.key_path.exists()  # made with the first entry
    fill(store)
    key_path = store.keys.key_path
    assert tmp_path.resolve() not in key_path.resolve().parents
    assert key_path.parent == ledger.default_key_folder()
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(key_path.parent).st_mode) == 0o700
    key = key_path.read_text()
    assert len(key) == 64 and key.encode() not in store.path.read_bytes()
    ledger.LedgerStore(tmp_path).append("x", "flat", [level()], 1.0, 0.0, None, "m4")
    assert key_path.read_text() == key  # O_EXCL: never replaced
    key_path.unlink()
    (problem,) = store.verify()
    # the sentence every session sees names no file; the operator's detail says which
    assert problem == "the ledger's key or head is missing — refusing to report totals"
    assert str(key_path) in problem.detail and str(key_path) in problem.for_operator()
    with pytest.raises(StoreUnavailable, match="refusing to report totals"):
        store.append("x", "flat", [level()], 1.0, 0.0, None, "m5")  # no new key is made
    assert not key_path.exists()


def test_a_key_folder_others_can_change_is_refused(tmp_path, monkeypatch):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    unsafe = "the ledger's key and head are kept where others can change them — refusing to " \
             "report totals"
    os.chmod(store.keys.folder, 0o770)
    (problem,) = store.verify()
    assert problem == unsafe and "mode 770" in problem.detail
    os.chmod(store.keys.folder, 0o700)
    assert store.verify() == []
    monkeypatch.setenv(ledger.KEY_FOLDER_VARIABLE, str(tmp_path / "keys"))  # in the database's
    inside = ledger.LedgerStore(tmp_path)
    (problem,) = inside.verify()
    assert problem == unsafe and "inside the database's folder" in problem.detail
    with pytest.raises(StoreUnavailable, match="refusing"):
        inside.append("x", "flat", [level()], 1.0, 0.0, None, "m4")
    shared = tmp_path.parent / f"{tmp_path.name}-shared"  # a folder anyone may rename things in
    shared.mkdir(mode=0o700)
    os.chmod(shared, 0o777)
    monkeypatch.setenv(ledger.KEY_FOLDER_VARIABLE, str(shared / "keys"))
    (problem,) = ledger.LedgerStore(tmp_path / "fresh").verify()  # even a fresh ledger
    assert problem == unsafe and "lets other accounts rename" in problem.detail
    os.chmod(shared, 0o1777)  # sticky, as /tmp: only an entry's owner renames it
    assert ledger.LedgerStore(tmp_path / "fresh").verify() == []


def test_the_key_and_head_of_an_earlier_version_are_named_for_the_operator(tmp_path):
    """Versions before issue 40 kept them beside the database: the refusal says how to move
    them (the operator's decision: whoever could write that folder could have replaced them)."""
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    legacy = tmp_path / ledger.KEY_FOLDER
    legacy.mkdir()
    store.keys.key_path.rename(legacy / ledger.KEY_FILE)
    store.keys.head_path.rename(legacy / "head.json")
    (problem,) = store.verify()
    assert problem == "the ledger's key or head is missing — refusing to report totals"
    assert f"mv {legacy / 'head.json'} {store.keys.head_path}" in problem.detail
    assert f"mv {legacy / ledger.KEY_FILE} {store.keys.key_path}" in problem.detail
    (legacy / ledger.KEY_FILE).rename(store.keys.key_path)
    (legacy / "head.json").rename(store.keys.head_path)
    assert store.verify() == []


def test_each_database_has_its_own_head(tmp_path):
    first, second = ledger.LedgerStore(tmp_path / "a"), ledger.LedgerStore(tmp_path / "b")
    fill(first)
    second.append("x", "flat", [level()], 1.0, 0.0, None, "m1")
    assert first.keys.key_path == second.keys.key_path
    assert first.keys.head_path != second.keys.head_path
    assert first.verify() == [] and second.verify() == []


def test_a_key_from_the_environment_and_its_check(tmp_path, monkeypatch):
    monkeypatch.setenv(ledger.KEY_VARIABLE, "ab" * 32)
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    assert not store.keys.key_path.exists() and store.verify() == []
    monkeypatch.setenv(ledger.KEY_VARIABLE, "cd" * 32)  # another key: nothing checks out
    assert len([p for p in store.verify() if "MAC does not match" in p]) == 3
    monkeypatch.setenv(ledger.KEY_VARIABLE, "short")
    with pytest.raises(StoreUnavailable, match="not set correctly") as caught:
        store.append("x", "flat", [level()], 1.0, 0.0, None, "m")
    assert "64 hexadecimal digits" in caught.value.detail and ledger.KEY_VARIABLE not in \
        str(caught.value)
    (problem,) = store.verify()
    assert problem == "the server's ledger key is not set correctly — refusing to report totals"
    assert "64 hexadecimal digits" in problem.detail


def test_a_damaged_key_file_is_said_plainly_with_the_path_for_the_operator(tmp_path, capsys):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    store.keys.key_path.write_text("not a key")
    with pytest.raises(StoreUnavailable) as caught:
        store.append("x", "flat", [level()], 1.0, 0.0, None, "m4")
    assert str(store.keys.key_path) not in str(caught.value)
    assert str(store.keys.key_path) in caught.value.detail
    # the command line is the operator's: it shows where
    assert cli.main(["ledger", "--folder", str(tmp_path)]) == cli.EXIT_INVALID_INPUT
    assert str(store.keys.key_path) in capsys.readouterr().err


def test_a_missing_head_record_is_reported_and_a_publish_after_a_loss_keeps_the_gap(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    tamper(store, "DROP TABLE ledger")
    assert store.entries() == []
    entry = store.append("Toy town 2026", "flat", [level()], 1.0, 0.0, None, "m4")
    assert entry.number == 4  # numbering goes on from the head: the loss stays visible
    assert store.verify() == ["the ledger lost entries 1…3"]
    store.keys.head_path.unlink()
    (problem,) = store.verify()
    assert problem == "the ledger's key or head is missing — refusing to report totals"
    assert str(store.keys.head_path) in problem.detail


def test_the_ledger_survives_a_new_process(tmp_path, monkeypatch):
    monkeypatch.setenv(classroom.FOLDER_VARIABLE, str(tmp_path))
    store = ledger.LedgerStore()
    assert store.path == tmp_path / classroom.DATABASE_NAME  # the classroom's database file
    fill(store)
    code = ("from dpcore.interfaces import ledger; s = ledger.LedgerStore(); "
            "s.append('Toy town 2026', 'flat', [ledger.LevelCost('fine level', 2.0, 0.0, None)], "
            "2.0, 0.0, None, 'm4'); print(len(s.entries()), s.verify())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert out.stdout.split() == ["4", "[]"]
    assert [e.manifest_id for e in ledger.LedgerStore().entries()] == ["m1", "m2", "m3", "m4"]


def test_totals_show_only_tighter_compositions():
    two = [ledger.Entry(i, "t", "d", "flat", (), 1.0, 0.0, None, "m") for i in (1, 2)]
    totals = ledger.totals(two)
    assert totals["composition"].tolist() == ["basic (budgets add up)"]  # advanced is worse
    assert totals["epsilon"].iloc[0] == 2.0
    many = [ledger.Entry(i, "t", "d", "flat", (), 0.1, 0.0, None, "m") for i in range(200)]
    totals = ledger.totals(many).set_index("composition")
    advanced = math.sqrt(2 * math.log(1e6) * 200 * 0.01) + 200 * 0.1 * math.expm1(0.1)
    assert totals.loc["advanced (δ′ = 1e-06)", "epsilon"] == pytest.approx(advanced)
    assert advanced < 20


def gaussian_entries(count, epsilon, delta, label="d"):
    """``count`` analytic-Gaussian publications at (ε, δ), with the ρ = 1/(2σ²) they record."""
    rho = composition.gaussian_rho(analytic_gaussian_sigma(epsilon, delta))
    return [ledger.Entry(i, "t", label, "flat (gaussian)", (), epsilon, delta, rho, "m")
            for i in range(1, count + 1)]


def test_the_zcdp_total_of_gaussian_publishes_is_the_formula_at_basics_delta():
    """Bun & Steinke 2016: ρ's add (Lemma 1.7), ρ-zCDP is (ρ + 2√(ρ ln(1/δ)), δ)-DP (Prop. 1.3)."""
    entries = gaussian_entries(4, 1.0, 1e-6)
    totals = ledger.totals(entries).set_index("composition")
    rho = 4 * entries[0].rho
    zcdp = totals.iloc[-1]
    assert totals.index[-1].startswith("zCDP")
    assert zcdp["rho"] == pytest.approx(rho)
    assert zcdp["delta"] == pytest.approx(4e-6) == totals.loc["basic (budgets add up)", "delta"]
    assert zcdp["epsilon"] == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / 4e-6)))
    assert math.isnan(totals.loc["basic (budgets add up)", "rho"])


def test_twelve_monthly_gaussian_releases_cost_less_in_zcdp_than_added_up():
    totals = ledger.totals(gaussian_entries(12, 1.0, 1e-6)).set_index("composition")
    basic, zcdp = totals.iloc[0], totals.iloc[-1]
    assert basic["epsilon"] == pytest.approx(12.0)
    assert zcdp["epsilon"] == pytest.approx(4.2395, abs=1e-3)  # docs/PLAN_AND_PUBLISH.md
    assert zcdp["delta"] == basic["delta"]
    assert zcdp["note"].endswith("smaller than basic at the same δ")
    # One release alone: zCDP's conversion is looser than the release's own (ε, δ).
    (one,) = ledger.totals(gaussian_entries(1, 1.0, 1e-6))[lambda t: t["composition"].str
                                                            .startswith("zCDP")].itertuples()
    assert one.epsilon == pytest.approx(1.2723, abs=1e-3) and "basic is the tighter" in one.note


def test_a_mixed_ledger_counts_pure_publications_as_half_epsilon_squared():
    """Bun & Steinke 2016, Prop. 1.4: ε-DP implies ε²/2-zCDP; a δ > 0 publication without a ρ
    cannot be put in ρ, and then only the basic total is shown, with the reason."""
    gaussian = gaussian_entries(6, 0.5, 1e-6)
    laplace = [ledger.Entry(7, "t", "d", "flat (discrete_laplace)", (), 0.3, 0.0, None, "m")]
    totals = ledger.totals(gaussian + laplace)
    zcdp = totals.iloc[-1]
    rho = 6 * gaussian[0].rho + 0.3 ** 2 / 2
    assert zcdp["rho"] == pytest.approx(rho)
    assert zcdp["epsilon"] == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / 6e-6)))
    assert "1 pure ε-DP publication(s) counted as ρ = ε²/2" in zcdp["note"]
    unknown = [ledger.Entry(8, "t", "d", "other", (), 0.3, 1e-7, None, "m")]
    totals = ledger.totals(gaussian + unknown)
    assert not totals["composition"].str.startswith("zCDP").any()
    assert totals["note"].iloc[0].startswith("no zCDP total: 1 publication(s) have δ > 0")
    pure_only = ledger.totals(laplace * 2)
    assert pure_only["composition"].tolist() == ["basic (budgets add up)"]
    assert pure_only["note"].tolist() == [""]
    vacuous = ledger.totals(gaussian_entries(20, 1.0, 0.1)).iloc[-1]  # basic's δ = 2: nothing
    assert vacuous["delta"] == ledger.SLACK_DELTA and "stated at δ = 1e-06" in vacuous["note"]
    assert vacuous["epsilon"] == pytest.approx(composition.zcdp_epsilon(vacuous["rho"], 1e-6))


def test_totals_per_label_and_unlabelled_publications_stand_alone(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    store.append("", "flat", [level()], 2.0, 0.0, None, "m4")
    store.append("  ", "flat", [level()], 3.0, 0.0, None, "m5")
    shown = ledger.table(store.entries())
    assert shown["ρ (zCDP)"].tolist() == ["—", "0.025", "—", "—", "—"]
    assert "None" not in shown.to_string()
    by = ledger.totals_by_label(store.entries())
    basic = by[by["composition"].str.startswith("basic")].set_index("label")
    assert basic.loc["Toy town 2026", "epsilon"] == 2.0
    assert basic.loc["Toy town 2026", "publications"] == 2
    assert basic.loc["Ireland 2016", "epsilon"] == 0.5
    # Issue 29: every session's unrelated uploads were added up as one dataset.
    assert basic.loc["unlabelled (entry 4)", "epsilon"] == 2.0
    assert basic.loc["unlabelled (entry 5)", "epsilon"] == 3.0


@pytest.mark.parametrize("text, problem", [("x" * 81, "81 characters long; keep it to 80"),
                                           ("a\x1b[31mb", "control characters"),
                                           ("Kildare \u202e6102", "bidirectional marks")])
def test_a_label_is_plain_text_of_bounded_length(text, problem):
    assert ledger.check_label("  Kildare   commuters 2016 ") == "Kildare commuters 2016"
    with pytest.raises(ValueError, match=problem.replace("(", "\\(")):
        ledger.check_label(text)


def test_levels_are_named_by_role():
    assert ledger.role_names(1, top_first=False) == ["fine level"]
    assert ledger.role_names(2, top_first=False) == ["fine level", "parent level"]
    assert ledger.role_names(3, top_first=True) == ["level 2 above the fine level",
                                                    "parent level", "fine level"]


def test_record_writes_the_chain_head_into_the_manifest(tmp_path):
    store = ledger.LedgerStore(tmp_path)
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    result = publish.publish_topdown(od, 1.0, delta=1e-6, whole_table=False, source=SOURCE)
    entry = ledger.record(store, result, "Leitrim 2016", "topdown (gaussian)")
    anchor = result.manifest["ledger_entry"]
    assert (anchor["number"], anchor["mac"]) == (entry.number, entry.mac)
    assert store.keys.head() == (1, entry.mac)
    assert entry.manifest_id == result.manifest["id"] and len(entry.manifest_id) == 32
    assert entry.rho == pytest.approx(result.manifest["rho_zcdp"])
    assert [lv.name for lv in entry.levels] == ["parent level", "fine level"]
    assert entry.levels[0].rho == pytest.approx(result.manifest["levels"][0]["rho_zcdp"])
    assert od.name not in json.dumps([lv.name for lv in entry.levels])


def publish_to(tmp_path, name, *extra):
    out = tmp_path / name
    assert cli.main(["publish", "--dataset", "toy_town", "--mechanism", "discrete_laplace",
                     "--epsilon", "0.5", "--label", "Toy town 2026", "--out", str(out),
                     *extra]) == 0
    return out


def test_manifests_anchor_the_ledger_against_a_rollback(tmp_path, capsys):
    """Deleting the newest entries and rolling the head record back with them is consistent in
    the server's folder: the published manifest still names the lost entry."""
    folders = [publish_to(tmp_path, f"p{i}") for i in range(3)]
    store = ledger.LedgerStore()
    second = store.entries()[1]
    assert cli.main(["ledger", "--verify", *map(str, folders)]) == 0
    assert "intact, 3 entries" in capsys.readouterr().out
    tamper(store, "DELETE FROM ledger WHERE number = 3")
    store.keys.write_head(2, second.mac)
    assert store.verify() == []  # consistent in the server's own folder …
    assert cli.main(["ledger", "--verify", *map(str, folders)]) == cli.EXIT_INVALID_INPUT
    err = capsys.readouterr().err  # … but not with what was published
    assert f"the ledger lost entry 3 (anchored by {folders[2] / 'manifest.json'})" in err
    manifest = json.loads((folders[1] / "manifest.json").read_text())
    manifest["ledger_entry"]["mac"] = "0" * 64
    (folders[1] / "manifest.json").write_text(json.dumps(manifest))
    assert ledger.check_anchors(store.entries(), [folders[1], tmp_path / "nowhere"]) == [
        f"entry 2 is not the one {folders[1] / 'manifest.json'} anchors",
        f"{tmp_path / 'nowhere' / 'manifest.json'}: no such file"]


def test_cli_publish_records_a_label_and_ledger_shows_it(tmp_path, capsys):
    out = tmp_path / "published"
    assert cli.main(["publish", "--dataset", "ireland_ed", "--area", "Leitrim", "--method",
                     "topdown", "--epsilon", "1", "--delta", "1e-6", "--label", "Leitrim 2016",
                     "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ledger_entry"]["number"] == 1
    assert cli.main(["publish", "--dataset", "toy_town", "--mechanism", "discrete_laplace",
                     "--epsilon", "0.5", "--out", str(tmp_path / "second")]) == 0
    assert "unlabelled: give --label" in capsys.readouterr().out
    assert cli.main(["ledger", "--out", str(tmp_path / "ledger.csv")]) == 0
    printed = capsys.readouterr().out
    assert "topdown (gaussian)" in printed and "flat (discrete_laplace)" in printed
    assert "Leitrim 2016" in printed and "unlabelled (entry 2)" in printed
    assert "intact" in printed and "None" not in printed
    assert cli.main(["publish", "--dataset", "toy_town", "--method", "topdown",
                     "--mechanism", "discrete_laplace", "--epsilon", "1",
                     "--out", str(tmp_path / "third")]) == cli.EXIT_USAGE


def test_cli_ledger_fails_on_tampering(tmp_path, capsys):
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    tamper(store, "DELETE FROM ledger WHERE number = 3")
    assert cli.main(["ledger", "--folder", str(tmp_path)]) == cli.EXIT_INVALID_INPUT
    assert "TAMPERED — the ledger lost entry 3" in capsys.readouterr().err


OLD_SCHEMA = """
CREATE TABLE publications(number INTEGER PRIMARY KEY, time TEXT NOT NULL,
    dataset TEXT NOT NULL, method TEXT NOT NULL, levels TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL, rho REAL, manifest_id TEXT NOT NULL, previous TEXT NOT NULL,
    hash TEXT NOT NULL);
CREATE TRIGGER publications_no_delete BEFORE DELETE ON publications
    BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END;
"""


def old_ledger(folder, rows):
    """A database written by the unkeyed ledger of earlier versions (its SHA-256 chain)."""
    folder.mkdir(exist_ok=True)
    with sqlite3.connect(folder / classroom.DATABASE_NAME) as db:
        db.executescript(OLD_SCHEMA)
        previous = "0" * 64
        for number, (dataset, method, levels, epsilon) in enumerate(rows, start=1):
            fields = {"number": number, "time": "2026-01-01T00:00:00+00:00", "dataset": dataset,
                      "method": method, "levels": levels, "epsilon": epsilon, "delta": 0.0,
                      "rho": None, "manifest_id": f"m{number}", "previous": previous}
            digest = hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False)
                                    .encode()).hexdigest()
            db.execute("INSERT INTO publications VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (number, fields["time"], dataset, method, json.dumps(levels), epsilon,
                        0.0, None, f"m{number}", previous, digest))
            previous = digest


def test_an_unkeyed_ledger_is_migrated_without_its_file_names(tmp_path):
    secret = "acme_staff_home_addresses_2026.csv"
    lv = {"name": secret, "epsilon": 1.0, "delta": 0.0, "rho": None}
    old_ledger(tmp_path, [(secret, "flat (gaussian)", [lv], 1.0),
                          ("toy_town", "wls (gaussian)", [lv, {**lv, "name": "county"}], 2.0)])
    store = ledger.LedgerStore(tmp_path)
    assert store.entries() == []  # reading seals nothing (issue 40): the operator migrates
    marker, *entries = store.migrate()
    assert marker.number == 1 and marker.method == ledger.MIGRATION
    assert [(e.number, e.label, e.epsilon) for e in entries] == [(2, "", 1.0),
                                                                 (3, "toy_town", 2.0)]
    assert [lv.name for lv in entries[1].levels] == ["fine level", "parent level"]
    assert all(e.note == "migrated from the unkeyed ledger (its SHA-256 chain was intact)"
               for e in entries)
    assert store.entries() == [marker, *entries]
    assert store.verify() == []
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in raw  # no row, freed page or log frame keeps the name
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'publications'"
                          ).fetchone() is None
    store.append("Toy town 2026", "flat", [level()], 1.0, 0.0, None, "m3")
    assert [e.number for e in store.entries()] == [1, 2, 3, 4] and store.verify() == []


def test_a_broken_unkeyed_ledger_is_migrated_with_a_note(tmp_path):
    lv = {"name": "county", "epsilon": 1.0, "delta": 0.0, "rho": None}
    old_ledger(tmp_path, [("toy_town", "flat (gaussian)", [lv], 1.0)] * 2)
    with sqlite3.connect(tmp_path / classroom.DATABASE_NAME) as db:
        db.execute("UPDATE publications SET epsilon = 0.1 WHERE number = 2")
    marker, first, second = ledger.LedgerStore(tmp_path).migrate()
    assert second.epsilon == 0.1
    assert "broken at entry 2: earlier edits cannot be ruled out" in first.note
    assert "broken at entry 2: earlier edits cannot be ruled out" in marker.note


def test_an_unreadable_unkeyed_ledger_is_refused_and_left_alone(tmp_path):
    lv = {"name": "county", "epsilon": 1.0, "delta": 0.0, "rho": None}
    old_ledger(tmp_path, [("toy_town", "flat (gaussian)", [lv], 1.0)])
    with sqlite3.connect(tmp_path / classroom.DATABASE_NAME) as db:
        db.execute("UPDATE publications SET levels = '{' WHERE number = 1")
    store = ledger.LedgerStore(tmp_path)
    with pytest.raises(ledger.Refused, match="cannot be read"):
        store.migrate()
    assert store.entries() == [] and not store.keys.head_path.exists()




def test_an_append_between_the_two_reads_is_not_a_loss(tmp_path):
    """Another session publishing after the table was read (head now ahead of what was read)
    is confirmed under the write lock, not reported as tampering."""
    store = ledger.LedgerStore(tmp_path)
    fill(store)
    seen = store.entries()
    store.append("Toy town 2026", "flat", [level()], 1.0, 0.0, None, "m4")
    assert store.verify(seen) == []
    tamper(store, "DELETE FROM ledger WHERE number = 4")  # a real loss stays reported
    assert store.verify(seen) == ["the ledger lost entry 4 (the newest recorded is 4)"]


def test_concurrent_publishes_keep_one_chain_and_never_look_tampered(tmp_path):
    import threading

    store = ledger.LedgerStore(tmp_path)
    store.append("first", "flat", [level()], 1.0, 0.0, None, "m0")  # the key exists
    seen, done = [], threading.Event()

    def publish(name):
        mine = ledger.LedgerStore(tmp_path)
        for i in range(15):
            mine.append(name, "flat", [level()], 0.1, 0.0, None, f"{name}{i}")

    def check():
        while not done.is_set():
            seen.append(ledger.LedgerStore(tmp_path).verify())
    workers = [threading.Thread(target=publish, args=(n,)) for n in ("a", "b")]
    checker = threading.Thread(target=check)
    checker.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    checker.join()
    assert [e.number for e in store.entries()] == list(range(1, 32))
    assert store.verify() == [] and seen and all(problems == [] for problems in seen)
