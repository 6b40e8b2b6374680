"""ROIPooling against Apache MXNet 1.9.1: output and gradient for regions inside, across the
border of and outside the image, reversed and half-pixel ones."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, nd


def test_roi_pooling_matches_mxnet(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    x[0, 0, 2:4, 2:4] = 5.0  # ties: the first maximum gets the gradient
    rois = np.array(
        [
            [0, 0, 0, 7, 8],
            [1, 1.5, 0.5, 5.2, 4.9],
            [0, 4, 4, 2, 2],
            [1, -3, -2, 3, 3],
            [0, 10, 12, 20, 20],
            [1, 2.5, 3.5, 9.5, 12.5],
        ],
        dtype=np.float32,
    )
    script = """
import mxnet as mx
for scale, pooled in ((1.0, (3, 2)), (0.5, (2, 2))):
    d = mx.nd.array(inputs["x"])
    d.attach_grad()
    with mx.autograd.record():
        y = mx.nd.ROIPooling(d, mx.nd.array(inputs["rois"]), pooled_size=pooled,
                             spatial_scale=scale)
    y.backward(mx.nd.array(np.cos(np.arange(y.size)).reshape(y.shape)))
    arrays[f"{scale}.y"], arrays[f"{scale}.g"] = y.asnumpy(), d.grad.asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, x=x, rois=rois)
    for scale, pooled in ((1.0, (3, 2)), (0.5, (2, 2))):
        d = nd.array(x)
        d.attach_grad()
        with autograd.record():
            y = nd.ROIPooling(d, nd.array(rois), pooled_size=pooled, spatial_scale=scale)
        y.backward(nd.array(np.cos(np.arange(y.size)).reshape(y.shape)))
        np.testing.assert_allclose(y.asnumpy(), want[f"{scale}.y"], rtol=1e-6, err_msg=str(scale))
        np.testing.assert_allclose(d.grad.asnumpy(), want[f"{scale}.g"], rtol=1e-5, atol=1e-6)


def test_roi_pooling_errors():
    with pytest.raises(mx.MXNetError, match="batch index 2 of 1"):
        nd.ROIPooling(nd.ones((1, 1, 4, 4)), nd.array([[2, 0, 0, 1, 1]]), (1, 1), 1.0)
    with pytest.raises(mx.MXNetError, match=r"rois \(R, 5\)"):
        nd.ROIPooling(nd.ones((1, 1, 4, 4)), nd.ones((2, 4)), (1, 1), 1.0)
    sym = mx.sym.ROIPooling(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 3), spatial_scale=1)
    assert sym.infer_shape(d=(2, 4, 8, 8), r=(5, 5))[1] == [(5, 4, 2, 3)]
