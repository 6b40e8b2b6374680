"""The NDArray class: creation, dtypes, conversions, repr, indexing and in-place updates."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import nd


def test_creation_defaults_to_float32():
    assert nd.array([1, 2]).dtype == np.float32
    assert nd.array(np.arange(3)).dtype == np.float32
    assert nd.array(np.arange(3.0)).dtype == np.float32
    assert nd.array([1, 2], dtype="int32").dtype == np.int32
    assert nd.array(nd.array([1, 2], dtype="int32")).dtype == np.int32
    assert nd.zeros((2, 3)).dtype == np.float32 and nd.ones(3, dtype=np.float64).dtype == np.float64
    assert nd.arange(3).dtype == np.float32
    assert nd.array(5).shape == (1,)
    assert nd.zeros(4).shape == (4,)


def test_creation_values():
    np.testing.assert_array_equal(nd.full((2,), 3).asnumpy(), [3, 3])
    np.testing.assert_array_equal(nd.arange(2, 6, 2, repeat=2).asnumpy(), [2, 2, 4, 4])
    np.testing.assert_array_equal(nd.arange(3).asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal(nd.eye(2).asnumpy(), np.eye(2))
    a = nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(nd.zeros_like(a).asnumpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(a.ones_like().asnumpy(), np.ones((2, 2)))
    assert nd.empty((2, 2)).shape == (2, 2)
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))


def test_attributes():
    a = nd.ones((2, 3))
    assert a.shape == (2, 3) and a.size == 6 and a.ndim == 2 and len(a) == 2
    assert a.context == mx.cpu(0) and a.ctx == mx.cpu(0) and a.stype == "default"
    assert a.T.shape == (3, 2)
    assert a.dtype is np.float32


def test_repr_like_mxnet():
    assert repr(nd.array([[1, 2]])) == "\n[[1. 2.]]\n<NDArray 1x2 @cpu(0)>"
    assert str(nd.array([1], ctx=mx.cpu(1))) == "\n[1.]\n<NDArray 1 @cpu(1)>"


def test_asscalar_and_conversions():
    assert nd.array([3.5]).asscalar() == np.float32(3.5)
    assert isinstance(nd.ones((1,)).asscalar(), np.float32)
    with pytest.raises(ValueError, match="not a scalar"):
        nd.ones((2,)).asscalar()
    assert float(nd.array([2])) == 2.0 and int(nd.array([7])) == 7
    assert bool(nd.array([1])) and not bool(nd.array([0]))
    with pytest.raises(ValueError):
        bool(nd.ones((2,)))
    a = nd.array([1, 2])
    host = a.asnumpy()
    host[0] = 9
    assert a.asnumpy()[0] == 1  # asnumpy returns a copy
    b = a.astype("int32")
    assert b.dtype == np.int32 and a.astype(np.float32, copy=False) is a
    a.wait_to_read()
    nd.waitall()


def test_comparisons_return_zero_one_in_lhs_dtype():
    a = nd.array([1, 2, 3])
    r = a > 1
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.asnumpy(), [0, 1, 1])
    np.testing.assert_array_equal((a == 2).asnumpy(), [0, 1, 0])
    np.testing.assert_array_equal((a != 2).asnumpy(), [1, 0, 1])
    np.testing.assert_array_equal((a <= 2).asnumpy(), [1, 1, 0])
    np.testing.assert_array_equal((2 < a).asnumpy(), [0, 0, 1])
    np.testing.assert_array_equal((a >= nd.array([3, 2, 1])).asnumpy(), [0, 1, 1])
    i = nd.array([1, 2], dtype="int32") == 1
    assert i.dtype == np.int32


def test_arithmetic_with_scalars_and_reflected():
    a = nd.array([1, 2])
    np.testing.assert_allclose((a**2).asnumpy(), [1, 4])
    np.testing.assert_allclose((2**a).asnumpy(), [2, 4])
    np.testing.assert_allclose((1 / a).asnumpy(), [1, 0.5])
    np.testing.assert_allclose((3 - a).asnumpy(), [2, 1])
    np.testing.assert_allclose((-a).asnumpy(), [-1, -2])
    np.testing.assert_allclose((a % 2).asnumpy(), [1, 0])
    np.testing.assert_allclose(abs(nd.array([-1.5])).asnumpy(), [1.5])
    assert (a * np.float64(2.0)).dtype == np.float32  # NumPy scalars keep float32
    np.testing.assert_array_equal((nd.array([7, -7], dtype="int32") / 2).asnumpy(), [3, -3])


def test_broadcasting_binary_ops():
    x, y = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3) + 1
    a, b = nd.array(x), nd.array(y)
    np.testing.assert_allclose((a + b).asnumpy(), x + y)
    np.testing.assert_allclose((a / b).asnumpy(), x / y, rtol=1e-6)
    np.testing.assert_allclose((nd.ones((3,)) + nd.ones((2, 1))).asnumpy(), np.full((2, 3), 2))


def test_inplace_operators_mutate():
    a = nd.array([1, 2, 3])
    alias = a
    a += 1
    a *= 2
    a -= nd.array([1, 1, 1])
    a /= 2
    assert alias is a
    np.testing.assert_allclose(a.asnumpy(), [1.5, 2.5, 3.5])


def test_getitem_and_setitem():
    x = np.arange(12.0).reshape(3, 4)
    a = nd.array(x)
    np.testing.assert_array_equal(a[1].asnumpy(), x[1])
    assert a[1, 2].shape == (1,) and a[1, 2].asscalar() == 6
    assert nd.array([1, 2, 3])[0].shape == (1,)
    np.testing.assert_array_equal(a[:, 1:3].asnumpy(), x[:, 1:3])
    np.testing.assert_array_equal(a[nd.array([0, 2])].asnumpy(), x[[0, 2]])
    np.testing.assert_array_equal(a[[2, 0], 1].asnumpy(), x[[2, 0], 1])
    a[0] = 5
    a[:, 1] = nd.array([7, 8, 9])
    a[2, 2:] = np.array([-1, -2])
    x[0] = 5
    x[:, 1] = [7, 8, 9]
    x[2, 2:] = [-1, -2]
    np.testing.assert_array_equal(a.asnumpy(), x)
    b = nd.zeros((3,), ctx=mx.cpu(1))
    b[:] = nd.array([1, 2, 3])  # copies across contexts, as copyto does
    np.testing.assert_array_equal(b.asnumpy(), [1, 2, 3])
    assert [v.asscalar() for v in nd.array([4, 5])] == [4, 5]


def test_save_and_load(tmp_path):
    f = str(tmp_path / "arrays")
    nd.save(f, {"w": nd.array([1, 2]), "b": nd.array([[3]], dtype="int32")})
    got = nd.load(f)
    assert set(got) == {"w", "b"} and got["b"].dtype == np.int32
    np.testing.assert_array_equal(got["w"].asnumpy(), [1, 2])
    nd.save(f, [nd.ones((2,)), nd.zeros((1,))])
    got = nd.load(f)
    assert isinstance(got, list) and got[0].shape == (2,) and got[1].asscalar() == 0


def test_ndarray_constructor_and_detach():
    a = nd.NDArray([1, 2], ctx=mx.cpu(1))
    assert a.context == mx.cpu(1) and a.dtype == np.float32
    d = a.detach()
    assert d.asnumpy().tolist() == [1, 2]


def test_setitem_broadcasts_a_value_with_extra_leading_ones_as_mxnet():
    x = nd.zeros((3,))
    x[0] = nd.array([5.0])  # one element into one slot, as MXNet allows
    y = nd.zeros((3, 4))
    y[1] = nd.array([[7.0]])
    np.testing.assert_array_equal(x.asnumpy(), [5, 0, 0])
    np.testing.assert_array_equal(y.asnumpy()[1], [7, 7, 7, 7])
    with pytest.raises(ValueError):
        x[0] = nd.array([5.0, 6.0])  # two elements do not fit one slot
    np.testing.assert_array_equal(x.asnumpy(), [5, 0, 0])
