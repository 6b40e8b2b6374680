"""Deformable convolutions (mx.nd.contrib / mx.sym.contrib DeformableConvolution and
ModulatedDeformableConvolution, gluon.contrib.cnn's layers) against Apache MXNet 1.9.1.

DeformableConvolution: the output and the gradient of data, offset, weight and bias equal
MXNet's for several geometries (stride 2, dilation, padding, groups, two deformable groups,
offsets reading outside the image, no bias). MXNet 1.9.1's CPU ModulatedDeformableConvolution
has a forward pass only (its backward says "only implemented in GPU"): its output is checked
against MXNet's, its gradients (mask included) against central differences in float64. Zero
offsets make both an ordinary Convolution. The layers' parameters and outputs (gradients too
for DeformableConvolution) equal MXNet's for the same weights, hybridized or not, and an
exported layer loads in MXNet."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

RNG = np.random.default_rng(5)

#: name: (data shape, num_filter, kernel, stride, pad, dilate, num_group,
#:        num_deformable_group, offset scale, no_bias)
CASES = {
    "plain": ((2, 4, 7, 8), 3, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, 0.8, False),
    "stride2": ((2, 4, 9, 8), 4, (3, 3), (2, 2), (1, 1), (1, 1), 1, 1, 1.3, False),
    "dilate_pad": ((1, 6, 10, 9), 6, (3, 2), (1, 2), (2, 1), (2, 1), 3, 2, 1.1, False),
    "groups_dg2": ((2, 4, 6, 7), 4, (2, 3), (1, 1), (0, 1), (1, 1), 2, 2, 0.7, False),
    "outside": ((2, 2, 5, 6), 3, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, 4.0, False),
    "no_bias": ((1, 3, 6, 6), 5, (3, 3), (2, 1), (0, 0), (1, 2), 1, 1, 1.5, True),
}


def _out_size(case):
    shape, _, kernel, stride, pad, dilate = case[:6]
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, p, d in zip(shape[2:], kernel, stride, pad, dilate, strict=True)
    )


def _attrs(case):
    _, nf, kernel, stride, pad, dilate, groups, dg, _, no_bias = case
    return dict(
        kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf, num_group=groups,
        num_deformable_group=dg, no_bias=no_bias,
    )  # fmt: skip


def _inputs(case, rng=RNG, dtype=np.float32):
    shape, nf, kernel, _, _, _, groups, dg, scale, _ = case
    out = _out_size(case)
    taps = kernel[0] * kernel[1] * dg
    arrays = {
        "x": rng.standard_normal(shape),
        "off": rng.standard_normal((shape[0], 2 * taps, *out)) * scale,
        "mask": rng.uniform(0.1, 1.9, (shape[0], taps, *out)),
        "w": rng.standard_normal((nf, shape[1] // groups, *kernel)),
        "b": rng.standard_normal(nf),
        "head": rng.standard_normal((shape[0], nf, *out)),
    }
    return {k: v.astype(dtype) for k, v in arrays.items()}


#: run under MXNet 1.9.1 and under mxrs: every case's deformable output and gradients and
#: modulated output
_OPS_BODY = """
for name, attrs in json.loads(inputs_json).items():
    get = lambda k: mx.nd.array(inputs[f"{name}_{k}"])
    args = [get("x"), get("off"), get("w")] + ([] if attrs["no_bias"] else [get("b")])
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.DeformableConvolution(*args, **attrs)
    y.backward(get("head"))
    arrays[f"{name}_y"] = y.asnumpy()
    for k, a in zip(["x", "off", "w", "b"], args):
        arrays[f"{name}_d{k}"] = a.grad.asnumpy()
    margs = args[:2] + [get("mask")] + args[2:]
    arrays[f"{name}_my"] = mx.nd.contrib.ModulatedDeformableConvolution(*margs, **attrs).asnumpy()
