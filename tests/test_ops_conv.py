"""Convolution and pooling: forward against direct loop references, gradients by finite
differences with strides, padding, dilation and groups."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import nd


def conv_ref(x, w, b, stride, pad, dilate, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dilate
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for o in range(f):
        gi = o // fg
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    gi * cg : (gi + 1) * cg,
                    i * sh : i * sh + dh * (kh - 1) + 1 : dh,
                    j * sw : j * sw + dw * (kw - 1) + 1 : dw,
                ]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


CONV_CASES = [
    dict(c=3, f=4, k=(3, 3), stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1),
    dict(c=2, f=3, k=(3, 2), stride=(2, 1), pad=(1, 2), dilate=(1, 1), groups=1),
    dict(c=2, f=2, k=(2, 2), stride=(1, 2), pad=(1, 0), dilate=(2, 2), groups=1),
    dict(c=4, f=6, k=(3, 3), stride=(2, 2), pad=(1, 1), dilate=(1, 1), groups=2),
    dict(c=4, f=4, k=(2, 3), stride=(1, 1), pad=(0, 1), dilate=(2, 1), groups=4),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_forward_and_grad(case):
    x = rand(2, case["c"], 7, 6)
    w = rand(case["f"], case["c"] // case["groups"], *case["k"], seed=1)
    b = rand(case["f"], seed=2)
    kw = dict(
        kernel=case["k"],
        num_filter=case["f"],
        stride=case["stride"],
        pad=case["pad"],
        dilate=case["dilate"],
        num_group=case["groups"],
    )
    got = nd.Convolution(
        nd.array(x, dtype="float64"),
        nd.array(w, dtype="float64"),
        nd.array(b, dtype="float64"),
        **kw,
    ).asnumpy()
    want = conv_ref(x, w, b, case["stride"], case["pad"], case["dilate"], case["groups"])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    check_grad(lambda d, wt, bias: nd.Convolution(d, wt, bias, **kw), [x, w, b])


def test_convolution_no_bias_1d_and_defaults():
    x, w = rand(2, 3, 5, 5), rand(4, 3, 3, 3, seed=1)
    got = nd.Convolution(nd.array(x), nd.array(w), kernel=(3, 3), num_filter=4, no_bias=True)
    np.testing.assert_allclose(
        got.asnumpy(), conv_ref(x, w, None, (1, 1), (0, 0), (1, 1), 1), rtol=1e-5, atol=1e-6
    )
    check_grad(
        lambda d, wt: nd.Convolution(d, wt, kernel=(3, 3), num_filter=4, no_bias=True), [x, w]
    )
    x1, w1 = rand(2, 2, 9), rand(3, 2, 3, seed=1)
    got = nd.Convolution(
        nd.array(x1), nd.array(w1), kernel=(3,), stride=(2,), pad=(1,), num_filter=3, no_bias=True
    )
    want = conv_ref(x1[:, :, None], w1[:, :, None], None, (1, 2), (0, 1), (1, 1), 1)[:, :, 0]
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_convolution_bad_arguments():
    x, w = nd.ones((1, 3, 5, 5)), nd.ones((2, 3, 3, 3))
    with pytest.raises(mx.MXNetError, match="kernel"):
        nd.Convolution(x, w, kernel=(2, 2), num_filter=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match="channels"):
        nd.Convolution(nd.ones((1, 4, 5, 5)), w, kernel=(3, 3), num_filter=2, no_bias=True)


def pool_ref(x, k, s, p, kind, full=False, count_include_pad=True):
    n, c, h, w = x.shape
    rnd = np.ceil if full else np.floor
    oh = int(rnd((h + 2 * p[0] - k[0]) / s[0])) + 1
    ow = int(rnd((w + 2 * p[1] - k[1]) / s[1])) + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, c1 = r0 + k[0], c0 + k[1]
            win = x[:, :, max(r0, 0) : min(r1, h), max(c0, 0) : min(c1, w)]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif kind == "sum":
                out[:, :, i, j] = win.sum(axis=(2, 3))
            else:
                if count_include_pad:
                    size = (min(r1, h + p[0]) - r0) * (min(c1, w + p[1]) - c0)
                else:
                    size = win.shape[2] * win.shape[3]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / size
    return out


POOL_CASES = [
    dict(k=(2, 2), s=(2, 2), p=(0, 0)),
    dict(k=(3, 3), s=(1, 1), p=(0, 0)),
    dict(k=(3, 2), s=(2, 1), p=(1, 1)),
    dict(k=(2, 3), s=(3, 2), p=(1, 0)),
    dict(k=(3, 3), s=(2, 2), p=(1, 1), full=True),
    dict(k=(2, 2), s=(2, 2), p=(0, 0), full=True),
]


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pooling_forward_and_grad(kind, case):
    x = rand(2, 3, 7, 6)
    full = case.get("full", False)
    kw = dict(
        kernel=case["k"],
        stride=case["s"],
        pad=case["p"],
        pool_type=kind,
        pooling_convention="full" if full else "valid",
    )
    got = nd.Pooling(nd.array(x, dtype="float64"), **kw).asnumpy()
    np.testing.assert_allclose(
        got, pool_ref(x, case["k"], case["s"], case["p"], kind, full), rtol=1e-12
    )
    check_grad(lambda d: nd.Pooling(d, **kw), [x])


def test_avg_pooling_without_pad_count():
    x = rand(1, 2, 5, 5)
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad=False)
    got = nd.Pooling(nd.array(x, dtype="float64"), **kw).asnumpy()
    want = pool_ref(x, (3, 3), (2, 2), (1, 1), "avg", count_include_pad=False)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grad(lambda d: nd.Pooling(d, **kw), [x])


def test_pooling_defaults_and_mxnet_values():
    assert nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=(2, 2)).shape == (1, 1, 3, 3)  # stride 1
    got = nd.Pooling(
        nd.ones((1, 1, 4, 4)), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"
    ).asnumpy()
    np.testing.assert_allclose(got[0, 0], [[4 / 9, 6 / 9], [6 / 9, 1]], rtol=1e-6)


def test_max_pool_gradient_goes_to_first_maximum():
    x = nd.array([[[[1.0, 3.0], [3.0, 2.0]]]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(x, kernel=(2, 2), stride=(2, 2))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy()[0, 0], [[0, 1], [0, 0]])


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_global_pooling(kind):
    x = rand(2, 3, 4, 5)
    got = nd.Pooling(nd.array(x, dtype="float64"), global_pool=True, pool_type=kind)
    ref = {"max": x.max, "avg": x.mean, "sum": x.sum}[kind](axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-12)
    check_grad(lambda d: nd.Pooling(d, kernel=(1, 1), global_pool=True, pool_type=kind), [x])


def test_pooling_1d_and_errors():
    x = rand(2, 3, 8)
    got = nd.Pooling(nd.array(x, dtype="float64"), kernel=(2,), stride=(2,))
    np.testing.assert_allclose(got.asnumpy(), x.reshape(2, 3, 4, 2).max(axis=3))
    with pytest.raises(mx.MXNetError, match="pool_type"):
        nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="lp")
    with pytest.raises(mx.MXNetError, match="kernel"):
        nd.Pooling(nd.ones((1, 1, 4, 4)))


def test_lower_case_names():
    x, w = nd.ones((1, 1, 4, 4)), nd.ones((2, 1, 3, 3))
    a = nd.convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True)
    np.testing.assert_array_equal(a.asnumpy(), np.full((1, 2, 2, 2), 9.0))
    np.testing.assert_array_equal(
        nd.pooling(a, kernel=(2, 2), pool_type="avg").asnumpy(), np.full((1, 2, 1, 1), 9.0)
    )
    assert nd.fully_connected(x, nd.ones((3, 16)), num_hidden=3, no_bias=True).shape == (1, 3)
    assert nd.random_uniform(shape=(2,)).shape == (2,)
