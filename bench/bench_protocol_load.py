"""The server's own latency under many sessions, without browsers: Streamlit's websocket protocol.

Each simulated session is what a browser tab is to the server: a websocket to ``/_stcore/stream``
(subprotocol ``streamlit``) that sends ``BackMsg.rerun_script`` (query string, page, widget states)
and reads ``ForwardMsg`` messages until the script-finished message. Like a browser it keeps
the URL the page writes (``page_info_changed``) and sends it with its next rerun: sending the
first URL every time made the page write its eleven URL parameters again on every rerun,
ten more messages each (county 20 sessions, p95 1.9–2.3 s that way, 1.8–2.0 s as a
browser). A session opens Explore with the scenario's URL, finds the "ε, typed" box among the
elements it is sent, then changes ε ``--rounds`` times, every value new to the whole run (no
cache hit: each change releases every chosen mechanism afresh). All sessions start together
and run concurrently in one asyncio loop, so no Chromium competes for the two cores: the
figures are the server's (Python, one process).

Every session first opens the page (its first load, timed too); once all have, they change ε
together. Printed per scenario (county, ED as loaded) and session count: p50, p95 and max of the
seconds from sending an ε change to the script's end, the same for the first load, the server's
CPU seconds per ε change (user + system, over the ε-change phase: a figure the machine's other
load hardly changes; Streamlit runs every session in one process, so with all sessions changing ε
at once the last waits for about sessions × that figure divided by the cores it gets), errors (an
exception element, a change the page did not show), the server's peak resident memory and the
wall time.

    python bench/bench_protocol_load.py [--sessions 20 50] [--scenarios county ed] [--rounds 3]
        [--replicas N | --url URL [--pid PID]]

Where the server is: by default one Streamlit process started here. ``--replicas N`` starts the
shipped deployment instead, ``scripts/serve --replicas N`` (N replicas behind HAProxy, sessions
pinned by its cookie), and measures CPU and memory over its whole process tree (every replica and
the proxy). ``--url`` drives a deployment already running (e.g. on another machine); CPU and
memory are then measured only with ``--pid`` (its process on this machine), else not. Each
simulated session first loads the page over HTTP, as a browser does, and keeps the proxy's cookie
for its websocket; the sessions per replica are printed.

Targets (issue 21): county p95 ≤ 3 s at 20 sessions; ED reported. Issue 32, two replicas behind
the proxy: county 50 sessions p95 ≤ 3 s, ED 10 sessions p95 ≤ 6 s and ≤ 6 GB for both replicas;
one process: county 20 sessions p95 ≤ 2 s.
Bounded: loopback only, every wait has a timeout (``--timeout``), the whole run stops after
``--limit`` seconds, and a scenario is abandoned when the server's memory passes ``--max-rss-gb``
(the machine is shared). The server is started on a free port and killed at the end. Timings on a loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import websockets
import websockets.exceptions
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_live import start_server  # noqa: E402
from tests.browser.conftest import _free_port  # noqa: E402

#: Explore's URL per scenario (the page's defaults otherwise: its six default mechanisms).
SCENARIOS = {"county": "dataset=ireland_county",
             "ed": "dataset=ireland_ed&level=as_loaded"}
PAGE = "Explore"
EPSILON_BOX = "ε, typed"
FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY}


class Abandoned(Exception):
    """The scenario stopped early (memory, time limit): the reason is the message."""


@dataclass
class Tally:
    first: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    loaded: int = 0                      # sessions past their first load (or failed)
    replicas: Counter = field(default_factory=Counter)   # sessions per replica (behind a proxy)
    all_loaded: asyncio.Event = field(default_factory=asyncio.Event)
    sessions: int = 0

    def arrive(self) -> None:
        self.loaded += 1
        if self.loaded == self.sessions:
            self.all_loaded.set()


class Session:
    """One simulated browser tab on one page."""

    def __init__(self, url: str, query: str, timeout: float):
        self.url, self.query, self.timeout = url, query, timeout
        self.page_hash = ""
        self.epsilon_id: str | None = None
        self.texts: list[str] = []
        self.exceptions: list[str] = []

    async def __aenter__(self):
        self.cookie, self.replica = await asyncio.to_thread(self._load_page)
        self.ws = await websockets.connect(f"{self.url}/_stcore/stream",
                                           subprotocols=["streamlit"], max_size=None,
                                           open_timeout=self.timeout,
                                           additional_headers={"Cookie": self.cookie}
                                           if self.cookie else None)
        return self

    def _load_page(self) -> tuple[str, str]:
        """GET the page as a browser does first: the proxy's cookie (pins the session to one
        replica) and the replica's name (``X-Replica``; "" without a proxy)."""
        http = "http" + self.url[len("ws"):]
        with urllib.request.urlopen(f"{http}/{PAGE}?{self.query}", timeout=self.timeout) as page:
            cookies = [c.split(";", 1)[0] for c in page.headers.get_all("Set-Cookie") or []]
            return "; ".join(cookies), page.headers.get("X-Replica", "")

    async def __aexit__(self, *exc):
        await self.ws.close()

    async def rerun(self, epsilon: float | None = None) -> float:
        """Seconds from sending a rerun (with ε typed, if given) to the script's end."""
        message = BackMsg()
        rerun = message.rerun_script
        rerun.query_string, rerun.page_name = self.query, PAGE
        rerun.page_script_hash = self.page_hash
        if epsilon is not None:
            widget = rerun.widget_states.widgets.add()
            widget.id, widget.double_value = self.epsilon_id, epsilon
        self.texts.clear()
        started = time.perf_counter()
        await self.ws.send(message.SerializeToString())
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
            kind = forward.WhichOneof("type")
            if kind == "navigation":   # st.navigation names the page it ran
                self.page_hash = forward.navigation.page_script_hash
            elif kind == "page_info_changed":   # the page wrote its URL: a browser shows it
                self.query = forward.page_info_changed.query_string   # and sends it back
            elif kind == "delta":
                self._read(forward.delta)
            elif kind == "script_finished":
                if forward.script_finished in FINISHED:
                    return time.perf_counter() - started
                if forward.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RuntimeError("the page did not compile")

    def _read(self, delta) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind == "number_input" and element.number_input.label == EPSILON_BOX:
            self.epsilon_id = element.number_input.id
        elif kind == "markdown":
            self.texts.append(element.markdown.body)
        elif kind == "exception":
            self.exceptions.append(element.exception.message)


