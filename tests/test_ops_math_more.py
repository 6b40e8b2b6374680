"""The extra math operators (inverse and hyperbolic trigonometry, log2/log10, cube roots, erf,
erfinv, gamma, gammaln, hard_sigmoid, softmin, smooth_l1, logical and broadcast comparisons,
hypot) against Apache MXNet 1.9.1, their special functions against Python's ``math``, their
gradients against finite differences and, for the smooth ones, their second derivatives.

Every case is a lambda over ``nd`` written once (``CASES``) and run by both libraries: MXNet runs
all of them in one process (a module fixture) and reports each output and each input's gradient
for the same head gradient (:func:`head`).
"""

import json
import math

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad
from mxrs import autograd, nd
from test_autograd_higher import check_hessian_vector

_RNG = np.random.default_rng(7)


def _u(low, high, shape=(3, 4)):
    return _RNG.uniform(low, high, shape).astype(np.float32)


INPUTS = {
    "unit": _u(-0.9, 0.9),
    "wide": _u(-2.0, 2.0),
    "big": _u(-6.0, 6.0),
    "pos": _u(0.2, 2.0),
    "gt1": _u(1.1, 3.0),
    "away": (np.sign(_u(-1, 1)) * _u(0.2, 2.0)).astype(np.float32),
    "gam": np.array(
        [[0.3, 1.7, 2.5, 3.9], [-0.5, -1.5, -2.3, 0.9], [4.2, 5.5, 0.6, -3.7]], np.float32
    ),
    "frac": np.array([[-2.5, -1.7, -0.2, 0.0], [0.4, 1.5, 2.7, -3.2]], np.float32),
    "zeros": np.array([[0, 1, -2, 0], [3.5, 0, 0, -0.1]], np.float32),
    "ints": _RNG.integers(-1, 2, (3, 4)).astype(np.float32),
    "irow": _RNG.integers(-1, 2, (1, 4)).astype(np.float32),
    "row": _u(0.5, 2.0, (1, 4)),
    "i32": np.array([[1, 2, 3], [4, 5, 6]], np.int32),
    "i32b": np.array([[0, 2, 0], [1, 0, 3]], np.int32),
    "f64": _u(-0.9, 0.9).astype(np.float64),
}

