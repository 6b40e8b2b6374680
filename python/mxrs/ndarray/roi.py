"""Pooling over regions of interest (``ROIPooling``), as MXNet 1.9.1 defines it for detection
networks: each region ``[batch_index, x1, y1, x2, y2]`` (image coordinates, scaled by
``spatial_scale`` and rounded) is cut into ``pooled_size`` bins, and each bin's maximum (its
first, row-major) is taken; an empty bin gives 0. The gradient goes to each bin's maximum; the
regions get none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

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
