"""Unit tests of dpcore.grids: typed grids of ε and n."""


import pytest

from dpcore import grids


# ---------------------------------------------------------------------------------------- input
def test_parse_grid_accepts_commas_spaces_and_sorts():
    assert grids.parse_grid("5, 0.5;1 1") == (0.5, 1.0, 5.0)
    assert grids.parse_grid("1000 100", "n", 0, 5000, whole=True) == (100, 1000)
    assert grids.parse_grid(grids.format_grid(grids.THESIS_EPSILONS)) == \
        grids.THESIS_EPSILONS
    assert grids.format_grid((2700, 2_748_530)) == "2700, 2748530"


@pytest.mark.parametrize("text, message", [("", "at least one"), ("1, x", "“x” is not a number"),
                                           ("0", "outside"), ("25", "outside"),
                                           ("nan", "outside"),
                                           ("0.5, 1_0", "“1_0” is not a number"),  # was ε = 10
                                           ("٢", "“٢” is not a number"),
                                           ("1, 1e-17", r"ε = 1e-17 is outside \[1e-06, 20\]\. "
                                                        "Below 1e-06, e\\^ε − 1 cannot")])
def test_parse_grid_says_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        grids.parse_grid(text)


def test_parse_grid_whole_numbers():
    with pytest.raises(ValueError, match="whole number"):
        grids.parse_grid("1.5", "n", 0, 10, whole=True)


def test_population_grid_is_increasing_and_ends_at_n():
    grid = grids.population_grid(2_748_530)
    assert grid[-1] == 2_748_530 and list(grid) == sorted(set(grid)) and grid[0] >= 1000
    assert grids.population_grid(318) == (318,)
