"""Shape ops: reshape codes, transposes, axes, broadcasting, joining, splitting, slicing."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd


@pytest.mark.parametrize(
    "spec,want",
    [
        ((0, -1), (2, 12)),
        ((-3, 4), (6, 4)),
        ((6, 4), (6, 4)),
        ((-4, 1, 2, -2), (1, 2, 3, 4)),
        ((0, -2), (2, 3, 4)),
        ((-1,), (24,)),
        ((2, -4, -1, 3, 4), (2, 1, 3, 4)),
    ],
)
def test_reshape_special_codes(spec, want):
    assert nd.ones((2, 3, 4)).reshape(spec).shape == want


def test_reshape_forms_and_grad():
    a = nd.ones((2, 3, 4))
    assert a.reshape(6, 4).shape == (6, 4) and a.reshape(shape=(4, 6)).shape == (4, 6)
    assert nd.reshape(a, shape=(0, -1)).shape == (2, 12)
    assert nd.reshape(a, (-1, 0), reverse=True).shape == (6, 4)
    check_grad(
        lambda x: nd.reshape(x, (3, -1)) * nd.array(np.arange(8.0), dtype="float64"),
        [rand(2, 3, 4)],
    )
    with pytest.raises(mx.MXNetError, match="reshape"):
        a.reshape((5, 5))


def test_flatten_transpose_swapaxes():
    x = rand(2, 3, 4)
    assert nd.Flatten(nd.array(x)).shape == (2, 12) and nd.flatten(nd.array(x)).shape == (2, 12)
    np.testing.assert_allclose(nd.transpose(nd.array(x, dtype="float64")).asnumpy(), x.T)
    np.testing.assert_allclose(
        nd.transpose(nd.array(x, dtype="float64"), axes=(1, 0, 2)).asnumpy(), x.transpose(1, 0, 2)
    )
    check_grad(lambda a: nd.transpose(a, axes=(2, 0, 1)), [x])
    check_grad(lambda a: nd.swapaxes(a, 0, 2), [x])
    check_grad(nd.flatten, [x])


def test_expand_dims_squeeze():
    assert nd.expand_dims(nd.ones((2,)), axis=1).shape == (2, 1)
    assert nd.expand_dims(nd.ones((2, 3)), axis=-1).shape == (2, 3, 1)
    assert nd.squeeze(nd.ones((1, 2, 1))).shape == (2,)
    assert nd.squeeze(nd.ones((1, 2, 1)), axis=0).shape == (2, 1)
    assert nd.squeeze(nd.ones((1, 1))).shape == (1,)
    with pytest.raises(mx.MXNetError):
        nd.squeeze(nd.ones((2, 3)), axis=0)
    check_grad(lambda a: nd.squeeze(nd.expand_dims(a, 0)), [rand(2, 3)])


def test_broadcast_to_and_like():
    assert nd.broadcast_to(nd.ones((2, 1)), shape=(0, 3)).shape == (2, 3)
    np.testing.assert_allclose(
        nd.broadcast_like(nd.array([[1.0], [2.0]]), nd.ones((2, 3))).asnumpy(),
        [[1, 1, 1], [2, 2, 2]],
    )
    check_grad(lambda a: nd.broadcast_to(a, (4, 2, 3)), [rand(2, 1)])


def test_concat_and_stack():
    a, b = rand(2, 3), rand(2, 2, seed=1)
    got = nd.concat(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"))
    np.testing.assert_allclose(got.asnumpy(), np.concatenate([a, b], axis=1))
    assert nd.concat(nd.ones((2, 2)), nd.ones((1, 2)), dim=0).shape == (3, 2)
    check_grad(lambda x, y: nd.concat(x, y, dim=1), [a, b])
    c = rand(2, 3, seed=2)
    np.testing.assert_allclose(
        nd.stack(nd.array(a, dtype="float64"), nd.array(c, dtype="float64"), axis=1).asnumpy(),
        np.stack([a, c], axis=1),
    )
    check_grad(lambda x, y: nd.stack(x, y, axis=2), [a, c])
    assert nd.stack([nd.ones(2), nd.ones(2)]).shape == (2, 2)


def test_split():
    x = rand(2, 6)
    parts = nd.split(nd.array(x, dtype="float64"), num_outputs=3)
    assert len(parts) == 3 and parts[1].shape == (2, 2)
    np.testing.assert_allclose(parts[2].asnumpy(), x[:, 4:])
    sq = nd.split(nd.array(rand(3, 2)), num_outputs=3, axis=0, squeeze_axis=True)
    assert sq[0].shape == (2,)
    assert isinstance(nd.split(nd.ones((2, 2)), num_outputs=1), nd.NDArray)
    check_grad(lambda a: nd.split(a, 3)[0] * 2 + nd.split(a, 3)[2], [x])
    check_grad(lambda a: nd.split(a, 2, axis=0, squeeze_axis=True)[1], [rand(2, 3)])
    with pytest.raises(mx.MXNetError, match="divisible"):
        nd.split(nd.ones((2, 5)), num_outputs=2)


def test_slice_and_slice_axis():
    x = rand(4, 5)
    got = nd.slice(nd.array(x, dtype="float64"), begin=(1, None), end=(3, None))
    np.testing.assert_allclose(got.asnumpy(), x[1:3])
    got = nd.slice(nd.array(x, dtype="float64"), begin=(0, 1), end=(4, 5), step=(2, 2))
    np.testing.assert_allclose(got.asnumpy(), x[0:4:2, 1:5:2])
    np.testing.assert_allclose(
        nd.slice_axis(nd.array(x, dtype="float64"), axis=1, begin=1, end=-1).asnumpy(), x[:, 1:-1]
    )
    check_grad(lambda a: nd.slice(a, begin=(1, 0), end=(3, 4)), [x])
    check_grad(lambda a: nd.slice_axis(a, axis=0, begin=2, end=None), [x])


def test_tile_repeat_flip():
    x = rand(2, 3)
    np.testing.assert_allclose(
        nd.tile(nd.array(x, dtype="float64"), (2, 1, 2)).asnumpy(), np.tile(x, (2, 1, 2))
    )
    np.testing.assert_allclose(
        nd.repeat(nd.array(x, dtype="float64"), 2, axis=1).asnumpy(), np.repeat(x, 2, axis=1)
    )
    np.testing.assert_allclose(nd.flip(nd.array(x, dtype="float64"), axis=1).asnumpy(), x[:, ::-1])
    check_grad(lambda a: nd.tile(a, (2, 2)), [x])
    check_grad(lambda a: nd.repeat(a, 3, axis=0), [x])
    check_grad(lambda a: nd.repeat(a, 2), [x])
    check_grad(lambda a: nd.flip(a, axis=(0, 1)), [x])
