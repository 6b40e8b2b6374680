"""MXNet's ``out=`` and ``name=`` keywords on the operators, NumPy's functions on NDArrays, and
operators given two numbers."""

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError


def test_out_writes_the_result_into_the_array_given_and_returns_it():
    x = mx.nd.array([[1.0, -5.0, 2.0], [7.0, 0.0, 1.0]])
    out = mx.nd.zeros((2, 3))
    assert mx.nd.square(x, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy() ** 2)
    total = mx.nd.zeros((3,))
    assert mx.nd.sum(x, axis=0, out=total, name="s") is total
    np.testing.assert_array_equal(total.asnumpy(), [8.0, -5.0, 3.0])
    idx = mx.nd.zeros((2,))
    assert x.argmax(axis=1, out=idx) is idx
    np.testing.assert_array_equal(idx.asnumpy(), [2.0, 0.0])
    # An op of two outputs writes both.
    vals, ids = mx.nd.zeros((2, 1)), mx.nd.zeros((2, 1))
    got = mx.nd.topk(x, k=1, ret_typ="both", out=[vals, ids])
    assert got[0] is vals and got[1] is ids
    np.testing.assert_array_equal(vals.asnumpy(), [[2.0], [7.0]])
    with pytest.raises(MXNetError, match="out= holds 1 arrays but the op returns 2"):
        mx.nd.topk(x, k=1, ret_typ="both", out=vals)


def test_every_operator_takes_out_but_these():
    """Which functions of ``mx.nd`` take ``out=``: all operators but the symbolic API's output
    layers, the creation and I/O functions and the lower-case layer aliases."""
    import inspect

    plain = set()
    for name in dir(mx.nd):
        fn = getattr(mx.nd, name)
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        if not (getattr(fn, "_takes_out", False) or "out" in inspect.signature(fn).parameters):
            plain.add(name)
    assert plain == {
        "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "MakeLoss",
        "SVMOutput", "make_loss", "activation", "arange", "array", "batch_norm", "cast_storage",
        "convolution", "dropout", "embedding", "empty", "eye", "from_dlpack", "full_like",
        "fully_connected", "layer_norm", "leaky_relu", "linspace", "load", "pooling",
        "save", "shuffle", "to_dlpack_for_read", "to_dlpack_for_write", "waitall",
    }  # fmt: skip


def test_numpy_functions_call_the_arrays_own_methods():
    x = mx.nd.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    np.testing.assert_array_equal(np.argmax(x, axis=1).asnumpy(), [1.0, 0.0])
    assert np.sum(x).asscalar() == 16.0


def test_operators_on_two_numbers_give_a_number():
    assert mx.nd.power(0.9, 2) == pytest.approx(0.81)
    assert mx.nd.add(1, 2) == 3 and mx.nd.maximum(2.0, 3) == 3
    with pytest.raises(TypeError, match="expected an NDArray operand"):
        mx.nd.add("a", 2)
