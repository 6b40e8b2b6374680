"""The CUDA provider (cuDNN's convolutions, the fused CUDA kernels) gives the CPU's numbers.

Each operator runs on gpu(0) in float32 (TF32 off, so float32 arithmetic is compared) and
float16, and on cpu(0) in float64; outputs and every gradient are compared with tolerances of
the GPU type. Spies check that cuDNN or the fused kernel served the call. Every test here
carries the ``gpu`` marker and is skipped when CuPy or a CUDA GPU is missing.
"""

import os

import mxrs as mx
import numpy as np
import pytest
from gradcheck import rand
from mxrs import autograd, gluon, kernels, nd

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy", reason="GPU tests need CuPy and a CUDA GPU")
if mx.context.num_gpus() == 0:
    pytest.skip("GPU tests need a CUDA GPU", allow_module_level=True)

os.environ["MXRS_CUDNN_TF32"] = "0"  # read when cuDNN loads: compare float32 arithmetic

TOL = {np.float32: 2e-4, np.float16: 2e-2}


def _run(fn, inputs, ctx, dtype, nondiff=(), head_seed=7):
    arrays = []
    for i, v in enumerate(inputs):
        v = np.asarray(v)
        dt = dtype if v.dtype.kind == "f" and i not in nondiff else v.dtype
        if v.dtype.kind == "f" and i in nondiff:
            dt = np.float32 if dtype == np.float16 else dtype
        arrays.append(nd.array(v, ctx=ctx, dtype=dt))
    for i, a in enumerate(arrays):
        if i not in nondiff:
            a.attach_grad()
    with autograd.record():
        out = fn(*arrays)
    head = nd.array(rand(*out.shape, seed=head_seed), ctx=ctx, dtype=out.dtype)
    out.backward(head)
    grads = [None if i in nondiff else a.grad.asnumpy() for i, a in enumerate(arrays)]
    return out.asnumpy().astype(np.float64), grads


def _close(got, want, dtype, what):
    got = np.asarray(got, dtype=np.float64)
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got - want).max()) / scale
    assert np.isfinite(got).all() == np.isfinite(want).all(), what
    assert err <= TOL[dtype], f"{what}: max error {err:.3g} (scaled) over {TOL[dtype]}"


def check_gpu(fn, inputs, dtype, nondiff=()):
    """``fn`` on gpu(0) in ``dtype`` against cpu(0) in float64 (inputs rounded to ``dtype``)."""
    rounded = [
        np.asarray(v).astype(dtype).astype(np.float64) if np.asarray(v).dtype.kind == "f" else v
        for v in inputs
    ]
    want, wgrads = _run(fn, rounded, mx.cpu(0), np.float64, nondiff)
    got, ggrads = _run(fn, rounded, mx.gpu(0), dtype, nondiff)
    _close(got, want, dtype, "output")
    for i, (g, w) in enumerate(zip(ggrads, wgrads, strict=True)):
        if w is not None:
            _close(g, w, dtype, f"gradient of input {i}")


def _cuda():
    return kernels.select("Convolution", mx.gpu(0).backend, np.dtype(np.float32))


def _graphs():
    return kernels.describe()["gpu"]["graphs_built"]


def test_cudnn_serves_gpu_convolutions():
    k = _cuda()
    assert k.name == "cuda"
    info = k.describe()
    assert info["convolution"] == "cudnn", info
    assert info["tf32"] is False
    # float64 stays on the portable CuPy kernels
    assert kernels.select("Convolution", mx.gpu(0).backend, np.dtype(np.float64)).name == "cupy"


