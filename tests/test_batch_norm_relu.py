"""Batch norm with a fused ReLU: ``mx.nd.contrib.BatchNormWithReLU``, ``gluon.nn.BatchNormReLU``
and the graph passes that run ``BatchNorm`` then a ReLU as that one operator (a hybridized
``HybridSequential``, a bound executor), each equal to the two operators one after the other on
both kernel providers (output, every gradient, the running statistics)."""

import json

import mxrs as mx
import numpy as np
import pytest
from mxrs import _native, autograd, kernels
from mxrs.base import KernelError
from mxrs.gluon import nn

PROVIDERS = ("numpy", "onednn")


def close(a, b, tol=1e-4):
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def bn_relu_run(fused, x, gamma, beta, stats, use_global, seed=0):
    """Output, gradients of data, gamma and beta, and the moving statistics afterwards."""
    mm, mv = mx.nd.array(stats[0]), mx.nd.array(stats[1])
    xs = [mx.nd.array(a) for a in (x, gamma, beta)]
    for a in xs:
        a.attach_grad()
    kw = {"fix_gamma": False, "use_global_stats": use_global, "eps": 1e-3}
    with autograd.record():
        if fused:
            y = mx.nd.contrib.BatchNormWithReLU(*xs, mm, mv, **kw)
        else:
            y = mx.nd.relu(mx.nd.BatchNorm(*xs, mm, mv, **kw))
    gy = np.random.default_rng(seed).standard_normal(y.shape).astype(np.float32)
    y.backward(mx.nd.array(gy))
    return [y.asnumpy()] + [a.grad.asnumpy() for a in xs] + [mm.asnumpy(), mv.asnumpy()]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("use_global", [False, True])
@pytest.mark.parametrize("shape", [(4, 6, 5, 5), (5, 3), (2, 4, 3, 3, 3)])
def test_batch_norm_with_relu_is_batch_norm_then_relu(provider, use_global, shape):
    rng = np.random.default_rng(1)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    gamma = rng.standard_normal(c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    stats = (rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32))
    with kernels.use("numpy"):
        want = bn_relu_run(False, x, gamma, beta, stats, use_global)
    with kernels.use(provider):
        got = bn_relu_run(True, x, gamma, beta, stats, use_global)
    assert (got[0] == 0).any() and (got[0] > 0).any()  # the ReLU cut somewhere
    for g, w in zip(got, want, strict=True):
        close(g, w)
    assert np.allclose(got[-2], stats[0]) == use_global  # statistics moved only in training


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batch_norm_with_relu_keeps_nan_and_runs_for_inference(provider):
    x = np.linspace(-2, 2, 2 * 3 * 16, dtype=np.float32).reshape(2, 3, 4, 4)
    x[1, 2, 0, 0] = np.nan
    args = [mx.nd.array(a) for a in (x, np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))]
    with kernels.use(provider):
        train = mx.nd.contrib.BatchNormWithReLU(*args, fix_gamma=False)
        with autograd.train_mode():
            batch = mx.nd.contrib.BatchNormWithReLU(*args, fix_gamma=False)
        infer = mx.nd.contrib.BatchNormWithReLU(*args, use_global_stats=True).asnumpy()
    # not in training mode the moving statistics 0 and 1 are used
    close(train.asnumpy(), infer)
    assert np.isnan(infer[1, 2, 0, 0]) and np.isfinite(np.delete(infer.ravel(), 2 * 48 - 16)).all()
    close(infer[0, 0], np.maximum(x[0, 0], 0) / np.sqrt(1 + 1e-3))
    # the batch's statistics of channel 2 are NaN, so all of that channel is
    b = batch.asnumpy()
    assert np.isnan(b[:, 2]).all() and np.isfinite(b[:, :2]).all()


def test_fused_kernel_checks_its_workspace():
    with kernels.use("onednn"):
        mx.nd.contrib.BatchNormWithReLU(*[mx.nd.ones(s) for s in ((2, 2, 2), 2, 2, 2, 2)])
    k = _native.OnednnBatchNorm([2, 4, 5, 5], [100, 25, 5, 1], 1e-3, False, True, True)
    assert k.workspace_bytes >= 200  # a mask entry per element
    x, y = np.ones((2, 4, 5, 5), np.float32), np.empty((2, 4, 5, 5), np.float32)
    c = [np.ones(4, np.float32), np.zeros(4, np.float32), np.empty(4, np.float32), np.empty(4)]
    c[3] = np.empty(4, np.float32)
    with pytest.raises(KernelError, match=r"needs a workspace of \d+ bytes"):
        k.forward(x, *c, y)
    with pytest.raises(KernelError, match=r"a workspace of 3 bytes where the kernel needs"):
        k.forward(x, *c, y, np.empty(3, np.uint8))
    plain = _native.OnednnBatchNorm([2, 4, 5, 5], [100, 25, 5, 1], 1e-3, False, True)
    assert plain.workspace_bytes == 0
    with pytest.raises(KernelError, match="a workspace for a batch norm that keeps none"):
        plain.forward(x, *c, y, np.empty(8, np.uint8))
    ws = np.empty(k.workspace_bytes, np.uint8)
    k.forward(x, *c, y, ws)  # constant data: normalised to 0, shifted by 0, kept at 0
    assert (y == 0).all()


def small_net(layers):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(*layers)
    net.initialize(mx.init.Xavier())
    return net


