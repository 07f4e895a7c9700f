"""The privacy budget ledger: every publication, kept in the app's local database, and what they
cost together.

Releases about the same people compose: their budgets add up (basic composition), or grow like
the square root of their number (advanced composition, Dwork, Rothblum, Vadhan, "Boosting and
differential privacy", FOCS 2010, in its form for different ε_i: ε' = √(2 ln(1/δ')·Σε_i²) +
Σε_i(e^{ε_i} − 1), δ' added to Σδ_i), or — when Gaussian noise is used — through zCDP, where ρ
adds up exactly (Bun, Steinke, "Concentrated differential privacy", TCC 2016: an ε-DP release is
ε²/2-zCDP, Prop. 1.4, and ρ-zCDP gives (ρ + 2√(ρ ln(1/δ)), δ)-DP, Prop. 1.3). A total is shown
under basic composition always, under advanced composition only where it is tighter (it is worse
than basic for few or large budgets), and under zCDP wherever every publication has a ρ or is
pure ε-DP — at basic's total δ, with a note saying which of the two is smaller.

**What an entry names.** A label the publisher types for the population (e.g. "Kildare commuters
2016"), never a file name or anything read from the rows, and its levels by role ("fine level",
"parent level"): the ledger is shown to every session on the server. Composition groups entries
by label; an unlabelled publication is its own group (never lumped with other unlabelled ones).

**Tamper evidence** (issues 29 and 40), against someone who can write the database — and, for
SQLite, the database's folder, which its write-ahead log needs writable — but not the server
account's own files:

* each entry carries an HMAC-SHA256 (RFC 2104) of its fields and of the previous entry's MAC,
  under a key kept outside the database and outside its folder (:class:`Keys`:
  ``$DPCORE_LEDGER_KEY``, else a file made when a ledger is first written, with ``O_CREAT |
  O_EXCL`` and mode 0o600, in ``$DPCORE_LEDGER_KEY_DIR`` or the account's state folder, 0o700).
  Editing, reordering or deleting entries and re-sealing them needs the key;
* the key folder also keeps the chain's **head** (newest entry's number and MAC; one file per
  database), rewritten at every append under the database's write lock, and every manifest
  carries the head as it was when it was recorded (``ledger_entry``: number and MAC), so
  published folders anchor the chain;
* no code path seals a row it did not write: an unkeyed ledger of an earlier version (its
  SHA-256 chain needs no key, so anyone could have forged it) is moved only by the operator's
  ``ledger --migrate``, once, into a keyed ledger that never held an entry, and entry 1 then
  records that it happened.

:meth:`LedgerStore.check` reports (:class:`Problem`: a plain sentence naming no file, for the
page every session sees, with the server's paths in its ``detail`` for the operator) a changed
entry (its MAC does not match), a row that cannot be read (:class:`Damaged`, by its number), a
gap ("the ledger lost entries N…M"), a dropped table or a shortened chain (the head is ahead of
the table), a head that does not match or was rolled back, and an unkeyed table appearing once
the keyed ledger has begun; it **refuses to report totals** when the key or the head is missing
or damaged once the ledger has begun, when the key folder is where others can change it (inside
the database's folder, or writable by other accounts), and while an unkeyed ledger waits for
``--migrate``. A fresh install (no head, no row) is an empty valid ledger: the key and head are
made with its first entry. :func:`check_anchors` checks manifests against the table. **Not
detected**: someone who holds the key or can write the key folder (the server's account)
rewriting everything; the database and the head rolled back together to an earlier consistent
state, unless a manifest published since anchors a later entry (``ledger --verify DIR…``); the
key folder *and* every row removed together (that is a fresh install); forged rows the operator
chooses to ``--migrate``; and a publication made without the app. "Starting afresh" is not
offered: forgetting an entry does not make its release any less public.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import sqlite3
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from dpcore.interfaces import store
from dpcore.theory import composition
from dpcore.text import has_controls

#: δ' of advanced composition (and the δ of a zCDP total when basic's total δ is 1 or more).
SLACK_DELTA = 1e-6
GENESIS = "0" * 64
#: The key (64 hex digits), when the operator keeps it in the environment rather than a file.
KEY_VARIABLE = "DPCORE_LEDGER_KEY"
#: The folder of the key file and the head records; default :func:`default_key_folder`.
KEY_FOLDER_VARIABLE = "DPCORE_LEDGER_KEY_DIR"
KEY_FILE = "key"
#: The key folder of versions before issue 40: beside the database, where its writers could
#: rename it (named only to tell the operator how to move its files).
KEY_FOLDER = "ledger-key"
#: How every sentence that withholds the totals ends.
REFUSING = "— refusing to report totals"
#: The method of the entry that records the operator's migration of an unkeyed ledger (not a
#: publication: no budget, left out of the totals).
MIGRATION = "ledger migration"
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
        if self.method == MIGRATION:
            return "(not a publication)"
        return self.label or f"{UNLABELLED} (entry {self.number})"

    def seal(self, key: bytes) -> str:
        """HMAC-SHA256 under ``key`` of every field but the MAC (the previous MAC included)."""
        fields = asdict(self)
        fields.pop("mac")
        message = json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------- key and head
def default_key_folder() -> Path:
    """``$XDG_STATE_HOME`` or ``~/.local/state`` (the temp folder when there is no home)
    ``/commuting-privacy-lab/ledger``: the server account's own state, apart from the
    database's folder (the cache)."""
    state = os.environ.get("XDG_STATE_HOME")
    if not state:
        home = Path.home()
        state = home / ".local" / "state" if home.is_dir() else Path(tempfile.gettempdir())
    return Path(state) / "commuting-privacy-lab" / "ledger"


