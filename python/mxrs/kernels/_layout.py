"""Layouts of dense arrays as oneDNN's kernels take them.

A kernel reads and writes any *dense* float32 array, one whose elements fill a single block
of memory in some axis order: row-major ``NCHW``, or channels-last ``NHWC`` seen through an
``(N, C, H, W)`` view, or any other permutation; its strides tell oneDNN the order. The
convolutions write channels-last, so the next kernel reads their output as it is, while NumPy
code sees an ordinary strided array. An activation runs over raw buffers, so its arrays must
share one order: :func:`in_layout_of` copies an array into another's order where they differ.
"""

from __future__ import annotations

from typing import Any

import numpy

__all__ = [
    "dense",
    "strides_of",
    "same_layout",
    "in_layout_of",
    "channels_last",
    "is_channels_last",
]


def dense(a: Any) -> Any:
    """``a`` if its elements fill one block in some axis order (what oneDNN takes with its
    strides: row-major, channels-last, ...), else a row-major float32 copy."""
    if a.dtype != numpy.float32:
        return numpy.ascontiguousarray(a, numpy.float32)
    if a.flags.c_contiguous:
        return a
    expect = a.itemsize
    for stride, n in sorted((s, n) for s, n in zip(a.strides, a.shape, strict=True) if n > 1):
        if stride != expect:
            return numpy.ascontiguousarray(a)
        expect *= n
    return a


def strides_of(a: Any) -> list[int]:
    """``a``'s strides in elements."""
    return [s // a.itemsize for s in a.strides]


def same_layout(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` (of one shape) step through memory alike."""
    return all(sa == sb for sa, sb, n in zip(a.strides, b.strides, a.shape, strict=True) if n > 1)


def in_layout_of(ref: Any, a: Any) -> Any:
    """``a`` (of ``ref``'s shape) laid out as ``ref`` is: itself, or a copy."""
    a = dense(a)
    if same_layout(a, ref):
        return a
    out = numpy.empty_like(ref)
    out[...] = a
    return out


def channels_last(shape: tuple[int, ...]) -> Any:
    """An uninitialised float32 array of ``(N, C, *spatial)`` ``shape``, C varying fastest."""
    nd = len(shape) - 2
    buf = numpy.empty((shape[0], *shape[2:], shape[1]), numpy.float32)
    return buf.transpose((0, nd + 1) + tuple(range(1, nd + 1)))


def is_channels_last(a: Any) -> bool:
    """True when ``a`` (``(N, C, *spatial)``) keeps C fastest in memory."""
    return a.ndim >= 3 and a.strides[1] == a.itemsize and not a.flags.c_contiguous
