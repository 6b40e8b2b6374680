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
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]),
                                  _batch(6).asnumpy())
    assert len(split_data(_batch(4), 1)) == 1


def test_split_data_uneven_follows_the_last_slice_rule():
    assert [p.shape[0] for p in split_data(_batch(7), 3, even_split=False)] == [2, 2, 3]
    assert [p.shape[0] for p in split_data(_batch(10), 4, even_split=False)] == [2, 2, 2, 4]
    # fewer samples than slices: one sample per slice, fewer slices
    assert [p.shape[0] for p in split_data(_batch(2), 4, even_split=False)] == [1, 1]


def test_split_data_uneven_without_permission_is_an_error():
    with pytest.raises(MXNetError, match=r"data with shape \(7, 2\) cannot be evenly split into "
                                         r"3 slices along axis 0. Use a batch size that's "
                                         r"multiple of 3 or set even_split=False"):
        split_data(_batch(7), 3)
    with pytest.raises(ValueError):  # MXNet raises ValueError; ours is both
        split_data(_batch(7), 3)


def test_split_data_along_another_axis():
    data = mx.nd.arange(24).reshape((2, 6, 2))
    parts = split_data(data, 2, batch_axis=1)
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]
    np.testing.assert_array_equal(parts[1].asnumpy(), data.asnumpy()[:, 3:])
    parts = split_data(data, 4, batch_axis=1, even_split=False)
    assert [p.shape[1] for p in parts] == [1, 1, 1, 3]


def test_split_and_load_on_two_contexts():
    data = mx.random.uniform(shape=(100, 10))
    result = split_and_load(data, ctx_list=CTXS)
    assert [r.shape for r in result] == [(50, 10), (50, 10)]
    assert [r.context for r in result] == CTXS
    np.testing.assert_array_equal(result[1].asnumpy(), data.asnumpy()[50:])
    uneven = split_and_load(_batch(5), CTXS, even_split=False)
    assert [r.shape[0] for r in uneven] == [2, 3]
    with pytest.raises(MXNetError, match="cannot be evenly split"):
        split_and_load(_batch(5), CTXS)


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
    sizes = [p.shape[1] for p in utils.split_data_by_work_load(_batch(2, 8), [1, 3],
                                                                  batch_axis=1)]
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
