"""The kernel seam: oneDNN's kernels against the portable NumPy ones (forward and every
gradient, to float32 tolerance), the fallbacks, the choice of provider and its errors.

oneDNN is a dependency of mxrs on x86-64 Linux, so it must load here; the tests that need it
fail (not skip) where it does not.
"""

import os
import subprocess
import sys

import mxrs as mx
import numpy as np
import pytest
from mxrs import _native, autograd, kernels
from mxrs.base import KernelError
from mxrs.gluon.model_zoo import vision
from onednn_native import needs_onednn

pytestmark = needs_onednn

PROVIDERS = ("numpy", "onednn")


def close(a, b, rtol=2e-5, atol=2e-5):
    """``a`` equals ``b`` to float32 tolerance, scaled by ``b``'s magnitude."""
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale)


def run_both(fn):
    """``fn()`` under each provider: {provider: list of numpy results}."""
    out = {}
    for p in PROVIDERS:
        with kernels.use(p):
            out[p] = [np.asarray(r) for r in fn()]
    return out


def grads_of(op, arrays, seed=0):
    """Output and each input's gradient of ``op(*arrays)`` for a random output gradient."""
    rng = np.random.default_rng(seed)
    xs = [mx.nd.array(a) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = op(*xs)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(mx.nd.array(gy))
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


CONV = [
    # (data shape, weight shape, groups, stride, pad, dilate, bias)
    ((2, 3, 9, 9), (4, 3, 3, 3), 1, (1, 1), (1, 1), (1, 1), True),
    ((2, 4, 9, 8), (6, 2, 3, 2), 2, (2, 1), (1, 2), (1, 2), True),
    ((2, 8, 7, 7), (8, 1, 3, 3), 8, (2, 2), (1, 1), (1, 1), False),  # depthwise
    ((3, 16, 6, 6), (32, 16, 1, 1), 1, (2, 2), (0, 0), (1, 1), True),
    ((2, 3, 11), (5, 3, 4), 1, (2,), (1,), (2,), True),
    ((2, 4, 5, 6, 7), (8, 2, 3, 2, 3), 2, (1, 2, 1), (1, 0, 1), (1, 1, 2), False),
    ((4, 32, 8, 8), (32, 32, 3, 3), 1, (1, 1), (1, 1), (1, 1), False),  # blocked layouts
    # kernel gradients written in 16x16 blocks, which mxrs unblocks into the caller's layout
    ((2, 32, 6, 6), (48, 32, 1, 1), 1, (1, 1), (0, 0), (1, 1), True),
    ((2, 16, 7, 7), (32, 16, 3, 3), 1, (2, 2), (1, 1), (1, 1), False),
    ((2, 32, 9), (16, 32, 3), 1, (2,), (1,), (1,), False),
    ((2, 16, 4, 5, 5), (32, 16, 1, 3, 3), 1, (1, 2, 2), (0, 1, 1), (1, 1, 1), False),
    # one pixel in and out: a fully connected layer on the tap at the padding's offset
    ((4, 32, 1, 1), (16, 32, 3, 3), 1, (1, 1), (1, 1), (1, 1), True),
    ((2, 8, 1, 1), (6, 8, 3, 2), 1, (2, 2), (1, 1), (1, 1), False),
]


@pytest.mark.parametrize("xs, ws, groups, stride, pad, dilate, bias", CONV)
def test_convolution_matches_numpy(xs, ws, groups, stride, pad, dilate, bias):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)

    def op(x, w, *b):
        return mx.nd.Convolution(
            x,
            w,
            b[0] if b else None,
            kernel=ws[2:],
            stride=stride,
            pad=pad,
            dilate=dilate,
            num_filter=ws[0],
            num_group=groups,
            no_bias=not b,
        )

    arrays = (x, w, b) if bias else (x, w)
    r = run_both(lambda: grads_of(op, arrays))
    assert len(r["onednn"]) == len(arrays) + 1
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)


def test_convolution_runs_on_onednn():
    with kernels.use("onednn"):
        assert kernels.provider_name("Convolution") == "onednn"
        x = mx.nd.ones((1, 16, 8, 8))
        w = mx.nd.ones((16, 16, 3, 3))
        y = mx.nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
        # the centre sees 16 channels x 9 taps of ones, a corner 16 x 4
        assert y[0, 0, 4, 4].asscalar() == 144 and y[0, 0, 0, 0].asscalar() == 64
        info = kernels.describe()
    assert info["provider"] == "onednn" and info["version"].startswith("3.")
    assert info["implementations"], info


