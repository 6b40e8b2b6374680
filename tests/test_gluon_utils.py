"""gluon.utils: splitting batches across contexts (evenly, unevenly, by work load), clipping."""

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon import utils
from mxrs.gluon.utils import split_and_load, split_data

CTXS = [mx.cpu(0), mx.cpu(1)]


def _batch(n, width=2):
    return mx.nd.arange(n * width).reshape((n, width))


def test_split_data_even():
    parts = split_data(_batch(6), 3)
    assert [p.shape for p in parts] == [(2, 2)] * 3
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), _batch(6).asnumpy())
    assert len(split_data(_batch(4), 1)) == 1


# Uneven splits (even_split=False): the rows of each slice, as read off Apache MXNet 1.9.1's
# mx.gluon.utils.split_data on mx.nd.arange(size). The first size % n slices get one row more;
# with fewer rows than slices the trailing slices are empty.
UNEVEN_ROWS = {
    (5, 2): [[0, 1, 2], [3, 4]],
    (7, 3): [[0, 1, 2], [3, 4], [5, 6]],
    (4, 3): [[0, 1], [2], [3]],
    (6, 4): [[0, 1], [2, 3], [4], [5]],
    (9, 4): [[0, 1, 2], [3, 4], [5, 6], [7, 8]],
    (10, 4): [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]],
    (100, 3): [list(range(0, 34)), list(range(34, 67)), list(range(67, 100))],
    (101, 2): [list(range(0, 51)), list(range(51, 101))],
    (1, 2): [[0], []],
    (2, 3): [[0], [1], []],
    (3, 5): [[0], [1], [2], [], []],
}


@pytest.mark.parametrize(("size", "n"), list(UNEVEN_ROWS))
def test_split_data_uneven_gives_mxnets_slices(size, n):
    data = _batch(size)
    parts = split_data(data, n, even_split=False)
    rows = UNEVEN_ROWS[size, n]
    assert [p.shape for p in parts] == [(len(r), 2) for r in rows]
    for part, r in zip(parts, rows, strict=True):
        np.testing.assert_array_equal(part.asnumpy(), data.asnumpy()[r].reshape(-1, 2))


@pytest.mark.parametrize(("size", "n"), list(UNEVEN_ROWS))
def test_split_data_uneven_along_axis_one_gives_mxnets_slices(size, n):
    # MXNet 1.9.1 gives the same columns along axis 1 when size >= n; with size < n its
    # slice_axis refuses the empty slices (begin == end), where mxrs gives them as on axis 0.
    data = mx.nd.arange(3 * size).reshape((3, size))
    parts = split_data(data, n, batch_axis=1, even_split=False)
    cols = UNEVEN_ROWS[size, n]
    assert [p.shape for p in parts] == [(3, len(c)) for c in cols]
    for part, c in zip(parts, cols, strict=True):
        np.testing.assert_array_equal(part.asnumpy(), data.asnumpy()[:, c].reshape(3, -1))


def test_split_data_uneven_along_a_last_axis():
    # MXNet 1.9.1, arange(20).reshape((2, 2, 5)) in 3 along axis 2: widths 2, 2, 1.
    data = mx.nd.arange(20).reshape((2, 2, 5))
    parts = split_data(data, 3, batch_axis=2, even_split=False)
    assert [p.shape for p in parts] == [(2, 2, 2), (2, 2, 2), (2, 2, 1)]
    assert parts[0].asnumpy().reshape(-1).tolist() == [0, 1, 5, 6, 10, 11, 15, 16]
    assert parts[1].asnumpy().reshape(-1).tolist() == [2, 3, 7, 8, 12, 13, 17, 18]
    assert parts[2].asnumpy().reshape(-1).tolist() == [4, 9, 14, 19]


def test_split_data_of_no_rows_gives_empty_slices():
    # MXNet 1.9.1: an array of shape (0, 1) in 3 gives three (0, 1) slices, even or not.
    empty = mx.nd.zeros((0, 2))
    for even in (True, False):
        assert [p.shape for p in split_data(empty, 3, even_split=even)] == [(0, 2)] * 3


def test_split_data_uneven_without_permission_is_an_error():
    with pytest.raises(
        MXNetError,
        match=r"data with shape \(7, 2\) cannot be evenly split into "
        r"3 slices along axis 0. Use a batch size that's "
        r"multiple of 3 or set even_split=False",
    ):
        split_data(_batch(7), 3)
    with pytest.raises(ValueError):  # MXNet raises ValueError; ours is both
        split_data(_batch(7), 3)


def test_split_data_along_another_axis():
    data = mx.nd.arange(24).reshape((2, 6, 2))
    parts = split_data(data, 2, batch_axis=1)
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]
    np.testing.assert_array_equal(parts[1].asnumpy(), data.asnumpy()[:, 3:])
    parts = split_data(data, 4, batch_axis=1, even_split=False)
    assert [p.shape[1] for p in parts] == [2, 2, 1, 1]  # as MXNet 1.9.1


