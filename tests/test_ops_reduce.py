"""Reductions: values against NumPy for axis/keepdims/exclude, gradients, index results."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd

AXES = [None, 0, 1, (0, 2), -1]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
def test_reduce_forward_and_grad(name, axis, keepdims):
    x = rand(2, 3, 4, low=0.5, high=1.5)
    got = getattr(nd, name)(nd.array(x, dtype="float64"), axis=axis, keepdims=keepdims)
    want = np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(got.asnumpy(), want.reshape(want.shape or (1,)), rtol=1e-12)
    check_grad(lambda a: getattr(nd, name)(a, axis=axis, keepdims=keepdims), [x])


def test_full_reduction_is_shape_one_and_exclude():
    assert nd.sum(nd.ones((2, 2))).shape == (1,)
    assert nd.ones((2, 2)).mean().asscalar() == 1
    got = nd.sum(nd.ones((2, 3, 4)), axis=1, exclude=True)
    np.testing.assert_array_equal(got.asnumpy(), [8, 8, 8])
    assert nd.mean(nd.ones((2, 3)), axis=()).shape == (1,)
    assert nd.sum(nd.ones((2, 3)), axis=(0, 1), keepdims=True).shape == (1, 1)
    check_grad(lambda a: nd.mean(a, axis=(0, 2), exclude=True), [rand(2, 3, 4)])


def test_max_gradient_goes_to_every_tie():
    x = nd.array([1.0, 3.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.max(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 1, 1])


def test_norm():
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_allclose(nd.norm(nd.array(x)).asnumpy(), [np.sqrt(30)], rtol=1e-6)
    np.testing.assert_allclose(nd.norm(nd.array(x), ord=1).asnumpy(), [10])
    np.testing.assert_allclose(
        nd.norm(nd.array(x), axis=1).asnumpy(), np.linalg.norm(x, axis=1), rtol=1e-6
    )
    check_grad(lambda a: nd.norm(a), [rand(3, 4)])
    check_grad(lambda a: nd.norm(a, ord=1, axis=0, keepdims=True), [rand(3, 4)])
    with pytest.raises(mx.MXNetError):
        nd.norm(nd.ones((2,)), ord=3)


def test_argmax_argmin_are_float():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    a = nd.argmax(nd.array(x), axis=1)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), [1, 0])
    np.testing.assert_array_equal(nd.argmin(nd.array(x), axis=0).asnumpy(), [0, 1, 0])
    assert nd.argmax(nd.array(x)).asnumpy().tolist() == [3]
    assert nd.array(x).argmax(axis=1, keepdims=True).shape == (2, 1)


def test_topk_variants():
    x = nd.array([[3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(nd.topk(x).asnumpy(), [[0]])
    vals, idx = nd.topk(x, k=2, ret_typ="both")
    np.testing.assert_array_equal(vals.asnumpy(), [[3, 2]])
    np.testing.assert_array_equal(idx.asnumpy(), [[0, 2]])
    np.testing.assert_array_equal(nd.topk(x, k=2, ret_typ="mask").asnumpy(), [[1, 0, 1]])
    np.testing.assert_array_equal(
        nd.topk(x, k=2, is_ascend=True, ret_typ="value").asnumpy(), [[1, 2]]
    )
    y = rand(3, 5, 4)
    got = nd.topk(nd.array(y, dtype="float64"), axis=1, k=2, ret_typ="value").asnumpy()
    np.testing.assert_allclose(got, -np.sort(-y, axis=1)[:, :2])
    check_grad(lambda a: nd.topk(a, axis=1, k=3, ret_typ="value"), [y])
    check_grad(lambda a: nd.topk(a, k=2, ret_typ="both")[0], [rand(2, 5)])
    with pytest.raises(mx.MXNetError):
        nd.topk(x, ret_typ="nope")


def test_sort_and_argsort():
    y = rand(3, 4)
    np.testing.assert_allclose(nd.sort(nd.array(y, dtype="float64")).asnumpy(), np.sort(y))
    np.testing.assert_array_equal(nd.argsort(nd.array(y)).asnumpy(), np.argsort(y))
    check_grad(lambda a: nd.sort(a, axis=0, is_ascend=False), [y])


def test_nansum():
    x = nd.array([1.0, np.nan, 2.0])
    assert nd.nansum(x).asscalar() == 3
    check_grad(lambda a: nd.nansum(a, axis=1), [rand(2, 3)])


def test_axis_out_of_range_raises():
    with pytest.raises(mx.MXNetError, match="axis 1"):
        nd.sum(nd.ones((3,)), axis=1)
    with pytest.raises(mx.MXNetError, match="axis 2"):
        nd.concat(nd.ones((2, 2)), nd.ones((2, 2)), dim=2)
    with pytest.raises(mx.MXNetError, match="axis -3"):
        nd.softmax_ce_loss(nd.ones((2, 2)), nd.ones((2,)), axis=-3)
    assert nd.sum(nd.ones((2, 3)), axis=-1).shape == (2,)
