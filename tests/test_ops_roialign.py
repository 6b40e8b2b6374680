"""``contrib.ROIAlign`` (mx.nd and mx.sym) against Apache MXNet 1.9.1: the output and the gradient
of the data over pooled sizes, scales, fixed and adaptive sampling, position-sensitive pooling
and Detectron2's alignment, with regions reaching beyond the map and regions narrower than a
pixel; the gradient by central differences in float64; the symbol's shapes; the errors for bad
input.

A region with a negative batch index gives zeros by MXNet's documentation; MXNet 1.9.1's CPU
operator leaves that region's output unwritten (and zeroes an element of another region's), so
those regions are checked against the documentation instead."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

RNG = np.random.default_rng(7)
N, C, H, W = 2, 8, 7, 9

#: (pooled_size, spatial_scale, sample_ratio, position_sensitive, aligned)
CASES = [
    ((2, 2), 1.0, -1, False, False),
    ((3, 2), 0.5, 2, False, False),
    ((2, 3), 0.25, -1, False, True),
    ((2, 2), 0.5, 1, True, False),
    ((2, 2), 1.0, 3, True, True),
    ((4, 4), 0.5, 0, False, True),
    ((1, 1), 1.0, -1, False, False),
]

_BODY = """
cases = json.loads(bytes(inputs["cases"]).decode())
for i, (pooled, scale, ratio, sensitive, aligned) in enumerate(cases):
    x = mx.nd.array(inputs["data"])
    rois = mx.nd.array(inputs[f"rois{i}"])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.ROIAlign(x, rois, pooled_size=tuple(pooled), spatial_scale=scale,
                                   sample_ratio=ratio, position_sensitive=sensitive,
                                   aligned=aligned)
    head = mx.nd.array(np.cos(np.arange(y.size) * 0.3 + i).reshape(y.shape))
    y.backward(head)
    arrays[f"{i}.y"] = y.asnumpy()
    arrays[f"{i}.g"] = x.grad.asnumpy()