def _channels_last(x):
    """``x`` as a convolution's output lies: channels-last in memory (a 1×1 convolution by the
    identity, differentiable like any op)."""
    c = x.shape[1]
    eye = mx.nd.array(np.eye(c, dtype=np.float32).reshape(c, c, *(1,) * (x.ndim - 2)))
    return mx.nd.Convolution(x, eye, kernel=(1,) * (x.ndim - 2), num_filter=c, no_bias=True)


UNROLLED = [
    # (data shape, weight shape, stride, pad, dilate): every output pixel meets every input
    # pixel through one tap, and both images are small
    ((4, 32, 1, 1), (16, 32, 3, 3), (1, 1), (1, 1), (1, 1)),  # one pixel: the centre tap
    ((2, 8, 1, 1), (6, 8, 3, 2), (2, 2), (1, 1), (1, 1)),
    ((3, 16, 2, 2), (24, 16, 3, 3), (1, 1), (1, 1), (1, 1)),  # 2×2 to 2×2: all nine taps
    ((3, 16, 2, 2), (8, 16, 3, 3), (2, 2), (1, 1), (1, 1)),  # 2×2 to 1×1
    ((2, 8, 1, 1), (8, 8, 3, 3), (1, 1), (2, 2), (2, 2)),  # dilated, one pixel
    ((2, 4, 3), (5, 4, 5), (1,), (2,), (1,)),  # 1-D, 3 to 3
    ((2, 4, 2, 2, 1), (6, 4, 3, 3, 1), (1, 1, 1), (1, 1, 0), (1, 1, 1)),  # 3-D
]


@pytest.mark.parametrize("xs, ws, stride, pad, dilate", UNROLLED)
def test_a_small_image_convolution_computes_as_a_fully_connected_layer(xs, ws, stride, pad, dilate):
    """The kernel unrolled over the pairs of pixels: output, every gradient and the bias'
    equal NumPy's, with the data and gradients channels-last as between layers."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)

    def op(x, w, b):
        y = mx.nd.Convolution(
            _channels_last(x),
            w,
            b,
            kernel=ws[2:],
            stride=stride,
            pad=pad,
            dilate=dilate,
            num_filter=ws[0],
        )
        return _channels_last(y)

    r = run_both(lambda: grads_of(op, (x, w, b)))
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)
    with kernels.use("onednn"):
        grads_of(op, (x, w, b))
        info = kernels.describe()
    assert any(i.startswith("unrolled+") for i in info["implementations"]), info


DECONV = [
    # (data shape, weight shape, groups, stride, pad, dilate, adj, bias)
    ((2, 4, 5, 5), (4, 3, 3, 3), 1, (2, 2), (1, 1), (1, 1), (1, 0), True),
    ((2, 4, 5, 6), (4, 2, 3, 2), 2, (2, 1), (1, 0), (1, 2), (0, 0), True),
    ((2, 3, 7), (3, 5, 4), 1, (3,), (1,), (1,), (1,), False),
    ((1, 4, 3, 4, 3), (4, 1, 2, 3, 2), 4, (2, 1, 2), (0, 1, 0), (1, 1, 2), (0, 0, 0), True),
    # adj beyond pad: a negative padding to oneDNN, so the portable kernel serves it
    ((2, 2, 4, 4), (2, 3, 3, 3), 1, (2, 2), (0, 0), (1, 1), (1, 1), False),
]


@pytest.mark.parametrize("xs, ws, groups, stride, pad, dilate, adj, bias", DECONV)
def test_deconvolution_kernels_match_numpy(xs, ws, groups, stride, pad, dilate, adj, bias):
    from mxrs._backend import NUMPY
    from mxrs.kernels import onednn

    rng = np.random.default_rng(8)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[1] * groups).astype(np.float32) if bias else None
    geom = kernels.ConvGeometry(stride, pad, dilate, groups)
    out = tuple(
        s * (i - 1) + d * (k - 1) + 1 - 2 * p + a
        for i, k, s, d, p, a in zip(xs[2:], ws[2:], stride, dilate, pad, adj, strict=True)
    )
    needs = (True, True, True) if bias else (True, True)
    results = []
    for k in (kernels.portable.for_backend(NUMPY), onednn.OnednnKernels()):
        y, grad = k.deconvolution(x, w, b, geom, adj, out, True)
        gy = np.random.default_rng(9).standard_normal(y.shape).astype(np.float32)
        results.append([y] + [g for g in grad(gy, needs) if g is not None])
    assert results[0][0].shape == (xs[0], ws[1] * groups, *out)
    for got, want in zip(results[1], results[0], strict=True):
        close(got, want)


@pytest.mark.parametrize(
    "xs, hidden, flatten, bias",
    [
        ((4, 7), 5, True, True),
        ((1, 3, 4, 4), 6, True, False),
        ((2, 3, 9), 4, False, True),
        ((0, 7), 5, True, True),  # an empty batch runs on NumPy
    ],
)
def test_fully_connected_matches_numpy(xs, hidden, flatten, bias):
    rng = np.random.default_rng(10)
    x = rng.standard_normal(xs).astype(np.float32)
    inputs = xs[-1] if not flatten else int(np.prod(xs[1:]))
    w = rng.standard_normal((hidden, inputs)).astype(np.float32)
    b = rng.standard_normal(hidden).astype(np.float32)

    def op(x, w, *b):
        return mx.nd.FullyConnected(
            x, w, b[0] if b else None, num_hidden=hidden, no_bias=not b, flatten=flatten
        )

    arrays = (x, w, b) if bias else (x, w)
    r = run_both(lambda: grads_of(op, arrays))
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)


def test_fully_connected_after_a_channels_last_convolution():
    """A convolution's channels-last output flattens in MXNet's (C, H, W) order."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fw = rng.standard_normal((5, 4 * 4 * 4)).astype(np.float32)

    def op(x, w, fw):
        y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True)
        return mx.nd.FullyConnected(y, fw, num_hidden=5, no_bias=True)

    r = run_both(lambda: grads_of(op, (x, w, fw)))
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)


