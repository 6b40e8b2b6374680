"""The kernel seam for softmax, LRN and the LeakyReLU family: oneDNN's kernels against the
portable NumPy ones (forward and gradient, to float32 tolerance), MXNet's conventions (LRN's
window for an even ``nsize``, softmax's temperature), NaN and infinities, the fallbacks, and
clear errors for buffers that do not fit.
"""

import mxrs as mx
import numpy as np
import pytest
from mxrs import _native, autograd, kernels
from mxrs._backend import NUMPY
from mxrs.base import KernelError, KernelUnsupportedError
from mxrs.kernels import onednn
from onednn_native import needs_onednn

pytestmark = needs_onednn

PROVIDERS = ("numpy", "onednn")


def close(a, b, rtol=2e-5, atol=2e-5):
    """``a`` equals ``b`` to float32 tolerance, scaled by ``b``'s magnitude."""
    finite = np.abs(b[np.isfinite(b)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True)


def run_both(op, x, seed=0):
    """``op``'s output and input gradient under each provider: {provider: (y, gx)}."""
    with np.errstate(all="ignore"):
        shape = op(mx.nd.array(x)).shape
    gy = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    out = {}
    for p in PROVIDERS:
        with kernels.use(p), np.errstate(all="ignore"):
            a = mx.nd.array(x)
            a.attach_grad()
            with autograd.record():
                y = op(a)
            y.backward(mx.nd.array(gy))
            out[p] = (y.asnumpy(), a.grad.asnumpy())
    return out


def assert_providers_agree(op, x, rtol=2e-5, atol=2e-5):
    r = run_both(op, x)
    for got, want in zip(r["onednn"], r["numpy"], strict=True):
        close(got, want, rtol, atol)
    return r


def served(prefix):
    """The kernels of the shared oneDNN provider whose cache key starts with ``prefix``:
    built ones, and None for shapes that fell back."""
    with kernels.use("onednn"):
        k = kernels._onednn()
    return [v for key, v in k._cache.items() if key[0] == prefix and v is not None]


def fresh_provider():
    """A oneDNN provider with an empty kernel cache."""
    with kernels.use("onednn"):
        return onednn.OnednnKernels()


# ----------------------------------------------------------------- softmax

SOFTMAX = [
    # (shape, axis): the innermost axis runs on oneDNN, the others fall back
    ((16, 300), -1),
    ((4, 5, 6, 70), 3),
    ((4, 5, 6, 70), -3),
    ((64, 100), 0),
    ((3, 2000), 1),
]


@pytest.mark.parametrize("shape, axis", SOFTMAX)
@pytest.mark.parametrize("temperature", [None, 2.5, 0.5])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_matches_numpy(shape, axis, temperature, fn):
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(np.float32)

    def op(a):
        return getattr(mx.nd, fn)(a, axis=axis, temperature=temperature)

    assert_providers_agree(op, x)


def test_softmax_runs_on_onednn_along_the_innermost_axis_only():
    k = fresh_provider()
    x = np.random.default_rng(2).standard_normal((8, 512)).astype(np.float32)
    y, grad = k.softmax(x, 1, 1.0, False, True)
    assert [key[0] for key, v in k._cache.items() if v is not None] == ["softmax"]
    close(y, np.exp(x) / np.exp(x).sum(axis=1, keepdims=True))
    k.softmax(np.ascontiguousarray(x.T), 0, 1.0, False, True)
    assert list(k._cache.values())[-1] is None  # oneDNN's reference kernel: NumPy's is faster
    k.softmax(x[:2, :8], 1, 1.0, False, True)  # small: NumPy without asking oneDNN
    assert len(k._cache) == 2


def test_softmax_temperature_scales_the_gradient():
    """d/dx log_softmax(x / T) sums to zero along the axis and is 1/T of the T=1 gradient of
    x / T: checked against central differences in float64."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 1024)).astype(np.float32)
    gy = rng.standard_normal(x.shape).astype(np.float32)
    t = 3.0
    with kernels.use("onednn"):
        a = mx.nd.array(x)
        a.attach_grad()
        with autograd.record():
            y = mx.nd.log_softmax(a, axis=-1, temperature=t)
        y.backward(mx.nd.array(gy))
    x64, g64 = x.astype(np.float64), gy.astype(np.float64)
    p = np.exp(x64 / t - np.log(np.exp(x64 / t).sum(axis=1, keepdims=True)))
    want = (g64 - p * g64.sum(axis=1, keepdims=True)) / t
    close(a.grad.asnumpy(), want, rtol=1e-4, atol=1e-4)
    assert served("softmax")


def test_softmax_activation_modes():
    x = np.random.default_rng(4).standard_normal((4, 8, 16, 16)).astype(np.float32)
    for mode in ("instance", "channel"):
        assert_providers_agree(lambda a, mode=mode: mx.nd.SoftmaxActivation(a, mode=mode), x)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_with_nan_and_infinities_matches_numpy(fn):
    """A row with NaN, +inf, or only -inf is NaN as NumPy's arithmetic makes it; a row with
    some -inf is finite; oneDNN would give otherwise, so such inputs run on NumPy."""
    x = np.random.default_rng(5).standard_normal((6, 1024)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 4] = np.inf
    x[2, 5] = -np.inf
    x[3, :] = -np.inf
    x[4, 1:3] = np.inf
    r = assert_providers_agree(lambda a: getattr(mx.nd, fn)(a, axis=-1), x)
    y = r["onednn"][0]
    assert np.isnan(y[[0, 1, 3, 4]]).all()
    assert np.isfinite(y[[2, 5], 6:]).all()


# ----------------------------------------------------------------- LRN


def lrn_float64(x, alpha, beta, knorm, nsize):
    """MXNet's LRN written out in float64: the window c - h .. c + h, h = (nsize - 1) // 2,
    alpha divided by nsize."""
    x = x.astype(np.float64)
    h = (nsize - 1) // 2
    c = x.shape[1]
    sq = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - h), min(c, ch + h + 1)
        sq[:, ch] = (x[:, lo:hi] ** 2).sum(axis=1)
    return x / (knorm + alpha / nsize * sq) ** beta


LRN = [
    # (shape, nsize, alpha, beta, knorm)
    ((2, 16, 8, 8), 5, 1e-4, 0.75, 2.0),
    ((2, 16, 8, 8), 4, 0.5, 0.75, 1.0),
    ((2, 13, 6, 7), 3, 0.3, 0.6, 1.5),
    ((2, 13, 6, 7), 6, 0.3, 0.6, 1.5),
    ((4, 32, 5, 5), 7, 1.0, 0.5, 1.0),
    ((2, 8, 9, 9), 1, 0.2, 0.75, 2.0),
    ((2, 8, 9, 9), 2, 0.2, 0.75, 2.0),
    ((2, 12, 40), 5, 0.2, 0.75, 2.0),  # one spatial axis: falls back
]


@pytest.mark.parametrize("shape, nsize, alpha, beta, knorm", LRN)
def test_lrn_matches_numpy_and_mxnet_definition(shape, nsize, alpha, beta, knorm):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)

    def op(a):
        return mx.nd.LRN(a, alpha=alpha, beta=beta, knorm=knorm, nsize=nsize)

    r = assert_providers_agree(op, x)
    close(r["onednn"][0], lrn_float64(x, alpha, beta, knorm, nsize), 1e-5, 1e-5)


@pytest.mark.parametrize("nsize", [3, 4, 5, 6])
def test_lrn_runs_on_onednn_with_the_mapped_window(nsize):
    """oneDNN computes an even ``nsize`` with a window of ``nsize - 1`` channels and alpha
    rescaled; its gradient matches central differences of MXNet's definition."""
    k = fresh_provider()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 8, 8)).astype(np.float32)
    y, grad = k.lrn(x, 0.8, 0.75, 1.0, nsize, True)
    built = [v for v in k._cache.values() if v is not None]
    assert len(built) == 1 and not built[0].implementation.startswith("ref")
    close(y, lrn_float64(x, 0.8, 0.75, 1.0, nsize), 1e-5, 1e-5)
    gy = rng.standard_normal(x.shape)
    (gx,) = grad(gy.astype(np.float32), (True,))
    x64, eps = x.astype(np.float64), 1e-6
    for idx in [(0, 0, 0, 0), (1, 3, 2, 1), (0, 7, 3, 7), (1, 4, 6, 2)]:
        d = np.zeros_like(x64)
        d[idx] = eps
        up = lrn_float64(x64 + d, 0.8, 0.75, 1.0, nsize)
        down = lrn_float64(x64 - d, 0.8, 0.75, 1.0, nsize)
        want = ((up - down) * gy).sum() / (2 * eps)
        assert abs(gx[idx] - want) < 1e-4 * max(1.0, abs(want)), (idx, gx[idx], want)


