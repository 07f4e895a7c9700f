"""AppTest of the Tradeoffs page with and without a configured Dask scheduler (DPCORE_SCHEDULER):
unset, nothing changes; set to a LocalCluster, the sweeps run there and draw the same numbers as
the in-process runner; a bad address is a message; the thesis report builds and downloads."""

import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data import datasets
from dpcore.evaluation import experiment, summaries
from tests.conftest import DASK_TIMEOUT as TIMEOUT
from tests.plotly_spec import figure, traces, values
from ui.components import runs

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "3_Tradeoffs.py")
GRID, TRIALS = "kept_widget_tradeoffs_grid", "kept_widget_tradeoffs_trials"


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the page as ``sys.modules["__main__"]``; put the real one back (a worker the
    cluster restarts must not import the page)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(scope="module")
def local_cluster(dask_client):
    address = dask_client.scheduler.address
    yield address, dask_client
    # The page's cached client (one per server and address) goes with the cluster.
    runs.client(address).close()
    runs._connection.clear()


def page(seed: str, grid="1, 5", trials=2) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["mech"] = ["laplace", "grr"]
    at.query_params["seed"] = seed
    at.query_params["pp"] = "base"
    at.run()
    at.text_input(key=GRID).set_value(grid)
    at.number_input(key=TRIALS).set_value(trials)
    at.run()
    assert not at.exception, at.exception
    return at


def scheduler_captions(at) -> list[str]:
    return [c.value for c in at.caption if "Dask scheduler" in c.value]


def in_process_means(seed: int) -> dict[str, np.ndarray]:
    table = experiment.run(datasets.load("ireland_county"), ["laplace", "grr"], [1.0, 5.0],
                           postprocess=["base"], trials=2, seed=seed)
    summary = summaries.summarise(table, "rmse")
    return {key: rows.sort_values("epsilon")["mean"].to_numpy()
            for key, rows in summary.groupby("mechanism")}


def test_without_a_scheduler_nothing_changes(monkeypatch):
    monkeypatch.delenv(runs.SCHEDULER_ENV, raising=False)
    at = page("301")
    assert not scheduler_captions(at)
    at.button(key="tradeoffs_epsilon_run").click().run()
    assert not at.exception, at.exception
    (line,) = traces(figure(at, "against ε (Base"), "Laplace")
    assert np.allclose(values(line["y"]), in_process_means(301)["laplace"])


def test_sweep_runs_on_the_configured_cluster_with_the_same_numbers(monkeypatch, local_cluster):
    address, client = local_cluster
    monkeypatch.setenv(runs.SCHEDULER_ENV, address)
    at = page("302")
    assert scheduler_captions(at) and address in scheduler_captions(at)[0]
    at.button(key="tradeoffs_epsilon_run").click().run()
    assert not at.exception, at.exception
    fig = figure(at, "against ε (Base")
    expected = in_process_means(302)
    for key, name in (("laplace", "Laplace"),
                      ("grr", "Generalised randomised response (direct encoding)")):
        (line,) = traces(fig, name)
        assert np.allclose(values(line["y"]), expected[key])
    ran_there = client.run_on_scheduler(
        lambda dask_scheduler: [p for p in dask_scheduler.task_prefixes
                                if p.startswith("dpcore-job")])
    assert ran_there
    labels = {b.key for b in at.button}
    assert "tradeoffs_epsilon_run" not in labels  # every release is stored


def test_bad_scheduler_address_is_a_message(monkeypatch):
    monkeypatch.setenv(runs.SCHEDULER_ENV, "not-an-address")
    at = page("303")
    at.button(key="tradeoffs_epsilon_run").click().run()
    assert not at.exception, at.exception
    assert any("tcp://host:8786" in e.value for e in at.error)


def test_thesis_report_builds_on_the_cluster_and_downloads(monkeypatch, local_cluster):
    address, _client = local_cluster
    monkeypatch.setenv(runs.SCHEDULER_ENV, address)
    at = page("304", grid="5", trials=1)
    at.button(key="thesis_report_build").click().run()
    assert not at.exception, at.exception
    (button,) = [b for b in at.get("download_button") if "Thesis report" in b.proto.label]
    assert button.proto.label.startswith("Thesis report (zip")
    from ui.tradeoffs import sections as tradeoffs

    _key, data, _seconds = at.session_state[tradeoffs._REPORT]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        assert {"report.html", "sweep.csv", "as_written_table_5.1.csv", "as_run_table_5.2.csv"} <= names
        assert "County" in archive.read("report.html").decode()