POOL = [
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max"),
    dict(kernel=(2, 2), stride=(2, 2), pool_type="max"),
    dict(kernel=(3, 3), stride=(2, 2), pad=(0, 0), pool_type="max", pooling_convention="full"),
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"),
    dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg", count_include_pad=False),
    dict(
        kernel=(3, 3),
        stride=(2, 2),
        pad=(1, 1),
        pool_type="avg",
        count_include_pad=False,
        pooling_convention="full",
    ),
    # served by the portable kernel: sum, and 'full' averages that count padding
    dict(kernel=(2, 2), stride=(2, 2), pool_type="sum"),
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full"),
    dict(kernel=(3,), stride=(2,), pool_type="max"),
    dict(kernel=(2, 3, 2), stride=(1, 2, 2), pad=(1, 1, 0), pool_type="avg"),
    dict(kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="max"),
]


@pytest.mark.parametrize("kw", POOL, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_pooling_matches_numpy(kw):
    nd = len(kw["kernel"])
    shape = {1: (2, 5, 9), 2: (2, 5, 8, 9), 3: (2, 3, 5, 6, 7)}[nd]
    rng = np.random.default_rng(2)
    # many ties, as after a ReLU: the gradient goes to the first maximum either way
    x = np.maximum(rng.standard_normal(shape), 0).astype(np.float32)
    r = run_both(lambda: grads_of(lambda a: mx.nd.Pooling(a, **kw), (x,)))
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)


@pytest.mark.parametrize("shape", [(4, 6, 5, 5), (8, 3), (2, 4, 3, 3, 3)])
@pytest.mark.parametrize("use_global", [False, True])
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batch_norm_matches_numpy(shape, use_global, fix_gamma):
    rng = np.random.default_rng(3)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    gamma = rng.standard_normal(c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    mean0 = rng.standard_normal(c).astype(np.float32)
    var0 = (rng.random(c) + 0.5).astype(np.float32)

    def run():
        mm, mv = mx.nd.array(mean0), mx.nd.array(var0)

        def op(x, g, b):
            return mx.nd.BatchNorm(
                x, g, b, mm, mv, fix_gamma=fix_gamma, use_global_stats=use_global, eps=1e-3
            )

        return grads_of(op, (x, gamma, beta)) + [mm.asnumpy(), mv.asnumpy()]

    r = run_both(run)
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want, rtol=1e-4, atol=1e-4)
    # the moving statistics moved (training) or stayed (global), on both providers alike
    moved = not np.allclose(r["onednn"][-2], mean0)
    assert moved != use_global


