"""Elementwise ops of two arrays: arithmetic and comparisons with broadcasting, logic, hypot.

Binary ops broadcast like NumPy and sum their gradients back to each input's shape. A Python
scalar operand becomes an attribute of a scalar op (no array is made for it) and keeps the array's
dtype. Comparisons return 0/1 arrays of the left operand's dtype, as MXNet does, and pass no
gradient; the ``broadcast_*`` names are MXNet's other spellings of the same ops.

``logical_and``, ``logical_or`` and ``logical_xor`` take NDArrays or numbers on either side,
broadcast, and return 0/1 in the left array's dtype, as MXNet's comparisons do (a number meeting
an integer array is truncated to that dtype first: ``logical_and(int_array, 0.5)`` is all 0).
They pass no gradient. ``broadcast_hypot`` is ``sqrt(lhs^2 + rhs^2)`` with its gradient.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _threaded
from ..base import MXNetError
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, unbroadcast
from .core.transfer import to_raw

__all__ = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "modulo",
    "power",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "elemwise_add",
    "elemwise_sub",
    "elemwise_mul",
    "elemwise_div",
    "broadcast_add",
    "broadcast_sub",
    "broadcast_mul",
    "broadcast_div",
    "add_n",
    "ElementWiseSum",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_power",
    "plus",
    "minus",
    "logical_and",
    "logical_or",
    "logical_xor",
    "broadcast_equal",
    "broadcast_not_equal",
    "broadcast_greater",
    "broadcast_greater_equal",
    "broadcast_lesser",
    "broadcast_lesser_equal",
    "broadcast_logical_and",
    "broadcast_logical_or",
    "broadcast_logical_xor",
    "broadcast_hypot",
    "broadcast_mod",
    "broadcast_plus",
    "broadcast_minus",
    "true_divide",
]


# ----------------------------------------------------------------- binary array-array ops
class _Add(Op):
    def forward(self, a, b):
        self.sa, self.sb = a.shape, b.shape
        return _threaded.add(a, b)

    def backward(self, g):
        return unbroadcast(g, self.sa), unbroadcast(g, self.sb)


class _Sub(Op):
    def forward(self, a, b):
        self.sa, self.sb = a.shape, b.shape
        return a - b

    def backward(self, g):
        return unbroadcast(g, self.sa), (unbroadcast(-g, self.sb) if self.needs[1] else None)


class _Mul(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        a, b = self.a, self.b
        return (
            unbroadcast(g * b, a.shape) if self.needs[0] else None,
            unbroadcast(g * a, b.shape) if self.needs[1] else None,
        )


class _Div(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return self.xp.trunc(a / b).astype(self.xp.result_type(a, b))
        return a / b

    def backward(self, g):
        a, b = self.a, self.b
        ga = g / b
        return (
            unbroadcast(ga, a.shape) if self.needs[0] else None,
            unbroadcast(-ga * a / b, b.shape) if self.needs[1] else None,
        )


class _Pow(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        self.y = a**b
        return self.y

    def backward(self, g):
        a, b, xp = self.a, self.b, self.xp
        ga = unbroadcast(g * b * a ** (b - 1), a.shape) if self.needs[0] else None
        gb = unbroadcast(g * self.y * xp.log(a), b.shape) if self.needs[1] else None
        return ga, gb


class _Maximum(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return self.xp.maximum(a, b)

    def backward(self, g):
        mask = self.a >= self.b
        return (
            unbroadcast(g * mask, self.a.shape) if self.needs[0] else None,
            unbroadcast(g * ~mask, self.b.shape) if self.needs[1] else None,
        )


class _Minimum(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return self.xp.minimum(a, b)

    def backward(self, g):
        mask = self.a <= self.b
        return (
            unbroadcast(g * mask, self.a.shape) if self.needs[0] else None,
            unbroadcast(g * ~mask, self.b.shape) if self.needs[1] else None,
        )


class _Mod(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return self.xp.mod(a, b)

    def backward(self, g):
        a, b = self.a, self.b
        return (
            unbroadcast(g, a.shape) if self.needs[0] else None,
            unbroadcast(-g * self.xp.floor(a / b), b.shape) if self.needs[1] else None,
        )


class _Compare(Op):
    def forward(self, a, b, fn):
        return fn(a, b).astype(a.dtype)

    def backward(self, g):
        return None, None


# ----------------------------------------------------------------- array-scalar ops
class _AddS(Op):
    def forward(self, a, s):
        return a + s

    def backward(self, g):
        return g


class _MulS(Op):
    def forward(self, a, s):
        self.s = s
        return a * s

    def backward(self, g):
        return g * self.s


class _RSubS(Op):
    def forward(self, a, s):
        return s - a

    def backward(self, g):
        return -g


class _RDivS(Op):
    def forward(self, a, s):
        self.y = s / a
        self.a = a
        return self.y

    def backward(self, g):
        return -g * self.y / self.a


class _PowS(Op):
    def forward(self, a, s):
        self.a, self.s = a, s
        return a**s

    def backward(self, g):
        s = self.s
        if s == 2:
            return g * (2 * self.a)
        return g * (s * self.a ** (s - 1))


class _RPowS(Op):
    def forward(self, a, s):
        self.y = s**a
        self.s = s
        return self.y

    def backward(self, g):
        return g * self.y * float(np.log(self.s))


class _MaxS(Op):
    def forward(self, a, s):
        self.a, self.s = a, s
        return self.xp.maximum(a, s)

    def backward(self, g):
        return g * (self.a >= self.s)


class _MinS(Op):
    def forward(self, a, s):
        self.a, self.s = a, s
        return self.xp.minimum(a, s)

    def backward(self, g):
        return g * (self.a <= self.s)


class _ModS(Op):
    def forward(self, a, s):
        return self.xp.mod(a, s)

    def backward(self, g):
        return g


class _RModS(Op):
    def forward(self, a, s):
        self.a, self.s = a, s
        return self.xp.mod(s, a)

    def backward(self, g):
        return -g * self.xp.floor(self.s / self.a)


class _CompareS(Op):
    def forward(self, a, s, fn):
        return fn(a, s).astype(a.dtype)

    def backward(self, g):
        return None


def _scalar(x):
    return x.item() if isinstance(x, np.generic) else x


def _other(x, like):
    """Turn a NumPy array operand into an NDArray on ``like``'s context, in ``like``'s dtype."""
    return like._new(to_raw(x, like._ctx, like._data.dtype), like._ctx)


def _is_number(x):
    return isinstance(x, int | float | np.number) and not isinstance(x, bool)


def _binary(lhs, rhs, op, op_s, op_rs, neg=False):
    if isinstance(lhs, np.ndarray):
        lhs = _other(lhs, rhs)
    if isinstance(rhs, np.ndarray):
        rhs = _other(rhs, lhs)
    if isinstance(lhs, ArrayCore):
        if isinstance(rhs, ArrayCore):
            return apply(op, (lhs, rhs))
        s = _scalar(rhs)
        if neg:
            return apply(op_s, (lhs,), s=-s)
        return apply(op_s, (lhs,), s=s)
    if isinstance(rhs, ArrayCore):
        return apply(op_rs, (rhs,), s=_scalar(lhs))
    scalar_op = _SCALAR_OPS.get(op)
    if scalar_op is not None and _is_number(lhs) and _is_number(rhs):
        # Two numbers: a number, as MXNet's operators give.
        return scalar_op(_scalar(lhs), _scalar(rhs))
    raise TypeError(
        f"expected an NDArray operand, got {type(lhs).__name__} and {type(rhs).__name__}"
    )


def add(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return ``lhs + rhs`` with broadcasting; either side may be a scalar."""
    return _binary(lhs, rhs, _Add, _AddS, _AddS)


