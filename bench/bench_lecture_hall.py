"""A lecture hall: 1,000 phones report within two minutes while the teacher's screen refreshes.

Target (issue 38): 1,000 phones within two minutes on the two-replica deployment, every report
counted, the teacher's screen refresh p95 ≤ 2 s, for the commute round and the new kinds
(memoized, coins, number).

    python bench/bench_lecture_hall.py [--phones 1000] [--seconds 120] [--replicas 2]
        [--kind commute|memoized|coins|number] [--mechanism oue] [--repeat]

Phones are driven at Streamlit's protocol level (as ``bench_protocol_load``: one websocket to
``/_stcore/stream`` each, after a GET of the page for the proxy's cookie), so 1,000 of them fit
in one asyncio loop; a browser each would be 1,000 Chromium contexts on the server's own cores.
Each phone arrives at a uniformly random moment of ``--seconds``, opens ``Classroom?room=CODE``,
reads the phone component's data (the ticket's nonce, the round's spec) from the ForwardMsg,
randomises a report with dpcore's own client code (the mechanism's ``perturb``; for coins the two
coins, for a number round the bit with P(1) from ``numbers.one_probability`` — what
``ui/classroom/js/randomisers.js`` does in the browser), sends it as the component's ``report``
trigger value ``{report, nonce}`` and waits for the server's confirmation ("Sent: report number
…" in the component's data on the next run). Like a real phone it then stays on the page and
runs its round-check fragment every 5 s until the run ends (that load is part of a lecture).
A memoized round's phones have no earlier report to resend (first round), so they randomise.
With ``--repeat`` (memoized only) the measured round is the second of a memoized pair, the case
memoization is for: every phone's first report is drawn and sent before the timed part (through
the store, under a ticket of its own, as the page would hand it in), the teacher then opens the
next memoized round of the same kind (``RoomStore.new_round``), and each phone resends the report
it kept — what ``dpResend`` in ``ui/classroom/js/student.js`` does when the round's ``memo`` key
is the one its report was kept under. Checked after the run: round 2 holds the same multiset of
reports as round 1, and each student's total ε (``repeated.total_epsilon`` and the sentence on
the teacher's screen) is one round's.

The teacher's screen is one real Chromium page (``?teach=CODE``); its refresh is timed from its
websocket frames (``bench_classroom.RefreshClock``: fragment rerun request → script finished).

Printed: phones confirmed, reports stored by the server (the store's count) and the number on
the teacher's screen against phones sent; teacher refresh p50/p95; phone confirmation latency
(send → script finished with the confirmation) p50/p95; the page's first load p50/p95; the
deployment's CPU seconds (every replica and the proxy; Chromium not included); load average
before and after.

The room is opened with the product's cap, ``classroom.MAX_REPORTS`` reports over all its
rounds (a repeat's two rounds count both). Only for more phones than that does this benchmark
raise the throw-away room's own limit in its database (``rooms.max_reports``; the product's
create form cannot), and it says so in its output: a load beyond what the product admits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import websockets
import websockets.exceptions
from playwright.async_api import async_playwright
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_classroom import ZONES, RefreshClock  # noqa: E402
from bench.bench_protocol_load import cpu_seconds, quantiles, start_deployment  # noqa: E402
from dpcore import mechanisms  # noqa: E402
from dpcore.mechanisms.local import universal_hash  # noqa: E402
from dpcore.interfaces import classroom  # noqa: E402
from dpcore.interfaces.classroom import coins, numbers, repeated  # noqa: E402
from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS  # noqa: E402

PAGE = "Classroom"
KINDS = ("commute", "memoized", "coins", "number")
#: Streamlit's id of a v2 component's trigger list: internal prefix, component id, "events".
TRIGGERS = "$$STREAMLIT_INTERNAL_KEY_{}__events"
FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
SENT = re.compile(r"Sent: report number (\d+)")
SPENT = re.compile(r"has spent ε = ([0-9.]+)")
#: A number round's question and its largest answer (minutes).
NUMBER_PROMPT, BOUND = "Minutes from home to here today?", 90.0


@dataclass
class Tally:
    confirmed: list[float] = field(default_factory=list)   # send → confirmation, seconds
    first: list[float] = field(default_factory=list)       # first load, seconds
    checks: int = 0                                         # round-check fragment runs
    errors: list[str] = field(default_factory=list)


class Phone:
    """One student's phone on the room's page, at the protocol level."""

    def __init__(self, url: str, code: str, timeout: float, rng: np.random.Generator,
                 kept: tuple[str, dict] | None = None):
        self.url, self.query, self.timeout, self.rng = url, f"room={code}", timeout, rng
        self.kept = kept                                  # (memo key, report) of a first round
        self.page_hash = ""
        self.component: tuple[str, dict] | None = None   # (element id, its data)
        self.fragment: tuple[str, float] | None = None   # (round check's id, interval)

    async def __aenter__(self):
        cookie = await asyncio.to_thread(self._load_page)
        self.ws = await websockets.connect(f"{self.url}/_stcore/stream",
                                           subprotocols=["streamlit"], max_size=None,
                                           open_timeout=self.timeout,
                                           additional_headers={"Cookie": cookie} if cookie
                                           else None)
        return self

    async def __aexit__(self, *exc):
        await self.ws.close()

    def _load_page(self) -> str:
        """GET the page as a browser does first: the proxy's cookie pins the phone to a replica."""
        http = "http" + self.url[len("ws"):]
        with urllib.request.urlopen(f"{http}/{PAGE}?{self.query}", timeout=self.timeout) as page:
            return "; ".join(c.split(";", 1)[0] for c in page.headers.get_all("Set-Cookie") or [])

    async def rerun(self, trigger: dict | None = None, fragment: str = "") -> float:
        """Seconds from sending a rerun (with the component's ``trigger`` event) to its end."""
        message = BackMsg()
        rerun = message.rerun_script
        rerun.query_string, rerun.page_name = self.query, PAGE
        rerun.page_script_hash, rerun.fragment_id = self.page_hash, fragment
        if trigger is not None:
            widget = rerun.widget_states.widgets.add()
            widget.id = TRIGGERS.format(self.component[0])
            widget.json_trigger_value = json.dumps([trigger])
        started = time.perf_counter()
        await self.ws.send(message.SerializeToString())
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
            kind = forward.WhichOneof("type")
            if kind == "navigation":
                self.page_hash = forward.navigation.page_script_hash
            elif kind == "auto_rerun":
                self.fragment = forward.auto_rerun.fragment_id, forward.auto_rerun.interval
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                if element.WhichOneof("type") == "bidi_component":
                    self.component = (element.bidi_component.id,
                                      json.loads(element.bidi_component.json))
                elif element.WhichOneof("type") == "exception":
                    raise RuntimeError(f"exception on the page: {element.exception.message:.100}")
            elif kind == "script_finished":
                if forward.script_finished in FINISHED:
                    return time.perf_counter() - started
                if forward.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RuntimeError("the page did not compile")

    def report(self) -> dict:
        """This phone's report for the round in its component's data: in a memoized round the
        one it kept, if kept under the round's ``memo`` key (``dpResend``), else drawn afresh."""
        spec = self.component[1]["spec"]
        if spec.get("memoize") and self.kept is not None:
            if self.kept[0] != spec["memo"]:
                raise RuntimeError("the round's memo key is not the first round's: no resend")
            return self.kept[1]
        return draw(spec, self.rng)


