"""gluon.nn layers against NumPy, and the multi-device LeNet step of the Gluon tutorial."""

import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from lenet import lenet
from mxrs import autograd
from mxrs.base import MXNetError
from mxrs.gluon import nn
from numpy.lib.stride_tricks import sliding_window_view

RNG = np.random.default_rng(42)


def _run(layer, x, head=None):
    """Forward ``x`` (NumPy) through ``layer`` recording; backprop ``head``; return out, dx."""
    xa = mx.nd.array(x)
    xa.attach_grad()
    with autograd.record():
        out = layer(xa)
    out.backward(None if head is None else mx.nd.array(head))
    return out.asnumpy(), xa.grad.asnumpy()


def test_dense_forward_and_gradients():
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    w = RNG.standard_normal((5, 6)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    g = RNG.standard_normal((4, 5)).astype(np.float32)
    layer = nn.Dense(5, prefix="fc_")
    layer.initialize()
    layer(mx.nd.array(x))  # finishes deferred init: in_units = 2 * 3
    layer.weight.set_data(mx.nd.array(w))
    layer.bias.set_data(mx.nd.array(b))
    out, dx = _run(layer, x, g)
    x2 = x.reshape(4, 6)
    np.testing.assert_allclose(out, x2 @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, (g @ w).reshape(x.shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), g.T @ x2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.bias.grad().asnumpy(), g.sum(0), rtol=1e-5, atol=1e-6)
    assert list(layer.collect_params().keys()) == ["fc_weight", "fc_bias"]


def test_dense_without_flatten_activation_and_bias():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    layer = nn.Dense(
        2,
        activation="relu",
        use_bias=False,
        flatten=False,
        in_units=4,
        weight_initializer=mx.init.Constant(np.arange(8.0).reshape(2, 4) - 3),
    )
    layer.initialize()
    assert layer.bias is None and list(layer.params.keys())[0].endswith("weight")
    w = np.arange(8.0).reshape(2, 4) - 3
    np.testing.assert_allclose(
        layer(mx.nd.array(x)).asnumpy(), np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6
    )


def _conv_ref(x, w, b, stride, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,fcij->nfhw", win, w) + b.reshape(1, -1, 1, 1), win


def test_conv2d_forward_and_weight_gradient():
    x = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    layer = nn.Conv2D(4, kernel_size=3, strides=2, padding=1, in_channels=3)
    layer.initialize()
    layer.weight.set_data(mx.nd.array(w))
    layer.bias.set_data(mx.nd.array(b))
    ref, win = _conv_ref(x, w, b, 2, 1)
    g = RNG.standard_normal(ref.shape).astype(np.float32)
    out, _ = _run(layer, x, g)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        layer.weight.grad().asnumpy(), np.einsum("nchwij,nfhw->fcij", win, g), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(layer.bias.grad().asnumpy(), g.sum((0, 2, 3)), rtol=1e-5, atol=1e-5)


def test_conv2d_infers_channels_and_names():
    with mx.name.NameManager():
        layer = nn.Conv2D(6, (5, 5), activation="relu")
    assert layer.weight.name == "conv0_weight" and layer.weight.shape == (6, 0, 5, 5)
    layer.initialize()
    assert layer(mx.nd.ones((1, 2, 8, 8))).shape == (1, 6, 4, 4)
    assert layer.weight.shape == (6, 2, 5, 5)
    assert repr(layer) == ("Conv2D(2 -> 6, kernel_size=(5, 5), stride=(1, 1), Activation(relu))")
    grouped = nn.Conv2D(4, 3, groups=2, padding=1, use_bias=False)
    grouped.initialize()
    assert grouped(mx.nd.ones((1, 4, 5, 5))).shape == (1, 4, 5, 5)
    assert grouped.weight.shape == (4, 2, 3, 3)
    with pytest.raises(MXNetError, match="supports layout NCHW"):
        nn.Conv2D(2, 3, layout="NHWC")
    conv1d = nn.Conv1D(3, 2)
    conv1d.initialize()
    assert conv1d(mx.nd.ones((2, 4, 6))).shape == (2, 3, 5)


def test_max_pool_forward_and_gradient_to_the_maximum():
    x = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)
    out, dx = _run(nn.MaxPool2D(pool_size=2, strides=2), x)
    ref = x.reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(out, ref)
    up = np.repeat(np.repeat(ref, 2, axis=2), 2, axis=3)
    np.testing.assert_array_equal(dx, (x == up).astype(np.float32))
    assert nn.MaxPool2D(3, 2, ceil_mode=True)(mx.nd.ones((1, 1, 6, 6))).shape == (1, 1, 3, 3)
    assert nn.MaxPool2D(3, 2)(mx.nd.ones((1, 1, 6, 6))).shape == (1, 1, 2, 2)


def test_avg_and_global_pools():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    out, dx = _run(nn.AvgPool2D(), x)
    np.testing.assert_allclose(
        out, x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(dx, np.full(x.shape, 0.25), rtol=1e-6)
    ones = mx.nd.ones((1, 1, 2, 2))
    padded = nn.AvgPool2D(pool_size=2, strides=1, padding=1)(ones).asnumpy()
    np.testing.assert_allclose(padded[0, 0], [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]])
    exclusive = nn.AvgPool2D(2, 1, 1, count_include_pad=False)(ones).asnumpy()
    np.testing.assert_allclose(exclusive, np.ones((1, 1, 3, 3)))
    out, dx = _run(nn.GlobalAvgPool2D(), x)
    np.testing.assert_allclose(out, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, np.full(x.shape, 1 / 16), rtol=1e-6)
    out, _ = _run(nn.GlobalMaxPool2D(), x)
    np.testing.assert_array_equal(out, x.max(axis=(2, 3), keepdims=True))
    assert nn.GlobalAvgPool1D()(mx.nd.ones((2, 3, 5))).shape == (2, 3, 1)
    assert nn.MaxPool1D()(mx.nd.ones((2, 3, 6))).shape == (2, 3, 3)


def test_batchnorm_training_normalizes_and_updates_running_stats():
    x = (RNG.standard_normal((8, 3, 2, 2)) * 3 + 1).astype(np.float32)
    layer = nn.BatchNorm(momentum=0.9, epsilon=1e-5)
    layer.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    with autograd.record():
        out = layer(mx.nd.array(x))
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    # as in MXNet 1.9.1, the running statistics move in the backward pass
    np.testing.assert_array_equal(layer.running_mean.data().asnumpy(), np.zeros(3))
    out.backward()
    np.testing.assert_allclose(layer.running_mean.data().asnumpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(layer.running_var.data().asnumpy(), 0.9 + 0.1 * var, rtol=1e-5)
    # the copy on the other context has not seen a batch yet
    np.testing.assert_array_equal(layer.running_mean.data(mx.cpu(1)).asnumpy(), np.zeros(3))
    assert layer.gamma.grad().shape == (3,) and layer.running_mean.grad_req == "null"
    np.testing.assert_allclose(layer.beta.grad().asnumpy(), np.full(3, 32.0))


def test_batchnorm_inference_uses_running_stats():
    x = RNG.standard_normal((4, 2)).astype(np.float32)
    layer = nn.BatchNorm(axis=1, in_channels=2, center=False, scale=False)
    layer.initialize()
    layer.running_mean.set_data(mx.nd.array([1.0, -1.0]))
    layer.running_var.set_data(mx.nd.array([4.0, 0.25]))
    layer.gamma.set_data(mx.nd.array([5.0, 5.0]))  # ignored: scale=False fixes gamma to 1
    out = layer(mx.nd.array(x)).asnumpy()
    ref = (x - [1.0, -1.0]) / np.sqrt(np.array([4.0, 0.25]) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    assert layer.gamma.grad_req == "null" and layer.beta.grad_req == "null"
    np.testing.assert_array_equal(layer.running_mean.data().asnumpy(), [1, -1])
    names = [p.name.split("_", 1)[1] for p in layer.collect_params().values()]
    assert names == ["gamma", "beta", "running_mean", "running_var"]


# When BatchNorm's running statistics move, run word for word under mxrs and MXNet 1.9.1 (``mx``
# is either library): MXNet moves them in the backward pass of a training-mode call only.
_BN_SCENARIOS = """
def bn_scenarios(mx, x):
    autograd, nn = mx.autograd, mx.gluon.nn
    x = mx.nd.array(x)

    def bn(**kw):
        layer = nn.BatchNorm(**kw)
        layer.initialize()
        return layer

    def stats(layer):
        return layer.running_mean.data().asnumpy(), layer.running_var.data().asnumpy()

    out = {}
    b = bn()
    with autograd.record():
        y = b(x)
    out["recorded_forward"] = stats(b)
    y.backward()
    out["then_backward"] = stats(b)
    b = bn()
    with autograd.train_mode():
        b(x)
    out["train_mode_unrecorded"] = stats(b)
    b = bn()
    with autograd.record(train_mode=False):
        y = b(x)
    y.backward()
    out["predict_mode_backward"] = stats(b)
    b, w = bn(), mx.nd.ones((1,))
    w.attach_grad()
    with autograd.record():
        b(x)
        z = (w * 2).sum()
    z.backward()
    out["off_the_gradient_path"] = stats(b)
    net = nn.HybridSequential()
    net.add(nn.BatchNorm(scale=False, center=False), nn.Conv2D(2, 1))
    net.initialize()
    with autograd.record():
        y = net(x)
    y.backward()
    out["nothing_to_differentiate"] = stats(net[0])
    b = bn()
    with autograd.record():
        y = b(x)
    y.backward(retain_graph=True)
    y.backward()
    out["two_backward_passes"] = stats(b)
    return out
"""


def test_batchnorm_running_stats_move_when_mxnet_moves_them(tmp_path):
    x = (RNG.standard_normal((4, 3, 2, 2)) * 3 + 1).astype(np.float32)
    script = _BN_SCENARIOS + textwrap.dedent(
        """
        import mxnet
        for k, (m, v) in bn_scenarios(mxnet, inputs["x"]).items():
            arrays[k + ".mean"], arrays[k + ".var"] = m, v
        """
    )
    _, want = mxnet_ref.run(tmp_path, script, x=x)
    scope = {}
    exec(_BN_SCENARIOS, scope)
    got = scope["bn_scenarios"](mx, x)
    assert sorted(k + ".mean" for k in got) == sorted(k for k in want if k.endswith(".mean"))
    moved = 0
    for k, (m, v) in got.items():
        np.testing.assert_allclose(m, want[k + ".mean"], rtol=1e-5, atol=1e-7, err_msg=k)
        np.testing.assert_allclose(v, want[k + ".var"], rtol=1e-5, err_msg=k)
        moved += bool(np.any(m != 0))
    assert moved == 2  # then_backward and two_backward_passes; the rest stay at zero


def test_dropout_scales_in_training_and_is_identity_otherwise():
    x = np.ones((200, 100), dtype=np.float32)
    layer = nn.Dropout(0.25)
    with autograd.train_mode():
        out = layer(mx.nd.array(x)).asnumpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.75)}
    assert (out == 0).mean() == pytest.approx(0.25, abs=0.01)
    np.testing.assert_array_equal(layer(mx.nd.array(x)).asnumpy(), x)
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(layer(mx.nd.array(x)).asnumpy(), x)
    shared = nn.Dropout(0.5, axes=(1,))
    with autograd.train_mode():
        out = shared(mx.nd.array(x)).asnumpy()
    assert all(len(np.unique(row)) == 1 for row in out)
    assert repr(layer) == "Dropout(p = 0.25, axes=())"


def test_embedding_forward_and_scattered_gradient():
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    layer = nn.Embedding(5, 3, weight_initializer=mx.init.Constant(w))
    layer.initialize()
    idx = mx.nd.array([[0, 2], [2, 4]])
    with autograd.record():
        out = layer(idx)
    np.testing.assert_allclose(out.asnumpy(), w[[[0, 2], [2, 4]]])
    out.backward()
    expected = np.zeros((5, 3), dtype=np.float32)
    expected[[0, 4]] = 1
    expected[2] = 2
    np.testing.assert_array_equal(layer.weight.grad().asnumpy(), expected)
    assert repr(layer) == "Embedding(5 -> 3, float32)"


def test_activations_flatten_and_lambdas():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]], dtype=np.float32)
    ref = {
        "relu": np.maximum(x, 0),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "softrelu": np.log1p(np.exp(x)),
        "softsign": x / (1 + np.abs(x)),
    }
    for name, expected in ref.items():
        act = nn.Activation(name)
        assert act.name.startswith(name)
        np.testing.assert_allclose(act(mx.nd.array(x)).asnumpy(), expected, rtol=1e-5)
    with pytest.raises(MXNetError, match="unknown activation"):
        nn.Activation("swoosh")
    np.testing.assert_allclose(
        nn.LeakyReLU(0.1)(mx.nd.array(x)).asnumpy(), np.where(x > 0, x, 0.1 * x), rtol=1e-6
    )
    np.testing.assert_allclose(
        nn.ELU()(mx.nd.array(x)).asnumpy(), np.where(x > 0, x, np.expm1(x)), rtol=1e-5
    )
    prelu = nn.PReLU()
    prelu.initialize()
    np.testing.assert_allclose(prelu(mx.nd.array(x)).asnumpy(), np.where(x > 0, x, 0.25 * x))
    assert nn.Flatten()(mx.nd.ones((2, 3, 4))).shape == (2, 12)
    np.testing.assert_allclose(nn.Lambda("tanh")(mx.nd.array(x)).asnumpy(), np.tanh(x), rtol=1e-6)
    hl = nn.HybridLambda(lambda F, v: F.relu(v) * 2)
    np.testing.assert_allclose(hl(mx.nd.array(x)).asnumpy(), 2 * np.maximum(x, 0))
    with pytest.raises(MXNetError, match="not found in ndarray"):
        nn.Lambda("no_such_function")


