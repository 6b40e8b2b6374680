"""Elementwise ops of one array: math functions, activations, clip, where and casts.

Backward passes reuse the forward output where that is cheaper (exp, sqrt, sigmoid, tanh) and
never modify the incoming gradient in place, since one gradient array may feed several inputs.

The math functions cover powers and logarithms, rounding, trigonometry (inverse and hyperbolic
too), degrees/radians, cube roots, the error and gamma functions, hard_sigmoid and logical_not.
As in MXNet, the result has the input's dtype: an integer array is computed in float64 and
truncated back (``nd.degrees`` of int 1 is 57). erf, erfinv, gamma and gammaln come from
:mod:`.core.special` (computed in float64); the rest use the array library's own functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels
from .._bfloat16 import BFLOAT16, check_backend, truncate
from ..base import MXNetError
from .core import special as _special
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, unbroadcast

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = [
    "negative",
    "exp",
    "log",
    "sqrt",
    "square",
    "abs",
    "sign",
    "reciprocal",
    "rsqrt",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
    "rint",
    "trunc",
    "relu",
    "sigmoid",
    "tanh",
    "softrelu",
    "softsign",
    "Activation",
    "clip",
    "where",
    "cast",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sinh",
    "cosh",
    "tan",
    "degrees",
    "radians",
    "log2",
    "log10",
    "cbrt",
    "rcbrt",
    "fix",
    "erf",
    "erfinv",
    "gamma",
    "gammaln",
    "hard_sigmoid",
    "logical_not",
]


class _Neg(Op):
    def forward(self, x):
        return -x

    def backward(self, g):
        return -g


class _Exp(Op):
    def forward(self, x):
        if x.dtype == np.float32 and self.xp is np:
            # NumPy's vectorised float32 exp is off by an ulp at times (e -> 2.718282); through
            # float64 it is correctly rounded, as MXNet's CPU kernel is.
            self.y = np.exp(x, dtype=np.float64).astype(np.float32)
        else:
            self.y = self.xp.exp(x)
        return self.y

    def backward(self, g):
        return g * self.y


class _Log(Op):
    def forward(self, x):
        self.x = x
        return self.xp.log(x)

    def backward(self, g):
        return g / self.x


class _Sqrt(Op):
    def forward(self, x):
        self.y = self.xp.sqrt(x)
        return self.y

    def backward(self, g):
        return g / (2 * self.y)


class _Rsqrt(Op):
    def forward(self, x):
        self.x = x
        self.y = 1 / self.xp.sqrt(x)
        return self.y

    def backward(self, g):
        return g * (-0.5 * self.y / self.x)


class _Square(Op):
    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, g):
        return g * (2 * self.x)


class _Abs(Op):
    def forward(self, x):
        self.x = x
        return self.xp.abs(x)

    def backward(self, g):
        return g * self.xp.sign(self.x)


class _Reciprocal(Op):
    def forward(self, x):
        self.y = 1 / x
        return self.y

    def backward(self, g):
        return -g * self.y * self.y


class _Log1p(Op):
    def forward(self, x):
        self.x = x
        return self.xp.log1p(x)

    def backward(self, g):
        return g / (1 + self.x)


class _Expm1(Op):
    def forward(self, x):
        self.x = x
        return self.xp.expm1(x)

    def backward(self, g):
        return g * self.xp.exp(self.x)


class _Sin(Op):
    def forward(self, x):
        self.x = x
        return self.xp.sin(x)

    def backward(self, g):
        return g * self.xp.cos(self.x)


class _Cos(Op):
    def forward(self, x):
        self.x = x
        return self.xp.cos(x)

    def backward(self, g):
        return -g * self.xp.sin(self.x)


class _NoGrad(Op):
    """Piecewise-constant functions (sign, floor, ceil, rint, round): zero gradient."""

    def forward(self, x, fn):
        if fn == "round":
            xp = self.xp
            t = xp.trunc(x)
            return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t)
        return getattr(self.xp, fn)(x)

    def backward(self, g):
        return None


class _Activation(Op):
    """An activation whose arithmetic a kernel provider serves (:mod:`mxrs.kernels`)."""

    kind = ""

    def forward(self, x):
        k = kernels.select("Activation", self.be, x.dtype)
        y, self.grad = k.activation(x, self.kind, True in self.needs)
        return y

    def backward(self, g):
        return self.grad(g, self.needs)[0]


class _Relu(_Activation):
    kind = "relu"
    keeps_inputs = False  # the gradient comes from the output (and the rule masks with it)


class _AddRelu(Op):
    """``relu(a + b)`` for addends of one shape and dtype, in one kernel: what an executor's
    graph pass (:mod:`mxrs.symbol.fusion`) runs for an ``elemwise_add`` that only a ReLU
    reads, as a residual block ends. Both addends get the ReLU's gradient."""

    keeps_inputs = False  # the gradient comes from the output
    sums_gradients = True  # the kernel's gradient adds the output's gradient parts

    def forward(self, a, b):
        k = kernels.select("Activation", self.be, a.dtype)
        y, self.grad = k.add_relu(a, b, True in self.needs)
        return y

    def backward(self, g):
        ga, gb = self.grad(g, self.needs)
        return (ga if self.needs[0] else None, gb if self.needs[1] else None)