class Keys:
    """The ledger's secret and its head record, kept outside the database and outside the
    database's folder: in ``$DPCORE_LEDGER_KEY_DIR``, else :func:`default_key_folder` (made
    0o700). The key is ``$DPCORE_LEDGER_KEY`` when set, else the file :data:`KEY_FILE` there,
    made when a ledger is first written (``O_CREAT | O_EXCL``, 0o600: two processes never make
    two keys). The head record is one file per database, named after the database's path or URL
    (``identity``), so a second database (``ledger --folder``) never reads another's head."""

    def __init__(self, identity: str, database_folder: Path | None, legacy_folder: Path):
        configured = os.environ.get(KEY_FOLDER_VARIABLE)
        self.folder = Path(configured) if configured else default_key_folder()
        self.identity, self.database_folder = identity, database_folder
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.key_path, self.head_path = self.folder / KEY_FILE, self.folder / f"head-{digest}.json"
        self.legacy = legacy_folder / KEY_FOLDER  # where versions before issue 40 kept both

    def key(self, create: bool) -> bytes | None:
        """The key; None when there is none (or the file is damaged) and ``create`` is false."""
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
        return bytes.fromhex(text) if re.fullmatch(r"[0-9a-fA-F]{64}", text) else None

    def head(self) -> tuple[int, str] | None:
        """(number, MAC) of the newest entry as last recorded; None when never written;
        (-1, "unreadable") when damaged."""
        try:
            head = json.loads(self.head_path.read_text())
            return int(head["number"]), str(head["mac"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, RecursionError):
            return (-1, "unreadable")

    def write_head(self, number: int, mac: str) -> None:
        """Replace the head record (write then rename: never half written)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.head_path.with_suffix(".tmp")
        handle = os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        with os.fdopen(handle, "w") as file:
            json.dump({"database": self.identity, "number": number, "mac": mac}, file)
        os.replace(temporary, self.head_path)

    def unsafe(self) -> str | None:
        """Why someone other than the server's account could change the key or the head (for
        the operator), or None: the folder inside the database's folder (SQLite's folder must
        be writable by whoever writes the database, and a folder there can be renamed), or
        owned by another account, or writable by its group or everyone."""
        folder = self.folder.resolve()
        if self.database_folder is not None:
            database = Path(self.database_folder).resolve()
            if folder == database or database in folder.parents:
                return (f"the key folder {self.folder} is inside the database's folder "
                        f"{database}, where whoever can write the database can replace the key "
                        f"and the head: set ${KEY_FOLDER_VARIABLE} to a folder of its own")
        try:
            status = os.stat(folder)
        except FileNotFoundError:
            status = None
        if status is not None and (status.st_uid != os.geteuid() or status.st_mode & 0o022):
            return (f"the key folder {self.folder} (mode {stat.S_IMODE(status.st_mode):o}, "
                    f"owner uid {status.st_uid}) can be changed by other accounts: make it the "
                    "server account's own, mode 700")
        for parent in folder.parents:  # another account able to rename a folder on the way
            try:
                status = os.stat(parent)
            except FileNotFoundError:
                continue
            mode = status.st_mode
            if (status.st_uid not in (0, os.geteuid())
                    or (mode & 0o022 and not mode & stat.S_ISVTX)):
                return (f"{parent}, a folder above the key folder {self.folder} (mode "
                        f"{stat.S_IMODE(mode):o}, owner uid {status.st_uid}), lets other "
                        "accounts rename what it holds: keep the key folder where only the "
                        "server's account (or root) can")
        return None

    def missing_detail(self, what: str) -> str:
        """The operator's detail for a missing key or head: where it was looked for, and how to
        bring the files of a version before issue 40 (kept beside the database) over."""
        detail = f"{what} not found"
        if (self.legacy / "head.json").exists():
            moves = ([] if os.environ.get(KEY_VARIABLE) else
                     [f"mv {self.legacy / KEY_FILE} {self.key_path}"])
            moves.append(f"mv {self.legacy / 'head.json'} {self.head_path}")
            detail += (f"; an earlier version kept the key and head in {self.legacy}, beside the "
                       "database: if nobody but the server's account could write that folder, "
                       f"move them (mkdir -m 700 -p {self.folder}; " + "; ".join(moves) + ")")
        return detail


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


class Refused(ValueError):
    """The operator's migration refused, with why (paths included: the command line's)."""


@dataclass(frozen=True)
class Damaged:
    """A row of the ledger table that is not an entry the app could have written (a field of
    the wrong type, levels that are not the app's JSON): tampering, reported by its number."""

    number: int
    mac: str  # as stored, so the next entry's link to it is still checked ("" if not text)
    reason: str


@dataclass(frozen=True)
class Check:
    """What the ledger may report: its readable ``entries``; the ``problems`` found (tampering:
    the totals may understate); ``refusal``: why no totals may be reported at all (the key or
    head missing or unsafe, an unkeyed ledger not yet migrated), else None."""

    entries: list[Entry]
    problems: list[Problem]
    refusal: Problem | None


def _span(first: int, last: int) -> str:
    return f"entry {first}" if first == last else f"entries {first}…{last}"


class LedgerStore:
    """The ledger table of the app's database (:class:`dpcore.interfaces.store.Database`: every
    call opens its own connection, so Streamlit sessions and processes never share one; an append
    is one write transaction, the head record written under its lock). ``url``: a PostgreSQL
    server (default ``$DPCORE_STORE_URL`` when no ``folder`` is given); the key and head stay
    files of the server's account (:class:`Keys`)."""

    def __init__(self, folder: Path | str | None = None, url: str | None = None):
        self.database = store.Database(SCHEMA, folder, url=url)
        self.path = self.database.path
        on_file = self.database.server is None
        self.keys = Keys(str(Path(self.path).resolve()) if on_file else str(self.path),
                         self.database.folder if on_file else None, self.database.folder)

    # ----------------------------------------------------------------------------- writing
    def append(self, label: str, method: str, levels, epsilon: float, delta: float,
               rho: float | None, manifest_id: str) -> Entry:
        """Record a publication; returns its entry (number and MAC). Only a fresh ledger (no
        head, no row) makes the key; a ledger whose key or head is missing or unsafe, or an
        unkeyed ledger waiting for ``ledger --migrate``, records nothing. After a loss the
        numbering goes on from the head record, so the gap stays visible."""
        label = check_label(label)
        levels = tuple(LevelCost(str(lv.name), float(lv.epsilon), float(lv.delta),
                                 None if lv.rho is None else float(lv.rho)) for lv in levels)
        with self.database.write() as db:
            for statement in STATEMENTS:  # a dropped table comes back; the head keeps the loss
                db.execute(statement)
            rows, head = _read(db), self.keys.head()
            refusal = self._refusal(rows, head, _has_table(db, OLD_TABLE))
            if refusal is not None:
                raise store.StoreUnavailable(
                    f"The budget ledger cannot record anything now ({refusal}). Ask the person "
                    "running this app.", refusal.detail)
            key = self._key(create=head is None and not rows)
            number, previous = (rows[-1].number, rows[-1].mac) if rows else (0, GENESIS)
            if head is not None and head[0] > number:
                number, previous = head
            entry = Entry(number + 1, _now(), label, str(method), levels, float(epsilon),
                          float(delta), None if rho is None else float(rho), str(manifest_id),
                          "", previous)
            entry = Entry(**{**entry.__dict__, "mac": entry.seal(key)})
            _insert(db, entry)
            self.keys.write_head(entry.number, entry.mac)
        return entry

    def _key(self, create: bool) -> bytes:
        """The key (made when ``create``), or :class:`~dpcore.interfaces.store.StoreUnavailable`
        when it is missing, damaged, or ``$DPCORE_LEDGER_KEY`` is malformed."""
        try:
            key = self.keys.key(create)
        except ValueError as error:
            raise store.StoreUnavailable(
                "The budget ledger's key is not set correctly on this server, so nothing can be "
                "recorded or checked. Ask the person running this app.", str(error)) from None
        if key is None:
            raise store.StoreUnavailable(
                "The budget ledger's key is missing or damaged, so nothing can be recorded. Ask "
                "the person running this app.", f"key file {self.keys.key_path}")
        return key

    def migrate(self) -> list[Entry]:
        """Move the unkeyed ledger of an earlier version into a keyed ledger that has never held
        an entry — the operator's explicit command (``ledger --migrate``), never a side effect of
        reading or publishing: the old table has no key, so anyone who could write the database
        could have written it, and sealing it is the operator's decision. Entry 1 records that
        the migration happened (method :data:`MIGRATION`, not a publication); the old entries
        follow (:func:`_migrated`). Raises :class:`Refused` when there is nothing to migrate,
        or the keyed ledger has begun (then an unkeyed table is not from an earlier version)."""
        with self.database.write() as db:
            db.execute("PRAGMA secure_delete = ON")  # the old rows' bytes are zeroed …
            for statement in STATEMENTS:
                db.execute(statement)
            if not _has_table(db, OLD_TABLE):
                raise Refused("nothing to migrate: the database holds no unkeyed ledger")
            rows, head = _read(db), self.keys.head()
            if rows or head is not None:
                began = (f"the head record names entry {head[0]}" if head is not None
                         else f"its table holds {len(rows)} rows")
                raise Refused(f"refusing to migrate: the keyed ledger has begun ({began}), so a "
                              "table of the unkeyed ledger is not from an earlier version; "
                              "nothing was changed")
            unsafe = self.keys.unsafe()
            if unsafe:
                raise Refused(f"refusing to migrate: {unsafe}")
            try:
                key = self._key(create=True)
            except store.StoreUnavailable as error:
                raise Refused(f"refusing to migrate: {error.detail}") from None
            entries = _migrated(db.execute(f"SELECT * FROM {OLD_TABLE} ORDER BY number")
                                .fetchall(), key)
            for entry in entries:
                _insert(db, entry)
            db.execute(f"DROP TABLE {OLD_TABLE}")
            self.keys.write_head(entries[-1].number, entries[-1].mac)
        with self.database.read() as db:
            db.execute("ROLLBACK")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # … and leave the write-ahead log
        return entries

    # ----------------------------------------------------------------------------- reading
    def entries(self) -> list[Entry]:
        """The readable entries of the table, in order ([] when the table is missing)."""
        with self.database.read() as db:
            return [row for row in _read(db) if isinstance(row, Entry)]

    def check(self, rows: list | None = None) -> Check:
        """The entries and what is wrong with the ledger (:class:`Check`). ``rows``: the table
        as already read (tests), else read here.

        The table and the head record are read apart, so an append by another session between
        the two reads looks like a loss; a problem is therefore confirmed under the database's
        write lock, which every append holds while it writes both."""
        with self.database.read() as db:
            old = _has_table(db, OLD_TABLE)
            rows = _read(db) if rows is None else rows
        found = self._assess(rows, self.keys.head(), old)
        if found.problems or found.refusal:
            try:
                with self.database.write() as db:  # no append can run meanwhile
                    found = self._assess(_read(db), self.keys.head(), _has_table(db, OLD_TABLE))
            except store.StoreUnavailable:  # e.g. a read-only database: keep the first look
                pass
        return found

    def verify(self, rows: list | None = None) -> list[Problem]:
        """:meth:`check`'s refusal, else its problems ([] when nothing is wrong)."""
        found = self.check(rows)
        return [found.refusal] if found.refusal is not None else found.problems

    def _refusal(self, rows: list, head: tuple[int, str] | None, old: bool) -> Problem | None:
        """Why nothing may be reported or recorded: the key or head unsafe, misconfigured,
        missing or damaged once the ledger has begun, or an unkeyed ledger not yet migrated."""
        unsafe = self.keys.unsafe()
        if unsafe:
            return Problem(f"the ledger's key and head are kept where others can change them "
                           f"{REFUSING}", unsafe)
        try:
            key = self.keys.key(create=False)
        except ValueError as error:  # a malformed $DPCORE_LEDGER_KEY
            return Problem(f"the server's ledger key is not set correctly {REFUSING}",
                           str(error))
        begun = bool(rows) or head is not None
        if head is not None and head[0] < 0:
            return Problem(f"the ledger's key or head is damaged {REFUSING}",
                           f"head record {self.keys.head_path}: unreadable")
        if head is None and rows:
            return Problem(f"the ledger's key or head is missing {REFUSING}",
                           self.keys.missing_detail(f"head record {self.keys.head_path}"))
        if key is None and begun:
            if self.keys.key_path.exists():
                return Problem(f"the ledger's key or head is damaged {REFUSING}",
                               f"key file {self.keys.key_path}: not 64 hexadecimal digits")
            return Problem(f"the ledger's key or head is missing {REFUSING}",
                           self.keys.missing_detail(f"key file {self.keys.key_path}"))
        if old and not begun:
            return Problem("the database holds the unkeyed ledger of an earlier version, not yet "
                           f"moved into the keyed one {REFUSING} until the person running this "
                           "server runs `python3 -m dpcore ledger --migrate`")
        return None

    def _assess(self, rows: list, head: tuple[int, str] | None, old: bool) -> Check:
        entries = [row for row in rows if isinstance(row, Entry)]
        refusal = self._refusal(rows, head, old)
        if refusal is not None:
            return Check(entries, [], refusal)
        key = self.keys.key(create=False)
        problems, previous, expected = [], GENESIS, 1
        for row in rows:
            if row.number > expected:
                problems.append(Problem(f"the ledger lost {_span(expected, row.number - 1)}"))
            elif isinstance(row, Entry) and row.previous != previous:
                problems.append(Problem(f"entry {row.number} does not follow entry "
                                        f"{row.number - 1}"))
            if isinstance(row, Damaged):
                problems.append(Problem(f"entry {row.number} cannot be read: it was changed "
                                        "outside the app", row.reason))
            elif not _same(row.seal(key), row.mac):
                problems.append(Problem(f"entry {row.number} was changed after it was "
                                        "recorded (its MAC does not match the server's key)"))
            previous, expected = row.mac, row.number + 1
        newest = rows[-1].number if rows else 0
        if head is not None and head[0] > newest:
            problems.append(Problem(f"the ledger lost {_span(newest + 1, head[0])} (the newest "
                                    f"recorded is {head[0]})"))
        elif head is not None and head[0] < newest:
            problems.append(Problem(f"the head record names entry {head[0]} but the table goes "
                                    f"on to {newest}: the head was rolled back"))
        elif rows and not _same(head[1], rows[-1].mac):
            problems.append(Problem(f"entry {newest} is not the one recorded as the newest"))
        if old:
            problems.append(Problem("a table of the unkeyed ledger appeared after the keyed "
                                    "ledger began: nothing in it is counted (it was written "
                                    "outside the app)"))
        return Check(entries, problems, None)


def _read(db: sqlite3.Connection) -> list[Entry | Damaged]:
    """Every row of the table, in order, as an :class:`Entry` or, when it is not one the app
    could have written, a :class:`Damaged` ([] when the table is missing)."""
    if not _has_table(db, "ledger"):
        return []
    rows = db.execute("SELECT * FROM ledger ORDER BY number").fetchall()
    return [_parse(tuple(row), position) for position, row in enumerate(rows, start=1)]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse(row: tuple, position: int) -> Entry | Damaged:
    """One row as the entry it holds, checking every field's type (the database's column types
    do not: SQLite stores any value anywhere, and a writer can rebuild the table)."""
    number = row[0] if row and isinstance(row[0], int) else position
    mac = row[-1] if row and isinstance(row[-1], str) else ""
    try:
        if len(row) != 12:
            raise ValueError(f"{len(row)} columns instead of 12")
        (_, time, label, method, levels, epsilon, delta, rho, manifest_id, note, previous,
         mac) = row
        if not isinstance(row[0], int):
            raise ValueError(f"its number is {row[0]!r}")
        if not all(isinstance(v, str) for v in (time, label, method, levels, manifest_id, note,
                                                previous, mac)):
            raise ValueError("a text field holds something else")
        if not (_is_number(epsilon) and _is_number(delta) and (rho is None or _is_number(rho))):
            raise ValueError("a budget is not a number")
        costs = []
        for level in json.loads(levels):
            if (not isinstance(level, dict) or set(level) != {"name", "epsilon", "delta", "rho"}
                    or not isinstance(level["name"], str)
                    or not (_is_number(level["epsilon"]) and _is_number(level["delta"]))
                    or not (level["rho"] is None or _is_number(level["rho"]))):
                raise ValueError(f"a level is not the app's: {str(level)[:80]}")
            costs.append(LevelCost(**level))
        return Entry(row[0], time, label, method, tuple(costs), epsilon, delta, rho,
                     manifest_id, note, previous, mac)
    except (ValueError, TypeError, RecursionError) as error:
        return Damaged(number, mac if isinstance(mac, str) else "",
                       f"row {position}: {type(error).__name__}: {str(error)[:200]}")


def _same(mac: str, other: str) -> bool:
    """Two MACs compared in constant time (as bytes: a stored one may hold any text)."""
    return hmac.compare_digest(mac.encode(), other.encode())


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


def _migrated(rows, key: bytes) -> list[Entry]:
    """The keyed entries for the unkeyed ledger's ``rows``: entry 1 records the migration (its
    note: which entries were moved, whether the old SHA-256 chain was intact, and that it has no
    key); each old entry follows, keeping its time, method, budget and manifest id; its dataset
    becomes its label only when it is a bundled dataset's key (an upload's could be a file
    name), else it is unlabelled; its levels are named by role. :class:`Refused` when a row
    cannot be read."""
    from dpcore.data import datasets  # the bundled keys: public names

    try:
        problem = _old_chain_problem(rows)
        old = [(time, dataset, method, json.loads(levels), epsilon, delta, rho, manifest_id)
               for (_, time, dataset, method, levels, epsilon, delta, rho, manifest_id, _, _)
               in rows]
    except (ValueError, TypeError, RecursionError) as error:
        raise Refused(f"refusing to migrate: the unkeyed ledger cannot be read ({error}); "
                      "nothing was changed") from None
    chain = ("intact" if problem is None
             else f"{problem}: earlier edits cannot be ruled out")
    moved = f"{_span(2, len(rows) + 1)} were" if rows else "no entry was"
    marker = Entry(1, _now(), "", MIGRATION, (), 0.0, 0.0, None, "",
                   f"{moved} moved from the unkeyed ledger of an earlier version by the "
                   f"operator's `ledger --migrate`; its SHA-256 chain was {chain} (it has no "
                   "key: anyone who could write the database could have written it)")
    entries = [Entry(**{**marker.__dict__, "mac": marker.seal(key)})]
    note = f"migrated from the unkeyed ledger (its SHA-256 chain was {chain})"
    try:
        for time, dataset, method, levels, epsilon, delta, rho, manifest_id in old:
            roles = role_names(len(levels), top_first=str(method).startswith("topdown"))
            entry = Entry(entries[-1].number + 1, str(time),
                          dataset if dataset in datasets.DATASETS else "", str(method),
                          tuple(LevelCost(role, lv["epsilon"], lv["delta"], lv["rho"])
                                for role, lv in zip(roles, levels)),
                          float(epsilon), float(delta), None if rho is None else float(rho),
                          str(manifest_id), note, entries[-1].mac)
            entries.append(Entry(**{**entry.__dict__, "mac": entry.seal(key)}))
    except (ValueError, TypeError, KeyError) as error:
        raise Refused(f"refusing to migrate: an entry of the unkeyed ledger cannot be read "
                      f"({type(error).__name__}: {error}); nothing was changed") from None
    return entries


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
        elif not _same(entry.mac, mac):
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


def publications(entries: list[Entry]) -> list[Entry]:
    """The entries that record a publication (not the one recording a migration)."""
    return [e for e in entries if e.method != MIGRATION]


def totals(entries: list[Entry], slack: float = SLACK_DELTA) -> pd.DataFrame:
    """The total guarantee of the publications together (they are about the same people):
    basic composition always; advanced composition only where tighter than basic; zCDP wherever
    every publication has a ρ (Gaussian) or is pure ε-DP (ε²/2-zCDP), stated at basic's total δ
    so that the two ε compare at the same δ. Columns ``composition``, ``epsilon``, ``delta``,
    ``rho`` (the zCDP row's summed ρ, NaN elsewhere) and ``note`` (which total is smaller, or
    why there is no zCDP total)."""
    entries = publications(entries)
    columns = ["composition", "epsilon", "delta", "rho", "note"]
    if not entries:
        return pd.DataFrame(columns=columns)
    eps = [e.epsilon for e in entries]
    deltas = sum(e.delta for e in entries)
    basic = sum(eps)
    rows = [["basic (budgets add up)", basic, deltas, math.nan, ""]]
    advanced = (math.sqrt(2 * math.log(1 / slack) * sum(x * x for x in eps))
                + sum(x * math.expm1(x) for x in eps))
    if advanced < basic:
        rows.append([f"advanced (δ′ = {slack:g})", advanced, deltas + slack, math.nan,
                     "smaller than basic"])
    zcdp = _zcdp_total(entries, basic, deltas, slack)
    if isinstance(zcdp, str):
        rows[0][-1] = zcdp
    elif zcdp is not None:
        rows.append(zcdp)
    return pd.DataFrame(rows, columns=columns)


def _zcdp_total(entries: list[Entry], basic: float, deltas: float, slack: float):
    """The zCDP row of :func:`totals`; a sentence when some publication cannot be put in ρ (δ > 0
    without a recorded ρ); None when none has a ρ (pure ε only: basic is already exact)."""
    if all(e.rho is None for e in entries):
        return None
    unknown = [e for e in entries if e.rho is None and e.delta > 0]
    if unknown:
        return (f"no zCDP total: {len(unknown)} publication(s) have δ > 0 but no recorded ρ, "
                "so they cannot be composed in zCDP")
    pure = [e for e in entries if e.rho is None]
    rho = (sum(e.rho for e in entries if e.rho is not None)
           + sum(composition.pure_rho(e.epsilon) for e in pure))
    same = 0 < deltas < 1
    epsilon = composition.zcdp_epsilon(rho, deltas if same else slack)
    notes = [f"{len(pure)} pure ε-DP publication(s) counted as ρ = ε²/2 (Bun & Steinke 2016, "
             "Prop. 1.4)"] if pure else []
    if not same:
        notes.append(f"stated at δ = {slack:g} (basic's total δ is 1 or more and says nothing)")
    elif epsilon < basic:
        notes.append("smaller than basic at the same δ")
    else:
        notes.append("larger than basic at the same δ: basic is the tighter total")
    return ["zCDP (ρ's add up; ε = ρ + 2√(ρ ln(1/δ)))", epsilon, deltas if same else slack, rho,
            "; ".join(notes)]


def totals_by_label(entries: list[Entry], slack: float = SLACK_DELTA) -> pd.DataFrame:
    """:func:`totals` per label (publications under one label are about the same people;
    under different labels they may not be; an unlabelled one stands alone)."""
    frames, entries = [], publications(entries)
    for group in dict.fromkeys(e.group for e in entries):
        members = [e for e in entries if e.group == group]
        frame = totals(members, slack)
        frame.insert(0, "label", group)
        frame.insert(1, "publications", len(members))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["label", "publications", "composition", "epsilon",
                                     "delta", "rho", "note"])
    return pd.concat(frames, ignore_index=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
