"""dpcore.evaluation.flows: which flows a map shows, how a release changed each, width classes, roll-up."""

import math

import numpy as np
import pandas as pd
import pytest

from dpcore import mechanisms
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import flows
from dpcore.scoring.metrics import PRESENT_AT


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture
def od() -> ODMatrix:
    """Four origins (X has no position) and five destinations ("Home" has none), in two parents.

    A and B lie in parent P, C and X in Q; "Home" is its own parent, as at the ED level.
    """
    parents_o = ZoneSet.from_ids(["P", "Q"], lat=[53.0, 53.5], lon=[-7.0, -6.5])
    parents_d = ZoneSet.from_ids(["P", "Q", "Home"], lat=[53.0, 53.5, np.nan],
                                 lon=[-7.0, -6.5, np.nan])
    origins = ZoneSet.from_ids(["A", "B", "C", "X"], labels=["Aa", "Bb", "Cc", "Xx"],
                               lat=[53.0, 53.1, 53.5, np.nan], lon=[-7.0, -7.1, -6.5, np.nan],
                               parent=["P", "P", "Q", "Q"], parent_zones=parents_o)
    destinations = ZoneSet.from_ids(["A", "B", "C", "X", "Home"],
                                    labels=["Aa", "Bb", "Cc", "Xx", "At home"],
                                    lat=[53.0, 53.1, 53.5, np.nan, np.nan],
                                    lon=[-7.0, -7.1, -6.5, np.nan, np.nan],
                                    parent=["P", "P", "Q", "Q", "Home"], parent_zones=parents_d)
    counts = np.array([
        # A   B   C   X  Home
        [50, 20, 5, 0, 7],    # A
        [30, 40, 0, 2, 1],    # B
        [0, 8, 60, 3, 9],     # C
        [4, 0, 6, 10, 0],     # X
    ])
    return ODMatrix.from_dense("toy", origins, destinations, counts.reshape(-1))


def cell(od: ODMatrix, origin: str, destination: str) -> int:
    return int(od.origins.index_of([origin])[0] * od.n_destinations
               + od.destinations.index_of([destination])[0])


def all_cells(selection: flows.FlowSelection) -> pd.DataFrame:
    return pd.concat([selection.lines.assign(group=flows.LINES),
                      selection.within.assign(group=flows.WITHIN),
                      selection.unplaced.assign(group=flows.UNPLACED)], ignore_index=True)


# ------------------------------------------------------------------------------ classification
def test_classify_every_status_and_its_boundaries():
    true = np.array([100, 100, 100, 100, 100, 100, 100, 100, 0, 0, 5, 5, 0])
    released = np.array([110, 110.01, 150, 150.01, 90, 89.99, 50, 49.99, PRESENT_AT,
                         PRESENT_AT - 0.01, PRESENT_AT - 0.01, -3.0, -2.0])
    expected = [flows.CLOSE_TO_TRUE, flows.OVER, flows.OVER, flows.OVER_FAR, flows.CLOSE_TO_TRUE,
                flows.UNDER, flows.UNDER, flows.UNDER_FAR, flows.INVENTED, "", flows.LOST,
                flows.LOST, ""]
    assert flows.classify(true, released).tolist() == expected
    assert set(flows.STATUSES) == set(expected) - {""}


def test_classify_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="shape"):
        flows.classify([1, 2], [1, 2, 3])


def test_shown_values_per_view():
    true, released = np.array([3, 0, 5]), np.array([1.0, 4.0, 5.5])
    assert flows.shown_values(flows.TRUE, true, released).tolist() == [3, 0, 5]
    assert flows.shown_values(flows.RELEASED, true, released).tolist() == [1.0, 4.0, 5.5]
    assert flows.shown_values(flows.DIFFERENCE, true, released).tolist() == [3.0, 4.0, 5.5]
    with pytest.raises(ValueError, match="unknown view"):
        flows.shown_values("sideways", true, released)
    with pytest.raises(ValueError, match="needs released values"):
        flows.shown_values(flows.RELEASED, true)


