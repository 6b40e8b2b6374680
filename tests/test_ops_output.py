"""The symbolic API's output layers as NDArray ops, against MXNet 1.9.1: forward values and the
gradients they hand back whatever gradient reaches them."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

CASES = """
def cases(mx, x, label):
    out = {}
    for name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
        for scale in (1.0, 0.5):
            a = mx.nd.array(x)
            a.attach_grad()
            with mx.autograd.record():
                y = getattr(mx.nd, name)(a, mx.nd.array(label), grad_scale=scale)
            y.backward(mx.nd.ones(y.shape) * 7)  # the head gradient is ignored
            out["%s_%s" % (name, scale)] = (y.asnumpy(), a.grad.asnumpy())
    for norm in ("null", "batch", "valid"):
        a = mx.nd.array(x)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.MakeLoss(a, grad_scale=2.0, normalization=norm, valid_thresh=0.1)
        y.backward(mx.nd.ones(y.shape) * 7)
        out["MakeLoss_" + norm] = (y.asnumpy(), a.grad.asnumpy())
    return out
"""


def test_output_layers_match_mxnet(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    label = rng.uniform(0, 1, (4, 3)).astype(np.float32)
    script = (
        CASES
        + """
import mxnet as mx
for k, (y, g) in cases(mx, inputs["x"], inputs["label"]).items():
    arrays[k + "_y"], arrays[k + "_g"] = y, g
"""
    )
    _, theirs = mxnet_ref.run(tmp_path, script, x=x, label=label)
    ns = {}
    exec(CASES, ns)
    ours = ns["cases"](mx, x, label)
    assert len(theirs) == 2 * len(ours) == 18
    for k, (y, g) in ours.items():
        np.testing.assert_allclose(y, theirs[k + "_y"], rtol=1e-6, atol=1e-7, err_msg=k)
        np.testing.assert_allclose(g, theirs[k + "_g"], rtol=1e-6, atol=1e-7, err_msg=k)


def test_bad_labels_and_normalizations_are_named():
    with pytest.raises(MXNetError, match="label shape \\(5,\\) does not match"):
        mx.nd.LinearRegressionOutput(mx.nd.ones((2, 3)), mx.nd.ones(5))
    with pytest.raises(MXNetError, match="normalization must be"):
        mx.nd.MakeLoss(mx.nd.ones(2), normalization="mean")