"""


@pytest.fixture(scope="module")
def ops_inputs():
    data = {}
    for name, case in CASES.items():
        data.update({f"{name}_{k}": v for k, v in _inputs(case).items()})
    return data


def test_outputs_and_gradients_equal_mxnets(tmp_path, ops_inputs):
    attrs = json.dumps({n: _attrs(c) for n, c in CASES.items()})
    body = f"inputs_json = {attrs!r}\n" + _OPS_BODY
    want = mxnet_ref.check_body(tmp_path, body, ops_inputs, rtol=1e-4, atol=1e-4)
    # the cases reach what they are meant to: samples outside the image, between pixels
    off = ops_inputs["outside_off"]
    assert np.abs(off).max() > 8 and (off != np.round(off)).all()
    assert want["outside_dx"].shape == (2, 2, 5, 6)


def _numeric_grads(fn, values, head, eps=1e-6, probes=3, rng=RNG):
    """Directional derivatives of ``sum(fn(values) * head)`` along random directions of each
    input: {name: [(analytic, numeric)]}, the analytic ones from autograd."""
    arrays = {k: mx.nd.array(v, dtype="float64") for k, v in values.items()}
    for a in arrays.values():
        a.attach_grad()
    with mx.autograd.record():
        y = fn(**arrays)
    y.backward(mx.nd.array(head, dtype="float64"))
    out = {}
    for name, a in arrays.items():
        pairs = []
        for _ in range(probes):
            v = rng.standard_normal(a.shape)
            shifted = []
            for sign in (1, -1):
                moved = {k: mx.nd.array(val, dtype="float64") for k, val in values.items()}
                moved[name] = mx.nd.array(values[name] + sign * eps * v, dtype="float64")
                shifted.append((fn(**moved).asnumpy() * head).sum())
            pairs.append(((a.grad.asnumpy() * v).sum(), (shifted[0] - shifted[1]) / (2 * eps)))
        out[name] = pairs
    return out


@pytest.mark.parametrize("name", ["plain", "stride2", "dilate_pad", "groups_dg2", "outside"])
def test_modulated_gradients_match_central_differences(name):
    case = CASES[name]
    vals = _inputs(case, np.random.default_rng(17), np.float64)
    head = vals.pop("head")

    def fn(x, off, mask, w, b):
        return mx.nd.contrib.ModulatedDeformableConvolution(x, off, mask, w, b, **_attrs(case))

    for input_name, pairs in _numeric_grads(fn, vals, head).items():
        for analytic, numeric in pairs:
            assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), input_name


def test_deformable_gradients_match_central_differences_in_float64():
    case = CASES["outside"]
    vals = _inputs(case, np.random.default_rng(3), np.float64)
    head = vals.pop("head")
    vals.pop("mask")

    def fn(x, off, w, b):
        return mx.nd.contrib.DeformableConvolution(x, off, w, b, **_attrs(case))

    for input_name, pairs in _numeric_grads(fn, vals, head).items():
        for analytic, numeric in pairs:
            assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), input_name


@pytest.mark.parametrize("name", ["plain", "stride2", "dilate_pad", "groups_dg2", "no_bias"])
@pytest.mark.parametrize("modulated", [False, True])
def test_zero_offsets_make_an_ordinary_convolution(name, modulated):
    case = CASES[name]
    vals = _inputs(case)
    attrs = _attrs(case)
    x, w, b = (mx.nd.array(vals[k]) for k in ("x", "w", "b"))
    zeros = mx.nd.zeros(vals["off"].shape)
    results = []
    for deformable in (True, False):
        for a in (x, w, b):
            a.attach_grad()
        with mx.autograd.record():
            if not deformable:
                y = mx.nd.Convolution(x, w, b, **attrs)
            elif modulated:
                ones = mx.nd.ones(vals["mask"].shape)
                y = mx.nd.contrib.ModulatedDeformableConvolution(x, zeros, ones, w, b, **attrs)
            else:
                y = mx.nd.contrib.DeformableConvolution(x, zeros, w, b, **attrs)
        y.backward(mx.nd.array(vals["head"]))
        results.append([y.asnumpy()] + [a.grad.asnumpy() for a in (x, w, b)])
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_modulated_with_a_unit_mask_is_deformable_inside_the_image():
    """Where every read is between pixels inside the image, the two border rules agree."""
    case = CASES["groups_dg2"]  # kernel (2, 3), stride 1, two deformable groups
    vals = _inputs(case)
    attrs = dict(_attrs(case), pad=(0, 0))
    n, c, h, w = vals["x"].shape
    oh, ow = h - 1, w - 2
    # taps on the first row (column) move down (right), the others up (left): all inside
    rows = np.arange(oh)[:, None] + np.arange(2)[None, :]  # (y, i) -> y + i
    cols = np.arange(ow)[:, None] + np.arange(3)[None, :]
    sign_h = np.where(rows == 0, 1.0, -1.0).T[:, None, :, None]  # (i, 1, y, 1)
    sign_w = np.where(cols == 0, 1.0, -1.0).T[None, :, None, :]  # (1, j, 1, x)
    sign = np.stack(np.broadcast_arrays(sign_h, sign_w), axis=2)  # (i, j, 2, y, x)
    sign = np.tile(sign.reshape(12, oh, ow), (2, 1, 1))  # two deformable groups
    off = (RNG.uniform(0.1, 0.4, (n, 24, oh, ow)) * sign).astype(np.float32)
    x, wt, b, offset = (mx.nd.array(v) for v in (vals["x"], vals["w"], vals["b"], off))
    grads = []
    for modulated in (False, True):
        for a in (x, offset, wt, b):
            a.attach_grad()
        with mx.autograd.record():
            if modulated:
                ones = mx.nd.ones((n, 12, oh, ow))
                y = mx.nd.contrib.ModulatedDeformableConvolution(x, offset, ones, wt, b, **attrs)
            else:
                y = mx.nd.contrib.DeformableConvolution(x, offset, wt, b, **attrs)
        y.backward(mx.nd.ones(y.shape))
        grads.append([y.asnumpy()] + [a.grad.asnumpy() for a in (x, offset, wt, b)])
    for got, want in zip(*grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


_SYMBOL_BODY = """
d, o, m = mx.sym.var("data"), mx.sym.var("offset"), mx.sym.var("mask")
s = mx.sym.contrib.DeformableConvolution(
    data=d, offset=o, kernel=(3, 3), num_filter=5, pad=(1, 1), num_deformable_group=2, name="dc")
