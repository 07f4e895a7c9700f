"""One range per setting (dpcore.limits), worker processes capped at the cores, a run's releases
capped before its job list is built, and control/bidirectional characters shown escaped."""

import pytest

from dpcore import limits
from dpcore.data import datasets
from dpcore.evaluation import experiment
from dpcore.limits import RELEASES, SEED, TRIALS
from dpcore.mechanisms.base import DELTA, EPSILON
from dpcore.text import visible


def test_workers_are_capped_at_the_cores_and_the_cap_is_said(monkeypatch):
    monkeypatch.setattr(limits, "cores", lambda: 2)
    assert limits.workers(1) == (1, None)
    assert limits.workers(2) == (2, None)
    assert limits.workers(-1) == (2, None)
    used, note = limits.workers(12, "--jobs")
    assert used == 2
    assert "--jobs = 12" in note and "2 cores" in note and "using 2" in note


@pytest.mark.parametrize("requested", [0, -2, 1.5, True])
def test_a_meaningless_number_of_workers_is_refused(monkeypatch, requested):
    monkeypatch.setattr(limits, "cores", lambda: 2)
    with pytest.raises(ValueError, match=r"must be -1 \(every core\) or a whole number from 1 to 2"):
        limits.workers(requested)


def test_a_run_never_starts_more_processes_than_cores(monkeypatch):
    """experiment.run asks limits.workers, so --jobs 12 and n_jobs=12 alike use the cores."""
    monkeypatch.setattr(limits, "cores", lambda: 1)
    started = []
    monkeypatch.setattr(experiment, "_run_in_pool", lambda *a: started.append(a) or False)
    table = experiment.run(datasets.load("toy_town"), ["laplace"], [1.0], trials=3, n_jobs=12)
    assert started == [] and table.attrs["jobs_done"] == 3  # one core: run in this process


def test_trials_beyond_the_declared_range_are_refused_before_any_job_is_built():
    with pytest.raises(ValueError, match=r"'trials' parameter of a run must be in \[1, 10000\]"):
        experiment.plan(["laplace"], [1.0], trials=100_000_000)


def test_a_run_of_more_releases_than_fit_in_memory_is_refused_with_its_arithmetic():
    epsilons = [0.5 + i / 10 for i in range(10)]
    with pytest.raises(ValueError) as refused:
        experiment.plan(["laplace", "oue", "olh", "grr", "hr", "hm"], epsilons,
                        trials=TRIALS.high)
    message = str(refused.value)
    assert "600,000 releases (10,000 trials × 1 version(s) of the data × 6 mechanism(s) × 10 ε)"\
        in message
    assert f"at most {RELEASES.high:,}" in message and RELEASES.why in message


def test_ranges_are_printed_whole_for_whole_numbers():
    assert SEED.interval() == "[0, 9007199254740991]"
    assert TRIALS.interval() == "[1, 10000]"
    assert EPSILON.interval() == "[1e-06, 20]"


@pytest.mark.parametrize("delta", [0.6, 0.999999, 0.0, 1e-16])
def test_delta_outside_its_range_is_named_with_the_reason(delta):
    with pytest.raises(ValueError) as refused:
        DELTA.check(delta, "the test")
    assert "must be in [1e-15, 0.5]" in str(refused.value) and DELTA.why in str(refused.value)


def test_a_subject_replaces_the_owner_in_the_message():
    with pytest.raises(ValueError, match=r"^--trials must be in \[1, 10000\]\. Got 0 instead\."):
        TRIALS.check(0, "", subject="--trials")


@pytest.mark.parametrize("text, shown", [
    ("abc\u202edef", r"abc\u202edef"),          # right-to-left override
    ("\u2066x\u2069", r"\u2066x\u2069"),         # isolates
    ("\u200f\u061c", r"\u200f\u061c"),           # marks
    ("a\x1b[2Jb", r"a\x1b[2Jb"),                 # terminal escape
    ("tab\there", r"tab\there"),
    ("Zürich – Łódź", "Zürich – Łódź"),          # ordinary text untouched
])
def test_control_and_bidirectional_characters_are_shown_escaped(text, shown):
    assert visible(text) == shown


def test_kept_characters_stay():
    assert visible("a\nb\u202e", keep="\n") == "a\nb\\u202e"


def test_the_shared_server_doc_states_the_declared_ranges():
    from pathlib import Path

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "SHARED_SERVER.md")
                   .read_text(encoding="utf-8").split())
    assert f"δ: from {DELTA.low:g} to {DELTA.high:g}." in doc
    assert f"Trials: from {TRIALS.low} to {TRIALS.high:,} per point" in doc
    assert f"at most {RELEASES.high:,} releases in one run" in doc
    assert f"Seeds: from {SEED.low} to 2^53 − 1" in doc and SEED.high == 2**53 - 1
