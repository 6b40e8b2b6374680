"""Pooling over regions of interest, as MXNet 1.9.1 defines it for detection networks.

Each region of ``rois`` ``(R, 5)`` is ``[batch_index, x1, y1, x2, y2]`` in image coordinates,
scaled by ``spatial_scale`` to the feature map's; each is cut into ``pooled_size`` bins.

``ROIPooling``
    The corners are rounded; each bin's maximum (its first, row-major) is taken, and an empty
    bin gives 0. The gradient goes to each bin's maximum.
``ROIAlign`` (``mx.nd.contrib``)
    No rounding: each bin averages ``sample_ratio`` x ``sample_ratio`` bilinear samples on a
    regular grid (``ceil`` of the bin's size in pixels when ``sample_ratio <= 0``). A sample
    more than one pixel outside the map reads 0, one less than that reads the clamped border.
    Regions are at least one pixel wide, unless ``aligned`` shifts them by half a pixel
    (Detectron2's alignment), which takes them as they are and needs them non-empty. With
    ``position_sensitive``, bin ``(i, j)`` of output channel ``c`` reads input channel
    ``(c * ph + i) * pw + j`` (R-FCN). A region with a negative batch index gives zeros. The
    sampling is separable, so a region's samples are two small interpolation matrices, one
    per axis (cut to the rows and columns it reads), and its bins two matrix products.

The gradient reaches the data only; the regions get none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

# ROIAlign is public as mx.nd.contrib.ROIAlign, as in MXNet
__all__ = ["ROIPooling"]


def _round(v: float) -> int:
    """C's ``round``: halves away from zero."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


class _ROIPooling(Op):
    def forward(self, x, rois, pooled, scale):
        if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
            raise MXNetError(
                f"ROIPooling: data (N, C, H, W) and rois (R, 5), got {x.shape} and {rois.shape}"
            )
        xp = self.xp
        n, c, h, w = x.shape
        ph, pw = pooled
        boxes = np.asarray(self.be.to_host(rois), dtype=np.float64)
        out = xp.zeros((len(boxes), c, ph, pw), dtype=x.dtype)
        arg = xp.full((len(boxes), c, ph, pw), -1, dtype=np.int64)  # stays on the device
        flat = x.reshape(n, c, h * w)
        for i, (b, *corners) in enumerate(boxes):
            bi = int(b)
            if not 0 <= bi < n:
                raise MXNetError(f"ROIPooling: roi {i} names batch index {bi} of {n}")
            x1, y1, x2, y2 = (_round(v * scale) for v in corners)
            bh, bw = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
            for p in range(ph):
                hs = min(max(math.floor(p * bh) + y1, 0), h)
                he = min(max(math.ceil((p + 1) * bh) + y1, 0), h)
                for q in range(pw):
                    ws = min(max(math.floor(q * bw) + x1, 0), w)
                    we = min(max(math.ceil((q + 1) * bw) + x1, 0), w)
                    if he <= hs or we <= ws:
                        continue
                    window = np.arange(hs, he)[:, None] * w + np.arange(ws, we)
                    cells = xp.asarray(window.reshape(-1))
                    patch = flat[bi][:, cells]  # (C, cells)
                    arg[i, :, p, q] = cells[patch.argmax(axis=1)]
                    out[i, :, p, q] = patch.max(axis=1)
        self.shape, self.batch = x.shape, xp.asarray(boxes[:, 0].astype(np.int64))
        self.arg = arg
        return out

    def backward(self, g):
        xp = self.xp
        n, c, h, w = self.shape
        gx = xp.zeros((n, c, h * w), dtype=g.dtype)
        arg = self.arg
        r, ch, p, q = xp.nonzero(arg >= 0)
        if r.size:
            idx = (self.batch[r], ch, arg[r, ch, p, q])
            self.be.scatter_add(gx, idx, g[r, ch, p, q])
        return gx.reshape(n, c, h, w), None


