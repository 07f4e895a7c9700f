"""The server's one SQLite database: where it lives, how it is opened, what a failure tells a person.

Everything the app keeps across sessions and restarts (the classroom's rooms and reports; any other
server-wide table, e.g. a budget ledger) lives in one file, :data:`DATABASE_NAME`, in
:func:`default_folder`. Each owner builds a :class:`Database` with its own ``CREATE TABLE IF NOT
EXISTS`` schema over the same file and uses only its own tables::

    db = Database(MY_SCHEMA)            # no I/O yet: the file is opened on first use
    with db.write() as con:             # BEGIN IMMEDIATE … COMMIT (ROLLBACK on any exception)
        con.execute("INSERT INTO my_table VALUES (?)", (1,))
    with db.read() as con:              # one consistent snapshot; never waits on a writer (WAL)
        con.execute("SELECT …").fetchall()

Why this shape:

* **Failures are messages.** Any ``sqlite3.Error`` or ``OSError`` inside ``read``/``write`` (disk
  full, read-only mount, file or folder deleted, a lock held elsewhere, a damaged file) becomes
  :class:`StoreUnavailable`, whose ``str`` is one plain sentence for anyone (a student's phone
  included) and whose ``detail`` names the file and SQLite's own words for the operator. Other
  exceptions (an owner's own ``ValueError`` saying a request is wrong) pass through unchanged.
* **Missing means re-create.** Before every connection the file is checked (one ``stat``): when it,
  or its folder, was deleted — or replaced, e.g. by another owner re-creating it — the folder,
  stale ``-wal``/``-shm`` files and this owner's schema are dealt with again, so a deleted file heals
  on the next request instead of staying broken until a restart.
* **Reads do not wait.** WAL mode lets readers see the last commit while a writer works; reads use a
  short busy timeout (:data:`READ_TIMEOUT`) for the rare lock WAL cannot avoid, writes a longer one
  (:data:`WRITE_TIMEOUT`) — seconds, not the 30 s that froze a class behind a held lock.
* **Bounded.** ``PRAGMA max_page_count`` caps the file at ``max_bytes`` (default :data:`MAX_BYTES`);
  a write past it fails like a full disk, with the "full" message.

Every call opens its own connection (cheap for SQLite), so threads and Streamlit sessions never share
one. Set ``$DPCORE_CLASSROOM_DIR`` (name kept from when the classroom was the only owner) to move
the file, e.g. to a disk that survives the machine being re-imaged.

**Beyond one machine: PostgreSQL.** With a store URL (``$DPCORE_STORE_URL``, or ``url=``; e.g.
``postgresql://app@db.example/dpcore``) the same owners' SQL runs on a PostgreSQL server through
:mod:`dpcore.interfaces.store_postgres`, so replicas on several hosts share rooms, reports and the
ledger. The guarantees are the same: ``write()`` serialises every writer of the database (a
transaction-scoped advisory lock, as ``BEGIN IMMEDIATE`` does for the file), ``read()`` is one
snapshot (``REPEATABLE READ``), UNIQUE keys and the ledger's append-only triggers are enforced by
the server, the size is capped, and any driver error is a :class:`StoreUnavailable`. SQLite stays
the embedded default.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

#: Folder of the database; default :func:`default_folder`.
FOLDER_VARIABLE = "DPCORE_CLASSROOM_DIR"
#: A PostgreSQL URL (or libpq connection string): the shared state lives there instead of the file.
URL_VARIABLE = "DPCORE_STORE_URL"
DATABASE_NAME = "classroom.sqlite3"
#: Largest database file: ample for a term of classes (a report is well under 1 kB), small next to
#: the server's disk, and a bound on what a flood of requests can make the server store.
MAX_BYTES = 64 * 2 ** 20
#: Seconds a read waits for a lock (WAL readers normally never wait).
READ_TIMEOUT = 1.0
#: Seconds a write waits for another writer before the person is told to try again.
WRITE_TIMEOUT = 5.0


class StoreUnavailable(RuntimeError):
    """The database cannot serve this request now. ``str(error)`` is a plain sentence for anyone;
    ``detail`` says which file and what SQLite or the system reported, for whoever runs the server."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def default_folder() -> Path:
    """``$DPCORE_CLASSROOM_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache`` (else the temp folder)
    ``/commuting-privacy-lab``: outside the repository, survives a server restart."""
    configured = os.environ.get(FOLDER_VARIABLE)
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    base = Path(cache) if Path(cache).parent.exists() else Path(tempfile.gettempdir())
    return base / "commuting-privacy-lab"


_ASK_OPERATOR = "Ask the person running this app to check the server's storage."


#: PostgreSQL's SQLSTATE codes read as SQLite's busy / full / read-only errors.
_BUSY_STATES = {"55P03", "40001", "40P01", "57014"}   # lock timeout, serialisation, deadlock, cancel
_FULL_STATES = {"53100", "53200", "54000"}            # disk full, out of memory, too large
_READONLY_STATES = {"25006", "42501"}                 # read-only transaction, no privilege