async def one_session(url: str, query: str, epsilons: list[float], tally: Tally,
                      timeout: float) -> None:
    arrived = False
    try:
        async with Session(url, query, timeout) as session:
            tally.replicas[session.replica or "one process"] += 1
            tally.first.append(await session.rerun())
            arrived = True
            tally.arrive()
            if session.epsilon_id is None:
                raise RuntimeError(f"no “{EPSILON_BOX}” box on the page")
            await tally.all_loaded.wait()   # every session changes ε together
            for epsilon in epsilons:
                tally.changes.append(await session.rerun(epsilon))
                if not any(f"ε = {epsilon:g}," in text for text in session.texts):
                    tally.errors.append(f"ε = {epsilon:g} not shown after the change")
            if session.exceptions:
                tally.errors.append(f"exception on the page: {session.exceptions[0][:120]}")
    except (OSError, asyncio.TimeoutError, RuntimeError,
            websockets.exceptions.WebSocketException) as error:
        tally.errors.append(f"{type(error).__name__}: {error}"[:160])
        if not arrived:
            tally.arrive()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of the process and its children (replicas, proxy)."""
    if pid is None:
        return float("nan")
    try:
        process = psutil.Process(pid)
        total = 0.0
        for member in [process, *process.children(recursive=True)]:
            times = member.cpu_times()
            total += times.user + times.system
        return total
    except psutil.Error:
        return float("nan")


def rss_bytes(pid: int | None) -> int:
    if pid is None:
        return 0
    try:
        process = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
    except psutil.Error:
        return 0


async def scenario(url: str, server_pid: int | None, query: str, sessions: int, rounds: int,
                   first_epsilon: float, timeout: float, limit: float, max_rss: float
                   ) -> tuple[Tally, float, int, float]:
    tally = Tally(sessions=sessions)
    # ε values unique across the whole run: 0.01 apart, from first_epsilon up.
    plan = [[round(first_epsilon + 0.01 * (s * rounds + r), 2) for r in range(rounds)]
            for s in range(sessions)]
    started, peak, cpu_from = time.perf_counter(), 0, None
    tasks = [asyncio.create_task(one_session(url, query, plan[s], tally, timeout))
             for s in range(sessions)]
    try:
        while not all(task.done() for task in tasks):
            if cpu_from is None and tally.all_loaded.is_set():
                cpu_from = cpu_seconds(server_pid)
            peak = max(peak, rss_bytes(server_pid))
            if peak > max_rss:
                raise Abandoned(f"server memory {peak / 2**30:.1f} GB > {max_rss / 2**30:.1f} GB")
            if time.perf_counter() - started > limit:
                raise Abandoned(f"time limit {limit:.0f} s")
            await asyncio.sleep(0.2)
    except Abandoned as reason:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        tally.errors.append(f"abandoned: {reason}")
    cpu = cpu_seconds(server_pid) - (cpu_from if cpu_from is not None else float("nan"))
    return tally, time.perf_counter() - started, peak, cpu / max(len(tally.changes), 1)


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return (f"p50 {statistics.median(ordered):6.2f} s  p95 {p95:6.2f} s  "
            f"max {ordered[-1]:6.2f} s  ({len(ordered)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS),
                        default=list(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=3, help="ε changes per session")
    parser.add_argument("--mech", nargs="*", default=None,
                        help="mechanism keys instead of the page's defaults (URL ?mech=)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per rerun")
    parser.add_argument("--limit", type=float, default=1800, help="seconds per scenario")
    parser.add_argument("--max-rss-gb", type=float, default=10.0,
                        help="abandon a scenario past this memory (all replicas together)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--replicas", type=int,
                       help="start scripts/serve --replicas N (HAProxy in front) and drive it")
    where.add_argument("--url", help="drive a running server or deployment (http://host:port)")
    parser.add_argument("--pid", type=int,
                        help="with --url: its process on this machine, for CPU and memory")
    args = parser.parse_args()
    if args.url:
        server, pid = None, args.pid
        url = "ws" + args.url.rstrip("/")[len("http"):]
    elif args.replicas:
        server, url = start_deployment(args.replicas)
        pid = server.pid
    else:
        port = _free_port()
        server = start_server(port)
        url, pid = f"ws://127.0.0.1:{port}", server.pid
    print(f"server: {describe(args)}; load average {os.getloadavg()[0]:.1f} at the start",
          flush=True)
    first_epsilon = 0.3
    try:
        for name in args.scenarios:
            query = SCENARIOS[name] + "".join(f"&mech={key}" for key in args.mech or ())
            for sessions in args.sessions:
                tally, wall, peak, cpu = asyncio.run(scenario(
                    url, pid, query, sessions, args.rounds, first_epsilon, args.timeout,
                    args.limit, args.max_rss_gb * 2**30))
                first_epsilon += 0.01 * sessions * args.rounds
                memory = f"{peak / 2**30:.2f} GB" if pid else "not measured"
                print(f"{name:6s} {sessions:3d} sessions × {args.rounds} ε changes "
                      f"({query}): wall {wall:.0f} s, server peak {memory}, load average "
                      f"{os.getloadavg()[0]:.1f} at the end")
                print(f"    sessions per replica : "
                      + ", ".join(f"{k} {v}" for k, v in sorted(tally.replicas.items())))
                print(f"    ε change → script end: {quantiles(tally.changes)}; server CPU "
                      f"{cpu:.2f} s per change")
                print(f"    first load           : {quantiles(tally.first)}")
                print(f"    errors: {len(tally.errors)}"
                      + (f" (first: {tally.errors[0]})" if tally.errors else ""), flush=True)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(30)
            except Exception:  # noqa: BLE001 — make sure it is gone
                os.killpg(server.pid, signal.SIGKILL)


def describe(args) -> str:
    if args.url:
        measured = f"of pid {args.pid}" if args.pid else "not measured"
        return f"{args.url} (running; CPU and memory {measured})"
    if args.replicas:
        return f"scripts/serve --replicas {args.replicas} (HAProxy in front)"
    return "one Streamlit process"


def start_deployment(replicas: int) -> tuple[subprocess.Popen, str]:
    """``scripts/serve --replicas N`` on free ports, once it says it serves: (process, ws URL).
    Its own session (process group), stopped with SIGTERM like an operator's Ctrl-C."""
    port = _free_port()
    ports = [_free_port() for _ in range(replicas)]
    serve = subprocess.Popen(
        [str(ROOT / "scripts" / "serve"), "--replicas", str(replicas), "--port", str(port),
         "--replica-ports", *map(str, ports)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    deadline, said = time.monotonic() + 300, ""
    while "serving http" not in said:
        if serve.poll() is not None or time.monotonic() > deadline:
            os.killpg(serve.pid, signal.SIGTERM)
            sys.exit(f"scripts/serve did not start: {said}")
        if select.select([serve.stdout], [], [], 1)[0]:
            said += serve.stdout.readline()
    return serve, f"ws://127.0.0.1:{port}"


if __name__ == "__main__":
    main()
