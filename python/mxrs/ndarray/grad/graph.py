"""Differentiable backward rules: what ``autograd.grad(create_graph=True)`` runs.

A primitive op's own ``backward`` works on raw arrays, so the gradients it returns are constants
to autograd. For higher-order gradients every op on the path needs a backward written with
recorded NDArray operations; :func:`rule` returns it. Three kinds of op have one:

linear ops (``grad.linear``)
    (reshape, transpose, broadcast_to, sum, mean, slice, indexing, concat, stack, split, tile,
    repeat, flip, pad, add, subtract, negation, scaling, cast, identity, context copies.) Their
    backward ``g -> J^T g`` is itself linear; it runs as the op :class:`LinearBackward`, whose
    own backward applies the original op again (``J gg``), and so on to any order.
piecewise-linear elementwise ops
    (relu, leaky, abs, clip, maximum/minimum with a number, dropout, the extreme reductions.)
    Their gradient is ``g`` times a mask that is constant almost everywhere: recorded in ``g``,
    constant in the input.
smooth ops
    (products, quotients, powers, exp, log, trigonometric, sigmoid, tanh, softrelu, softsign,
    dot, batch_dot, FullyConnected, softmax, log_softmax, norm, prod, gelu.) Their backward
    formula is written again here with recorded NDArray operations on the op's inputs.

Any other op (convolution, pooling, batch norm, the fused losses, ...) raises a clear
:class:`~mxrs.base.MXNetError` naming it when a higher-order gradient would pass through it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...autograd import _install_graph_rules
from ...base import MXNetError
from ...kernels import portable
from .. import elementwise as ew
from .. import indexing, leaky, losses, matmul, nn, normalization, reduce, shape, unary
from ..core.op import Op, apply, unbroadcast
from ..core.transfer import _ToContext, to_context
from .linear import LINEAR, LinearBackward, const, linear, linear_again

__all__ = ["rule"]

Rule = Callable[[Any, list[Any], list[Any]], Any]


def rule(node: Any) -> Rule:
    """The differentiable backward of op ``node``: ``f(node, inputs, out_grads)`` returning one
    gradient NDArray (or None) per input, computed with recorded operations.

    Raises
    ------
    MXNetError
        When the op has no differentiable backward.
    """
    cls = type(node)
    if cls in LINEAR:
        return linear
    found = _RULES.get(cls)
    if found is None:
        name = cls.__name__.lstrip("_")
        raise MXNetError(
            f"autograd.grad(create_graph=True): the gradient of {name} cannot be differentiated "
            "again in mxrs; higher-order gradients pass through elementwise arithmetic and math, "
            "activations, dot, FullyConnected, softmax, reductions and shape operations"
        )
    return found


def _unbroadcast(g: Any, to: tuple[int, ...]) -> Any:
    """Sum recorded gradient ``g`` over the axes that broadcasting expanded to reach ``to``
    (``core.op.unbroadcast`` on an NDArray records its sum and reshape)."""
    return unbroadcast(g, tuple(to))


# ----------------------------------------------------------------- piecewise-linear ops
def _masked(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    """``g`` times the op's derivative, which is constant where it exists: the op's own
    backward of ones gives it."""
    g = gs[0]
    mask = node.backward(node.xp.ones(g.shape, g._data.dtype))
    return g * const(g, mask)


def _masked_sum(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    """``relu(a + b)``: each addend's gradient is ``g`` masked as the ReLU's."""
    g = gs[0]
    ga, gb = node.backward(node.xp.ones(g.shape, g._data.dtype))
    masked = g * const(g, ga if ga is not None else gb)
    return (masked if ga is not None else None, masked if gb is not None else None)


def _extreme(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    mask = (node.x == node.y).astype(node.x.dtype)
    return const(xs[0], mask) * shape.reshape(gs[0], node.kshape)


def _binary_extreme(pick_a: Callable[[Any, Any], Any]) -> Rule:
    def grad(node: Any, xs: list[Any], gs: list[Any]) -> Any:
        a, b = xs
        mask = pick_a(node.a, node.b)
        g = gs[0]
        ma = const(g, mask.astype(g._data.dtype))
        mb = const(g, (~mask).astype(g._data.dtype))
        return _unbroadcast(g * ma, a.shape), _unbroadcast(g * mb, b.shape)

    return grad


# ----------------------------------------------------------------- smooth ops
def _mul(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    g = gs[0]
    return _unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)


def _div(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    ga = gs[0] / b
    return _unbroadcast(ga, a.shape), _unbroadcast(-ga * a / b, b.shape)


def _pow(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    g = gs[0]
    ga = _unbroadcast(g * b * ew.power(a, b - 1), a.shape) if node.needs[0] else None
    gb = _unbroadcast(g * ew.power(a, b) * unary.log(a), b.shape) if node.needs[1] else None
    return ga, gb


def _mod(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    g = gs[0]
    q = const(g, node.xp.floor(node.a / node.b))
    return _unbroadcast(g, a.shape), _unbroadcast(-g * q, b.shape)


def _scalar_rules() -> dict[type, Rule]:
    def s(node: Any) -> Any:
        return node.attrs["s"]

    return {
        ew._AddS: lambda n, xs, gs: gs[0],
        ew._ModS: lambda n, xs, gs: gs[0],
        ew._RSubS: lambda n, xs, gs: -gs[0],
        ew._RDivS: lambda n, xs, gs: -gs[0] * s(n) / (xs[0] * xs[0]),
        ew._PowS: lambda n, xs, gs: gs[0] * s(n) * ew.power(xs[0], s(n) - 1),
        ew._RPowS: lambda n, xs, gs: gs[0] * ew.power(s(n), xs[0]) * float(np.log(s(n))),
        ew._RModS: lambda n, xs, gs: -gs[0] * const(gs[0], n.xp.floor(s(n) / n.a)),
        ew._MaxS: _masked,
        ew._MinS: _masked,
    }


def _unary_rules() -> dict[type, Rule]:
    def sig(x: Any) -> Any:
        return unary.sigmoid(x)

    return {
        unary._Exp: lambda n, xs, gs: gs[0] * unary.exp(xs[0]),
        unary._Log: lambda n, xs, gs: gs[0] / xs[0],
        unary._Sqrt: lambda n, xs, gs: gs[0] / (2 * unary.sqrt(xs[0])),
        unary._Rsqrt: lambda n, xs, gs: gs[0] * (-0.5) * ew.power(xs[0], -1.5),
        unary._Square: lambda n, xs, gs: gs[0] * (2 * xs[0]),
        unary._Reciprocal: lambda n, xs, gs: -gs[0] / (xs[0] * xs[0]),
        unary._Log1p: lambda n, xs, gs: gs[0] / (1 + xs[0]),
        unary._Expm1: lambda n, xs, gs: gs[0] * unary.exp(xs[0]),
        unary._Sin: lambda n, xs, gs: gs[0] * unary.cos(xs[0]),
        unary._Cos: lambda n, xs, gs: -gs[0] * unary.sin(xs[0]),
        unary._Sigmoid: lambda n, xs, gs: gs[0] * sig(xs[0]) * (1 - sig(xs[0])),
        unary._Tanh: lambda n, xs, gs: gs[0] * (1 - unary.square(unary.tanh(xs[0]))),
        unary._Softrelu: lambda n, xs, gs: gs[0] * sig(xs[0]),
        unary._Softsign: lambda n, xs, gs: gs[0] / unary.square(1 + unary.abs(xs[0])),
        unary._NoGrad: lambda n, xs, gs: None,
        unary._Abs: _masked,
        unary._Relu: _masked,
        unary._AddRelu: _masked_sum,
        unary._Clip: _masked,
        leaky._Leaky: _masked,
        nn._Dropout: _masked,
        leaky._Gelu: _gelu,
        unary._Where: _where,
    }


def _gelu(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    x = xs[0]
    cdf = 0.5 * (1.0 + _erf_nd(x * (1.0 / math.sqrt(2.0))))
    pdf = unary.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
    return gs[0] * (cdf + x * pdf)


def _erf_nd(x: Any) -> Any:
    """erf with recorded operations: the integral's derivative ``2/sqrt(pi) exp(-x^2)`` is what
    matters for the next order; the value comes from the op's own erf."""
    return apply(_Erf, (x,))


