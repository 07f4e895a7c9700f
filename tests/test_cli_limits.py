"""Hostile arguments on the command line (issue 20, point 6): each is a one-line message naming the
option, the value, the valid range and what to do, with exit code 2 and no traceback; ``--out``
never overwrites without ``--force``; ``--jobs`` is capped at the cores and says so; OpenDP, NumPy
and memory errors are messages; control and bidirectional characters are quoted escaped."""

import re

import numpy as np
import pytest

from dpcore import limits
from dpcore.interfaces import cli, publish
from dpcore.interfaces.commands import releases
from dpcore.limits import DELTA, EPSILON, SEED, TRIALS

TOY = ["--dataset", "toy_town"]
#: Characters that must never reach the terminal raw.
RAW_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert not RAW_CONTROLS.search(out + err), repr(out + err)
    return code, out, err


@pytest.mark.parametrize("argv, words", [
    (["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1e-12"],
     ["--epsilon must be in [1e-06, 20]", "Got 1e-12", EPSILON.why]),
    (["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1e-16"],
     ["--epsilon must be in [1e-06, 20]"]),
    (["publish", *TOY, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "0.999999"],
     ["--delta must be in [1e-15, 0.5]", "Got 0.999999", DELTA.why]),
    (["publish", *TOY, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1",
      "--levels", "--fine-share", "0.99"], ["--delta must be in"]),
    (["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1", "--levels",
      "--fine-share", "0.99"], ["--fine-share must be in [0.1, 0.9]", "Got 0.99"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--trials", "1e8"],
     ["--trials must be in [1, 10000]", "Got 100000000", "use fewer trials"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--trials", "0"],
     ["--trials must be in [1, 10000]"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--trials", "2.5"],
     ["--trials must be a whole number in [1, 10000]"]),
    (["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "5",
      "--trials", "1e9"], ["--trials must be in [1, 10000]", "Got 1000000000"]),
    (["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "5",
      "--probability", "1"], ["--probability must be in [0.5, 0.99]"]),
    (["reproduce-thesis", *TOY, "--trials", "99999"], ["--trials must be in [1, 10000]"]),
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "1", "--seed", "-3"],
     ["--seed must be in [0, 9007199254740991]", "Got -3", SEED.why]),
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "nan"],
     ["--epsilon must be a finite number in [1e-06, 20]"]),
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "lots"],
     ["--epsilon must be a number in [1e-06, 20]; got 'lots'"]),
    (["release", *TOY, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "0.6"],
     ["--delta must be in [1e-15, 0.5]"]),
    (["heavy-hitters", *TOY, "--protocol", "pem", "--epsilon", "1", "--k", "1000"],
     ["--k must be in [1, 100]"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--k", "0"],
     ["--k must be in [1, 10000]"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--jobs", "0"],
     ["--jobs must be -1 (every core) or at least 1"]),
    # Issue 40: Python's float() and int() read "1_0" as 10 and "١٠" (Arabic-Indic) as 10, so
    # --epsilon 1_0 published at ε = 10. Every numeric option reads numbers the plain way.
    (["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1_0"],
     ["--epsilon must be a number in [1e-06, 20]; got '1_0'"]),
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "١"],
     ["--epsilon must be a number in [1e-06, 20]; got '١'"]),
    (["publish", *TOY, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1_0e-7"],
     ["--delta must be a number in [1e-15, 0.5]; got '1_0e-7'"]),
    (["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1", "--levels",
      "--fine-share", "0.2_5"], ["--fine-share must be a number in [0.1, 0.9]"]),
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "1", "--seed", "1_0"],
     ["--seed must be a whole number in [0, 9007199254740991]; got '1_0'"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--trials", "1_0"],
     ["--trials must be a whole number in [1, 10000]; got '1_0'"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--jobs", "1_0"],
     ["--jobs must be a whole number (-1: every core); got '1_0'"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--k", "٣"],
     ["--k must be a whole number in [1, 10000]; got '٣'"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "0.5,1_0"],
     ["--epsilons must be numbers separated by commas (e.g. 0.5,1,2); got '0.5,1_0'"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", ""],
     ["--epsilons is empty: give it a value"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1,,2"],
     ["--epsilons must be numbers separated by commas, none of them empty"]),
    (["sweep", *TOY, "--mechanisms", "", "--epsilons", "1"], ["--mechanisms is empty"]),
    (["sweep", *TOY, "--mechanisms", "laplace,", "--epsilons", "1"],
     ["--mechanisms must be names separated by commas, none of them empty"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--postprocess", "base,"],
     ["--postprocess must be names separated by commas, none of them empty"]),
    (["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "5_0"],
     ["--target must be a finite number such as 5 or 0.25; got '5_0'"]),
    (["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "nan"],
     ["--target must be a finite number such as 5 or 0.25; got 'nan'"]),   # was: "give a target"
    (["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "5",
      "--probability", "0.9_5"], ["--probability must be a number in [0.5, 0.99]"]),
    (["heavy-hitters", *TOY, "--protocol", "pem", "--epsilon", "1", "--k", "1_0"],
     ["--k must be a whole number in [1, 100]; got '1_0'"]),
    (["reproduce-thesis", *TOY, "--epsilons", "0.5,1_0"], ["“1_0” is not a number"]),
    (["release", "--file", "", "--mechanism", "laplace", "--epsilon", "1"],
     ["--file is empty: give it a value"]),   # was: "unknown dataset None"
    (["release", *TOY, "--mechanism", "laplace", "--epsilon", "1", "--area", ""],
     ["--area is empty"]),
    (["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1", "--scheduler", ""],
     ["--scheduler is empty"]),
    (["release", *TOY, "--mechanism", "topk", "--epsilon", "1", "--param", "k=1_0"],
     ["the 'k' parameter must be a whole number; got '1_0'"]),
    (["release", *TOY, "--mechanism", "topk", "--epsilon", "1", "--param", "k=2.5"],
     ["the 'k' parameter must be a whole number; got '2.5'"]),          # was: k = 2, silently
])
def test_a_hostile_argument_is_a_message_with_exit_code_2(capsys, tmp_path, argv, words):
    out = tmp_path / "out"
    code, _, err = run(capsys, *argv, "--out", out)
    assert code == cli.EXIT_USAGE
    for word in words:
        assert word in err, (word, err)
    assert not out.exists()


def test_a_sweep_too_large_for_memory_is_refused_before_it_starts(capsys, tmp_path):
    code, _, err = run(capsys, "sweep", *TOY, "--mechanisms", "laplace,oue,grr,olh,hr,hm",
                       "--epsilons", "0.5,1,1.5,2,2.5,3,3.5,4,4.5,5", "--trials", TRIALS.high,
                       "--out", tmp_path / "s.csv")
    assert code == cli.EXIT_USAGE
    assert "This run asks for 600,000 releases" in err and "at most 50,000" in err
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("argv", [
    ["release", *TOY, "--mechanism", "laplace", "--epsilon", "1", "--seed", "1"],
    ["heavy-hitters", *TOY, "--protocol", "pem", "--epsilon", "1", "--k", "3", "--seed", "1"],
    ["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1"],
    ["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "50"],
])
def test_out_file_is_never_overwritten_without_force(capsys, tmp_path, argv):
    out = tmp_path / "earlier.csv"
    out.write_text("earlier results\n")
    code, _, err = run(capsys, *argv, "--out", out)
    assert code == cli.EXIT_USAGE
    assert f"--out {out} already exists; add --force to overwrite it" in err
    assert out.read_text() == "earlier results\n"
    code, _, _ = run(capsys, *argv, "--out", out, "--force")
    assert code == 0 and out.read_text() != "earlier results\n"


def test_publish_never_writes_into_a_folder_of_earlier_results_without_force(capsys, tmp_path):
    argv = ["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1"]
    folder = tmp_path / "published"
    folder.mkdir()  # an empty folder is a fine place to publish
    assert run(capsys, *argv, "--out", folder)[0] == 0
    first = (folder / "release.csv").read_text()
    code, _, err = run(capsys, *argv, "--out", folder)
    assert code == cli.EXIT_USAGE
    assert "is a folder that already holds files" in err and "--force" in err
    assert (folder / "release.csv").read_text() == first
    assert run(capsys, *argv, "--out", folder, "--force")[0] == 0


def test_reproduce_thesis_never_writes_into_a_folder_of_earlier_results(capsys, tmp_path):
    (tmp_path / "report.html").write_text("earlier")
    code, _, err = run(capsys, "reproduce-thesis", *TOY, "--trials", "1", "--out", tmp_path)
    assert code == cli.EXIT_USAGE and "already holds files" in err
    assert (tmp_path / "report.html").read_text() == "earlier"


def test_jobs_above_the_cores_use_the_cores_and_say_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "cores", lambda: 1)
    code, out, err = run(capsys, "sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1",
                         "--trials", "2", "--jobs", "12", "--out", tmp_path / "s.csv")
    assert code == 0
    assert "note: --jobs = 12 asked, but this machine has 1 core: using 1" in err
    assert "2 releases" in out


def test_an_opendp_refusal_is_a_message(capsys, tmp_path, monkeypatch):
    from opendp.mod import OpenDPException

    def refuse(*args, **kwargs):
        raise OpenDPException("MakeMeasurement", "scale (-1/2) must not be negative")
    monkeypatch.setattr(publish, "calibrate", refuse)
    code, _, err = run(capsys, "publish", *TOY, "--mechanism", "discrete_laplace",
                       "--epsilon", "1e-6", "--out", tmp_path / "p")
    assert code == cli.EXIT_USAGE
    assert err.startswith("error: OpenDP refused these settings (MakeMeasurement: scale (-1/2) "
                          "must not be negative)")
    assert err.count("\n") == 1


@pytest.mark.parametrize("error, words", [
    (MemoryError(), "not enough memory for this command"),
    (np.linalg.LinAlgError("Singular matrix"), "the computation failed (LinAlgError: Singular"),
    (FloatingPointError("overflow encountered in exp"), "the computation failed "
                                                        "(FloatingPointError: overflow"),
])
def test_numpy_and_memory_errors_are_messages(capsys, tmp_path, monkeypatch, error, words):
    def fail(*args, **kwargs):
        raise error
    monkeypatch.setattr(releases.release, "run", fail)
    code, _, err = run(capsys, "release", *TOY, "--mechanism", "laplace", "--epsilon", "1",
                       "--out", tmp_path / "r.csv")
    assert code == cli.EXIT_USAGE and words in err


def test_a_bug_is_not_disguised_as_a_message(tmp_path, monkeypatch):
    def bug(*args, **kwargs):
        raise AttributeError("a programming error")
    monkeypatch.setattr(releases.release, "run", bug)
    with pytest.raises(AttributeError):
        cli.main(["release", *TOY, "--mechanism", "laplace", "--epsilon", "1",
                  "--out", str(tmp_path / "r.csv")])


@pytest.mark.parametrize("argv", [
    ["release", *TOY, "--mechanism", "lap\u202ecalp", "--epsilon", "1"],
    ["publish", *TOY, "--mechanism", "\u202egaussian", "--epsilon", "1"],
    ["release", *TOY, "--mechanism", "laplace", "--epsilon", "1\u202e"],
    ["release", *TOY, "--mechanism", "laplace", "--epsilon", "1", "--param", "x\u202e=1"],
])
def test_bidirectional_characters_in_a_message_are_shown_escaped(capsys, tmp_path, argv):
    code, _, err = run(capsys, *argv, "--out", tmp_path / "r.csv")
    assert code == cli.EXIT_USAGE and r"\u202e" in err


@pytest.mark.parametrize("argv", [
    ["plan", *TOY, "--mechanisms", "laplace", "--metric", "rmse", "--target", "50"],
    ["publish", *TOY, "--mechanism", "discrete_laplace", "--epsilon", "1"],
    ["sweep", *TOY, "--mechanisms", "laplace", "--epsilons", "1"],
])
def test_an_output_path_with_a_bidirectional_override_is_printed_escaped(capsys, tmp_path,
                                                                           argv):
    out = tmp_path / "results\u202evsc.csv"
    code, printed, _ = run(capsys, *argv, "--out", out)
    assert code == 0 and out.exists()
    assert "results\\u202evsc.csv" in printed
