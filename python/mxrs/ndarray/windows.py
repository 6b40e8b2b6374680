"""Sliding blocks: ``im2col`` gathers every receptive field of a convolution into a column
matrix, ``col2im`` sums columns back onto an image. Each is the other's gradient, as in
MXNet 1.9.1, and both reuse the portable convolution's window gather and its scatter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..base import MXNetError
from ..kernels.portable import padded, scatter, windows
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["im2col", "col2im"]


def _geometry(what, kernel, stride, dilate, pad):
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise MXNetError(f"{what}: kernel must have 1, 2 or 3 dimensions, got {tuple(kernel)}")

    def per_axis(v, default, name):
        v = tuple(int(x) for x in (v or ())) or (default,) * nd
        if len(v) != nd:
            raise MXNetError(f"{what}: {name} {v} does not match kernel {tuple(kernel)}")
        return v

    return (
        tuple(int(k) for k in kernel),
        per_axis(stride, 1, "stride"),
        per_axis(dilate, 1, "dilate"),
        per_axis(pad, 0, "pad"),
    )


def _blocks(sizes, kernel, stride, dilate, pad):
    """The number of blocks along each spatial axis (a convolution's output size)."""
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, d, p in zip(sizes, kernel, stride, dilate, pad, strict=True)
    )


def _im2col(op, x, geom):
    kernel, stride, dilate, pad = geom
    n, c = x.shape[:2]
    out = _blocks(x.shape[2:], kernel, stride, dilate, pad)
    view = windows(op.be, padded(op.xp, x, pad, 0), kernel, stride, dilate, out)  # (C,*k,N,*o)
    nd = len(kernel)
    order = (nd + 1, 0, *range(1, nd + 1), *range(nd + 2, 2 * nd + 2))
    return op.xp.ascontiguousarray(view.transpose(order)).reshape(
        n, c * math.prod(kernel), math.prod(out)
    )


def _col2im(op, cols, size, geom):
    kernel, stride, dilate, pad = geom
    xp, nd = op.xp, len(kernel)
    n, ck, length = cols.shape
    c = ck // math.prod(kernel)
    out = _blocks(size, kernel, stride, dilate, pad)
    blocks = cols.reshape((n, c, *kernel, *out))
    order = (1, *range(2, nd + 2), 0, *range(nd + 2, 2 * nd + 2))  # (C, *k, N, *o)
    full = tuple(s + 2 * p for s, p in zip(size, pad, strict=True))
    img = scatter(xp, blocks.transpose(order), (c, n, *full), stride, dilate, out)
    crop = tuple(slice(p, p + s) for p, s in zip(pad, size, strict=True))
    return xp.ascontiguousarray(img[(slice(None), slice(None)) + crop].swapaxes(0, 1))


class _Im2col(Op):
    def forward(self, x, geom):
        kernel = geom[0]
        if x.ndim != len(kernel) + 2:
            raise MXNetError(
                f"im2col: data of shape {tuple(x.shape)} does not have {len(kernel)} spatial "
                f"dimensions after (N, C) for kernel {kernel}"
            )
        if min(_blocks(x.shape[2:], *geom)) <= 0:
            raise MXNetError(f"im2col: kernel {kernel} is larger than the padded data")
        self.geom, self.size = geom, x.shape[2:]
        return _im2col(self, x, geom)

    def backward(self, g):
        return _col2im(self, g, self.size, self.geom)


class _Col2im(Op):
    def forward(self, cols, size, geom):
        kernel = geom[0]
        if len(size) != len(kernel):
            raise MXNetError(f"col2im: output_size {size} does not match kernel {kernel}")
        blocks = _blocks(size, *geom)
        k = math.prod(kernel)
        if cols.ndim != 3 or cols.shape[1] % k or cols.shape[2] != math.prod(blocks):
            raise MXNetError(
                f"col2im: data of shape {tuple(cols.shape)} is not (N, C*{k}, "
                f"{math.prod(blocks)}) for output_size {size} and kernel {kernel}"
            )
        self.geom = geom
        return _col2im(self, cols, size, geom)

    def backward(self, g):
        return _im2col(self, g, self.geom)


def im2col(
    data: ArrayT,
    kernel: Sequence[int],
    stride: Sequence[int] = (),
    dilate: Sequence[int] = (),
    pad: Sequence[int] = (),
) -> ArrayT:
    """Every sliding block of ``data`` ``(N, C, *spatial)`` as a column: the result is
    ``(N, C * prod(kernel), W)``, ``W`` the blocks in row-major order of their positions (a
    convolution's output size), each column ordered channel first, then kernel offsets.

    Parameters
    ----------
    kernel : tuple of int
        The block size, 1 to 3 spatial dimensions.
    stride, dilate, pad : tuple of int, optional
        As a convolution's (defaults 1, 1 and 0).

    Raises
    ------
    MXNetError
        When the geometry does not fit ``data``.
    """
    return apply(_Im2col, (data,), geom=_geometry("im2col", kernel, stride, dilate, pad))


def col2im(
    data: ArrayT,
    output_size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int] = (),
    dilate: Sequence[int] = (),
    pad: Sequence[int] = (),
) -> ArrayT:
    """Sums the columns of ``data`` ``(N, C * prod(kernel), W)`` back onto an image
    ``(N, C, *output_size)``; overlapping blocks add up (the gradient of :func:`im2col`).

    Raises
    ------
    MXNetError
        When ``data``'s shape does not fit ``output_size`` and the geometry.
    """
    geom = _geometry("col2im", kernel, stride, dilate, pad)
    return apply(_Col2im, (data,), size=tuple(int(s) for s in output_size), geom=geom)
