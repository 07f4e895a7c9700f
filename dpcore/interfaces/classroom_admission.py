"""How a classroom room admits reports: open, capped per network address, or one-time join codes.

Why. Every page load is a new browser session, so "one report per session and round" stops
accidents, not a student who clears the site data and reloads (issue 29: 12 of 12 reports counted
in 37 s). Without accounts, two things can tie reports to a person or a device:

* **Capped per network address** (``"address"``): at most ``cap`` reports per round from one
  network address. The address is the connection's peer (Streamlit's ``st.context.ip_address``;
  None on localhost, counted as one address), or — only when the operator names the proxy
  (:class:`ProxyPolicy`) — the client address that proxy puts in ``X-Forwarded-For``. The header
  is never believed otherwise, not even from loopback: Streamlit's web server (uvicorn) itself
  writes the header's address into ``ip_address`` for loopback peers unless ``FORWARDED_ALLOW_IPS``
  is empty, and any client on the host can write it (issue 40: 12 of 12 reports in a cap-1 room).
  A class behind one router shares one address: the teacher raises the cap to the class size
  (which then bounds one student's reports by that number, no better).
* **One-time join codes** (``"codes"``): the teacher's screen prints N short codes, one per
  student; each admits one report per round. A student without a code sends nothing. Wrong codes
  are limited per browser session and per network address (:func:`check_join_code`: a script
  guessed 20 a second on one connection, issue 40) and counted for the teacher.

What is stored: the address never in clear, only as an HMAC-SHA-256 under a server key kept in a
file beside the database (:func:`server_key`, created on first use with owner-only permissions),
keyed per room: someone with the database file alone cannot test which addresses took part.
Join codes are stored as issued (the teacher's screen shows them again), each with the last round
it was used in — not which report it sent.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dpcore.text import visible

#: The admission modes, as stored, with what the teacher reads.
ADMISSIONS = {"open": "Open: one report per browser session and round",
              "address": "Capped per network address per round",
              "codes": "One-time join codes"}
#: Reports per network address and round unless the teacher raises it (a class behind one router
#: needs the class size, up to a room's cap ``classroom.MAX_REPORTS``).
DEFAULT_CAP = 1
MAX_CAP = 2000
#: Join codes a room can print (one per seat of the largest room, ``classroom.MAX_REPORTS``: a
#: 1,000-seat hall hands out 1,000), and their length (31-character alphabet: ≈ 29.7 bits each;
#: 2,000 codes leave one guess in about 440,000 right).
MAX_CODES = 2000
JOIN_CODE_LENGTH = 6
#: Wrong join codes allowed per :data:`JOIN_WINDOW` seconds from one browser session, and from
#: one network address (a class behind one router mistypes too); then every code typed there is
#: refused until the window ends, right or wrong, so guessing learns nothing.
WRONG_CODES_PER_SESSION = 5
WRONG_CODES_PER_ADDRESS = 30
JOIN_WINDOW = 600.0
#: The table of wrong join codes (part of the classroom's schema): per room, per browser session
#: ("session", its stored hash) and per network address ("address", its keyed hash): wrong codes
#: in the window that began at ``since``, and in all; codes refused by the limit.
JOIN_SCHEMA = """
CREATE TABLE IF NOT EXISTS join_attempts(room TEXT NOT NULL, kind TEXT NOT NULL,
    who TEXT NOT NULL, since REAL NOT NULL, wrong INTEGER NOT NULL, total INTEGER NOT NULL,
    refused INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (room, kind, who));