# ----------------------------------------------------------------------------------- selection
def test_groups_partition_the_flows_by_position_and_zone(od):
    true = od.to_dense()
    selection = flows.select(od, true)
    shown = all_cells(selection)
    assert sorted(shown["cell"]) == sorted(od.flat_index.tolist())  # nothing lost, nothing twice
    lines, within, unplaced = selection.lines, selection.within, selection.unplaced
    assert (lines["origin"] != lines["destination"]).all()
    assert lines[["origin_lat", "destination_lat"]].notna().all().all()
    assert (within["origin"] == within["destination"]).all()
    assert set(within["origin"]) == {"A", "B", "C"}  # X is within itself but has no position
    assert set(unplaced["origin"].where(unplaced["origin"] == "X", unplaced["destination"])) \
        <= {"X", "Home"}
    assert cell(od, "X", "X") in set(unplaced["cell"])
    assert selection.matched == {flows.LINES: len(lines), flows.WITHIN: 3,
                                 flows.UNPLACED: len(unplaced)}
    assert selection.truncated() == 0


def test_each_group_is_sorted_largest_first_with_ties_by_cell(od):
    selection = flows.select(od, od.to_dense())
    for frame in (selection.lines, selection.within, selection.unplaced):
        keys = list(zip(-frame["shown"], frame["cell"]))
        assert keys == sorted(keys)


def test_top_k_keeps_the_k_largest_of_each_group(od):
    true = od.to_dense()
    everything = flows.select(od, true)
    top = flows.select(od, true, top_k=2)
    for group in flows.GROUPS:
        full, kept = getattr(everything, group), getattr(top, group)
        assert kept["cell"].tolist() == full["cell"].head(2).tolist()
        assert top.matched[group] == min(2, len(full))


def test_min_count_keeps_exactly_the_flows_at_or_above_it(od):
    true = od.to_dense()
    selection = flows.select(od, true, min_count=8)
    shown = all_cells(selection)
    assert set(shown["cell"]) == set(np.flatnonzero(true >= 8))


def test_min_km_leaves_out_the_short_lines_and_counts_them(od):
    """A (53.0, -7.0) and B (53.1, -7.1) are 13 km apart, C 60 km or more from both."""
    true = od.to_dense()
    full, long = flows.select(od, true), flows.select(od, true, min_km=20)
    lengths = flows._lengths_km(od, full.lines["cell"].to_numpy())
    assert 12 < lengths[full.lines["origin"].isin(["A", "B"])
                        & full.lines["destination"].isin(["A", "B"])].max() < 14
    assert long.lines["cell"].tolist() == full.lines["cell"][lengths >= 20].tolist()
    assert set(long.lines["cell"]) == {cell(od, "A", "C"), cell(od, "C", "B")}
    assert long.too_short == 2 and long.min_km == 20          # A → B and B → A
    for group in (flows.WITHIN, flows.UNPLACED):               # only lines are measured
        assert getattr(long, group)["cell"].tolist() == getattr(full, group)["cell"].tolist()
    top = flows.select(od, true, top_k=1, min_km=20)   # ranked among the long lines only
    assert top.lines["cell"].tolist() == [cell(od, "C", "B")]
    with pytest.raises(ValueError, match="min_km"):
        flows.select(od, true, min_km=-1)


def test_the_default_shortest_line_is_a_round_share_of_the_map_width(od):
    county = datasets.load("ireland_county")
    width = flows.map_width_km(county)
    assert 280 < width < 340                                  # Ireland: ≈ 300 km across
    assert flows.default_min_km(county) == 5                  # 3 % of it, rounded down
    assert flows.default_min_km(od) == 1                      # ≈ 56 km across → 1.7
    # the largest flow between two counties is drawn by default (10 km hid it: 9.5 km)
    dublin = [list(county.origins.ids).index(z) for z in ("South Dublin", "Dublin City")]
    cell = np.array([dublin[0] * county.n_destinations + dublin[1]])
    assert 5 < flows._lengths_km(county, cell)[0] < 10
    tiny = ODMatrix.from_dense("tiny", *(ZoneSet.from_ids(["A", "B"], lat=[53.0, 53.001],
                                                          lon=[-7.0, -7.0]),) * 2, np.ones(4))
    assert flows.default_min_km(tiny) == 0                    # a town's map leaves none out


def test_the_cap_keeps_the_largest_and_reports_what_it_left_out(od):
    true = od.to_dense()
    capped = flows.select(od, true, cap=2)
    full = flows.select(od, true)
    assert capped.lines["cell"].tolist() == full.lines["cell"].head(2).tolist()
    assert capped.matched[flows.LINES] == len(full.lines)
    assert capped.truncated() == len(full.lines) - 2
    assert capped.truncated(flows.WITHIN) == 1