def subtract(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return ``lhs - rhs`` with broadcasting; either side may be a scalar."""
    return _binary(lhs, rhs, _Sub, _AddS, _RSubS, neg=True)


def multiply(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return ``lhs * rhs`` with broadcasting; either side may be a scalar."""
    return _binary(lhs, rhs, _Mul, _MulS, _MulS)


def divide(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return ``lhs / rhs`` with broadcasting; integer arrays divided by a scalar truncate."""
    if (
        isinstance(lhs, ArrayCore)
        and not isinstance(rhs, (ArrayCore, np.ndarray))
        and lhs._data.dtype.kind in "iu"
    ):
        return apply(_DivIntS, (lhs,), s=_scalar(rhs))
    return _binary(lhs, rhs, _Div, _DivS, _RDivS)


class _DivS(Op):
    def forward(self, a, s):
        self.s = s
        return a / s

    def backward(self, g):
        return g / self.s


class _DivIntS(Op):
    def forward(self, a, s):
        return self.xp.trunc(a / s).astype(a.dtype)

    def backward(self, g):
        return None


def modulo(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return the remainder of ``lhs / rhs`` with the sign of ``rhs``, as Python's ``%``."""
    return _binary(lhs, rhs, _Mod, _ModS, _RModS)


def power(base: ArrayT | float, exp: ArrayT | float) -> ArrayT:
    """Return ``base ** exp`` with broadcasting; either side may be a scalar."""
    return _binary(base, exp, _Pow, _PowS, _RPowS)


def maximum(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return the elementwise maximum; ties send the gradient to ``lhs``."""
    return _binary(lhs, rhs, _Maximum, _MaxS, _MaxS)


def minimum(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return the elementwise minimum; ties send the gradient to ``lhs``."""
    return _binary(lhs, rhs, _Minimum, _MinS, _MinS)


def _compare(lhs, rhs, fn, rfn):
    if isinstance(lhs, ArrayCore) and isinstance(rhs, ArrayCore):
        return apply(_Compare, (lhs, rhs), fn=fn)
    if isinstance(lhs, ArrayCore):
        return apply(_CompareS, (lhs,), s=_scalar(rhs), fn=fn)
    return apply(_CompareS, (rhs,), s=_scalar(lhs), fn=rfn)


def equal(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs == rhs`` else 0, in ``lhs``'s dtype."""
    return _compare(lhs, rhs, _eq, _eq)


def not_equal(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs != rhs`` else 0."""
    return _compare(lhs, rhs, _ne, _ne)


def greater(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs > rhs`` else 0."""
    return _compare(lhs, rhs, _gt, _lt)


def greater_equal(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs >= rhs`` else 0."""
    return _compare(lhs, rhs, _ge, _le)


def lesser(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs < rhs`` else 0."""
    return _compare(lhs, rhs, _lt, _gt)


def lesser_equal(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs <= rhs`` else 0."""
    return _compare(lhs, rhs, _le, _ge)


def _eq(a, b):
    return a == b


def _ne(a, b):
    return a != b


def _gt(a, b):
    return a > b


def _ge(a, b):
    return a >= b


def _lt(a, b):
    return a < b


def _le(a, b):
    return a <= b


def add_n(*args: ArrayT) -> ArrayT:
    """Return the elementwise sum of the NDArrays ``args`` (all of one shape)."""
    if not args:
        raise MXNetError("add_n needs at least one NDArray")
    total = args[0]
    for a in args[1:]:
        total = add(total, a)
    return total if len(args) > 1 else total.copy()


ElementWiseSum = add_n


def _broadcast_alias(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """``fn`` as MXNet's ``broadcast_*`` operator, which takes (and ignores) an ``axis``."""

    def op(lhs: Any, rhs: Any, axis: Any = None) -> Any:
        return fn(lhs, rhs)

    op.__name__ = op.__qualname__ = f"broadcast_{fn.__name__}"
    op.__doc__ = f"Same as :func:`{fn.__name__}` (``axis`` is accepted and ignored, as MXNet)."
    return op


elemwise_add = plus = add
elemwise_sub = minus = subtract
elemwise_mul = multiply
elemwise_div = divide
broadcast_add = _broadcast_alias(add)
broadcast_sub = _broadcast_alias(subtract)
broadcast_mul = _broadcast_alias(multiply)
broadcast_div = _broadcast_alias(divide)
broadcast_maximum = _broadcast_alias(maximum)
broadcast_minimum = _broadcast_alias(minimum)
broadcast_power = _broadcast_alias(power)


_SCALAR_OPS: dict[type[Op], Callable[[Any, Any], Any]] = {
    _Add: operator.add,
    _Sub: operator.sub,
    _Mul: operator.mul,
    _Div: operator.truediv,
    _Mod: operator.mod,
    _Pow: operator.pow,
    _Maximum: builtins.max,
    _Minimum: builtins.min,
}


def _and(a: Any, b: Any) -> Any:
    return (a != 0) & (b != 0)


def _or(a: Any, b: Any) -> Any:
    return (a != 0) | (b != 0)


def _xor(a: Any, b: Any) -> Any:
    return (a != 0) ^ (b != 0)


def _logical(lhs: Any, rhs: Any, fn: Callable[[Any, Any], Any]) -> Any:
    lhs_arr, rhs_arr = isinstance(lhs, ArrayCore), isinstance(rhs, ArrayCore)
    if not lhs_arr and not rhs_arr:
        return int(bool(fn(lhs, rhs)))
    if lhs_arr != rhs_arr:  # a number takes the array's dtype first
        arr = lhs if lhs_arr else rhs
        num = rhs if lhs_arr else lhs
        if arr._data.dtype.kind in "iub":
            num = int(num)
        lhs, rhs = (arr, num) if lhs_arr else (num, arr)
    return _compare(lhs, rhs, fn, fn)


def logical_and(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where both ``lhs`` and ``rhs`` are non-zero, else 0, with broadcasting.

    Examples
    --------
    >>> mx.nd.logical_and(mx.nd.array([0, 1, 2]), mx.nd.array([1, 0, 2])).asnumpy()
    array([0., 0., 1.], dtype=float32)
    """
    return _logical(lhs, rhs, _and)


def logical_or(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where ``lhs`` or ``rhs`` is non-zero, else 0, with broadcasting."""
    return _logical(lhs, rhs, _or)


def logical_xor(lhs: ArrayT | float, rhs: ArrayT | float) -> ArrayT:
    """Return 1 where exactly one of ``lhs`` and ``rhs`` is non-zero, else 0."""
    return _logical(lhs, rhs, _xor)


def _alias(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` as MXNet's operator ``name``, which takes two arrays that broadcast."""

    def op(lhs: Any, rhs: Any) -> Any:
        return fn(lhs, rhs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Same as :func:`{fn.__name__}`: ``lhs`` and ``rhs`` broadcast to one shape."
    return op


broadcast_equal = _alias(equal, "broadcast_equal")
broadcast_not_equal = _alias(not_equal, "broadcast_not_equal")
broadcast_greater = _alias(greater, "broadcast_greater")
broadcast_greater_equal = _alias(greater_equal, "broadcast_greater_equal")
broadcast_lesser = _alias(lesser, "broadcast_lesser")
broadcast_lesser_equal = _alias(lesser_equal, "broadcast_lesser_equal")
broadcast_logical_and = _alias(logical_and, "broadcast_logical_and")
broadcast_logical_or = _alias(logical_or, "broadcast_logical_or")
broadcast_logical_xor = _alias(logical_xor, "broadcast_logical_xor")
broadcast_mod = _alias(modulo, "broadcast_mod")
broadcast_plus = _alias(add, "broadcast_plus")
broadcast_minus = _alias(subtract, "broadcast_minus")
true_divide = _alias(divide, "true_divide")


class _Hypot(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        self.y = self.xp.hypot(a, b)
        return self.y if a.dtype.kind == "f" else self.y.astype(a.dtype)

    def backward(self, g):
        gy = g / self.y
        return (
            unbroadcast(gy * self.a, self.a.shape) if self.needs[0] else None,
            unbroadcast(gy * self.b, self.b.shape) if self.needs[1] else None,
        )


def broadcast_hypot(lhs: ArrayT, rhs: ArrayT) -> ArrayT:
    """Return ``sqrt(lhs^2 + rhs^2)`` with broadcasting, computed without overflow.

    Examples
    --------
    >>> mx.nd.broadcast_hypot(mx.nd.array([3, 5]), mx.nd.array([4, 12])).asnumpy()
    array([ 5., 13.], dtype=float32)
    """
    return apply(_Hypot, (lhs, rhs))
