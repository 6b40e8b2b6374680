"""Conv3D, transposed convolutions (nd.Deconvolution), 3-D pooling and channel-last pooling.

Expected numbers come from Apache MXNet 1.9.1 on CPU for the same inputs (values drawn from a
seeded ``RandomState`` and rounded to two decimals).
"""

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon import nn
from mxrs.test_utils import check_numeric_gradient

nd = mx.nd

REF = {
    "conv3d": (
        (1, 4, 3, 2, 3),
        [
            1.0923,
            0.9573,
            1.0275,
            0.6702,
            1.0856,
            0.2539,
            0.7446,
            -1.5698,
            0.5979,
            0.8207,
            -0.2545,
            0.4774,
            1.0712,
            0.1515,
            0.1475,
            2.0168,
            1.1961,
            -0.2272,
            0.5999,
            0.8152,
            1.1597,
            0.7925,
            0.312,
            1.3491,
            0.3798,
            -0.1384,
            0.9689,
            -0.215,
            2.5122,
            0.5382,
            0.7869,
            0.9943,
            -0.0377,
            -0.2142,
            0.7168,
            0.4288,
            -1.0084,
            -0.3858,
            -0.3904,
            -0.8966,
            -0.7268,
            -1.9752,
            -0.944,
            -2.917,
            -2.1062,
            -0.2224,
            0.8777,
            -1.9933,
            -0.6872,
            -1.3306,
            -0.9245,
            -0.7925,
            -1.9035,
            -0.3692,
            0.0926,
            1.1398,
            1.6216,
            0.825,
            0.0431,
            0.6059,
            0.2807,
            0.8327,
            1.0246,
            0.8119,
            1.4601,
            0.6981,
            1.1573,
            0.4831,
            1.2536,
            0.7092,
            0.7729,
            0.7137,
        ],
    ),
    "deconv2d": (
        (1, 6, 4, 8),
        [
            -1.263,
            -0.25,
            -0.5268,
            -1.0299,
            -0.25,
            -0.4771,
            -0.25,
            -0.25,
            -0.8773,
            -0.25,
            -0.7632,
            1.0341,
            -0.25,
            -0.7072,
            -0.25,
            -0.25,
            -0.2165,
            -0.25,
            -0.2265,
            -0.3662,
            -0.25,
            -0.2962,
            -0.25,
            -0.25,
            -0.6245,
            -0.25,
            0.077,
            0.1394,
            -0.25,
            -0.6124,
            -0.25,
            -0.25,
            -0.192,
            -0.07,
            -0.0884,
            -0.716,
            -0.07,
            -1.1634,
            -0.07,
            -0.07,
            0.2391,
            -0.07,
            -0.0037,
            0.7267,
            -0.07,
            -1.3399,
            -0.07,
            -0.07,
            0.5,
            -0.07,
            1.037,
            -0.654,
            -0.07,
            -1.1864,
            -0.07,
            -0.07,
            -0.0105,
            -0.07,
            -0.3525,
            -0.0744,
            -0.07,
            0.146,
            -0.07,
            -0.07,
            0.1103,
            -0.44,
            -0.511,
            -0.1565,
            -0.44,
            -1.4927,
            -0.44,
            -0.44,
            -0.2727,
            -0.44,
            -0.8354,
            -1.2058,
            -0.44,
            0.3925,
            -0.44,
            -0.44,
            -0.3145,
            -0.44,
            0.5855,
            -0.5216,
            -0.44,
            -1.4786,
            -0.44,
            -0.44,
            0.689,
            -0.44,
            -0.5105,
            -1.5518,
            -0.44,
            -0.3534,
            -0.44,
            -0.44,
            0.125,
            0.17,
            0.0721,
            0.113,
            0.17,
            0.0129,
            0.17,
            0.17,
            -0.4336,
            0.17,
            0.0896,
            0.5357,
            0.17,
            0.1406,
            0.17,
            0.17,
            0.33,
            0.17,
            0.6216,
            0.5662,
            0.17,
            1.2679,
            0.17,
            0.17,
            0.1525,
            0.17,
            0.5993,
            0.6585,
            0.17,
            1.3562,
            0.17,
            0.17,
            0.917,
            0.73,
            0.9896,
            0.7065,
            0.73,
            0.8919,
            0.73,
            0.73,
            1.3293,
            0.73,
            0.9792,
            0.0176,
            0.73,
            1.3505,
            0.73,
            0.73,
            0.8795,
            0.73,
            0.3291,
            0.9399,
            0.73,
            -0.3655,
            0.73,
            0.73,
            0.9354,
            0.73,
            1.0407,
            0.5369,
            0.73,
            1.556,
            0.73,
            0.73,
            -1.33,
            -0.76,
            -0.8133,
            -0.898,
            -0.76,
            -0.6017,
            -0.76,
            -0.76,
            -1.488,
            -0.76,
            -1.1203,
            -1.3988,
            -0.76,
            -0.7906,
            -0.76,
            -0.76,
            -0.56,
            -0.76,
            -1.2768,
            0.0948,
            -0.76,
            -1.9007,
            -0.76,
            -0.76,
            -0.9512,
            -0.76,
            -0.7823,
            -0.8811,
            -0.76,
            -0.6717,
            -0.76,
            -0.76,
        ],
    ),
    "deconv1d_target": (
        (1, 2, 8),
        [
            0.1657,
            0.8759,
            1.0262,
            1.2061,
            0.2969,
            0.0865,
            0.8791,
            0.7564,
            0.1526,
            -0.0977,
            0.8323,
            -0.5556,
            0.2741,
            -0.8941,
            1.3987,
            0.1999,
        ],
    ),
    "maxpool3d": (
        (1, 2, 3, 3, 2),
        [
            0.56,
            0.56,
            -0.08,
            0.6,
            0.04,
            0.6,
            0.92,
            0.92,
            0.51,
            0.91,
            0.81,
            0.92,
            0.9,
            0.9,
            0.9,
            0.9,
            0.26,
            0.26,
            0.7,
            0.92,
            0.89,
            0.89,
            0.89,
            0.89,
            0.98,
            0.57,
            0.98,
            0.57,
            0.98,
            0.98,
            0.85,
            0.85,
            0.97,
            0.94,
            0.98,
            0.98,
        ],
    ),
    "avgpool3d": (
        (1, 2, 3, 3, 2),
        [
            0.055,
            0.365,
            -0.425,
            -0.005,
            -0.405,
            -0.39,
            0.11625,
            0.26,
            0.13,
            -0.0975,
            0.0225,
            0.505,
            0.2275,
            0.435,
            0.26,
            0.215,
            -0.51,
            -0.48,
            -0.2025,
            -0.025,
            -0.185,
            0.8,
            -0.22,
            -0.53,
            -0.2475,
            -0.23,
            -0.49,
            -0.035,
            0.4725,
            -0.305,
            0.4375,
            -0.595,
            0.27,
            0.72,
            0.285,
            -0.5,
        ],
    ),
    "sumpool3d": (
        (1, 2, 2, 2, 2),
        [
            1.15,
            3.42,
            -0.66,
            -0.75,
            1.84,
            4.33,
            2.08,
            1.94,
            -2.79,
            -4.57,
            -4.66,
            0.7,
            -0.23,
            -3.810001,
            -2.84,
            0.49,
        ],
    ),
    "gmax3d": (
        (1, 2, 1, 1, 1),
        [0.92, 0.98],
    ),
    "gavg3d": (
        (1, 2, 1, 1, 1),
        [0.0585, -0.058333],
    ),
    "deconv3d": (
        (1, 2, 4, 2, 2),
        [
            0.3582,
            1.9843,
            -0.0032,
            1.2564,
            1.5229,
            1.1588,
            1.4343,
            0.0138,
            2.2269,
            1.0346,
            1.398,
            -0.1654,
            -0.0275,
            2.626,
            0.7955,
            1.682,
            0.7498,
            -0.1932,
            0.5614,
            1.2934,
            1.7917,
            1.8362,
            0.8845,
            0.6979,
            1.2635,
            -0.3084,
            1.5762,
            1.8266,
            0.3646,
            1.8142,
            0.2291,
            0.0126,
        ],
    ),
}


