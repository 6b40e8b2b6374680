"""Copies and sums of long float32 arrays on the kernels' threads (oneDNN's OpenMP team where it
is loaded, the calling thread otherwise), where NumPy would make them on one thread: the
gradient stores and sums of the backward pass, the residual additions of a forward pass and the
local KVStore's copies. Anything else (other dtypes, short, strided or overlapping arrays,
other devices) goes to NumPy or the array's own module, with NumPy's results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _native

__all__ = ["add", "copy"]

#: Elements from which a float32 array is copied or summed over the threads.
THRESHOLD = 1 << 16


def _order(*arrays: Any) -> list[int] | None:
    """The order of the axes (longest stride first) in which long float32 arrays of one shape
    and one dense layout (row-major, or any order of the axes as channels-last data is) are
    each one row-major buffer; None for anything else."""
    first = arrays[0]
    if not all(
        type(a) is np.ndarray
        and a.dtype == np.float32
        and a.shape == first.shape
        and a.strides == first.strides
        for a in arrays
    ):
        return None
    if first.size < THRESHOLD:
        return None
    if first.flags.c_contiguous:
        return list(range(first.ndim))
    order = sorted(range(first.ndim), key=lambda i: -first.strides[i])
    return order if first.transpose(order).flags.c_contiguous else None


def _flat(x: Any, order: list[int]) -> Any:
    """``x``'s buffer as a one-dimensional view, in ``order``."""
    return x.transpose(order).reshape(-1)


def copy(dst: Any, src: Any, xp: Any = np) -> None:
    """``dst[...] = src``; ``xp`` (the arrays' module) copies what is not long float32."""
    order = _order(dst, src)
    if order is not None and not np.may_share_memory(dst, src):
        _native.copy_into(_flat(dst, order), _flat(src, order))
    else:
        xp.copyto(dst, src)


def add(a: Any, b: Any) -> Any:
    """``a + b`` as a new array."""
    order = _order(a, b)
    if order is None:
        return a + b
    out = np.empty_like(a)  # a's dense layout, so the same order walks it
    if out.strides != a.strides:
        return a + b
    _native.add_into(_flat(out, order), _flat(a, order), _flat(b, order))
    return out