def _add_relu(a: ArrayT, b: ArrayT) -> ArrayT:
    """``relu(a + b)`` in one pass, for ``a`` and ``b`` of one shape and dtype."""
    return apply(_AddRelu, (a, b))


class _Sigmoid(_Activation):
    kind = "sigmoid"


class _Tanh(_Activation):
    kind = "tanh"


class _Softrelu(_Activation):
    kind = "softrelu"


class _Softsign(Op):
    def forward(self, x):
        self.x = x
        return x / (1 + self.xp.abs(x))

    def backward(self, g):
        d = 1 + self.xp.abs(self.x)
        return g / (d * d)


class _Clip(Op):
    def forward(self, x, a_min, a_max):
        self.x, self.lo, self.hi = x, a_min, a_max
        return self.xp.clip(x, a_min, a_max)

    def backward(self, g):
        x = self.x
        return g * ((x >= self.lo) & (x <= self.hi))


class _Where(Op):
    def forward(self, cond, x, y):
        self.cond = cond != 0
        if self.cond.ndim == 1 and x.ndim > 1:
            self.cond = self.cond.reshape((-1,) + (1,) * (x.ndim - 1))
        self.sx, self.sy = x.shape, y.shape
        return self.xp.where(self.cond, x, y)

    def backward(self, g):
        xp = self.xp
        gx = unbroadcast(xp.where(self.cond, g, 0), self.sx) if self.needs[1] else None
        gy = unbroadcast(xp.where(self.cond, 0, g), self.sy) if self.needs[2] else None
        return None, gx, gy


class _Cast(Op):
    bfloat16 = True

    def forward(self, x, dtype):
        self.src = x.dtype
        return _convert(x, dtype)

    def backward(self, g):
        return _convert(g, self.src)


def _convert(x, dtype):
    """``x`` as ``dtype``; to bfloat16 by keeping the high bits of float32, as MXNet's CPU
    ``Cast`` does (see ``mxrs._bfloat16``)."""
    if dtype is BFLOAT16 and x.dtype is not BFLOAT16:
        return truncate(x)
    if isinstance(x, np.ndarray):
        with np.errstate(over="ignore", invalid="ignore"):  # too large: inf, as in MXNet
            return x.astype(dtype)
    return x.astype(dtype)


def negative(data: ArrayT) -> ArrayT:
    """Return ``-data``."""
    return apply(_Neg, (data,))


def exp(data: ArrayT) -> ArrayT:
    """Return ``e ** data`` elementwise."""
    return apply(_Exp, (data,))