def conv_bn_relu():
    return [nn.Conv2D(6, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.Dense(4)]


def train_step(net, x):
    with autograd.record():
        y = net(mx.nd.array(x))
        loss = (y * y).sum()
    loss.backward()
    params = net.collect_params()
    grads = [p.grad().asnumpy() for p in params.values() if p.grad_req != "null"]
    stats = [p.data().asnumpy() for name, p in params.items() if "running" in name]
    return [y.asnumpy()] + grads + stats


def count_fused_calls(monkeypatch):
    calls = []
    real = mx.nd.contrib.BatchNormWithReLU

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(mx.nd.contrib, "BatchNormWithReLU", spy)
    return calls


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hybridized_sequential_fuses_batch_norm_and_relu(provider, monkeypatch):
    x = np.random.default_rng(2).standard_normal((4, 3, 6, 6)).astype(np.float32)
    calls = count_fused_calls(monkeypatch)
    with kernels.use(provider):
        mx.random.seed(3)
        plain = small_net(conv_bn_relu())
        want = train_step(plain, x)
        assert calls == []  # not hybridized: the layers run one by one
        mx.random.seed(3)
        fused = small_net(conv_bn_relu())
        fused.hybridize()
        got = train_step(fused, x)
    assert calls == [(4, 6, 6, 6)]
    assert len(got) == len(want) == 1 + 6 + 2
    for g, w in zip(got, want, strict=True):
        close(g, w)


def test_layers_with_hooks_or_other_activations_are_not_fused(monkeypatch):
    x = np.random.default_rng(4).standard_normal((2, 3, 5, 5)).astype(np.float32)
    calls = count_fused_calls(monkeypatch)
    net = small_net([nn.BatchNorm(), nn.Activation("sigmoid"), nn.BatchNorm()])
    net.hybridize()
    net(mx.nd.array(x))
    assert calls == []
    seen = []
    layers = conv_bn_relu()
    layers[2].register_forward_hook(lambda block, inputs, out: seen.append(out.shape))
    hooked = small_net(layers)
    hooked.hybridize()
    hooked(mx.nd.array(x))
    assert calls == [] and seen == [(2, 6, 5, 5)]


def test_batch_norm_relu_layer_and_its_exported_graph(tmp_path):
    x = np.random.default_rng(5).standard_normal((3, 4, 5, 5)).astype(np.float32)
    mx.random.seed(6)
    net = small_net([nn.Conv2D(4, 1), nn.BatchNormReLU(), nn.Dense(3)])
    assert repr(net[1]).startswith("BatchNormReLU(axis=1, eps=1e-05")
    got = train_step(net, x)  # the Dense layer's weights are drawn at the first batch
    mx.random.seed(6)
    ref = small_net([nn.Conv2D(4, 1), nn.BatchNorm(), nn.Activation("relu"), nn.Dense(3)])
    for g, w in zip(got, train_step(ref, x), strict=True):
        close(g, w)
    net.hybridize()
    want = net(mx.nd.array(x)).asnumpy()
    net.export(str(tmp_path / "bnrelu"))
    graph = json.loads((tmp_path / "bnrelu-symbol.json").read_text())
    ops = [n["op"] for n in graph["nodes"] if n["op"] != "null"]
    assert ops == ["Convolution", "BatchNorm", "Activation", "FullyConnected"]
    back = mx.gluon.SymbolBlock.imports(
        str(tmp_path / "bnrelu-symbol.json"), ["data"], str(tmp_path / "bnrelu-0000.params")
    )
    close(back(mx.nd.array(x)).asnumpy(), want)


def bn_relu_symbol(extra_reader=False, expose_norm=False):
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    norm = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    act = mx.sym.Activation(norm, act_type="relu", name="relu")
    if extra_reader:  # the normalised output is read twice
        act = act + norm
    fc = mx.sym.FullyConnected(mx.sym.flatten(act), num_hidden=3, name="fc")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    return mx.sym.Group([out, norm]) if expose_norm else out


def run_executor(sym, x, label, monitor):
    mx.random.seed(8)
    ex = sym.simple_bind(mx.cpu(), data=x.shape, softmax_label=label.shape)
    for name, arr in ex.arg_dict.items():
        if name not in ("data", "softmax_label"):
            arr[:] = mx.nd.random.normal(0, 0.5, arr.shape)
    if monitor:
        ex.set_monitor_callback(lambda name, arr: None)
    ex.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(label))
    ex.backward()
    outs = [o.asnumpy() for o in ex.outputs]
    grads = [
        g.asnumpy() for n, g in sorted(ex.grad_dict.items()) if n.startswith(("conv", "bn", "fc"))
    ]
    return outs + grads + [a.asnumpy() for a in ex.aux_arrays]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_executor_fuses_batch_norm_read_only_by_a_relu(provider, monkeypatch):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 2, 5, 5)).astype(np.float32)
    label = rng.integers(0, 3, 4).astype(np.float32)
    calls = count_fused_calls(monkeypatch)
    with kernels.use(provider):
        got = run_executor(bn_relu_symbol(), x, label, monitor=False)
        assert calls == [(4, 4, 5, 5)]
        want = run_executor(bn_relu_symbol(), x, label, monitor=True)  # a monitor: as written
        assert calls == [(4, 4, 5, 5)]
    assert len(got) == 1 + 6 + 2
    for g, w in zip(got, want, strict=True):
        close(g, w)
    assert not np.allclose(got[-2], 0)  # the moving mean moved


@pytest.mark.parametrize("kw", [{"extra_reader": True}, {"expose_norm": True}])
def test_executor_keeps_a_batch_norm_whose_output_is_read_elsewhere(kw, monkeypatch):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    label = rng.integers(0, 3, 2).astype(np.float32)
    calls = count_fused_calls(monkeypatch)
    got = run_executor(bn_relu_symbol(**kw), x, label, monitor=False)
    want = run_executor(bn_relu_symbol(**kw), x, label, monitor=True)
    assert calls == []
    for g, w in zip(got, want, strict=True):
        close(g, w)
    if kw.get("expose_norm"):  # the normalised output itself, not its ReLU
        assert (got[1] < 0).any()