CONV_CASES = [
    # data shape, weight shape, attributes
    ((4, 8, 12, 10), (16, 8, 3, 3), {"pad": (1, 1)}),
    (
        (3, 6, 11, 9),
        (6, 3, 3, 3),
        {"stride": (2, 1), "pad": (1, 1), "dilate": (1, 2), "num_group": 2},
    ),
    ((2, 8, 9, 9), (8, 1, 3, 3), {"pad": (1, 1), "num_group": 8}),  # depthwise
    ((2, 4, 13), (5, 4, 3), {"stride": (2,), "pad": (1,)}),  # 1-D
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), {"pad": (1, 1, 1)}),  # 3-D
    ((4, 16, 7, 7), (32, 16, 1, 1), {"stride": (2, 2)}),  # ResNet's projection
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_convolution_matches_cpu(case, dtype):
    xs, ws, attrs = CONV_CASES[case]
    before = _graphs()

    def fn(x, w, b):
        return nd.Convolution(x, w, b, kernel=ws[2:], num_filter=ws[0], **attrs)

    check_gpu(fn, [rand(*xs, seed=1), rand(*ws, seed=2) * 0.5, rand(ws[0], seed=3)], dtype)
    assert _graphs() >= before  # built now, or earlier for this very shape
    assert not kernels.describe()["gpu"]["unsupported"], kernels.describe()["gpu"]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_deconvolution_matches_cpu(dtype):
    def fn(x, w, b):
        return nd.Deconvolution(
            x, w, b, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1), num_filter=6, num_group=2
        )

    check_gpu(fn, [rand(2, 4, 5, 6, seed=1), rand(4, 3, 3, 3, seed=2), rand(6, seed=3)], dtype)


def test_convolution_graphs_are_cached_by_shape():
    x = nd.array(rand(2, 3, 8, 8), ctx=mx.gpu(0), dtype=np.float32)
    w = nd.array(rand(5, 3, 3, 3), ctx=mx.gpu(0), dtype=np.float32)
    nd.Convolution(x, w, kernel=(3, 3), num_filter=5, no_bias=True, pad=(1, 1)).wait_to_read()
    n = _graphs()
    for _ in range(3):
        nd.Convolution(x, w, kernel=(3, 3), num_filter=5, no_bias=True, pad=(1, 1)).wait_to_read()
    assert _graphs() == n


POOL_CASES = [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1), "pool_type": "avg"},
    {
        "kernel": (3, 3),
        "stride": (2, 2),
        "pad": (1, 1),
        "pool_type": "avg",
        "count_include_pad": False,
    },
    {"kernel": (3, 2), "stride": (2, 1), "pool_type": "sum"},
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "max", "pooling_convention": "full"},
    {"global_pool": True, "kernel": (1, 1), "pool_type": "avg"},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pooling_matches_cpu(case, dtype):
    check_gpu(lambda x: nd.Pooling(x, **POOL_CASES[case]), [rand(2, 3, 9, 8, seed=4)], dtype)


