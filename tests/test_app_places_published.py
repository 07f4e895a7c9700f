"""AppTest of the Places page on a published release (release.csv + manifest.json uploaded): the
folder's own answers with the intervals dpcore gives them, no true series, a public download
(formula-safe, no true column), and specific messages for bad files (never a traceback)."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.analyses import answers, selection as sel, shares
from dpcore.interfaces import cli, published_analyses as published
from tests.downloads import Downloads
from tests.plotly_spec import figures
from tests.test_app_places import answers_table, bar_chart, places
from ui.components import charts, safe
from ui.places import published as mode, view
from dpcore.data.datasets import DATA_DIR

HOSTILE = "<img src=x onerror=alert(1)>"


def publish(tmp_path, name, *options) -> tuple[bytes, bytes]:
    """A folder written by the real publish command: (release.csv, manifest.json) bytes."""
    folder = tmp_path / name
    assert cli.main(["publish", "--epsilon", "1", *options, "--out", str(folder)]) == 0
    return (folder / "release.csv").read_bytes(), (folder / "manifest.json").read_bytes()


def toy(tmp_path) -> tuple[bytes, bytes]:
    return publish(tmp_path, "toy", "--dataset", "toy_town", "--domain-dataset", "toy_town",
                   "--mechanism", "discrete_laplace", "--postprocess", "base")


def uploaded(files, query=None):
    """The page in published mode with ``files`` = (release.csv, manifest.json) uploaded."""
    at = places({"source": "published", **(query or {})})
    release, manifest = files
    if release is not None:
        at.file_uploader(key="places_release_csv").set_value(
            ("release.csv", release, "text/csv"))
    if manifest is not None:
        at.file_uploader(key="places_manifest_json").set_value(
            ("manifest.json", manifest, "application/json"))
    at.run()
    assert not at.exception, at.exception
    return at


def expected(files, queries_of, level=None) -> pd.DataFrame:
    release, manifest = files
    folder = published.read(published.parse_manifest(manifest),
                            published.parse_release(release), level)
    return answers.evaluate(queries_of(folder.od), None, folder.values, folder.interval)


def test_a_flat_folder_answers_inflow_with_its_interval_and_a_public_download(monkeypatch,
                                                                              tmp_path):
    downloads = Downloads(monkeypatch)
    files = toy(tmp_path)
    at = uploaded(files, {"places_fine_level_sel_zones": ["Harbour"]})
    table = answers_table(at)
    assert "true" not in table.columns
    want = expected(files, lambda od: answers.flows(od, sel.zones(od, ["Harbour"])))
    for column in ("released", "low", "high"):
        assert np.allclose(table[column], want[column]), column
    assert table["method"].str.startswith("closed form: independent").all()
    inflow = table.set_index("analysis").loc["inflow"]
    assert inflow.low < inflow.released < inflow.high
    said = "\n".join(m.value for m in at.markdown)
    assert f"**{inflow.released:,.0f}** (95 % interval {inflow.low:,.0f} to " \
           f"{inflow.high:,.0f})" in said and "Inflow" in said
    names = [trace["name"] for trace in bar_chart(at)["data"]]
    assert len(names) == 1 and "True" not in names[0] and "Published release" in names[0]
    (button,) = [b for b in at.get("download_button") if b.proto.id.endswith(
        "-places_published_all_csv")]
    assert charts.PRIVATE_SUFFIX not in button.proto.label
    content = downloads.data(button)
    assert not content.startswith(b"#")
    frame = pd.read_csv(io.BytesIO(content))
    assert list(frame.columns) == mode.SHOWN and np.allclose(frame["high"], want["high"])


@pytest.mark.parametrize("method,options,how", [
    ("wls", ("--mechanism", "discrete_laplace", "--postprocess", "base"), "bound: WLS"),
    ("topdown", (), "bound: TopDown")])
def test_wls_and_topdown_folders_at_either_level(tmp_path, method, options, how):
    files = publish(tmp_path, method, "--dataset", "ireland_ed", "--area", "Leitrim",
                    "--domain-dataset", "ireland_ed", "--method", method, *options)
    at = uploaded(files, {"places_fine_level_sel_zones": ["Leitrim 001"]})
    table = answers_table(at)
    want = expected(files, lambda od: answers.flows(od, sel.zones(od, ["Leitrim 001"])))
    assert np.allclose(table["released"], want["released"])
    assert np.allclose(table["high"], want["high"]) and table["method"].str.startswith(how).all()
    at.radio(key="places_release_level").set_value("parent level").run()
    assert not at.exception, at.exception
    at.multiselect(key="kept_widget_places_parent_level_sel_zones").set_value(["Leitrim"]).run()
    table = answers_table(at)
    want = expected(files, lambda od: answers.flows(od, sel.zones(od, ["Leitrim"])),
                    "parent level")
    assert np.allclose(table["released"], want["released"])
    assert (table["selection"] == "Leitrim").all() and table["low"].notna().all()


def shares_table(at) -> pd.DataFrame:
    (frame,) = [d.value for d in at.dataframe if "share" in d.value.columns]
    return frame


def expected_shares(files, zone, level=None) -> pd.DataFrame:
    release, manifest = files
    folder = published.read(published.parse_manifest(manifest),
                            published.parse_release(release), level)
    chosen = sel.zones(folder.od, [zone])
    return shares.evaluate([shares.live_and_work(folder.od, chosen, side)
                            for side in ("work", "home")], None, folder.values, folder.interval)


def test_a_flat_folders_shares_have_delta_method_intervals_and_a_public_download(
        monkeypatch, tmp_path):
    downloads = Downloads(monkeypatch)
    files = publish(tmp_path, "county", "--dataset", "ireland_county", "--domain-dataset",
                    "ireland_county", "--postprocess", "base")
    at = uploaded(files, {"places_fine_level_sel_zones": ["Leitrim"]})
    table, want = shares_table(at), expected_shares(files, "Leitrim")
    assert list(table.columns) == mode.SHARE_SHOWN
    assert np.allclose(table["released (%)"], 100 * want["released"])
    assert np.allclose(table["low (%)"], 100 * want["low"])
    assert table["method"].str.startswith("delta method").all()
    assert (table["low (%)"] < table["released (%)"]).all()
    (button,) = [b for b in at.get("download_button") if b.proto.id.endswith(
        "-places_published_shares_csv")]
    content = downloads.data(button)
    assert not content.startswith(b"#") and charts.PRIVATE_SUFFIX not in button.proto.label
    assert list(pd.read_csv(io.BytesIO(content)).columns) == mode.SHARE_SHOWN


def test_a_topdown_folders_shares_are_ranges_at_the_parent_level(tmp_path):
    files = publish(tmp_path, "topdown", "--dataset", "ireland_ed", "--area", "Leitrim",
                    "--area", "Sligo", "--domain-dataset", "ireland_ed", "--method", "topdown")
    at = uploaded(files, {"places_fine_level_sel_zones": ["Leitrim 001"]})
    at.radio(key="places_release_level").set_value("parent level").run()
    at.multiselect(key="kept_widget_places_parent_level_sel_zones").set_value(["Sligo"]).run()
    assert not at.exception, at.exception
    table, want = shares_table(at), expected_shares(files, "Sligo", "parent level")
    assert np.allclose(table["high (%)"], 100 * want["high"])
    assert table["method"].str.startswith("range:").all()
    assert ((table["low (%)"] <= table["released (%)"])
            & (table["released (%)"] <= table["high (%)"])).all()
    assert (table["high (%)"] - table["low (%)"] < 20).all()


def test_a_zones_file_beside_the_folder_gives_distance_and_the_share_within(tmp_path):
    """A WLS folder of ED data with the bundled ED zones file uploaded: the distance analysis
    and its share within 10 km (a range over the joint bounds), on a parent-area selection."""
    files = publish(tmp_path, "wls", "--dataset", "ireland_ed", "--area", "Leitrim", "--area",
                    "Sligo", "--domain-dataset", "ireland_ed", "--method", "wls",
                    "--mechanism", "discrete_laplace", "--postprocess", "base")
    at = uploaded(files, {"analysis": "distance", "places_fine_level_sel_how": "parent",
                          "places_fine_level_sel_parent": "Sligo"})
    assert "no parent areas" in _warned(at)   # no zones file yet: no parents, no positions
    zones = (DATA_DIR / "ireland_ed.zones.csv").read_bytes()
    at.file_uploader(key="places_zones_csv").set_value(("ireland_ed.zones.csv", zones,
                                                        "text/csv")).run()
    assert not at.exception and not at.warning, (at.exception, _warned(at))
    release, manifest = files
    folder = published.placed(published.read(published.parse_manifest(manifest),
                                             published.parse_release(release)), zones)
    chosen = sel.parent(folder.od, "Sligo")
    want = shares.evaluate([shares.within(folder.od, chosen, "work", view.SHARE_KM)], None,
                           folder.values, folder.interval)
    table = shares_table(at)
    assert np.allclose(table["released (%)"], 100 * want["released"])
    assert np.allclose(table["low (%)"], 100 * want["low"])
    assert table["method"].str.startswith("range:").all() and table["low (%)"].notna().all()
    bands = answers_table(at)
    assert np.allclose(bands["released"], answers.evaluate(
        answers.distance(folder.od, chosen, "work"), None, folder.values,
        folder.interval)["released"])


def _warned(at) -> str:
    return "\n".join(w.value.replace("\\", "") for w in at.warning)


def test_bad_files_get_messages_naming_the_file_and_what_to_fix(tmp_path):
    release, manifest = toy(tmp_path)
    at = uploaded((release, None))
    assert any("Upload manifest.json" in i.value for i in at.info) and not at.warning
    at = uploaded((release, b'{"mechanism": '))
    assert "manifest.json is not valid JSON (line 1, column 15" in _warned(at)
    rows = release.decode().splitlines()
    assert rows[0].split(",")[2] == "count"
    fields = rows[2].split(",")
    at = uploaded(("\n".join(rows[:2] + [",".join(fields[:2] + ["abc"] + fields[3:])]).encode(),
                   manifest))
    assert "release.csv row 3: count 'abc' is not a whole number" in _warned(at)
    at = uploaded((b"origin,destination,total\nA,B,1\n", manifest))
    assert "release.csv lacks the column(s) count" in _warned(at)
    other = json.loads(manifest)
    other["levels"][0].pop("scale")
    at = uploaded((release, json.dumps(other).encode()))
    assert "manifest.json's levels[0] needs 'scale' as a positive number" in _warned(at)
    at = uploaded((release, manifest), {"analysis": "distance"})
    assert "positions" in _warned(at) and not at.get("plotly_chart")


def test_hostile_zone_names_are_escaped_and_the_download_is_formula_safe(monkeypatch,
                                                                         tmp_path):
    downloads = Downloads(monkeypatch)
    release, manifest = toy(tmp_path)
    text = release.decode().replace("Harbour", HOSTILE).replace("Station", "=HYPERLINK(1)")
    at = uploaded((text.encode(), manifest), {"analysis": "destination"})
    spec = str(figures(at))
    assert "<img" not in spec and "&lt;img src=x onerror=alert(1)&gt;" in spec
    said = "\n".join(m.value for m in at.markdown)
    assert "\\<img src\\=x" in said and "<img" not in said.replace("\\<img", "")
    frame = pd.read_csv(io.BytesIO(downloads.by_key(at, "places_published_all_csv")))
    assert "'=HYPERLINK(1)" in set(frame["part"]) and "=HYPERLINK(1)" not in set(frame["part"])


def test_a_topdown_folders_parent_area_at_the_fine_level_is_as_tight_as_at_the_parent_level(
        tmp_path):
    """A TopDown folder (its manifest maps zones to parents) with the ED zones file: Sligo's
    inflow, outflow and live-and-work at the fine level get the per-parent bound, which for a
    whole parent cell is the parent level's interval; the caption says how."""
    files = publish(tmp_path, "topdown", "--dataset", "ireland_ed", "--area", "Leitrim",
                    "--area", "Sligo", "--domain-dataset", "ireland_ed", "--method", "topdown")
    at = uploaded(files, {"places_fine_level_sel_how": "parent",
                          "places_fine_level_sel_parent": "Sligo"})
    zones = (DATA_DIR / "ireland_ed.zones.csv").read_bytes()
    at.file_uploader(key="places_zones_csv").set_value(("ireland_ed.zones.csv", zones,
                                                        "text/csv")).run()
    assert not at.exception, at.exception
    table = answers_table(at).set_index("analysis")
    whole = expected(files, lambda od: answers.flows(od, sel.zones(od, ["Sligo"])),
                     "parent level").set_index("analysis")
    for name in ("inflow", "outflow", "live_and_work"):
        assert table.released[name] == whole.released[name]
        assert (table.low[name], table.high[name]) == (whole.low[name], whole.high[name])
        assert table.cells[name] > 1000 * whole.cells[name]
    assert table["method"].str.contains("the manifest's zone-to-parent map").all()
    said = "Whiskers and intervals: " + safe.markdown(table["method"].iloc[0]) + "."
    assert said in [c.value for c in at.caption]