"""
#: Comma-separated addresses of reverse proxies whose X-Forwarded-For is believed.
TRUSTED_PROXIES_VARIABLE = "DPCORE_TRUSTED_PROXIES"
#: A secret the proxy adds as :data:`PROXY_SECRET_HEADER` to every request: when set, only
#: connections carrying it count as the proxy's (on one host every local process shares the
#: proxy's address 127.0.0.1; only the proxy knows the secret).
PROXY_SECRET_VARIABLE = "DPCORE_PROXY_SECRET"
PROXY_SECRET_HEADER = "X-Dpcore-Proxy"
#: uvicorn's variable: the peers whose X-Forwarded-For it writes into the connection's address
#: (default "127.0.0.1,::1"); empty, it never does.
SERVER_FORWARDED_VARIABLE = "FORWARDED_ALLOW_IPS"
#: The server key's file name, beside the database.
KEY_NAME = "classroom-address.key"
#: What a loopback connection (Streamlit's ip_address None) counts as — and a connection whose
#: address the web server may have taken from a header the client wrote.
LOCAL = "local"
_LOOPBACK = frozenset({"127.0.0.1", "::1"})


@dataclass(frozen=True)
class ProxyPolicy:
    """Which connections are a trusted reverse proxy's: a peer in ``trusted`` (none by default),
    carrying ``secret`` in :data:`PROXY_SECRET_HEADER` when one is set. ``server_rewrites``:
    whether the web server may have replaced the peer by X-Forwarded-For before the app saw it."""

    trusted: frozenset[str] = frozenset()
    secret: str | None = None
    server_rewrites: bool = True

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> ProxyPolicy:
        env = os.environ if env is None else env
        trusted = frozenset(part.strip() for part in env.get(TRUSTED_PROXIES_VARIABLE, "")
                            .split(",") if part.strip())
        rewrites = env.get(SERVER_FORWARDED_VARIABLE, "127.0.0.1,::1").strip() != ""
        return cls(trusted, env.get(PROXY_SECRET_VARIABLE) or None, rewrites)

    def is_proxy(self, peer: str | None, secret: str | None) -> bool:
        """Whether a connection from ``peer`` (None: loopback) presenting ``secret`` is the
        trusted proxy's."""
        if self.secret is not None and not hmac.compare_digest(
                (secret or "").encode(), self.secret.encode()):
            return False
        return (peer in self.trusted) if peer is not None else bool(self.trusted & _LOOPBACK)


def _hosts(forwarded_for: str) -> list[str]:
    """The addresses of an X-Forwarded-For value, ports and IPv6 brackets removed."""
    hosts = []
    for hop in (h.strip() for h in forwarded_for.split(",")):
        if hop.startswith("[") and "]" in hop:
            hop = hop[1:hop.index("]")]
        elif hop.count(":") == 1:
            hop = hop.split(":")[0]
        hosts.append(hop)
    return hosts


def client_address(peer: str | None, forwarded_for: str | None, secret: str | None = None,
                   policy: ProxyPolicy = ProxyPolicy()) -> str:
    """The network address a report is counted against.

    The connection's ``peer`` (None, a loopback connection, is :data:`LOCAL`) — unless the web
    server may have written it from ``forwarded_for`` itself (the peer is one of the header's
    addresses and ``policy.server_rewrites``): then the real peer is unknown, and counted as
    :data:`LOCAL`, one address. When the peer is the trusted proxy (``policy.is_proxy``, given
    the ``secret`` header the connection carried): the right-most address of ``forwarded_for``
    that is not itself a trusted proxy (entries to its left are whatever the client wrote, so they
    are never believed). A malformed entry counts as the proxy."""
    hosts = _hosts(forwarded_for) if forwarded_for else []
    if policy.server_rewrites and peer is not None and peer in hosts:
        return LOCAL
    address = peer or LOCAL
    if hosts and policy.is_proxy(peer, secret):
        for hop in reversed(hosts):
            if hop in policy.trusted:
                continue
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                break
    return address


def server_key(folder: Path) -> bytes:
    """The server's 32-byte address key from ``folder``/:data:`KEY_NAME`, created on first use
    with ``O_EXCL`` and mode 0600 (a concurrent creator's key is read instead)."""
    path = Path(folder) / KEY_NAME
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    key = secrets.token_bytes(32)
    with os.fdopen(handle, "w") as file:
        file.write(key.hex())
    return key


def address_hash(key: bytes, room: str, address: str) -> str:
    """HMAC-SHA-256(key, room ∥ address), hexadecimal: the same address gives unrelated values in
    different rooms, and none can be recomputed without the key."""
    return hmac.new(key, f"{room}\0{address}".encode(), hashlib.sha256).hexdigest()


class TooManyWrongCodes(ValueError):
    """The session or its network address typed too many wrong join codes; the message says how
    long to wait."""


@dataclass(frozen=True)
class WrongCodes:
    """Wrong join codes from one browser session or network address (``kind``), as the teacher
    sees them: ``label`` is 8 characters of its hash (as in the sessions and address tables)."""

    kind: str
    who: str
    wrong: int
    refused: int

    @property
    def label(self) -> str:
        return self.who[:8]