def _inputs():
    """The inputs MXNet's numbers were computed from, in the same draw order."""
    rs = np.random.RandomState(0)

    def arr(*s):
        return np.round(rs.uniform(-1, 1, size=s), 2).astype(np.float32)

    return {
        "conv3d": (arr(1, 2, 4, 4, 3), arr(4, 1, 2, 3, 2), arr(4)),
        "deconv2d": (arr(1, 4, 2, 2), arr(4, 3, 3, 2), arr(6)),
        "deconv3d": (arr(1, 2, 2, 3, 2), arr(2, 2, 2, 2, 2), arr(2)),
        "deconv1d_target": (arr(1, 3, 5), arr(3, 2, 3)),
        "pool": arr(1, 2, 4, 5, 3),
    }


def _expect(name, got):
    shape, flat = REF[name]
    assert got.shape == shape
    np.testing.assert_allclose(got.asnumpy().ravel(), flat, rtol=1e-5, atol=1e-5)


def test_forward_matches_mxnet():
    d = _inputs()
    x, w, b = (nd.array(a) for a in d["conv3d"])
    kw = dict(kernel=(2, 3, 2), stride=(2, 1, 1), pad=(1, 0, 1), dilate=(1, 1, 2))
    _expect("conv3d", nd.Convolution(x, w, b, num_filter=4, num_group=2, **kw))
    x, w, b = (nd.array(a) for a in d["deconv2d"])
    y = nd.Deconvolution(
        x,
        w,
        b,
        kernel=(3, 2),
        stride=(2, 3),
        pad=(1, 0),
        adj=(1, 2),
        dilate=(1, 2),
        num_filter=6,
        num_group=2,
        no_bias=False,
    )
    _expect("deconv2d", y)
    x, w, b = (nd.array(a) for a in d["deconv3d"])
    y = nd.Deconvolution(
        x, w, b, kernel=(2, 2, 2), stride=(2, 1, 2), pad=(0, 1, 1), num_filter=2, no_bias=False
    )
    _expect("deconv3d", y)
    x, w = (nd.array(a) for a in d["deconv1d_target"])
    y = nd.Deconvolution(x, w, kernel=(3,), stride=(2,), target_shape=(8,), num_filter=2)
    _expect("deconv1d_target", y)
    x = nd.array(d["pool"])
    _expect("maxpool3d", nd.Pooling(x, kernel=(2, 3, 2), stride=(2, 2, 1), pad=(1, 1, 0)))
    y = nd.Pooling(
        x,
        kernel=(2, 2, 2),
        stride=(2, 2, 2),
        pad=(1, 0, 0),
        pool_type="avg",
        count_include_pad=False,
        pooling_convention="full",
    )
    _expect("avgpool3d", y)
    _expect("sumpool3d", nd.Pooling(x, kernel=(3, 2, 2), stride=(1, 2, 1), pool_type="sum"))
    _expect("gmax3d", nd.Pooling(x, kernel=(1, 1, 1), global_pool=True, pool_type="max"))
    _expect("gavg3d", nd.Pooling(x, kernel=(1, 1, 1), global_pool=True, pool_type="avg"))


