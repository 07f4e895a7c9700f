"""The memory guard of issue 20: an import is costed from its header and line count before it is
parsed and refused above the budget (the app's per-session budget, also the command line's), and
so is a publish whose dense vectors would not fit.

The issue's file — a dense 49,000 × 999 matrix, ≈ 98 MB, within the upload limit — took 7.9 GB
to import. Here it is imported in a fresh process whose peak resident memory must stay below the
budget: a bound that parsing the file cannot meet. Figures: ``bench/bench_import_memory.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcore.data.importers import ImportFailed, import_od
from dpcore.data.importing import reading
from dpcore.data.od import DENSE_CELL_LIMIT, MEMORY_BUDGET_BYTES, ODMatrix, ZoneSet
from dpcore.interfaces import cli, publish
from ui import budget

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_import_memory import matrix  # noqa: E402

#: A child process imports (or publishes) the file and reports its own peak resident memory.
CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from dpcore.interfaces import cli
code = cli.main(sys.argv[2:])
print(json.dumps({"code": code,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def child(*argv: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), *argv], capture_output=True,
                          text=True, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_the_budget_is_the_sessions():
    assert budget.SESSION_WORK_BYTES == MEMORY_BUDGET_BYTES


def test_a_file_over_the_budget_is_refused_before_parsing_with_the_figure():
    data = matrix(1_000, 100)
    need = reading.parse_memory(len(data), 1_001, 101)
    with pytest.raises(ImportFailed) as caught:
        import_od(data, "wide.csv", memory_budget=need - 1)
    (error,) = caught.value.errors
    assert error.code == "too_much_memory" and error.row == 1
    assert "1,001 lines × 101 columns" in error.message and "Nothing was read" in error.message
    assert f"{need / 2 ** 30:.1f} GB" in error.message
    assert import_od(data, "wide.csv", memory_budget=need).matrix.n > 0


def test_the_estimate_bounds_what_an_import_holds():
    """Narrow files at their per-cell figure, wide ones (a matrix) at theirs."""
    assert reading.parse_memory(100, 10, 3) == reading.PARSE_FIXED_BYTES + 200 + 30 * 40
    assert reading.parse_memory(0, 10, 999) == reading.PARSE_FIXED_BYTES + 9990 * 170


@pytest.mark.slow
def test_the_issues_dense_matrix_is_refused_below_the_budget(tmp_path):
    path = tmp_path / "dense.csv"
    path.write_bytes(matrix(49_000))
    assert 90 * 2 ** 20 < path.stat().st_size < 100 * 2 ** 20
    got, err = child("datasets", "--file", str(path))
    assert got["code"] == cli.EXIT_INVALID_INPUT
    assert "49,001 lines × 1,000 columns" in err
    assert "GB of memory" in err and "Keep only the zones you need" in err
    assert got["peak"] < MEMORY_BUDGET_BYTES, got  # parsing it takes ~7.9 GB
    got, err = child("publish", "--file", str(path), "--domain-from-data", "--mechanism",
                     "discrete_laplace", "--epsilon", "1", "--out", str(tmp_path / "out"))
    assert got["code"] == cli.EXIT_INVALID_INPUT and "GB of memory" in err
    assert got["peak"] < MEMORY_BUDGET_BYTES, got
    assert not (tmp_path / "out").exists()


def sparse_domain(origins: int, destinations: int) -> ODMatrix:
    rows = np.arange(origins)
    return ODMatrix.from_pairs("wide", ZoneSet.from_ids([f"O{i}" for i in range(origins)]),
                               ZoneSet.from_ids([f"D{j}" for j in range(destinations)]),
                               rows, rows % destinations, np.ones(origins))


def test_a_publish_over_the_budget_is_refused_up_front_with_the_figure():
    od = sparse_domain(49_000, 999)  # 48.95 M cells: under the dense limit, over the budget
    assert od.domain_size < DENSE_CELL_LIMIT
    problem = publish.too_large(od)
    assert f"{publish.publish_memory(od) / 2 ** 30:.1f} GB" in problem
    assert "one publish may use 1.25 GB" in problem
    with pytest.raises(ValueError, match="would hold about"):
        publish.publish(od, publish.DISCRETE_LAPLACE, 1.0,
                        source=publish.input_entry("wide", "wide", {"source": "data"}))
    ed_sized = sparse_domain(3_126, 3_130)  # the bundled ED level: one level fits, so do two
    assert publish.too_large(ed_sized) is None
    assert publish.too_large(ed_sized, levels=True) is None


def test_the_cli_refuses_a_publish_over_the_budget_before_any_noise(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("origin,destination,count\n"
                    + "".join(f"O{i},D{i % 999},1\n" for i in range(49_000)))
    code = cli.main(["publish", "--file", str(path), "--domain-from-data", "--mechanism",
                     "discrete_laplace", "--epsilon", "1", "--out", str(tmp_path / "out")])
    assert code == cli.EXIT_USAGE
    assert "48,951,000 possible commutes) would hold about 1.8 GB" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