def test_batch_norm_on_another_axis_and_inference():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    g, b = np.ones(5, np.float32), np.zeros(5, np.float32)
    m, v = np.zeros(5, np.float32), np.ones(5, np.float32)

    def run():
        args = [mx.nd.array(a) for a in (x, g, b, m, v)]
        y_axis = mx.nd.BatchNorm(*args, axis=2, fix_gamma=False)
        y_infer = mx.nd.BatchNorm(
            *[mx.nd.array(a) for a in (x[:, :, 0], g[:4], b[:4])],
            mx.nd.array(m[:4]),
            mx.nd.array(v[:4]),
            use_global_stats=True,
        )
        return [y_axis.asnumpy(), y_infer.asnumpy()]

    r = run_both(run)
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)
    # inference with moving statistics 0 and 1: x / sqrt(1 + eps)
    close(r["onednn"][1], x[:, :, 0] / np.sqrt(1 + 1e-3))


def test_batch_norm_statistics_without_recording():
    """In train mode but not recorded, the batch's mean and variance still come out."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 5, 4, 4)) * 2 + 3).astype(np.float32)

    def run():
        args = [mx.nd.ones(5), mx.nd.zeros(5), mx.nd.zeros(5), mx.nd.ones(5)]
        with autograd.train_mode():
            y, mean, var = mx.nd.BatchNorm(mx.nd.array(x), *args, output_mean_var=True)
        return [y.asnumpy(), mean.asnumpy(), var.asnumpy()]

    r = run_both(run)
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want)
    close(r["onednn"][1], x.mean(axis=(0, 2, 3)))
    close(r["onednn"][2], x.var(axis=(0, 2, 3)))


@pytest.mark.parametrize("kind", ["relu", "sigmoid", "tanh", "softrelu"])
def test_activations_match_numpy_with_nan_and_infinities(kind):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(3 * 4096) * 4).astype(np.float32)  # above ACTIVATION_MIN
    x[:7] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 100.0, -100.0]
    x = x.reshape(3, 64, 64)
    gy = rng.standard_normal(x.shape).astype(np.float32)

    def run():
        a = mx.nd.array(x)
        a.attach_grad()
        with autograd.record():
            y = getattr(mx.nd, kind)(a)
        y.backward(mx.nd.array(gy))
        return [y.asnumpy(), a.grad.asnumpy()]

    with np.errstate(invalid="ignore"):
        r = run_both(run)
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    if kind == "relu":  # NaN in, NaN out and a NaN gradient, as MXNet's ReLU gives
        assert np.isnan(r["onednn"][0][0, 0, 0]) and np.isnan(r["onednn"][1][0, 0, 0])


def test_kernels_that_ran_for_inference_have_no_gradient():
    k = kernels.onednn.OnednnKernels()
    x = np.ones((1, 2, 4, 4), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    geom = kernels.ConvGeometry((1, 1), (0, 0), (1, 1), 1)
    y, grad = k.convolution(x, w, None, geom, (2, 2), train=False)
    assert (y == 18).all()
    with pytest.raises(KernelError, match="convolution ran for inference"):
        grad(y, (True, True))
    y, grad = k.activation(np.ones(8192, np.float32), "relu", train=False)
    with pytest.raises(KernelError, match="activation ran for inference"):
        grad(y, (True,))


def test_other_dtypes_use_the_portable_kernels():
    from mxrs._backend import NUMPY

    with kernels.use("onednn"):
        assert kernels.select("Convolution", NUMPY, np.dtype(np.float32)).name == "onednn"
        assert kernels.select("Convolution", NUMPY, np.dtype(np.float64)).name == "numpy"
        assert kernels.select("Dot", NUMPY, np.dtype(np.float32)).name == "numpy"
        x = mx.nd.ones((1, 2, 4, 4), dtype="float64")
        w = mx.nd.ones((3, 2, 3, 3), dtype="float64")
        y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True)
        assert y.dtype == np.float64 and float(y.asnumpy().max()) == 18.0
    with kernels.use("numpy"):
        assert kernels.select("Convolution", NUMPY, np.dtype(np.float32)).name == "numpy"


@pytest.mark.parametrize(
    "name", ["resnet18_v1", "resnet18_v2", "mobilenet0.25", "mobilenetv2_0.25"]
)
def test_model_zoo_training_step_matches_numpy(name):
    """A model's output and every parameter's gradient agree between the providers.

    Gradients that are zero in exact arithmetic (a convolution's bias before a batch norm) are
    rounding noise on both sides, so every tensor is compared at the scale of the largest
    gradient of the model; ReLU6's clipping turns a rounding difference near its bounds into
    a gradient routed differently, hence 5e-4 of that scale.
    """
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    label = mx.nd.array(rng.integers(0, 10, 8))

    def run():
        mx.random.seed(7)
        net = vision.get_model(name, classes=10)
        net.initialize(mx.init.Xavier())
        net.hybridize()
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        with autograd.record():
            out = net(mx.nd.array(x))
            loss = loss_fn(out, label)
        loss.backward()
        grads = [p.grad() for p in net.collect_params().values() if p.grad_req != "null"]
        return [out.asnumpy()] + [g.asnumpy() for g in grads]

    r = run_both(run)
    assert len(r["onednn"]) > 10
    close(r["onednn"][0], r["numpy"][0], rtol=1e-4, atol=1e-4)
    scale = max(float(np.abs(g).max()) for g in r["numpy"][1:])
    for got, want in zip(r["onednn"][1:], r["numpy"][1:], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=5e-4 * scale)


def test_kernel_rejects_buffers_that_do_not_fit():
    kernels.use("onednn").__enter__()  # loads oneDNN
    k = _native.OnednnConv([1, 2, 4, 4], [3, 2, 3, 3], 1, False, [1, 1], [1, 1], [0, 0], True)
    assert list(k.dst_shape) == [1, 3, 2, 2]
    x = np.ones((1, 2, 4, 4), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    y = np.empty((1, 3, 2, 2), np.float32)
    k.forward(x, w, None, y)
    assert (y == 18).all()
    with pytest.raises(
        KernelError, match=r"strides \[24, 12, 3, 1\] do not lay out \[1, 2, 4, 4\]"
    ):
        k.forward(np.ones((1, 2, 4, 3), np.float32), w, None, y)
    with pytest.raises(KernelError, match=r"array of 1 dimensions where the kernel takes \[1, 2"):
        k.forward(np.ones(32, np.float32), w, None, y)
    with pytest.raises(KernelError, match="buffer of 17 elements where the kernel needs 54"):
        k.forward(x, np.ones(17, np.float32), None, y)
    with pytest.raises(KernelError, match="must be a dense float32 array"):
        k.forward(np.ones((1, 2, 4, 8), np.float32)[..., ::2], w, None, y)
    with pytest.raises(KernelError, match="bias given to a kernel built without one"):
        k.forward(x, w, np.ones(3, np.float32), y)
    with pytest.raises(TypeError):
        k.forward(x.astype(np.float64), w, None, y)
    with pytest.raises(KernelError, match="does not fit"):
        _native.OnednnConv([1, 3, 4, 4], [3, 2, 3, 3], 1, False, [1, 1], [1, 1], [0, 0], True)
    with pytest.raises(KernelError, match="larger than the padded input"):
        _native.OnednnConv([1, 2, 2, 2], [3, 2, 3, 3], 1, False, [1, 1], [1, 1], [0, 0], False)
    infer = _native.OnednnConv([1, 2, 4, 4], [3, 2, 3, 3], 1, False, [1, 1], [1, 1], [0, 0], False)
    with pytest.raises(KernelError, match="built for inference"):
        infer.backward(x, w, y, np.empty_like(x), None, None)
    with pytest.raises(KernelError, match="no pooling kind"):
        _native.OnednnPool(
            [1, 2, 4, 4], [32, 16, 4, 1], "median", [2, 2], [2, 2], [0, 0], [0, 0], False
        )


def run_python(code, **env):
    """Runs ``code`` in a fresh interpreter with ``env`` added; (exit status, stdout+stderr)."""
    full = dict(os.environ)
    full.pop("MXRS_KERNELS", None)
    full.update(env)
    p = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
    return p.returncode, p.stdout + p.stderr


CONV_ONCE = """
import mxrs as mx, warnings
warnings.simplefilter("always")
x = mx.nd.ones((1, 1, 3, 3)); w = mx.nd.ones((1, 1, 3, 3))
for _ in range(3):
    y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True)