def test_lrn_of_channels_last_data():
    """A channels-last input (a convolution's output) is normalised in place of layout, and
    the gradient comes back for the same layout."""
    rng = np.random.default_rng(8)
    base = rng.standard_normal((2, 6, 6, 24)).astype(np.float32)
    x = base.transpose(0, 3, 1, 2)  # (N, C, H, W), C fastest in memory
    k = fresh_provider()
    y, grad = k.lrn(x, 1e-2, 0.75, 2.0, 5, True)
    close(y, lrn_float64(x, 1e-2, 0.75, 2.0, 5), 1e-5, 1e-5)
    gy = rng.standard_normal(x.shape).astype(np.float32)
    (gx,) = grad(gy, (True,))
    want_y, want_grad = kernels.portable.for_backend(NUMPY).lrn(
        np.ascontiguousarray(x), 1e-2, 0.75, 2.0, 5, True
    )
    close(gx, want_grad(gy, (True,))[0])


def test_lrn_with_nan_and_infinities_matches_numpy():
    x = np.random.default_rng(9).standard_normal((2, 16, 8, 8)).astype(np.float32)
    x[0, 3, 2, 2] = np.nan
    x[1, 5, 1, 1] = np.inf
    x[1, 9, 4, 4] = -np.inf
    r = assert_providers_agree(lambda a: mx.nd.LRN(a, nsize=5), x)
    assert np.isnan(r["onednn"][0][0, 1:6, 2, 2]).all()


