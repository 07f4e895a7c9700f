"""Issue 40's attacks on the budget ledger by someone who can write the database (and the
database's folder, which SQLite's write-ahead log needs writable) but not the server's own
folder, each on SQLite and on PostgreSQL, through the command line and the page:

1. an old-format ``publications`` table with forged budgets (its SHA-256 chain needs no key) was
   migrated and sealed under the server's key by the next ``ledger`` run or page view;
2. the key and the head record lived in the database's folder: renaming them and dropping the
   table gave "intact, 0 entries"; a key of the attacker's own re-sealed everything;
3. one malformed row crashed ``ledger`` (exit 2, a JSON error) and the page (a traceback, no
   Publish button).
"""

import hashlib
import json
import os
import stat

import pytest

from dpcore.interfaces import cli, ledger, store
from tests.test_app_plan import plan_page
from tests.test_store import backend, postgres_server  # noqa: F401 (fixtures)

LABEL = "Toy town 2026"
SPENT = 2.0  # ε of each of the three genuine publications: 6 in all
FORGED = 0.001  # ε of each forged one: 0.003 in all
OLD_TABLE = """CREATE TABLE publications(number INTEGER PRIMARY KEY, time TEXT NOT NULL,
    dataset TEXT NOT NULL, method TEXT NOT NULL, levels TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL, rho REAL, manifest_id TEXT NOT NULL, previous TEXT NOT NULL,
    hash TEXT NOT NULL)"""
DATABASE_FILES = {"classroom.sqlite3", "classroom.sqlite3-wal", "classroom.sqlite3-shm"}


def use(backend, monkeypatch) -> ledger.LedgerStore:
    """The app (page and command line) pointed at this backend's database; its ledger."""
    monkeypatch.setenv(store.FOLDER_VARIABLE, str(backend["folder"]))
    if "url" in backend:
        monkeypatch.setenv(store.URL_VARIABLE, backend["url"])
    else:
        monkeypatch.delenv(store.URL_VARIABLE, raising=False)
    return ledger.LedgerStore(**backend)


def publish_three(book: ledger.LedgerStore) -> None:
    for number in range(1, 4):
        book.append(LABEL, "flat", [ledger.LevelCost("fine level", SPENT, 0.0, None)], SPENT,
                    0.0, None, f"m{number}")


def run_ledger(capsys, *arguments) -> tuple[int, str, str]:
    code = cli.main(["ledger", *arguments])
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def drop_triggers(db, book) -> None:
    if book.database.server is None:
        db.execute("DROP TRIGGER IF EXISTS ledger_no_update")
        db.execute("DROP TRIGGER IF EXISTS ledger_no_delete")
    else:
        for name in ("ledger_no_update", "ledger_no_delete", "ledger_no_delete_truncate"):
            db.raw.execute(f"DROP TRIGGER IF EXISTS {name} ON ledger")


def forged_old_ledger(db, epsilons) -> None:
    """An unkeyed ledger of an earlier version, written by the attacker: its SHA-256 chain is
    valid, since anyone can compute it."""
    db.execute(OLD_TABLE)
    previous = "0" * 64
    for number, epsilon in enumerate(epsilons, start=1):
        fields = {"number": number, "time": "2026-01-01T00:00:00+00:00", "dataset": "toy_town",
                  "method": "flat (gaussian)", "levels": [{"name": "county", "epsilon": epsilon,
                                                           "delta": 0.0, "rho": None}],
                  "epsilon": epsilon, "delta": 0.0, "rho": None, "manifest_id": f"f{number}",
                  "previous": previous}
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False)
                                .encode()).hexdigest()
        db.execute("INSERT INTO publications VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (number, fields["time"], "toy_town", fields["method"],
                    json.dumps(fields["levels"]), epsilon, 0.0, None, f"f{number}", previous,
                    digest))
        previous = digest


def keyed_rows_and_old_table(book) -> tuple[int, bool]:
    with book.database.read() as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                              "'table'").fetchall()}
        rows = (db.execute("SELECT COUNT(*) FROM ledger").fetchone()[0]
                if "ledger" in names else 0)
    return rows, "publications" in names


