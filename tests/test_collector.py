"""The server's timed garbage collection (issue 32): cycles are freed without Streamlit's
per-rerun gc.collect(), which the config switches off."""

import gc
import threading
import time
import tomllib
import weakref
from pathlib import Path

import streamlit.config

from dpcore import collector

ROOT = Path(__file__).resolve().parent.parent


class _Node:
    pass


def test_the_config_switches_off_the_per_rerun_collection_by_its_real_name():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert "runner.postScriptGC" in streamlit.config._config_options_template


def test_the_timed_collector_frees_a_cycle_the_thresholds_leave_alone():
    thresholds = gc.get_threshold()
    gc.disable()   # as if the automatic thresholds never fired
    stop = threading.Event()
    try:
        gc.collect()
        node = _Node()
        node.me = node
        alive = weakref.ref(node)
        del node
        assert alive() is not None    # a cycle: reference counting alone does not free it
        thread = threading.Thread(target=collector.collect_forever, args=(0.05, stop))
        thread.start()
        deadline = time.monotonic() + 5
        while alive() is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert alive() is None
    finally:
        stop.set()
        gc.enable()
        gc.set_threshold(*thresholds)
    thread.join(5)
    assert not thread.is_alive()


def test_the_collector_starts_once_per_process(monkeypatch):
    started = []
    monkeypatch.setattr(collector, "_started", threading.Event())
    monkeypatch.setattr(collector, "collect_forever",
                        lambda interval, stop: started.append(interval))
    assert collector.start(0.01) is True
    assert collector.start(0.01) is False
    time.sleep(0.1)
    assert started == [0.01]
