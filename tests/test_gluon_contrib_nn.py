"""mx.gluon.contrib.nn against Apache MXNet 1.9.1: the concurrent containers, Identity,
SparseEmbedding, SyncBatchNorm and the pixel-shuffle layers, forward and gradients with the same
weights and output gradients; and the errors bad arguments raise."""

import warnings

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon import nn
from mxrs.gluon.contrib.nn import (
    Concurrent,
    HybridConcurrent,
    Identity,
    PixelShuffle1D,
    PixelShuffle2D,
    PixelShuffle3D,
    SparseEmbedding,
    SyncBatchNorm,
)

RNG = np.random.default_rng(3)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


_CONCURRENT = """
nn = mx.gluon.nn
Concurrent, HybridConcurrent = mx.gluon.contrib.nn.Concurrent, mx.gluon.contrib.nn.HybridConcurrent
Identity = mx.gluon.contrib.nn.Identity
for kind in ("plain", "hybrid", "hybridized"):
    net = Concurrent(axis=1) if kind == "plain" else HybridConcurrent(axis=1)
    net.add(nn.Dense(3, activation="tanh", in_units=4), nn.Dense(2, in_units=4), Identity())
    net.initialize()
    for i in range(2):
        net[i].weight.set_data(mx.nd.array(inputs["w%d" % i]))
        net[i].bias.set_data(mx.nd.array(inputs["b%d" % i]))
    if kind == "hybridized":
        net.hybridize()
    x = mx.nd.array(inputs["x"])
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward(mx.nd.array(inputs["dy"]))
    arrays[kind + "_y"] = y.asnumpy()
    arrays[kind + "_dx"] = x.grad.asnumpy()
    arrays[kind + "_dw0"] = net[0].weight.grad().asnumpy()
    arrays[kind + "_db1"] = net[1].bias.grad().asnumpy()
"""


def test_concurrent_matches_mxnet(tmp_path):
    inputs = {
        "x": _f32(5, 4),
        "w0": _f32(3, 4),
        "b0": _f32(3),
        "w1": _f32(2, 4),
        "b1": _f32(2),
        "dy": _f32(5, 9),
    }
    want = mxnet_ref.check_body(tmp_path, _CONCURRENT, inputs, rtol=1e-5, atol=1e-6)
    assert want["plain_y"].shape == (5, 9)


def test_hybrid_concurrent_symbol_and_axis():
    net = HybridConcurrent(axis=-1)
    net.add(nn.Dense(3, in_units=4), nn.Dense(2, in_units=4))
    y = net(mx.sym.var("data"))
    assert len(y.list_arguments()) == 5
    net.initialize()
    assert net(mx.nd.ones((2, 4))).shape == (2, 5)
    assert Identity()(mx.nd.ones((2, 3))).asnumpy().tolist() == [[1, 1, 1]] * 2


_PIXEL = """
cnn = mx.gluon.contrib.nn
cases = [("1d", cnn.PixelShuffle1D(3), "x1"), ("2d", cnn.PixelShuffle2D((2, 3)), "x2"),
         ("2s", cnn.PixelShuffle2D(2), "x2s"), ("3d", cnn.PixelShuffle3D((2, 1, 3)), "x3")]
for name, layer, key in cases:
    for hybrid in (False, True):
        if hybrid:
            layer.hybridize()
        x = mx.nd.array(inputs[key])
        x.attach_grad()
        with mx.autograd.record():
            y = layer(x)
        y.backward(mx.nd.array(inputs["d" + key]))
        tag = name + ("h" if hybrid else "")
        arrays[tag + "_y"] = y.asnumpy()
        arrays[tag + "_dx"] = x.grad.asnumpy()
"""


def test_pixel_shuffle_matches_mxnet(tmp_path):
    inputs = {
        "x1": _f32(2, 6, 4),
        "dx1": _f32(2, 2, 12),
        "x2": _f32(2, 12, 3, 2),
        "dx2": _f32(2, 2, 6, 6),
        "x2s": _f32(1, 8, 2, 3),
        "dx2s": _f32(1, 2, 4, 6),
        "x3": _f32(1, 12, 2, 3, 2),
        "dx3": _f32(1, 2, 4, 3, 6),
    }
    mxnet_ref.check_body(tmp_path, _PIXEL, inputs, rtol=0, atol=0)


def test_pixel_shuffle_repr_and_shapes():
    assert repr(PixelShuffle1D(2)) == "PixelShuffle1D(2)"
    assert repr(PixelShuffle3D(2)) == "PixelShuffle3D((2, 2, 2))"
    assert PixelShuffle3D((2, 3, 4))(mx.nd.zeros((1, 48, 3, 5, 7))).shape == (1, 2, 6, 15, 28)


