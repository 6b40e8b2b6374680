"""FlowNet's correlation layer (``Correlation``), as MXNet 1.9.1 defines it.

Both inputs ``(N, C, H, W)`` are zero-padded by ``pad_size``. An output position ``(i, j)``
puts a ``kernel_size`` square patch of ``data1`` at padded row ``i * stride1 +
max_displacement`` and column ``j * stride1 + max_displacement`` (its top-left corner) and
compares it with the patch of ``data2`` displaced by ``(dy, dx)``, each a multiple of
``stride2`` in ``[-max_displacement, max_displacement]``: the sum over the patch and the
channels of the products (``is_multiply``) or of the absolute differences, divided by
``kernel_size ** 2 * C``. Output channel ``q`` is displacement ``(dy, dx)`` in row-major order
(``dy`` slower). The output has ``ceil((H + 2 * pad_size - 2 * border) / stride1)`` rows
(``border = max_displacement + kernel_size // 2``), and as many columns by the same rule.

The gradient reaches both inputs; that of an absolute difference takes the sign of
``data1 - data2``, ``+1`` for ``data1`` (``-1`` for ``data2``) where they are equal, as MXNet's.
"""

from __future__ import annotations

import math

from ..base import InvalidShapeError, MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["Correlation"]


def _grid(top: int, start: int, stride: int) -> slice:
    """The rows (or columns) ``start + i * stride`` for ``i`` in ``range(top)``."""
    return slice(start, start + (top - 1) * stride + 1, stride)


class _Correlation(Op):
    """Per displacement, the channel sum of the products (or absolute differences) over the
    whole region the patches cover, then the ``k * k`` patch sums as strided slices of it; the
    backward spreads each output's gradient back over its patch the same way."""

    def forward(self, a, b, k, md, s1, s2, pad, multiply):
        xp = self.xp
        n, c, h, w = a.shape
        border = md + k // 2
        th = math.ceil((h + 2 * pad - 2 * border) / s1)
        tw = math.ceil((w + 2 * pad - 2 * border) / s1)
        if th < 1 or tw < 1:
            raise MXNetError(
                f"Correlation: the neighbourhood (max_displacement {md}) and kernel "
                f"(kernel_size {k}) do not fit in data of {h}x{w} padded by {pad}"
            )
        radius = md // s2
        steps = range(-radius, radius + 1)
        shifts = [(dy * s2, dx * s2) for dy in steps for dx in steps]
        widths = ((0, 0), (0, 0), (pad, pad), (pad, pad))
        pa, pb = xp.pad(a, widths), xp.pad(b, widths)
        lh, lw = (th - 1) * s1 + k, (tw - 1) * s1 + k  # the rows and columns patches cover
        out = xp.zeros((n, len(shifts), th, tw), dtype=a.dtype)
        for q, (dy, dx) in enumerate(shifts):
            ra, rb = pa[:, :, md : md + lh, md : md + lw], _region(pb, md, dy, dx, lh, lw)
            m = (ra * rb if multiply else xp.abs(ra - rb)).sum(axis=1)  # (N, lh, lw)
            acc = out[:, q]
            for u in range(k):
                for v in range(k):
                    acc += m[:, _grid(th, u, s1), _grid(tw, v, s1)]
        out /= k * k * c
        self.saved = (pa, pb, shifts, (k, md, s1, pad, multiply, th, tw, lh, lw))
        return out

    def backward(self, g):
        xp = self.xp
        pa, pb, shifts, (k, md, s1, pad, multiply, th, tw, lh, lw) = self.saved
        n, c = pa.shape[:2]
        ga = xp.zeros_like(pa) if self.needs[0] else None
        gb = xp.zeros_like(pb) if self.needs[1] else None
        g = g / (k * k * c)
        for q, (dy, dx) in enumerate(shifts):
            spread = xp.zeros((n, lh, lw), dtype=g.dtype)  # each pixel's share of the patches
            for u in range(k):
                for v in range(k):
                    spread[:, _grid(th, u, s1), _grid(tw, v, s1)] += g[:, q]
            spread = spread[:, None]
            ra, rb = pa[:, :, md : md + lh, md : md + lw], _region(pb, md, dy, dx, lh, lw)
            if multiply:
                da, db = spread * rb, spread * ra
            else:
                da = xp.where(ra >= rb, spread, -spread)
                db = -da
            if ga is not None:
                ga[:, :, md : md + lh, md : md + lw] += da
            if gb is not None:
                _region(gb, md, dy, dx, lh, lw)[...] += db
        h, w = pa.shape[2] - 2 * pad, pa.shape[3] - 2 * pad
        crop = (slice(None), slice(None), slice(pad, pad + h), slice(pad, pad + w))
        return (
            None if ga is None else xp.ascontiguousarray(ga[crop]),
            None if gb is None else xp.ascontiguousarray(gb[crop]),
        )


def _region(x, md, dy, dx, lh, lw):
    """The view of padded ``x`` that the displaced patches cover."""
    return x[:, :, md + dy : md + dy + lh, md + dx : md + dx + lw]


def Correlation(
    data1: ArrayT,
    data2: ArrayT,
    kernel_size: int = 1,
    max_displacement: int = 1,
    stride1: int = 1,
    stride2: int = 1,
    pad_size: int = 0,
    is_multiply: bool = True,
) -> ArrayT:
    """The correlation of ``data1`` and ``data2`` (both ``(N, C, H, W)``) over a neighbourhood
    of displacements: ``(N, D * D, H', W')`` with ``D = 2 * (max_displacement // stride2) + 1``;
    see the module docstring.

    Parameters
    ----------
    data1, data2 : NDArray
        The two feature maps, of one shape.
    kernel_size : int
        The side of the compared patches, odd.
    max_displacement : int
        The largest displacement of ``data2``'s patch, in pixels.
    stride1 : int
        The step between output positions in ``data1``.
    stride2 : int
        The step between displacements.
    pad_size : int
        Zero padding on each side of both inputs.
    is_multiply : bool
        Products (True) or absolute differences (False).

    Returns
    -------
    NDArray
        The normalised correlations.

    Raises
    ------
    MXNetError
        For an even ``kernel_size``, a stride below 1, a negative size, inputs that are not 4D
        of one shape, or a neighbourhood that does not fit in the padded data.
    """
    k, md, s1, s2, pad = (
        int(v) for v in (kernel_size, max_displacement, stride1, stride2, pad_size)
    )
    if k % 2 == 0 or k < 1:
        raise MXNetError(f"Correlation: kernel_size must be a positive odd number, got {k}")
    if s1 < 1 or s2 < 1:
        raise MXNetError(f"Correlation: stride1 and stride2 must be positive, got {s1} and {s2}")
    if md < 0 or pad < 0:
        raise MXNetError(
            f"Correlation: max_displacement and pad_size must be non-negative, got {md} and {pad}"
        )
    if data1.ndim != 4 or data2.ndim != 4:
        raise InvalidShapeError(
            f"Correlation: data1 and data2 must be 4D (N, C, H, W), got {data1.shape} and "
            f"{data2.shape}"
        )
    if data1.shape != data2.shape:
        raise InvalidShapeError(
            f"Correlation: data1 and data2 must have one shape, got {data1.shape} and {data2.shape}"
        )
    return apply(
        _Correlation, (data1, data2), k=k, md=md, s1=s1, s2=s2, pad=pad, multiply=bool(is_multiply)
    )