def draw(spec: dict, rng: np.random.Generator) -> dict:
    """A report for the round ``spec`` (the phone component's), drawn as the browser's randomiser
    would (a random true answer: the class is simulated)."""
    kind = spec["mechanism"]
    if kind == coins.COINS:            # first coin heads: the truth; else the second coin
        truth = rng.random() < 0.3
        return {"y": int(truth if rng.random() < 0.5 else rng.random() < 0.5)}
    if kind == numbers.NUMBER:
        value = rng.uniform(0, spec["bound"])
        return {"y": int(rng.random() < numbers.one_probability(value, spec["bound"],
                                                                spec["epsilon"]))}
    mech, d = mechanisms.build(kind, epsilon=spec["epsilon"]), spec["d"]
    items = np.array([rng.integers(d)])
    if kind == "olh":                  # the page issued this phone's hash seed (a, b)
        a, b = (np.array([v]) for v in spec["seed"])
        bucket = int(universal_hash(a, b, items, mech.hash_range)[0])
        other = int(rng.integers(mech.hash_range - 1))      # p: keep the bucket, else
        y = bucket if rng.random() < spec["p"] else other + (other >= bucket)   # another
        return {"a": int(a[0]), "b": int(b[0]), "y": y}
    if spec.get("permutation"):        # Hadamard response: the round's permutation
        drawn = mech.perturb(items, d, rng, permutation=np.asarray(spec["permutation"]))
    else:
        drawn = mech.perturb(items, d, rng)
    if "bits" in drawn:
        return {"bits": "".join("1" if b else "0" for b in drawn["bits"][0])}
    return {k: int(v[0]) for k, v in drawn.items()}


