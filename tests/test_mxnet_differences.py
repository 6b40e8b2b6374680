"""Behaviour MXNet 1.x's own tests showed mxrs got differently, now as MXNet does it."""

import mxrs as mx
import numpy as np
import pytest


def test_a_0d_numpy_array_keeps_its_shape():
    assert mx.nd.array(np.ones([])).shape == ()
    assert mx.nd.array(np.ones([])).asnumpy() == 1.0
    assert mx.nd.array(3).shape == (1,)  # a Python scalar is a 1-element array


@pytest.mark.parametrize("relu", [mx.nd.relu, lambda x: mx.nd.Activation(x, act_type="relu")])
def test_relu_passes_nan_to_its_gradient(relu):
    x = mx.nd.array([np.nan, -1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = relu(x)
    y.backward()
    g = x.grad.asnumpy()
    assert np.isnan(g[0]) and g[1:].tolist() == [0.0, 1.0]


def test_an_impossible_reshape_is_a_value_error_and_an_mxnet_error():
    with pytest.raises(ValueError, match=r"Reshape on shapes \(2, 3\)") as e:
        mx.nd.ones((2, 3)).reshape((4, 2))
    assert isinstance(e.value, mx.MXNetError)
    with pytest.raises(mx.base.InvalidShapeError):
        mx.nd.ones((2, 3)) + mx.nd.ones((4,))


def test_equal_initializers_are_equal_for_a_shared_parameter():
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0)
    assert mx.init.Constant(-10.0) != mx.init.Constant(1.0)
    assert mx.init.Xavier() != mx.init.Uniform()
    params = mx.gluon.ParameterDict()
    a = params.get("w", shape=(2,), init=mx.init.Constant(-10.0))
    assert params.get("w", shape=(2,), init=mx.init.Constant(-10.0)) is a
    with pytest.raises(mx.MXNetError, match="attribute 'init'"):
        params.get("w", shape=(2,), init=mx.init.Constant(1.0))


def test_broadcast_operators_take_and_ignore_an_axis():
    a = mx.nd.array([[1.0, 5.0], [3.0, 2.0]])
    got = mx.nd.broadcast_maximum(a, mx.nd.array([[2.0], [2.0]]), axis=1)
    assert got.asnumpy().tolist() == [[2.0, 5.0], [3.0, 2.0]]
    assert mx.nd.broadcast_add(a, 1.0, axis=0).asnumpy().tolist() == [[2.0, 6.0], [4.0, 3.0]]


def test_squeeze_inplace_reshapes_the_array_itself():
    x = mx.nd.array([[[1.0], [2.0], [3.0]]])
    assert x.squeeze(inplace=True) is x and x.shape == (3,)
    assert x.asnumpy().tolist() == [1.0, 2.0, 3.0]
    y = mx.nd.ones((1, 2))
    assert y.squeeze().shape == (2,) and y.shape == (1, 2)
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(mx.MXNetError, match="cannot be recorded"):
            y.squeeze(inplace=True)


def test_a_hybrid_block_takes_a_list_or_none_first_as_mxnet_does():
    class Sum(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, y=None):
            parts = [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]
            if y is not None:
                parts.append(y)
            return F.add_n(*parts)

    block = Sum()
    a, b = mx.nd.ones((2,)), mx.nd.full((2,), 2.0)
    assert block([a, b]).asnumpy().tolist() == [3.0, 3.0]
    assert block(None, b).asnumpy().tolist() == [2.0, 2.0]
    with pytest.raises(mx.MXNetError, match="at least one NDArray among the inputs"):
        block(None, None)


def test_add_n_sums_its_arrays():
    a = mx.nd.array([1.0, 2.0])
    assert mx.nd.add_n(a, a, a).asnumpy().tolist() == [3.0, 6.0]
    single = mx.nd.ElementWiseSum(a)
    assert single.asnumpy().tolist() == [1.0, 2.0] and single is not a
    with pytest.raises(mx.MXNetError, match="at least one NDArray"):
        mx.nd.add_n()


def test_sequential_of_hybrid_blocks_warns_on_hybridize_as_mxnet():
    net = mx.gluon.nn.Sequential()
    net.add(mx.gluon.nn.Dense(2), mx.gluon.nn.Dense(1))
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        net.hybridize()
    mixed = mx.gluon.nn.Sequential()
    mixed.add(mx.gluon.nn.Dense(2), mx.gluon.nn.Lambda(lambda x: x))
    mixed.hybridize()  # a plain Block among the children: no warning (warnings are errors here)