print("result", y.asscalar(), mx.kernels.provider_name())
"""


def test_default_is_onednn():
    rc, out = run_python(CONV_ONCE)
    assert rc == 0 and "result 9.0 onednn" in out, out
    assert "Warning" not in out


def test_numpy_by_hand():
    rc, out = run_python(CONV_ONCE, MXRS_KERNELS="numpy")
    assert rc == 0 and "result 9.0 numpy" in out, out


def test_missing_library_falls_back_once_with_the_reason():
    rc, out = run_python(CONV_ONCE, MXRS_ONEDNN_LIBRARY="/nonexistent/libdnnl.so.3")
    assert rc == 0 and "result 9.0 numpy" in out, out
    assert out.count("RuntimeWarning: mxrs computes with NumPy: oneDNN could not be loaded") == 1
    assert "/nonexistent/libdnnl.so.3" in out


def test_onednn_by_hand_without_the_library_is_an_error():
    rc, out = run_python(
        CONV_ONCE, MXRS_KERNELS="onednn", MXRS_ONEDNN_LIBRARY="/nonexistent/libdnnl.so.3"
    )
    assert rc == 1
    assert "KernelError: MXRS_KERNELS=onednn, but oneDNN could not be loaded" in out, out


def test_unknown_provider_is_an_error():
    rc, out = run_python(CONV_ONCE, MXRS_KERNELS="mkl")
    assert rc == 1 and "MXRS_KERNELS='mkl': choose one of auto, numpy, onednn" in out, out
    with pytest.raises(KernelError, match="unknown kernel provider 'mkl'"):
        with kernels.use("mkl"):
            pass


THREADS = """
import threading, mxrs as mx
def conv():
    x = mx.nd.ones((1, 1, 8, 8)); w = mx.nd.ones((1, 1, 3, 3))
    mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True).asnumpy()