s2 = mx.sym.contrib.ModulatedDeformableConvolution(
    data=d, offset=o, mask=m, kernel=(3, 3), num_filter=6, stride=(2, 2), no_bias=True, name="md")
result = {
    "args": s.list_arguments(),
    "args2": s2.list_arguments(),
    "shapes": [[list(t) for t in g]
               for g in s.infer_shape(data=(2, 4, 7, 8), offset=(2, 36, 7, 8))],
    "shapes2": [[list(t) for t in g]
                for g in s2.infer_shape(data=(2, 4, 7, 8), offset=(2, 18, 3, 3),
                                        mask=(2, 9, 3, 3))],
}
ex = s.simple_bind(mx.cpu(), data=(2, 4, 7, 8), offset=(2, 36, 7, 8))
for k in ex.arg_dict:
    ex.arg_dict[k][:] = inputs[k]
y = ex.forward(is_train=True)[0]
ex.backward(mx.nd.array(inputs["head"]))
arrays["y"] = y.asnumpy()
for k in ex.grad_dict:
    arrays["d_" + k] = ex.grad_dict[k].asnumpy()
"""


def test_symbol_api_equals_mxnets(tmp_path):
    inputs = {
        "data": RNG.standard_normal((2, 4, 7, 8)),
        "offset": RNG.standard_normal((2, 36, 7, 8)) * 1.5,
        "dc_weight": RNG.standard_normal((5, 4, 3, 3)),
        "dc_bias": RNG.standard_normal(5),
        "head": RNG.standard_normal((2, 5, 7, 8)),
    }
    inputs = {k: v.astype(np.float32) for k, v in inputs.items()}
    want_res, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + _SYMBOL_BODY, **inputs)
    space = {"mx": mx, "np": np, "inputs": inputs, "arrays": {}, "result": None}
    exec(_SYMBOL_BODY, space)
    assert space["result"] == want_res
    got = space["arrays"]
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4, err_msg=k)


#: the gluon layers under MXNet 1.9.1 and mxrs, given the same parameter values
_GLUON_BODY = """
cnn = mx.gluon.contrib.cnn
specs = [
    ("DeformableConvolution", dict(channels=6, kernel_size=3, strides=2, padding=1, groups=2,
                                   num_deformable_group=2, activation="relu")),
    ("DeformableConvolution", dict(channels=4, kernel_size=(3, 2), dilation=(2, 1),
                                   use_bias=False, offset_use_bias=False)),
    ("ModulatedDeformableConvolution", dict(channels=6, kernel_size=3, padding=1,
                                            num_deformable_group=2, activation="tanh")),
    ("ModulatedDeformableConvolution", dict(channels=4, kernel_size=(2, 3), strides=(1, 2),
                                            use_bias=False)),
]
shapes = {}
for i, (cls, kw) in enumerate(specs):
    for hybrid in (False, True):
        tag = f"{i}{'h' if hybrid else ''}"
        net = getattr(cnn, cls)(prefix=f"l{tag}_", **kw)
        shapes[tag] = [[k, list(p.shape)] for k, p in net.collect_params().items()]
        net.initialize()
        if hybrid:
            net.hybridize()
        x = mx.nd.array(inputs["x"])
        net(x)  # deferred initialization
        for k, p in net.collect_params().items():
            p.set_data(mx.nd.array(inputs[k[len(f"l{tag}_"):] + str(i)]))
        shapes[tag + "_init"] = [[k, list(p.shape)] for k, p in net.collect_params().items()]
        if cls.startswith("Modulated"):  # MXNet 1.9.1's CPU operator has no backward
            arrays[f"y{tag}"] = net(x).asnumpy()
            continue
        x.attach_grad()
        with mx.autograd.record():
            y = net(x)
        y.backward(mx.nd.array(inputs[f"head{i}"]))
        arrays[f"y{tag}"] = y.asnumpy()
        arrays[f"dx{tag}"] = x.grad.asnumpy()
        for k, p in net.collect_params().items():
            arrays[f"d{tag}_{k[len(f'l{tag}_'):]}"] = p.grad().asnumpy()
