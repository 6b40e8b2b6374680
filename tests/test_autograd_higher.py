"""Higher-order gradients: ``autograd.grad(create_graph=True)``.

Each op's recorded gradient is differentiated again and the result (a Hessian-vector product)
is compared with central differences of the first-order gradient, in float64.
"""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, nd
from mxrs.base import MXNetError


def _first_grads(fn, vals, head):
    arrays = [nd.array(v, dtype=np.float64) for v in vals]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        out = fn(*arrays)
    grads = autograd.grad(out, arrays, head_grads=nd.array(head, dtype=np.float64))
    return [g.asnumpy() for g in grads]


def check_hessian_vector(fn, inputs, eps=1e-5, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that differentiating ``grad(head . fn)`` along ``v`` (recorded, create_graph)
    matches central differences of the first-order gradient along ``v``."""
    rng = np.random.default_rng(seed)
    vals = [np.asarray(v, dtype=np.float64) for v in inputs]
    arrays = [nd.array(v, dtype=np.float64) for v in vals]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        out = fn(*arrays)
    head = rng.standard_normal(out.shape)
    vs = [rng.standard_normal(v.shape) for v in vals]
    with autograd.record():
        grads = autograd.grad(
            out, arrays, head_grads=nd.array(head, dtype=np.float64), create_graph=True
        )
        pairs = zip(grads, vs, strict=True)
        total = sum((g * nd.array(v, dtype=np.float64)).sum() for g, v in pairs)
    total.backward()
    plus = _first_grads(fn, [x + eps * v for x, v in zip(vals, vs, strict=True)], head)
    minus = _first_grads(fn, [x - eps * v for x, v in zip(vals, vs, strict=True)], head)
    for i, a in enumerate(arrays):
        num = (plus[i] - minus[i]) / (2 * eps)
        np.testing.assert_allclose(
            a.grad.asnumpy(), num, rtol=rtol, atol=atol, err_msg=f"input {i}"
        )
        assert np.abs(num).max() > 1e-3 or np.allclose(num, 0)  # a non-trivial check


POS = np.random.default_rng(1).uniform(0.5, 2.0, (3, 4))
ANY = np.random.default_rng(2).uniform(-1.5, 1.5, (3, 4))
OTHER = np.random.default_rng(6).uniform(0.5, 2.0, (3, 4))
ROW = np.random.default_rng(3).uniform(0.5, 2.0, (1, 4))

UNARY = {
    "exp": lambda x: nd.exp(x),
    "log": lambda x: nd.log(x),
    "sqrt": lambda x: nd.sqrt(x),
    "rsqrt": lambda x: nd.rsqrt(x),
    "square": lambda x: nd.square(x),
    "reciprocal": lambda x: nd.reciprocal(x),
    "log1p": lambda x: nd.log1p(x),
    "expm1": lambda x: nd.expm1(x),
    "sin": lambda x: nd.sin(x),
    "cos": lambda x: nd.cos(x),
    "sigmoid": lambda x: nd.sigmoid(x),
    "tanh": lambda x: nd.tanh(x),
    "softrelu": lambda x: nd.Activation(x, act_type="softrelu"),
    "softsign": lambda x: nd.softsign(x),
    "gelu": lambda x: nd.LeakyReLU(x, act_type="gelu"),
    "relu_times_x": lambda x: nd.relu(x - 1) * x,
    "abs_times_x": lambda x: nd.abs(x - 1) * x,
    "clip_times_x": lambda x: nd.clip(x, 0.7, 1.5) * x,
    "leaky_times_x": lambda x: nd.LeakyReLU(x - 1, slope=0.1) * x,
    "scalars": lambda x: (3 / x + x**3 - 2**x + (1 - x) / 2) * (x + 1),
    "max_min_scalar": lambda x: nd.maximum(x, 1.0) * nd.minimum(x, 1.2) * x,
    "cast": lambda x: nd.cast(x * x, "float32").astype("float64") * x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_elementwise_second_derivatives(name):
    if name == "cast":  # through float32: wider differences and tolerances
        check_hessian_vector(UNARY[name], [POS], eps=1e-3, rtol=1e-3)
    else:
        check_hessian_vector(UNARY[name], [POS])


BINARY = {
    "mul": lambda a, b: a * b * a,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "sub_add": lambda a, b: (a - b) * (a + b) * b,
    "broadcast_mul": lambda a, b: nd.broadcast_mul(a, b) * a,
    "broadcast_div": lambda a, b: nd.broadcast_div(a, b * b),
    "maximum": lambda a, b: nd.maximum(a, b) * a * b,
    "where": lambda a, b: nd.where(a > 1, a * a, b * b * b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_two_input_second_derivatives(name):
    b = ROW if name.startswith("broadcast") else OTHER
    check_hessian_vector(BINARY[name], [POS, b])


STRUCTURED = {
    "sum_axis": lambda x: nd.sum(x * x * x, axis=1),
    "mean": lambda x: nd.mean(nd.exp(x)),
    "max_axis": lambda x: nd.max(x * x, axis=0) * nd.sum(x, axis=0),
    "norm": lambda x: nd.norm(x, axis=1) * nd.sum(x, axis=1),
    "prod": lambda x: nd.prod(x, axis=1),
    "reshape_transpose": lambda x: nd.transpose(nd.reshape(x * x, (4, 3))) * x,
    "broadcast_to": lambda x: nd.broadcast_to(nd.sum(x * x, axis=0, keepdims=True), (3, 4)) * x,
    "concat_split": lambda x: (
        nd.split(nd.concat(x * x, nd.sin(x), dim=1), 2, axis=1)[0]
        * nd.split(nd.concat(x * x, nd.sin(x), dim=1), 2, axis=1)[1]
    ),
    "split_one_output": lambda x: nd.split(x * x * x, 2, axis=1)[1],
    "stack": lambda x: nd.stack(x * x, x, axis=0).prod(axis=0),
    "slice_index": lambda x: x[1:, ::2] ** 3 * nd.slice_axis(x, axis=0, begin=0, end=2)[:, 1:3],
    "tile_repeat_flip": lambda x: nd.tile(x, (1, 2)) * nd.repeat(nd.flip(x, axis=1), 2, axis=1),
    "pad": lambda x: (
        nd.pad(
            (x * x).reshape((1, 1, 3, 4)),
            mode="constant",
            pad_width=(0, 0, 0, 0, 1, 1, 2, 2),
            constant_value=3.0,
        )
        ** 2
    ),
    "dot": lambda x: nd.dot(x, nd.transpose(x)) * nd.dot(x, x, transpose_b=True),
    "dot_ta": lambda x: nd.dot(x, x * x, transpose_a=True),
    "batch_dot": lambda x: nd.batch_dot(
        x.reshape((1, 3, 4)), nd.exp(x).reshape((1, 3, 4)), transpose_b=True
    ),
    "softmax": lambda x: nd.softmax(x, axis=1) * x,
    "log_softmax": lambda x: nd.log_softmax(x, temperature=2.0) * x,
}


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_structured_op_second_derivatives(name):
    check_hessian_vector(STRUCTURED[name], [ANY if name != "prod" else POS])


def _f64(*vals):
    return [nd.array(v, dtype=np.float64) for v in vals]


def test_fully_connected_gradient_penalty_against_differences():
    # the gradient-penalty pattern: d/dw of ||d loss / d x||^2 through FC + tanh
    rng = np.random.default_rng(4)
    x0, w0, b0 = rng.standard_normal((2, 5)), rng.standard_normal((3, 5)), rng.standard_normal(3)

    def penalty(w, b):
        x = nd.array(x0, dtype=np.float64)
        x.attach_grad()
        with autograd.record():
            loss = nd.tanh(nd.FullyConnected(x, w, b, num_hidden=3)).sum()
            (gx,) = autograd.grad(loss, [x], create_graph=True)
            return (gx * gx).sum()

    w, b = nd.array(w0, dtype=np.float64), nd.array(b0, dtype=np.float64)
    w.attach_grad()
    b.attach_grad()
    p = penalty(w, b)
    p.backward()
    eps = 1e-6
    for arr, val in ((w, w0), (b, b0)):
        num = np.zeros_like(val)
        for k in range(val.size):
            d = np.zeros_like(val)
            d.flat[k] = eps
            hi = penalty(*_f64(w0 + d if arr is w else w0, b0 + d if arr is b else b0))
            lo = penalty(*_f64(w0 - d if arr is w else w0, b0 - d if arr is b else b0))
            hi, lo = hi.asscalar(), lo.asscalar()
            num.flat[k] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(arr.grad.asnumpy(), num, rtol=1e-5, atol=1e-8)


def test_mxnet_example_and_third_order():
    x = nd.ones((1,))
    x.attach_grad()
    with autograd.record():
        z = nd.elemwise_add(nd.exp(x), x)
    (dx,) = autograd.grad(z, [x], create_graph=True)
    assert abs(dx.asscalar() - (np.e + 1)) < 1e-6
    assert x.grad.asscalar() == 0  # grad() leaves .grad alone
    dx.backward()
    assert abs(x.grad.asscalar() - np.e) < 1e-6

    x = nd.array([2.0], dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.sin(x) * x * x
        (d1,) = autograd.grad(y, [x], create_graph=True)
        (d2,) = autograd.grad(d1, [x], create_graph=True)
    d2.backward()
    s, c, v = np.sin(2.0), np.cos(2.0), 2.0
    np.testing.assert_allclose(d1.asnumpy(), [c * v * v + 2 * v * s])
    np.testing.assert_allclose(d2.asnumpy(), [-s * v * v + 4 * v * c + 2 * s])
    np.testing.assert_allclose(x.grad.asnumpy(), [-c * v * v - 6 * v * s + 6 * c])


def test_linear_ops_differentiate_to_any_order():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.sum(nd.transpose(x) ** 4)
        (g1,) = autograd.grad(y, [x], create_graph=True)  # 4 x^3
        (g2,) = autograd.grad(nd.sum(nd.reshape(g1, (4,))), [x], create_graph=True)  # 12 x^2
        (g3,) = autograd.grad(nd.sum(g2[:, 1]), [x], create_graph=True)  # 24 x, column 1
    np.testing.assert_allclose(g2.asnumpy(), 12 * x.asnumpy() ** 2)
    np.testing.assert_allclose(g3.asnumpy(), [[0, 48], [0, 96]])


def test_a_function_with_an_ndarray_backward_is_differentiable_again():
    class Cube(autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x * x

        def backward(self, dy):
            (x,) = self.saved_tensors
            return dy * 3 * x * x

    x = nd.array([1.5, -2.0], dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        (g,) = autograd.grad(Cube()(x).sum(), [x], create_graph=True)
        total = g.sum()
    total.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy())


def test_an_op_without_a_differentiable_gradient_is_named():
    x = nd.array(np.random.default_rng(5).standard_normal((1, 1, 4, 4)))
    w = nd.ones((1, 1, 3, 3))
    x.attach_grad()
    with autograd.record():
        y = nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True).sum()
        with pytest.raises(MXNetError, match="gradient of Conv cannot be differentiated"):
            autograd.grad(y, [x], create_graph=True)
    # a first-order gradient of the same graph still works
    (g,) = autograd.grad(y, [x])
    assert g.shape == (1, 1, 4, 4)


def test_without_create_graph_the_gradient_is_a_constant():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        (g,) = autograd.grad(nd.exp(x).sum(), [x], retain_graph=True)
        with pytest.raises(MXNetError, match="not in a computational graph"):
            g.sum().backward()
    np.testing.assert_allclose(g.asnumpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    assert mx.autograd.is_recording() is False
