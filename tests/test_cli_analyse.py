"""``python -m dpcore analyse``: one row per answer, marked not for publication, and clear
messages for what cannot be answered."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpcore.data import datasets
from dpcore import confidential
from dpcore.analyses import shares
from dpcore.interfaces import cli

FIXTURES = Path(__file__).parent / "fixtures"


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def read(path: Path) -> pd.DataFrame:
    assert path.read_bytes().startswith(confidential.CSV_LINE)   # true values inside
    return pd.read_csv(path, comment="#", keep_default_na=False, na_values=[""])


def test_default_answers_flows_of_every_zone(capsys, tmp_path):
    out = tmp_path / "a.csv"
    code, said, _ = run(capsys, "analyse", "--dataset", "toy_town", "--mechanism", "laplace",
                        "--epsilon", "1", "--seed", "4", "--out", out)
    assert code == 0 and "NOT FOR PUBLICATION" in said
    frame = read(out)
    od = datasets.load("toy_town")
    zones = set(od.origins.ids) | set(od.destinations.ids)
    assert list(frame.columns) == ["analysis", "selection", "part", "rank", "true", "released",
                                   "low", "high", "cells", "method"]
    assert sorted(frame.analysis.unique()) == ["inflow", "live_and_work", "outflow"]
    assert set(frame.part) == zones and len(frame) == 3 * len(zones)
    placed = frame[frame.cells > 0]
    assert (placed.low < placed.released).all() and (placed.released < placed.high).all()
    assert frame.method.str.startswith("closed form").all()
    dense = od.to_dense().reshape(od.n_origins, od.n_destinations)
    harbour = frame[(frame.part == "Harbour") & (frame.analysis == "outflow")].iloc[0]
    o = od.origins.index_of(["Harbour"])[0]
    d = od.destinations.index_of(["Harbour"])[0]
    assert harbour.true == dense[o].sum() - dense[o, d]


def test_selected_analyses_and_the_true_table(capsys, tmp_path):
    out = tmp_path / "b.csv"
    code, _, _ = run(capsys, "analyse", "--dataset", "ireland_ed", "--analysis", "flows",
                     "--analysis", "paired", "--parent", "Dublin City", "--to", "Meath 001",
                     "--analysis", "destination", "--top", "3", "--side", "home", "--out", out)
    assert code == 0
    frame = read(out)
    assert (frame.true == frame.released).all() and (frame.low == frame.high).all()
    assert frame[frame.analysis == "destination_home"]["rank"].tolist() == [1, 2, 3]
    assert (frame.method == "the true table: exact, no interval").all()


def test_what_cannot_be_answered_is_said(capsys, tmp_path):
    out = tmp_path / "c.csv"
    code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--analysis", "flows",
                       "--out", out)
    assert code == 2 and "needs one selection" in err and not out.exists()
    code, _, err = run(capsys, "analyse", "--file", FIXTURES / "matrix.csv", "--analysis",
                       "distance", "--zone", "Dublin City", "--out", out)
    assert code == 2 and "needs the zones' positions" in err
    code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--mechanism", "topk",
                       "--analysis", "flows", "--zone", "Harbour", "--out", out)
    assert code == 0
    refused = read(out)
    assert refused.method.str.startswith("no interval").all() and refused.low.isna().all()
    assert refused.method.str.contains("measured coverage").all()
    out = tmp_path / "hr.csv"
    code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--mechanism", "hr",
                       "--postprocess", "norm", "--analysis", "flows", "--zone", "Harbour",
                       "--out", out)
    simulated = read(out)   # Norm: no closed form, simulated on a public stand-in
    assert code == 0 and simulated.method.str.startswith("simulated on a public stand-in").all()
    assert (simulated.low.notna() & (simulated.low <= simulated.high)).all()


def _publish(capsys, tmp_path, name, *options):
    folder = tmp_path / name
    code, _, err = run(capsys, "publish", "--dataset", "toy_town", "--method", "flat",
                       "--epsilon", "1", "--domain-dataset", "toy_town", *options,
                       "--out", folder)
    assert code == 0, err
    return folder


def test_a_published_folder_alone(capsys, tmp_path):
    """Answers from release.csv + manifest.json only: a public file without true values,
    whose answers are the sums of the published counts."""
    folder = _publish(capsys, tmp_path, "pub", "--mechanism", "discrete_laplace")
    out = tmp_path / "f.csv"
    code, said, _ = run(capsys, "analyse", "--release", folder, "--analysis", "flows",
                        "--zone", "Harbour", "--out", out)
    assert code == 0 and "public" in said
    assert not out.read_bytes().startswith(confidential.CSV_LINE)
    frame = pd.read_csv(out)
    assert frame["true"].isna().all()
    rows = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    rows["count"] = rows["count"].astype(float)
    home, work = rows.origin == "Harbour", rows.destination == "Harbour"
    value = dict(zip(frame.analysis, frame.released))
    assert value["outflow"] == rows["count"][home & ~work].sum()
    assert value["inflow"] == rows["count"][~home & work].sum()
    assert frame.method.str.startswith("bound: Base-Pos").all()   # publish's default post
    assert ((frame.low <= frame.released) & (frame.released <= frame.high)).all()
    gaussian = _publish(capsys, tmp_path, "gauss", "--mechanism", "gaussian",
                        "--postprocess", "base")
    code, _, _ = run(capsys, "analyse", "--release", gaussian, "--out", tmp_path / "g.csv")
    methods = pd.read_csv(tmp_path / "g.csv").method
    assert code == 0 and methods.str.startswith("closed form: independent").all()


def test_a_folder_that_cannot_be_analysed_is_said(capsys, tmp_path):
    folder = _publish(capsys, tmp_path, "pub", "--mechanism", "discrete_laplace")
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text().replace("Discrete Laplace (OpenDP",
                                                     "TopDown (OpenDP"))
    code, _, err = run(capsys, "analyse", "--release", folder, "--out", tmp_path / "x.csv")
    assert code == 2 and "'mechanism' is 'TopDown (OpenDP then_laplace" in err
    assert "Upload the manifest.json written beside this release.csv" in err
    code, _, err = run(capsys, "analyse", "--release", folder, "--mechanism", "oue",
                       "--out", tmp_path / "x.csv")
    assert code == 2 and "leave --mechanism out" in err


def test_radius_and_point_selections(capsys, tmp_path):
    """A radius of 0 km around a zone selects that zone alone (and its own position as a
    point does too): the same answers as --zone."""
    od = datasets.load("toy_town")
    i = int(od.origins.index_of(["Harbour"])[0])
    frames = []
    for name, selection in (("z", ["--zone", "Harbour"]), ("r", ["--radius", "0", "--around",
                                                                 "Harbour"]),
                            ("p", ["--radius", "0", "--point",
                                   f"{float(od.origins.lat[i])!r},{float(od.origins.lon[i])!r}"])):
        out = tmp_path / f"{name}.csv"
        code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--analysis", "flows",
                           *selection, "--out", out)
        assert code == 0, err
        frames.append(read(out))
    assert frames[0].true.tolist() == frames[1].true.tolist() == frames[2].true.tolist()
    code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--analysis", "flows",
                       "--radius", "5", "--point", "north", "--out", tmp_path / "x.csv")
    assert code == 2 and "--point must be LAT,LON" in err


def test_shares_within_a_distance_and_live_and_work(capsys, tmp_path):
    out = tmp_path / "s.csv"
    code, _, _ = run(capsys, "analyse", "--dataset", "ireland_county", "--mechanism", "laplace",
                     "--analysis", "share-within", "--analysis", "flows",
                     "--analysis", "share-live-and-work", "--km", "10", "--zone",
                     "Dublin City", "--out", out)
    assert code == 0
    frame = read(out).set_index("analysis")
    share = frame.loc["share_live_and_work_work"]
    assert share.true == pytest.approx(frame.loc["live_and_work"].true / frame.loc["jobs"].true)
    assert share.low <= share.released <= share.high and share.method.startswith("delta method")
    assert frame.loc["share_within_work"].part == "under 10 km"
    code, _, err = run(capsys, "analyse", "--dataset", "ireland_county", "--mechanism", "oue",
                     "--analysis", "share-within", "--analysis",
                       "share-live-and-work", "--side", "home", "--zone", "Dublin City",
                     "--out", tmp_path / "local.csv")
    local = read(tmp_path / "local.csv")
    assert code == 0, err
    assert list(local.analysis) == ["share_within_home",
                                                  "share_live_and_work_home"]
    assert local.low.isna().all() and local.method.str.contains("fell short of 95 %").all()
    code, _, err = run(capsys, "analyse", "--dataset", "ireland_county", "--analysis",
                       "share-within", "--km", "0", "--zone", "Dublin City", "--out", tmp_path / "bad.csv")
    assert code == 2 and "positive number of km" in err


def test_shares_from_a_published_folder(capsys, tmp_path):
    folder = _publish(capsys, tmp_path, "gauss", "--mechanism", "gaussian", "--postprocess",
                      "base")
    out = tmp_path / "s.csv"
    code, _, _ = run(capsys, "analyse", "--release", folder, "--analysis", "share-live-and-work",
                     "--zone", "Harbour", "--out", out)
    frame = pd.read_csv(out)
    assert code == 0 and frame["true"].isna().all() and len(frame) == 1
    # Harbour's ~25 jobs against a sum sd of ~17 (Gaussian ε = 1): never clearly above 0
    assert frame.method[0] == shares.NO_SHARE and frame.released.isna().all()
    code, _, err = run(capsys, "analyse", "--release", folder, "--analysis", "share-within",
                       "--zone", "Harbour", "--out", tmp_path / "w.csv")
    assert code == 2 and "needs the zones' positions" in err
