"""Experiment runner: tidy output, determinism across seeds and n_jobs, progress, cancellation."""

import threading
import zlib

import numpy as np
import pandas as pd
import pytest

from dpcore import mechanisms
from dpcore.data import datasets, views
from dpcore.evaluation import experiment
from dpcore.mechanisms import postprocess
from dpcore.scoring import metrics

GRID = dict(mechanism_specs=["laplace", ("gaussian", {"delta": 1e-8}), "oue"],
            epsilons=[0.5, 2], postprocess=["base", "norm_sub"], trials=2)


@pytest.fixture(scope="module")
def toy():
    return datasets.load("toy_town")


@pytest.fixture(scope="module")
def serial(toy):
    return experiment.run(toy, seed=11, n_jobs=1, **GRID)


def test_tidy_table_has_one_row_per_job_postprocessing_and_metric(serial):
    assert list(serial.columns) == experiment.COLUMNS
    jobs = 3 * 2 * 2
    assert len(serial) == jobs * 2 * len(metrics.METRICS)
    assert serial.attrs == {"jobs_done": jobs, "jobs_total": jobs, "cancelled": False}
    assert set(serial["mechanism"]) == {"laplace", "gaussian", "oue"}
    assert set(serial.loc[serial["mechanism"] == "gaussian", "params"]) == {
        "delta=1e-08, neighbours=substitution"}
    assert set(serial["metric"]) == set(metrics.METRICS)
    # one release per job: its time is shared by all its rows and is positive
    per_job = serial.groupby(["mechanism", "epsilon", "trial"])["seconds"].nunique()
    assert (per_job == 1).all() and (serial["seconds"] > 0).all()


def test_each_job_draws_from_the_seeding_rule(toy, serial):
    """Job (gaussian, ε = 2, trial 1) draws from seeding.generator(seed, "release", key, ε,
    trial): the rule every page and command uses, whatever the job's position."""
    jobs = experiment.plan(GRID["mechanism_specs"], GRID["epsilons"], trials=GRID["trials"],
                           postprocess=GRID["postprocess"], seed=11)
    assert [(j.spec.trial, j.spec.mechanism, j.spec.epsilon) for j in jobs[:7]] == [
        (0, "laplace", 0.5), (0, "laplace", 2.0), (0, "gaussian", 0.5), (0, "gaussian", 2.0),
        (0, "oue", 0.5), (0, "oue", 2.0), (1, "laplace", 0.5)]
    rng = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(
        zlib.crc32(b"release"), zlib.crc32(b"gaussian"), int(np.float64(2.0).view(np.uint64)), 1)))
    mechanism = mechanisms.build("gaussian", epsilon=2.0, delta=1e-8)
    true = toy.to_dense()
    released = postprocess.apply("norm_sub", mechanism.release(true, rng), toy.n)
    expected = metrics.compute(true, released, toy)
    rows = serial[(serial["mechanism"] == "gaussian") & (serial["epsilon"] == 2.0)
                  & (serial["trial"] == 1) & (serial["postprocess"] == "norm_sub")]
    assert dict(zip(rows["metric"], rows["value"])) == pytest.approx(expected, nan_ok=True)


def test_scenarios_subsample_per_trial_and_share_the_sample_across_mechanisms(toy):
    view = views.View(n=100)
    table = experiment.run(toy, ["laplace", "grr"], [1.0], trials=2, seed=3,
                           scenarios=[experiment.Scenario("small", view)])
    assert set(table["n"]) == {100} and set(table["scenario"]) == {"small"}
    first = experiment.subsampled(toy, view, 3, 0)
    assert first.n == 100
    np.testing.assert_array_equal(first.to_dense(), experiment.subsampled(toy, view, 3, 0)
                                  .to_dense())
    assert not np.array_equal(first.to_dense(), experiment.subsampled(toy, view, 3, 1).to_dense())


def test_same_seed_same_table_different_seed_different_table(toy, serial):
    again = experiment.run(toy, seed=11, n_jobs=1, **GRID)
    pd.testing.assert_frame_equal(serial.drop(columns="seconds"), again.drop(columns="seconds"))
    other = experiment.run(toy, seed=12, n_jobs=1, **GRID)
    rmse = (serial["metric"] == "rmse")
    assert not np.allclose(serial.loc[rmse, "value"], other.loc[rmse, "value"])
    # trials of the same configuration differ from one another
    laplace = serial[(serial["metric"] == "rmse") & (serial["mechanism"] == "laplace")]
    assert laplace.groupby(["epsilon", "postprocess"])["value"].nunique().eq(2).all()


def test_results_do_not_depend_on_the_number_of_processes(toy, serial):
    parallel = experiment.run(toy, seed=11, n_jobs=2, **GRID)
    pd.testing.assert_frame_equal(serial.drop(columns="seconds"), parallel.drop(columns="seconds"))


def test_progress_is_reported_and_returning_false_cancels(toy):
    calls = []

    def progress(done, total):
        calls.append((done, total))
        return done < 3

    table = experiment.run(toy, ["laplace"], [1.0], trials=10, seed=1, progress=progress)
    assert calls == [(1, 10), (2, 10), (3, 10)]
    assert table.attrs == {"jobs_done": 3, "jobs_total": 10, "cancelled": True}
    assert sorted(table["trial"].unique()) == [0, 1, 2]


def test_a_set_event_cancels_a_parallel_run(toy):
    cancel = threading.Event()

    def progress(done, total):
        cancel.set()  # as a "Stop" button on another thread would

    table = experiment.run(toy, ["laplace", "grr"], [0.5, 1, 2, 4], trials=25, seed=1,
                           n_jobs=2, progress=progress, cancel=cancel)
    assert table.attrs["cancelled"] is True
    assert 1 <= table.attrs["jobs_done"] < table.attrs["jobs_total"] == 200
    cancel_first = experiment.run(toy, ["laplace"], [1.0], cancel=cancel)
    assert cancel_first.attrs["jobs_done"] == 0 and cancel_first.empty


def test_progress_to_the_end_is_not_a_cancellation(toy):
    table = experiment.run(toy, ["laplace"], [1.0], trials=2,
                           progress=lambda done, total: done < total)
    assert table.attrs["cancelled"] is False and table.attrs["jobs_done"] == 2


@pytest.mark.parametrize("kwargs, message", [
    (dict(mechanism_specs=["nope"], epsilons=[1]), "unknown mechanism 'nope'"),
    (dict(mechanism_specs=["laplace"], epsilons=[0]), "'epsilon' parameter"),
    (dict(mechanism_specs=[("gaussian", {"delta": 2})], epsilons=[1]), "'delta' parameter"),
    (dict(mechanism_specs=[("laplace", {"delta": 1e-6})], epsilons=[1]), "unknown parameter"),
    (dict(mechanism_specs=[("laplace", {"epsilon": 1})], epsilons=[1]), "epsilons="),
    (dict(mechanism_specs=["laplace"], epsilons=[]), "at least one ε"),
    (dict(mechanism_specs=["laplace"], epsilons=[1], trials=0), "trials"),
    (dict(mechanism_specs=["laplace"], epsilons=[1], postprocess=["magic"]), "unknown post"),
    (dict(mechanism_specs=["topk"], epsilons=[1], postprocess=["significance_cut"]),
     "significance cut"),
    (dict(mechanism_specs=["laplace"], epsilons=[1], n_jobs=0), "n_jobs"),
])
def test_invalid_runs_fail_before_running_with_a_clear_message(toy, kwargs, message):
    with pytest.raises((ValueError, KeyError, TypeError), match=message):
        experiment.run(toy, **kwargs)