def test_max_pooling_gradient_goes_to_the_first_maximum():
    # Integer-valued input: windows hold ties, and the gradient must pick the first maximum in
    # row-major order, as the CPU (and MXNet) do.
    v = np.random.default_rng(0).integers(0, 3, (2, 2, 7, 7)).astype(np.float32)
    fn = lambda x: nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")  # noqa: E731
    want, wg = _run(fn, [v], mx.cpu(0), np.float32)
    got, gg = _run(fn, [v], mx.gpu(0), np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(gg[0], wg[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_batch_norm_matches_cpu(dtype, train, relu):
    op = nd.contrib.BatchNormWithReLU if relu else nd.BatchNorm

    def fn(x, g, b, m, v):
        return op(x, g, b, m, v, fix_gamma=False, use_global_stats=not train, eps=1e-5)

    x = rand(4, 6, 5, 7, seed=5) * 3 + 1
    stats = [rand(6, seed=8) * 0.1, rand(6, seed=9, low=0.5, high=1.5)]
    # the running statistics stay float32 with float16 data, as Gluon keeps them
    check_gpu(fn, [x, rand(6, seed=6) + 2, rand(6, seed=7), *stats], dtype, nondiff=(3, 4))


def test_batch_norm_updates_running_statistics_as_the_cpu_does():
    x = rand(8, 4, 3, 3, seed=1) * 2 + 0.5
    res = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        layer = gluon.nn.BatchNorm(in_channels=4)
        layer.initialize(ctx=ctx)
        data = nd.array(x, ctx=ctx, dtype=np.float32)
        with autograd.record():
            y = layer(data)
        y.backward()
        res[ctx.device_type] = (
            layer.running_mean.data(ctx).asnumpy(),
            layer.running_var.data(ctx).asnumpy(),
        )
    for cpu, gpu in zip(res["cpu"], res["gpu"], strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activations_match_cpu(act, dtype):
    check_gpu(lambda x: nd.Activation(x, act_type=act), [rand(3, 40, seed=2) * 3], dtype)


def test_relu_keeps_nan_on_the_gpu():
    x = nd.array([np.nan, -1.0, 2.0], ctx=mx.gpu(0), dtype=np.float32)
    x.attach_grad()
    with autograd.record():
        y = nd.relu(x)
    y.backward()
    out, g = y.asnumpy(), x.grad.asnumpy()
    assert np.isnan(out[0]) and out[1] == 0 and out[2] == 2
    assert np.isnan(g[0]) and g[1] == 0 and g[2] == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_fused_sgd_matches_the_cpu_update(momentum, dtype):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal(1000).astype(dtype)
    grads = [rng.standard_normal(1000).astype(dtype) * 5 for _ in range(3)]
    res = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        opt = mx.optimizer.SGD(
            learning_rate=0.1, momentum=momentum, wd=0.01, rescale_grad=0.5, clip_gradient=1.0
        )
        upd = mx.optimizer.get_updater(opt)
        w = nd.array(w0, ctx=ctx, dtype=dtype)
        for g in grads:
            upd(0, nd.array(g, ctx=ctx, dtype=dtype), w)
        res[ctx.device_type] = w.asnumpy().astype(np.float64)
    np.testing.assert_allclose(res["gpu"], res["cpu"], rtol=TOL[dtype], atol=TOL[dtype])


def test_fused_sgd_runs_one_kernel_on_the_gpu(monkeypatch):
    from mxrs.kernels import cuda

    calls = []
    real = cuda.sgd_update
    monkeypatch.setattr(cuda, "sgd_update", lambda *a: calls.append(1) or real(*a))
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    w = nd.ones((10,), ctx=mx.gpu(0))
    mx.optimizer.get_updater(opt)(0, nd.ones((10,), ctx=mx.gpu(0)), w)
    assert calls == [1]
    np.testing.assert_allclose(w.asnumpy(), 0.9, rtol=1e-6)


def _resnet_block_losses(ctx, dtype, steps=4):
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(  # every shape given, so both contexts start from the same CPU-drawn weights
        gluon.nn.Conv2D(8, 3, padding=1, use_bias=False, in_channels=3),
        gluon.nn.BatchNorm(in_channels=8),
        gluon.nn.Activation("relu"),
        gluon.nn.MaxPool2D(3, 2, 1),
        gluon.nn.Conv2D(8, 3, strides=2, padding=1, in_channels=8),
        gluon.nn.BatchNorm(in_channels=8),
        gluon.nn.Activation("relu"),
        gluon.nn.GlobalAvgPool2D(),
        gluon.nn.Dense(5, in_units=8),
    )
    net.initialize(mx.init.Xavier(), ctx=mx.cpu(0))
    net.collect_params().reset_ctx(ctx)
    if dtype == np.float16:
        net.cast("float16")
    opt = {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": dtype == np.float16}
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt)
    rng = np.random.default_rng(1)
    x = nd.array(rng.uniform(-1, 1, (16, 3, 16, 16)), ctx=ctx, dtype=dtype)
    y = nd.array(rng.integers(0, 5, 16), ctx=ctx, dtype=dtype)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(16)
        losses.append(float(loss.mean().asscalar()))
    return losses, net


def test_training_on_the_gpu_follows_the_cpu():
    cpu, _ = _resnet_block_losses(mx.cpu(0), np.float32)
    gpu, _ = _resnet_block_losses(mx.gpu(0), np.float32)
    np.testing.assert_allclose(gpu, cpu, rtol=2e-3)
    assert gpu[-1] < gpu[0]


def test_float16_training_keeps_float32_masters_and_learns():
    losses, net = _resnet_block_losses(mx.gpu(0), np.float16, steps=8)
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    conv = net[0].weight.data(mx.gpu(0))
    assert conv.dtype == np.float16
    assert net[1].gamma.data(mx.gpu(0)).dtype == np.float32  # BatchNorm keeps float32


def test_portable_choice_gives_the_same_numbers():
    x = rand(2, 4, 9, 9, seed=1)
    w = rand(6, 4, 3, 3, seed=2)

    def run():
        a = nd.array(x, ctx=mx.gpu(0), dtype=np.float32)
        b = nd.array(w, ctx=mx.gpu(0), dtype=np.float32)
        y = nd.Convolution(a, b, kernel=(3, 3), num_filter=6, no_bias=True, pad=(1, 1))
        return nd.Pooling(nd.relu(y), kernel=(2, 2), stride=(2, 2)).asnumpy()

    fused = run()
    with kernels.use("cupy"):
        assert kernels.select("Convolution", mx.gpu(0).backend, np.dtype(np.float32)).name == "cupy"
        portable = run()
    np.testing.assert_allclose(fused, portable, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multi_precision_sgd_is_one_kernel_and_matches_the_cpu(momentum, monkeypatch):
    from mxrs.kernels import cuda

    calls = []
    real = cuda.mp_sgd_update
    monkeypatch.setattr(cuda, "mp_sgd_update", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal(500).astype(np.float16)
    grads = [rng.standard_normal(500).astype(np.float16) for _ in range(3)]
    res = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        opt = mx.optimizer.SGD(
            learning_rate=0.1, momentum=momentum, wd=0.01, multi_precision=True, clip_gradient=2.0
        )
        upd = mx.optimizer.get_updater(opt)
        w = nd.array(w0, ctx=ctx, dtype=np.float16)
        for g in grads:
            upd(0, nd.array(g, ctx=ctx, dtype=np.float16), w)
        master = upd.states[0][1]  # SGD keeps (momentum, master)
        res[ctx.device_type] = (w.asnumpy(), master.asnumpy())
    assert len(calls) == 3
    assert res["gpu"][0].dtype == np.float16 and res["gpu"][1].dtype == np.float32
    np.testing.assert_allclose(res["gpu"][1], res["cpu"][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(res["gpu"][0], res["gpu"][1].astype(np.float16))


# -- the vectorized elementwise kernels ------------------------------------------------------


def _float_kernel_cases():
    from mxrs import _cuda_float
    from mxrs.kernels import cuda

    relu, relu_bwd = cuda._ACT["relu"]
    return [
        (_cuda_float.ADD, 2, lambda a, b: a + b),
        (cuda._ADD_RELU, 2, lambda a, b: np.where((a + b > 0) | np.isnan(a + b), a + b, 0)),
        (relu, 1, lambda x: np.where((x > 0) | np.isnan(x), x, 0)),
        (relu_bwd, 2, lambda y, g: np.where(np.isnan(y), y, np.where(y > 0, g, 0))),
    ]


@pytest.mark.parametrize("vector", [True, False], ids=["vectorized", "strided"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 123, 100_003])
def test_float_kernels_compute_every_element(n, dtype, vector, monkeypatch):
    """Every element, the tail past the last 16 bytes included, in both ways of running."""
    from mxrs import _cuda_float

    ran = []
    if not vector:
        monkeypatch.setattr(_cuda_float, "_vectorizable", lambda arrays: False)
    real = _cuda_float.FloatKernel._kernel
    monkeypatch.setattr(_cuda_float.FloatKernel, "_kernel", lambda *a: ran.append(1) or real(*a))
    rng = np.random.default_rng(n)
    for kernel, arity, want in _float_kernel_cases():
        host = [(rng.standard_normal(n) * 3).astype(dtype) for _ in range(arity)]
        host[0][::11] = np.nan
        got = kernel(tuple(cupy.asarray(h) for h in host))[0].get()
        with np.errstate(invalid="ignore"):
            ref = want(*(h.astype(np.float64) for h in host)).astype(dtype)
        np.testing.assert_array_equal(got, ref, err_msg=f"{kernel.name} n={n}")
    assert bool(ran) == vector


def test_float_kernels_take_misaligned_and_strided_views():
    from mxrs import _cuda_float

    base = cupy.arange(40, dtype=cupy.float16) - 20
    for a, b in ((base[1:], base[:-1]), (base[::2], base[1::2])):  # 2 bytes off; strided
        np.testing.assert_array_equal(_cuda_float.add(a, b).get(), (a + b).get())


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(3, 5, 7, 7), (2, 3, 1, 1), (1, 9, 11)])
def test_batch_norm_across_channel_boundaries_matches_cpu(shape, dtype):
    """Shapes whose channels end inside a 16-byte vector, and with a tail past the last one."""

    def fn(x, g, b, m, v):
        return nd.contrib.BatchNormWithReLU(x, g, b, m, v, fix_gamma=False, eps=1e-5)

    c = shape[1]
    x = rand(*shape, seed=3) * 2 + 0.3
    stats = [np.zeros(c), np.ones(c)]
    check_gpu(fn, [x, rand(c, seed=4) + 1.5, rand(c, seed=5), *stats], dtype, nondiff=(3, 4))


def test_gradient_sums_run_the_vectorized_addition(monkeypatch):
    from mxrs import _cuda_float

    names = []
    real = _cuda_float.FloatKernel._run
    monkeypatch.setattr(
        _cuda_float.FloatKernel, "_run", lambda self, *a: names.append(self.name) or real(self, *a)
    )
    v = rand(4, 33, seed=9)
    x = nd.array(v, ctx=mx.gpu(0), dtype=np.float16)
    x.attach_grad()
    with autograd.record():
        y = nd.relu(x) + x * 3  # x's gradient is the sum of two
    y.backward()
    assert "add" in names
    want = (v > 0) + 3.0
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-3)


def test_amp_float16_training_on_the_gpu():
    """``mx.contrib.amp`` on the GPU: convolutions and dense layers compute in float16, the
    parameters stay float32, dynamic loss scaling steps, and the loss falls."""
    from mxrs.contrib.amp import amp

    amp._reset()
    try:
        amp.init("float16")
        ctx = mx.gpu(0)
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        net.add(
            gluon.nn.Conv2D(8, 3, padding=1, in_channels=3),
            gluon.nn.BatchNorm(in_channels=8),
            gluon.nn.Activation("relu"),
            gluon.nn.GlobalAvgPool2D(),
            gluon.nn.Dense(5, in_units=8),
        )
        net.initialize(mx.init.Xavier(), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        amp.init_trainer(trainer)
        rng = np.random.default_rng(2)
        x = nd.array(rng.uniform(-1, 1, (16, 3, 8, 8)), ctx=ctx)
        y = nd.array(rng.integers(0, 5, 16), ctx=ctx)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        losses = []
        for _ in range(10):
            with autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
                with amp.scale_loss(loss, trainer) as scaled:
                    autograd.backward(scaled)
            trainer.step(16)
            losses.append(float(loss.mean().asscalar()))
        assert out.dtype == np.float16
        assert net[0].weight.data(ctx).dtype == np.float32
        assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    finally:
        amp._reset()