async def one_phone(url: str, code: str, delay: float, tally: Tally, timeout: float, seed: int,
                    end: asyncio.Event, kept: tuple[str, dict] | None) -> None:
    await asyncio.sleep(delay)
    try:
        async with Phone(url, code, timeout, np.random.default_rng(seed), kept) as phone:
            tally.first.append(await phone.rerun())
            if phone.component is None:
                raise RuntimeError("no phone component on the page")
            data = phone.component[1]
            took = await phone.rerun({"event": "report",
                                      "value": {"report": phone.report(), "nonce": data["nonce"]}})
            answer = phone.component[1].get("sent") or {}
            if not answer.get("ok") or not SENT.search(answer.get("message", "")):
                raise RuntimeError(f"not confirmed: {answer.get('message', 'no answer')!s:.100}")
            tally.confirmed.append(took)
            while phone.fragment is not None and not end.is_set():   # stays on the page
                try:
                    await asyncio.wait_for(end.wait(), phone.fragment[1])
                except asyncio.TimeoutError:
                    await phone.rerun(fragment=phone.fragment[0])
                    tally.checks += 1
    except (OSError, asyncio.TimeoutError, RuntimeError, KeyError,
            websockets.exceptions.WebSocketException) as error:
        tally.errors.append(f"{type(error).__name__}: {error}"[:160])


def open_room(store: classroom.RoomStore, kind: str, mechanism: str, epsilon: float,
              phones: int, reports: int) -> tuple[str, str]:
    """The room (code, teacher key) for ``phones`` students sending ``reports`` in all."""
    question = classroom.Question("Where do you live and work?", ZONES, ZONES)
    options = {"students": min(phones, classroom.MAX_REPORTS)}
    if kind == "coins":
        code, key = store.create_room(question, coins.COINS, coins.EPSILON,
                                    prompt="Did you cycle here today?", **options)
    elif kind == "number":
        code, key = store.create_room(question, numbers.NUMBER, epsilon, prompt=NUMBER_PROMPT,
                                    bound=BOUND, **options)
    else:
        code, key = store.create_room(question, mechanism, epsilon,
                                      memoize=kind == "memoized", **options)
    if reports > classroom.MAX_REPORTS:     # beyond the product's cap: see the module docstring
        with store.db.write() as db:
            db.execute("UPDATE rooms SET max_reports=? WHERE code=?", (reports, code))
    return code, key


