"""The data gradient of a strided 1×1 convolution on oneDNN's provider, computed by the
stride-1 convolution of the pixels it reads and scattered back: it equals the definition
(the sampled pixels get the gradient, every other pixel zero) for 1-D, 2-D and 3-D data, odd
sizes, a stride per axis and grouped channels; the weight and bias gradients beside it are
unchanged; data in another layout keeps oneDNN's strided kernel, with the same result.

oneDNN is a dependency of mxrs on x86-64 Linux, so it must load here; these tests fail (not
skip) where it does not.
"""

import numpy as np
import pytest
from mxrs import _native
from mxrs.base import KernelError
from mxrs.kernels._layout import channels_last
from onednn_native import channels_last_copy, load_onednn, needs_onednn

pytestmark = needs_onednn


def want_data_grad(gy, w, xs, stride, groups):
    """The definition: ``gx[n, c, p·s] = Σ_f gy[n, f, p] w[f, c]`` within each group, zero at
    every pixel no output reads."""
    n, c = xs[:2]
    f = w.shape[0]
    cg, fg = c // groups, f // groups
    gx = np.zeros(xs, np.float64)
    sampled = tuple(slice(None, None, s) for s in stride)
    for g in range(groups):
        wg = w[g * fg : (g + 1) * fg].reshape(fg, cg).astype(np.float64)
        part = np.einsum("nf...,fc->nc...", gy[:, g * fg : (g + 1) * fg].astype(np.float64), wg)
        gx[(slice(None), slice(g * cg, (g + 1) * cg)) + sampled] = part
    return gx


CASES = [
    # (data shape, filters, stride, groups, bias)
    ((2, 16, 8, 8), 32, (2, 2), 1, True),  # a ResNet downsampling shortcut, small
    ((3, 8, 7, 9), 12, (2, 2), 1, False),  # odd sizes: the last pixel of each axis sampled
    ((2, 6, 7, 10), 5, (3, 2), 1, True),  # a stride per axis
    ((2, 8, 6, 6), 8, (1, 2), 1, False),  # one axis dense
    ((2, 8, 8, 8), 12, (2, 2), 4, True),  # grouped channels
    ((4, 5, 11), 7, (2,), 1, True),  # 1-D
    ((1, 4, 5, 6, 7), 6, (2, 3, 2), 1, False),  # 3-D
    ((2, 3, 2, 2), 4, (2, 2), 1, False),  # one sampled pixel per image
    ((8, 64, 28, 28), 128, (2, 2), 1, False),  # threaded rows
]


@pytest.mark.parametrize("xs, f, stride, groups, bias", CASES)
def test_gradients_equal_the_definition_and_the_strided_kernel(xs, f, stride, groups, bias):
    load_onednn()
    rng = np.random.default_rng(11)
    nd = len(xs) - 2
    ws = (f, xs[1] // groups) + (1,) * nd
    k = _native.OnednnConv(list(xs), list(ws), groups, bias, list(stride), [1] * nd, [0] * nd, True)
    ys = tuple(k.dst_shape)
    assert ys == (xs[0], f) + tuple((d - 1) // s + 1 for d, s in zip(xs[2:], stride, strict=True))
    x = channels_last_copy(rng.standard_normal(xs).astype(np.float32))
    w = rng.standard_normal(ws).astype(np.float32)
    gy = channels_last_copy(rng.standard_normal(ys).astype(np.float32))
    gx = channels_last(xs)
    gx[...] = np.nan  # every element is written: the gaps too
    gw = np.empty_like(w)
    gb = np.empty(f, np.float32) if bias else None
    k.backward(x, w, gy, gx, gw, gb)
    np.testing.assert_allclose(gx, want_data_grad(gy, w, xs, stride, groups), rtol=1e-5, atol=1e-4)

    # the same kernel on row-major data runs oneDNN's strided primitive: same gradients
    plain = [np.ascontiguousarray(a) for a in (x, gy)]
    gx2, gw2 = np.empty(xs, np.float32), np.empty_like(w)
    gb2 = np.empty(f, np.float32) if bias else None
    k.backward(plain[0], w, plain[1], gx2, gw2, gb2)
    np.testing.assert_allclose(gx, gx2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw, gw2, rtol=1e-4, atol=1e-4)
    if bias:
        np.testing.assert_allclose(gb, gb2, rtol=1e-5, atol=1e-4)


def test_the_data_gradient_alone_and_twice_in_a_row():
    """The kept buffer of the stride-1 gradient is reused: a second call with other values
    gives that call's gradient, and asking for the data gradient alone computes nothing else."""
    load_onednn()
    rng = np.random.default_rng(12)
    xs, ws, stride = (2, 8, 9, 9), (16, 8, 1, 1), (2, 2)
    k = _native.OnednnConv(list(xs), list(ws), 1, False, list(stride), [1, 1], [0, 0], True)
    x = channels_last_copy(rng.standard_normal(xs).astype(np.float32))
    w = rng.standard_normal(ws).astype(np.float32)
    for _ in range(2):
        gy = channels_last_copy(rng.standard_normal(k.dst_shape).astype(np.float32))
        gx = channels_last(xs)
        k.backward(x, w, gy, gx, None, None)
        np.testing.assert_allclose(gx, want_data_grad(gy, w, xs, stride, 1), rtol=1e-5, atol=1e-4)


def test_a_data_gradient_of_the_wrong_size_is_refused():
    load_onednn()
    xs, ws = (2, 8, 8, 8), (16, 8, 1, 1)
    k = _native.OnednnConv(list(xs), list(ws), 1, False, [2, 2], [1, 1], [0, 0], True)
    x = channels_last(xs)
    gy = channels_last(tuple(k.dst_shape))
    with pytest.raises(KernelError, match=r"do not lay out \[2, 8, 8, 8\]"):
        k.backward(x, np.ones(ws, np.float32), gy, channels_last((2, 8, 6, 8)), None, None)