# ----------------------------------------------------------------- LeakyReLU family

LEAKY = [
    ("leaky", 0.25),
    ("leaky", 0.0),
    ("leaky", -0.5),
    ("elu", 1.0),
    ("elu", 0.3),
    ("gelu", 0.25),
    ("selu", 0.25),
    ("rrelu", 0.25),
]


@pytest.mark.parametrize("act_type, slope", LEAKY)
@pytest.mark.parametrize("shape", [(3, 64, 64), (5, 7), (2, 9, 1000)])
def test_leaky_family_matches_numpy(act_type, slope, shape):
    x = (np.random.default_rng(10).standard_normal(shape) * 3).astype(np.float32)
    x.reshape(-1)[:3] = [0.0, -0.0, 1e-8]

    def op(a):
        return mx.nd.LeakyReLU(a, act_type=act_type, slope=slope)

    assert_providers_agree(op, x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("act_type, slope", LEAKY)
def test_leaky_family_with_nan_and_infinities_matches_numpy(act_type, slope):
    x = (np.random.default_rng(11).standard_normal(3 * 4096) * 4).astype(np.float32)
    x[:7] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 100.0, -100.0]
    r = assert_providers_agree(
        lambda a: mx.nd.LeakyReLU(a, act_type=act_type, slope=slope), x, rtol=1e-5, atol=1e-6
    )
    assert np.isnan(r["onednn"][0][0])


@pytest.mark.parametrize("kind", ["leaky", "elu", "gelu"])
def test_leaky_family_runs_on_onednn(kind):
    k = fresh_provider()
    x = np.random.default_rng(12).standard_normal(16384).astype(np.float32)
    y, grad = k.leaky_relu(x, kind, 0.1, True)
    assert [v for v in k._cache.values() if v is not None]
    want, want_grad = kernels.portable.for_backend(NUMPY).leaky_relu(x, kind, 0.1, True)
    close(y, want, 1e-5, 1e-6)
    close(grad(x, (True,))[0], want_grad(x, (True,))[0], 1e-5, 1e-6)
    k.leaky_relu(x, "selu", 0.1, True)
    k.leaky_relu(x[:100], kind, 0.1, True)
    assert len(k._cache) == 1


