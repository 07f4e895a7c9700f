"""The command line refuses an ε below the supported range with the reason, exit code 2, no file."""

import pytest

from dpcore.interfaces import cli
from dpcore.mechanisms.base import EPSILON


@pytest.mark.parametrize("argv", [
    ["release", "--dataset", "toy_town", "--mechanism", "hr", "--epsilon", "1e-17"],
    ["sweep", "--dataset", "toy_town", "--mechanisms", "laplace,hr", "--epsilons", "1,1e-17"],
])
def test_a_tiny_epsilon_is_a_clear_error(capsys, tmp_path, argv):
    out = tmp_path / "x.csv"
    assert cli.main(argv + ["--out", str(out)]) == 2
    _, err = capsys.readouterr()
    assert f"must be in {EPSILON.interval()}. Got 1e-17 instead." in err
    assert EPSILON.why in err and "Traceback" not in err
    assert not out.exists()