def ROIPooling(
    data: ArrayT, rois: ArrayT, pooled_size: Sequence[int], spatial_scale: float
) -> ArrayT:
    """Max pooling of ``data`` ``(N, C, H, W)`` over each region of ``rois`` ``(R, 5)`` into
    ``(R, C, *pooled_size)``; see the module docstring.

    Raises
    ------
    MXNetError
        For shapes that do not fit, or a region naming a batch index out of range.
    """
    pooled = tuple(int(s) for s in pooled_size)
    if len(pooled) != 2 or min(pooled) <= 0:
        raise MXNetError(f"ROIPooling: pooled_size must be two positive ints, got {pooled_size}")
    return apply(_ROIPooling, (data, rois), pooled=pooled, scale=float(spatial_scale))


def _axis_weights(start, size, pooled, grid, extent, dtype):
    """The ``(pooled, extent)`` matrix averaging ``grid`` bilinear samples per bin along one
    axis of ``extent`` pixels: a region from ``start`` of ``size`` pixels, in ``dtype``."""
    bin_size = dtype(size / dtype(pooled))
    p = np.arange(pooled, dtype=dtype)[:, None]
    frac = (np.arange(grid, dtype=dtype) + dtype(0.5)) * bin_size / dtype(grid)
    pos = (dtype(start) + p * bin_size) + frac[None, :]  # (pooled, grid), MXNet's order
    inside = (pos >= -1) & (pos <= extent)
    pos = np.maximum(pos, 0)
    low = pos.astype(np.int64)
    last = low >= extent - 1
    low = np.where(last, extent - 1, low)
    high = np.where(last, low, low + 1)
    frac = np.where(last, 0, pos - low).astype(dtype)
    keep = inside.astype(dtype) / dtype(grid)
    rows = np.broadcast_to(np.arange(pooled)[:, None], pos.shape)
    mat = np.zeros((pooled, extent), dtype=dtype)
    np.add.at(mat, (rows, low), (1 - frac) * keep)
    np.add.at(mat, (rows, high), frac * keep)
    return mat


def _support(mat):
    """The first and one past the last column of ``mat`` with a weight, or None."""
    cols = np.flatnonzero(mat.any(axis=0))
    return (int(cols[0]), int(cols[-1]) + 1) if cols.size else None


class _ROIAlign(Op):
    def forward(self, x, rois, pooled, scale, ratio, sensitive, aligned):
        xp = self.xp
        n, c, h, w = x.shape
        ph, pw = pooled
        dt = np.float64 if x.dtype == np.float64 else np.float32
        boxes = np.asarray(self.be.to_host(rois)).astype(dt)
        cout = c // (ph * pw) if sensitive else c
        out = xp.zeros((len(boxes), cout, ph, pw), dtype=x.dtype)
        # per region: its image, the rows and columns its samples read, and the weights there
        regions = []
        for i, (b, *corners) in enumerate(boxes):
            bi = int(b)
            if bi < 0:
                continue
            if bi >= n:
                raise MXNetError(f"ROIAlign: roi {i} names batch index {bi} of {n}")
            x1, y1, x2, y2 = (v * dt(scale) - dt(0.5 if aligned else 0) for v in corners)
            rw, rh = x2 - x1, y2 - y1
            if aligned and (rw <= 0 or rh <= 0):
                raise MXNetError(f"ROIAlign: aligned roi {i} is empty ({rw} x {rh} pixels)")
            if not aligned:
                rw, rh = max(rw, dt(1)), max(rh, dt(1))
            gh = ratio if ratio > 0 else math.ceil(rh / ph)
            gw = ratio if ratio > 0 else math.ceil(rw / pw)
            wy = _axis_weights(y1, rh, ph, gh, h, dt)
            wx = _axis_weights(x1, rw, pw, gw, w, dt)
            ys, xs = _support(wy), _support(wx)
            if ys is None or xs is None:  # every sample outside the map
                continue
            crop = (bi, slice(None), slice(*ys), slice(*xs))
            ay = xp.asarray(wy[:, slice(*ys)].astype(x.dtype))
            ax = xp.asarray(wx[:, slice(*xs)].astype(x.dtype))
            regions.append((i, crop, ay, ax))
            d = x[crop]
            if sensitive:
                d = d.reshape(cout, ph, pw, *d.shape[1:])
                t = (d * ay[None, :, None, :, None]).sum(axis=3)  # (cout, ph, pw, cols)
                out[i] = (t * ax[None, None]).sum(axis=-1)
            else:
                t = xp.tensordot(ay, d, axes=([1], [1]))  # (ph, C, cols)
                out[i] = xp.tensordot(t, ax, axes=([2], [1])).transpose(1, 0, 2)
        self.saved = (x.shape, regions, sensitive)
        return out

    def backward(self, g):
        xp = self.xp
        shape, regions, sensitive = self.saved
        grad = xp.zeros(shape, dtype=g.dtype)
        for i, crop, ay, ax in regions:
            gi = g[i]
            if sensitive:
                full = gi[..., None, None] * ay[None, :, None, :, None]
                full = full * ax[None, None, :, None, :]  # (cout, ph, pw, rows, cols)
                grad[crop] += full.reshape(shape[1], ay.shape[1], ax.shape[1])
            else:
                u = xp.tensordot(gi, ax, axes=([2], [0]))  # (C, ph, cols)
                grad[crop] += xp.tensordot(ay, u, axes=([0], [1])).transpose(1, 0, 2)
        return grad, None