result = shapes
"""


def _gluon_inputs():
    x = RNG.standard_normal((2, 4, 9, 8))
    inputs = {"x": x}
    layers = [
        (6, 2, (3, 3), 36, True, True, (5, 4)),
        (4, 1, (3, 2), 12, False, False, (5, 7)),
        (6, 1, (3, 3), 54, True, True, (9, 8)),
        (4, 1, (2, 3), 18, True, False, (8, 3)),
    ]
    for i, (ch, groups, k, oc, offset_bias, bias, out) in enumerate(layers):
        inputs[f"offset_weight{i}"] = RNG.standard_normal((oc, 4 // groups, *k)) * 0.3
        if offset_bias:
            inputs[f"offset_bias{i}"] = RNG.standard_normal(oc) * 0.5
        inputs[f"deformable_conv_weight{i}"] = RNG.standard_normal((ch, 4 // groups, *k)) * 0.5
        if bias:
            inputs[f"deformable_conv_bias{i}"] = RNG.standard_normal(ch)
        inputs[f"head{i}"] = RNG.standard_normal((2, ch, *out))
    return {k: v.astype(np.float32) for k, v in inputs.items()}


def test_gluon_layers_equal_mxnets(tmp_path):
    inputs = _gluon_inputs()
    want_res, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + _GLUON_BODY, **inputs)
    space = {"mx": mx, "np": np, "inputs": inputs, "arrays": {}, "result": None}
    exec(_GLUON_BODY, space)
    assert space["result"] == want_res  # parameter names, order and shapes, before and after
    got = space["arrays"]
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4, err_msg=k)


def test_modulated_layer_trains_and_starts_as_a_convolution():
    """Zero offset parameters (the default) give zero offsets and a mask of 2 * sigmoid(0) = 1:
    the layer computes a Conv2D; its parameters all get gradients."""
    net = mx.gluon.contrib.cnn.ModulatedDeformableConvolution(4, kernel_size=3, padding=1)
    conv = mx.gluon.nn.Conv2D(4, kernel_size=3, padding=1)
    net.initialize(mx.init.Uniform(0.5))
    conv.initialize()
    x = mx.nd.array(RNG.standard_normal((2, 3, 6, 5)))
    with mx.autograd.record():
        y = net(x)
    y.backward()
    conv(x)
    conv.weight.set_data(net.deformable_conv_weight.data())
    conv.bias.set_data(net.deformable_conv_bias.data())
    np.testing.assert_allclose(y.asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-5)
    for p in net.collect_params().values():
        assert p.grad().shape == p.shape
    assert np.abs(net.offset_weight.grad().asnumpy()).sum() > 0


def test_layers_with_in_channels_and_their_repr():
    net = mx.gluon.contrib.cnn.DeformableConvolution(
        8, kernel_size=(3, 3), padding=1, in_channels=4, groups=2, use_bias=False
    )
    assert net.offset_weight.shape == (18, 2, 3, 3)
    assert net.deformable_conv_weight.shape == (8, 2, 3, 3)
    assert repr(net) == (
        "DeformableConvolution(2 -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), "
        "groups=2, bias=False)"
    )
    net.initialize()
    assert net(mx.nd.ones((1, 4, 5, 5))).shape == (1, 8, 5, 5)
    assert net.name.startswith("deformable_conv")
    modulated = mx.gluon.contrib.cnn.ModulatedDeformableConvolution(3)
    assert modulated.name.startswith("modulated_deformable_conv")
    assert list(modulated.collect_params())[0].endswith("deformable_conv_weight")


def test_exported_layer_loads_in_mxnet(tmp_path):
    net = mx.gluon.contrib.cnn.ModulatedDeformableConvolution(
        4, kernel_size=3, padding=1, activation="relu"
    )
    net.initialize()
    net.hybridize()
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    net(mx.nd.array(x))
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(RNG.standard_normal(p.shape) * 0.3))
    y = net(mx.nd.array(x)).asnumpy()
    net.export(str(tmp_path / "dcn"))
    script = f"""
