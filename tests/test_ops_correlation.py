"""FlowNet's ``Correlation`` (mx.nd and mx.sym) against Apache MXNet 1.9.1: the output and the
gradient of both inputs over kernel sizes, displacements, strides, padding and both
comparisons; the gradients by central differences in float64; the symbol's shapes; the errors
for bad input."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

RNG = np.random.default_rng(5)
SHAPE = (2, 3, 9, 10)

#: (kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply)
CASES = [
    (1, 1, 1, 1, 0, True),
    (3, 2, 2, 1, 2, True),
    (3, 4, 1, 2, 4, False),
    (1, 3, 3, 3, 1, False),
    (5, 0, 1, 1, 2, True),
    (1, 2, 1, 3, 0, True),
]

#: run under mxrs and under MXNet alike: forward and backward of every case
_BODY = """
cases = json.loads(bytes(inputs["cases"]).decode())
for i, (k, md, s1, s2, pad, mult) in enumerate(cases):
    a, b = mx.nd.array(inputs["a"]), mx.nd.array(inputs["b"])
    a.attach_grad()
    b.attach_grad()
    attrs = dict(kernel_size=k, max_displacement=md, stride1=s1, stride2=s2, pad_size=pad,
                 is_multiply=mult)
    with mx.autograd.record():
        y = mx.nd.Correlation(a, b, **attrs)
    head = mx.nd.array(np.cos(np.arange(y.size) * 0.7 + i).reshape(y.shape))
    y.backward(head)
    arrays[f"{i}.y"] = y.asnumpy()
    arrays[f"{i}.ga"] = a.grad.asnumpy()
    arrays[f"{i}.gb"] = b.grad.asnumpy()
"""


def _inputs():
    a = RNG.standard_normal(SHAPE).astype(np.float32)
    b = RNG.standard_normal(SHAPE).astype(np.float32)
    cases = np.frombuffer(json.dumps(CASES).encode(), dtype=np.uint8)
    return {"a": a, "b": b, "cases": cases}


def test_correlation_matches_mxnet(tmp_path):
    inputs = _inputs()
    mxnet_ref.check_body(tmp_path, _BODY, inputs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[5]])
def test_correlation_gradient_numerically(case):
    k, md, s1, s2, pad, mult = case
    attrs = dict(
        kernel_size=k, max_displacement=md, stride1=s1, stride2=s2, pad_size=pad, is_multiply=mult
    )
    a0 = RNG.standard_normal((1, 2, 8, 7))
    b0 = RNG.standard_normal((1, 2, 8, 7))
    a, b = mx.nd.array(a0, dtype="float64"), mx.nd.array(b0, dtype="float64")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Correlation(a, b, **attrs)
    head = np.sin(np.arange(y.size)).reshape(y.shape)
    y.backward(mx.nd.array(head, dtype="float64"))

    def loss(x1, x2):
        out = mx.nd.Correlation(
            mx.nd.array(x1, dtype="float64"), mx.nd.array(x2, dtype="float64"), **attrs
        )
        return float((out.asnumpy() * head).sum())

    eps = 1e-6
    for which, grad in ((0, a.grad.asnumpy()), (1, b.grad.asnumpy())):
        num = np.zeros_like(a0)
        for idx in np.ndindex(a0.shape):
            plus, minus = [a0.copy(), b0.copy()], [a0.copy(), b0.copy()]
            plus[which][idx] += eps
            minus[which][idx] -= eps
            num[idx] = (loss(*plus) - loss(*minus)) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)


def test_correlation_symbol_binds_and_infers_shape():
    inputs = _inputs()
    attrs = dict(kernel_size=3, max_displacement=2, stride1=2, stride2=1, pad_size=2)
    s = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), name="corr", **attrs)
    assert s.list_arguments() == ["a", "b"]
    assert s.list_outputs() == ["corr_output"]
    _, outs, _ = s.infer_shape(a=SHAPE, b=SHAPE)
    assert outs == [(2, 25, 4, 4)]
    args = {"a": mx.nd.array(inputs["a"]), "b": mx.nd.array(inputs["b"])}
    grads = {k: mx.nd.zeros(SHAPE) for k in args}
    ex = s.bind(mx.cpu(), args, args_grad=grads)
    (y,) = ex.forward(is_train=True)
    head = mx.nd.array(np.cos(np.arange(y.size)).reshape(y.shape))
    ex.backward(head)
    a, b = args["a"], args["b"]
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        want = mx.nd.Correlation(a, b, **attrs)
    want.backward(head)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(grads["a"].asnumpy(), a.grad.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(grads["b"].asnumpy(), b.grad.asnumpy(), rtol=1e-6)


def test_correlation_takes_out():
    a = mx.nd.array(RNG.standard_normal((1, 2, 5, 5)))
    out = mx.nd.zeros((1, 9, 3, 3))
    res = mx.nd.Correlation(a, a, out=out)
    assert res is out
    np.testing.assert_allclose(out.asnumpy(), mx.nd.Correlation(a, a).asnumpy())


@pytest.mark.parametrize(
    "shapes, attrs, match",
    [
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(kernel_size=2), "kernel_size"),
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(kernel_size=0), "kernel_size"),
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(stride1=0), "stride1"),
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(stride2=0), "stride2"),
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(pad_size=-1), "pad_size"),
        (((1, 2, 6, 6), (1, 2, 6, 6)), dict(max_displacement=5), "do not fit"),
        (((1, 2, 6, 6), (1, 2, 5, 6)), {}, "one shape"),
        (((2, 6, 6), (2, 6, 6)), {}, "4D"),
    ],
)
def test_correlation_errors(shapes, attrs, match):
    a, b = (mx.nd.zeros(s) for s in shapes)
    with pytest.raises(MXNetError, match=match):
        mx.nd.Correlation(a, b, **attrs)