def ROIAlign(
    data: ArrayT,
    rois: ArrayT,
    pooled_size: Sequence[int],
    spatial_scale: float,
    sample_ratio: int = -1,
    position_sensitive: bool = False,
    aligned: bool = False,
) -> ArrayT:
    """Average of bilinear samples of ``data`` ``(N, C, H, W)`` over the bins of each region
    of ``rois`` ``(R, 5)``: ``(R, C, *pooled_size)``, or ``(R, C / (ph * pw), ph, pw)`` with
    ``position_sensitive``; see the module docstring.

    Parameters
    ----------
    data : NDArray
        The feature map.
    rois : NDArray
        The regions, ``[batch_index, x1, y1, x2, y2]`` in image coordinates.
    pooled_size : (int, int)
        The bins of each region, ``(ph, pw)``.
    spatial_scale : float
        The feature map's size over the image's.
    sample_ratio : int
        Samples per bin along each axis; adaptive when not positive.
    position_sensitive : bool
        Each bin reads its own group of channels (R-FCN's PSRoIAlign).
    aligned : bool
        Shift the regions by half a pixel (Detectron2).

    Returns
    -------
    NDArray
        The pooled features.

    Raises
    ------
    MXNetError
        For shapes that do not fit, a ``spatial_scale`` outside ``[0, 1]`` (MXNet's bound),
        channels that the bins do not divide with ``position_sensitive``, an empty region
        with ``aligned``, or a region naming a batch index beyond the data's.
    """
    pooled = tuple(int(s) for s in pooled_size)
    if len(pooled) != 2 or min(pooled) <= 0:
        raise MXNetError(f"ROIAlign: pooled_size must be two positive ints, got {pooled_size}")
    if data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        raise MXNetError(
            f"ROIAlign: data (N, C, H, W) and rois (R, 5), got {data.shape} and {rois.shape}"
        )
    if position_sensitive and data.shape[1] % (pooled[0] * pooled[1]):
        raise MXNetError(
            f"ROIAlign: position_sensitive needs the {data.shape[1]} channels divisible by "
            f"pooled_size {pooled[0]}x{pooled[1]}"
        )
    if not 0.0 <= float(spatial_scale) <= 1.0:
        raise MXNetError(f"ROIAlign: spatial_scale must be in [0, 1], got {spatial_scale}")
    return apply(
        _ROIAlign,
        (data, rois),
        pooled=pooled,
        scale=float(spatial_scale),
        ratio=int(sample_ratio),
        sensitive=bool(position_sensitive),
        aligned=bool(aligned),
    )
