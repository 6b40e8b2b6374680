"""Indexing ops: getitem gradients (basic and advanced), take/Embedding, pick, one_hot."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd


def test_basic_getitem_grad():
    check_grad(lambda a: a[1:, ::2], [rand(3, 4)])
    check_grad(lambda a: a[1], [rand(3, 4)])
    check_grad(lambda a: a[2, 1], [rand(3, 4)])
    check_grad(lambda a: a[:, None, 1:3], [rand(3, 4)])


def test_advanced_getitem_accumulates_repeated_indices():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x[nd.array([0, 2, 0])]
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 0, 1])
    check_grad(lambda a: a[[2, 0, 2], 1:], [rand(3, 4)])


def test_take_modes_and_grad():
    a = nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(nd.take(a, nd.array([5, -1])).asnumpy(), [[3, 4], [1, 2]])
    np.testing.assert_array_equal(nd.take(a, nd.array([3]), mode="wrap").asnumpy(), [[3, 4]])
    np.testing.assert_array_equal(nd.take(a, nd.array([1, 0]), axis=1).asnumpy(), [[2, 1], [4, 3]])
    with pytest.raises(mx.MXNetError, match="range"):
        nd.take(a, nd.array([2]), mode="raise")
    idx = np.array([[0, 2], [2, 2]])
    check_grad(lambda x, i: nd.take(x, i), [rand(3, 4), idx], nondiff=(1,))
    check_grad(lambda x, i: nd.take(x, i, axis=1), [rand(2, 3, 2), idx], nondiff=(1,))


def test_embedding():
    w = np.arange(6.0).reshape(3, 2)
    got = nd.Embedding(nd.array([0, 2]), nd.array(w), input_dim=3, output_dim=2)
    np.testing.assert_array_equal(got.asnumpy(), [[0, 1], [4, 5]])
    check_grad(
        lambda i, wt: nd.Embedding(i, wt, input_dim=4, output_dim=3),
        [np.array([[1, 3], [1, 0]]), rand(4, 3)],
        nondiff=(0,),
    )


def test_pick():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(nd.pick(nd.array(x), nd.array([0, 1])).asnumpy(), [1, 4])
    np.testing.assert_array_equal(nd.pick(nd.array(x), nd.array([1, 0]), axis=0).asnumpy(), [3, 2])
    assert nd.pick(nd.array(x), nd.array([0, 1]), keepdims=True).shape == (2, 1)
    np.testing.assert_array_equal(nd.pick(nd.array(x), nd.array([5, -3])).asnumpy(), [2, 3])
    check_grad(lambda a, i: nd.pick(a, i), [rand(3, 4), np.array([0, 3, 1])], nondiff=(1,))
    check_grad(
        lambda a, i: nd.pick(a, i, axis=1, keepdims=True),
        [rand(2, 3, 4), np.array([[0, 2, 1, 1], [2, 2, 0, 1]])],
        nondiff=(1,),
    )


def test_one_hot():
    got = nd.one_hot(nd.array([1, 0, 5]), 3)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.asnumpy(), [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    got = nd.one_hot(nd.array([[2]]), 3, on_value=5, off_value=-1, dtype="int32")
    assert got.dtype == np.int32 and got.shape == (1, 1, 3)
    np.testing.assert_array_equal(got.asnumpy(), [[[-1, -1, 5]]])
