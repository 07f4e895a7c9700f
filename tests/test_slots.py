"""Compute slots (ui/components/slots.py): never more holders than slots, admitted in order."""

import threading
import time

import pytest

from ui.components import slots


def test_holders_never_exceed_the_slots():
    gate, inside, most, lock = slots.FifoSlots(2), [0], [0], threading.Lock()

    def hold():
        with gate:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.005)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=hold) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert most[0] == 2 and gate._free == 2 and not gate._waiting


def test_waiters_are_admitted_first_come_first_served():
    gate, order, release_first = slots.FifoSlots(1), [], threading.Event()

    def hold(name, wait=None):
        with gate:
            order.append(name)
            if wait is not None:
                wait.wait(5)

    first = threading.Thread(target=hold, args=("holder", release_first))
    first.start()
    while not order:
        time.sleep(0.001)
    waiting = []
    for k in range(6):          # queued one at a time, so their order is known
        thread = threading.Thread(target=hold, args=(f"waiter{k}",))
        thread.start()
        waiting.append(thread)
        while len(gate._waiting) < k + 1:
            time.sleep(0.001)
    release_first.set()
    for thread in [first, *waiting]:
        thread.join(5)
    assert order == ["holder"] + [f"waiter{k}" for k in range(6)]
    assert gate._free == 1 and not gate._waiting


def test_a_holder_that_raises_hands_its_slot_on():
    gate = slots.FifoSlots(1)
    with pytest.raises(RuntimeError):
        with gate:
            raise RuntimeError("stopped rerun")
    with gate:        # would wait for ever if the slot were lost
        assert gate._free == 0
    assert gate._free == 1


@pytest.mark.parametrize("text, limited", [("", False), (" ", False), ("1", True), ("3", True)])
def test_the_environment_sets_the_slots(monkeypatch, text, limited):
    monkeypatch.setenv(slots.VARIABLE, text)
    assert isinstance(slots.from_environment(), slots.FifoSlots) is limited


@pytest.mark.parametrize("text", ["0", "-1", "two", "1_0", "2.5"])
def test_a_bad_slot_count_says_what_is_wrong(monkeypatch, text):
    monkeypatch.setenv(slots.VARIABLE, text)
    with pytest.raises(ValueError, match="DPCORE_COMPUTE_SLOTS must be a whole number"):
        slots.from_environment()