def page_text(at) -> str:
    return " ".join(str(getattr(element, "value", "")) for element in at.main
                    ).replace("\\", "")  # markdown escapes undone


def errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]


# ------------------------------------------------------------------------------------ attack 1
def test_attack_1_a_forged_unkeyed_ledger_is_never_sealed(backend, monkeypatch, capsys):
    book = use(backend, monkeypatch)
    publish_three(book)
    with book.database.write() as db:
        db.execute("DROP TABLE ledger")
        forged_old_ledger(db, [FORGED] * 3)
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT and "intact" not in out
    assert "the ledger lost entries 1…3" in err and "0.003" not in out
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert not at.exception
    assert not any("Keyed chain intact" in c.value for c in at.caption)
    assert any("the ledger lost entries 1…3" in e for e in errors(at))
    # neither the command line nor the page sealed a row the app did not write
    assert keyed_rows_and_old_table(book) == (0, True)
    # and the operator's migration refuses: the keyed ledger had entries before this table
    code, out, err = run_ledger(capsys, "--migrate")
    assert code == cli.EXIT_INVALID_INPUT
    assert "refusing to migrate" in err and "the head record names entry 3" in err
    assert keyed_rows_and_old_table(book) == (0, True)


def test_a_genuine_old_ledger_moves_only_by_the_operators_command_once(backend, monkeypatch,
                                                                        capsys):
    book = use(backend, monkeypatch)
    with book.database.write() as db:
        forged_old_ledger(db, [1.0, 0.5])
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT
    assert "unkeyed ledger of an earlier version" in err and "ledger --migrate" in err
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert any("ledger --migrate" in e for e in errors(at))
    assert at.button(key="publish_go").disabled  # nothing appended before the old entries
    assert keyed_rows_and_old_table(book) == (0, True)
    code, out, err = run_ledger(capsys, "--migrate")
    assert code == 0, err
    assert "moved 2 entries of the unkeyed ledger" in out
    entries = book.entries()
    assert [(e.number, e.method, e.epsilon) for e in entries] == [
        (1, ledger.MIGRATION, 0.0), (2, "flat (gaussian)", 1.0), (3, "flat (gaussian)", 0.5)]
    assert "entries 2…3 were moved from the unkeyed ledger" in entries[0].note
    assert "its SHA-256 chain was intact" in entries[0].note
    code, out, err = run_ledger(capsys)
    assert code == 0 and "intact, 3 entries" in out
    totals = ledger.totals_by_label(entries)  # the migration's entry is not a publication
    assert totals[["label", "publications", "epsilon"]].values.tolist() == [["toy_town", 2, 1.5]]
    assert keyed_rows_and_old_table(book) == (3, False)
    # once: a second unkeyed table is refused, whoever made it
    with book.database.write() as db:
        forged_old_ledger(db, [FORGED])
    code, out, err = run_ledger(capsys, "--migrate")
    assert code == cli.EXIT_INVALID_INPUT and "refusing to migrate" in err
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT
    assert "a table of the unkeyed ledger appeared after the keyed ledger began" in err


# ------------------------------------------------------------------------------------ attack 2
@pytest.mark.parametrize("key_in_environment", [False, True])
def test_attack_2_the_database_folder_holds_neither_key_nor_head(backend, monkeypatch, capsys,
                                                                 key_in_environment):
    if key_in_environment:
        monkeypatch.setenv(ledger.KEY_VARIABLE, "ab" * 32)
    book = use(backend, monkeypatch)
    publish_three(book)
    folder = backend["folder"]
    # the database writer renames everything in the folder but the database itself …
    for path in folder.iterdir():
        if path.name not in DATABASE_FILES:
            path.rename(folder / f"{path.name}.moved")
    with book.database.write() as db:  # … and drops the table
        db.execute("DROP TABLE ledger")
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT and "intact" not in out
    assert "the ledger lost entries 1…3" in err and "No publication recorded yet" not in out
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert "Nothing published yet" not in page_text(at)
    assert any("the ledger lost entries 1…3" in e for e in errors(at))