@pytest.mark.parametrize(
    ("stride", "pad", "adj", "target", "size"),
    [
        ((1,), (0,), (0,), None, 7),
        ((2,), (0,), (0,), None, 11),
        ((2,), (0,), (1,), None, 12),
        ((2,), (1,), (1,), None, 10),
        ((3,), (0,), (2,), None, 17),
        ((2,), (0,), (0,), (10,), 10),
        ((2,), (0,), (0,), (9,), 9),
        ((2,), (0,), (0,), (8,), 8),
    ],
)
def test_deconvolution_shapes(stride, pad, adj, target, size):
    y = nd.Deconvolution(
        nd.ones((1, 4, 5)),
        nd.ones((4, 3, 3)),
        kernel=(3,),
        stride=stride,
        pad=pad,
        adj=adj,
        target_shape=target,
        num_filter=3,
    )
    assert y.shape == (1, 3, size)


def test_deconvolution_values_ones():
    # MXNet: ones (1, 4, 5) through ones (4, 3, 3), stride 2, adj 1.
    y = nd.Deconvolution(
        nd.ones((1, 4, 5)), nd.ones((4, 3, 3)), kernel=(3,), stride=(2,), adj=(1,), num_filter=3
    )
    np.testing.assert_array_equal(y.asnumpy()[0, 0], [4, 4, 8, 4, 8, 4, 8, 4, 8, 4, 4, 0])
    y = nd.Deconvolution(nd.ones((1, 4, 5)), nd.ones((4, 3, 3)), num_filter=6, num_group=2)
    np.testing.assert_array_equal(y.asnumpy()[0, 0], [2, 4, 6, 6, 6, 4, 2])