def test_split_and_load_on_two_contexts():
    data = mx.random.uniform(shape=(100, 10))
    result = split_and_load(data, ctx_list=CTXS)
    assert [r.shape for r in result] == [(50, 10), (50, 10)]
    assert [r.context for r in result] == CTXS
    np.testing.assert_array_equal(result[1].asnumpy(), data.asnumpy()[50:])
    uneven = split_and_load(_batch(5), CTXS, even_split=False)
    assert [r.shape[0] for r in uneven] == [3, 2]  # as MXNet 1.9.1
    np.testing.assert_array_equal(uneven[0].asnumpy(), _batch(5).asnumpy()[:3])
    with pytest.raises(MXNetError, match="cannot be evenly split"):
        split_and_load(_batch(5), CTXS)


def test_split_and_load_uneven_gives_every_context_a_slice():
    # MXNet 1.9.1: 7 rows on 3 contexts -> rows 0-2, 3-4, 5-6; 101 along axis 1 on 2 -> 51, 50.
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = split_and_load(_batch(7), ctxs, even_split=False)
    assert [p.context for p in parts] == ctxs
    assert [p.asnumpy()[:, 0].tolist() for p in parts] == [[0, 2, 4], [6, 8], [10, 12]]
    data = mx.nd.arange(202).reshape((2, 101))
    parts = split_and_load(data, CTXS, batch_axis=1, even_split=False)
    assert [p.shape for p in parts] == [(2, 51), (2, 50)]
    np.testing.assert_array_equal(parts[1].asnumpy(), data.asnumpy()[:, 51:])


def test_split_and_load_fewer_rows_than_contexts_gives_empty_trailing_slices():
    # MXNet 1.9.1 on [cpu(0)] * 3: 2 rows -> shapes (1, 1), (1, 1), (0, 1). (Its copy of an empty
    # slice to another device fails; mxrs places the empty slice on its context.)
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = split_and_load(_batch(2), ctxs, even_split=False)
    assert [p.shape for p in parts] == [(1, 2), (1, 2), (0, 2)]
    assert [p.context for p in parts] == ctxs
    assert [p.asnumpy().tolist() for p in parts] == [[[0, 1]], [[2, 3]], []]


def test_split_and_load_accepts_numpy_and_one_context():
    parts = split_and_load(np.arange(8).reshape(4, 2), CTXS)
    assert parts[0].dtype == np.float32 and parts[1].context == mx.cpu(1)
    np.testing.assert_array_equal(parts[1].asnumpy(), [[4, 5], [6, 7]])
    (only,) = split_and_load(_batch(3), [mx.cpu(1)])
    assert only.context == mx.cpu(1) and only.shape == (3, 2)


def test_work_load_list_splits_by_weights():
    parts = split_and_load(_batch(8), CTXS, work_load_list=[3, 1])
    assert [p.shape[0] for p in parts] == [6, 2]
    assert [p.context for p in parts] == CTXS
    np.testing.assert_array_equal(parts[1].asnumpy(), _batch(8).asnumpy()[6:])
    # round() per slice; the last slice takes what rounding left over
    sizes = [p.shape[0] for p in utils.split_data_by_work_load(_batch(10), [1, 1, 1])]
    assert sizes == [3, 3, 4]
    sizes = [p.shape[0] for p in utils.split_data_by_work_load(_batch(8), [1, 1, 1])]
    assert sizes == [3, 3, 2]
    sizes = [p.shape[1] for p in utils.split_data_by_work_load(_batch(2, 8), [1, 3], batch_axis=1)]
    assert sizes == [2, 6]


def test_work_load_list_errors():
    with pytest.raises(MXNetError, match="Too many slices. Some splits are empty"):
        utils.split_data_by_work_load(_batch(2), [1, 1, 1])
    with pytest.raises(MXNetError, match="Too many slices"):  # round(0.5) == 0
        utils.split_data_by_work_load(_batch(2), [1, 3])
    with pytest.raises(MXNetError, match="work_load_list has 3 entries for 2 contexts"):
        split_and_load(_batch(8), CTXS, work_load_list=[1, 1, 1])


def test_clip_global_norm():
    a = mx.nd.array([3.0, 0.0])
    b = mx.nd.array([[0.0], [4.0]], ctx=mx.cpu(1))
    norm = utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(a.asnumpy(), [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy(), [[0.0], [0.8]], rtol=1e-6)
    c = mx.nd.array([0.3, 0.4])
    total = utils.clip_global_norm([c], 10.0, check_isfinite=False)
    assert isinstance(total, mx.nd.NDArray)
    np.testing.assert_allclose(c.asnumpy(), [0.3, 0.4], rtol=1e-6)
    with pytest.warns(UserWarning, match="nan or inf is detected"):
        utils.clip_global_norm([mx.nd.array([np.nan])], 1.0)