def log(data: ArrayT) -> ArrayT:
    """Return the natural logarithm elementwise."""
    return apply(_Log, (data,))


def sqrt(data: ArrayT) -> ArrayT:
    """Return the square root elementwise."""
    return apply(_Sqrt, (data,))


def rsqrt(data: ArrayT) -> ArrayT:
    """Return ``1 / sqrt(data)`` elementwise."""
    return apply(_Rsqrt, (data,))


def square(data: ArrayT) -> ArrayT:
    """Return ``data * data`` elementwise."""
    return apply(_Square, (data,))


def abs(data: ArrayT) -> ArrayT:
    """Return the absolute value elementwise (gradient ``sign(data)``, 0 at 0)."""
    return apply(_Abs, (data,))


def sign(data: ArrayT) -> ArrayT:
    """Return -1, 0 or 1 by the sign of each element (zero gradient)."""
    return apply(_NoGrad, (data,), fn="sign")


def floor(data: ArrayT) -> ArrayT:
    """Return the floor elementwise (zero gradient)."""
    return apply(_NoGrad, (data,), fn="floor")


def ceil(data: ArrayT) -> ArrayT:
    """Return the ceiling elementwise (zero gradient)."""
    return apply(_NoGrad, (data,), fn="ceil")


def round(data: ArrayT) -> ArrayT:
    """Round to the nearest integer, halves away from zero (zero gradient)."""
    return apply(_NoGrad, (data,), fn="round")


def rint(data: ArrayT) -> ArrayT:
    """Round to the nearest integer, halves to even (zero gradient)."""
    return apply(_NoGrad, (data,), fn="rint")


def trunc(data: ArrayT) -> ArrayT:
    """Round toward zero (zero gradient)."""
    return apply(_NoGrad, (data,), fn="trunc")


def reciprocal(data: ArrayT) -> ArrayT:
    """Return ``1 / data`` elementwise."""
    return apply(_Reciprocal, (data,))


def log1p(data: ArrayT) -> ArrayT:
    """Return ``log(1 + data)`` elementwise."""
    return apply(_Log1p, (data,))


def expm1(data: ArrayT) -> ArrayT:
    """Return ``exp(data) - 1`` elementwise."""
    return apply(_Expm1, (data,))


def sin(data: ArrayT) -> ArrayT:
    """Return the sine elementwise."""
    return apply(_Sin, (data,))


def cos(data: ArrayT) -> ArrayT:
    """Return the cosine elementwise."""
    return apply(_Cos, (data,))


def relu(data: ArrayT) -> ArrayT:
    """Return ``max(data, 0)`` elementwise."""
    return apply(_Relu, (data,))


def sigmoid(data: ArrayT) -> ArrayT:
    """Return ``1 / (1 + exp(-data))`` elementwise (computed without overflow)."""
    return apply(_Sigmoid, (data,))


def tanh(data: ArrayT) -> ArrayT:
    """Return the hyperbolic tangent elementwise."""
    return apply(_Tanh, (data,))


def softrelu(data: ArrayT) -> ArrayT:
    """Return ``log(1 + exp(data))`` elementwise (computed without overflow)."""
    return apply(_Softrelu, (data,))


def softsign(data: ArrayT) -> ArrayT:
    """Return ``data / (1 + |data|)`` elementwise."""
    return apply(_Softsign, (data,))


_ACTIVATIONS = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softrelu": softrelu,
    "softsign": softsign,
}