def test_prelu_and_other_dtypes_stay_portable():
    x = np.random.default_rng(13).standard_normal((2, 3, 64, 64))
    gamma = mx.nd.array([0.1, 0.2, 0.3])
    with kernels.use("onednn"):
        y = mx.nd.LeakyReLU(mx.nd.array(x), gamma, act_type="prelu")
        close(y.asnumpy(), np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3])[:, None, None]))
        for fn in (
            lambda a: mx.nd.softmax(a),
            lambda a: mx.nd.LRN(a, nsize=3),
            lambda a: mx.nd.LeakyReLU(a, act_type="gelu"),
        ):
            assert fn(mx.nd.array(x, dtype="float64")).dtype == np.float64


# ----------------------------------------------------------------- errors


def test_inference_kernels_have_no_gradient():
    k = fresh_provider()
    x = np.random.default_rng(14).standard_normal((4, 16, 8, 8)).astype(np.float32)
    for y, grad, what in [
        (*k.softmax(x, 3, 1.0, False, False), "softmax"),
        (*k.lrn(x, 1e-4, 0.75, 2.0, 5, False), "LRN"),
        (*k.leaky_relu(x, "gelu", 0.0, False), "activation"),
    ]:
        with pytest.raises(KernelError, match=f"{what} ran for inference"):
            grad(y, (True,))


def test_kernels_reject_buffers_that_do_not_fit():
    kernels.use("onednn").__enter__()  # loads oneDNN
    sm = _native.OnednnSoftmax([4, 8], [8, 1], 1, False, True)
    x = np.ones((4, 8), np.float32)
    y = np.empty_like(x)
    sm.forward(x, y)
    close(y, np.full((4, 8), 0.125, np.float32))
    with pytest.raises(KernelError, match="buffer of 16 elements where the kernel needs 32"):
        sm.forward(np.ones((2, 8), np.float32), y)
    with pytest.raises(KernelError, match=r"softmax built for strides \[8, 1\], given \[1, 4\]"):
        sm.forward(np.ones((8, 4), np.float32).T, y)
    with pytest.raises(KernelError, match="must be a dense float32 array"):
        sm.forward(np.ones((4, 16), np.float32)[:, ::2], y)
    with pytest.raises(KernelError, match="softmax along axis 2 of data"):
        _native.OnednnSoftmax([4, 8], [8, 1], 2, False, True)
    with pytest.raises(KernelError, match="do not lay out"):
        _native.OnednnSoftmax([4, 8], [1, 1], 1, False, True)
    with pytest.raises(KernelError, match="built for inference"):
        _native.OnednnSoftmax([4, 8], [8, 1], 1, True, False).backward(x, x, y)

    lrn = _native.OnednnLrn([1, 8, 4, 4], 5, 1e-4, 0.75, 2.0, True)
    x = np.ones((1, 8, 4, 4), np.float32)
    y = np.empty_like(x)
    assert lrn.workspace_bytes > 0
    with pytest.raises(KernelError, match="LRN needs a workspace"):
        lrn.forward(x, y, None)
    with pytest.raises(KernelError, match="a workspace of 3 bytes"):
        lrn.forward(x, y, np.empty(3, np.uint8))
    with pytest.raises(KernelError, match="array of 3 dimensions where the kernel takes"):
        lrn.forward(np.ones((8, 4, 4), np.float32), y, np.empty(lrn.workspace_bytes, np.uint8))
    with pytest.raises(KernelError, match="LRN that does not fit"):
        _native.OnednnLrn([1, 8, 4, 4], 4, 1e-4, 0.75, 2.0, True)
    with pytest.raises(KernelError, match="LRN that does not fit"):
        _native.OnednnLrn([1, 8, 4, 4], 5, float("nan"), 0.75, 2.0, True)
    with pytest.raises(KernelUnsupportedError, match="window of one channel"):
        _native.OnednnLrn([1, 8, 4, 4], 1, 1e-4, 0.75, 2.0, True)

    with pytest.raises(KernelError, match="with a slope of inf"):
        _native.OnednnActivation("leaky", 8, True, float("inf"))
    act = _native.OnednnActivation("elu", 8, True, 1.0)
    with pytest.raises(KernelError, match="buffer of 4 elements where the kernel needs 8"):
        act.forward(np.ones(4, np.float32), np.empty(8, np.float32))
