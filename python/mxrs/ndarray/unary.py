"""One-input elementwise ops: math functions, activations, clip, where and casts.

Backward passes reuse the forward output where that is cheaper (exp, sqrt, sigmoid, tanh) and
never modify the incoming gradient in place, since one gradient array may feed several inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels
from ..base import MXNetError
from ._op import Op, apply, as_method, unbroadcast

if TYPE_CHECKING:
    from .._typing import DTypeLike
    from .ndarray import NDArray

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
    def forward(self, x, dtype):
        self.src = x.dtype
        return x.astype(dtype)

    def backward(self, g):
        return g.astype(self.src)


def negative(data: NDArray) -> NDArray:
    """Return ``-data``."""
    return apply(_Neg, (data,))


def exp(data: NDArray) -> NDArray:
    """Return ``e ** data`` elementwise."""
    return apply(_Exp, (data,))


def log(data: NDArray) -> NDArray:
    """Return the natural logarithm elementwise."""
    return apply(_Log, (data,))


def sqrt(data: NDArray) -> NDArray:
    """Return the square root elementwise."""
    return apply(_Sqrt, (data,))


def rsqrt(data: NDArray) -> NDArray:
    """Return ``1 / sqrt(data)`` elementwise."""
    return apply(_Rsqrt, (data,))


def square(data: NDArray) -> NDArray:
    """Return ``data * data`` elementwise."""
    return apply(_Square, (data,))


def abs(data: NDArray) -> NDArray:
    """Return the absolute value elementwise (gradient ``sign(data)``, 0 at 0)."""
    return apply(_Abs, (data,))


def sign(data: NDArray) -> NDArray:
    """Return -1, 0 or 1 by the sign of each element (zero gradient)."""
    return apply(_NoGrad, (data,), fn="sign")


def floor(data: NDArray) -> NDArray:
    """Return the floor elementwise (zero gradient)."""
    return apply(_NoGrad, (data,), fn="floor")


def ceil(data: NDArray) -> NDArray:
    """Return the ceiling elementwise (zero gradient)."""
    return apply(_NoGrad, (data,), fn="ceil")


def round(data: NDArray) -> NDArray:
    """Round to the nearest integer, halves away from zero (zero gradient)."""
    return apply(_NoGrad, (data,), fn="round")


def rint(data: NDArray) -> NDArray:
    """Round to the nearest integer, halves to even (zero gradient)."""
    return apply(_NoGrad, (data,), fn="rint")


def trunc(data: NDArray) -> NDArray:
    """Round toward zero (zero gradient)."""
    return apply(_NoGrad, (data,), fn="trunc")


def reciprocal(data: NDArray) -> NDArray:
    """Return ``1 / data`` elementwise."""
    return apply(_Reciprocal, (data,))


def log1p(data: NDArray) -> NDArray:
    """Return ``log(1 + data)`` elementwise."""
    return apply(_Log1p, (data,))


def expm1(data: NDArray) -> NDArray:
    """Return ``exp(data) - 1`` elementwise."""
    return apply(_Expm1, (data,))


def sin(data: NDArray) -> NDArray:
    """Return the sine elementwise."""
    return apply(_Sin, (data,))


def cos(data: NDArray) -> NDArray:
    """Return the cosine elementwise."""
    return apply(_Cos, (data,))


def relu(data: NDArray) -> NDArray:
    """Return ``max(data, 0)`` elementwise."""
    return apply(_Relu, (data,))


def sigmoid(data: NDArray) -> NDArray:
    """Return ``1 / (1 + exp(-data))`` elementwise (computed without overflow)."""
    return apply(_Sigmoid, (data,))


def tanh(data: NDArray) -> NDArray:
    """Return the hyperbolic tangent elementwise."""
    return apply(_Tanh, (data,))


def softrelu(data: NDArray) -> NDArray:
    """Return ``log(1 + exp(data))`` elementwise (computed without overflow)."""
    return apply(_Softrelu, (data,))


def softsign(data: NDArray) -> NDArray:
    """Return ``data / (1 + |data|)`` elementwise."""
    return apply(_Softsign, (data,))


_ACTIVATIONS = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softrelu": softrelu,
    "softsign": softsign,
}


def Activation(data: NDArray, act_type: str = "relu", **kwargs: Any) -> NDArray:
    """Apply the activation ``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""
    try:
        fn = _ACTIVATIONS[act_type]
    except KeyError:
        raise MXNetError(
            f"unknown act_type {act_type!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
    return fn(data)


def clip(data: NDArray, a_min: float, a_max: float) -> NDArray:
    """Clip values to ``[a_min, a_max]``; the gradient passes where ``a_min <= x <= a_max``."""
    return apply(_Clip, (data,), a_min=a_min, a_max=a_max)


def where(condition: NDArray, x: NDArray, y: NDArray) -> NDArray:
    """Return ``x`` where ``condition`` is non-zero, else ``y``.

    ``condition`` has ``x``'s shape, or is 1-D and selects whole rows along the first axis.
    """
    return apply(_Where, (condition, x, y))


def cast(data: NDArray, dtype: DTypeLike) -> NDArray:
    """Return ``data`` converted to ``dtype`` (the gradient converts back)."""
    return apply(_Cast, (data,), dtype=np.dtype(dtype))


class UnaryMethods:
    """One-input math as NDArray methods, with ``-x``, ``abs(x)`` and ``astype``."""

    __slots__ = ()
    _data: Any  # ArrayCore's slot, on the NDArray this mixin is part of

    def __neg__(self: Any) -> NDArray:
        return negative(self)

    def __pos__(self: Any) -> NDArray:
        return self

    def __abs__(self: Any) -> NDArray:
        return abs(self)

    def astype(self: Any, dtype: DTypeLike, copy: bool = True) -> NDArray:
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
