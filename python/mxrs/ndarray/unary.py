"""One-input elementwise ops: math functions, activations, clip, where and casts.

Backward passes reuse the forward output where that is cheaper (exp, sqrt, sigmoid, tanh) and
never modify the incoming gradient in place, since one gradient array may feed several inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MXNetError
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


class _Relu(Op):
    def forward(self, x):
        self.y = y = self.xp.maximum(x, 0)
        return y

    def backward(self, g):
        # NaN in, NaN gradient out, as MXNet's kernel gives.
        return self.xp.where(self.xp.isnan(self.y), self.y, g * (self.y > 0))


class _Sigmoid(Op):
    def forward(self, x):
        xp = self.xp
        y = xp.tanh(x * 0.5)
        y += 1
        y *= 0.5
        self.y = y
        return y

    def backward(self, g):
        y = self.y
        return g * (y * (1 - y))


class _Tanh(Op):
    def forward(self, x):
        self.y = self.xp.tanh(x)
        return self.y

    def backward(self, g):
        y = self.y
        return g * (1 - y * y)


class _Softrelu(Op):
    def forward(self, x):
        self.x = x
        return self.xp.logaddexp(0, x)

    def backward(self, g):
        return g * (0.5 * (1 + self.xp.tanh(self.x * 0.5)))


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
    """Return ``data`` converted to ``dtype`` (the gradient converts back)."""
    return apply(_Cast, (data,), dtype=np.dtype(dtype))


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
