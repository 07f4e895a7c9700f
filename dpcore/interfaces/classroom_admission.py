"""How a classroom room admits reports: open, capped per network address, or one-time join codes.

Why. Every page load is a new browser session, so "one report per session and round" stops
accidents, not a student who clears the site data and reloads (issue 29: 12 of 12 reports counted
in 37 s). Without accounts, two things can tie reports to a person or a device:

* **Capped per network address** (``"address"``): at most ``cap`` reports per round from one
  network address. The address is the WebSocket peer (Streamlit's ``st.context.ip_address``; None
  on localhost, counted as one address), or — only when the operator lists the proxy in
  :data:`TRUSTED_PROXIES_VARIABLE` — the client address that proxy puts in ``X-Forwarded-For``.
  A class behind one router shares one address: the teacher raises the cap to the class size
  (which then bounds one student's reports by that number, no better).
* **One-time join codes** (``"codes"``): the teacher's screen prints N short codes, one per
  student; each admits one report per round. A student without a code sends nothing.

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
from pathlib import Path

from dpcore.text import visible

#: The admission modes, as stored, with what the teacher reads.
ADMISSIONS = {"open": "Open: one report per browser session and round",
              "address": "Capped per network address per round",
              "codes": "One-time join codes"}
#: Reports per network address and round unless the teacher raises it (a class behind one router
#: needs the class size).
DEFAULT_CAP = 1
MAX_CAP = 500
#: Join codes a room can print, and their length (31-character alphabet: ≈ 29.7 bits each).
MAX_CODES = 200
JOIN_CODE_LENGTH = 6
#: Comma-separated addresses of reverse proxies whose X-Forwarded-For is believed.
TRUSTED_PROXIES_VARIABLE = "DPCORE_TRUSTED_PROXIES"
#: The server key's file name, beside the database.
KEY_NAME = "classroom-address.key"
#: What a loopback connection (Streamlit's ip_address None) counts as.
LOCAL = "local"


def trusted_proxies() -> frozenset[str]:
    """The proxies named in ``$DPCORE_TRUSTED_PROXIES`` (none by default)."""
    text = os.environ.get(TRUSTED_PROXIES_VARIABLE, "")
    return frozenset(part.strip() for part in text.split(",") if part.strip())


def client_address(peer: str | None, forwarded_for: str | None,
                   trusted: frozenset[str] = frozenset()) -> str:
    """The network address a report is counted against: the WebSocket ``peer`` (None, a loopback
    connection, is :data:`LOCAL`); when the peer is a trusted proxy, the right-most address of
    ``X-Forwarded-For`` that is not itself a trusted proxy (the left-most entries are whatever
    the client wrote, so they are never believed). A malformed entry counts as the proxy."""
    address = peer or LOCAL
    if address in trusted and forwarded_for:
        for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
            if hop in trusted:
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