def Activation(data: ArrayT, act_type: str = "relu", **kwargs: Any) -> ArrayT:
    """Apply the activation ``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""
    try:
        fn = _ACTIVATIONS[act_type]
    except KeyError:
        raise MXNetError(
            f"unknown act_type {act_type!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
    return fn(data)


def clip(data: ArrayT, a_min: float, a_max: float) -> ArrayT:
    """Clip values to ``[a_min, a_max]``; the gradient passes where ``a_min <= x <= a_max``."""
    return apply(_Clip, (data,), a_min=a_min, a_max=a_max)


def where(condition: ArrayT, x: ArrayT, y: ArrayT) -> ArrayT:
    """Return ``x`` where ``condition`` is non-zero, else ``y``.

    ``condition`` has ``x``'s shape, or is 1-D and selects whole rows along the first axis.
    """
    return apply(_Where, (condition, x, y))


def cast(data: ArrayT, dtype: DTypeLike) -> ArrayT:
    """Return ``data`` converted to ``dtype`` (the gradient converts back).

    To bfloat16 the float32 value's low 16 bits are dropped (rounding toward zero), as MXNet's
    CPU ``Cast`` does; :func:`amp_cast` rounds to nearest even.

    Raises
    ------
    MXNetError
        For bfloat16 on a GPU context.
    """
    dt = np.dtype(dtype)
    check_backend(data._ctx.backend.xp, dt, "cast")
    return apply(_Cast, (data,), dtype=dt)


class _Identity(Op):
    """A copy whose gradient passes unchanged (``identity``, and ops that reduce to a copy)."""

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return g


class _Smooth(Op):
    """A differentiable elementwise function: ``_f(x)`` and its derivative ``_df(x, y)``,
    computed in floating point; integer inputs are computed in float64 and truncated back."""

    def _f(self, x: Any) -> Any:
        raise NotImplementedError

    def _df(self, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def forward(self, x):
        xf = x if x.dtype.kind == "f" else x.astype(np.float64)
        with np.errstate(all="ignore"):
            y = self._f(xf)
        self.x, self.y = xf, y
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        with np.errstate(all="ignore"):
            d = self._df(self.x, self.y)
        return (g * d).astype(g.dtype, copy=False)


class _Arcsin(_Smooth):
    def _f(self, x):
        return self.xp.arcsin(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(1 - x * x)


class _Arccos(_Smooth):
    def _f(self, x):
        return self.xp.arccos(x)

    def _df(self, x, y):
        return -1 / self.xp.sqrt(1 - x * x)


class _Arctan(_Smooth):
    def _f(self, x):
        return self.xp.arctan(x)

    def _df(self, x, y):
        return 1 / (1 + x * x)


class _Arcsinh(_Smooth):
    def _f(self, x):
        return self.xp.arcsinh(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(x * x + 1)


class _Arccosh(_Smooth):
    def _f(self, x):
        return self.xp.arccosh(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(x * x - 1)


class _Arctanh(_Smooth):
    def _f(self, x):
        return self.xp.arctanh(x)

    def _df(self, x, y):
        return 1 / (1 - x * x)


class _Sinh(_Smooth):
    def _f(self, x):
        return self.xp.sinh(x)

    def _df(self, x, y):
        return self.xp.cosh(x)


class _Cosh(_Smooth):
    def _f(self, x):
        return self.xp.cosh(x)

    def _df(self, x, y):
        return self.xp.sinh(x)


class _Tan(_Smooth):
    def _f(self, x):
        return self.xp.tan(x)

    def _df(self, x, y):
        return 1 + y * y


class _Log2(_Smooth):
    def _f(self, x):
        return self.xp.log2(x)

    def _df(self, x, y):
        return 1 / (x * math.log(2.0))


class _Log10(_Smooth):
    def _f(self, x):
        return self.xp.log10(x)

    def _df(self, x, y):
        return 1 / (x * math.log(10.0))


def _cbrt(xp: Any, x: Any) -> Any:
    """Cube root through float64: NumPy's float32 cbrt is off by an ulp at exact cubes."""
    return xp.cbrt(x.astype(np.float64)).astype(x.dtype, copy=False)


class _Cbrt(_Smooth):
    def _f(self, x):
        return _cbrt(self.xp, x)

    def _df(self, x, y):
        return 1 / (3 * y * y)


