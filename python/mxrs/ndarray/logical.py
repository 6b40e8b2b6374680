"""Logical operators and the ``broadcast_*`` spellings of the comparisons, with ``hypot``.

``logical_and``, ``logical_or`` and ``logical_xor`` take NDArrays or numbers on either side,
broadcast, and return 0/1 in the left array's dtype, as MXNet's comparisons do (a number meeting
an integer array is truncated to that dtype first: ``logical_and(int_array, 0.5)`` is all 0).
They pass no gradient. ``broadcast_hypot`` is ``sqrt(lhs^2 + rhs^2)`` with its gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, unbroadcast
from .elementwise import (
    _compare,
    add,
    divide,
    equal,
    greater,
    greater_equal,
    lesser,
    lesser_equal,
    modulo,
    not_equal,
    subtract,
)

__all__ = [
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
