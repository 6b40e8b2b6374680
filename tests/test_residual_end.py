"""A residual unit's end, ``relu(BatchNorm(x) + residual)``, as one operator.

The kernels (the oneDNN provider's channels-last loops, the composition every provider falls
back to), the operator (``mxrs.ndarray.normalization._batch_norm_add_relu``) and the hybridized
model-zoo units that run it give the numbers of BatchNorm, the addition and the ReLU one after
the other: output, every gradient (also of an output read twice, whose gradient parts the
kernel adds) and the running statistics.
"""

import weakref

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, kernels
from mxrs._grad_parts import GradParts
from mxrs.base import MXNetError
from mxrs.gluon import nn
from mxrs.gluon.model_zoo.vision.resnet import BasicBlockV1, BottleneckV1
from mxrs.kernels import onednn
from mxrs.kernels._layout import channels_last

PROVIDERS = ("numpy", "onednn")


def close(a, b, tol=2e-5):
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def in_channels_last(a):
    out = channels_last(a.shape)
    out[...] = a
    return out


def data(shape, seed=1):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    r = rng.standard_normal(shape).astype(np.float32)
    gamma = (rng.standard_normal(c) + 1).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    return x, r, gamma, beta


def spy_composed(monkeypatch):
    calls = []
    real = onednn.composed

    def spy(k, x, *rest):
        calls.append(x.shape)
        return real(k, x, *rest)

    monkeypatch.setattr(onednn, "composed", spy)
    return calls


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("layout", ["channels_last", "row_major"])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_the_kernel_is_the_normalisation_then_the_relu_of_the_sum(
    provider, layout, parts, monkeypatch
):
    shape = (4, 24, 6, 6)
    x, r, gamma, beta = data(shape)
    if layout == "channels_last":
        x, r = in_channels_last(x), in_channels_last(r)
    rng = np.random.default_rng(2)
    gs = [rng.standard_normal(shape).astype(np.float32) for _ in range(parts)]
    composed = spy_composed(monkeypatch)
    with kernels.use("numpy"):
        k = kernels.select("BatchNorm", mx.cpu().backend, np.dtype(np.float32))
        z, mean0, var0, norm_grad = k.batch_norm(x, gamma, beta, None, 1e-3, 1, True)
        want = np.maximum(z + r, 0)
        gz = sum(gs) * (want > 0)
        gx0, gg0, gb0 = norm_grad(gz, (True, True, True))
    with kernels.use(provider):
        k = kernels.select("BatchNorm", mx.cpu().backend, np.dtype(np.float32))
        y, mean, var, grad = k.batch_norm_add_relu(x, gamma, beta, r, None, 1e-3, True)
        g = gs[0] if parts == 1 else GradParts(gs)
        gx, gg, gb, gr = grad(g, (True, True, True, True))
    assert k.name == provider
    assert (want == 0).any() and (want > 0).any()  # the ReLU cut somewhere
    for got, exp in [(y, want), (mean, mean0), (var, var0), (gr, gz), (gx, gx0), (gg, gg0)]:
        close(got, exp)
    close(gb, gb0)
    # oneDNN's provider computes channels-last data in its own loops, other layouts composed
    native = provider == "onednn" and layout == "channels_last"
    assert composed == ([] if native or provider == "numpy" else [shape])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_statistics_normalise_without_moving_through_the_gradient(provider):
    shape = (3, 16, 4, 4)
    x, r, gamma, beta = (in_channels_last(a) if a.ndim == 4 else a for a in data(shape, 3))
    stats = (np.linspace(-1, 1, 16).astype(np.float32), np.linspace(0.5, 2, 16).astype(np.float32))
    with kernels.use(provider):
        k = kernels.select("BatchNorm", mx.cpu().backend, np.dtype(np.float32))
        y, _, _, grad = k.batch_norm_add_relu(x, gamma, beta, r, stats, 1e-3, True)
        g = np.ones(shape, np.float32)
        gx, _, _, gr = grad(g, (True, True, True, True))
    bshape = (1, -1, 1, 1)
    a = (gamma / np.sqrt(stats[1] + 1e-3)).reshape(bshape)
    want = np.maximum((x - stats[0].reshape(bshape)) * a + beta.reshape(bshape) + r, 0)
    close(y, want)
    close(gr, (want > 0).astype(np.float32))
    close(gx, (want > 0) * a)  # the statistics are constants: no path through them


def op_run(fused, x, r, gamma, beta, readers=1):
    """Output, gradients of data, residual, gamma and beta, and the moving statistics."""
    mm, mv = mx.nd.zeros(x.shape[1]), mx.nd.ones(x.shape[1])
    xs = [mx.nd.array(a) for a in (x, r, gamma, beta)]
    for a in xs:
        a.attach_grad()
    kw = {"fix_gamma": False, "eps": 1e-3, "momentum": 0.8}
    with autograd.record():
        if fused:
            y = mx.nd.normalization._batch_norm_add_relu(xs[0], xs[2], xs[3], mm, mv, xs[1], **kw)
        else:
            y = mx.nd.relu(mx.nd.BatchNorm(xs[0], xs[2], xs[3], mm, mv, **kw) + xs[1])
        loss = (y * y).sum()
        for k in range(2, readers + 1):  # more readers: the gradient comes in parts
            loss = loss + (y * k).sum()
    loss.backward()
    return [y.asnumpy()] + [a.grad.asnumpy() for a in xs] + [mm.asnumpy(), mv.asnumpy()]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("readers", [1, 2])
