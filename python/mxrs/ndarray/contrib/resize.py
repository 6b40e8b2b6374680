"""Resizing of NCHW images in ``mx.nd.contrib``: ``BilinearResize2D`` and ``AdaptiveAvgPooling2D``.

Both are separable linear maps: ``out = Mh @ x @ Mw.T`` with one small weight matrix per spatial
axis (bilinear interpolation weights, or the averaging weights of adaptive pooling), so the
forward pass is two matrix products and the gradient is the same with the transposed matrices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...base import InvalidShapeError, MXNetError
from ..core.array import ArrayT
from ..core.op import Op, apply

__all__ = ["BilinearResize2D", "AdaptiveAvgPooling2D"]


def _bilinear_weights(xp, n_in, n_out, align_corners, dtype):
    """(n_out, n_in) bilinear interpolation weights along one axis, as MXNet samples."""
    if n_out > 1:
        scale = (n_in - 1) / (n_out - 1) if align_corners else n_in / n_out
    else:
        scale = 0.0
    dst = xp.arange(n_out, dtype=np.float64)
    src = scale * dst if align_corners else xp.maximum(scale * (dst + 0.5) - 0.5, 0.0)
    lo = xp.minimum(src.astype(np.int64), n_in - 1)
    hi = xp.minimum(lo + 1, n_in - 1)
    frac = src - lo
    w = xp.zeros((n_out, n_in), dtype=np.float64)
    rows = xp.arange(n_out)
    w[rows, lo] += 1.0 - frac
    w[rows, hi] += frac
    return w.astype(dtype)


def _pool_weights(xp, n_in, n_out, dtype):
    """(n_out, n_in) 0/1 membership of adaptive pooling's bins, and each bin's size: bin ``i``
    covers ``[floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out))``."""
    i = xp.arange(n_out)
    start = (i * n_in) // n_out
    end = -((-(i + 1) * n_in) // n_out)
    j = xp.arange(n_in)
    inside = (j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])
    return inside.astype(dtype), (end - start).astype(dtype)


class _Separable(Op):
    """``Mh @ x @ Mw.T / div`` over the last two axes; the matrices (and the divisor, for
    pooling: sums over the bins, then division by the bin sizes, as MXNet averages) are made
    from ``kind`` and the sizes."""

    def forward(self, x, *rest, kind, size, align_corners=True):
        xp = self.xp
        self.nin = len(rest) + 1
        work = np.float32 if x.dtype == np.float16 else x.dtype
        (h, w), (oh, ow) = x.shape[-2:], size
        if kind == "bilinear":
            mh = _bilinear_weights(xp, h, oh, align_corners, work)
            mw = _bilinear_weights(xp, w, ow, align_corners, work)
            self.div = None
        else:
            (mh, nh), (mw, nw) = _pool_weights(xp, h, oh, work), _pool_weights(xp, w, ow, work)
            self.div = nh[:, None] * nw[None, :]
        self.mh, self.mw, self.dtype = mh, mw, x.dtype
        y = mh @ x.astype(work, copy=False) @ mw.T
        if self.div is not None:
            y = y / self.div
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        g = g.astype(self.mh.dtype, copy=False)
        if self.div is not None:
            g = g / self.div
        gx = (self.mh.T @ g @ self.mw).astype(self.dtype, copy=False)
        return gx if self.nin == 1 else (gx, None)  # `like` gets no gradient


def _check_4d(name: str, data: ArrayT) -> None:
    if data.ndim != 4:
        raise InvalidShapeError(f"{name} expects 4-D NCHW data, got shape {data.shape}")


def _resize_size(
    h: int,
    w: int,
    like: ArrayT | None,
    height: int,
    width: int,
    scale_height: float | None,
    scale_width: float | None,
    mode: str,
) -> tuple[int, int]:
    if mode == "size":
        if (scale_height is None) != (scale_width is None):
            raise MXNetError("BilinearResize2D: give both scale_height and scale_width, or neither")
        if scale_height is not None and scale_width is not None:
            return int(scale_height * h), int(scale_width * w)
        return int(height), int(width)
    if mode == "odd_scale":
        if scale_height is None or scale_width is None:
            raise MXNetError(
                "BilinearResize2D(mode='odd_scale') needs both scale_height and scale_width"
            )

        def odd(n: int, s: float) -> int:
            return int(n * s) if n % 2 == 0 else int((n - 1) * s) + 1

        return odd(h, scale_height), odd(w, scale_width)
    if mode == "like":
        if like is None:
            raise MXNetError("BilinearResize2D(mode='like') needs the like array")
        _check_4d("BilinearResize2D like", like)
        return like.shape[2], like.shape[3]
    steps = {
        "to_even_down": (0, -1),
        "to_even_up": (0, 1),
        "to_odd_down": (1, -1),
        "to_odd_up": (1, 1),
    }
    if mode not in steps:
        raise MXNetError(
            f"BilinearResize2D: unknown mode {mode!r}; expected 'size', 'odd_scale', 'like', "
            "'to_even_down', 'to_even_up', 'to_odd_down' or 'to_odd_up'"
        )
    parity, step = steps[mode]
    return (h if h % 2 == parity else h + step), (w if w % 2 == parity else w + step)


def BilinearResize2D(
    data: ArrayT,
    like: ArrayT | None = None,
    height: int = 1,
    width: int = 1,
    scale_height: float | None = None,
    scale_width: float | None = None,
    mode: str = "size",
    align_corners: bool = True,
) -> ArrayT:
    """Resize NCHW images with bilinear interpolation.

    Parameters
    ----------
    data : NDArray
        Shape ``(N, C, H, W)``.
    like : NDArray, optional
        With ``mode='like'``: resize to its height and width (``like.shape[2:]``).
    height, width : int, default 1
        The output size in mode 'size' when no scales are given.
    scale_height, scale_width : float, optional
        Mode 'size': the output is ``int(H * scale_height) x int(W * scale_width)`` (give both);
        mode 'odd_scale': odd sizes map to ``int((n - 1) * scale) + 1``.
    mode : str, default 'size'
        'size', 'odd_scale', 'like', or 'to_even_down', 'to_even_up', 'to_odd_down',
        'to_odd_up' (the nearest even or odd size below or above).
    align_corners : bool, default True
        True: the corner pixels of input and output coincide (source ``i * (H-1)/(h-1)``);
        False: pixel centres are scaled (source ``(i + 0.5) * H/h - 0.5``, clamped at 0).

    Returns
    -------
    NDArray
        Shape ``(N, C, h, w)``. Differentiable with respect to ``data``.

    Examples
    --------
    >>> x = mx.nd.array([[[[0, 1], [2, 3]]]])
    >>> mx.nd.contrib.BilinearResize2D(x, height=3, width=3).asnumpy()[0, 0]
    array([[0. , 0.5, 1. ],
           [1. , 1.5, 2. ],
           [2. , 2.5, 3. ]], dtype=float32)
    """
    _check_4d("BilinearResize2D", data)
    size = _resize_size(
        data.shape[2], data.shape[3], like, height, width, scale_height, scale_width, mode
    )
    if size[0] < 1 or size[1] < 1:
        raise InvalidShapeError(f"BilinearResize2D: output size {size} is empty")
    inputs = (data, like) if mode == "like" and like is not None else (data,)
    return apply(_Separable, inputs, kind="bilinear", size=size, align_corners=bool(align_corners))


def _output_size(output_size: Any) -> tuple[int, int]:
    if output_size is None:
        return 1, 1
    if isinstance(output_size, (int, np.integer)):
        return int(output_size), int(output_size)
    sizes = tuple(int(s) for s in output_size)
    if len(sizes) == 0:
        return 1, 1
    if len(sizes) == 1:
        return sizes[0], sizes[0]
    if len(sizes) == 2:
        return sizes[0], sizes[1]
    raise MXNetError(
        f"AdaptiveAvgPooling2D: output_size must be an int or (height, width), got {output_size}"
    )


def AdaptiveAvgPooling2D(data: ArrayT, output_size: int | Sequence[int] = 1) -> ArrayT:
    """Average-pool NCHW images to a fixed output size.

    Output cell ``(i, j)`` averages input rows ``floor(i*H/h) .. ceil((i+1)*H/h) - 1`` and the
    columns likewise, so the windows may overlap and vary in size.

    Parameters
    ----------
    data : NDArray
        Shape ``(N, C, H, W)``.
    output_size : int or tuple of int, default 1
        ``h`` for an ``h x h`` output, or ``(h, w)``.

    Returns
    -------
    NDArray
        Shape ``(N, C, h, w)``. Differentiable.

    Examples
    --------
    >>> x = mx.nd.arange(16).reshape((1, 1, 4, 4))
    >>> mx.nd.contrib.AdaptiveAvgPooling2D(x, output_size=2).asnumpy()[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    _check_4d("AdaptiveAvgPooling2D", data)
    size = _output_size(output_size)
    if min(size) < 1:
        raise InvalidShapeError(f"AdaptiveAvgPooling2D: output size {size} is empty")
    return apply(_Separable, (data,), kind="pool", size=size)