def test_attack_2_a_key_of_the_attackers_own_reseals_nothing(backend, monkeypatch, capsys):
    book = use(backend, monkeypatch)
    publish_three(book)
    folder, theirs = backend["folder"], b"\x01" * 32
    old = folder / ledger.KEY_FOLDER
    if old.exists():
        old.rename(folder / "ledger-key.moved")
    old.mkdir(mode=0o700)
    (old / ledger.KEY_FILE).write_text(theirs.hex())
    forged, previous = [], ledger.GENESIS
    for entry in book.entries():
        entry = ledger.Entry(**{**entry.__dict__, "epsilon": FORGED, "previous": previous,
                                "levels": (ledger.LevelCost("fine level", FORGED, 0.0, None),)})
        entry = ledger.Entry(**{**entry.__dict__, "mac": entry.seal(theirs)})
        forged.append(entry)
        previous = entry.mac
    (old / "head.json").write_text(json.dumps({"number": 3, "mac": previous}))
    with book.database.write() as db:
        drop_triggers(db, book)
        db.execute("DELETE FROM ledger")
        for entry in forged:
            ledger._insert(db, entry)
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT and "intact" not in out
    assert "entry 1 was changed after it was recorded" in err


def test_attack_2_a_lost_key_or_head_refuses_totals_and_a_fresh_start_works(
        backend, monkeypatch, capsys):
    book = use(backend, monkeypatch)
    code, out, err = run_ledger(capsys)  # a fresh install: empty and valid
    assert code == 0 and "intact, 0 entries" in out
    publish_three(book)
    keys = ledger.LedgerStore(**backend).keys
    database_folder = backend["folder"].resolve()
    assert database_folder not in keys.folder.resolve().parents
    assert keys.folder.resolve() != database_folder
    assert stat.S_IMODE(os.stat(keys.folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(keys.key_path).st_mode) == 0o600
    for lost in (keys.head_path, keys.key_path):
        lost.rename(lost.with_name(lost.name + ".kept"))
        code, out, err = run_ledger(capsys)
        assert code == cli.EXIT_INVALID_INPUT
        assert "the ledger's key or head is missing — refusing to report totals" in err
        assert str(lost) in err and "basic" not in out  # no totals
        at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
        assert any("the ledger's key or head is missing — refusing to report totals" in e
                   for e in errors(at))
        assert not [d for d in at.dataframe if "composition" in d.value.columns]
        assert str(keys.folder) not in page_text(at)
        assert at.button(key="publish_go").disabled
        lost.with_name(lost.name + ".kept").rename(lost)
    code, out, err = run_ledger(capsys)
    assert code == 0 and "intact, 3 entries" in out


# ------------------------------------------------------------------------------------ attack 3
@pytest.mark.parametrize("column, value", [("levels", "{not json"), ("levels", "[1]"),
                                           ("levels", '[{"name": 5}]'), ("epsilon", "abc"),
                                           ("mac", None)])
def test_attack_3_a_malformed_row_is_tampering_not_a_crash(backend, monkeypatch, capsys,
                                                           column, value):
    book = use(backend, monkeypatch)
    publish_three(book)
    with book.database.write() as db:
        drop_triggers(db, book)
        if column == "epsilon" and book.database.server is not None:
            db.raw.execute("ALTER TABLE ledger ALTER COLUMN epsilon TYPE TEXT")
        if value is None:  # a NOT NULL column: the table rebuilt without the constraint
            db.execute("CREATE TABLE copy AS SELECT * FROM ledger")
            db.execute("DROP TABLE ledger")
            db.execute("ALTER TABLE copy RENAME TO ledger")
        db.execute(f"UPDATE ledger SET {column} = ? WHERE number = 2", (value,))
    code, out, err = run_ledger(capsys)
    assert code == cli.EXIT_INVALID_INPUT and "Traceback" not in out + err
    assert "entry 2 cannot be read: it was changed outside the app" in err
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert not at.exception
    assert any("entry 2 cannot be read" in e for e in errors(at))
    assert not at.button(key="publish_go").disabled
    at.button(key="publish_go").click().run()
    assert not at.exception and any("(ledger entry 4)" in s.value for s in at.success)
