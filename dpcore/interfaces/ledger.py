"""The privacy budget ledger: every publication, kept in the app's local database, and what they
cost together.

Releases about the same people compose: their budgets add up (basic composition), or grow like
the square root of their number (advanced composition, Dwork, Rothblum, Vadhan, "Boosting and
differential privacy", FOCS 2010, in its form for different ε_i: ε' = √(2 ln(1/δ')·Σε_i²) +
Σε_i(e^{ε_i} − 1), δ' added to Σδ_i), or — when Gaussian noise is used — through zCDP, where ρ
adds up exactly (Bun, Steinke, "Concentrated differential privacy", TCC 2016: an ε-DP release is
ε²/2-zCDP, and ρ-zCDP gives (ρ + 2√(ρ ln(1/δ)), δ)-DP). A total is shown under basic composition
always, and under the others only where they are tighter (advanced composition is worse than
basic for few or large budgets).

**What an entry names.** A label the publisher types for the population (e.g. "Kildare commuters
2016"), never a file name or anything read from the rows, and its levels by role ("fine level",
"parent level"): the ledger is shown to every session on the server. Composition groups entries
by label; an unlabelled publication is its own group (never lumped with other unlabelled ones).

**Tamper evidence** (issue 29), against someone who can write the database file but not the
server's secret key:

* each entry carries an HMAC-SHA256 (RFC 2104) of its fields and of the previous entry's MAC,
  under a key kept outside the database (:class:`Keys`: ``$DPCORE_LEDGER_KEY``, else a file
  created on first use with ``O_CREAT | O_EXCL`` and mode 0o600 in the key folder beside the
  database). Editing, reordering or deleting entries and re-sealing them needs the key;
* the key folder also keeps the chain's **head** (newest entry's number and MAC), rewritten at
  every append under the database's write lock, and every manifest carries the head as it was
  when it was recorded (``ledger_entry``: number and MAC), so published folders anchor the chain.

:meth:`LedgerStore.verify` reports a changed entry (its MAC does not match), a gap ("the ledger
lost entries N…M"), a dropped table or a shortened chain (the head is ahead of the table), a head
that does not match, and a missing key or head; :func:`check_anchors` checks manifests against
the table. Each problem (:class:`Problem`) is a plain sentence that names no file, for the page
every session sees, with the server's paths in its ``detail``, for the operator (command line,
server log): where the key lives is nobody else's business. **Not detected**: someone who holds
the key (the server's operator) rewriting everything; the database and the head file rolled back
together to an earlier consistent state, unless a manifest published since anchors a later entry
(``ledger --verify DIR…``); and a publication made without the app. "Starting afresh" is not
offered: forgetting an entry does not make its release any less public.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from dpcore.interfaces import store
from dpcore.text import has_controls

#: δ' of advanced composition and the δ at which a zCDP total is stated.
SLACK_DELTA = 1e-6
GENESIS = "0" * 64
#: The key (64 hex digits), when the operator keeps it in the environment rather than a file.
KEY_VARIABLE = "DPCORE_LEDGER_KEY"
#: The folder of the key file and the head record; default :data:`KEY_FOLDER` beside the database.
KEY_FOLDER_VARIABLE = "DPCORE_LEDGER_KEY_DIR"
KEY_FOLDER, KEY_FILE, HEAD_FILE = "ledger-key", "key", "head.json"
#: Longest label (it may not hold control or bidirectional characters: dpcore.text).
LABEL_CHARS = 80
UNLABELLED = "unlabelled"
STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS ledger(number INTEGER PRIMARY KEY, time TEXT NOT NULL,
    label TEXT NOT NULL, method TEXT NOT NULL, levels TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL, rho REAL, manifest_id TEXT NOT NULL, note TEXT NOT NULL,
    previous TEXT NOT NULL, mac TEXT NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS ledger_no_update BEFORE UPDATE ON ledger
    BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS ledger_no_delete BEFORE DELETE ON ledger
    BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END""")