class _Erf(Op):
    def forward(self, x):
        self.x = x
        return portable.erf(self.xp, x)

    def backward(self, g):
        return g * (2.0 / math.sqrt(math.pi)) * self.xp.exp(-self.x * self.x)


def _where(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    _, x, y = xs
    g = gs[0]
    cond = node.cond.astype(g._data.dtype)
    gx = _unbroadcast(g * const(g, cond), x.shape)
    gy = _unbroadcast(g * const(g, 1 - cond), y.shape)
    return None, gx, gy


def _dot(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    A = shape.transpose(a) if node.ta else a
    B = shape.transpose(b) if node.tb else b
    k = A.shape[-1]
    A2, B2 = shape.reshape(A, (-1, k)), shape.reshape(B, (k, -1))
    g2 = shape.reshape(gs[0], (A2.shape[0], B2.shape[1]))
    ga = shape.reshape(matmul.dot(g2, B2, transpose_b=True), A.shape)
    gb = shape.reshape(matmul.dot(A2, g2, transpose_a=True), B.shape)
    return (
        shape.transpose(ga) if node.ta else ga,
        shape.transpose(gb) if node.tb else gb,
    )


def _batch_dot(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    g = gs[0]
    A = shape.swapaxes(a, -1, -2) if node.ta else a
    B = shape.swapaxes(b, -1, -2) if node.tb else b
    ga = matmul.batch_dot(g, B, transpose_b=True)
    gb = matmul.batch_dot(A, g, transpose_a=True)
    return (
        shape.swapaxes(ga, -1, -2) if node.ta else ga,
        shape.swapaxes(gb, -1, -2) if node.tb else gb,
    )


def _fully_connected(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    x, w = xs[0], xs[1]
    g2 = shape.reshape(gs[0], (-1, w.shape[0]))
    x2 = shape.reshape(x, node.x2shape)
    gx = shape.reshape(matmul.dot(g2, w), x.shape)
    gw = matmul.dot(g2, x2, transpose_a=True)
    if len(xs) == 3:
        return gx, gw, reduce.sum(g2, axis=0)
    return gx, gw


def _softmax(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    axis, t = node.attrs["axis"], node.attrs["temperature"]
    y = nn.softmax(xs[0], axis=axis, temperature=t)
    g = gs[0]
    gx = y * (g - reduce.sum(g * y, axis=axis, keepdims=True))
    return gx / t if t != 1.0 else gx


def _log_softmax(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    axis, t = node.attrs["axis"], node.attrs["temperature"]
    g = gs[0]
    y = nn.softmax(xs[0], axis=axis, temperature=t)
    gx = g - y * reduce.sum(g, axis=axis, keepdims=True)
    return gx / t if t != 1.0 else gx


def _norm(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    g = shape.reshape(gs[0], node.kshape)
    if node.ord == 1:
        return g * const(g, node.xp.sign(node.x))
    x = xs[0]
    axes = node.attrs["axes"]
    return g * x / unary.sqrt(reduce.sum(x * x, axis=axes, keepdims=True))


def _prod(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    x = xs[0]
    y = reduce.prod(x, axis=node.attrs["axes"], keepdims=True)
    return shape.reshape(gs[0], node.kshape) * y / x


def _more_rules() -> dict[type, Rule]:
    """Rules of more ops: unary's math functions, broadcast_hypot, smooth_l1, BlockGrad,
    shape_array/size_array, index arithmetic, nanprod, L2Normalization."""
    m = unary

    def sq(x: Any) -> Any:
        return x * x

    return {
        m._Arcsin: lambda n, xs, gs: gs[0] / unary.sqrt(1 - sq(xs[0])),
        m._Arccos: lambda n, xs, gs: -gs[0] / unary.sqrt(1 - sq(xs[0])),
        m._Arctan: lambda n, xs, gs: gs[0] / (1 + sq(xs[0])),
        m._Arcsinh: lambda n, xs, gs: gs[0] / unary.sqrt(sq(xs[0]) + 1),
        m._Arccosh: lambda n, xs, gs: gs[0] / unary.sqrt(sq(xs[0]) - 1),
        m._Arctanh: lambda n, xs, gs: gs[0] / (1 - sq(xs[0])),
        m._Sinh: lambda n, xs, gs: gs[0] * m.cosh(xs[0]),
        m._Cosh: lambda n, xs, gs: gs[0] * m.sinh(xs[0]),
        m._Tan: lambda n, xs, gs: gs[0] * (1 + sq(m.tan(xs[0]))),
        m._Log2: lambda n, xs, gs: gs[0] / (xs[0] * math.log(2.0)),
        m._Log10: lambda n, xs, gs: gs[0] / (xs[0] * math.log(10.0)),
        m._Cbrt: lambda n, xs, gs: gs[0] / (3 * sq(m.cbrt(xs[0]))),
        m._Rcbrt: lambda n, xs, gs: -gs[0] * m.rcbrt(xs[0]) / (3 * xs[0]),
        m._Erf: lambda n, xs, gs: gs[0] * (2 / math.sqrt(math.pi)) * unary.exp(-sq(xs[0])),
        m._Erfinv: lambda n, xs, gs: (
            gs[0] * (math.sqrt(math.pi) / 2) * unary.exp(sq(m.erfinv(xs[0])))
        ),
        m._Gamma: lambda n, xs, gs: gs[0] * m.gamma(xs[0]) * apply(m._Digamma, (xs[0],)),
        m._Gammaln: lambda n, xs, gs: gs[0] * apply(m._Digamma, (xs[0],)),
        m._ZeroGrad: lambda n, xs, gs: None,
        m._HardSigmoid: _masked,
        ew._Hypot: _hypot,
        losses._SmoothL1: _smooth_l1,
        losses._BlockGrad: lambda n, xs, gs: None,
        shape._SizeOf: lambda n, xs, gs: None,
        indexing._IndexMath: lambda n, xs, gs: None,
        reduce._NanProd: _nanprod,
        normalization._L2Norm: _l2_normalization,
    }


def _hypot(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    a, b = xs
    gh = gs[0] / ew.broadcast_hypot(a, b)
    return _unbroadcast(gh * a, a.shape), _unbroadcast(gh * b, b.shape)


def _smooth_l1(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    g, x, xp = gs[0], xs[0], node.xp
    dt = g._data.dtype
    slope = const(g, (node.inner * node.s2).astype(dt))
    step = const(g, xp.where(node.inner, 0, xp.sign(node.x)).astype(dt))
    return g * (x * slope + step)


def _nanprod(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    x = xs[0]
    ok = const(x, node.ok.astype(node.xf.dtype))
    xf = unary.where(ok, x, const(x, node.xp.ones_like(node.xf)))
    y = reduce.prod(xf, axis=node.attrs["axes"], keepdims=True)
    return shape.reshape(gs[0], node.kshape) * y / xf * ok


def _l2_normalization(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    x, g, axes = xs[0], gs[0], node.attrs["axes"]

    def total(v: Any) -> Any:
        return reduce.sum(v, axis=axes, keepdims=True) if axes else v

    norm = unary.sqrt(total(x * x) + node.attrs["eps"])
    y = x / norm
    return (g - y * total(g * y)) / norm


def _to_context(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    return to_context(gs[0], node.src)


_RULES: dict[type, Rule] = {
    ew._Mul: _mul,
    ew._Div: _div,
    ew._Pow: _pow,
    ew._Mod: _mod,
    ew._Maximum: _binary_extreme(lambda a, b: a >= b),
    ew._Minimum: _binary_extreme(lambda a, b: a <= b),
    ew._Compare: lambda n, xs, gs: (None, None),
    ew._CompareS: lambda n, xs, gs: None,
    ew._DivIntS: lambda n, xs, gs: None,
    **_scalar_rules(),
    **_unary_rules(),
    **_more_rules(),
    reduce._Extreme: _extreme,
    reduce._Norm: _norm,
    reduce._Prod: _prod,
    matmul._Dot: _dot,
    matmul._BatchDot: _batch_dot,
    matmul._FC: _fully_connected,
    nn._Softmax: _softmax,
    nn._LogSoftmax: _log_softmax,
    _ToContext: _to_context,
    LinearBackward: linear_again,
    _Erf: lambda n, xs, gs: gs[0] * (2.0 / math.sqrt(math.pi)) * unary.exp(-xs[0] * xs[0]),
}

_install_graph_rules(rule)
