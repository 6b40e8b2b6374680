"""The raw row helpers under sparse gradients and lookups, against NumPy's own definitions."""

import numpy as np
import pytest
from mxrs import _backend
from mxrs._sparse_rows import lookup, sum_rows, unique_ids
from mxrs.ndarray.sparse._storage import rsp_rows

BE = _backend.NUMPY


@pytest.mark.parametrize("n", [0, 1, 2, 7, 5000])
def test_unique_ids_is_numpys_unique(n):
    ids = np.random.RandomState(n).randint(0, max(n // 3, 1), size=n).astype(np.int64)
    np.testing.assert_array_equal(unique_ids(np, ids), np.unique(ids))


def test_lookup_is_searchsorted_for_present_and_absent_ids():
    rng = np.random.RandomState(1)
    table = np.unique(rng.randint(0, 10_000, size=3000)).astype(np.int64)
    ids = rng.randint(-5, 10_005, size=4000).astype(np.int64)
    np.testing.assert_array_equal(lookup(np, table, ids), np.searchsorted(table, ids))


def test_sum_rows_adds_repeats_like_add_at():
    rng = np.random.RandomState(2)
    ids = rng.randint(0, 50, size=400).astype(np.int64)  # every id repeated several times
    vals = rng.randint(-8, 8, size=(400, 3)).astype(np.float32)  # exact sums in any order
    uniq, summed = sum_rows(BE, ids, vals)
    want = np.zeros((50, 3), np.float32)
    np.add.at(want, ids, vals)
    np.testing.assert_array_equal(uniq, np.unique(ids))
    np.testing.assert_array_equal(summed, want[np.unique(ids)])


def test_sum_rows_keeps_increasing_ids_without_copying():
    ids = np.array([1, 4, 9], np.int64)
    vals = np.arange(6, dtype=np.float32).reshape(3, 2)
    uniq, summed = sum_rows(BE, ids, vals)
    assert summed is vals
    np.testing.assert_array_equal(uniq, ids)


def test_rsp_rows_gives_stored_rows_and_zeros_for_absent_ones():
    indices = np.array([2, 5, 8], np.int64)
    values = np.array([[1, 1], [2, 2], [3, 3]], np.float32)
    ids = np.array([8, 0, 5, 5, 9, 2], np.int64)
    got = rsp_rows(BE, indices, values, ids)
    np.testing.assert_array_equal(got, [[3, 3], [0, 0], [2, 2], [2, 2], [0, 0], [1, 1]])
    assert rsp_rows(BE, indices[:0], values[:0], ids).shape == (6, 2)