SCHEMA = ";\n".join(STATEMENTS) + ";"
#: The unkeyed ledger of earlier versions (SHA-256 chain; its ``dataset`` could hold file names).
OLD_TABLE = "publications"


def check_label(text: str | None) -> str:
    """The publisher's label, trimmed ("" when none), or ValueError saying what to change."""
    label = " ".join(str(text or "").split())
    if len(label) > LABEL_CHARS:
        raise ValueError(f"the ledger label is {len(label)} characters long; keep it to "
                         f"{LABEL_CHARS} (e.g. \"Kildare commuters 2016\")")
    if has_controls(label):
        raise ValueError("the ledger label holds control characters or bidirectional marks "
                         "(e.g. U+202E, which reverses the text after it); type plain text")
    return label


def role_names(count: int, top_first: bool) -> list[str]:
    """Levels named by their role, in the manifest's order: the finest is the "fine level", the
    one above it the "parent level", then "level k above the fine level"."""
    roles = ["fine level", "parent level"] + [f"level {k} above the fine level"
                                              for k in range(2, max(count, 2))]
    roles = roles[:count]
    return roles[::-1] if top_first else roles


@dataclass(frozen=True)
class LevelCost:
    """One level of a publication and its share of the budget (ρ: None for pure ε-DP noise)."""

    name: str
    epsilon: float
    delta: float
    rho: float | None


@dataclass(frozen=True)
class Entry:
    number: int
    time: str
    label: str  # the publisher's label; "" when none (its own composition group)
    method: str
    levels: tuple[LevelCost, ...]
    epsilon: float
    delta: float
    rho: float | None  # the publication's zCDP parameter, when it has one (Gaussian noise)
    manifest_id: str
    note: str = ""  # e.g. that the entry was migrated from the unkeyed ledger
    previous: str = GENESIS
    mac: str = ""

    @property
    def group(self) -> str:
        """The composition group: the label, or the entry on its own when unlabelled."""
        return self.label or f"{UNLABELLED} (entry {self.number})"

    def seal(self, key: bytes) -> str:
        """HMAC-SHA256 under ``key`` of every field but the MAC (the previous MAC included)."""
        fields = asdict(self)
        fields.pop("mac")
        message = json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------- key and head
