"""``scripts/serve`` without Streamlit: the HAProxy configuration it writes (checked by HAProxy
itself, and run in front of a header-echoing backend: the visitor's real address replaces a
forged X-Forwarded-For), and its refusals of bad options. The running deployment is tested in a
browser (tests/browser/test_deployment_browser.py) and under a crashed replica
(tests/test_serve_failover.py)."""

import argparse
import http.server
import importlib.machinery
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from dpcore.interfaces import classroom_admission as admission
from tests.browser.conftest import ROOT, _die_with, _free_port, in_ci

SERVE = ROOT / "scripts" / "serve"


def load_serve():
    loader = importlib.machinery.SourceFileLoader("serve", str(SERVE))
    spec = importlib.util.spec_from_loader("serve", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def haproxy_program() -> str:
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(haproxy):
        if in_ci():
            pytest.fail("HAProxy is missing; CI requires it (.ci/run installs it)")
        pytest.skip("HAProxy is not installed (apt-get install haproxy)")
    return haproxy


def test_the_config_pins_sessions_checks_health_and_tunnels_websockets(tmp_path):
    config = load_serve().haproxy_config("127.0.0.1", 8501, [8611, 8612, 8613], "c0ffee")
    assert "{" not in config                                   # every field filled in
    assert "bind 127.0.0.1:8501" in config
    for k, port in enumerate((8611, 8612, 8613), start=1):
        assert f"server r{k} 127.0.0.1:{port} check cookie r{k}" in config
    assert "cookie DPCORE_REPLICA insert indirect nocache httponly" in config
    assert "option httpchk GET /_stcore/health" in config and "timeout tunnel 1h" in config
    # the visitor's address replaces what the visitor wrote; the replicas know the proxy by secret
    assert "http-request set-header X-Forwarded-For %[src]" in config
    directives = [line.split("#")[0].strip() for line in config.splitlines()]
    assert "option forwardfor" not in directives               # it appends; set-header replaces
    assert "http-request set-header X-Dpcore-Proxy c0ffee" in directives
    assert "option redispatch 1" in config                     # a dead replica's visitors move
    haproxy = haproxy_program()
    path = tmp_path / "haproxy.cfg"
    path.write_text(config)
    check = subprocess.run([haproxy, "-c", "-f", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "warning" not in (check.stdout + check.stderr).lower()


@pytest.mark.parametrize("arguments, message", [
    (["--replicas", "0"], "--replicas must be between 1 and 64; got 0"),
    (["--port", "70000"], "--port must leave room for the replicas' ports; got 70000"),
    (["--haproxy", "/nowhere/haproxy"], "HAProxy not found at /nowhere/haproxy"),
])
def test_bad_options_are_refused_with_a_message(arguments, message):
    result = subprocess.run([sys.executable, str(SERVE), *arguments], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


class Echo(http.server.BaseHTTPRequestHandler):
    """A replica's stand-in: healthy, and keeps the headers of every other request."""

    seen: list = []

    def do_GET(self):  # noqa: N802 — http.server's name
        if self.path != "/_stcore/health":
            # every field of a name, joined as the replica's page reads them (get_all)
            Echo.seen.append({k.lower(): ", ".join(self.headers.get_all(k)) for k in self.headers})
        try:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        except ConnectionError:
            pass                  # HAProxy's health check does not wait for the body

    def log_message(self, *args):
        pass


def get(port: int, source: str, headers: dict[str, str]) -> int:
    """GET / on 127.0.0.1:port from the loopback address ``source``; the status code."""
    with socket.create_connection(("127.0.0.1", port), timeout=5,
                                  source_address=(source, 0)) as connection:
        lines = ["GET / HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close",
                 *(f"{k}: {v}" for k, v in headers.items())]
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(connection.recv(4096).split()[1])


def test_through_the_proxy_a_forged_forwarded_for_is_replaced_by_the_real_address(tmp_path):
    """Issue 40 attack 4 through HAProxy: a visitor at 127.0.0.2 writes X-Forwarded-For and the
    proxy's secret header itself; the replica receives only its real address and the real
    secret, and counts it as 127.0.0.2. The same forged request straight to the replica (as any
    local process can send) counts as the one local address."""
    serve = load_serve()
    Echo.seen = []
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    port = _free_port()
    options = argparse.Namespace(replicas=1, replica_ports=[backend.server_port], port=port,
                                 store=None, state_dir=None)
    deployment = serve.Deployment(options, tmp_path)
    policy = admission.ProxyPolicy.from_environment(deployment.env)
    assert policy == admission.ProxyPolicy(frozenset({"127.0.0.1"}), deployment.secret, False)
    config = tmp_path / "haproxy.cfg"
    config.write_text(serve.haproxy_config("127.0.0.1", port, [backend.server_port],
                                           deployment.secret))
    proxy = subprocess.Popen([haproxy_program(), "-db", "-f", str(config)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=_die_with(os.getpid()))
    forged = {"X-Forwarded-For": "203.0.113.9", admission.PROXY_SECRET_HEADER: "a guess"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status = get(port, "127.0.0.2", forged)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert status == 200
        direct = get(backend.server_port, "127.0.0.3", forged)
        assert direct == 200
    finally:
        proxy.terminate()
        proxy.wait(10)
        backend.shutdown()
    through, straight = Echo.seen
    secret = admission.PROXY_SECRET_HEADER.lower()
    assert through["x-forwarded-for"] == "127.0.0.2"            # replaced, not appended
    assert through[secret] == deployment.secret
    assert admission.client_address(None, through["x-forwarded-for"], through[secret],
                                    policy) == "127.0.0.2"
    # straight to the replica: the peer (loopback, Streamlit's None) and no valid secret
    assert admission.client_address(None, straight["x-forwarded-for"], straight[secret],
                                    policy) == admission.LOCAL


def test_a_replica_that_dies_is_restarted_with_back_off_until_it_keeps_failing(tmp_path,
                                                                              monkeypatch,
                                                                              capsys):
    """The supervisor without Streamlit: a replica that was serving and dies is started again
    at once; starts that die before answering the health check wait longer each time; the
    fifth in a row stops the site (Failure: exit code 1) with the replica's log."""
    serve = load_serve()
    monkeypatch.setattr(serve, "BACKOFF", (0, 0.05, 0.1, 0.2))
    monkeypatch.setattr(serve.Replica, "command", lambda self: [
        sys.executable, "-c", "print('cannot start'); raise SystemExit(3)"])
    options = argparse.Namespace(replicas=1, replica_ports=[_free_port()], port=1,
                                 store=None, state_dir=None)
    deployment = serve.Deployment(options, tmp_path)
    replica = deployment.replicas[0]
    deployment._start_replica(replica)
    replica.proven = True                       # it had been serving
    deadline = time.monotonic() + 30
    with pytest.raises(serve.Failure) as failure:
        while time.monotonic() < deadline:
            deployment.supervise()
            time.sleep(0.01)
    deployment.stop()
    said = capsys.readouterr().err
    delays = [line.split(" in ")[1].split(" s ")[0] for line in said.splitlines()
              if "starting it again" in line]
    assert delays == ["0", "0.05", "0.1", "0.2"], said
    assert "replica-1 exited with code 3" in said
    assert "replica-1 failed 5 starts in a row" in str(failure.value)
    assert "cannot start" in str(failure.value)          # the end of its log
    assert (tmp_path / "replica-1.log").read_text().count("cannot start") == 5


def test_the_systemd_unit_runs_scripts_serve_with_options_it_accepts():
    """deploy/commuting-privacy-lab.service: restarts the site after a failure, at boot, and
    stops it through scripts/serve (SIGTERM to it alone: the proxy first, then the replicas)."""
    unit = ROOT / "deploy" / "commuting-privacy-lab.service"
    lines = [line.strip() for line in unit.read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    settings = dict(line.split("=", 1) for line in lines if "=" in line)
    program, script, *arguments = settings["ExecStart"].split()
    assert script.endswith("/scripts/serve")
    options = load_serve().build_parser().parse_args(arguments)
    assert options.replicas == 2 and options.address == "127.0.0.1" and options.state_dir
    assert settings["Restart"] == "on-failure" and settings["KillMode"] == "mixed"
    assert settings["KillSignal"] == "SIGTERM" and settings["WantedBy"] == "multi-user.target"
    analyze = shutil.which("systemd-analyze")
    if analyze:                                  # systemd's own check, where systemd is
        check = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
        assert check.returncode == 0 and "warning" not in check.stderr.lower(), check.stderr
