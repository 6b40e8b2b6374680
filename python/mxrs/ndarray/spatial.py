"""Spatial transformer networks' operators, as MXNet 1.9.1 defines them: ``GridGenerator``
(sampling grids from affine parameters or a flow field), ``BilinearSampler`` (bilinear sampling
of an image at a grid, zero outside it) and ``SpatialTransformer`` (the two together).

Grids hold normalised coordinates: ``-1`` is the first pixel's centre and ``1`` the last's, x
(width) in channel 0 and y (height) in channel 1. Each operator has its gradient for every
input.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["GridGenerator", "BilinearSampler", "SpatialTransformer"]


def _target_grid(xp, h, w, dtype):
    """The target's normalised ``(x, y, 1)`` coordinates, shape ``(3, h*w)``, row-major."""
    xs = xp.linspace(-1.0, 1.0, w, dtype=dtype) if w > 1 else xp.full(1, -1.0, dtype=dtype)
    ys = xp.linspace(-1.0, 1.0, h, dtype=dtype) if h > 1 else xp.full(1, -1.0, dtype=dtype)
    gx = xp.tile(xs, h)
    gy = xp.repeat(ys, w)
    return xp.stack([gx, gy, xp.ones(h * w, dtype=dtype)])


class _GridGenerator(Op):
    def forward(self, x, kind, shape):
        xp = self.xp
        self.kind = kind
        if kind == "affine":
            if x.ndim != 2 or x.shape[1] != 6:
                raise MXNetError(f"GridGenerator: affine needs data (N, 6), got {x.shape}")
            h, w = shape
            self.base = _target_grid(xp, h, w, x.dtype)  # (3, h*w)
            grid = xp.matmul(x.reshape(-1, 2, 3), self.base)  # (N, 2, h*w)
            return grid.reshape(x.shape[0], 2, h, w)
        if x.ndim != 4 or x.shape[1] != 2:
            raise MXNetError(f"GridGenerator: warp needs data (N, 2, H, W), got {x.shape}")
        h, w = x.shape[2:]
        self.scale = xp.asarray([(w - 1) / 2.0, (h - 1) / 2.0], dtype=x.dtype).reshape(1, 2, 1, 1)
        base = _target_grid(xp, h, w, x.dtype)[:2].reshape(1, 2, h, w)
        return base + x / self.scale

    def backward(self, g):
        xp = self.xp
        if self.kind == "affine":
            n = g.shape[0]
            d = xp.matmul(g.reshape(n, 2, -1), self.base.T)  # (N, 2, 3)
            return d.reshape(n, 6)
        return g / self.scale


def GridGenerator(
    data: ArrayT, transform_type: str = "affine", target_shape: Sequence[int] = (0, 0)
) -> ArrayT:
    """A sampling grid ``(N, 2, H, W)``: with ``transform_type='affine'``, ``data`` ``(N, 6)``
    holds each sample's 2x3 affine map of the target's normalised coordinates (``target_shape``
    is ``(H, W)``); with ``'warp'``, ``data`` ``(N, 2, H, W)`` is a flow field in pixels added to
    each pixel's own position.

    Raises
    ------
    MXNetError
        For another ``transform_type`` or data of the wrong shape.
    """
    if transform_type not in ("affine", "warp"):
        raise MXNetError(
            f"GridGenerator: transform_type must be affine or warp, not {transform_type!r}"
        )
    shape = tuple(int(s) for s in target_shape)
    if transform_type == "affine" and (len(shape) != 2 or min(shape) <= 0):
        raise MXNetError(f"GridGenerator: affine needs target_shape (H, W), got {target_shape}")
    return apply(_GridGenerator, (data,), kind=transform_type, shape=shape)


