"""bfloat16 NDArrays on CPU (``ml_dtypes``' dtype): creation, MXNet's two roundings (``Cast``
drops the low bits, ``amp_cast`` rounds to nearest even), operators computed in float32 and
rounded back, gradients, ``.params`` files (type flag 12), symbols, and the refusal on GPUs."""

import ml_dtypes
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import _bfloat16, autograd
from mxrs.base import MXNetError

BF16 = np.dtype(ml_dtypes.bfloat16)
# halfway cases, values rounding up or down, overflow to inf, NaN, negative numbers
VALUES = np.array(
    [1.0, 1.00390625, 1.01171875, 3.14159, -2.5e-3, 65504.0, 1e38, 3.3e38, -7.0e-20, 0.0],
    dtype=np.float32,
)


def _bits(a):
    return np.asarray(a).view(np.uint16)


def test_creation_rounds_float32_to_nearest_even():
    x = mx.nd.array(VALUES, dtype="bfloat16")
    assert x.dtype is ml_dtypes.bfloat16 and x.asnumpy().dtype == BF16
    np.testing.assert_array_equal(_bits(x.asnumpy()), _bits(VALUES.astype(BF16)))
    # a double is first made float32, as an array then amp_cast would make it
    y = mx.nd.array([1 + 2.0**-8 + 2.0**-30], dtype="bfloat16")
    assert y.asnumpy().astype(np.float32)[0] == 1.0  # not 1 + 2**-7, the direct rounding
    assert mx.nd.zeros((2, 3), dtype="bfloat16").asnumpy().dtype == BF16
    assert mx.nd.ones((2,), dtype=BF16).asnumpy().astype(np.float32).tolist() == [1.0, 1.0]
    assert (
        mx.nd.full((2,), 2.5, dtype="bfloat16").asnumpy().astype(np.float32).tolist() == [2.5] * 2
    )


def test_cast_truncates_and_amp_cast_rounds_as_mxnet(tmp_path):
    script = """
    import mxnet as mx
    bf = np.dtype([("bfloat16", np.uint16)])
    x = mx.nd.array(inputs["x"])
    arrays["cast"] = mx.nd.Cast(x, dtype=bf).asnumpy().view(np.uint16)
    arrays["astype"] = x.astype(bf).asnumpy().view(np.uint16)
    arrays["amp"] = mx.nd.amp_cast(x, dtype=bf).asnumpy().view(np.uint16)
    y = mx.nd.amp_cast(x, dtype=bf)
    arrays["back"] = mx.nd.amp_cast(y, dtype="float32").asnumpy()
    arrays["sum"] = mx.nd.amp_cast(y[:6] + y[:6], dtype="float32").asnumpy()
    """
    _, want = mxnet_ref.run(tmp_path, script, x=VALUES)
    x = mx.nd.array(VALUES)
    np.testing.assert_array_equal(_bits(mx.nd.Cast(x, dtype="bfloat16").asnumpy()), want["cast"])
    np.testing.assert_array_equal(_bits(x.astype("bfloat16").asnumpy()), want["astype"])
    y = mx.nd.amp_cast(x, dtype="bfloat16")
    np.testing.assert_array_equal(_bits(y.asnumpy()), want["amp"])
    np.testing.assert_array_equal(mx.nd.amp_cast(y, dtype="float32").asnumpy(), want["back"])
    np.testing.assert_array_equal(y.astype("float32").asnumpy(), want["back"])
    np.testing.assert_array_equal((y[:6] + y[:6]).astype("float32").asnumpy(), want["sum"])
    assert (y[:6] + y[:6]).dtype is ml_dtypes.bfloat16


def test_truncation_keeps_nan_and_infinities():
    x = np.array([np.nan, np.inf, -np.inf, 1.9999999], np.float32)
    t = _bfloat16.truncate(x).astype(np.float32)
    assert np.isnan(t[0]) and t[1] == np.inf and t[2] == -np.inf and t[3] == 1.9921875