def first_round(store: classroom.RoomStore, code: str, key: str, phones: int,
                seed: int) -> list[tuple[str, dict]]:
    """Round 1 of ``--repeat``, untimed: each phone's first report drawn from its round spec and
    handed to the store under a ticket of its own (what the page does with a phone's report),
    then the next memoized round of the same kind opened. The (memo key, report) each phone
    keeps, as ``dpKeep`` keeps it."""
    round_ = store.current_round(code)
    d, kept = store.room(code).question.d, []
    for i in range(phones):
        ticket = store.ticket(code, f"lecture-hall-first-round-{i:06d}")
        spec = json.loads(json.dumps(classroom.client_spec(round_, d, ticket.seed)))
        report = draw(spec, np.random.default_rng(seed + i))
        store.submit(ticket, report)
        kept.append((spec["memo"], report))
    store.new_round(code, key, round_.mechanism, round_.epsilon, memoize=True,
                    prompt=round_.prompt, bound=round_.bound)
    return kept


def reports_of(store: classroom.RoomStore, code: str, number: int) -> list[str]:
    """A round's reports as sorted JSON texts (a multiset to compare rounds by)."""
    return sorted(json.dumps(r, sort_keys=True) for r in store.snapshot(code, number).reports)


async def total_epsilon_shown(teacher, key: str) -> str:
    """Each student's total ε as the teacher's screen states it, read after the timed part: the
    teacher unlocks the room's controls with the key (as on the page) to see the sentence."""
    await teacher.get_by_text("Teacher controls (needs the teacher key)").click()
    await teacher.get_by_label("Teacher key").fill(key)
    await teacher.get_by_label("Teacher key").press("Enter")
    sentence = teacher.get_by_text(SPENT).first
    await sentence.wait_for(timeout=60_000)
    return SPENT.search(await sentence.inner_text()).group(1)


