"""The experiment runner on a Dask LocalCluster (dpcore.evaluation.cluster): the same table as in this process,
Stop works, and a worker killed mid-sweep costs nothing but time."""

import os
import signal
import threading
import time

import pandas as pd
import pytest

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.evaluation import cluster, experiment
from tests.conftest import DASK_TIMEOUT as TIMEOUT
from tests.downloads import read_private_csv

#: Columns that identify a row of the tidy table (``seconds`` is a measured time, not a result).
KEY = ["scenario", "mechanism", "params", "epsilon", "postprocess", "trial", "metric"]


def results(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns="seconds")


@pytest.mark.parametrize("dataset", ["toy_town", "ireland_county"])
def test_cluster_sweep_equals_in_process(dask_client, dataset):
    od = datasets.load(dataset)
    options = dict(epsilons=[1.0], postprocess=["base", "base_pos"], trials=2, seed=11)
    here = experiment.run(od, mechanisms.names(), **options)
    there = experiment.run(od, mechanisms.names(), scheduler=dask_client, **options)
    assert there.attrs == here.attrs == {"jobs_done": 2 * len(mechanisms.names()),
                                         "jobs_total": 2 * len(mechanisms.names()),
                                         "cancelled": False}
    pd.testing.assert_frame_equal(results(there), results(here))
    assert not there.duplicated(KEY).any()


def test_cluster_sweep_stops_when_asked(dask_client):
    od = datasets.load("ireland_county")
    stop = threading.Event()

    def progress(done, total):
        if done == 3:
            stop.set()

    table = experiment.run(od, mechanisms.names(), [0.5, 1.0, 2.0], trials=3, seed=2,
                           scheduler=dask_client, progress=progress, cancel=stop)
    assert table.attrs["cancelled"]
    assert 3 <= table.attrs["jobs_done"] < table.attrs["jobs_total"]
    # What came back is what the in-process runner gives for those jobs.
    done = table[KEY[1:]].drop_duplicates()
    here = experiment.run(od, mechanisms.names(), [0.5, 1.0, 2.0], trials=3, seed=2)
    expected = here.merge(done, on=list(done.columns))
    pd.testing.assert_frame_equal(
        results(table).sort_values(KEY).reset_index(drop=True),
        results(expected).sort_values(KEY).reset_index(drop=True))


def test_generator_closed_early_cancels_the_rest(dask_client):
    od = datasets.load("ireland_county")
    jobs = experiment.plan(mechanisms.names(), [0.5, 1.0, 2.0], trials=3, seed=5)
    stream = cluster.completed(dask_client, od, jobs, experiment.execute_on_worker)
    next(stream)
    stream.close()
    deadline = time.monotonic() + TIMEOUT
    while any(dask_client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(dask_client.processing().values())


def _wait_until_gone(dask_client, address) -> None:
    deadline = time.monotonic() + TIMEOUT
    while address in dask_client.scheduler_info()["workers"]:
        assert time.monotonic() < deadline, f"worker {address} still listed after the kill"
        time.sleep(0.1)


def test_worker_killed_mid_sweep_every_job_once(dask_client):
    od = datasets.load("ireland_county")
    options = dict(epsilons=[0.5, 2.0], postprocess=["base", "base_pos"], trials=2, seed=7)
    here = experiment.run(od, mechanisms.names(), **options)
    killed = []

    def kill_one_worker(done, total):
        if done == 2 and not killed:
            busy = {address: keys for address, keys in dask_client.processing().items() if keys}
            address = max(busy or dask_client.scheduler_info()["workers"],
                          key=lambda a: len(busy.get(a, ())))
            killed.append(address)
            (pid,) = dask_client.run(os.getpid, workers=[address]).values()
            os.kill(pid, signal.SIGKILL)  # a worker process this test's cluster started
            _wait_until_gone(dask_client, address)

    there = experiment.run(od, mechanisms.names(), scheduler=dask_client, progress=kill_one_worker,
                           **options)
    assert killed
    total = len(mechanisms.names()) * 2 * 2
    assert there.attrs == {"jobs_done": total, "jobs_total": total, "cancelled": False}
    assert not there.duplicated(KEY).any()
    pd.testing.assert_frame_equal(results(there), results(here))
    dask_client.wait_for_workers(2, timeout=TIMEOUT)  # the nanny restarts it for the next test


def test_scheduler_address_checked():
    assert cluster.check_scheduler(" tcp://10.0.0.5:8786 ") == "tcp://10.0.0.5:8786"
    assert cluster.check_scheduler("local") == "local"
    for bad in ("", "10.0.0.5:8786", "http://x:8786", "tcp://"):
        with pytest.raises(ValueError, match="tcp://host:8786"):
            cluster.check_scheduler(bad)


def test_cli_sweep_on_a_scheduler_address_writes_the_in_process_table(dask_client, tmp_path, capsys):
    from dpcore.interfaces import cli

    argv = ["sweep", "--dataset", "toy_town", "--mechanisms", "laplace,oue,hm", "--epsilons",
            "0.5,2", "--trials", "2", "--seed", "4"]
    assert cli.main(argv + ["--out", str(tmp_path / "here.csv")]) == 0
    assert cli.main(argv + ["--scheduler", dask_client.scheduler.address,
                            "--out", str(tmp_path / "there.csv")]) == 0
    assert "12 releases" in capsys.readouterr().out
    here, there = (read_private_csv(tmp_path / f"{name}.csv") for name in ("here", "there"))
    pd.testing.assert_frame_equal(there.drop(columns="seconds"), here.drop(columns="seconds"))