def test_the_operator_equals_the_three_operators(provider, readers):
    x, r, gamma, beta = data((4, 8, 5, 5), 4)
    with kernels.use(provider):
        got = op_run(True, x, r, gamma, beta, readers)
        want = op_run(False, x, r, gamma, beta, readers)
    assert len(got) == 7
    for g, w in zip(got, want, strict=True):
        close(g, w)
    assert not np.allclose(got[-2], 0)  # the running mean moved


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_tape_lets_go_of_a_residual_nothing_else_holds(provider):
    """The gradient needs the data and the output, not the residual: a projected shortcut
    that only this operator reads is freed as the forward pass moves on."""
    x0, _, gamma, beta = data((2, 8, 4, 4), 5)
    results = []
    with kernels.use(provider):
        for fused in (True, False):
            x = mx.nd.array(x0)
            x.attach_grad()
            p = [mx.nd.array(a) for a in (gamma, beta)] + [mx.nd.zeros(8), mx.nd.ones(8)]
            with autograd.record():
                r = x * 0.5
                gone = weakref.ref(r._data)
                if fused:
                    y = mx.nd.normalization._batch_norm_add_relu(x, *p, r, fix_gamma=False)
                else:
                    y = mx.nd.relu(mx.nd.BatchNorm(x, *p, fix_gamma=False) + r)
                del r
                if fused:
                    assert gone() is None
            y.backward()
            results.append((y.asnumpy(), x.grad.asnumpy()))
    for got, want in zip(*results, strict=True):
        close(got, want)


def test_the_operator_names_a_residual_or_axis_it_cannot_take():
    x = mx.nd.ones((2, 4, 3, 3))
    p = [mx.nd.ones(4) for _ in range(4)]
    with pytest.raises(MXNetError, match=r"residual \(2, 4, 3, 2\) float32 is not the data's"):
        mx.nd.normalization._batch_norm_add_relu(x, *p, mx.nd.ones((2, 4, 3, 2)))
    with pytest.raises(MXNetError, match="over axis 1, not 3"):
        mx.nd.normalization._batch_norm_add_relu(x, *p, x, axis=3)


def units():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(16, 3, padding=1), BasicBlockV1(16, 1), BasicBlockV1(32, 2, True))
        net.add(BottleneckV1(32, 1), BottleneckV1(64, 2, True), nn.GlobalAvgPool2D(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def train_step(net, x):
    with autograd.record():
        loss = (net(mx.nd.array(x)) ** 2).sum()
    loss.backward()
    params = net.collect_params().values()
    return (
        [loss.asnumpy()]
        + [p.grad().asnumpy() for p in params if p.grad_req != "null"]
        + [p.data().asnumpy() for p in params if p.grad_req == "null"]  # running statistics
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hybridized_zoo_units_end_in_their_last_batch_norm(provider, monkeypatch):
    """Hybridized, the V1 units' last BatchNorm adds the shortcut and applies the ReLU; the
    numbers are those of the units run as written (BatchNorm, then the fused sum and ReLU)."""
    x = np.random.default_rng(5).standard_normal((4, 3, 12, 12)).astype(np.float32)
    fused = []
    real = mx.nd.normalization._batch_norm_add_relu

    def spy(data, *rest, **kw):
        fused.append(data.shape)
        return real(data, *rest, **kw)

    monkeypatch.setattr(mx.nd.normalization, "_batch_norm_add_relu", spy)
    results = []
    with kernels.use(provider):
        for hybridize in (False, True):
            mx.random.seed(6)
            net = units()
            if hybridize:
                net.hybridize()
            results.append(train_step(net, x))
    assert fused == [(4, 16, 12, 12), (4, 32, 6, 6), (4, 32, 6, 6), (4, 64, 3, 3)]
    want, got = results
    assert len(got) == len(want) > 40
    for g, w in zip(got, want, strict=True):
        close(g, w, 1e-5)


def test_a_hook_on_the_last_batch_norm_sees_its_own_output(monkeypatch):
    """A forward hook on the body's last BatchNorm must see the normalised data, so that unit
    runs unfused (and still computes the same numbers)."""
    x = np.random.default_rng(7).standard_normal((2, 8, 6, 6)).astype(np.float32)
    seen = []
    outs = []
    for hook in (False, True):
        mx.random.seed(8)
        unit = BasicBlockV1(8, 1)
        unit.initialize(mx.init.Xavier())
        unit.hybridize()
        if hook:
            unit.body[-1].register_forward_hook(lambda blk, inp, out: seen.append(out.asnumpy()))
        outs.append(unit(mx.nd.array(x)).asnumpy())
    assert len(seen) == 1 and (seen[0] < 0).any()  # the BatchNorm's output, before the ReLU
    close(outs[1], outs[0])