#: name -> (input names, expression over ``nd`` and the inputs, which inputs get gradients)
CASES = {
    "arcsin": (["unit"], "nd.arcsin(unit)", [1]),
    "arccos": (["unit"], "nd.arccos(unit)", [1]),
    "arctan": (["wide"], "nd.arctan(wide)", [1]),
    "arcsinh": (["wide"], "nd.arcsinh(wide)", [1]),
    "arccosh": (["gt1"], "nd.arccosh(gt1)", [1]),
    "arctanh": (["unit"], "nd.arctanh(unit)", [1]),
    "sinh": (["wide"], "nd.sinh(wide)", [1]),
    "cosh": (["wide"], "nd.cosh(wide)", [1]),
    "tan": (["unit"], "nd.tan(unit)", [1]),
    "degrees": (["wide"], "nd.degrees(wide)", [1]),
    "radians": (["big"], "nd.radians(big * 30)", [1]),
    "log2": (["pos"], "nd.log2(pos)", [1]),
    "log10": (["pos"], "nd.log10(pos)", [1]),
    "cbrt": (["away"], "nd.cbrt(away)", [1]),
    "rcbrt": (["away"], "nd.rcbrt(away)", [1]),
    "fix": (["frac"], "nd.fix(frac) + frac", [1]),
    "erf": (["wide"], "nd.erf(wide)", [1]),
    "erfinv": (["unit"], "nd.erfinv(unit)", [1]),
    "gamma": (["gam"], "nd.gamma(gam)", [1]),
    "gammaln": (["gam"], "nd.gammaln(gam)", [1]),
    "hard_sigmoid": (["big"], "nd.hard_sigmoid(big)", [1]),
    "hard_sigmoid_ab": (["wide"], "nd.hard_sigmoid(wide, alpha=0.3, beta=0.4)", [1]),
    "softmin": (["wide"], "nd.softmin(wide)", [1]),
    "softmin_axis_t": (["wide"], "nd.softmin(wide, axis=0, temperature=2.0)", [1]),
    "softmin_f64": (["wide"], "nd.softmin(wide, dtype='float64')", [1]),
    "logical_not": (["zeros"], "nd.logical_not(zeros) + zeros", [1]),
    "smooth_l1": (["wide"], "nd.smooth_l1(wide, scalar=1.0)", [1]),
    "smooth_l1_s2": (["wide"], "nd.smooth_l1(wide, 2.0)", [1]),
    "f64_arcsin_tan": (["f64"], "nd.arcsin(f64) * nd.tan(f64)", [1]),
    # integer inputs: computed in floating point, truncated back to the input's dtype
    "int_degrees": (["i32"], "nd.degrees(i32)", [0]),
    "int_sinh": (["i32"], "nd.sinh(i32)", [0]),
    "int_log2": (["i32"], "nd.log2(i32)", [0]),
    "int_gamma": (["i32"], "nd.gamma(i32)", [0]),
    "int_erf": (["i32"], "nd.erf(i32)", [0]),
    "int_logical_not": (["i32b"], "nd.logical_not(i32b)", [0]),
    # two inputs
    "logical_and": (["ints", "irow"], "nd.logical_and(ints, irow)", [0, 0]),
    "logical_or": (["ints", "irow"], "nd.logical_or(ints, irow)", [0, 0]),
    "logical_xor": (["ints", "irow"], "nd.logical_xor(ints, irow)", [0, 0]),
    "logical_scalars": (
        ["ints"],
        "nd.logical_and(ints, 1) + nd.logical_or(0, ints) * 2 + nd.logical_xor(ints, 0.0) * 4",
        [0],
    ),
    "logical_int_scalar": (["i32b"], "nd.logical_and(i32b, 0.5) + nd.logical_or(i32b, 0)", [0]),
    "logical_int": (["i32", "i32b"], "nd.logical_xor(i32, i32b)", [0, 0]),
    "broadcast_equal": (["ints", "irow"], "nd.broadcast_equal(ints, irow)", [1, 1]),
    "broadcast_not_equal": (["ints", "irow"], "nd.broadcast_not_equal(ints, irow)", [0, 0]),
    "broadcast_greater": (["ints", "irow"], "nd.broadcast_greater(ints, irow)", [0, 0]),
    "broadcast_greater_equal": (
        ["ints", "irow"],
        "nd.broadcast_greater_equal(ints, irow)",
        [0, 0],
    ),
    "broadcast_lesser": (["ints", "irow"], "nd.broadcast_lesser(ints, irow)", [0, 0]),
    "broadcast_lesser_equal": (["ints", "irow"], "nd.broadcast_lesser_equal(ints, irow)", [0, 0]),
    "broadcast_logical_and": (["ints", "irow"], "nd.broadcast_logical_and(ints, irow)", [0, 0]),
    "broadcast_logical_or": (["ints", "irow"], "nd.broadcast_logical_or(ints, irow)", [0, 0]),
    "broadcast_logical_xor": (["ints", "irow"], "nd.broadcast_logical_xor(ints, irow)", [0, 0]),
    "broadcast_hypot": (["wide", "row"], "nd.broadcast_hypot(wide, row)", [1, 1]),
    "broadcast_mod": (["big", "row"], "nd.broadcast_mod(big, row)", [1, 1]),
    "broadcast_plus": (["wide", "row"], "nd.broadcast_plus(wide, row)", [1, 1]),
    "broadcast_minus": (["wide", "row"], "nd.broadcast_minus(wide, row)", [1, 1]),
    "true_divide": (["wide", "row"], "nd.true_divide(wide, row) + nd.true_divide(2, row)", [1, 1]),
    "true_divide_int": (["i32", "i32b"], "nd.true_divide(i32 * 7, i32 + i32b)", [0, 0]),
}

HEAD = """
def head(shape):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + 1.0) + 1.5).reshape(shape)
"""

_SCRIPT = (
    HEAD
    + """
import mxnet as mx
from mxnet import autograd
cases = json.loads(CASES_JSON)
for name, (args, expr, diff) in cases.items():
    fn = eval("lambda " + ", ".join(args) + ": " + expr, {"nd": mx.nd, "np": np})
    xs = [mx.nd.array(inputs[a], dtype=inputs[a].dtype) for a in args]
    for x, d in zip(xs, diff):
        if d:
            x.attach_grad()
    try:
        with autograd.record():
            y = fn(*xs)
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        for i, o in enumerate(ys):
            arrays["%s.out%d" % (name, i)] = o.asnumpy()
        if any(diff):
            heads = [mx.nd.array(head(o.shape), dtype=o.dtype) for o in ys]
            autograd.backward(ys, head_grads=heads)
            for i, (x, d) in enumerate(zip(xs, diff)):
                if d:
                    arrays["%s.grad%d" % (name, i)] = x.grad.asnumpy()
    except Exception as e:
        result = result or {}
        result[name] = str(e).strip().splitlines()[-1]
"""
)


def mxnet_cases(tmp_path, cases, inputs):
    """Run ``cases`` under MXNet 1.9.1: ``(errors by case name, arrays)``."""
    script = f"CASES_JSON = {json.dumps(json.dumps(cases))}\n" + _SCRIPT
    failed, arrays = mxnet_ref.run(tmp_path, script, **inputs)
    return failed or {}, arrays


