"""GridGenerator, BilinearSampler and SpatialTransformer against Apache MXNet 1.9.1 (float32, its
only type for them): outputs and every input's gradient, with grids reaching outside the
image."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad
from mxrs import autograd, nd

SCRIPT = """
import mxnet as mx
from mxnet import autograd
def run(name, xs, **kw):
    xs = [mx.nd.array(x, dtype="float32") for x in xs]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = getattr(mx.nd, name)(*xs, **kw)
    y.backward(mx.nd.array(np.cos(np.arange(y.size)).reshape(y.shape), dtype="float32"))
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]
for key, (name, names, kw) in CASES.items():
    for i, a in enumerate(run(name, [inputs[n] for n in names], **kw)):
        arrays[f"{key}.{i}"] = a
"""

CASES = {
    "affine": ("GridGenerator", ["theta"], {"transform_type": "affine", "target_shape": (4, 5)}),
    "warp": ("GridGenerator", ["flow"], {"transform_type": "warp"}),
    "sample": ("BilinearSampler", ["img", "grid"], {}),
    "st": (
        "SpatialTransformer",
        ["img", "theta"],
        {"target_shape": (4, 5), "transform_type": "affine", "sampler_type": "bilinear"},
    ),
}


def _run(name, xs, **kw):
    xs = [nd.array(x, dtype="float32") for x in xs]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = getattr(nd, name)(*xs, **kw)
    y.backward(nd.array(np.cos(np.arange(y.size)).reshape(y.shape), dtype="float32"))
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


def test_spatial_transformer_operators_match_mxnet(tmp_path):
    rng = np.random.default_rng(5)
    inputs = {
        "theta": np.array([[0.9, 0.2, 0.1, -0.3, 1.1, -0.2], [1.3, -0.4, 0.5, 0.2, 0.7, 0.4]]),
        "flow": rng.standard_normal((2, 2, 3, 4)),
        "img": rng.standard_normal((2, 3, 6, 7)),
        "grid": rng.uniform(-1.3, 1.3, (2, 2, 4, 5)),  # some points outside the image
    }
    script = f"CASES = {CASES!r}\n" + SCRIPT
    _, want = mxnet_ref.run(tmp_path, script, **inputs)
    for key, (name, names, kw) in CASES.items():
        got = _run(name, [inputs[n] for n in names], **kw)
        for i, a in enumerate(got):
            np.testing.assert_allclose(a, want[f"{key}.{i}"], rtol=2e-5, atol=2e-5, err_msg=key)


def test_sampler_gradient_and_errors():
    rng = np.random.default_rng(1)
    check_grad(
        lambda d, g: nd.BilinearSampler(d, g),
        [rng.standard_normal((1, 2, 4, 4)), rng.uniform(-0.9, 0.9, (1, 2, 3, 3))],
    )
    with pytest.raises(mx.MXNetError, match="affine or warp"):
        nd.GridGenerator(nd.ones((1, 6)), transform_type="shear", target_shape=(2, 2))
    with pytest.raises(mx.MXNetError, match=r"affine needs data \(N, 6\)"):
        nd.GridGenerator(nd.ones((1, 4)), target_shape=(2, 2))
    with pytest.raises(mx.MXNetError, match="of one batch"):
        nd.BilinearSampler(nd.ones((2, 1, 3, 3)), nd.ones((1, 2, 3, 3)))
    sym = mx.sym.SpatialTransformer(mx.sym.var("d"), mx.sym.var("loc"), target_shape=(5, 6))
    assert sym.infer_shape(d=(2, 3, 8, 8), loc=(2, 6))[1] == [(2, 3, 5, 6)]