class Keys:
    """The ledger's secret and its head record, kept outside the database: in
    ``$DPCORE_LEDGER_KEY_DIR``, else the folder :data:`KEY_FOLDER` beside the database file
    (mode 0o700). The key is ``$DPCORE_LEDGER_KEY`` when set, else the file :data:`KEY_FILE`
    there, made on first use (``O_CREAT | O_EXCL``, 0o600: two processes never make two keys)."""

    def __init__(self, database_folder: Path):
        configured = os.environ.get(KEY_FOLDER_VARIABLE)
        self.folder = Path(configured) if configured else Path(database_folder) / KEY_FOLDER
        self.key_path, self.head_path = self.folder / KEY_FILE, self.folder / HEAD_FILE

    def key(self, create: bool) -> bytes | None:
        """The key; None when there is none yet and ``create`` is false."""
        given = os.environ.get(KEY_VARIABLE)
        if given:
            try:
                key = bytes.fromhex(given.strip())
            except ValueError:
                key = b""
            if len(key) < 32:
                raise ValueError(f"${KEY_VARIABLE} must be at least 64 hexadecimal digits "
                                 "(e.g. from: python3 -c 'import secrets; "
                                 "print(secrets.token_hex(32))')")
            return key
        if create and not self.key_path.exists():
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                handle = os.open(self.key_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                pass  # another process made it first: use theirs
            else:
                with os.fdopen(handle, "w") as file:
                    file.write(secrets.token_hex(32))
        try:
            text = self.key_path.read_text().strip()
        except FileNotFoundError:
            return None
        return bytes.fromhex(text) if len(text) == 64 else None

    def head(self) -> tuple[int, str] | None:
        """(number, MAC) of the newest entry as last recorded; None when never written."""
        try:
            head = json.loads(self.head_path.read_text())
            return int(head["number"]), str(head["mac"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return (-1, "unreadable")

    def write_head(self, number: int, mac: str) -> None:
        """Replace the head record (write then rename: never half written)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.head_path.with_suffix(".tmp")
        handle = os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        with os.fdopen(handle, "w") as file:
            json.dump({"number": number, "mac": mac}, file)
        os.replace(temporary, self.head_path)


class Problem(str):
    """One thing wrong with the ledger: the string is a plain sentence naming no file on the
    server (shown on the page to every session); ``detail`` says where, for whoever runs the
    server (the command line and the server's log show it, :meth:`for_operator`)."""

    detail: str

    def __new__(cls, sentence: str, detail: str = ""):
        problem = super().__new__(cls, sentence)
        problem.detail = detail
        return problem

    def for_operator(self) -> str:
        return f"{self} ({self.detail})" if self.detail else str(self)


def _span(first: int, last: int) -> str:
    return f"entry {first}" if first == last else f"entries {first}…{last}"


class LedgerStore:
    """The ledger table of the app's database (:class:`dpcore.interfaces.store.Database`: every
    call opens its own connection, so Streamlit sessions and processes never share one; an append
    is one write transaction, the head record written under its lock). ``url``: a PostgreSQL
    server (default ``$DPCORE_STORE_URL`` when no ``folder`` is given); the key folder stays on
    disk, beside ``folder``, unless ``$DPCORE_LEDGER_KEY_DIR`` moves it."""

    def __init__(self, folder: Path | str | None = None, url: str | None = None):
        self.database = store.Database(SCHEMA, folder, url=url)
        self.path = self.database.path
        self.keys = Keys(self.database.folder)

    # ----------------------------------------------------------------------------- writing
    def append(self, label: str, method: str, levels, epsilon: float, delta: float,
               rho: float | None, manifest_id: str) -> Entry:
        """Record a publication; returns its entry (number and MAC). After a loss the numbering
        goes on from the head record, so the gap stays visible."""
        label = check_label(label)
        levels = tuple(LevelCost(str(lv.name), float(lv.epsilon), float(lv.delta),
                                 None if lv.rho is None else float(lv.rho)) for lv in levels)
        self._migrate_if_needed()
        key = self._key(create=True)
        if key is None:
            raise store.StoreUnavailable(
                "The budget ledger's key is damaged, so nothing can be recorded. Ask the person "
                "running this app.", f"key file {self.keys.key_path}: not 64 hexadecimal digits")
        with self.database.write() as db:
            self._prepare(db, key)
            last = db.execute("SELECT number, mac FROM ledger ORDER BY number DESC "
                              "LIMIT 1").fetchone()
            number, previous = (last[0], last[1]) if last else (0, GENESIS)
            head = self.keys.head()
            if head is not None and head[0] > number:
                number, previous = head
            entry = Entry(number + 1, _now(), label, str(method), levels, float(epsilon),
                          float(delta), None if rho is None else float(rho), str(manifest_id),
                          "", previous)
            entry = Entry(**{**entry.__dict__, "mac": entry.seal(key)})
            _insert(db, entry)
            self.keys.write_head(entry.number, entry.mac)
        return entry

    def _key(self, create: bool) -> bytes | None:
        """The key, or :class:`~dpcore.interfaces.store.StoreUnavailable` (a plain sentence, the
        configuration problem in its detail) when ``$DPCORE_LEDGER_KEY`` is malformed."""
        try:
            return self.keys.key(create)
        except ValueError as error:
            raise store.StoreUnavailable(
                "The budget ledger's key is not set correctly on this server, so nothing can be "
                "recorded or checked. Ask the person running this app.", str(error)) from None

    def _prepare(self, db: sqlite3.Connection, key: bytes) -> None:
        """Re-create a dropped table (the loss stays visible through the head record) and move
        an unkeyed ledger of an earlier version into the keyed one (:func:`_migrate`)."""
        for statement in STATEMENTS:
            db.execute(statement)
        if _has_table(db, OLD_TABLE):
            _migrate(db, key, self.keys)

    # ----------------------------------------------------------------------------- reading
    def entries(self) -> list[Entry]:
        """Every entry in the table, in order ([] when the table is missing)."""
        self._migrate_if_needed()
        with self.database.read() as db:
            return _read(db)

    def _migrate_if_needed(self) -> None:
        with self.database.read() as db:
            old = _has_table(db, OLD_TABLE)
        if old:
            with self.database.write() as db:
                db.execute("PRAGMA secure_delete = ON")  # the old rows' bytes are zeroed …
                self._prepare(db, self._key(create=True))
            with self.database.read() as db:
                db.execute("ROLLBACK")
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # … and leave the write-ahead log

    def verify(self, entries: list[Entry] | None = None) -> list[Problem]:
        """What is wrong with the ledger, one :class:`Problem` each ([] when nothing is).

        The table and the head record are read apart, so an append by another session between
        the two reads looks like a loss; a problem is therefore confirmed under the database's
        write lock, which every append holds while it writes both."""
        entries = self.entries() if entries is None else entries
        problems = self._problems(entries, self.keys.head())
        if problems:
            try:
                with self.database.write() as db:  # no append can run meanwhile
                    entries, head = _read(db), self.keys.head()
            except store.StoreUnavailable:  # e.g. a read-only database: keep the first look
                return problems
            problems = self._problems(entries, head)
        return problems

    def _problems(self, entries: list[Entry], head: tuple[int, str] | None) -> list[Problem]:
        try:
            key = self.keys.key(create=False)
        except ValueError as error:  # a malformed $DPCORE_LEDGER_KEY
            return [Problem("the server's ledger key is not set correctly, so no entry can be "
                            "checked", str(error))]
        if key is None:
            return ([Problem("the ledger's key is missing or damaged, so no entry can be "
                             "checked", f"key file {self.keys.key_path}")]
                    if entries or head else [])
        problems, previous, expected = [], GENESIS, 1
        for entry in entries:
            if entry.number > expected:
                problems.append(Problem(f"the ledger lost {_span(expected, entry.number - 1)}"))
            elif entry.previous != previous:
                problems.append(Problem(f"entry {entry.number} does not follow entry "
                                        f"{entry.number - 1}"))
            if not hmac.compare_digest(entry.seal(key), entry.mac):
                problems.append(Problem(f"entry {entry.number} was changed after it was "
                                        "recorded (its MAC does not match the server's key)"))
            previous, expected = entry.mac, entry.number + 1
        newest = entries[-1].number if entries else 0
        head_file = f"head record {self.keys.head_path}"
        if head is None:
            if entries:
                problems.append(Problem("the ledger's head record is missing", head_file))
        elif head[0] < 0:
            problems.append(Problem("the ledger's head record is damaged", head_file))
        elif head[0] > newest:
            problems.append(Problem(f"the ledger lost {_span(newest + 1, head[0])} (the newest "
                                    f"recorded is {head[0]})"))
        elif head[0] < newest:
            problems.append(Problem(f"the head record names entry {head[0]} but the table goes "
                                    f"on to {newest}: the head was rolled back"))
        elif entries and head[1] != entries[-1].mac:
            problems.append(Problem(f"entry {newest} is not the one recorded as the newest"))
        return problems


def _read(db: sqlite3.Connection) -> list[Entry]:
    """Every entry of the table, in order ([] when the table is missing)."""
    if not _has_table(db, "ledger"):
        return []
    rows = db.execute("SELECT * FROM ledger ORDER BY number").fetchall()
    return [Entry(number, time, label, method,
                  tuple(LevelCost(**lv) for lv in json.loads(levels)), epsilon, delta, rho,
                  manifest_id, note, previous, mac)
            for (number, time, label, method, levels, epsilon, delta, rho, manifest_id,
                 note, previous, mac) in rows]


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                      (name,)).fetchone() is not None


def _insert(db: sqlite3.Connection, entry: Entry) -> None:
    db.execute("INSERT INTO ledger VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
               (entry.number, entry.time, entry.label, entry.method,
                json.dumps([asdict(lv) for lv in entry.levels], ensure_ascii=False),
                entry.epsilon, entry.delta, entry.rho, entry.manifest_id, entry.note,
                entry.previous, entry.mac))


def _old_chain_problem(rows) -> str | None:
    """The unkeyed SHA-256 chain of an earlier version, checked as it was then."""
    previous = GENESIS
    for expected, row in enumerate(rows, start=1):
        (number, time, dataset, method, levels, epsilon, delta, rho, manifest_id, prev,
         digest) = row
        fields = {"number": number, "time": time, "dataset": dataset, "method": method,
                  "levels": json.loads(levels), "epsilon": epsilon, "delta": delta, "rho": rho,
                  "manifest_id": manifest_id, "previous": prev}
        if number != expected or prev != previous or hashlib.sha256(json.dumps(
                fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest() != digest:
            return f"broken at entry {expected}"
        previous = digest
    return None


def _migrate(db: sqlite3.Connection, key: bytes, keys: Keys) -> None:
    """Move the unkeyed ledger of an earlier version into the keyed one, then drop it: each old
    entry keeps its number, time, method, budget and manifest id; its dataset becomes its label
    only when it is a bundled dataset's key (an upload's could be a file name), else it is
    unlabelled; its levels are named by role; its note says it was migrated and whether the old
    SHA-256 chain was intact. Runs once, inside the caller's write transaction (the old table's
    bytes are zeroed by ``secure_delete`` and checkpointed out of the log by the caller)."""
    from dpcore.data import datasets  # the bundled keys: public names

    rows = db.execute(f"SELECT * FROM {OLD_TABLE} ORDER BY number").fetchall()
    problem = _old_chain_problem(rows)
    note = ("migrated from the unkeyed ledger (its SHA-256 chain was "
            + ("intact)" if problem is None else f"{problem}: earlier edits cannot be ruled out)"))
    last = db.execute("SELECT number, mac FROM ledger ORDER BY number DESC LIMIT 1").fetchone()
    number, previous = (last[0], last[1]) if last else (0, GENESIS)
    for (_, time, dataset, method, levels, epsilon, delta, rho, manifest_id, _, _) in rows:
        old = json.loads(levels)
        roles = role_names(len(old), top_first=method.startswith("topdown"))
        entry = Entry(number + 1, time, dataset if dataset in datasets.DATASETS else "", method,
                      tuple(LevelCost(role, lv["epsilon"], lv["delta"], lv["rho"])
                            for role, lv in zip(roles, old)),
                      epsilon, delta, rho, manifest_id, note, previous)
        entry = Entry(**{**entry.__dict__, "mac": entry.seal(key)})
        _insert(db, entry)
        number, previous = entry.number, entry.mac
    db.execute(f"DROP TABLE {OLD_TABLE}")
    if rows:
        keys.write_head(number, previous)


# ------------------------------------------------------------------------------ publications
def record(store: LedgerStore, published, label: str, method: str) -> Entry:
    """Append a publication (a :class:`dpcore.interfaces.publish.Published`, made by ``method``)
    to the ledger under the publisher's ``label`` and write the chain's head into its manifest
    (``ledger_entry``: the entry's number and MAC, a keyed digest of the ledger's own fields —
    budgets, labels, times, random ids — never of the rows). The manifest gets a random id (not
    derived from anything) if it has none."""
    manifest = published.manifest
    manifest.setdefault("id", secrets.token_hex(16))
    single = manifest.get("rho_zcdp") if len(manifest["levels"]) == 1 else None
    roles = role_names(len(manifest["levels"]), top_first=method.startswith("topdown"))
    levels = [LevelCost(role, lv.get("epsilon", lv.get("epsilon_alone")),
                        lv.get("delta", lv.get("delta_alone", 0.0)), lv.get("rho_zcdp", single))
              for role, lv in zip(roles, manifest["levels"])]
    entry = store.append(label, method, levels, manifest["epsilon"], manifest["delta"],
                         manifest.get("rho_zcdp"), manifest["id"])
    manifest["ledger_entry"] = {
        "number": entry.number, "mac": entry.mac,
        "database": "the publishing server's budget ledger; `python -m dpcore ledger --verify "
                    "FOLDER` there checks that this entry is still in it, unchanged"}
    return entry


def check_anchors(entries: list[Entry], folders) -> list[Problem]:
    """Published folders' manifests checked against the ledger: each names an entry (number and
    MAC) that must still be there, unchanged. One sentence per problem, naming the manifest's
    path (the operator's own argument: the command line only)."""
    by_number = {e.number: e for e in entries}
    problems = []
    for folder in folders:
        path = Path(folder) / "manifest.json"
        try:
            anchor = json.loads(path.read_text())["ledger_entry"]
            number, mac = int(anchor["number"]), str(anchor["mac"])
        except FileNotFoundError:
            problems.append(Problem(f"{path}: no such file"))
            continue
        except (ValueError, KeyError, TypeError):
            problems.append(Problem(f"{path}: no ledger entry (number and MAC) in it"))
            continue
        entry = by_number.get(number)
        if entry is None:
            problems.append(Problem(f"the ledger lost entry {number} (anchored by {path})"))
        elif not hmac.compare_digest(entry.mac, mac):
            problems.append(Problem(f"entry {number} is not the one {path} anchors"))
    return problems


def _rho_text(rho: float | None) -> str:
    return "—" if rho is None else f"{rho:.4g}"


def table(entries: list[Entry]) -> pd.DataFrame:
    """One row per publication, for people: ρ shown as "—" where the noise has none."""
    return pd.DataFrame([{
        "number": e.number, "time (UTC)": e.time, "label": e.group, "method": e.method,
        "levels": "; ".join(f"{lv.name}: ε {lv.epsilon:.4g}, δ {lv.delta:.2g}, "
                            f"ρ {_rho_text(lv.rho)}" for lv in e.levels),
        "ε": e.epsilon, "δ": e.delta, "ρ (zCDP)": _rho_text(e.rho), "manifest": e.manifest_id,
        "note": e.note,
    } for e in entries], columns=["number", "time (UTC)", "label", "method", "levels", "ε",
                                  "δ", "ρ (zCDP)", "manifest", "note"])


def totals(entries: list[Entry], slack: float = SLACK_DELTA) -> pd.DataFrame:
    """The total guarantee of the entries together (they are about the same people): basic
    composition always; advanced composition and zCDP only where tighter than basic. Columns
    ``composition``, ``epsilon``, ``delta``."""
    if not entries:
        return pd.DataFrame(columns=["composition", "epsilon", "delta"])
    eps = [e.epsilon for e in entries]
    deltas = sum(e.delta for e in entries)
    basic = sum(eps)
    rows = [("basic (budgets add up)", basic, deltas)]
    advanced = (math.sqrt(2 * math.log(1 / slack) * sum(x * x for x in eps))
                + sum(x * math.expm1(x) for x in eps))
    if advanced < basic:
        rows.append((f"advanced (δ′ = {slack:g})", advanced, deltas + slack))
    pure = [e for e in entries if e.rho is None]
    if len(pure) < len(entries) and all(e.delta == 0 for e in pure):
        rho = sum(e.rho if e.rho is not None else e.epsilon ** 2 / 2 for e in entries)
        zcdp = rho + 2 * math.sqrt(rho * math.log(1 / slack))
        if zcdp < basic:
            rows.append((f"zCDP (ρ = {rho:.4g} in all)", zcdp, slack))
    return pd.DataFrame(rows, columns=["composition", "epsilon", "delta"])


def totals_by_label(entries: list[Entry], slack: float = SLACK_DELTA) -> pd.DataFrame:
    """:func:`totals` per label (publications under one label are about the same people;
    under different labels they may not be; an unlabelled one stands alone)."""
    frames = []
    for group in dict.fromkeys(e.group for e in entries):
        members = [e for e in entries if e.group == group]
        frame = totals(members, slack)
        frame.insert(0, "label", group)
        frame.insert(1, "publications", len(members))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["label", "publications", "composition", "epsilon",
                                     "delta"])
    return pd.concat(frames, ignore_index=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
