"""Analyses of WLS and TopDown published folders (``analyse --release DIR``): the answers are the
folder's own sums at the level asked, the intervals come from the manifest alone, and they cover.

The folders are written by the real ``publish`` command; the coverage tests draw the publish's
noise law seeded (OpenDP's own draws cannot be seeded) through the publish's own fit."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore.analyses import answers, selection as sel, shares
from dpcore.data.datasets import DATA_DIR
from dpcore.evaluation import margins
from dpcore.interfaces import publish, published_analyses as published, published_domain
from dpcore.mechanisms import topdown
from tests.test_analyses import RELEASES, _check_coverage, _opendp_like, _queries
from tests.test_cli_analyse import run

AREAS = ("--area", "Leitrim", "--area", "Sligo")
#: Zones of a level whose shares the coverage tests check (each level's first).
SHARED_ZONES = 30


@pytest.fixture(scope="module")
def two_counties(ed):
    return ed.subset_by_parent(["Leitrim", "Sligo"])


def _publish(capsys, tmp_path, name, *options):
    folder = tmp_path / name
    code, _, err = run(capsys, "publish", "--dataset", "ireland_ed", *AREAS, "--epsilon", "1",
                       "--domain-dataset", "ireland_ed", *options, "--out", folder)
    assert code == 0, err
    return folder


def _analyse(capsys, tmp_path, folder, name, *options) -> tuple[pd.DataFrame, str]:
    out = tmp_path / f"{name}.csv"
    code, said, err = run(capsys, "analyse", "--release", folder, *options, "--out", out)
    assert code == 0, err
    assert not out.read_bytes().startswith(b"#")   # public: no not-for-publication line
    return pd.read_csv(out), said


def _rows(folder, level: str) -> pd.DataFrame:
    rows = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    rows = rows[rows.level == level]
    return rows.assign(count=rows["count"].astype(float))


def _flows_of(rows: pd.DataFrame, zone: str) -> dict:
    home, work = rows.origin == zone, rows.destination == zone
    return {"inflow": rows["count"][~home & work].sum(),
            "outflow": rows["count"][home & ~work].sum(),
            "live_and_work": rows["count"][home & work].sum()}


@pytest.mark.parametrize("method", ["wls", "topdown"])
def test_a_hierarchical_folder_answers_at_both_levels(capsys, tmp_path, method):
    """The fine level's and the parent level's answers are the sums of release.csv's rows of
    that level; every answer has an interval around it, from the manifest alone; the parent
    level's flows are its fine zones' (the folder's levels are consistent)."""
    options = ("--mechanism", "discrete_laplace", "--postprocess", "base") \
        if method == "wls" else ()
    folder = _publish(capsys, tmp_path, method, "--method", method, *options)
    manifest = json.loads((folder / "manifest.json").read_text())
    fine, said = _analyse(capsys, tmp_path, folder, "fine", "--analysis", "flows",
                          "--zone", "Leitrim 001")
    assert "fine level" in said and fine["true"].isna().all()
    expected = _flows_of(_rows(folder, "fine level"), "Leitrim 001")
    for name, value in expected.items():
        assert fine.set_index("analysis").released[name] == value
    parent, _ = _analyse(capsys, tmp_path, folder, "parent", "--release-level", "parent level")
    rows = _rows(folder, "parent level")
    assert set(parent.part) == {"Leitrim", "Sligo"} and len(parent) == 6
    for zone in ("Leitrim", "Sligo"):
        got = parent[parent.part == zone].set_index("analysis").released
        assert got.to_dict() == pytest.approx(_flows_of(rows, zone))
    fine_rows = _rows(folder, "fine level")
    in_leitrim = fine_rows.origin.str.startswith("Leitrim") & \
        fine_rows.destination.str.startswith("Leitrim")
    assert fine_rows["count"][in_leitrim].sum() == _flows_of(rows, "Leitrim")["live_and_work"]
    for frame in (fine, parent):
        # a count is ≥ 0: the low end is cut at 0, above a negative released sum (OpenDP's
        # noise is not seeded, so some runs release one)
        assert (frame.low <= frame.released.clip(lower=0)).all()
        assert (frame.released <= frame.high).all() and (frame.low >= 0).all()
    if method == "topdown":
        assert fine.method.str.startswith("bound: TopDown").all()
        margin = manifest["levels"][-1][margins.COLUMN]
        live = fine.set_index("analysis").loc["live_and_work"]
        assert live.high - live.released == margin * live.cells
    else:
        assert fine.method.str.startswith("bound: WLS").all()
        assert parent.method.str.contains("½ per cell").all()


def test_wls_with_base_pos_answers_without_interval(capsys, tmp_path):
    folder = _publish(capsys, tmp_path, "wls_pos", "--method", "wls", "--postprocess",
                      "base_pos")
    frame, _ = _analyse(capsys, tmp_path, folder, "pos")
    assert frame.low.isna().all() and frame.high.isna().all()
    assert frame.method.str.startswith("no interval: WLS with base_pos").all()
    assert frame.released.notna().all()


def test_a_base_pos_folders_share_comes_without_interval_and_says_why(capsys, tmp_path):
    folder = _publish(capsys, tmp_path, "flat_pos", "--postprocess", "base_pos")
    frame, _ = _analyse(capsys, tmp_path, folder, "pos_shares", "--analysis",
                        "share-live-and-work", "--zone", "Sligo 001")
    assert frame.released.between(0, 1).all() and frame.low.isna().all()
    assert (frame.method == shares.NO_INTERVAL.format(why=shares.CLIPPED)).all()


def test_what_a_folder_cannot_answer_is_said(capsys, tmp_path):
    folder = _publish(capsys, tmp_path, "td", "--method", "topdown")
    out = tmp_path / "x.csv"
    code, _, err = run(capsys, "analyse", "--release", folder, "--release-level", "county",
                       "--out", out)
    assert code == 2 and "no level 'county'" in err and "'parent level'" in err
    code, _, err = run(capsys, "analyse", "--release", folder, "--analysis", "comparison",
                       "--compare", "parents", "--out", out)
    assert code == 2 and "compare the zones of its parent level" in err
    code, _, err = run(capsys, "analyse", "--dataset", "toy_town", "--release-level",
                       "parent level", "--out", out)
    assert code == 2 and "with --release DIR" in err
    code, _, err = run(capsys, "analyse", "--release", folder, "--analysis", "distance",
                       "--zone", "Leitrim 001", "--out", out)
    assert code == 2 and "positions" in err
    code, _, err = run(capsys, "analyse", "--release", folder, "--zones",
                       DATA_DIR / "toy_town.zones.csv", "--analysis", "distance", "--zone",
                       "Leitrim 001", "--out", out)
    assert code == 2 and "toy_town.zones.csv" in err and "None of the 8 zones" in err


def test_a_zones_file_gives_a_folder_shares_within_a_distance_and_parents(capsys, tmp_path):
    """With the public ED zones file beside a TopDown folder: the share within 10 km of a
    parent area (its EDs) and the live-and-work share, each the range over the folder's
    bounds, and the comparison of parent areas."""
    folder = _publish(capsys, tmp_path, "td", "--method", "topdown")
    zones = ("--zones", DATA_DIR / "ireland_ed.zones.csv")
    frame, said = _analyse(capsys, tmp_path, folder, "shares", *zones, "--analysis",
                           "share-within", "--km", "10", "--analysis", "share-live-and-work",
                           "--parent", "Sligo", "--side", "home")
    assert list(frame.analysis) == ["share_within_home", "share_live_and_work_home"]
    assert frame.method.str.startswith("range:").all() and "TopDown" in frame.method[0]
    assert ((frame.low <= frame.released) & (frame.released <= frame.high)).all()
    found = published.load(folder)
    rows = _rows(folder, "fine level")
    sligo = rows.origin.str.startswith("Sligo")
    a = rows["count"][sligo & rows.destination.str.startswith("Sligo")].sum()
    c = rows["count"][sligo].sum() - a
    homes = int(np.char.startswith(found.od.origins.ids.astype(str), "Sligo").sum())
    works = int(np.char.startswith(found.od.destinations.ids.astype(str), "Sligo").sum())
    within, outside = homes * works, homes * (found.od.n_destinations - works)
    assert frame.cells[1] == within + outside
    # the range over the per-parent bounds of A and C (parents from the manifest's map), tighter
    # than the one over their k·M bounds
    rule = found.interval
    assert isinstance(rule, published.ParentBound)
    placed = published.placed(found, (DATA_DIR / "ireland_ed.zones.csv").read_bytes())
    asked = shares.live_and_work(placed.od, sel.parent(placed.od, "Sligo"), "home")
    share, low, high = shares.ranged(rule, [a], [within], [c], [outside], asked.compute)
    assert frame.released[1] == pytest.approx(a / (a + c)) == share[0]
    assert (frame.low[1], frame.high[1]) == pytest.approx((low[0], high[0]))
    _, wide_low, wide_high = shares.ranged(rule, [a], [within], [c], [outside])
    assert wide_low[0] <= low[0] and high[0] <= wide_high[0] and high[0] - low[0] < 0.5 * (
        wide_high[0] - wide_low[0])
    compared, _ = _analyse(capsys, tmp_path, folder, "parents", *zones, "--analysis",
                           "comparison", "--compare", "parents")
    # a zone all of whose cells were published as 0 is an unnamed placeholder: its own area
    areas = set(compared.selection)
    assert {"Leitrim", "Sligo"} <= areas
    assert all(area.startswith("(unlisted ") for area in areas - {"Leitrim", "Sligo"})


# ----------------------------------------------------------------------------------- coverage
def _manifest(mechanism: str, post: str, levels: list[dict]) -> dict:
    return {"mechanism": mechanism, "post_processing": publish.POSTPROCESS.get(post, post),
            "levels": levels, "input": {"domain": {}}}


def _table(od, values, level: str) -> pd.DataFrame:
    o, d = np.divmod(np.arange(od.domain_size), od.n_destinations)
    return pd.DataFrame({"level": level, "origin": od.origins.ids[o],
                         "destination": od.destinations.ids[d],
                         "count": values.astype(int).astype(str)})


def _parent_queries(parent):
    return answers.flows(parent, sel.zones(parent, ["Leitrim"])) + answers.comparison(parent)


def _level_shares(table) -> list[shares.Share]:
    """Both live-and-work shares of each of a level's first :data:`SHARED_ZONES` zones."""
    return [shares.live_and_work(table, sel.zones(table, [zone]), side)
            for zone in table.destinations.ids[:SHARED_ZONES] for side in ("work", "home")]


def _share_sums(found, values) -> np.ndarray:
    """(A, C, cells of A, cells of C) of each share, as four rows."""
    return np.array([np.concatenate(share.compute(values)) for share in found]).T


def _cover(od, parent, draw, rule_of):
    """Coverage at both levels over seeded releases ``draw(rng)`` → (fine, parent) vectors: of
    the sums' bounds, and of the shares' ranges over them (:func:`shares.ranged`)."""
    widths = {}
    for level, table, queries in (("fine level", od, _queries(od, "Sligo 001", "Leitrim 001")),
                                  ("parent level", parent, _parent_queries(parent))):
        truth = table.to_dense().astype(float)
        true = np.concatenate([q.compute(truth)[0] for q in queries])
        cells = np.concatenate([q.compute(truth)[1] for q in queries])
        found = _level_shares(table)
        a, c, ma, mc = _share_sums(found, truth)
        defined = a + c > 0
        rule = rule_of(level)
        lows, highs, share_lows, share_highs = [], [], [], []
        for seed in range(RELEASES):
            released = draw(np.random.default_rng(seed))[0 if level == "fine level" else 1]
            released = released.astype(float)
            low, high = rule.bounds(np.concatenate([q.compute(released)[0]
                                                    for q in queries]), cells)
            lows.append(low), highs.append(high)
            ra, rc, _, _ = _share_sums(found, released)
            share, low, high = shares.ranged(rule, ra, ma, rc, mc)
            shown = np.isfinite(share)
            assert ((0 <= low) & (low <= high) & (high <= 1)).all()
            assert ((low[shown] <= share[shown]) & (share[shown] <= high[shown])).all()
            share_lows.append(low), share_highs.append(high)
        _check_coverage(true, cells, np.array(lows), np.array(highs))
        _check_coverage(a[defined] / (a + c)[defined], (ma + mc)[defined],
                        np.array(share_lows)[:, defined], np.array(share_highs)[:, defined])
        widths[level] = np.median((np.array(share_highs) - np.array(share_lows))[:, defined])
    return widths


def test_coverage_of_a_wls_folders_bound(two_counties):
    """The WLS bound (manifest alone) covers at ≥ 95 % at both levels on releases drawn with the
    publish's own fit (least squares, rounding within parents) and its noise law, seeded."""
    od = two_counties
    groups, parent = publish._parent_cells(od)
    fine_scale, coarse_scale = 4.0, 4.0   # ε = ½ per level, substitution (Δ₁ = 2)
    variance = 2 * math.exp(-1 / fine_scale) / (1 - math.exp(-1 / fine_scale)) ** 2

    def draw(rng):
        fine = od.to_dense() + _opendp_like("discrete_laplace", fine_scale, od.domain_size, rng)
        coarse = parent.to_dense() + _opendp_like("discrete_laplace", coarse_scale,
                                                  parent.domain_size, rng)
        fitted, top = publish.least_squares(fine, coarse, groups, variance, variance)
        fitted = publish.integer_consistent(fitted, top, groups)
        return fitted, np.bincount(groups, weights=fitted, minlength=parent.domain_size)
    levels = [{"name": "fine level", "cells": od.domain_size, "scale": fine_scale,
               "noise_variance": variance},
              {"name": "parent level", "cells": parent.domain_size, "scale": coarse_scale,
               "noise_variance": variance}]
    manifest = _manifest(publish.MECHANISMS[publish.DISCRETE_LAPLACE], "base", levels)
    first = draw(np.random.default_rng(0))
    table = pd.concat([_table(od, first[0], "fine level"),
                       _table(parent, first[1], "parent level")])

    def rule_of(level):
        rule = published.read(manifest, table, level).interval
        assert rule.method.startswith("bound: WLS")
        return rule
    widths = _cover(od, parent, draw, rule_of)
    assert widths["parent level"] < 0.02, widths   # small EDs' ranges are wide (B of a few)


def test_coverage_of_a_topdown_folders_bound(two_counties):
    """The TopDown bound covers at ≥ 95 % at both levels on TopDown fits of seeded discrete
    Gaussian noise with the publish's margins (add/remove: the top level noisy)."""
    od = two_counties
    levels = topdown.hierarchy(od)
    parent = levels[0].od
    scale = 9.0
    bounds = margins.topdown_margins([scale, scale], [parent.domain_size, od.domain_size])

    def draw(rng):
        noise = lambda number, counts: np.asarray(counts) + margins.discrete_gaussian(
            rng, scale, len(counts))
        top, fine = topdown.topdown(levels, None, noise)
        return fine, top
    entries = [{"name": name, "cells": level.od.domain_size, "scale": scale,
                "noise_variance": scale ** 2, margins.COLUMN: bound}
               for name, level, bound in zip(("parent level", "fine level"), levels, bounds)]
    manifest = _manifest(publish.METHODS[publish.TOPDOWN], "TopDown", entries)
    first = draw(np.random.default_rng(0))
    table = pd.concat([_table(od, first[0], "fine level"),
                       _table(parent, first[1], "parent level")])
    widths = _cover(od, parent, draw,
                    lambda level: published.read(manifest, table, level).interval)
    assert widths["parent level"] < 0.05, widths   # the fine level's k·M ranges are mostly [0, 1]


def test_a_topdown_folders_per_parent_bound_holds_and_is_tight(two_counties):
    """With the zone-to-parent map in the manifest (as ``publish`` writes it), the fine level's
    sums get the per-parent bound. On every seeded draw where each cell of both levels is within
    its margin (the one event the margins hold on, ≥ 95 %), every answer's interval and every
    share's range holds; coverage is ≥ 95 %; and a parent area's inflow at the fine level is as
    tight as at the parent level (the Leitrim → Sligo parent cell whole: ±M_parent). With some
    zones' parents unknown the bound is wider and holds on the event too."""
    od = two_counties
    levels = topdown.hierarchy(od)
    parent = levels[0].od
    scale = 9.0
    top_margin, fine_margin = margins.topdown_margins([scale, scale],
                                                      [parent.domain_size, od.domain_size])

    def draw(rng):
        noise = lambda number, counts: np.asarray(counts) + margins.discrete_gaussian(
            rng, scale, len(counts))
        return topdown.topdown(levels, None, noise)
    entries = [{"name": name, "cells": level.od.domain_size, "scale": scale,
                "noise_variance": scale ** 2, margins.COLUMN: bound}
               for name, level, bound in zip(("parent level", "fine level"), levels,
                                             (top_margin, fine_margin))]
    entries[1]["parents"] = {side: dict(zip(zones.ids.tolist(), zones.parent.tolist()))
                             for side, zones in (("origins", od.origins),
                                                 ("destinations", od.destinations))}
    manifest = _manifest(publish.METHODS[publish.TOPDOWN], "TopDown", entries)
    top, fine = draw(np.random.default_rng(0))
    table = pd.concat([_table(od, fine, "fine level"), _table(parent, top, "parent level")])
    folder = published.read(manifest, table, "fine level")
    rule = folder.interval
    assert isinstance(rule, published.ParentBound) and "manifest's zone-to-parent" in rule.method
    assert list(folder.od.origins.ids) == list(od.origins.ids)   # the queries' cell order
    # zones of unknown parent (a zones file that does not name them) may be in any parent
    unknown = [np.where(np.isin(zones.ids, zones.ids[-5:]), "", zones.parent)
               for zones in (od.origins, od.destinations)]
    loose = published.parent_rule(fine_margin, top_margin, od, fine.astype(float), *unknown,
                                  folder.above[1], "test")
    # … unless the geography says how many zones each parent has (the map's, a zones file's)
    bounded = published.parent_rule(fine_margin, top_margin, od, fine.astype(float), *unknown,
                                    folder.above[1], "test", [
                                        pd.Series(zones.parent).value_counts()
                                        for zones in (od.origins, od.destinations)])
    def rooms(found):   # parent cells' room (a parent "" of unknown zones has none)
        return found.capacity[found.capacity > 0]
    assert np.array_equal(rooms(bounded), rooms(rule))
    assert (rooms(loose) >= rooms(rule)).all() and (rooms(loose) > rooms(rule)).any()
    sligo = answers.flows(od, sel.parent(od, "Sligo"))
    queries = _queries(od, "Sligo 001", "Leitrim 001") + sligo
    truth, top_truth = od.to_dense().astype(float), parent.to_dense().astype(float)
    true = np.concatenate([q.compute(truth)[0] for q in queries])
    cells = [q.compute(truth)[1] for q in queries]
    found = _level_shares(od)
    a, c, ma, mc = _share_sums(found, truth)
    defined = a + c > 0
    lows, highs, share_lows, share_highs, held = [], [], [], [], 0
    for seed in range(RELEASES):
        top, fine = (x.astype(float) for x in draw(np.random.default_rng(seed)))
        bounds = rule.all_bounds(queries, [q.compute(fine)[0] for q in queries], cells)
        low, high = (np.concatenate(x) for x in zip(*bounds))
        wider = [[np.concatenate(x) for x in zip(*other.all_bounds(
            queries, [q.compute(fine)[0] for q in queries], cells))] for other in (bounded, loose)]
        for wide_low, wide_high in wider:
            assert (wide_low <= low).all() and (high <= wide_high).all()
        ranges = np.array([shares.ranged(rule, [ra], [m_a], [rc], [m_c], share.compute)
                           for share, (ra, rc), m_a, m_c in zip(
                               found, _share_sums(found, fine)[:2].T, ma, mc)])[:, :, 0]
        lows.append(low), highs.append(high)
        share_lows.append(ranges[:, 1]), share_highs.append(ranges[:, 2])
        if (np.abs(fine - truth) <= fine_margin).all() and (
                np.abs(top - top_truth) <= top_margin).all():
            held += 1
            assert ((low <= true) & (true <= high)).all(), seed
            for wide_low, wide_high in wider:
                assert ((wide_low <= true) & (true <= wide_high)).all(), seed
            share = (a / (a + c))[defined]
            assert ((ranges[defined, 1] <= share) & (share <= ranges[defined, 2])).all(), seed
    assert held >= stats.binom.ppf(0.001, RELEASES, 0.95), held
    _check_coverage(true, np.concatenate(cells), np.array(lows), np.array(highs))
    _check_coverage(a[defined] / (a + c)[defined], (ma + mc)[defined],
                    np.array(share_lows)[:, defined], np.array(share_highs)[:, defined])
    inflow = rule.all_bounds(sligo[:1], [np.zeros(1)], [sligo[0].compute(truth)[1]])[0][1]
    assert inflow[0] == top_margin < sligo[0].compute(truth)[1][0] * fine_margin


def test_a_topdown_folder_without_the_map_gets_the_per_parent_bound_from_a_zones_file(
        capsys, tmp_path):
    """A folder published before the manifest held the zone-to-parent map: k·M alone; with the
    public zones file the per-parent bound from the map (wider only for the cells of zones on no
    row, whose parent the folder does not tell); with a zones file whose parents
    do not add the fine level up to the published parent level (another geography), k·M."""
    folder = _publish(capsys, tmp_path, "td", "--method", "topdown")
    manifest = json.loads((folder / "manifest.json").read_text())
    parents = manifest["levels"][-1]["parents"]   # publish writes the map of a public domain
    assert parents["origins"]["Sligo 001"] == "Sligo" and len(parents["destinations"]) == 145
    assert "parents" not in manifest["levels"][0]
    old = tmp_path / "old"
    old.mkdir()
    (old / "release.csv").write_bytes((folder / "release.csv").read_bytes())
    for level in manifest["levels"]:
        level.pop("parents", None)
    (old / "manifest.json").write_text(json.dumps(manifest))
    flows = ("--analysis", "flows", "--zone", "Sligo 001")
    alone, _ = _analyse(capsys, tmp_path, old, "alone", *flows)
    assert alone.method.str.contains("k·").all()
    zones = DATA_DIR / "ireland_ed.zones.csv"
    by_parent = ("--analysis", "flows", "--parent", "Sligo", "--zones", zones)
    mapped, _ = _analyse(capsys, tmp_path, folder, "mapped", *by_parent)
    placed, said = _analyse(capsys, tmp_path, old, "placed", *by_parent)
    assert mapped.method.str.contains("the manifest's zone-to-parent map").all()
    assert placed.method.str.contains("parents from the zones file").all()
    assert "parents from the zones file" in said
    # the same bound, but wider for the cells of zones on no row (unnamed: of unknown parent)
    assert (placed.low <= mapped.low).all() and (mapped.high <= placed.high).all()
    zoned = published.load(old).od
    if not any(str(zone).startswith("(unlisted") for zone in np.concatenate(
            [zoned.origins.ids, zoned.destinations.ids])):
        assert placed[["low", "high"]].equals(mapped[["low", "high"]])
    fine_margin = manifest["levels"][-1][margins.COLUMN]
    inflow = placed.set_index("analysis").loc["inflow"]
    assert inflow.high - inflow.released < inflow.cells * fine_margin
    table = pd.read_csv(zones, dtype=str, keep_default_na=False)
    table.loc[table.id == "Sligo 001", "parent"] = "Leitrim"
    wrong = tmp_path / "wrong.zones.csv"
    table.to_csv(wrong, index=False)
    other, _ = _analyse(capsys, tmp_path, old, "other", "--analysis", "flows", "--parent",
                        "Sligo", "--zones", wrong)
    assert other.method.str.contains("k·").all()
    assert (other.high - other.released == other.cells * fine_margin).all()


def test_a_topdown_folder_over_a_domain_read_from_the_data_has_no_map(two_counties):
    """The map would name the data's zones on no row: left out, the folder keeps k·M."""
    found = publish.publish_topdown(two_counties, 1.0, delta=1e-6, source={
        "domain": {"source": published_domain.DATA}})
    assert not any("parents" in level for level in found.manifest["levels"])
    table = found.table.astype({"origin": str, "destination": str, "count": str})
    rule = published.read(found.manifest, table).interval
    assert rule.method.endswith(published.WHY_NO_MAP)