_SYNC_BN = """
SyncBatchNorm = mx.gluon.contrib.nn.SyncBatchNorm
for name, kw in (("plain", {}), ("noscale", {"scale": False, "center": False}),
                 ("global", {"use_global_stats": True})):
    layer = SyncBatchNorm(in_channels=3, num_devices=1, momentum=0.8, **kw)
    layer.initialize()
    if name != "noscale":
        layer.gamma.set_data(mx.nd.array(inputs["gamma"]))
        layer.beta.set_data(mx.nd.array(inputs["beta"]))
    layer.running_mean.set_data(mx.nd.array(inputs["rm"]))
    layer.running_var.set_data(mx.nd.array(inputs["rv"]))
    x = mx.nd.array(inputs["x"])
    x.attach_grad()
    with mx.autograd.record():
        y = layer(x)
    y.backward(mx.nd.array(inputs["dy"]))
    arrays[name + "_y"] = y.asnumpy()
    arrays[name + "_dx"] = x.grad.asnumpy()
    arrays[name + "_rm"] = layer.running_mean.data().asnumpy()
    arrays[name + "_rv"] = layer.running_var.data().asnumpy()
    if name != "noscale":
        arrays[name + "_dgamma"] = layer.gamma.grad().asnumpy()
        arrays[name + "_dbeta"] = layer.beta.grad().asnumpy()
    arrays[name + "_infer"] = layer(x).asnumpy()
"""


def test_sync_batch_norm_matches_mxnet(tmp_path):
    inputs = {
        "x": _f32(4, 3, 2, 5) * 2 + 1,
        "dy": _f32(4, 3, 2, 5),
        "gamma": _f32(3),
        "beta": _f32(3),
        "rm": _f32(3),
        "rv": np.abs(_f32(3)) + 0.5,
    }
    mxnet_ref.check_body(tmp_path, _SYNC_BN, inputs, rtol=1e-4, atol=1e-5)


def test_sync_batch_norm_defaults_and_repr():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer = SyncBatchNorm()
    assert any("num_devices" in str(w.message) for w in caught)
    assert layer.num_devices == max(mx.context.num_gpus(), 1)
    assert layer.key == layer.prefix
    assert SyncBatchNorm(num_devices=2, key="bn").key == "bn"
    text = repr(SyncBatchNorm(in_channels=3, num_devices=1))
    assert "ndev=1" in text and "in_channels=3" in text


_SPARSE = """
SparseEmbedding = mx.gluon.contrib.nn.SparseEmbedding
layer = SparseEmbedding(10, 4)
layer.initialize()
trainer = mx.gluon.Trainer(layer.collect_params(), "sgd")
x = mx.nd.array(inputs["idx"])
with mx.autograd.record():
    y = layer(x)
y.backward(mx.nd.array(inputs["dy"]))
table = layer.weight.row_sparse_data(mx.nd.arange(10)).asnumpy()
arrays["y_is_lookup"] = np.asarray(np.array_equal(y.asnumpy(), table[inputs["idx"].astype(int)]))
g = layer.weight.grad()
arrays["grad_stype"] = np.asarray(g.stype == "row_sparse")
arrays["grad"] = g.asnumpy()
arrays["grad_rows"] = np.sort(g.indices.asnumpy()).astype(np.int64)
"""


def test_sparse_embedding_matches_mxnet(tmp_path):
    inputs = {"idx": np.array([[3, 4], [2, 3], [7, 0]], np.float32), "dy": _f32(3, 2, 4)}
    want = mxnet_ref.check_body(tmp_path, _SPARSE, inputs, rtol=1e-6, atol=1e-6)
    assert want["y_is_lookup"] and want["grad_stype"]
    assert repr(SparseEmbedding(10, 4)) == "SparseEmbedding(10 -> 4, float32)"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: PixelShuffle2D((2, 3, 4)), "factor"),
        (lambda: PixelShuffle1D(0), "at least 1"),
        (lambda: PixelShuffle3D("a"), "factor"),
        (lambda: Concurrent(axis=1.5), "axis"),
        (lambda: HybridConcurrent(axis="0"), "axis"),
        (lambda: SyncBatchNorm(num_devices=0), "num_devices"),
        (lambda: SparseEmbedding(0, 4), "input_dim"),
        (lambda: SparseEmbedding(10, -1), "output_dim"),
    ],
)
def test_bad_arguments_raise(make, words):
    with pytest.raises(MXNetError, match=words):
        make()


def test_bad_inputs_raise():
    with pytest.raises(MXNetError, match="not a multiple"):
        PixelShuffle2D(2)(mx.nd.zeros((1, 6, 2, 2)))
    with pytest.raises(MXNetError, match="dimensions"):
        PixelShuffle1D(2)(mx.nd.zeros((1, 4, 2, 2)))
    with pytest.raises(MXNetError, match="no children"):
        Concurrent()(mx.nd.zeros((1, 2)))
    layer = SparseEmbedding(10, 4)
    layer.initialize()
    with pytest.raises(MXNetError, match="Trainer|row_sparse"):
        layer(mx.nd.array([1, 2]))
