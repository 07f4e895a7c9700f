"""Releases written as LODES OD records (``dpcore.interfaces.lodes_export``) read back through the
product's own LODES importer to the same counts, and ``release --lodes-out`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
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


def published_folder(tmp_path, *extra) -> Path:
    """The tract-level fixture published (OpenDP noise, negatives to 0) into a new folder."""
    folder = tmp_path / "published"
    argv = ["publish", "--file", FIXTURE, "--format", "lodes", "--level", "tract",
            "--domain-from-data", "--mechanism", "discrete_laplace", "--epsilon", "1",
            "--postprocess", "base_pos", *extra, "--out", folder]
    assert cli.main([str(a) for a in argv]) == 0
    return folder


def published_counts(folder: Path, level: str | None = None) -> dict:
    table = pd.read_csv(folder / "release.csv", dtype={"origin": str, "destination": str})
    if level is not None:
        table = table[table["level"] == level]
    return {(o, d): int(c) for o, d, c in zip(table["origin"], table["destination"],
                                               table["count"]) if c}


def reimported_counts(records: Path) -> dict:
    back = importers.import_od(records.read_bytes(), "od.csv", format="lodes",
                               level="tract").matrix.to_frame()
    pad = lodes_export.PADDING[11]
    return {(o.removesuffix(pad), d.removesuffix(pad)): int(c)
            for o, d, c in zip(back["origin"], back["destination"], back["count"]) if c}


def test_a_published_folder_is_written_as_records_beside_its_manifest(tmp_path, capsys):
    folder = published_folder(tmp_path)
    out = tmp_path / "lodes"
    assert cli.main(["lodes-records", str(folder), "--out", str(out)]) == 0
    assert (out / "manifest.json").read_bytes() == (folder / "manifest.json").read_bytes()
    assert reimported_counts(out / "od.csv") == published_counts(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    dates = pd.read_csv(out / "od.csv", dtype=str)["createdate"]
    assert (dates == manifest["date"][:10].replace("-", "")).all()
    assert "LODES records →" in capsys.readouterr().out
    assert cli.main(["lodes-records", str(folder), "--out", str(out)]) != 0   # no overwrite
    assert "already holds files" in capsys.readouterr().err


def test_consistent_levels_are_written_at_the_fine_level(tmp_path, capsys):
    folder = published_folder(tmp_path, "--levels")
    out = tmp_path / "lodes"
    assert cli.main(["lodes-records", str(folder), "--out", str(out)]) == 0
    assert "the fine level" in capsys.readouterr().out
    assert reimported_counts(out / "od.csv") == published_counts(folder, "fine level")


@pytest.mark.parametrize("bad, shown", [(-2, "-2"), (1.5, "1.5")])
def test_counts_that_are_not_whole_commuters_are_refused_with_a_message(tmp_path, capsys, bad,
                                                                       shown):
    folder = published_folder(tmp_path)
    table = pd.read_csv(folder / "release.csv", dtype={"origin": str, "destination": str})
    table["count"] = table["count"].astype(float)
    table.loc[1, "count"] = bad
    table.to_csv(folder / "release.csv", index=False)
    out = tmp_path / "lodes"
    assert cli.main(["lodes-records", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (f"{table['origin'][1]} → {table['destination'][1]} is {shown}" in err
            and "base_pos or round" in err and "Traceback" not in err)
    assert not (out / "od.csv").exists()


def test_a_folder_that_is_not_a_publication_is_refused_with_a_message(tmp_path, capsys):
    assert cli.main(["lodes-records", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "is not a published folder: manifest.json is missing" in capsys.readouterr().err