class _Rcbrt(_Smooth):
    def _f(self, x):
        return 1 / _cbrt(self.xp, x)

    def _df(self, x, y):
        return -y / (3 * x)


class _Erf(_Smooth):
    def _f(self, x):
        return _special.erf(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return (2 / math.sqrt(math.pi)) * self.xp.exp(-x * x)


class _Erfinv(_Smooth):
    def _f(self, x):
        return _special.erfinv(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return (math.sqrt(math.pi) / 2) * self.xp.exp(y * y)


class _Gamma(_Smooth):
    def _f(self, x):
        return _special.gamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return y * _special.digamma(self.xp, x).astype(x.dtype, copy=False)


class _Gammaln(_Smooth):
    def _f(self, x):
        return _special.lgamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return _special.digamma(self.xp, x).astype(x.dtype, copy=False)


class _Digamma(_Smooth):
    """The derivative of gammaln, recorded in the create_graph rules of gamma and gammaln."""

    def _f(self, x):
        return _special.digamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return _special.trigamma(self.xp, x).astype(x.dtype, copy=False)


class _Scale(Op):
    """``x * factor`` (degrees, radians): linear."""

    def forward(self, x, factor):
        self.factor = factor
        y = x * factor
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        return g * self.factor


class _ZeroGrad(Op):
    """fix (round toward zero) and logical_not: piecewise constant, zero gradient."""

    def forward(self, x, fn):
        if fn == "fix":
            return x.copy() if x.dtype.kind in "iub" else self.xp.trunc(x)
        return (x == 0).astype(x.dtype)

    def backward(self, g):
        return None


class _HardSigmoid(Op):
    def forward(self, x, alpha, beta):
        self.alpha = alpha
        z = x * alpha + beta
        self.inside = (z > 0) & (z < 1)
        return self.xp.clip(z, 0, 1).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * (self.inside * self.alpha).astype(g.dtype)


def arcsin(data: ArrayT) -> ArrayT:
    """Return the inverse sine elementwise (NaN outside [-1, 1])."""
    return apply(_Arcsin, (data,))


def arccos(data: ArrayT) -> ArrayT:
    """Return the inverse cosine elementwise (NaN outside [-1, 1])."""
    return apply(_Arccos, (data,))


def arctan(data: ArrayT) -> ArrayT:
    """Return the inverse tangent elementwise."""
    return apply(_Arctan, (data,))


def arcsinh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic sine elementwise."""
    return apply(_Arcsinh, (data,))


def arccosh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic cosine elementwise (NaN below 1)."""
    return apply(_Arccosh, (data,))


def arctanh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic tangent elementwise (NaN outside [-1, 1])."""
    return apply(_Arctanh, (data,))


def sinh(data: ArrayT) -> ArrayT:
    """Return the hyperbolic sine elementwise."""
    return apply(_Sinh, (data,))


def cosh(data: ArrayT) -> ArrayT:
    """Return the hyperbolic cosine elementwise."""
    return apply(_Cosh, (data,))


def tan(data: ArrayT) -> ArrayT:
    """Return the tangent elementwise (gradient ``1 + tan(x)^2``)."""
    return apply(_Tan, (data,))


def degrees(data: ArrayT) -> ArrayT:
    """Convert radians to degrees: ``data * 180 / pi``."""
    return apply(_Scale, (data,), factor=180.0 / math.pi)


def radians(data: ArrayT) -> ArrayT:
    """Convert degrees to radians: ``data * pi / 180``."""
    return apply(_Scale, (data,), factor=math.pi / 180.0)


def log2(data: ArrayT) -> ArrayT:
    """Return the base-2 logarithm elementwise."""
    return apply(_Log2, (data,))


def log10(data: ArrayT) -> ArrayT:
    """Return the base-10 logarithm elementwise."""
    return apply(_Log10, (data,))


def cbrt(data: ArrayT) -> ArrayT:
    """Return the cube root elementwise (negative for negative inputs)."""
    return apply(_Cbrt, (data,))


def rcbrt(data: ArrayT) -> ArrayT:
    """Return ``1 / cbrt(data)`` elementwise."""
    return apply(_Rcbrt, (data,))


def fix(data: ArrayT) -> ArrayT:
    """Round toward zero, as :func:`trunc` (zero gradient)."""
    return apply(_ZeroGrad, (data,), fn="fix")


def erf(data: ArrayT) -> ArrayT:
    """Return the Gauss error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``."""
    return apply(_Erf, (data,))


def erfinv(data: ArrayT) -> ArrayT:
    """Return the inverse error function: +-inf at +-1, NaN outside [-1, 1]."""
    return apply(_Erfinv, (data,))


def gamma(data: ArrayT) -> ArrayT:
    """Return the gamma function elementwise (NaN at the negative integers, inf at 0).

    Examples
    --------
    >>> mx.nd.gamma(mx.nd.array([0.5, 5])).asnumpy()
    array([ 1.7724539, 24.       ], dtype=float32)
    """
    return apply(_Gamma, (data,))


def gammaln(data: ArrayT) -> ArrayT:
    """Return ``log |gamma(data)|`` elementwise (inf at 0 and the negative integers)."""
    return apply(_Gammaln, (data,))


def hard_sigmoid(data: ArrayT, alpha: float = 0.2, beta: float = 0.5) -> ArrayT:
    """Return ``clip(alpha * data + beta, 0, 1)``; the gradient is ``alpha`` strictly inside."""
    return apply(_HardSigmoid, (data,), alpha=float(alpha), beta=float(beta))


def logical_not(data: ArrayT) -> ArrayT:
    """Return 1 where ``data`` is zero, else 0, in ``data``'s dtype (zero gradient)."""
    return apply(_ZeroGrad, (data,), fn="not")


class UnaryMethods(ArrayCore):
    """One-input math as NDArray methods, with ``-x``, ``abs(x)`` and ``astype``."""

    __slots__ = ()

    _data: Any  # ArrayCore's slot, on the NDArray this mixin is part of

    def __neg__(self: ArrayT) -> ArrayT:
        return negative(self)

    def __pos__(self: ArrayT) -> ArrayT:
        return self

    def __abs__(self: ArrayT) -> ArrayT:
        return abs(self)

    def astype(self: ArrayT, dtype: DTypeLike, copy: bool = True) -> ArrayT:
        """Return the array converted to ``dtype`` (``self`` when unchanged and ``copy=False``)."""
        dt = np.dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return cast(self, dt)

    exp = as_method(exp)
    log = as_method(log)
    sqrt = as_method(sqrt)
    square = as_method(square)
    abs = as_method(abs)
    sign = as_method(sign)
    relu = as_method(relu)
    sigmoid = as_method(sigmoid)
    tanh = as_method(tanh)
    clip = as_method(clip)
    reciprocal = as_method(reciprocal)
    rsqrt = as_method(rsqrt)
    log1p = as_method(log1p)
    expm1 = as_method(expm1)
    sin = as_method(sin)
    cos = as_method(cos)
    floor = as_method(floor)
    ceil = as_method(ceil)
    round = as_method(round)

    arcsin = as_method(arcsin)
    arccos = as_method(arccos)
    arctan = as_method(arctan)
    arcsinh = as_method(arcsinh)
    arccosh = as_method(arccosh)
    arctanh = as_method(arctanh)
    sinh = as_method(sinh)
    cosh = as_method(cosh)
    tan = as_method(tan)
    degrees = as_method(degrees)
    radians = as_method(radians)
    log2 = as_method(log2)
    log10 = as_method(log10)
    cbrt = as_method(cbrt)
    rcbrt = as_method(rcbrt)
    fix = as_method(fix)
    rint = as_method(rint)
    trunc = as_method(trunc)
