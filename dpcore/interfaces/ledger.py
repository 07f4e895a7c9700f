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

The ledger outlives the session and the server: an append-only table in the app's one SQLite
file (:mod:`dpcore.interfaces.store`, shared with the classroom), which refuses updates and
deletes; a database that cannot serve a request raises :class:`~dpcore.interfaces.store.StoreUnavailable`
with a plain message. Each entry carries the SHA-256 of its own fields and of the previous entry's hash, so an
entry edited or removed behind the app's back breaks the chain (:meth:`LedgerStore.verify`). The
entries hold the budget and labels only — never a count, hash or list computed from confidential
rows. "Starting afresh" is not offered: forgetting an entry does not make its release any less
public.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from dpcore.interfaces import store

#: δ' of advanced composition and the δ at which a zCDP total is stated.
SLACK_DELTA = 1e-6
GENESIS = "0" * 64
SCHEMA = """
CREATE TABLE IF NOT EXISTS publications(number INTEGER PRIMARY KEY, time TEXT NOT NULL,
    dataset TEXT NOT NULL, method TEXT NOT NULL, levels TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL, rho REAL, manifest_id TEXT NOT NULL, previous TEXT NOT NULL,
    hash TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS publications_no_update BEFORE UPDATE ON publications
    BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS publications_no_delete BEFORE DELETE ON publications
    BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END;
"""


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
    dataset: str
    method: str
    levels: tuple[LevelCost, ...]
    epsilon: float
    delta: float
    rho: float | None  # the publication's zCDP parameter, when it has one (Gaussian noise)
    manifest_id: str
    previous: str
    hash: str = ""

    def digest(self) -> str:
        """SHA-256 of every field but the hash itself (the previous hash included)."""
        fields = asdict(self)
        fields.pop("hash")
        return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False)
                              .encode()).hexdigest()


class LedgerStore:
    """The ledger table of the app's database (:class:`dpcore.interfaces.store.Database`: every
    call opens its own connection, so Streamlit sessions and processes never share one; an append
    is one write transaction)."""

    def __init__(self, folder: Path | str | None = None):
        self.database = store.Database(SCHEMA, folder)
        self.path = self.database.path

    def append(self, dataset: str, method: str, levels, epsilon: float, delta: float,
               rho: float | None, manifest_id: str) -> Entry:
        """Record a publication; returns its entry (number and hash)."""
        levels = tuple(LevelCost(str(lv.name), float(lv.epsilon), float(lv.delta),
                                 None if lv.rho is None else float(lv.rho)) for lv in levels)
        with self.database.write() as db:
            last = db.execute("SELECT number, hash FROM publications ORDER BY number DESC "
                              "LIMIT 1").fetchone()
            number, previous = (last[0] + 1, last[1]) if last else (1, GENESIS)
            entry = Entry(number, _now(), str(dataset), str(method), levels, float(epsilon),
                          float(delta), None if rho is None else float(rho),
                          str(manifest_id), previous)
            entry = Entry(**{**entry.__dict__, "hash": entry.digest()})
            db.execute("INSERT INTO publications VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (entry.number, entry.time, entry.dataset, entry.method,
                        json.dumps([asdict(lv) for lv in levels], ensure_ascii=False),
                        entry.epsilon, entry.delta, entry.rho, entry.manifest_id,
                        entry.previous, entry.hash))
        return entry

    def entries(self) -> list[Entry]:
        with self.database.read() as db:
            rows = db.execute("SELECT * FROM publications ORDER BY number").fetchall()
        return [Entry(number, time, dataset, method,
                      tuple(LevelCost(**lv) for lv in json.loads(levels)), epsilon, delta, rho,
                      manifest_id, previous, digest)
                for (number, time, dataset, method, levels, epsilon, delta, rho, manifest_id,
                     previous, digest) in rows]

    def verify(self) -> str | None:
        """None when the chain is intact, else what is wrong and where."""
        previous, expected = GENESIS, 1
        for entry in self.entries():
            if entry.number != expected:
                return f"entry {expected} is missing (the next one is {entry.number})"
            if entry.previous != previous:
                return f"entry {entry.number} does not follow entry {entry.number - 1}"
            if entry.digest() != entry.hash:
                return f"entry {entry.number} was changed after it was recorded"
            previous, expected = entry.hash, expected + 1
        return None


def record(store: LedgerStore, published, dataset: str, method: str) -> Entry:
    """Append a publication (a :class:`dpcore.interfaces.publish.Published`, made by ``method``)
    to the ledger and name the entry in its manifest; the manifest gets a random id (not derived
    from anything) if it has none."""
    manifest = published.manifest
    manifest.setdefault("id", secrets.token_hex(16))
    single = manifest.get("rho_zcdp") if len(manifest["levels"]) == 1 else None
    levels = [LevelCost(lv["name"], lv.get("epsilon", lv.get("epsilon_alone")),
                        lv.get("delta", lv.get("delta_alone", 0.0)), lv.get("rho_zcdp", single))
              for lv in manifest["levels"]]
    entry = store.append(dataset, method, levels, manifest["epsilon"],
                         manifest["delta"], manifest.get("rho_zcdp"), manifest["id"])
    # The entry's number and the manifest's random id tie the two together; no hash goes into a
    # published file (the rule of dpcore.interfaces.publish: nothing that looks like, or is, a
    # digest of anything beside the mechanism's output).
    manifest["ledger_entry"] = {"number": entry.number,
                                "database": "the app's local ledger (table publications)"}
    return entry


def _rho_text(rho: float | None) -> str:
    return "—" if rho is None else f"{rho:.4g}"


def table(entries: list[Entry]) -> pd.DataFrame:
    """One row per publication, for people: ρ shown as "—" where the noise has none."""
    return pd.DataFrame([{
        "number": e.number, "time (UTC)": e.time, "dataset": e.dataset, "method": e.method,
        "levels": "; ".join(f"{lv.name}: ε {lv.epsilon:.4g}, δ {lv.delta:.2g}, "
                            f"ρ {_rho_text(lv.rho)}" for lv in e.levels),
        "ε": e.epsilon, "δ": e.delta, "ρ (zCDP)": _rho_text(e.rho), "manifest": e.manifest_id,
    } for e in entries], columns=["number", "time (UTC)", "dataset", "method", "levels", "ε",
                                  "δ", "ρ (zCDP)", "manifest"])


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


def totals_by_dataset(entries: list[Entry], slack: float = SLACK_DELTA) -> pd.DataFrame:
    """:func:`totals` per dataset label (publications of one dataset are about the same
    people; different datasets may not be)."""
    frames = []
    for dataset in dict.fromkeys(e.dataset for e in entries):
        frame = totals([e for e in entries if e.dataset == dataset], slack)
        frame.insert(0, "dataset", dataset)
        frame.insert(1, "publications", sum(e.dataset == dataset for e in entries))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["dataset", "publications", "composition", "epsilon",
                                     "delta"])
    return pd.concat(frames, ignore_index=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