@pytest.mark.parametrize("direction", list(flows.DIRECTIONS))
def test_zone_filter_by_direction(od, direction):
    true = od.to_dense()
    shown = all_cells(flows.select(od, true, zone="B", direction=direction))
    frm, to = shown["origin"] == "B", shown["destination"] == "B"
    expected = {flows.FROM: frm, flows.TO: to, flows.EITHER: frm | to}[direction]
    assert expected.all()
    grid = true.reshape(od.n_origins, od.n_destinations)
    n_from, n_to = np.count_nonzero(grid[1]), np.count_nonzero(grid[:, 1])
    assert len(shown) == {flows.FROM: n_from, flows.TO: n_to,
                          flows.EITHER: n_from + n_to - 1}[direction]


def test_zone_filter_for_a_destination_only_zone_and_unknown_zone(od):
    true = od.to_dense()
    home = flows.select(od, true, zone="Home")
    assert home.lines.empty and home.within.empty
    assert set(home.unplaced["destination"]) == {"Home"} and len(home.unplaced) == 3
    assert flows.select(od, true, zone="Home", direction=flows.FROM).unplaced.empty
    with pytest.raises(KeyError, match="unknown zone id 'Nowhere'"):
        flows.select(od, true, zone="Nowhere")


def test_views_rank_by_their_own_values_and_show_invented_and_lost_flows(od):
    true = od.to_dense().astype(float)
    released = true.copy()
    invented, lost = cell(od, "A", "X"), cell(od, "A", "C")
    released[invented] = 12.0       # nobody commutes A → X
    released[lost] = 0.2            # 5 commute A → C; shown as none
    released[cell(od, "A", "B")] = 90.0
    true_view = flows.select(od, true, released, view=flows.TRUE)
    released_view = flows.select(od, true, released, view=flows.RELEASED)
    difference = flows.select(od, true, released, view=flows.DIFFERENCE)
    assert lost in set(true_view.lines["cell"])
    assert invented not in set(all_cells(true_view)["cell"])
    assert lost not in set(released_view.lines["cell"])
    assert invented in set(released_view.unplaced["cell"])
    status = all_cells(difference).set_index("cell")["status"]
    assert status[invented] == flows.INVENTED and status[lost] == flows.LOST
    assert status[cell(od, "A", "B")] == flows.OVER_FAR
    assert released_view.lines["cell"].iloc[0] == cell(od, "A", "B")  # ranked by released (90)
    row = difference.lines.set_index("cell").loc[lost]
    assert row["shown"] == 5 and row["released"] == pytest.approx(0.2)
    assert row["difference"] == pytest.approx(0.2 - 5)


def test_selection_checks_its_inputs(od):
    true = od.to_dense()
    with pytest.raises(ValueError, match="expected 20 true counts"):
        flows.select(od, true[:-1])
    with pytest.raises(ValueError, match="expected 20 released values"):
        flows.select(od, true, np.zeros(3), view=flows.RELEASED)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        flows.select(od, true, top_k=0)
    with pytest.raises(ValueError, match="cap must be at least 1"):
        flows.select(od, true, cap=0)
    with pytest.raises(ValueError, match="unknown direction"):
        flows.select(od, true, zone="A", direction="sideways")


def test_tables_for_download_and_for_the_lists(od):
    true = od.to_dense()
    released = true + 0.5
    selection = flows.select(od, true, released, view=flows.DIFFERENCE)
    table = selection.table()
    assert list(table.columns) == ["origin_id", "origin", "destination_id", "destination", "true",
                                   "released", "difference", "release_effect", "shown_as"]
    assert len(table) == len(all_cells(selection))
    assert set(table["release_effect"]) <= set(flows.STATUSES.values())
    assert table["shown_as"].value_counts()["line"] == len(selection.lines)
    within = selection.listing(flows.WITHIN)
    assert within["commute"].tolist() == selection.within["origin_label"].tolist()
    # Without the rings layer (the page's default) the within-zone flows are listed, not drawn.
    assert table["shown_as"].value_counts()["ring"] == len(selection.within)
    listed = selection.table(rings=False)["shown_as"]
    assert listed.value_counts()["listed, same zone"] == len(selection.within) > 0
    assert listed.value_counts()["line"] == len(selection.lines)
    assert "ring" not in set(listed)
    assert selection.listing(flows.LINES)["commute"].iloc[0] == "Bb → Aa"  # 30.5, the largest


