"""Batch norm on channels-last data, mxrs's own two-pass loops (``mxrs:channels_last``): the
output, the batch's statistics and every gradient against float64 arithmetic, with and without
the fused ReLU, with the batch's or given statistics; the variance of data far from zero; the
same numbers on one thread and two; and a convolution's output normalised inside a recorded
graph on both kernel providers."""

import os
import subprocess
import sys

import mxrs as mx
import numpy as np
import pytest
from mxrs import _native, autograd, kernels
from mxrs.kernels._layout import channels_last, strides_of
from onednn_native import needs_onednn

pytestmark = needs_onednn

EPS = 1e-3


@pytest.fixture(autouse=True, scope="module")
def onednn_loaded():
    """The native kernels need oneDNN loaded (the provider loads it once)."""
    assert kernels.describe()["provider"] == "onednn"


def as_channels_last(a):
    """``a`` copied into a channels-last array of its shape (C fastest in memory)."""
    out = channels_last(a.shape) if a.ndim > 2 else np.empty_like(a)
    out[...] = a
    return out


def reference(x, gy, gamma, beta, mean, var, relu, use_global):
    """Output, batch mean and variance, and the gradients of x, gamma, beta, in float64."""
    x, gy = x.astype(np.float64), gy.astype(np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if not use_global:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    mean, var = np.asarray(mean, np.float64), np.asarray(var, np.float64)
    inv = 1 / np.sqrt(var + EPS)
    xhat = (x - mean.reshape(shape)) * inv.reshape(shape)
    y = xhat * gamma.reshape(shape) + beta.reshape(shape)
    if relu:
        gy = gy * (y > 0)
        y = np.maximum(y, 0)
    gbeta = gy.sum(axis=axes)
    ggamma = (gy * xhat).sum(axis=axes)
    a = (gamma * inv).reshape(shape)
    if use_global:
        gx = gy * a
    else:
        m = x.size / x.shape[1]
        gx = a * (gy - gbeta.reshape(shape) / m - xhat * ggamma.reshape(shape) / m)
    return y, mean, var, gx, ggamma, gbeta


def run(x, gy, gamma, beta, mean, var, relu, use_global):
    """The native kernel on ``x``'s layout: (implementation, y, mean, var, gx, ggamma, gbeta)."""
    k = _native.OnednnBatchNorm(list(x.shape), strides_of(x), EPS, use_global, True, relu)
    c = x.shape[1]
    mean, var = np.array(mean, np.float32), np.array(var, np.float32)
    y = np.empty_like(x)
    ws = np.empty(k.workspace_bytes, np.uint8) if k.workspace_bytes else None
    k.forward(x, gamma, beta, mean, var, y, ws)
    gx, gg, gb = np.empty_like(x), np.empty(c, np.float32), np.empty(c, np.float32)
    k.backward(x, gy, gamma, mean.copy(), var.copy(), gx, gg, gb, ws, beta)
    return k.implementation, y, mean, var, gx, gg, gb


def close(got, want, tol=2e-5):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


SHAPES = [(4, 32, 5, 5), (3, 20, 4, 6), (6, 7), (2, 40, 3, 2, 3), (2, 1, 4, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("use_global", [False, True])
def test_channels_last_matches_float64(shape, relu, use_global):
    rng = np.random.default_rng(5)
    c = shape[1]
    x = as_channels_last((rng.standard_normal(shape) * 2 + 0.5).astype(np.float32))
    gy = as_channels_last(rng.standard_normal(shape).astype(np.float32))
    gamma = rng.standard_normal(c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    mean0 = rng.standard_normal(c).astype(np.float32)
    var0 = (rng.random(c) + 0.5).astype(np.float32)
    impl, *got = run(x, gy, gamma, beta, mean0, var0, relu, use_global)
    assert impl == "mxrs:channels_last"
    want = reference(x, gy, gamma, beta, mean0, var0, relu, use_global)
    if relu:
        assert (got[0] == 0).any() and (got[0] > 0).any()  # the ReLU cut somewhere
    for name, g, w in zip(("y", "mean", "var", "gx", "ggamma", "gbeta"), got, want, strict=True):
        try:
            close(g, w)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from None


def test_plain_layout_stays_on_onednn():
    x = np.ones((2, 3, 4, 4), np.float32)
    k = _native.OnednnBatchNorm(list(x.shape), strides_of(x), EPS, False, True, True)
    assert k.implementation != "mxrs:channels_last"
    assert k.workspace_bytes > 0  # oneDNN's fused ReLU keeps its mask; the loops recompute it


def test_variance_of_data_far_from_zero():
    """Mean 1000, standard deviation 0.01: float32's E[x²] − E[x]² would lose every digit."""
    rng = np.random.default_rng(6)
    shape = (8, 48, 16, 16)
    x = as_channels_last((1000 + 0.01 * rng.standard_normal(shape)).astype(np.float32))
    gy = as_channels_last(rng.standard_normal(shape).astype(np.float32))
    ones, zeros = np.ones(48, np.float32), np.zeros(48, np.float32)
    _, y, mean, var, gx, gg, gb = run(x, gy, ones, zeros, zeros, ones, False, False)
    want = reference(x, gy, ones, zeros, zeros, ones, False, False)
    np.testing.assert_allclose(mean, want[1], rtol=1e-7)
    np.testing.assert_allclose(var, want[2], rtol=1e-4)
    close(y, want[0], tol=1e-3)  # float32 x carries 6e-5 of absolute error, 0.6% of a std


def test_bad_buffers_are_named():
    x = as_channels_last(np.ones((2, 4, 3, 3), np.float32))
    k = _native.OnednnBatchNorm(list(x.shape), strides_of(x), EPS, False, True, False)
    y = np.empty_like(x)
    with pytest.raises(Exception, match="gamma holds 3 values, not 4"):
        k.forward(
            x,
            np.ones(3, np.float32),
            np.zeros(4, np.float32),
            np.zeros(4, np.float32),
            np.ones(4, np.float32),
            y,
        )
    infer = _native.OnednnBatchNorm(list(x.shape), strides_of(x), EPS, True, False, False)
    c = np.ones(4, np.float32)
    with pytest.raises(Exception, match="built for inference"):
        infer.backward(x, x, c, c.copy(), c.copy(), y, c.copy(), c.copy())


THREADS_SCRIPT = """
import numpy as np, sys
sys.path.insert(0, {tests!r})
from test_bnorm_rows import as_channels_last, run
from mxrs import kernels
assert kernels.describe()["provider"] == "onednn"
rng = np.random.default_rng(9)
shape = (16, 64, 32, 32)
x = as_channels_last(rng.standard_normal(shape).astype(np.float32))
gy = as_channels_last(rng.standard_normal(shape).astype(np.float32))
c = np.ones(64, np.float32)
out = run(x, gy, c, c * 0.5, c * 0, c, True, False)[1:]
np.savez({path!r}, *out)
"""


def test_threads_split_the_rows_and_agree(tmp_path):
    """Two threads sum their rows apart and add the sums: the same numbers as one thread's."""
    results = []
    for threads in (1, 2):
        path = tmp_path / f"t{threads}.npz"
        script = THREADS_SCRIPT.format(tests=os.path.dirname(__file__), path=str(path))
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
        with np.load(path) as f:
            results.append([f[k] for k in sorted(f.files)])
    for one, two in zip(*results, strict=True):
        close(two, one, tol=1e-5)


@pytest.mark.parametrize("relu", [False, True])
def test_convolution_then_batch_norm_on_both_providers(relu):
    """A convolution's (channels-last) output normalised in a recorded graph: every gradient
    and the moving statistics equal the NumPy provider's."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 5, 9, 9)).astype(np.float32)
    w = rng.standard_normal((24, 5, 3, 3)).astype(np.float32)
    gamma = rng.standard_normal(24).astype(np.float32)
    beta = rng.standard_normal(24).astype(np.float32)
    gy = rng.standard_normal((4, 24, 9, 9)).astype(np.float32)
    results = {}
    for provider in ("numpy", "onednn"):
        with kernels.use(provider):
            args = [mx.nd.array(a) for a in (x, w, gamma, beta)]
            mm, mv = mx.nd.zeros(24), mx.nd.ones(24)
            for a in args:
                a.attach_grad()
            with autograd.record():
                h = mx.nd.Convolution(
                    args[0], args[1], kernel=(3, 3), pad=(1, 1), num_filter=24, no_bias=True
                )
                bn = mx.nd.contrib.BatchNormWithReLU if relu else mx.nd.BatchNorm
                y = bn(h, args[2], args[3], mm, mv, fix_gamma=False, eps=EPS)
            y.backward(mx.nd.array(gy))
            results[provider] = [y.asnumpy(), mm.asnumpy(), mv.asnumpy()] + [
                a.grad.asnumpy() for a in args
            ]
    for got, want in zip(results["onednn"], results["numpy"], strict=True):
        close(got, want, tol=1e-4)
