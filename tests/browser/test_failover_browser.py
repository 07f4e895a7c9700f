"""A replica killed under load (issue 40 attack 5: one ``kill -9`` took the whole site down).

``scripts/serve --replicas 2`` with the load benchmark's sessions (bench/bench_protocol_load.py:
Explore at county level over Streamlit's websocket protocol, through the proxy, changing ε again
and again) and a student's browser on each replica, both having sent a report to a room in the
shared store. Then ``kill -9`` of one replica. Measured, printed and asserted:

* requests failed: only on the sessions of the dead replica — the rerun in flight (its websocket
  dies with the process) and, in the second before the proxy's health check marks the replica
  down, a reconnection the proxy refuses (seen once in a loaded CI-like run: HTTP 503); each such
  session is then served by the live replica;
* seconds until every session is served again (a rerun completed after the kill): ≤ 10 s;
* the browser on the dead replica: it reconnects by itself, to the live replica (the proxy's
  cookie now names it), its page follows the teacher's next round and sends its report there;
* nothing lost from the store (the classroom's reports of the first round), and the dead replica
  started again by ``scripts/serve`` (new visitors reach it once it answers its health checks).

Loopback only; every wait bounded.
"""

import asyncio
import os
import queue
import re
import signal
import threading
import time
import urllib.request

import psutil
import pytest
import websockets
import websockets.exceptions
from playwright.sync_api import Page, expect

from bench.bench_protocol_load import SCENARIOS, Session
from dpcore.interfaces.classroom import Question, RoomStore
from tests.browser.test_classroom_browser import no_traceback
from tests.browser.test_deployment_browser import pinned_context, serving

pytestmark = pytest.mark.browser

SESSIONS = 4
#: Seconds every session may take to be served again after the kill (issue 40's target).
RECOVERY_TARGET = 10.0
#: Seconds a rerun may take on this shared machine, and between a session's reruns.
RERUN_TIMEOUT = 60.0
PAUSE = 0.25
ERRORS = (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException)
ZONES = ("Harbour", "Old Town", "Station")


class Load:
    """:data:`SESSIONS` protocol-level sessions rerunning Explore with a new ε until stopped, in
    their own thread; a session whose websocket dies reconnects as the page does (a new
    websocket with the same cookies, twice a second until one opens)."""

    def __init__(self, url: str):
        self.url = "ws" + url[len("http"):]
        self.served: list[list[float]] = [[] for _ in range(SESSIONS)]   # reruns completed
        self.replica = [""] * SESSIONS                  # the replica that served it last
        self.failed: list[tuple[int, str]] = []         # (session, what failed)
        self.loaded, self.ready, self.stop = 0, threading.Event(), threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._all()), daemon=True)

    async def _all(self):
        await asyncio.gather(*(self._drive(k) for k in range(SESSIONS)))

    async def _drive(self, k: int) -> None:
        session = Session(self.url, SCENARIOS["county"], RERUN_TIMEOUT)
        await session.__aenter__()
        self.replica[k] = session.replica
        await session.rerun()
        self.served[k].append(time.monotonic())
        self.loaded += 1
        if self.loaded == SESSIONS:
            self.ready.set()
        change = 0
        while not self.stop.is_set():
            change += 1                                  # a new ε each time: a real release
            epsilon = round(1.0 + k / 100 + change / 1000, 3)
            try:
                await session.rerun(epsilon)
                self.served[k].append(time.monotonic())
            except ERRORS as error:
                self.failed.append((k, f"rerun: {type(error).__name__}"))
                await self._reconnect(session, k)
            await asyncio.sleep(PAUSE)
        await session.ws.close()

    async def _reconnect(self, session: Session, k: int) -> None:
        while not self.stop.is_set():
            try:
                session.ws = await websockets.connect(
                    f"{self.url}/_stcore/stream", subprotocols=["streamlit"], max_size=None,
                    open_timeout=RERUN_TIMEOUT, additional_headers={"Cookie": session.cookie})
                self.replica[k] = session.ws.response.headers.get("X-Replica", "")
                return
            except ERRORS as error:
                self.failed.append((k, f"reconnect: {type(error).__name__}"))
                await asyncio.sleep(0.5)

    def served_again(self, after: float) -> list[float | None]:
        """Per session, seconds from ``after`` to its first rerun completed after it."""
        return [next((t - after for t in list(times) if t > after), None)
                for times in self.served]