# ------------------------------------------------------------------------------- zones, totals
def test_zones_have_each_zone_once_with_its_totals(od):
    true = od.to_dense()
    frame = flows.zones(od, true)
    assert frame["id"].tolist() == ["A", "B", "C", "X", "Home"]
    grid = true.reshape(od.n_origins, od.n_destinations)
    assert frame["residents"].tolist() == grid.sum(axis=1).tolist() + [0]
    assert frame["jobs"].tolist() == grid.sum(axis=0).tolist()
    assert frame["placed"].tolist() == [True, True, True, False, False]
    only_b = np.zeros_like(true)
    only_b[cell(od, "B", "Home")] = 4
    assert flows.zones(od, only_b, keep_empty=False)["id"].tolist() == ["B", "Home"]
    assert len(flows.zones(od, only_b)) == 5


def test_zone_totals_in_out_and_within(od):
    true = od.to_dense()
    released = true * 2.0
    totals = flows.zone_totals(od, "C", true, released)
    assert (totals.out_true, totals.in_true, totals.within_true) == (80, 71, 60)
    assert (totals.out_released, totals.in_released, totals.within_released) == (160, 142, 120)
    home = flows.zone_totals(od, "Home", true)
    assert (home.out_true, home.in_true, home.within_true) == (0, 17, 0)
    assert math.isnan(home.in_released)
    assert totals.to_frame()["true"].tolist() == [80, 71, 60]


# ------------------------------------------------------------------------------------- roll-up
def test_roll_up_sums_true_and_released_by_parent(od, rng):
    released = od.to_dense() + rng.normal(0, 3, od.domain_size)
    parent, true, summed = flows.roll_up(od, od.to_dense(), released)
    assert np.array_equal(true, od.aggregate().to_dense())
    grid = released.reshape(od.n_origins, od.n_destinations)
    by_parent = summed.reshape(parent.n_origins, parent.n_destinations)
    assert by_parent[0, 0] == pytest.approx(grid[:2, :2].sum())        # P → P
    assert by_parent[1, 2] == pytest.approx(grid[2:, 4].sum())         # Q → Home
    assert summed.sum() == pytest.approx(released.sum())
    assert flows.roll_up(od, od.to_dense())[2] is None
    with pytest.raises(ValueError, match="expected 20 values"):
        flows.roll_up(od, np.zeros(3))


def test_roll_up_of_the_ed_dataset_is_the_county_dataset():
    ed, county = datasets.load("ireland_ed"), datasets.load("ireland_county")
    parent, true, _ = flows.roll_up(ed, ed.to_dense())
    assert np.array_equal(parent.origins.ids, county.origins.ids)
    assert np.array_equal(true, county.to_dense())


# ----------------------------------------------------------------------------------- widths
@pytest.mark.parametrize("largest", [0.3, 1, 1.5, 7, 99, 100, 101, 2_748_530])
def test_width_breaks_are_round_roughly_doubling_and_cover_the_largest(largest):
    breaks = flows.width_breaks(largest, n_classes=6)
    assert 1 <= len(breaks) <= 6 and breaks[0] >= 1
    assert breaks[-1] >= largest and (len(breaks) == 1 or breaks[-2] < largest)
    mantissas = {round(b / 10 ** math.floor(math.log10(b))) for b in breaks}
    assert mantissas <= {1, 2, 5}
    ratios = breaks[1:] / breaks[:-1]
    assert ((ratios >= 2) & (ratios <= 2.5)).all()
    assert len(breaks) == 6 or breaks[0] == 1


def test_width_class_is_the_first_bound_at_or_above_the_value():
    breaks = np.array([1.0, 2.0, 5.0, 10.0])
    values = np.array([0.5, 1, 1.01, 2, 4.9, 5, 9, 10, 11])
    classes = flows.width_class(values, breaks)
    assert classes.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 3]
    with pytest.raises(ValueError, match="n_classes"):
        flows.width_breaks(10, n_classes=0)


# --------------------------------------------------------------------------- on real releases
def test_county_release_invariants(rng):
    od = datasets.load("ireland_county")
    true = od.to_dense()
    released = mechanisms.build("laplace", epsilon=0.5).release(true, rng)
    selection = flows.select(od, true, released, view=flows.DIFFERENCE, top_k=100)
    shown = all_cells(selection)
    values = np.maximum(true, released)
    for group in flows.GROUPS:   # the k largest of each group by max(true, released)
        frame = getattr(selection, group)
        assert len(frame) == 100 or len(frame) == selection.matched[group]
    assert (shown["shown"] == values[shown["cell"]]).all()
    assert (shown["status"] == flows.classify(true[shown["cell"]], released[shown["cell"]])).all()
    special = {"No fixed place of work", "Work/school from home", "Northern Ireland", "Overseas"}
    assert set(selection.unplaced["destination"]) <= special
    assert not set(selection.lines["destination"]) & special
