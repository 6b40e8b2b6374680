"""Handing a freshly computed gradient's buffer to a ``.grad`` array instead of copying it in.

A backward pass computes each variable's gradient into a new array, and storing it with
``grad_req='write'`` copied it into the ``.grad`` buffer: for ResNet-18 a step's 45 MB read and
written once more. When nothing but the backward pass holds the new array, and nothing but the
``.grad`` array holds its old buffer, the new buffer can simply become the ``.grad`` buffer: no
one can observe the difference except by timing.

"Nothing holds it" is proved with CPython's reference counts: every holder of a NumPy array
(another array viewing it, a list, a KVStore push in flight lending it, a user's variable) holds
a reference. How many references the caller's own frames hold depends on the interpreter, so the
counts are measured once, through the same call shape, on arrays known to be held once and
twice; where an interpreter's counts do not tell the two apart, nothing is ever handed over.
Only CPython before 3.14 with its global interpreter lock counts every reference a frame holds
(3.14 borrows some without counting them, and free-threaded builds split their counts), so
elsewhere nothing is handed over either.
"""

from __future__ import annotations

import sys
import sysconfig
from typing import Any, Protocol

import numpy as np

__all__ = ["Holder", "hand_over"]


class Holder(Protocol):
    """An array whose buffer is its ``_data`` attribute (``ArrayCore`` is one)."""

    _data: Any


def _counts(grad: Holder, g: Any) -> tuple[int, int] | None:
    """References to ``g`` and to ``grad._data`` as seen from here, when handing ``g`` over
    would be the same as copying it in but for who else holds the two (see :func:`hand_over`);
    None otherwise."""
    data = grad._data
    if (
        type(g) is not np.ndarray
        or type(data) is not np.ndarray
        or g.dtype != data.dtype
        or g.shape != data.shape
        or g.strides != data.strides
        or not g.flags.writeable
        or not g.flags.aligned
        or g.base is not None  # a view, or memory another object owns and may hand out again
        or isinstance(data.base, np.ndarray)  # a view: its holders hold the array it views
    ):
        return None
    del data
    return sys.getrefcount(g), sys.getrefcount(grad._data)


class _Probe:
    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data = np.empty(4, np.float32)


def _hand_over_shaped(grad: Holder, g: Any) -> tuple[int, int] | None:
    """:func:`_counts` called as :func:`hand_over` calls it."""
    return _counts(grad, g)


def _store_shaped(var: Any, g: Any, grad: Holder) -> tuple[int, int] | None:
    """:func:`hand_over` called as the backward pass's store calls it."""
    return _hand_over_shaped(grad, g)


def _calibrate() -> tuple[int, int] | None:
    """The counts :func:`_counts` sees for a gradient held only by the pass's entry for its
    variable and a buffer held only by its array; None when one more holder of either does not
    show in them, or on an interpreter whose counts omit some holders."""
    counts_every_holder = (
        sys.implementation.name == "cpython"
        and sys.version_info < (3, 14)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )
    if not counts_every_holder:
        return None
    alone = _store_shaped(*(None, np.empty(4, np.float32), _Probe()))
    shared_g = np.empty(4, np.float32)
    shared = _store_shaped(*(None, shared_g, _Probe()))
    probe = _Probe()
    kept = probe._data
    shared_data = _store_shaped(*(None, np.empty(4, np.float32), probe))
    del kept, shared_g
    if alone is None or shared is None or shared_data is None:
        return None
    if shared[0] != alone[0] + 1 or shared_data[1] != alone[1] + 1:
        return None
    return alone


_SOLE = _calibrate()


def hand_over(grad: Holder, g: Any) -> bool:
    """Make ``g`` the buffer of ``grad`` when that is the same as copying it in: both are host
    NumPy arrays of one dtype, shape and layout owning their memory, ``g`` is writable and
    held only by the backward pass's entry for its variable (the store calls
    ``hand_over(grad, g)`` with the entry's gradient), and the old buffer only by ``grad``.
    Returns whether it did; the caller copies otherwise."""
    if _SOLE is None or _counts(grad, g) != _SOLE:
        return False
    grad._data = g
    return True
