"""The shipped deployment in Chromium (issue 32): ``scripts/serve --replicas 2`` — two Streamlit
replicas behind HAProxy, sharing the SQLite file or (``--store``) a PostgreSQL database as
replicas on several hosts would — with a teacher on one replica and students on the other
(separate browser contexts, each pinned by the proxy's cookie), the reports reaching the teacher
through the shared store, and an upload going through the proxy to the uploader's replica. Then
SIGTERM stops the proxy and both replicas.

Needs Debian's ``haproxy`` (``/usr/sbin/haproxy``, or ``$DPCORE_HAPROXY``), and for the PostgreSQL
case the server of ``$DPCORE_TEST_POSTGRES_URL`` (tests/test_store.py): skipped on a developer's
machine without them, FAIL when ``$CI`` is set (``.ci/run`` installs and starts them).
"""

import contextlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time

import pytest
from playwright.sync_api import Page, expect

from dpcore.data import importers
from tests.browser.conftest import ARTIFACTS, ROOT, _die_with, _free_port, in_ci, is_own
from tests.browser.test_classroom_browser import (PHONE, forged_addresses_in_a_capped_room, metric,
                                                  no_traceback, open_room, settled)
from tests.test_store import postgres_server  # noqa: F401 — the fixture, for the PostgreSQL store

pytestmark = pytest.mark.browser

HAPROXY = os.environ.get("DPCORE_HAPROXY") or shutil.which("haproxy") or "/usr/sbin/haproxy"
START_TIMEOUT = 240   # two replicas importing on two shared cores
UPLOAD = ROOT / "tests" / "fixtures" / "long_coordinates.csv"
STUDENTS = 2


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def deployment(request, tmp_path_factory):
    """``scripts/serve --replicas 2`` on free ports with a throw-away store — the shared SQLite
    file, or a fresh schema on the test PostgreSQL server (``--store``, as for several hosts):
    yields (URL, the PostgreSQL URL or None); stops it with SIGTERM and checks that everything
    it started is gone."""
    store = []
    if request.param == "postgres":
        from tests.test_store import drop_schema, fresh_schema

        server = request.getfixturevalue("postgres_server")
        schema, url = fresh_schema(server)
        request.addfinalizer(lambda: drop_schema(server, schema))
        store = ["--store", url]
    store_url = store[1] if store else None
    with serving(tmp_path_factory.mktemp("shared-store"), store) as (url, _, _):
        yield url, store_url


def haproxy_or_skip() -> None:
    if not os.path.exists(HAPROXY):
        message = f"HAProxy not found at {HAPROXY} (apt-get install haproxy)"
        if in_ci():
            pytest.fail(message + "; CI requires the deployment test")
        pytest.skip(message)


@contextlib.contextmanager
def serving(state_dir, store=()):
    """``scripts/serve --replicas 2`` on free ports with ``state_dir`` (and ``store`` options):
    yields (URL, the script's process, the replicas' ports); stops it with SIGTERM and checks
    that it exits 0 and everything it started is gone."""
    haproxy_or_skip()
    port, replicas = _free_port(), [_free_port(), _free_port()]
    logs = ARTIFACTS / f"serve-{port}"
    serve = subprocess.Popen(
        [str(ROOT / "scripts" / "serve"), "--replicas", "2", "--port", str(port),
         "--replica-ports", *map(str, replicas), "--haproxy", HAPROXY,
         "--state-dir", str(state_dir), "--log-dir", str(logs), *store],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={k: v for k, v in os.environ.items() if k != "DPCORE_STORE_URL"},
        preexec_fn=_die_with(os.getpid()))
    deadline, said = time.monotonic() + START_TIMEOUT, ""
    while "serving http" not in said:
        if serve.poll() is not None or time.monotonic() > deadline:
            serve.kill()
            pytest.fail(f"scripts/serve did not start: {said}{serve.stdout.read()}")
        if select.select([serve.stdout], [], [], 1)[0]:
            said += serve.stdout.readline()
    try:
        yield f"http://127.0.0.1:{port}", serve, replicas
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(30)
    assert code == 0, f"scripts/serve ended with {code}"
    assert not any(listening(p) for p in [port, *replicas]), "a replica or the proxy outlived it"


def pinned_context(browser, url: str, replica: str):
    """A browser context (another person's browser) whose proxy cookie names ``replica``."""
    context = browser.new_context(viewport=PHONE)
    context.add_cookies([{"name": "DPCORE_REPLICA", "value": replica, "url": url}])
    return context


def test_a_class_and_an_upload_across_two_replicas(page: Page, browser, deployment, tmp_path):
    url, store_url = deployment
    first = page.goto(f"{url}/Classroom")
    teacher_replica = first.headers["x-replica"]
    cookies = {c["name"]: c["value"] for c in page.context.cookies(url)}
    assert cookies.get("DPCORE_REPLICA") == teacher_replica   # the proxy pinned the teacher
    student_replica = {"r1": "r2", "r2": "r1"}[teacher_replica]
    code = open_room(page)

    outside = []

    def other_browser():
        context = pinned_context(browser, url, student_replica)
        context.on("request", lambda request: None if is_own(request.url)
                   else outside.append(request.url))
        return context
    for _ in range(STUDENTS):           # each student's own browser, on the other replica
        context = other_browser()
        phone = context.new_page()
        response = phone.goto(f"{url}/Classroom?room={code}")
        assert response.headers["x-replica"] == student_replica
        phone.get_by_role("button", name="Randomise on this phone").click()
        expect(phone.get_by_text("Your phone will send exactly this")).to_be_visible()
        phone.get_by_role("button", name="Send this report").click()
        expect(phone.get_by_text(re.compile(r"Sent: report number \d+")).first).to_be_visible()
        settled(phone)
        no_traceback(phone)
        context.close()

    # the teacher's replica reads what the other replica stored, and refreshes by itself
    expect(metric(page, "Reports in this round")).to_have_text(str(STUDENTS), timeout=30_000)
    if store_url:                        # the reports are in PostgreSQL, not in a local file
        from dpcore.interfaces.classroom import RoomStore

        assert len(RoomStore(tmp_path, url=store_url).snapshot(code).reports) == STUDENTS
    settled(page)
    no_traceback(page)

    # an upload through the proxy: the file goes over HTTP to the replica holding the session
    context = other_browser()
    uploader = context.new_page()
    response = uploader.goto(f"{url}/Data")
    assert response.headers["x-replica"] == student_replica
    expect(uploader.get_by_role("heading", name="Your data")).to_be_visible()
    matrix = importers.import_od(UPLOAD.read_bytes(), UPLOAD.name).matrix
    (uploader.get_by_test_id("stFileUploader").filter(has_text="Commuting file")
     .locator("input[type=file]").set_input_files(str(UPLOAD)))
    expect(uploader.get_by_text(f"Imported {UPLOAD.name} as")).to_be_visible(timeout=60_000)
    expect(metric(uploader, "Commuters (n)")).to_have_text(f"{matrix.n:,}")
    no_traceback(uploader)
    assert "session invalid" not in uploader.content()
    context.close()
    assert outside == [], outside



def test_a_forged_forwarded_for_through_the_proxy_does_not_lift_the_cap(page: Page, browser,
                                                                        deployment):
    """Issue 40 attack 4 through the shipped HAProxy (was: 12 of 12 reports in a cap-1 room): the
    proxy replaces the header with the phones' real address, one for all of them here."""
    url, _ = deployment
    outcomes = forged_addresses_in_a_capped_room(page, url, browser, phones=3)
    assert outcomes == ["Sent", "refused", "refused"], outcomes
    no_traceback(page)