def test_deconvolution_is_convolution_input_gradient():
    rs = np.random.RandomState(1)
    x = nd.array(rs.normal(size=(2, 4, 7, 6)))
    w = nd.array(rs.normal(size=(6, 2, 3, 2)))
    g = nd.array(rs.normal(size=(2, 6, 4, 5)))
    kw = dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0), dilate=(1, 1), num_group=2)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(x, w, num_filter=6, no_bias=True, **kw)
    y.backward(g)
    d = nd.Deconvolution(g, w, num_filter=4, **kw)
    np.testing.assert_allclose(d.asnumpy(), x.grad.asnumpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel=(2, 2, 3), stride=(1, 2, 1), pad=(1, 0, 1), dilate=(1, 1, 1), num_group=1),
        dict(kernel=(2, 1, 2), stride=(2, 1, 2), pad=(0, 1, 0), dilate=(1, 2, 1), num_group=2),
    ],
)
def test_conv3d_gradients(kw):
    rs = np.random.RandomState(2)
    g = kw["num_group"]
    x, w, b = (
        rs.normal(size=(2, 4, 3, 4, 4)),
        rs.normal(size=(4, 4 // g) + kw["kernel"]),
        rs.normal(size=4),
    )
    check_numeric_gradient(lambda x, w, b: nd.Convolution(x, w, b, num_filter=4, **kw), [x, w, b])


@pytest.mark.parametrize(
    ("shape", "kw"),
    [
        ((2, 4, 3), dict(kernel=(3,), stride=(2,), pad=(1,), adj=(1,), num_group=2)),
        ((1, 2, 3, 2), dict(kernel=(2, 3), stride=(2, 1), pad=(0, 1), dilate=(2, 1))),
        ((1, 2, 2, 2, 3), dict(kernel=(2, 2, 2), stride=(2, 1, 2), pad=(1, 0, 0), adj=(1, 0, 1))),
    ],
)
def test_deconvolution_gradients(shape, kw):
    rs = np.random.RandomState(3)
    g = kw.get("num_group", 1)
    x = rs.normal(size=shape)
    w = rs.normal(size=(shape[1], 4 // g) + kw["kernel"])
    b = rs.normal(size=4)

    def f(x, w, b):
        return nd.Deconvolution(x, w, b, num_filter=4, no_bias=False, **kw)

    check_numeric_gradient(f, [x, w, b])


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pool3d_gradients(pool_type):
    x = np.random.RandomState(4).permutation(2 * 2 * 4 * 5 * 3).reshape(2, 2, 4, 5, 3) / 10.0
    kw = dict(kernel=(2, 3, 2), stride=(1, 2, 1), pad=(1, 1, 0), pool_type=pool_type)
    check_numeric_gradient(lambda x: nd.Pooling(x, **kw), [x])
    check_numeric_gradient(lambda x: nd.Pooling(x, global_pool=True, pool_type=pool_type), [x])


@pytest.mark.parametrize(
    ("layer", "first", "last", "shape"),
    [
        (nn.MaxPool1D, "NCW", "NWC", (2, 3, 7)),
        (nn.AvgPool1D, "NCW", "NWC", (2, 3, 7)),
        (nn.MaxPool2D, "NCHW", "NHWC", (2, 3, 5, 6)),
        (nn.AvgPool2D, "NCHW", "NHWC", (2, 3, 5, 6)),
        (nn.MaxPool3D, "NCDHW", "NDHWC", (2, 3, 4, 5, 4)),
        (nn.AvgPool3D, "NCDHW", "NDHWC", (2, 3, 4, 5, 4)),
        (nn.GlobalMaxPool2D, "NCHW", "NHWC", (2, 3, 5, 6)),
        (nn.GlobalAvgPool1D, "NCW", "NWC", (2, 3, 7)),
        (nn.GlobalMaxPool3D, "NCDHW", "NDHWC", (2, 3, 4, 5, 4)),
        (nn.GlobalAvgPool3D, "NCDHW", "NDHWC", (2, 3, 4, 5, 4)),
    ],
)
def test_channel_last_pooling_is_transposed_channel_first(layer, first, last, shape):
    x = np.random.RandomState(5).normal(size=shape).astype(np.float32)
    to_last = (0,) + tuple(range(2, len(shape))) + (1,)
    a = layer(layout=first)(nd.array(x)).asnumpy()
    xl = nd.array(x.transpose(to_last))
    xl.attach_grad()
    with mx.autograd.record():
        b = layer(layout=last)(xl)
    b.backward()
    np.testing.assert_allclose(b.asnumpy(), a.transpose(to_last), rtol=1e-6)
    xc = nd.array(x)
    xc.attach_grad()
    with mx.autograd.record():
        layer(layout=first)(xc).backward()
    np.testing.assert_allclose(xl.grad.asnumpy(), xc.grad.asnumpy().transpose(to_last))


def test_layer_shapes_and_weights():
    conv = nn.Conv3D(4, (2, 3, 3), strides=(1, 2, 2), padding=1, groups=2)
    conv.initialize()
    assert conv(nd.ones((2, 6, 4, 7, 7))).shape == (2, 4, 5, 4, 4)
    assert conv.weight.shape == (4, 3, 2, 3, 3)
    t1 = nn.Conv1DTranspose(6, 3, strides=2, padding=1, output_padding=1, groups=3)
    t1.initialize()
    assert t1(nd.ones((2, 3, 5))).shape == (2, 6, 10)
    assert t1.weight.shape == (3, 2, 3)
    t2 = nn.Conv2DTranspose(5, (3, 2), strides=(2, 3), dilation=(2, 1), in_channels=4)
    assert t2.weight.shape == (4, 5, 3, 2)
    t2.initialize()
    assert t2(nd.ones((1, 4, 3, 3))).shape == (1, 5, 9, 8)
    t3 = nn.Conv3DTranspose(2, 2, strides=2, use_bias=False, activation="relu")
    t3.initialize()
    assert t3(nd.ones((1, 3, 2, 3, 4))).shape == (1, 2, 4, 6, 8)
    assert t3.bias is None
    assert nn.MaxPool3D()(nd.ones((1, 1, 4, 5, 6))).shape == (1, 1, 2, 2, 3)
    assert nn.AvgPool3D(3, 2, 1, ceil_mode=True)(nd.ones((1, 1, 4, 5, 6))).shape == (1, 1, 3, 3, 4)
    assert nn.GlobalAvgPool3D()(nd.ones((1, 2, 3, 4, 5))).shape == (1, 2, 1, 1, 1)
    assert "output_padding=(1,)" in repr(t1)


def test_transpose_layer_matches_op():
    rs = np.random.RandomState(6)
    layer = nn.Conv2DTranspose(4, 3, strides=2, padding=1, output_padding=1, in_channels=2)
    layer.initialize()
    x = nd.array(rs.normal(size=(1, 2, 3, 3)))
    y = layer(x)
    ref = nd.Deconvolution(
        x,
        layer.weight.data(),
        layer.bias.data(),
        kernel=(3, 3),
        stride=(2, 2),
        pad=(1, 1),
        adj=(1, 1),
        num_filter=4,
        no_bias=False,
    )
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy())


def test_bad_input_raises():
    x = nd.ones((1, 3, 4, 4, 4))
    with pytest.raises(MXNetError, match="channels"):
        nd.Convolution(x, nd.ones((2, 2, 2, 2, 2)), kernel=(2, 2, 2), num_filter=2)
    with pytest.raises(MXNetError, match="kernel"):
        nd.Convolution(x, nd.ones((2, 3, 2, 2, 2)), kernel=(2, 2), num_filter=2)
    with pytest.raises(MXNetError, match="channels"):
        nd.Deconvolution(x, nd.ones((2, 2, 2, 2, 2)), kernel=(2, 2, 2), num_filter=2)
    with pytest.raises(MXNetError, match="kernel"):
        nd.Deconvolution(x, nd.ones((3, 2, 2, 2, 2)), kernel=(2, 2, 3), num_filter=2)
    with pytest.raises(MXNetError, match="adj"):
        nd.Deconvolution(nd.ones((1, 4, 5)), nd.ones((4, 3, 3)), adj=(1,), num_filter=3)
    with pytest.raises(MXNetError, match="too big"):
        nd.Deconvolution(nd.ones((1, 4, 5)), nd.ones((4, 3, 3)), stride=(2,), target_shape=(12,))
    with pytest.raises(MXNetError, match="3-D, 4-D or 5-D"):
        nd.Pooling(nd.ones((2, 3)), kernel=(2,))
    with pytest.raises(MXNetError, match="kernel"):
        nd.Pooling(x, kernel=(2, 2))
    with pytest.raises(MXNetError, match="layout"):
        nd.Pooling(x, kernel=(2, 2, 2), layout="NHWC")
    layer = nn.Conv3D(2, 3, in_channels=4)
    layer.initialize()
    with pytest.raises(MXNetError):
        layer(x)


@pytest.mark.parametrize(
    ("make", "layout"),
    [
        (lambda lay: nn.Conv1D(2, 3, layout=lay), "NWC"),
        (lambda lay: nn.Conv1DTranspose(2, 3, layout=lay), "NWC"),
        (lambda lay: nn.Conv2D(2, 3, layout=lay), "NCW"),
        (lambda lay: nn.Conv3D(2, 3, layout=lay), "NHWC"),
        (lambda lay: nn.MaxPool2D(layout=lay), "NWC"),
        (lambda lay: nn.AvgPool3D(layout=lay), "NCHW"),
        (lambda lay: nn.GlobalMaxPool1D(layout=lay), "NHWC"),
    ],
)
def test_unsupported_layout_refused_at_construction(make, layout):
    with pytest.raises(MXNetError, match="layout"):
        make(layout)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.Conv2D(2, 3, layout="NHWC"),
        lambda: nn.Conv3D(2, 3, layout="NDHWC"),
        lambda: nn.Conv2DTranspose(2, 3, layout="NHWC"),
        lambda: nn.Conv3DTranspose(2, 3, layout="NDHWC"),
    ],
)
def test_channel_last_convolution_refused(make):
    # MXNet 1.9.1 runs channel-last convolution only on GPU; its CPU build cannot run it.
    with pytest.raises(MXNetError, match="only on GPU"):
        make()
    with pytest.raises(MXNetError, match="only on GPU"):
        nd.Convolution(nd.ones((1, 5, 5, 4)), nd.ones((2, 3, 3, 4)), layout="NHWC")
    with pytest.raises(MXNetError, match="only on GPU"):
        nd.Deconvolution(nd.ones((1, 4, 4, 4, 4)), nd.ones((4, 3, 3, 3, 2)), layout="NDHWC")


@pytest.mark.parametrize("hybridize", [False, True])
def test_trainer_step(hybridize):
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(
        nn.Conv3D(4, 2, padding=1, activation="relu"),
        nn.MaxPool3D(2, ceil_mode=True),
        nn.Conv3DTranspose(2, 2, strides=2),
        nn.GlobalAvgPool3D(),
    )
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = nd.array(np.random.RandomState(7).normal(size=(2, 3, 3, 4, 4)))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    net(x)
    before = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items()}
    with mx.autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(2)
    assert net(x).shape == (2, 2, 1, 1, 1)
    for k, p in net.collect_params().items():
        assert p.grad().shape == p.shape
        assert not np.array_equal(p.data().asnumpy(), before[k]), k
