"""Command line (``python -m dpcore …``) and the formula-safe CSV export it shares with the UI."""

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore import confidential, export, mechanisms, release, seeding
from dpcore.data import datasets, importers
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.interfaces import cli
from dpcore.mechanisms.base import DELTA
from dpcore.scoring import metrics
from tests.downloads import read_private_csv

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------------------- datasets
def test_datasets_lists_every_bundled_dataset_with_its_figures(capsys):
    code, out, _ = run(capsys, "datasets")
    assert code == 0
    header, rule, *rows = out.strip().splitlines()
    assert header.split() == ["key", "title", "n", "origins", "destinations", "|X|", "non-zero"]
    assert len(rows) == len(datasets.DATASETS)
    for info, row in zip(datasets.list_datasets(), rows):
        od = datasets.load(info.key)
        key, title, *figures = re.split(r"\s{2,}", row)
        assert (key, title) == (info.key, info.title)
        assert figures == [f"{v:,}" for v in (od.n, od.n_origins, od.n_destinations,
                                               od.domain_size, od.nonzero)]


def test_datasets_for_a_valid_file_prints_the_importers_notices_and_figures(capsys):
    path = TESTS / "fixtures" / "long.csv"
    expected = importers.import_od(path.read_bytes(), path.name)
    code, out, _ = run(capsys, "datasets", "--file", path)
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[:len(expected.notices)] == [str(n) for n in expected.notices]
    assert lines[-1].split()[0] == "long.csv"
    assert lines[-1].split()[-5:] == [f"{v:,}" for v in (
        expected.matrix.n, expected.matrix.n_origins, expected.matrix.n_destinations,
        expected.matrix.domain_size, expected.matrix.nonzero)]


def test_datasets_for_an_invalid_file_prints_the_errors_first_and_exits_non_zero(capsys):
    path = TESTS / "malformed" / "count_negative.csv"
    with pytest.raises(importers.ImportFailed) as failure:
        importers.import_od(path.read_bytes(), path.name)
    code, out, err = run(capsys, "datasets", "--file", path)
    assert code == cli.EXIT_INVALID_INPUT
    assert out == ""
    lines = err.strip().splitlines()
    assert sorted(lines) == sorted(str(n) for n in failure.value.notices)
    assert lines[0].startswith("Error in count_negative.csv, row 4") and "How to fix" in lines[0]


def test_datasets_passes_format_and_level_to_the_importer(capsys):
    path = TESTS / "fixtures" / "powscar.csv"
    county = importers.import_od(path.read_bytes(), path.name, format="powscar", level="county")
    ed = importers.import_od(path.read_bytes(), path.name, format="powscar", level="ed")
    assert county.matrix.domain_size != ed.matrix.domain_size
    code, out, _ = run(capsys, "datasets", "--file", path, "--format", "powscar",
                       "--level", "county")
    assert code == 0
    assert out.strip().splitlines()[-1].split()[-5:] == [f"{v:,}" for v in (
        county.matrix.n, county.matrix.n_origins, county.matrix.n_destinations,
        county.matrix.domain_size, county.matrix.nonzero)]
    code, _, err = run(capsys, "datasets", "--file", path, "--format", "powscar",
                       "--level", "tract")
    assert code == cli.EXIT_INVALID_INPUT and "tract" in err


def test_terminal_controls_in_uploaded_names_are_printed_escaped(capsys, tmp_path):
    """A zone named ESC[2J would clear the user's terminal if printed raw."""
    path = tmp_path / "esc\x1b]0;title\x07.csv"
    path.write_bytes('origin,destination,count\n"A\x1b[2J",B,2\n"A\x1b[2J",B,1\n'
                     '"C\x1b[31m",B,-1\n'.encode())
    outputs = run(capsys, "datasets", "--file", path)
    assert outputs[0] == cli.EXIT_INVALID_INPUT
    assert r"Error in esc\x1b]0;title\x07.csv, row 4" in outputs[2]
    path.write_bytes(path.read_bytes().replace(b"-1", b"1"))
    code, out, err = run(capsys, "datasets", "--file", path)
    assert code == 0
    assert r"“A\x1b[2J → B” is on 2 rows" in out and r"esc\x1b]0;title\x07.csv  " in out
    for text in (*outputs[1:], out, err):
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text), repr(text)


def test_file_options_without_a_file_are_rejected(capsys):
    code, _, err = run(capsys, "datasets", "--format", "powscar")
    assert code == cli.EXIT_USAGE and "use them with --file" in err


