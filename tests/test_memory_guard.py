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
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data.importers import ImportFailed, import_od
from dpcore.data.importing import reading
from dpcore.data.od import DENSE_CELL_LIMIT, MEMORY_BUDGET_BYTES, ODMatrix, ZoneSet
from dpcore.data.views import View
from dpcore.interfaces import cli, publish
from tests import test_app_data
from ui.components import budget
from ui.upload import flow as upload

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_import_memory import matrix  # noqa: E402

#: A child process imports (or publishes) the file and reports its own peak resident memory.
#: VmHWM, not ru_maxrss: the latter keeps the parent's (pytest's) peak across fork and exec.
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from dpcore.interfaces import cli
code = cli.main(sys.argv[2:])
peak = next(int(line.split()[1]) for line in open("/proc/self/status")
            if line.startswith("VmHWM"))
print(json.dumps({"code": code, "peak": peak * 1024}))
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
    assert reading.parse_memory(100, 10, 3) == reading.PARSE_FIXED_BYTES + 200 + 30 * 48
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
                        source=publish.input_entry("wide", View(), {"source": "data"}))
    ed_sized = sparse_domain(3_126, 3_130)  # the bundled ED level: one level fits, two do not
    assert publish.too_large(ed_sized) is None
    assert "with its parent level) would hold about 2.0 GB" in publish.too_large(ed_sized, True)


def test_the_cli_refuses_a_publish_over_the_budget_before_any_noise(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("origin,destination,count\n"
                    + "".join(f"O{i},D{i % 999},1\n" for i in range(49_000)))
    code = cli.main(["publish", "--file", str(path), "--domain-from-data", "--mechanism",
                     "discrete_laplace", "--epsilon", "1", "--out", str(tmp_path / "out")])
    assert code == cli.EXIT_USAGE
    assert "48,951,000 possible commutes) would hold about 2.2 GB" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------ one import at a time
def test_a_session_imports_one_file_at_a_time_and_says_what_it_waits_for():
    """Streamlit's fast reruns start a new run while a parse is still going: the new run waits
    for the slot (saying why), other sessions do not."""
    slots = upload.ImportSlots()
    assert slots.take("s1", "first.csv") is None
    assert slots.take("s2", "other.csv") is None  # another session is not held up
    shown, taken = [], threading.Event()

    def second_run():
        slots.wait("s1", "second.csv", shown.append, sleep=lambda _: time.sleep(0.01))
        taken.set()
    thread = threading.Thread(target=second_run)
    thread.start()
    assert not taken.wait(0.3)  # still waiting while first.csv is parsed
    assert shown and "“first.csv” is still being imported" in shown[0]
    assert "“second.csv” will be imported as soon as it has finished" in shown[0]
    slots.release("s1")
    assert taken.wait(5)
    thread.join()
    assert slots.take("s1", "third.csv") == "second.csv"


def test_the_data_page_refuses_a_file_over_the_session_budget_with_the_figure(monkeypatch):
    """The page passes the session budget to the importer (lowered here, so that a small file
    stands for a large one)."""
    data = matrix(200, 100)
    need = reading.parse_memory(len(data), 201, 101)
    monkeypatch.setattr(budget, "SESSION_WORK_BYTES", need - 1)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/1_Data.py").run()
    upload_page = test_app_data.upload(at, "wide.csv", data)
    (error,) = test_app_data.boxes(upload_page, "error")
    assert f"about {need / 2 ** 30:.1f} GB of memory" in error
    assert "201 lines × 101 columns" in error and "Nothing was read" in error
    assert not upload_page.metric
    monkeypatch.setattr(budget, "SESSION_WORK_BYTES", need)
    upload_page = test_app_data.upload(at, "wide2.csv", data)
    assert not test_app_data.boxes(upload_page, "error") and upload_page.metric