"""


def _rois(scale, count=7):
    """Regions in image coordinates: most inside the image, some beyond it, some thin."""
    ih, iw = H / scale, W / scale
    xs = np.sort(RNG.uniform(-0.2 * iw, 1.2 * iw, (count, 2)), axis=1)
    ys = np.sort(RNG.uniform(-0.2 * ih, 1.2 * ih, (count, 2)), axis=1)
    xs[0] = [0.3 * iw, 0.3 * iw + 0.4 / scale]  # under a pixel wide
    ys[1] = [0.5 * ih, 0.5 * ih + 0.2 / scale]  # under a pixel high
    batch = RNG.integers(0, N, count)
    return np.column_stack([batch, xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]]).astype(np.float32)


def _inputs():
    arrays = {"data": RNG.standard_normal((N, C, H, W)).astype(np.float32)}
    for i, (_, scale, *_rest) in enumerate(CASES):
        arrays[f"rois{i}"] = _rois(scale)
    arrays["cases"] = np.frombuffer(json.dumps(CASES).encode(), dtype=np.uint8)
    return arrays


def test_roialign_matches_mxnet(tmp_path):
    inputs = _inputs()
    mxnet_ref.check_body(tmp_path, _BODY, inputs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[4]])
def test_roialign_gradient_numerically(case):
    pooled, scale, ratio, sensitive, aligned = case
    attrs = dict(
        pooled_size=pooled,
        spatial_scale=scale,
        sample_ratio=ratio,
        position_sensitive=sensitive,
        aligned=aligned,
    )
    shape = (N, pooled[0] * pooled[1], 5, 6)
    x0 = RNG.standard_normal(shape)
    rois = mx.nd.array(_rois(scale, 3), dtype="float64")
    x = mx.nd.array(x0, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.ROIAlign(x, rois, **attrs)
    head = np.sin(np.arange(y.size)).reshape(y.shape)
    y.backward(mx.nd.array(head, dtype="float64"))

    def loss(v):
        out = mx.nd.contrib.ROIAlign(mx.nd.array(v, dtype="float64"), rois, **attrs)
        return float((out.asnumpy() * head).sum())

    num = np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        plus, minus = x0.copy(), x0.copy()
        plus[idx] += 1e-6
        minus[idx] -= 1e-6
        num[idx] = (loss(plus) - loss(minus)) / 2e-6
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-8)


def test_roialign_negative_batch_index_gives_zeros():
    x = mx.nd.array(RNG.standard_normal((N, C, H, W)))
    boxes = _rois(1.0, 4)
    boxes[2, 0] = -1
    rois = mx.nd.array(boxes)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.ROIAlign(x, rois, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward(mx.nd.ones_like(y))
    out = y.asnumpy()
    assert (out[2] == 0).all()
    keep = mx.nd.array(boxes[[0, 1, 3]])
    x2 = x.copy()
    x2.attach_grad()
    with mx.autograd.record():
        y2 = mx.nd.contrib.ROIAlign(x2, keep, pooled_size=(2, 2), spatial_scale=1.0)
    y2.backward(mx.nd.ones_like(y2))
    np.testing.assert_allclose(out[[0, 1, 3]], y2.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-6)


def test_roialign_rois_get_no_gradient():
    x = mx.nd.array(RNG.standard_normal((N, C, H, W)))
    rois = mx.nd.array(_rois(1.0, 3))
    rois.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.ROIAlign(x, rois, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward(mx.nd.ones_like(y))
    assert (rois.grad.asnumpy() == 0).all()


def test_roialign_symbol_binds_and_infers_shape():
    inputs = _inputs()
    attrs = dict(pooled_size=(2, 2), spatial_scale=0.5, sample_ratio=2, position_sensitive=True)
    s = mx.sym.contrib.ROIAlign(mx.sym.var("data"), mx.sym.var("rois"), name="ra", **attrs)
    assert s.list_arguments() == ["data", "rois"]
    assert s.list_outputs() == ["ra_output"]
    _, outs, _ = s.infer_shape(data=(N, C, H, W), rois=(7, 5))
    assert outs == [(7, C // 4, 2, 2)]
    args = {"data": mx.nd.array(inputs["data"]), "rois": mx.nd.array(inputs["rois3"])}
    grads = {"data": mx.nd.zeros((N, C, H, W))}
    ex = s.bind(mx.cpu(), args, args_grad=grads, grad_req={"data": "write", "rois": "null"})
    (y,) = ex.forward(is_train=True)
    head = mx.nd.array(np.cos(np.arange(y.size)).reshape(y.shape))
    ex.backward(head)
    x = args["data"].copy()
    x.attach_grad()
    with mx.autograd.record():
        want = mx.nd.contrib.ROIAlign(x, args["rois"], **attrs)
    want.backward(head)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(grads["data"].asnumpy(), x.grad.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "data, rois, attrs, match",
    [
        ((N, C, H), (2, 5), {}, "data"),
        ((N, C, H, W), (2, 4), {}, "rois"),
        ((N, C, H, W), (2, 5, 1), {}, "rois"),
        ((N, C, H, W), (2, 5), dict(pooled_size=(2,)), "pooled_size"),
        ((N, C, H, W), (2, 5), dict(pooled_size=(0, 2)), "pooled_size"),
        ((N, 6, H, W), (2, 5), dict(position_sensitive=True), "divisible"),
        ((N, C, H, W), (2, 5), dict(spatial_scale=2.0), "spatial_scale"),
    ],
)
def test_roialign_errors(data, rois, attrs, match):
    kw = dict(pooled_size=(2, 2), spatial_scale=1.0)
    kw.update(attrs)
    with pytest.raises(MXNetError, match=match):
        mx.nd.contrib.ROIAlign(mx.nd.zeros(data), mx.nd.zeros(rois), **kw)


def test_roialign_errors_for_bad_regions():
    x = mx.nd.zeros((N, C, H, W))
    with pytest.raises(MXNetError, match="batch index 2"):
        mx.nd.contrib.ROIAlign(x, mx.nd.array([[2, 0, 0, 3, 3]]), (2, 2), 1.0)
    with pytest.raises(MXNetError, match="empty"):
        mx.nd.contrib.ROIAlign(x, mx.nd.array([[0, 1, 1, 1, 3]]), (2, 2), 1.0, aligned=True)