def test_missing_file_is_a_message_not_a_traceback(capsys, tmp_path):
    code, _, err = run(capsys, "datasets", "--file", tmp_path / "nope.csv")
    assert code == cli.EXIT_USAGE
    assert err.startswith("error: cannot read") and "nope.csv" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------- mechanisms
def test_mechanisms_lists_every_registered_mechanism_with_its_parameters(capsys):
    code, out, _ = run(capsys, "mechanisms")
    assert code == 0
    rows = {line.split()[0]: line for line in out.strip().splitlines()[2:]}
    assert list(rows) == mechanisms.names()
    gaussian = rows["gaussian"]
    assert "central" in gaussian and "(ε, δ)-DP" in gaussian
    assert "epsilon ∈ [1e-06, 20]" in gaussian and f"delta ∈ {DELTA.interval()}" in gaussian
    assert "local" in rows["oue"] and "ε-LDP" in rows["oue"]
    for key, line in rows.items():
        expected = "exact" if mechanisms.get(key).approximation is None else "approximate"
        assert f" {expected} " in line


def test_python_dash_m_dpcore_runs_the_cli_and_returns_its_exit_code():
    done = subprocess.run([sys.executable, "-m", "dpcore", "release", "--dataset", "toy_town"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "required: --mechanism" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------------------ release
def test_release_writes_the_table_and_reproduces_the_mechanism_for_a_seed(capsys, tmp_path):
    out_file = tmp_path / "oue.csv"
    code, out, _ = run(capsys, "release", "--dataset", "ireland_county", "--mechanism", "oue",
                       "--epsilon", 1, "--seed", 42, "--out", out_file)
    assert code == 0
    assert re.match(r"oue eps=1: released 1085 cells in \d+\.\d (ms|s)\b", out)
    assert len(out.strip().splitlines()) == 1
    table = read_private_csv(out_file, keep_default_na=False)
    assert list(table.columns) == ["origin", "destination", "true_count", "released_count"]
    od = datasets.load("ireland_county")
    true = od.to_dense()
    assert len(table) == od.domain_size == 1085
    np.testing.assert_array_equal(table["true_count"], true)
    np.testing.assert_array_equal(table["origin"], np.repeat(od.origins.ids, od.n_destinations))
    np.testing.assert_array_equal(table["destination"], np.tile(od.destinations.ids, od.n_origins))
    rng = seeding.generator(42, "release", "oue", 1.0, 0)  # the one seeding rule
    expected = mechanisms.build("oue", epsilon=1.0).release(true, rng)
    np.testing.assert_allclose(table["released_count"], expected, rtol=1e-9)


def test_release_post_processes_and_can_skip_empty_cells(capsys, tmp_path):
    out_file = tmp_path / "toy.csv"
    code, out, _ = run(capsys, "release", "--dataset", "toy_town", "--mechanism", "grr",
                       "--epsilon", 2, "--postprocess", "round", "--seed", 1, "--only-nonzero",
                       "--out", out_file)
    assert code == 0 and "round" in out
    table = read_private_csv(out_file, keep_default_na=False)
    od = datasets.load("toy_town")
    assert table["released_count"].sum() == od.n
    assert (table["released_count"] >= 0).all()
    assert ((table["true_count"] != 0) | (table["released_count"] != 0)).all()
    assert table["true_count"].sum() == od.n


def test_release_with_delta_and_extra_parameters(capsys, tmp_path):
    code, out, _ = run(capsys, "release", "--dataset", "toy_town", "--mechanism",
                       "stability_histogram", "--epsilon", 1, "--delta", 1e-4, "--param",
                       "threshold=tight", "--param", "neighbours=add_remove", "--seed", 3,
                       "--out", tmp_path / "s.csv")
    assert code == 0
    table = read_private_csv(tmp_path / "s.csv", keep_default_na=False)
    expected = mechanisms.build("stability_histogram", epsilon=1.0, delta=1e-4,
                                threshold="tight", neighbours="add_remove")
    od = datasets.load("toy_town")
    rng = seeding.generator(3, "release", "stability_histogram", 1.0, 0)
    np.testing.assert_allclose(table["released_count"], expected.release(od.to_dense(), rng))


def test_release_neutralises_formula_like_zone_names(capsys, tmp_path):
    upload = tmp_path / "evil.csv"
    upload.write_text("origin,destination,count\n"
                      "=HYPERLINK(\"http://x\"),+cmd,40\n"
                      "@SUM(A1),-2,30\n"
                      "=HYPERLINK(\"http://x\"),@SUM(A1),50\n", encoding="utf-8")
    out_file = tmp_path / "out.csv"
    code, _, _ = run(capsys, "release", "--file", upload, "--mechanism", "laplace",
                     "--epsilon", 0.1, "--seed", 5, "--out", out_file)
    assert code == 0
    table = read_private_csv(out_file, keep_default_na=False)
    text = pd.concat([table["origin"], table["destination"]])
    assert text.str.startswith("'").all()
    assert set(text.str[1:]) == {'=HYPERLINK("http://x")', "+cmd", "@SUM(A1)", "-2"}
    assert (table["released_count"] < 0).any()  # negative numbers stay numbers
    assert pd.api.types.is_float_dtype(table["released_count"])


@pytest.mark.parametrize("argv, message", [
    (["--mechanism", "nope", "--epsilon", "1"], "unknown mechanism 'nope'; valid keys: laplace"),
    (["--mechanism", "laplace", "--epsilon", "0"], "--epsilon must be in [1e-06, 20]"),
    (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "2"], "--delta must be in"),
    (["--mechanism", "laplace", "--epsilon", "1", "--param", "k=3"], "no chosen mechanism"),
    (["--mechanism", "laplace", "--epsilon", "1", "--param", "epsilon=3"], "--epsilon"),
    (["--mechanism", "topk", "--epsilon", "1", "--param", "k=many"], "must be a whole number"),
    (["--mechanism", "topk", "--epsilon", "1", "--param", "k"], "name=value"),
    (["--mechanism", "laplace", "--epsilon", "1", "--postprocess", "magic"], "post-processing"),
    (["--mechanism", "laplace", "--epsilon", "1", "--delta", "1e-6"], "has no δ"),
    (["--mechanism", "laplace", "--epsilon", "1", "--level", "ed"], "use them with --file"),
])
def test_release_rejects_bad_options_with_a_clear_message(capsys, tmp_path, argv, message):
    code, _, err = run(capsys, "release", "--dataset", "toy_town", *argv,
                       "--out", tmp_path / "x.csv")
    assert code == cli.EXIT_USAGE
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists()


def test_argparse_errors_return_the_usage_exit_code(capsys, tmp_path):
    code, _, err = run(capsys, "release", "--dataset", "nowhere", "--mechanism", "oue",
                       "--epsilon", 1, "--out", tmp_path / "x.csv")
    assert code == 2 and "invalid choice" in err


# -------------------------------------------------------------------------------------------- sweep
def test_sweep_writes_the_tidy_table(capsys, tmp_path):
    out_file = tmp_path / "sweep.csv"
    code, out, _ = run(capsys, "sweep", "--dataset", "toy_town", "--mechanisms", "laplace,gaussian",
                       "--epsilons", "0.5,1,5", "--delta", 1e-8, "--postprocess", "base,norm_sub",
                       "--trials", 2, "--seed", 9, "--out", out_file)
    assert code == 0 and "12 releases" in out
    table = read_private_csv(out_file)
    table["params"] = table["params"].fillna("")
    assert {"mechanism", "epsilon", "postprocess", "trial", "metric", "value",
            "seconds"} <= set(table.columns)
    assert {"rmse", "mae", "max_error", "topk_recall", "kendall_tau"} <= set(table["metric"])
    assert len(table) == 2 * 3 * 2 * 2 * len(metrics.METRICS)
    assert set(table.loc[table["mechanism"] == "gaussian", "params"]) == {
        "delta=1e-08, neighbours=substitution"}
    assert set(table.loc[table["mechanism"] == "laplace", "params"]) == {"neighbours=substitution"}
    again = tmp_path / "again.csv"
    assert run(capsys, "sweep", "--dataset", "toy_town", "--mechanisms", "laplace,gaussian",
               "--epsilons", "0.5,1,5", "--delta", 1e-8, "--postprocess", "base,norm_sub",
               "--trials", 2, "--seed", 9, "--out", again)[0] == 0
    pd.testing.assert_series_equal(table["value"], read_private_csv(again)["value"])


@pytest.mark.parametrize("argv, message", [
    (["--mechanisms", "laplace,nope", "--epsilons", "1"], "unknown mechanism 'nope'"),
    (["--mechanisms", "laplace", "--epsilons", "1,a"],
     "--epsilons must be numbers separated by commas"),
    (["--mechanisms", "laplace", "--epsilons", "1", "--trials", "0"], "trials"),
    (["--mechanisms", "topk", "--epsilons", "1", "--postprocess", "significance_cut"],
     "significance cut"),
    (["--mechanisms", "laplace,oue", "--epsilons", "1", "--delta", "1e-6"], "uses δ"),
])
def test_sweep_rejects_bad_options_with_a_clear_message(capsys, tmp_path, argv, message):
    code, _, err = run(capsys, "sweep", "--dataset", "toy_town", *argv, "--out", tmp_path / "x")
    assert code == cli.EXIT_USAGE and message in err


# ------------------------------------------------------------------------------------------- export
def test_safe_csv_writes_control_and_bidirectional_characters_as_escapes():
    """Issue 40: a label's U+202E (e.g. in ``ledger --out``) reorders the cell in a spreadsheet,
    an ESC recolours the terminal of whoever prints the file; line breaks stay (quoted)."""
    frame = pd.DataFrame({"label": ["Kildare \u202e6102", "a\x1b[31mb", "two\nlines", "=\u2066x"],
                          "epsilon": [1.0, 2.0, 3.0, 4.0]})
    text = export.safe_csv(frame).decode("utf-8")
    assert not re.search("[\x1b\u202e\u2066]", text)
    back = pd.read_csv(io.StringIO(text))
    assert list(back["label"]) == ["Kildare \\u202e6102", "a\\x1b[31mb", "two\nlines",
                                   "'=\\u2066x"]


def test_safe_csv_neutralises_text_cells_only():
    frame = pd.DataFrame({
        "zone": ["=1+1", "+A", "-B", "@C", "\tD", "\rE", "fine", "a=b", None],
        "count": [-1, 2, 3, 4, 5, 6, 7, 8, 9],
        "estimate": [-0.5, 1e6, 2.25, 0, 1, 2, 3, 4, 5.5],
    })
    back = pd.read_csv(io.BytesIO(export.safe_csv(frame)), keep_default_na=False)
    assert list(back["zone"]) == ["'=1+1", "'+A", "'-B", "'@C", "'\tD", "'\rE", "fine", "a=b", ""]
    assert list(back["count"]) == list(frame["count"])
    assert list(back["estimate"]) == list(frame["estimate"])
    assert list(frame["zone"])[0] == "=1+1"  # the caller's frame is not modified


def test_safe_csv_handles_categorical_columns_and_headers():
    frame = pd.DataFrame({"=origin": pd.Categorical(["=x", "y", "=x"]), "n": [1, 2, 3]})
    text = export.safe_csv(frame).decode("utf-8")
    assert text.split("\r\n") == ["'=origin,n", "'=x,1", "y,2", "'=x,3", ""]
    clash = pd.DataFrame({"zone": pd.Categorical(["=x", "'=x"])})
    assert export.safe_csv(clash).decode("utf-8").split() == ["zone", "'=x", "'=x"]


def test_release_of_an_uploaded_matrix_keeps_every_cell(capsys, tmp_path):
    """An imported file goes through the same path as a bundled dataset."""
    zones = ZoneSet.from_ids(["a", "b"])
    od = ODMatrix.from_dense("m", zones, zones, np.array([5, 0, 2, 7]))
    upload = tmp_path / "m.csv"
    upload.write_text("origin,destination,count\na,a,5\nb,a,2\nb,b,7\n", encoding="utf-8")
    code, _, _ = run(capsys, "release", "--file", upload, "--mechanism", "discrete_laplace",
                     "--epsilon", 1, "--seed", 0, "--out", tmp_path / "o.csv")
    assert code == 0
    table = read_private_csv(tmp_path / "o.csv", keep_default_na=False)
    np.testing.assert_array_equal(table["true_count"], od.to_dense())
    assert (table["released_count"] == np.round(table["released_count"])).all()


# ------------------------------------------------------------------------------------ huge files
@pytest.fixture(scope="module")
def huge_file(tmp_path_factory):
    """tests.huge's 8,000-tract matrix (6.4·10⁷ cells: beyond the dense limit) as a long CSV."""
    from tests.huge import huge_matrix

    od = huge_matrix()
    path = tmp_path_factory.mktemp("huge") / "state_tracts.csv"
    od.to_frame()[["origin", "destination", "count"]].to_csv(path, index=False)
    return path, od


def test_a_huge_file_is_read_as_the_data_page_reads_it_and_released_sparsely(capsys, huge_file,
                                                                            tmp_path):
    path, od = huge_file
    code, out, err = run(capsys, "datasets", "--file", path)
    assert code == 0 and "a dense release holds" in out and err == ""
    out_csv = tmp_path / "release.csv"
    code, out, err = run(capsys, "release", "--file", path, "--mechanism", "oue", "--epsilon", 1,
                         "--seed", 3, "--out", out_csv)
    assert code == 0, err
    assert "written: only the non-empty true cells and the released top 1,000" in out
    table = read_private_csv(out_csv, dtype={"origin": str, "destination": str})
    imported = importers.import_dense_or_sparse(path.read_bytes(), path.name).matrix
    expected = release.run(imported, release.ReleaseSpec("oue", 1.0, seed=3), score=False)
    assert expected.sparse
    cells, values = expected.released.known()
    assert len(table) == cells.size and np.allclose(table["released_count"], values)
    assert table["true_count"].sum() == od.n


def test_a_huge_file_sweeps_and_finds_heavy_hitters(capsys, huge_file, tmp_path):
    path, _ = huge_file
    code, out, err = run(capsys, "sweep", "--file", path, "--mechanisms", "laplace,grr",
                         "--epsilons", "1,2", "--out", tmp_path / "sweep.csv")
    assert code == 0, err
    table = read_private_csv(tmp_path / "sweep.csv")
    rmse = table[table["metric"] == "rmse"]
    assert len(rmse) == 4 and rmse["value"].gt(0).all()
    code, out, err = run(capsys, "heavy-hitters", "--file", path, "--protocol", "pem",
                         "--epsilon", 4, "--k", 5, "--seed", 1, "--out", tmp_path / "top.csv")
    assert code == 0, err
    assert "top 5 of 64000000 cells" in out


def test_a_file_beyond_the_sparse_limits_names_them(capsys, tmp_path, monkeypatch):
    from dpcore.data.importing import building

    monkeypatch.setattr(building, "ZONE_LIMIT", 100)
    path = tmp_path / "wide.csv"
    path.write_text("origin,destination,count\n" + "".join(f"o{i},d{i},1\n" for i in range(8_000)))
    code, _, err = run(capsys, "release", "--file", path, "--mechanism", "oue", "--epsilon", 1,
                       "--out", tmp_path / "r.csv")
    assert code == cli.EXIT_INVALID_INPUT
    assert "at most 100 zones on each side" in err and "fit in memory" not in err


@pytest.mark.parametrize("own_file", [True, False])
def test_the_thesis_report_on_a_user_s_table_is_marked_not_for_publication(capsys, tmp_path,
                                                                            own_file):
    """Run on the user's own table every file of the report shows true counts (or errors
    against them): each starts with the not-for-publication line. The bundled synthetic data is
    nobody's: its report is plain."""
    toy = datasets.load("toy_town")
    if own_file:
        counts = toy.to_dense().reshape(len(toy.origins.ids), len(toy.destinations.ids))
        rows = ["origin,destination,count"] + [
            f"{toy.origins.ids[i]},{toy.destinations.ids[j]},{c}"
            for (i, j), c in np.ndenumerate(counts) if c]
        source = tmp_path / "staff_commutes.csv"
        source.write_text("\n".join(rows))
    out = tmp_path / "report"
    code, said, _ = run(capsys, "reproduce-thesis", "--dataset",
                        source if own_file else "toy_town", "--trials", "1", "--epsilons",
                        "0.5,5", "--jobs", "1", "--seed", "1", "--out", out)
    assert code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    tables = sorted(out.glob("*.csv"))
    assert tables
    marked = [path.read_bytes().startswith(f"# {confidential.FIRST_LINE}".encode())
              for path in tables]
    assert page.startswith(f"<!-- {confidential.FIRST_LINE}") is own_file
    assert set(marked) == {own_file}
    assert ("NOT FOR PUBLICATION" in said) is own_file


def test_every_subcommands_help_prints(capsys):
    """``--help`` of the command and of each subcommand prints its text and exits 0 (a ``%`` in a
    help string is a format code to argparse: "95 % intervals" made ``dpcore --help`` crash)."""
    import argparse

    parser = cli._parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(commands.choices) >= 11
    for argv in ([], *([name] for name in commands.choices)):
        assert cli.main([*argv, "--help"]) == 0, argv
        assert "usage:" in capsys.readouterr().out, argv