t = threading.Thread(target=conv)  # the cap holds in whichever thread runs the kernels
t.start(); t.join()
conv()
print("described", mx.kernels.describe()["max_threads"])
"""


@pytest.mark.parametrize(
    "cap, omp, nthr", [(None, "2", "2"), ("1", "2", "1"), ("3", "2", "2"), ("1", None, "1")]
)
def test_mxnet_omp_max_threads_caps_onednn_threads(cap, omp, nthr):
    env = {"ONEDNN_VERBOSE": "1"}
    for name, value in (("MXNET_OMP_MAX_THREADS", cap), ("OMP_NUM_THREADS", omp)):
        if value is not None:
            env[name] = value
    full = {k: v for k, v in os.environ.items() if k not in ("MXNET_OMP_MAX_THREADS",)}
    if omp is None:
        full.pop("OMP_NUM_THREADS", None)
    full.update(env)
    full.pop("MXRS_KERNELS", None)
    p = subprocess.run(
        [sys.executable, "-c", THREADS], env=full, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    # oneDNN reports the OpenMP threads it runs on when its first primitive executes
    assert f"runtime:OpenMP,nthr:{nthr}\n" in p.stdout, p.stdout[:400]
    assert f"described {nthr if cap else None}" in p.stdout


def test_bad_thread_cap_is_named_and_numpy_computes():
    rc, out = run_python(CONV_ONCE, MXNET_OMP_MAX_THREADS="two")
    assert rc == 0 and "result 9.0 numpy" in out, out
    assert "MXNET_OMP_MAX_THREADS='two': expected a whole number of threads, at least 1" in out


def test_library_is_found_through_the_installed_package(monkeypatch):
    import importlib.metadata

    from mxrs.kernels import onednn

    dist = importlib.metadata.distribution("onednn-cpu-gomp")
    lib = [f for f in dist.files if f.name == "libdnnl.so.3"]
    assert lib, "onednn-cpu-gomp lists libdnnl.so.3 among its files"
    monkeypatch.delenv("MXRS_ONEDNN_LIBRARY", raising=False)
    found = onednn.library_candidates()
    assert found[0] == os.path.normpath(str(dist.locate_file(lib[0])))
    assert found[-1] == "libdnnl.so.3" and len(found) == len(set(found))
    monkeypatch.setenv("MXRS_ONEDNN_LIBRARY", "/opt/dnnl/libdnnl.so.3")
    assert onednn.library_candidates() == ["/opt/dnnl/libdnnl.so.3"]
