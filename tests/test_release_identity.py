"""The same settings and seed give the same release on every page, in every download and on the
command line (issue 10): for every registered mechanism, on the toy and county data.

Each page is driven with AppTest and its own download buttons are pressed (tests/downloads.py);
the command line is run as a user would run it. Nothing here calls the pipeline twice and compares
it with itself: the numbers come from the files the two ends write.
"""

import io
import sys

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import mechanisms
from dpcore.interfaces import cli
from tests.downloads import Downloads, private_csv

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
EPSILON, SEED, POST = "1.3", "7", "base_pos"
KEYS = mechanisms.names()
DATASETS = ["toy_town", "ireland_county"]


@pytest.fixture(autouse=True)
def keep_main_module():
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(scope="module")
def cli_releases(tmp_path_factory):
    """``python3 -m dpcore release`` for every mechanism and dataset: file bytes."""
    out = {}
    folder = tmp_path_factory.mktemp("cli")
    for dataset in DATASETS:
        for key in KEYS:
            path = folder / f"{dataset}_{key}.csv"
            assert cli.main(["release", "--dataset", dataset, "--mechanism", key, "--epsilon",
                             EPSILON, "--seed", SEED, "--postprocess", POST, "--out",
                             str(path)]) == 0
            out[dataset, key] = private_csv(path.read_bytes())  # its first line checked
    return out


@pytest.fixture(scope="module")
def cli_sweeps(tmp_path_factory):
    """``python3 -m dpcore sweep --trials 1`` over every mechanism, per dataset: a table."""
    out = {}
    folder = tmp_path_factory.mktemp("sweep")
    for dataset in DATASETS:
        path = folder / f"{dataset}.csv"
        assert cli.main(["sweep", "--dataset", dataset, "--mechanisms", ",".join(KEYS),
                         "--epsilons", EPSILON, "--trials", "1", "--seed", SEED,
                         "--postprocess", POST, "--out", str(path)]) == 0
        out[dataset] = read_tidy(io.BytesIO(private_csv(path.read_bytes())))
    return out


def read_tidy(source) -> pd.DataFrame:
    """A tidy sweep table: empty ``params`` stay text, empty values are NaN metrics."""
    return pd.read_csv(source, keep_default_na=False, na_values={"value": [""]})


def page(name: str, dataset: str, mechanisms_chosen, **more) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=240)
    for query, value in {"dataset": dataset, "mech": list(mechanisms_chosen), "eps": EPSILON,
                         "seed": SEED, "pp": POST, **more}.items():
        at.query_params[query] = value
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("dataset", DATASETS)
def test_explore_release_downloads_equal_the_command_line(monkeypatch, cli_releases, dataset):
    downloads = Downloads(monkeypatch)
    at = page("2_Explore.py", dataset, KEYS, tab="Downloads")
    for key in KEYS:
        # the same bytes under the page's "NOT FOR PUBLICATION" line (true_count is in it)
        assert private_csv(downloads.by_key(at, f"release_download_{key}")) == \
            cli_releases[dataset, key], key


@pytest.mark.parametrize("dataset", DATASETS)
def test_tradeoffs_trial_zero_equals_the_command_line_sweep(monkeypatch, cli_sweeps, dataset):
    downloads = Downloads(monkeypatch)
    at = page("3_Tradeoffs.py", dataset, KEYS)
    at.text_input(key="kept_widget_tradeoffs_grid").set_value(EPSILON)
    at.number_input(key="kept_widget_tradeoffs_trials").set_value(1)
    at.run()
    at.button(key="tradeoffs_epsilon_run").click().run()
    assert not at.exception, at.exception
    page_table = read_tidy(io.BytesIO(private_csv(
        downloads.by_key(at, "tradeoffs_epsilon_every_release_csv"))))
    columns = ["mechanism", "params", "epsilon", "postprocess", "trial", "metric", "value"]
    expected = cli_sweeps[dataset][columns].sort_values(["mechanism", "metric"])
    got = page_table[columns].sort_values(["mechanism", "metric"])
    assert set(got["mechanism"]) == set(KEYS)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def half_digit(values) -> np.ndarray:
    """Half a unit in the 10th significant digit of each value: how far a number written with
    ``%.10g`` (dpcore.export.FLOAT_FORMAT) can be from the one computed."""
    values = np.abs(np.asarray(values, dtype=float))
    exponent = np.floor(np.log10(np.where(values > 0, values, 1.0)))
    return np.where(values > 0, 0.5 * 10.0 ** (exponent - 9), 0.0)


def test_the_sweep_scores_the_release_the_command_line_writes(cli_releases, cli_sweeps):
    """Sweep trial 0 and ``release`` are one release: the sweep's RMSE is the RMSE of the file,
    to the files' 10 significant digits: each written count is within half a unit of its 10th
    digit, which moves the RMSE by at most the root mean square of those half units (the
    triangle inequality), and the sweep's figure is written to 10 digits too."""
    for dataset in DATASETS:
        sweep = cli_sweeps[dataset]
        for key in KEYS:
            table = pd.read_csv(io.BytesIO(cli_releases[dataset, key]), keep_default_na=False)
            rmse = np.sqrt(np.mean((table["released_count"] - table["true_count"]) ** 2))
            (expected,) = sweep.loc[(sweep["mechanism"] == key) & (sweep["metric"] == "rmse"),
                                    "value"]
            written = np.sqrt(np.mean(half_digit(table["released_count"]) ** 2))
            assert abs(rmse - expected) <= written + half_digit(expected) + 1e-12 * rmse, (
                dataset, key, rmse, expected)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("key", KEYS)
def test_flow_map_released_layer_equals_the_command_line(monkeypatch, cli_releases, dataset,
                                                         key):
    downloads = Downloads(monkeypatch)
    at = page("4_Flow_map.py", dataset, [key])
    shown = pd.read_csv(io.BytesIO(private_csv(downloads.by_key(at, "flowmap_map_csv"))),
                        keep_default_na=False, dtype={"origin_id": str, "destination_id": str})
    assert len(shown) > 0
    released = pd.read_csv(io.BytesIO(cli_releases[dataset, key]), keep_default_na=False,
                           dtype={"origin": str, "destination": str})
    merged = shown.merge(released, left_on=["origin_id", "destination_id"],
                         right_on=["origin", "destination"], how="left", validate="1:1")
    assert merged["released_count"].notna().all()
    np.testing.assert_allclose(merged["released"], merged["released_count"], rtol=1e-9)