def head(shape):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + 1.0) + 1.5).reshape(shape)


def run_case(case, inputs):
    """Run one case under mxrs: ``(outputs, gradients by input position)``."""
    args, expr, diff = case
    fn = eval("lambda " + ", ".join(args) + ": " + expr, {"nd": nd, "np": np})
    xs = [nd.array(inputs[a], dtype=inputs[a].dtype) for a in args]
    for x, d in zip(xs, diff, strict=True):
        if d:
            x.attach_grad()
    with autograd.record():
        y = fn(*xs)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    grads = {}
    if any(diff):
        heads = [nd.array(head(o.shape), dtype=o.dtype) for o in ys]
        autograd.backward(ys, head_grads=heads)
        grads = {i: x.grad.asnumpy() for i, (x, d) in enumerate(zip(xs, diff, strict=True)) if d}
    return [o.asnumpy() for o in ys], grads


def compare_case(name, case, inputs, want, rtol=2e-5, atol=2e-6):
    """Assert that mxrs's outputs (values and dtypes) and gradients of ``case`` are MXNet's."""
    outs, grads = run_case(case, inputs)
    n_want = len([k for k in want if k.startswith(name + ".out")])
    assert len(outs) == n_want, f"{name}: {len(outs)} outputs, MXNet gives {n_want}"
    for i, o in enumerate(outs):
        ref = want[f"{name}.out{i}"]
        assert o.dtype == ref.dtype, f"{name} output {i}: {o.dtype}, MXNet {ref.dtype}"
        assert o.shape == ref.shape, f"{name} output {i}: {o.shape}, MXNet {ref.shape}"
        np.testing.assert_allclose(o, ref, rtol=rtol, atol=atol, err_msg=f"{name} output {i}")
    for i, g in grads.items():
        ref = want[f"{name}.grad{i}"]
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, err_msg=f"{name} grad {i}")


@pytest.fixture(scope="module")
def mxnet_math(tmp_path_factory):
    failed, arrays = mxnet_cases(tmp_path_factory.mktemp("math_more"), CASES, INPUTS)
    assert not failed, failed
    return arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_mxnet(name, mxnet_math):
    # gamma's large values and float32 special functions: a few ulps apart
    rtol = 1e-5 if name.startswith(("gamma", "erf")) else 2e-6
    compare_case(name, CASES[name], INPUTS, mxnet_math, rtol=rtol, atol=1e-6)


# ----------------------------------------------------------------- special functions
def _vec(fn):
    return np.vectorize(fn, otypes=[np.float64])


def _lgamma(x):
    return math.inf if x <= 0 and x == round(x) else math.lgamma(x)


def test_special_functions_against_pythons_math_in_float64():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-6, 6, 400), np.linspace(-3, 3, 61), [0.0, 1e-8, 27.0]])
    a = nd.array(x, dtype="float64")
    np.testing.assert_allclose(nd.erf(a).asnumpy(), _vec(math.erf)(x), rtol=1e-14, atol=1e-16)
    y = np.concatenate([rng.uniform(-1, 1, 400), [0.0, 0.5, 0.999999, -1 + 1e-12]])
    back = nd.erf(nd.erfinv(nd.array(y, dtype="float64"))).asnumpy()
    np.testing.assert_allclose(back, y, rtol=1e-13, atol=1e-15)
    g = x[np.abs(x) < 150]
    g = g[~((g <= 0) & (g == np.round(g)))]
    gamma = nd.gamma(nd.array(g, dtype="float64")).asnumpy()
    np.testing.assert_allclose(gamma, _vec(math.gamma)(g), rtol=1e-12)
    lg = nd.gammaln(nd.array(x, dtype="float64")).asnumpy()
    np.testing.assert_allclose(lg, _vec(_lgamma)(x), rtol=1e-12, atol=1e-14)


def test_special_values_are_mxnets():
    inv = nd.erfinv(nd.array([-1.0, 0.0, 1.0, 1.5, -2.0])).asnumpy()
    np.testing.assert_array_equal(inv[:3], [-np.inf, 0.0, np.inf])
    assert np.isnan(inv[3:]).all()
    gamma = nd.gamma(nd.array([-2.0, -1.0, 0.5])).asnumpy()
    assert np.isnan(gamma[:2]).all() and gamma[2] == pytest.approx(math.sqrt(math.pi))
    assert (nd.gammaln(nd.array([0.0, -2.0])).asnumpy() == np.inf).all()
    np.testing.assert_array_equal(nd.fix(nd.array([-2.5, 2.5, -0.5])).asnumpy(), [-2, 2, 0])
    np.testing.assert_array_equal(nd.cbrt(nd.array([-8.0, 27.0])).asnumpy(), [-2, 3])


