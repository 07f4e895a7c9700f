"""Browser tests: the real app on a free port, driven through Playwright in Debian's Chromium.

The browser is found through ``DPCORE_CHROMIUM`` (default ``/usr/bin/chromium``). Without it the
tests skip on a developer machine but FAIL when ``CI`` is set, so CI can never pass without them.
Every test that uses a browser page also checks that the app asked nothing of a third party: every
request to a host other than the app's is recorded and aborted (``third_party`` fixture, autouse),
and the test fails if any was attempted or if the page's icon points outside the app.
The server runs in its own process group, is killed on teardown and, on Linux, also dies with
pytest (parent-death signal), so a killed test run leaves no orphan holding the port.
"""

import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
CHROMIUM = os.environ.get("DPCORE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
#: Streamlit scrolls inside its own container, so full-page screenshots miss content: go tall.
VIEWPORT = {"width": 1280, "height": 2400}
SERVER_START_TIMEOUT = 90  # seconds; two shared cores can be slow to import streamlit + pandas

expect.set_options(timeout=30_000)

#: Hosts the app is served from in the tests; everything else is a third party.
OWN_HOSTS = {"127.0.0.1", "localhost"}
#: The page's icons (favicon): Streamlit turns a ``:material/…:`` page icon into a Google URL.
ICON_LINKS = "() => [...document.querySelectorAll(\"link[rel~='icon']\")].map(link => link.href)"


def is_own(url: str) -> bool:
    """True for the app itself and for inline content (data:, blob:, about:, file:)."""
    if url.startswith(("data:", "blob:", "about:", "file:")):
        return True
    return urlparse(url).hostname in OWN_HOSTS


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with(parent_pid: int):
    """A pre-exec hook: the server gets SIGKILL when pytest dies, however it dies (Linux only)."""
    def hook():
        if sys.platform.startswith("linux"):
            pr_set_pdeathsig = 1
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent_pid:  # pytest died before the signal was armed
            os._exit(1)
    return hook


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


class AppServer:
    """``streamlit run app.py`` on a free port, in its own process group (see the module docstring)."""

    def __init__(self):
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log_path = ARTIFACTS / f"streamlit-{port}.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                 "--server.address", "127.0.0.1", "--server.port", str(port),
                 "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                # the Classroom's rooms and the ledger go to a throw-away database, and the
                # ledger's key and head records to a throw-away state folder, not the user's own
                env={**os.environ, "DPCORE_CLASSROOM_DIR": tempfile.mkdtemp(prefix="classroom-"),
                     "XDG_STATE_HOME": tempfile.mkdtemp(prefix="state-")},
                start_new_session=True, preexec_fn=_die_with(os.getpid()))

    def wait_until_healthy(self) -> str:
        """The base URL once the server answers its health check; fail the test if it never does.
        Health checks open no session: the app's scripts have not run when this returns."""
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while not _healthy(self.url):
            if self.process.poll() is not None:
                pytest.fail(f"the app exited with code {self.process.returncode} before it was "
                            f"healthy; log:\n{self.log_path.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                pytest.fail(f"the app was not healthy after {SERVER_START_TIMEOUT} s; "
                            f"log:\n{self.log_path.read_text(errors='replace')}")
            time.sleep(0.25)
        return self.url

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="session")
def app_url():
    """Start ``streamlit run app.py`` on a free port; yield its base URL; kill it afterwards."""
    server = AppServer()
    try:
        yield server.wait_until_healthy()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser_type_launch_args():
    """pytest-playwright's launch arguments: Debian's Chromium, headless, no sandbox."""
    if not os.access(CHROMIUM, os.X_OK):
        message = (f"Chromium not found at {CHROMIUM} (set DPCORE_CHROMIUM, or: apt-get install -y "
                   "--no-install-recommends chromium fonts-liberation)")
        if in_ci():
            pytest.fail(message + "; CI requires the browser tests to run")
        pytest.skip(message)
    return {"executable_path": CHROMIUM, "args": LAUNCH_ARGS, "headless": True}


@pytest.fixture(scope="session")
def browser_context_args():
    return {"viewport": VIEWPORT}


@pytest.fixture
def screenshot(page):
    """``screenshot("name")`` saves the page to tests/artifacts/screenshots/name.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path
    return take


@pytest.fixture(autouse=True)
def third_party(request):
    """Record and abort every request to a host other than the app's; fail the test if any.

    Browser tests only (those that use ``page``). Yields the list of outside URLs attempted.
    """
    if "page" not in request.fixturenames:
        yield None
        return
    page = request.getfixturevalue("page")
    outside = []

    def route(route):
        if is_own(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()
    page.context.route("**/*", route)
    yield outside
    icons = [] if page.is_closed() else page.evaluate(ICON_LINKS)
    assert outside == [], "requests to third parties were attempted"
    assert [icon for icon in icons if not is_own(icon)] == [], "the page icon is fetched elsewhere"


#: Streamlit's frontend, opened at a page's path (/Flow_map, /Data, …), first looks for its server
#: under that path (404), then at the root: expected misses, not failures.
BASE_PATH_PROBE = re.compile(r"/[A-Za-z0-9_]+/_stcore/(health|host-config)$")


@pytest.fixture
def network(page: Page, third_party):
    """Record failed requests and page errors; fail the test if any. Requests to anyone but the
    app are blocked and recorded by ``third_party`` (autouse), shared here as ``outside``.

    A request the page itself cancelled (``net::ERR_ABORTED``, e.g. a map's iframe replaced by a
    rerun while it loaded) is not a failure."""
    record = {"outside": third_party, "failed": [], "errors": []}
    page.on("requestfailed", lambda request: request.failure != "net::ERR_ABORTED"
            and record["failed"].append(f"{request.url} {request.failure}"))
    page.on("response", lambda response: response.status >= 400
            and not BASE_PATH_PROBE.search(response.url)
            and record["failed"].append(f"{response.url} HTTP {response.status}"))
    page.on("pageerror", lambda error: record["errors"].append(str(error)))
    page.on("console", lambda message: message.type == "error"
            and not BASE_PATH_PROBE.search(message.location.get("url", ""))
            and record["errors"].append(f"{message.text} ({message.location})"))
    yield record
    assert record["failed"] == [], "requests failed"
    assert record["errors"] == [], "the page reported errors"