def student_sends(browser, url: str, room: str, replica: str) -> Page:
    """A student's browser pinned to ``replica`` sends its report; its page stays open."""
    phone = pinned_context(browser, url, replica).new_page()
    assert phone.goto(f"{url}/Classroom?room={room}").headers["x-replica"] == replica
    phone.get_by_role("button", name="Randomise on this phone").click()
    phone.get_by_role("button", name="Send this report").click()
    expect(phone.get_by_text(re.compile(r"Sent: report number \d+")).first).to_be_visible(
        timeout=60_000)
    return phone


def replica_process(serve, port: int) -> psutil.Process:
    for child in psutil.Process(serve.pid).children():
        if str(port) in child.cmdline():
            return child
    raise AssertionError(f"no replica on port {port} among scripts/serve's children")


def wait_for_line(serve, text: str, seconds: float) -> str:
    """What scripts/serve said until ``text`` (or ``seconds``). Read by a thread line by line:
    select() on the pipe misses lines the text wrapper has already buffered (two lines written
    together: the second was never seen, 2 of 3 runs when the replica restarted fast)."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in serve.stdout],
                     daemon=True).start()
    said, deadline = "", time.monotonic() + seconds
    while text not in said and time.monotonic() < deadline:
        try:
            said += lines.get(timeout=1)
        except queue.Empty:
            pass
    return said


def test_a_replica_killed_under_load_loses_no_session_and_nothing_stored(browser, tmp_path):
    with serving(tmp_path) as (url, serve, ports):
        store = RoomStore(tmp_path)                     # the replicas' shared SQLite file
        room, key = store.create_room(Question("Where do you live and work?", ZONES, ZONES),
                                      "grr", 1.0)
        phones = {r: student_sends(browser, url, room, r) for r in ("r1", "r2")}
        assert len(store.snapshot(room).reports) == 2

        load = Load(url)
        load.thread.start()
        assert load.ready.wait(180), f"the load's sessions did not load: {load.failed}"
        time.sleep(2)                                   # steady load before the kill
        on_dead = [k for k in range(SESSIONS) if load.replica[k] == "r1"]
        assert on_dead and len(on_dead) < SESSIONS, load.replica   # in turn: both replicas
        os.kill(replica_process(serve, ports[0]).pid, signal.SIGKILL)
        killed = time.monotonic()

        # the browser on the dead replica reconnects to the live one and goes on: the teacher's
        # next round reaches it, and it sends its report there
        store.new_round(room, key, "grr", 2.0)
        phone = phones["r1"]
        expect(phone.get_by_text(re.compile(r"· round 2 ·"))).to_be_visible(timeout=60_000)
        browser_back = time.monotonic() - killed
        phone.get_by_role("button", name="Randomise on this phone").click()
        phone.get_by_role("button", name="Send this report").click()
        expect(phone.get_by_text(re.compile(r"Sent: report number \d+")).first).to_be_visible(
            timeout=60_000)
        cookies = {c["name"]: c["value"] for c in phone.context.cookies(url)}
        no_traceback(phones["r1"])
        deadline = killed + 60
        while None in load.served_again(killed) and time.monotonic() < deadline:
            time.sleep(0.2)
        seconds = load.served_again(killed)
        failed = list(load.failed)
        moved = [load.replica[k] for k in on_dead]
        said = wait_for_line(serve, "replica-1 is serving again", 180)
        load.stop.set()
        load.thread.join(RERUN_TIMEOUT + 5)

        print(f"\nkill -9 of replica r1 under {SESSIONS} sessions ({len(on_dead)} on r1): "
              f"requests failed {len(failed)} {failed}; seconds until each session was served "
              f"again {[None if s is None else round(s, 2) for s in seconds]}; the browser on "
              f"r1 showed the next round after {browser_back:.1f} s; scripts/serve: "
              f"{said.strip()!r}")
        assert None not in seconds and max(seconds) <= RECOVERY_TARGET, seconds
        assert {k for k, _ in failed} <= set(on_dead), failed      # the live replica's: none
        assert sum(f.startswith("rerun") for _, f in failed) <= len(on_dead), failed
        assert set(moved) == {"r2"}, moved              # reconnected to the live replica
        assert cookies["DPCORE_REPLICA"] == "r2"        # the proxy moved the page
        assert len(store.snapshot(room, 1).reports) == 2   # nothing lost
        assert len(store.snapshot(room, 2).reports) == 1

        assert "replica-1 is serving again" in said, said
        assert serve.poll() is None                     # the site was never stopped
        answered, deadline = set(), time.monotonic() + 30
        while answered != {"r1", "r2"} and time.monotonic() < deadline:
            # new visitors reach both replicas once the proxy's checks see r1 up (two checks)
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as response:
                answered.add(response.headers["X-Replica"])
            time.sleep(0.5)
        assert answered == {"r1", "r2"}, answered
        for phone in phones.values():
            phone.context.close()