def check_join_code(db, room: str, join_code: str, session: str, address: str,
                    now: float) -> bool:
    """Whether ``join_code`` (normalised) is one of ``room``'s codes, inside a write transaction
    ``db``. A wrong one is counted against the browser ``session`` and the network ``address``
    (both as stored hashes); while either has :data:`WRONG_CODES_PER_SESSION` or
    :data:`WRONG_CODES_PER_ADDRESS` wrong codes in the current :data:`JOIN_WINDOW`, every code is
    refused unchecked (TooManyWrongCodes, counted as refused)."""
    limits = (("session", session, WRONG_CODES_PER_SESSION),
              ("address", address, WRONG_CODES_PER_ADDRESS))
    for kind, who, limit in limits:
        row = db.execute("SELECT since, wrong FROM join_attempts WHERE room=? AND kind=? AND "
                         "who=?", (room, kind, who)).fetchone()
        if row is not None and now - row[0] < JOIN_WINDOW and row[1] >= limit:
            db.executemany("UPDATE join_attempts SET refused = refused + 1 WHERE room=? AND "
                           "kind=? AND who=?", [(room, k, w) for k, w, _ in limits])
            minutes = max(1, round((row[0] + JOIN_WINDOW - now) / 60))
            whose = "this browser" if kind == "session" else "this network"
            raise TooManyWrongCodes(f"Too many wrong join codes from {whose}: try again in about "
                                    f"{minutes} minute(s), with the code your teacher gave you.")
    if db.execute("SELECT 1 FROM join_codes WHERE room=? AND code=?",
                  (room, join_code)).fetchone() is not None:
        return True
    for kind, who, _ in limits:
        db.execute("INSERT INTO join_attempts(room, kind, who, since, wrong, total) "
                   "VALUES (?,?,?,?,1,1) ON CONFLICT(room, kind, who) DO UPDATE SET "
                   "wrong = CASE WHEN ? - since >= ? THEN 1 ELSE wrong + 1 END, "
                   "since = CASE WHEN ? - since >= ? THEN ? ELSE since END, total = total + 1",
                   (room, kind, who, now, now, JOIN_WINDOW, now, JOIN_WINDOW, now))
    return False


def wrong_codes(db, room: str) -> list[WrongCodes]:
    """The room's wrong join codes per session and per address, most first."""
    rows = db.execute("SELECT kind, who, total, refused FROM join_attempts WHERE room=? "
                      "ORDER BY total + refused DESC, kind, who", (room,)).fetchall()
    return [WrongCodes(*row) for row in rows]


def new_join_codes(count: int, alphabet: str) -> list[str]:
    """``count`` distinct codes of :data:`JOIN_CODE_LENGTH` characters drawn by :mod:`secrets`."""
    codes: set[str] = set()
    while len(codes) < count:
        codes.add("".join(secrets.choice(alphabet) for _ in range(JOIN_CODE_LENGTH)))
    return sorted(codes)


#: The printable page of join codes: one card per code, two columns, dashed lines to cut along;
#: on paper the screen's hint disappears and no card is split over two sheets.
_CARDS_STYLE = """
body { font-family: "Liberation Sans", Arial, sans-serif; margin: 1.5rem; color: #000; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: 0; }
.card { border: 1px dashed #555; padding: 0.9rem 1rem; break-inside: avoid; }
.card p { margin: 0.2rem 0; overflow-wrap: anywhere; }
.code { font: bold 1.6rem "Liberation Mono", monospace; letter-spacing: 0.15em; }
@media print { .hint { display: none; } body { margin: 0; }
  .cards { grid-template-columns: 1fr 1fr; } }
"""


def join_codes_page(room: str, question: str, link: str, codes: list[str]) -> str:
    """A standalone HTML page of the room's join codes to print and cut out, one card per code
    with the room, the question and the link (a Streamlit table draws on a canvas: it cannot be
    printed or copied). Every text is HTML-escaped with its control characters made visible
    (the teacher typed the question)."""
    def text(value) -> str:
        return html.escape(visible(value), quote=True)
    cards = "".join(
        f'<div class="card"><p>Room <strong>{text(room)}</strong>: {text(question)}</p>'
        f'<p>Open {text(link)}</p><p>Your join code:</p><p class="code">{text(code)}</p></div>'
        for code in codes)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>Join codes, room {text(room)}</title><style>{_CARDS_STYLE}</style></head>"
            f'<body><p class="hint">{len(codes)} join codes: print this page (Ctrl+P) and cut '
            "along the dashed lines. Each code admits one report per round; hand one to each "
            f'student.</p><div class="cards">{cards}</div></body></html>')
