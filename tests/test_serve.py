"""``scripts/serve`` without starting anything: the HAProxy configuration it writes (checked by
HAProxy itself) and its refusals of bad options. The running deployment is tested in a browser:
tests/browser/test_deployment_browser.py."""

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from tests.browser.conftest import ROOT, in_ci

SERVE = ROOT / "scripts" / "serve"


def load_serve():
    loader = importlib.machinery.SourceFileLoader("serve", str(SERVE))
    spec = importlib.util.spec_from_loader("serve", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


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
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(haproxy):
        if in_ci():
            pytest.fail("HAProxy is missing; CI requires it (.ci/run installs it)")
        pytest.skip("HAProxy is not installed (apt-get install haproxy)")
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
