"""mechanisms.base.occupied_cells: the non-empty cells of a truth vector, found once per read-only
vector (a sweep releases and scores one truth many times) and never stale."""

import gc

import numpy as np

from dpcore.mechanisms import base
from dpcore.mechanisms.base import occupied_cells


def read_only(values) -> np.ndarray:
    array = np.array(values)
    array.flags.writeable = False
    return array


def test_cells_and_counts_of_the_non_empty_cells():
    cells, values = occupied_cells(np.array([0, 3, 0, 0, 2, 7]))
    assert cells.tolist() == [1, 4, 5] and values.tolist() == [3, 2, 7]
    cells, values = occupied_cells(np.zeros(4, dtype=np.int64))
    assert cells.size == 0 and values.size == 0


def test_a_read_only_vector_is_answered_once_and_the_answer_cannot_be_changed():
    counts = read_only([5, 0, 1])
    first = occupied_cells(counts)
    assert occupied_cells(counts)[0] is first[0]
    assert not first[0].flags.writeable and not first[1].flags.writeable
    # An equal vector that is another object gets its own answer.
    assert occupied_cells(read_only([5, 0, 1]))[0] is not first[0]


def test_a_writeable_vector_is_never_remembered():
    counts = np.array([5, 0, 1])
    occupied_cells(counts)
    counts[1] = 4
    assert occupied_cells(counts)[0].tolist() == [0, 1, 2]


def test_the_answer_is_dropped_with_its_vector():
    counts = read_only([0, 9])
    occupied_cells(counts)
    assert base._OCCUPIED[1] is not None
    del counts
    gc.collect()
    assert base._OCCUPIED[1] is None