import mxnet as mx
b = mx.gluon.SymbolBlock.imports({str(tmp_path / "dcn-symbol.json")!r}, ["data"],
                                 {str(tmp_path / "dcn-0000.params")!r})
arrays["y"] = b(mx.nd.array(inputs["x"])).asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, x=x)
    np.testing.assert_allclose(y, want["y"], rtol=1e-4, atol=1e-4)


def test_bad_input_raises_clear_errors():
    x, w = mx.nd.ones((1, 4, 6, 6)), mx.nd.ones((3, 4, 3, 3))
    with pytest.raises(MXNetError, match=r"offset must be .*2 \* kh \* kw \* num_deformable_group"):
        mx.nd.contrib.DeformableConvolution(x, mx.nd.ones((1, 17, 4, 4)), w, kernel=(3, 3))
    with pytest.raises(MXNetError, match=r"\(1, 36, 4, 4\) for kernel \(3, 3\)"):
        mx.nd.contrib.DeformableConvolution(
            x, mx.nd.ones((1, 18, 4, 4)), w, kernel=(3, 3), num_deformable_group=2
        )
    with pytest.raises(MXNetError, match="offset must be"):  # not on the output's grid
        mx.nd.contrib.DeformableConvolution(x, mx.nd.ones((1, 18, 6, 6)), w, kernel=(3, 3))
    off = mx.nd.zeros((1, 18, 4, 4))
    with pytest.raises(MXNetError, match="mask must be"):
        mx.nd.contrib.ModulatedDeformableConvolution(x, off, mx.nd.ones((1, 18, 4, 4)), w)
    with pytest.raises(MXNetError, match="layout 'NHWC' is not supported"):
        mx.nd.contrib.DeformableConvolution(x, off, w, layout="NHWC")
    with pytest.raises(MXNetError, match="weight must be"):
        mx.nd.contrib.DeformableConvolution(x, off, mx.nd.ones((3, 2, 3, 3)), kernel=(3, 3))
    with pytest.raises(MXNetError, match="divisible by num_group=1 and num_deformable_group=3"):
        mx.nd.contrib.DeformableConvolution(
            x, mx.nd.zeros((1, 54, 4, 4)), w, num_deformable_group=3
        )
    with pytest.raises(MXNetError, match="kernel .* exceeds the padded input"):
        mx.nd.contrib.DeformableConvolution(mx.nd.ones((1, 4, 2, 2)), mx.nd.zeros((1, 18, 1, 1)), w)
    with pytest.raises(MXNetError, match="num_filter=3 must be divisible by num_deformable_gr"):
        mx.nd.contrib.ModulatedDeformableConvolution(
            x, mx.nd.zeros((1, 36, 4, 4)), mx.nd.ones((1, 18, 4, 4)), w, num_deformable_group=2
        )
    with pytest.raises(MXNetError, match="im2col_step"):
        mx.nd.contrib.ModulatedDeformableConvolution(
            mx.nd.ones((3, 4, 6, 6)), mx.nd.zeros((3, 18, 4, 4)), mx.nd.ones((3, 9, 4, 4)), w,
            im2col_step=2,
        )  # fmt: skip
    s = mx.sym.contrib.DeformableConvolution(
        data=mx.sym.var("data"), offset=mx.sym.var("offset"), kernel=(3, 3), num_filter=2
    )
    with pytest.raises(MXNetError, match="needs input 'offset' of shape"):
        s.infer_shape(data=(1, 4, 6, 6), offset=(1, 20, 4, 4))
    with pytest.raises(MXNetError, match="adj"):
        mx.gluon.contrib.cnn.DeformableConvolution(4, 3, adj=(1, 1))
    with pytest.raises(MXNetError, match="layout"):
        mx.gluon.contrib.cnn.ModulatedDeformableConvolution(4, 3, layout="NHWC")