def explain(error: BaseException, path: Path | str) -> StoreUnavailable:
    """A database or file-system error as :class:`StoreUnavailable` with a plain message."""
    text = str(error).lower()
    name = getattr(error, "sqlite_errorname", "") or ""
    state = getattr(error, "sqlstate", None) or ""
    if "locked" in text or "busy" in name.lower() or state in _BUSY_STATES:
        message = ("The classroom's storage is busy (another program is holding it). Nothing was "
                   "changed; try again in a few seconds.")
    elif ("full" in text or name == "SQLITE_FULL" or getattr(error, "errno", None) == 28
          or state in _FULL_STATES):
        message = ("The classroom's storage is full, so nothing new can be saved. Reading still "
                   f"works. {_ASK_OPERATOR}")
    elif ("readonly" in text or "read-only" in text or getattr(error, "errno", None) == 30
          or state in _READONLY_STATES):
        message = ("The classroom's storage is read-only, so nothing new can be saved. Reading "
                   f"still works. {_ASK_OPERATOR}")
    elif "not a database" in text or "malformed" in text:
        message = f"The classroom's storage file is damaged and cannot be read. {_ASK_OPERATOR}"
    else:
        message = (f"The classroom's storage cannot be opened or written right now. "
                   f"{_ASK_OPERATOR}")
    return StoreUnavailable(message, f"{path}: {type(error).__name__}: {error}")


class Database:
    """One owner's view of the shared database file (see the module docstring).

    ``schema`` is a script of ``CREATE … IF NOT EXISTS`` statements, run whenever the file is new;
    ``prepare(connection)``, if given, runs just before it (e.g. to drop tables of an older layout).
    ``url``: a PostgreSQL server instead of the file (default ``$DPCORE_STORE_URL`` unless a
    ``folder`` is given); ``folder`` is then only where files beside the database live (e.g.
    the classroom's address key).
    """

    def __init__(self, schema: str, folder: Path | str | None = None, *,
                 url: str | None = None,
                 prepare: Callable[[sqlite3.Connection], None] | None = None,
                 max_bytes: int = MAX_BYTES, read_timeout: float = READ_TIMEOUT,
                 write_timeout: float = WRITE_TIMEOUT):
        if url is None and folder is None:
            url = os.environ.get(URL_VARIABLE) or None
        self.folder = Path(folder) if folder is not None else default_folder()
        self.schema, self.prepare = schema, prepare
        self.server = None
        if url:
            from dpcore.interfaces import store_postgres   # psycopg only when a URL is given
            self.server = store_postgres.Server(url)
            self.path = self.server.display
        else:
            self.path = self.folder / DATABASE_NAME
        self.max_bytes = int(max_bytes)
        self.read_timeout, self.write_timeout = float(read_timeout), float(write_timeout)
        self._identity: tuple[int, int] | None = None   # (device, inode) the schema was made in
        self._creating = threading.Lock()    # one thread re-creates; none deletes another's log

    # ------------------------------------------------------------------------------ public
    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one read transaction (a consistent snapshot)."""
        if self.server is not None:
            with self._translated(), self.server.read(self, self.read_timeout) as db:
                yield db
            return
        with self._translated(), self._connect(self.read_timeout) as db:
            db.execute("BEGIN")
            try:
                yield db
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one write transaction, taken up front (``BEGIN IMMEDIATE``) so its
        checks and its writes cannot interleave with another writer's; committed when the block
        ends, rolled back if it raises."""
        if self.server is not None:
            with self._translated(), self.server.write(self, self.write_timeout) as db:
                yield db
            return
        with self._translated(), self._connect(self.write_timeout) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:      # SQLite may have rolled back already (e.g. when full)
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def size_bytes(self) -> int:
        """Bytes the database file and its write-ahead log take on disk now (0 if missing); on
        PostgreSQL, the tables and indexes of the connection's schema."""
        if self.server is not None:
            with self._translated():
                return self.server.size_bytes()
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.stat(f"{self.path}{suffix}").st_size
            except OSError:
                pass
        return total

    # ---------------------------------------------------------------------------- internals
    @contextmanager
    def _translated(self):
        try:
            yield
        except (sqlite3.Error, OSError) as error:
            raise explain(error, self.path) from error
        except Exception as error:
            if self.server is None or not self.server.is_driver_error(error):
                raise
            raise explain(error, self.path) from error

    def _open(self, timeout: float) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            db.execute("PRAGMA synchronous=NORMAL")
            page = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA max_page_count={max(1, self.max_bytes // page)}")
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def _connect(self, timeout: float):
        self._ensure(timeout)
        with closing(self._open(timeout)) as db:
            yield db

    def _identity_now(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def _ensure(self, timeout: float) -> None:
        """Create the folder, the file and this owner's tables when they are missing or new."""
        if self._identity is not None and self._identity_now() == self._identity:
            return                                 # the usual case: one stat, no lock
        with self._creating:
            if self._identity_now() is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                for suffix in ("-wal", "-shm"):   # a stale log must not be replayed into a new file
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            with closing(self._open(timeout)) as db:
                db.execute("PRAGMA journal_mode=WAL")
                if self.prepare is not None:
                    self.prepare(db)
                db.executescript(self.schema)
            self._identity = self._identity_now()
