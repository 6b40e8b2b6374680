"""dot, batch_dot and FullyConnected: values against NumPy and gradients."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_2d(ta, tb):
    a, b = rand(3, 4), rand(4, 5, seed=1)
    a_in, b_in = (a.T if ta else a), (b.T if tb else b)
    got = nd.dot(
        nd.array(a_in, dtype="float64"),
        nd.array(b_in, dtype="float64"),
        transpose_a=ta,
        transpose_b=tb,
    )
    np.testing.assert_allclose(got.asnumpy(), a @ b, rtol=1e-12)
    check_grad(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a_in, b_in])


def test_dot_nd_and_vectors():
    a, b = rand(2, 3, 4), rand(4, 5, seed=1)
    np.testing.assert_allclose(
        nd.dot(nd.array(a, dtype="float64"), nd.array(b, dtype="float64")).asnumpy(),
        np.tensordot(a, b, axes=1),
        rtol=1e-12,
    )
    check_grad(nd.dot, [a, b])
    u, v = rand(4), rand(4, seed=3)
    r = nd.dot(nd.array(u), nd.array(v))
    assert r.shape == (1,)
    check_grad(nd.dot, [u, v])
    check_grad(nd.dot, [u, rand(4, 2)])
    with pytest.raises(mx.MXNetError, match="align"):
        nd.dot(nd.ones((2, 3)), nd.ones((2, 3)))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_batch_dot(ta, tb):
    a, b = rand(2, 3, 4), rand(2, 4, 5, seed=1)
    a_in = a.transpose(0, 2, 1) if ta else a
    b_in = b.transpose(0, 2, 1) if tb else b
    got = nd.batch_dot(
        nd.array(a_in, dtype="float64"),
        nd.array(b_in, dtype="float64"),
        transpose_a=ta,
        transpose_b=tb,
    )
    np.testing.assert_allclose(got.asnumpy(), a @ b, rtol=1e-12)
    check_grad(lambda x, y: nd.batch_dot(x, y, transpose_a=ta, transpose_b=tb), [a_in, b_in])


def test_fully_connected():
    x, w, b = rand(4, 2, 3), rand(5, 6, seed=1), rand(5, seed=2)
    got = nd.FullyConnected(
        nd.array(x, dtype="float64"),
        nd.array(w, dtype="float64"),
        nd.array(b, dtype="float64"),
        num_hidden=5,
    )
    np.testing.assert_allclose(got.asnumpy(), x.reshape(4, 6) @ w.T + b, rtol=1e-12)
    check_grad(lambda d, wt, bias: nd.FullyConnected(d, wt, bias, num_hidden=5), [x, w, b])
    check_grad(lambda d, wt: nd.FullyConnected(d, wt, num_hidden=5, no_bias=True), [x, w])
    w3 = rand(2, 3, seed=4)
    got = nd.FullyConnected(nd.array(x), nd.array(w3), num_hidden=2, no_bias=True, flatten=False)
    assert got.shape == (4, 2, 2)
    np.testing.assert_allclose(got.asnumpy(), x @ w3.T, rtol=1e-5)
    check_grad(
        lambda d, wt, bias: nd.FullyConnected(d, wt, bias, num_hidden=2, flatten=False),
        [x, w3, rand(2)],
    )