async def lecture(base: str, pid: int, store: classroom.RoomStore, code: str, phones: int,
                  seconds: float, timeout: float, seed: int,
                  kept: list[tuple[str, dict]] | None, key: str | None) -> dict:
    clock, tally, end = RefreshClock(), Tally(), asyncio.Event()
    ws_url = "ws" + base[len("http"):]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        teacher = await (await browser.new_context(viewport={"width": 1280, "height": 1600})
                         ).new_page()
        teacher.on("websocket", clock.watch)
        await teacher.goto(f"{base}/{PAGE}?teach={code}")
        taps = store.current_round(code).mechanism == coins.COINS   # a coins round counts taps
        await teacher.get_by_text("No taps yet" if taps else "No reports yet").first.wait_for(
            timeout=120_000)
        rng = random.Random(seed)
        delays = sorted(rng.uniform(0, seconds) for _ in range(phones))
        cpu_from, started = cpu_seconds(pid), time.perf_counter()
        tasks = [asyncio.create_task(one_phone(ws_url, code, d, tally, timeout, seed + i, end,
                                               kept[i] if kept else None))
                 for i, d in enumerate(delays)]
        while len(tally.confirmed) + len(tally.errors) < phones:
            if time.perf_counter() - started > seconds + timeout:
                break
            await asyncio.sleep(0.5)
        elapsed = time.perf_counter() - started
        end.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        cpu = cpu_seconds(pid) - cpu_from
        metric = teacher.get_by_test_id("stMetric").filter(
            has_text="Taps in this round" if taps else "Reports in this round")
        shown = "?"
        for _ in range(30):          # the teacher's screen catches up by itself
            shown = (await metric.get_by_test_id("stMetricValue").inner_text()).replace(",", "")
            if shown == str(len(tally.confirmed)):
                break
            await asyncio.sleep(1)
        spent = await total_epsilon_shown(teacher, key) if key else "?"
        await browser.close()
    return {"tally": tally, "stored": len(store.snapshot(code).reports), "shown": shown,
            "spent": spent, "elapsed": elapsed, "cpu": cpu, "refreshes": clock.durations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phones", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=120.0, help="seconds arrivals span")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--kind", choices=KINDS, default="commute")
    parser.add_argument("--mechanism", default="oue", choices=classroom.MECHANISMS,
                        help="a commute or memoized round's mechanism")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per rerun")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--repeat", action="store_true",
                        help="memoized only: time the second round, every phone resending")
    args = parser.parse_args()
    if args.repeat and args.kind != "memoized":
        parser.error("--repeat measures a memoized round's repeat: use it with --kind memoized")
    folder = tempfile.mkdtemp(prefix="lecture-hall-")
    os.environ[classroom.FOLDER_VARIABLE] = folder   # the replicas' shared store (inherited)
    store = classroom.RoomStore(folder)
    reports = args.phones * (2 if args.repeat else 1)
    code, key = open_room(store, args.kind, args.mechanism, args.epsilon, args.phones, reports)
    kept = first_round(store, code, key, args.phones, args.seed + 10**6) if args.repeat else None
    load_before = os.getloadavg()
    server, ws_url = start_deployment(args.replicas)
    base = "http" + ws_url[len("ws"):]
    what = args.kind + (f" ({args.mechanism}, ε = {args.epsilon:g})"
                        if args.kind in ("commute", "memoized") else "") + (
        f", round 2 of 2 (round 1's {args.phones} reports sent untimed; each phone resends its "
        "own)" if args.repeat else "")
    print(f"{args.phones} phones over {args.seconds:g} s, {what} round, scripts/serve "
          f"--replicas {args.replicas}; load average {load_before[0]:.1f} before"
          + (f"; room limit raised from the product's {classroom.MAX_REPORTS:,} to {reports:,} "
             f"in the throw-away store" if reports > classroom.MAX_REPORTS else
             f"; the product's room cap, {classroom.MAX_REPORTS:,} reports"), flush=True)
    try:
        r = asyncio.run(lecture(base, server.pid, store, code, args.phones, args.seconds,
                                args.timeout, args.seed, kept, key if args.repeat else None))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except Exception:  # noqa: BLE001 — make sure it is gone
            os.killpg(server.pid, signal.SIGKILL)
    tally, refreshes = r["tally"], sorted(r["refreshes"])
    counted = len(tally.confirmed) == r["stored"] == args.phones and r["shown"] == str(
        args.phones)
    p95 = refreshes[min(len(refreshes) - 1, int(round(0.95 * (len(refreshes) - 1))))] \
        if refreshes else float("nan")
    print(f"    reports: {args.phones} sent, {len(tally.confirmed)} confirmed, {r['stored']} "
          f"stored, {r['shown']} on the teacher's screen; every report counted: {counted}")
    print(f"    last phone done after {r['elapsed']:.1f} s; round checks run: {tally.checks}")
    if args.repeat:
        same = reports_of(store, code, 1) == reports_of(store, code, 2)
        total = repeated.total_epsilon(store.rounds(code))
        print(f"    repeat: round 2 holds round 1's reports (as multisets): {same}; each "
              f"student's total ε {total:.3g} (one round's {args.epsilon:g}: "
              f"{math.isclose(total, args.epsilon)}), on the teacher's screen ε = {r['spent']}")
    print(f"    teacher refresh      : {quantiles(refreshes)}; target p95 ≤ 2 s: "
          f"{'met' if p95 <= 2 else 'NOT met'}")
    print(f"    phone confirmation   : {quantiles(tally.confirmed)}")
    print(f"    phone first load     : {quantiles(tally.first)}")
    print(f"    deployment CPU {r['cpu']:.0f} s over {r['elapsed']:.0f} s "
          f"({r['cpu'] / max(r['elapsed'], 1e-9):.2f} cores); load average "
          f"{load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"    errors: {len(tally.errors)}"
          + (f" (first: {tally.errors[0]})" if tally.errors else ""), flush=True)


if __name__ == "__main__":
    main()