# ----------------------------------------------------------------- gradients in float64
SMOOTH = {
    "arcsin": (lambda x: nd.arcsin(x * 0.5), "any"),
    "arccos": (lambda x: nd.arccos(x * 0.5), "any"),
    "arctan": (nd.arctan, "any"),
    "arcsinh": (nd.arcsinh, "any"),
    "arccosh": (lambda x: nd.arccosh(x * 0.5 + 2.0), "any"),
    "arctanh": (lambda x: nd.arctanh(x * 0.5), "any"),
    "sinh": (nd.sinh, "any"),
    "cosh": (nd.cosh, "any"),
    "tan": (nd.tan, "any"),
    "degrees_radians": (lambda x: nd.degrees(x) * nd.radians(x * x), "any"),
    "log2": (nd.log2, "pos"),
    "log10": (nd.log10, "pos"),
    "cbrt": (nd.cbrt, "pos"),
    "rcbrt": (nd.rcbrt, "pos"),
    "erf": (nd.erf, "any"),
    "erfinv": (lambda x: nd.erfinv(x * 0.5), "any"),
    "gamma": (nd.gamma, "pos"),
    "gammaln": (nd.gammaln, "pos"),
    "gamma_negative": (lambda x: nd.gamma(-x), "pos"),
    "hard_sigmoid_times_x": (lambda x: nd.hard_sigmoid(x * 3) * x, "any"),
    "softmin": (lambda x: nd.softmin(x, axis=0, temperature=1.5) * x, "any"),
    "smooth_l1": (lambda x: nd.smooth_l1(x, scalar=1.2) * x, "any"),
    "hypot": (lambda x: nd.broadcast_hypot(x, nd.sum(x, axis=0, keepdims=True)), "any"),
}

_DOMAINS = {
    "any": np.random.default_rng(2).uniform(-1.5, 1.5, (3, 4)),
    "pos": np.random.default_rng(1).uniform(0.5, 2.0, (3, 4)),
}
_DOMAINS["pos"][0, :2] = [0.3, 0.7]  # gamma of -0.3 and -0.7 for gamma_negative


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gradient_against_finite_differences(name):
    fn, domain = SMOOTH[name]
    check_grad(fn, [_DOMAINS[domain]], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_second_derivative(name):
    fn, domain = SMOOTH[name]
    check_hessian_vector(fn, [_DOMAINS[domain]])


def test_zero_gradient_ops_cut_the_graph_at_any_order():
    x = nd.array(_DOMAINS["any"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.fix(x * 3) * x + nd.logical_not(x) + nd.logical_and(x, x) * x
        (g,) = autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(g.asnumpy(), np.trunc(_DOMAINS["any"] * 3) + 1)


# ----------------------------------------------------------------- methods and errors
METHODS = [
    "arccos",
    "arcsin",
    "arctan",
    "arcsinh",
    "arctanh",
    "cbrt",
    "cosh",
    "degrees",
    "fix",
    "radians",
    "rint",
    "sinh",
    "tan",
    "trunc",
    "softmin",
    "sort",
    "argsort",
]


@pytest.mark.parametrize("name", METHODS)
def test_fluent_methods_are_the_functions(name):
    x = nd.array(INPUTS["unit"])
    np.testing.assert_array_equal(getattr(x, name)().asnumpy(), getattr(nd, name)(x).asnumpy())
    pos = nd.array(INPUTS["gt1"])
    for fn in ("arccosh", "log2", "log10", "rcbrt"):
        np.testing.assert_array_equal(getattr(pos, fn)().asnumpy(), getattr(nd, fn)(pos).asnumpy())
    assert x.writable is True


def test_out_and_name_keywords():
    x = nd.array(INPUTS["unit"])
    out = nd.zeros(x.shape)
    assert nd.arcsin(x, out=out, name="a") is out
    np.testing.assert_array_equal(out.asnumpy(), nd.arcsin(x).asnumpy())
    assert x.tan(out=out) is out
    assert nd.broadcast_hypot(x, x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), np.hypot(x.asnumpy(), x.asnumpy()), rtol=1e-6)


def test_bad_input_errors():
    x = nd.array(INPUTS["wide"])
    with pytest.raises(mx.MXNetError, match="use_length"):
        nd.softmin(x, use_length=True)
    with pytest.raises(mx.MXNetError, match="scalar"):
        nd.smooth_l1(x, scalar=0)
    with pytest.raises(mx.MXNetError, match="Hypot on shapes"):
        nd.broadcast_hypot(x, nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match="shapes"):
        nd.logical_or(x, nd.ones((5,)))
    assert nd.logical_and(1, 2) == 1 and nd.logical_xor(0, 2.0) == 1
