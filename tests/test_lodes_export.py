"""Releases written as LODES OD records (``dpcore.interfaces.lodes_export``) read back through the
product's own LODES importer to the same counts, and ``release --lodes-out`` on the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpcore import export, release
from dpcore.data import importers
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.interfaces import cli, lodes_export

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "lodes.csv"


def reimported(frame, level: str) -> ODMatrix:
    data = export.safe_csv(frame)
    return importers.import_od(data, "synthetic_od.csv", format="lodes", level=level).matrix


def same_counts(od: ODMatrix, released: np.ndarray, back: ODMatrix) -> None:
    """Every (origin, destination) of the re-import holds the released count; the rest are 0."""
    want = {(o, d): v for o, d, v in zip(np.repeat(od.origins.ids, od.n_destinations),
                                          np.tile(od.destinations.ids, od.n_origins), released)
            if v}
    got = back.to_frame()
    pad = lodes_export.PADDING[len(od.origins.ids[0])]
    have = {(o.removesuffix(pad) if pad else o, d.removesuffix(pad) if pad else d): c
            for o, d, c in zip(got["origin"], got["destination"], got["count"]) if c}
    assert have == want


@pytest.mark.parametrize("level", ["block", "tract", "county"])
def test_a_synthetic_release_reimports_to_the_same_counts(level, rng):
    od = importers.import_od(FIXTURE.read_bytes(), "lodes.csv", format="lodes",
                             level=level).matrix
    spec = release.ReleaseSpec("onthemap", 2.0, {}, ("base",), 7)
    released = release.run(od, spec, score=False).released
    frame = lodes_export.lodes_table(od, released, createdate="20261129")
    assert list(frame.columns) == list(lodes_export.COLUMNS)
    assert (frame[list(lodes_export.BREAKDOWNS)] == "").all().all()
    assert (frame["createdate"] == "20261129").all() and (frame["S000"] > 0).all()
    assert frame["w_geocode"].str.len().eq(15).all()
    same_counts(od, released, reimported(frame, level))


def test_another_mechanisms_rounded_release_is_written_too():
    od = importers.import_od(FIXTURE.read_bytes(), "lodes.csv", format="lodes",
                             level="tract").matrix
    spec = release.ReleaseSpec("laplace", 1.0, {}, ("round",), 3)
    released = release.run(od, spec, score=False).released
    same_counts(od, released, reimported(lodes_export.lodes_table(od, released), "tract"))


def test_values_that_are_not_whole_commuters_are_refused():
    od = ODMatrix.from_dense("t", ZoneSet.from_ids(["a", "b"]), ZoneSet.from_ids(["x"]),
                             np.array([[1], [2]]))
    for bad, shown in ((np.array([1.0, -2.0]), "-2"), (np.array([1.5, 2.0]), "1.5")):
        with pytest.raises(ValueError, match=f"cell \\d is {shown};.*'round'"):
            lodes_export.lodes_table(od, bad)


def test_zone_ids_that_look_like_formulas_are_neutralised():
    od = ODMatrix.from_dense("t", ZoneSet.from_ids(["=HYPERLINK(1)", "b"]),
                             ZoneSet.from_ids(["@SUM(2)"]), np.array([[1], [2]]))
    text = export.safe_csv(lodes_export.lodes_table(od, np.array([1.0, 2.0]))).decode()
    assert "'@SUM(2),'=HYPERLINK(1),1" in text and "\n=" not in text and ",=" not in text


def test_release_lodes_out_writes_records_and_refuses_to_overwrite(tmp_path, capsys):
    out, records = tmp_path / "release.csv", tmp_path / "od.csv"
    argv = ["release", "--file", FIXTURE, "--format", "lodes", "--level", "tract",
            "--mechanism", "onthemap", "--epsilon", "2", "--seed", "5", "--out", out,
            "--lodes-out", records]
    assert cli.main([str(a) for a in argv]) == 0
    back = importers.import_od(records.read_bytes(), "od.csv", format="lodes",
                               level="tract").matrix
    original = importers.import_od(FIXTURE.read_bytes(), "lodes.csv", format="lodes",
                                   level="tract").matrix
    totals = {zone: total for zone, total in zip(back.destinations.ids,
                                                 back.destination_totals())}
    assert totals == dict(zip(original.destinations.ids, original.destination_totals()))  # m = n(d)
    assert "LODES records" in capsys.readouterr().out
    out.unlink()
    assert cli.main([str(a) for a in argv]) != 0      # --lodes-out exists, --out does not
    assert not out.exists() and f"--lodes-out {records} already exists" in capsys.readouterr().err
