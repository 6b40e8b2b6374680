"""3×3 convolutions of stride 1 by Winograd's F(4×4, 3×3) on oneDNN's provider: the output and
the data gradient equal the direct convolution's to float32 tolerance for every padding, ragged
sizes and channel counts, ``MXRS_CONV_WINOGRAD`` chooses when it runs, and a model trained
through it gets the NumPy kernels' gradients.

oneDNN is a dependency of mxrs on x86-64 Linux, so it must load here; these tests fail (not
skip) where it does not.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from mxrs import _native
from mxrs.kernels._layout import channels_last
from onednn_native import channels_last_copy, load_onednn, needs_onednn

pytestmark = needs_onednn


def conv(xs, ws, pad, bias, winograd, training=True):
    load_onednn()
    return _native.OnednnConv(
        list(xs), list(ws), 1, bias, [1, 1], [1, 1], list(pad), training, None, winograd
    )


def close(got, want, rel=3e-5):
    """Equal to a few float32 roundings of the largest value's magnitude (the transforms scale
    values by up to 8 and back)."""
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=rel * scale)


SHAPES = [
    # (batch, in channels, out channels, height, width, padding, bias)
    (2, 3, 5, 7, 9, (1, 1), True),  # channels below one 16-lane block, partial tiles
    (1, 17, 33, 8, 8, (1, 1), False),  # channels across blocks
    (2, 16, 16, 6, 11, (0, 0), True),  # no padding
    (2, 5, 4, 5, 4, (2, 2), False),  # the most padding it takes
    (1, 20, 7, 9, 6, (0, 2), True),  # different padding per axis
    (4, 64, 64, 16, 16, (1, 1), True),  # the size "auto" picks it for
    # many chunks of tiles, the last one shorter, their points apart by padded strides
    (8, 64, 64, 56, 56, (1, 1), True),
    (3, 128, 96, 28, 28, (1, 1), False),  # chunks sized by the transformed kernels
]


@pytest.mark.parametrize("n, cin, cout, h, w, pad, bias", SHAPES)
def test_output_and_data_gradient_equal_the_direct_convolution(n, cin, cout, h, w, pad, bias):
    rng = np.random.default_rng(3)
    xs, ws = (n, cin, h, w), (cout, cin, 3, 3)
    x = channels_last_copy(rng.standard_normal(xs).astype(np.float32))
    wt = (rng.standard_normal(ws) / np.sqrt(9 * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    fast, direct = conv(xs, ws, pad, bias, "always"), conv(xs, ws, pad, bias, "off")
    assert fast.implementation.startswith("winograd_4x4_3x3+matmul:"), fast.implementation
    assert not direct.implementation.startswith("winograd")
    oh, ow = h + 2 * pad[0] - 2, w + 2 * pad[1] - 2
    assert list(fast.dst_shape) == [n, cout, oh, ow]
    y, want = channels_last((n, cout, oh, ow)), channels_last((n, cout, oh, ow))
    fast.forward(x, wt, b, y)
    direct.forward(x, wt, b, want)
    close(y, want)

    gy = channels_last_copy(rng.standard_normal((n, cout, oh, ow)).astype(np.float32))
    got = [channels_last(xs), np.empty_like(wt), np.empty(cout, np.float32) if bias else None]
    ref = [channels_last(xs), np.empty_like(wt), np.empty(cout, np.float32) if bias else None]
    fast.backward(x, wt, gy, *got)
    direct.backward(x, wt, gy, *ref)
    for g, r in zip(got, ref, strict=True):
        if r is not None:
            close(g, r)


def test_data_in_another_layout_is_computed_by_the_direct_kernel():
    rng = np.random.default_rng(4)
    xs, ws = (2, 16, 8, 8), (16, 16, 3, 3)
    x = rng.standard_normal(xs).astype(np.float32)  # NCHW: not the layout the tiles read
    wt = rng.standard_normal(ws).astype(np.float32)
    fast, direct = conv(xs, ws, (1, 1), False, "always"), conv(xs, ws, (1, 1), False, "off")
    y, want = np.empty(xs, np.float32), np.empty(xs, np.float32)
    fast.forward(x, wt, None, y)
    direct.forward(x, wt, None, want)
    np.testing.assert_array_equal(y, want)
    gx, gx_want = np.empty(xs, np.float32), np.empty(xs, np.float32)
    fast.backward(x, wt, want, gx, None, None)
    direct.backward(x, wt, want, gx_want, None, None)
    np.testing.assert_array_equal(gx, gx_want)


@pytest.mark.parametrize(
    "xs, ws, stride, picked",
    [
        ((8, 64, 28, 28), (64, 64, 3, 3), 1, True),
        ((8, 256, 14, 14), (256, 256, 3, 3), 1, True),
        ((8, 512, 7, 7), (512, 512, 3, 3), 1, True),
        ((32, 512, 4, 4), (512, 512, 3, 3), 1, True),  # one tile an image, 32 images
        ((8, 1024, 7, 7), (1024, 1024, 3, 3), 1, False),  # kernels too large to transform
        ((1, 64, 8, 8), (64, 64, 3, 3), 1, False),  # too few tiles
        ((8, 512, 4, 4), (512, 512, 3, 3), 1, False),  # too few tiles for their kernels
        ((32, 256, 2, 2), (256, 256, 3, 3), 1, False),  # a tile of 16 pixels for 4
        ((8, 3, 32, 32), (64, 3, 3, 3), 1, False),  # too few channels
        ((8, 64, 28, 28), (64, 64, 3, 3), 2, False),  # strided
        ((8, 64, 28, 28), (64, 64, 1, 1), 1, False),  # not 3×3
    ],
)
def test_auto_picks_it_where_it_is_faster(xs, ws, stride, picked):
    load_onednn()
    pad = [ws[2] // 2] * 2
    k = _native.OnednnConv(list(xs), list(ws), 1, False, [stride] * 2, [1, 1], pad, True)
    assert k.implementation.startswith("winograd") == picked, k.implementation


def test_an_unknown_choice_is_an_error():
    load_onednn()
    with pytest.raises(ValueError, match="winograd must be 'off', 'auto' or 'always', not \"yes\""):
        _native.OnednnConv(
            [1, 1, 4, 4], [1, 1, 3, 3], 1, False, [1, 1], [1, 1], [1, 1], False, None, "yes"
        )


TRAIN = """
import mxrs as mx, numpy as np
from mxrs import autograd, kernels
from mxrs.gluon.model_zoo import vision
rng = np.random.default_rng(5)
x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
label = mx.nd.array(rng.integers(0, 10, 8))
def run():
    mx.random.seed(7)
    net = vision.get_model("resnet18_v1", classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    with autograd.record():
        loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(net(mx.nd.array(x)), label)
    loss.backward()
    return [loss.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()
                               if p.grad_req != "null"]
out = {}
for p in ("numpy", "onednn"):
    with kernels.use(p):
        out[p] = run()
scale = max(float(np.abs(g).max()) for g in out["numpy"][1:])
np.testing.assert_allclose(out["onednn"][0], out["numpy"][0], rtol=1e-4, atol=1e-4)
for got, want in zip(out["onednn"][1:], out["numpy"][1:], strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=5e-4 * scale)
info = kernels.describe()
print("winograd", info["winograd"], sorted({i.split("+")[0] for i in info["implementations"]}))
"""


def run_python(code, **env):
    """Runs ``code`` in a fresh interpreter with ``env`` added; (exit status, output)."""
    full = {k: v for k, v in os.environ.items() if k not in ("MXRS_KERNELS", "MXRS_CONV_WINOGRAD")}
    full.update(env)
    p = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300
    )
    return p.returncode, p.stdout + p.stderr


def test_a_model_trained_through_it_gets_the_numpy_kernels_gradients():
    rc, out = run_python(TRAIN, MXRS_CONV_WINOGRAD="always")
    assert rc == 0, out
    assert "winograd always" in out and "'winograd_4x4_3x3'" in out, out


def test_it_can_be_turned_off():
    rc, out = run_python(TRAIN, MXRS_CONV_WINOGRAD="0")
    assert rc == 0, out
    assert "winograd off" in out and "winograd_4x4_3x3" not in out, out


def test_a_bad_choice_is_named_and_numpy_computes():
    code = (
        "import mxrs as mx, warnings\nwarnings.simplefilter('always')\n"
        "x = mx.nd.ones((1, 1, 3, 3)); w = mx.nd.ones((1, 1, 3, 3))\n"
        "y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True)\n"
        "print('result', y.asscalar(), mx.kernels.provider_name())\n"
    )
    rc, out = run_python(code, MXRS_CONV_WINOGRAD="sometimes")
    assert rc == 0 and "result 9.0 numpy" in out, out
    assert "MXRS_CONV_WINOGRAD='sometimes': choose one of auto, 0 or always" in out, out