class _BilinearSampler(Op):
    def forward(self, x, grid):
        if x.ndim != 4 or grid.ndim != 4 or grid.shape[1] != 2 or grid.shape[0] != x.shape[0]:
            raise MXNetError(
                f"BilinearSampler: data (N, C, H, W) and grid (N, 2, H', W') of one batch, got "
                f"{x.shape} and {grid.shape}"
            )
        xp = self.xp
        n, c, h, w = x.shape
        px = (grid[:, 0] + 1) * (w - 1) / 2  # (N, Ho, Wo)
        py = (grid[:, 1] + 1) * (h - 1) / 2
        x0, y0 = xp.floor(px), xp.floor(py)
        wx, wy = 1 - (px - x0), 1 - (py - y0)  # the top-left corner's weights
        x0, y0 = x0.astype(xp.int64), y0.astype(xp.int64)
        batch = xp.arange(n).reshape(n, 1, 1)
        corners = []
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            yy, xx = y0 + dy, x0 + dx
            inside = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
            yc, xc = xp.clip(yy, 0, h - 1), xp.clip(xx, 0, w - 1)
            vals = x[batch, :, yc, xc]  # (N, Ho, Wo, C)
            vals = xp.where(inside[..., None], vals, 0)
            corners.append((yc, xc, inside, vals))
        wts = (wy * wx, wy * (1 - wx), (1 - wy) * wx, (1 - wy) * (1 - wx))
        out = sum(v * wt[..., None] for (_, _, _, v), wt in zip(corners, wts, strict=True))
        self.saved = (x.shape, corners, wts, wx, wy, batch)
        return xp.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(x.dtype, copy=False)

    def backward(self, g):
        xp = self.xp
        (n, c, h, w), corners, wts, wx, wy, batch = self.saved
        gl = g.transpose(0, 2, 3, 1)  # (N, Ho, Wo, C)
        gx = None
        if self.needs[0]:
            gx = xp.zeros((n, h, w, c), dtype=g.dtype)
            for (yc, xc, inside, _), wt in zip(corners, wts, strict=True):
                contrib = gl * (wt * inside)[..., None]
                idx = (xp.broadcast_to(batch, yc.shape), yc, xc)
                self.be.scatter_add(gx, idx, contrib)
            gx = xp.ascontiguousarray(gx.transpose(0, 3, 1, 2))
        ggrid = None
        if self.needs[1]:
            tl, tr, bl, br = (v for _, _, _, v in corners)
            dx = ((tr - tl) * wy[..., None] + (br - bl) * (1 - wy)[..., None]) * gl
            dy = ((bl - tl) * wx[..., None] + (br - tr) * (1 - wx)[..., None]) * gl
            ggrid = xp.stack([dx.sum(-1) * (w - 1) / 2, dy.sum(-1) * (h - 1) / 2], axis=1)
            ggrid = ggrid.astype(g.dtype, copy=False)
        return gx, ggrid


def BilinearSampler(data: ArrayT, grid: ArrayT, cudnn_off: bool | None = None) -> ArrayT:
    """``data`` ``(N, C, H, W)`` sampled bilinearly at ``grid`` ``(N, 2, H', W')`` (normalised
    coordinates, see the module docstring); points outside the image read zeros.

    Raises
    ------
    MXNetError
        For shapes that do not fit.
    """
    return apply(_BilinearSampler, (data, grid))


def SpatialTransformer(
    data: ArrayT,
    loc: ArrayT,
    target_shape: Sequence[int] = (0, 0),
    transform_type: str = "affine",
    sampler_type: str = "bilinear",
    cudnn_off: bool | None = None,
) -> ArrayT:
    """``BilinearSampler(data, GridGenerator(loc, 'affine', target_shape))``.

    Raises
    ------
    MXNetError
        For a transform other than affine or a sampler other than bilinear (MXNet's only ones).
    """
    if transform_type != "affine" or sampler_type != "bilinear":
        raise MXNetError(
            "SpatialTransformer: only transform_type='affine' and sampler_type='bilinear'"
        )
    return BilinearSampler(data, GridGenerator(loc, "affine", target_shape))