def test_operators_compute_in_float32_and_round_back():
    a = np.array([[0.1, -2.3, 3.7], [1e-3, 5.5, -0.25]], np.float32)
    x = mx.nd.array(a, dtype="bfloat16")
    xf = x.asnumpy().astype(np.float32)
    for got, want in [
        (mx.nd.exp(x), np.exp(xf)),
        (x * 3 + 1, xf * 3 + 1),
        (mx.nd.relu(x), np.maximum(xf, 0)),
        (x.sum(axis=1), xf.sum(axis=1)),
        (mx.nd.dot(x, x.T), xf @ xf.T),
    ]:
        assert got.dtype is ml_dtypes.bfloat16
        np.testing.assert_array_equal(_bits(got.asnumpy()), _bits(want.astype(BF16)))
    # integer results stay integers; a float32 first input keeps float32
    assert mx.nd.shape_array(x).dtype == np.int64
    assert (mx.nd.array(a) + x).dtype == np.float32
    # the overflow check sees bfloat16 infinities
    assert mx.nd.all_finite(x).asscalar() == 1
    assert mx.nd.all_finite(mx.nd.array([np.inf], dtype="bfloat16")).asscalar() == 0


def test_gradients_of_bfloat16_inputs_are_bfloat16():
    x = mx.nd.array([0.5, -1.25, 3.0], dtype="bfloat16")
    w = mx.nd.array([2.0, 3.0, 4.0])  # float32 weight beside bfloat16 data
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = (x * w).sum()
    y.backward()
    assert x.grad.dtype is ml_dtypes.bfloat16 and w.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.asnumpy().astype(np.float32), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(w.grad.asnumpy(), [0.5, -1.25, 3.0])
    # a cast's gradient goes back to the source type
    z = mx.nd.array([1.0, 2.0])
    z.attach_grad()
    with autograd.record():
        u = mx.nd.cast(z, dtype="bfloat16") * 3
    u.backward()
    assert z.grad.dtype == np.float32 and z.grad.asnumpy().tolist() == [3.0, 3.0]


def test_params_files_round_trip_and_match_mxnet(tmp_path):
    x = mx.nd.array(VALUES, dtype="bfloat16")
    ours = tmp_path / "ours.params"
    mx.nd.save(str(ours), {"w": x, "f": mx.nd.array([1.5, 2.5])})
    back = mx.nd.load(str(ours))
    assert back["w"].dtype is ml_dtypes.bfloat16
    np.testing.assert_array_equal(_bits(back["w"].asnumpy()), _bits(x.asnumpy()))
    script = """
    import mxnet as mx
    bf = np.dtype([("bfloat16", np.uint16)])
    loaded = mx.nd.load("ours.params")
    arrays["loaded"] = loaded["w"].asnumpy().view(np.uint16)
    result = str(loaded["w"].dtype)
    mx.nd.save("theirs.params", {"w": mx.nd.amp_cast(mx.nd.array(inputs["x"]), dtype=bf)})
    """
    result, want = mxnet_ref.run(tmp_path, script, x=VALUES)
    assert "bfloat16" in result
    np.testing.assert_array_equal(want["loaded"], _bits(x.asnumpy()))
    theirs = mx.nd.load(str(tmp_path / "theirs.params"))["w"]
    assert theirs.dtype is ml_dtypes.bfloat16
    np.testing.assert_array_equal(_bits(theirs.asnumpy()), _bits(VALUES.astype(BF16)))


def test_cast_in_symbols():
    data = mx.sym.var("data")
    net = mx.sym.Cast(data, dtype="bfloat16") * 2
    _, out_types, _ = net.infer_type(data="float32")
    assert out_types == [ml_dtypes.bfloat16]
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(VALUES[:4])})
    got = ex.forward()[0]
    assert got.dtype is ml_dtypes.bfloat16
    want = _bfloat16.truncate(VALUES[:4]).astype(np.float32) * 2
    np.testing.assert_array_equal(got.asnumpy().astype(np.float32), want)
    assert '"dtype": "bfloat16"' in net.tojson()


def test_local_store_sums_bfloat16():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros((2,), dtype="bfloat16"))
    kv.push(
        3, [mx.nd.array([1.5, 2.0], dtype="bfloat16"), mx.nd.array([0.5, 1.0], dtype="bfloat16")]
    )
    out = mx.nd.zeros((2,), dtype="bfloat16")
    kv.pull(3, out=out)
    assert out.asnumpy().astype(np.float32).tolist() == [2.0, 3.0]


def test_gpu_arrays_refuse_bfloat16_clearly():
    class FakeCupy:
        pass

    with pytest.raises(MXNetError, match="bfloat16 arrays are supported on CPU contexts only"):
        _bfloat16.check_backend(FakeCupy(), "bfloat16", "creating an array")
    _bfloat16.check_backend(FakeCupy(), "float16", "creating an array")  # other types pass
    assert _bfloat16.is_bfloat16("bfloat16") and not _bfloat16.is_bfloat16("float32")
    assert not _bfloat16.is_bfloat16("no such type")