def test_layer_norm():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    layer = nn.LayerNorm()
    layer.initialize()
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(layer(mx.nd.array(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    assert layer.gamma.shape == (4,)


def test_sequential_containers():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
        net.add(nn.Dense(1, in_units=2))
    assert len(net) == 3
    assert net[-1].name == "net_dense2"
    head = net[:2]
    assert isinstance(head, nn.HybridSequential) and len(head) == 2 and head[0] is net[0]
    net.initialize()
    x = mx.nd.ones((5, 3))
    np.testing.assert_allclose(net(x).asnumpy(), net[2](head(x)).asnumpy(), rtol=1e-6)
    seq = nn.Sequential()
    seq.add(nn.Dense(2, in_units=3), nn.Lambda(lambda v: v * 0))
    seq.initialize()
    np.testing.assert_array_equal(seq(x).asnumpy(), np.zeros((5, 2)))
    seq.hybridize()
    assert repr(seq).startswith("Sequential(\n  (0): Dense(3 -> 2, linear)")


def test_lenet_tutorial_step_on_two_contexts():
    """The multi-GPU Gluon tutorial's model and training step, on cpu(0) and cpu(1), with the
    update done by hand: sum each parameter's gradients over the contexts, then SGD."""
    mx.random.seed(1)
    context = [mx.cpu(0), mx.cpu(1)]
    net = lenet(nn)
    net.initialize(init=mx.init.Xavier(), ctx=context)
    loss_function = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(0)
    data = rng.uniform(0, 1, (30, 1, 28, 28)).astype(np.float32)
    label = rng.integers(0, 10, 30).astype(np.float32)
    params = list(net.collect_params().values())
    lr = 0.1

    def step():
        inputs = mx.gluon.utils.split_and_load(data, ctx_list=context, even_split=False)
        labels = mx.gluon.utils.split_and_load(label, ctx_list=context, even_split=False)
        with autograd.record():
            outputs = [net(x) for x in inputs]
            losses = [loss_function(o, y) for o, y in zip(outputs, labels, strict=True)]
        for loss in losses:
            loss.backward()
        for p in params:
            total = sum(g.asnumpy() for g in p.list_grad())
            for w in p.list_data():
                w[:] = w.asnumpy() - lr * total / data.shape[0]
        return sum(float(loss.sum().asscalar()) for loss in losses) / data.shape[0]

    first = step()
    assert [x.shape[0] for x in mx.gluon.utils.split_and_load(data, context)] == [15, 15]
    assert net[0].weight.shape == (6, 1, 5, 5) and net[5].weight.shape == (120, 400)
    for _ in range(4):
        last = step()
    assert last < first
    for p in params:
        a, b = p.list_data()
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
