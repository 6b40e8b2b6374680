"""Binary elementwise ops and comparisons: forward values with broadcasting, gradients."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd

SHAPES = [((2, 3), (2, 3)), ((2, 3), (1, 3)), ((4, 1, 3), (2, 1)), ((3,), (2, 3))]


@pytest.mark.parametrize("sa,sb", SHAPES)
@pytest.mark.parametrize(
    "name,ref",
    [
        ("add", np.add),
        ("subtract", np.subtract),
        ("multiply", np.multiply),
        ("divide", np.divide),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
    ],
)
def test_binary_forward_and_grad(name, ref, sa, sb):
    a, b = rand(*sa), rand(*sb, low=0.5, high=2.0)
    fn = getattr(nd, name)
    d = np.float64
    np.testing.assert_allclose(fn(nd.array(a, dtype=d), nd.array(b, dtype=d)).asnumpy(), ref(a, b))
    check_grad(fn, [a, b])


def test_power_and_modulo_grads():
    a, b = rand(2, 3, low=0.5, high=2.0), rand(2, 3, low=-1, high=2)
    np.testing.assert_allclose(nd.power(nd.array(a), nd.array(b)).asnumpy(), a**b, rtol=1e-5)
    check_grad(nd.power, [a, b])
    check_grad(lambda x: x**3, [rand(4)])
    check_grad(lambda x: x**2, [rand(4)])
    check_grad(lambda x: 2.5**x, [rand(4)])
    check_grad(lambda x, y: x % y, [rand(5, low=2, high=3), np.full(5, 0.7)])
    check_grad(lambda x: 3.0 % x, [rand(5, low=2.1, high=2.9)])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + 2,
        lambda x: 2 + x,
        lambda x: x - 2,
        lambda x: 2 - x,
        lambda x: x * 3,
        lambda x: 3 * x,
        lambda x: x / 4,
        lambda x: 4 / x,
        lambda x: -x,
        lambda x: nd.maximum(x, 1.2),
        lambda x: nd.minimum(x, 1.2),
        lambda x: x % 0.3,
    ],
)
def test_scalar_ops_grad(fn):
    check_grad(fn, [rand(2, 3, low=0.5, high=2.0)])


def test_scalar_forward_values():
    x = np.array([1.0, 2.0, 4.0])
    a = nd.array(x)
    np.testing.assert_allclose((a - 1).asnumpy(), x - 1)
    np.testing.assert_allclose((1 - a).asnumpy(), 1 - x)
    np.testing.assert_allclose((8 / a).asnumpy(), 8 / x)
    np.testing.assert_allclose(nd.maximum(a, 2).asnumpy(), [2, 2, 4])
    np.testing.assert_allclose(nd.minimum(2, a).asnumpy(), [1, 2, 2])


def test_maximum_minimum_tie_sends_gradient_to_lhs():
    x = nd.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.maximum(x, 0) + nd.minimum(x, 0) * 3
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 3, 4, 1, 1])


def test_comparisons_do_not_propagate_gradient():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x > 1.5) * x + (x == nd.array([1.0, 0.0]))
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [0, 1])


def test_numpy_operand_is_converted():
    a = nd.array([1, 2], ctx=mx.cpu(1))
    r = a + np.array([1.0, 1.0])
    assert r.context == mx.cpu(1) and r.dtype == np.float32
    np.testing.assert_allclose(r.asnumpy(), [2, 3])


def test_aliases():
    a, b = nd.array([1, 2]), nd.array([3, 4])
    assert nd.broadcast_add(a, b).asnumpy().tolist() == [4, 6]
    assert nd.elemwise_mul(a, b).asnumpy().tolist() == [3, 8]
    assert nd.broadcast_minimum(a, b).asnumpy().tolist() == [1, 2]
    assert nd.add(1, 2) == 3  # two numbers give a number, as in MXNet
    with pytest.raises(TypeError):
        nd.add("1", 2)


def test_incompatible_shapes_raise_mxnet_error():
    with pytest.raises(mx.MXNetError, match=r"\(4, 3\).*\(2, 3\)"):
        nd.ones((4, 3)) + nd.ones((2, 3))


def test_modulo_takes_the_divisor_sign():
    x = nd.array([-3.5, 3.5, -1.0])
    np.testing.assert_allclose((x % 2).asnumpy(), [0.5, 1.5, 1.0])
    np.testing.assert_allclose((5 % nd.array([-3.0, 3.0])).asnumpy(), [-1, 2])
    np.testing.assert_allclose(nd.modulo(x, nd.array([-2.0])).asnumpy(), [-1.5, -0.5, -1.0])


def test_integer_division_truncates_and_keeps_dtype():
    a, b = nd.array([7, -7], dtype="int32"), nd.array([2, 2], dtype="int32")
    r = a / b
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [3, -3])
