"""Padding of the spatial axes of 4-d and 5-d arrays: ``pad`` (also spelled ``Pad``).

``pad_width`` lists ``(before, after)`` counts for every axis in order, flattened; the two
leading (batch and channel) axes must get no padding. The backward pass undoes the padding one
axis at a time, last axis first: it keeps the interior of the gradient and, for 'edge', adds the
padded slabs onto the first and last slices, for 'reflect', adds them mirrored onto the slices
they were copied from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["pad", "Pad"]

_MODES = ("constant", "edge", "reflect")


def _along(axis: int, index: Any) -> tuple[Any, ...]:
    """Index tuple selecting ``index`` on ``axis`` and everything on the other axes."""
    return (slice(None),) * axis + (index,)


class _Pad(Op):
    def forward(self, x, widths, mode, value):
        xp = self.xp
        self.shape, self.widths, self.mode = x.shape, widths, mode
        if mode == "constant":
            return xp.pad(x, widths, mode="constant", constant_values=value)
        return xp.pad(x, widths, mode=mode)

    def backward(self, g):
        xp, mode = self.xp, self.mode
        for axis in reversed(range(g.ndim)):
            lo, hi = self.widths[axis]
            if lo == 0 and hi == 0:
                continue
            n = self.shape[axis]
            inner = g[_along(axis, slice(lo, lo + n))].copy()
            if mode == "edge":
                if lo:
                    head = g[_along(axis, slice(0, lo))].sum(axis=axis)
                    inner[_along(axis, 0)] += head
                if hi:
                    tail = g[_along(axis, slice(lo + n, None))].sum(axis=axis)
                    inner[_along(axis, n - 1)] += tail
            elif mode == "reflect":
                if lo:
                    head = xp.flip(g[_along(axis, slice(0, lo))], axis=axis)
                    inner[_along(axis, slice(1, lo + 1))] += head
                if hi:
                    tail = xp.flip(g[_along(axis, slice(lo + n, None))], axis=axis)
                    inner[_along(axis, slice(n - 1 - hi, n - 1))] += tail
            g = inner
        return g


def _widths(data: ArrayT, pad_width: Sequence[int], mode: str) -> tuple[tuple[int, int], ...]:
    """Check ``pad_width`` against ``data`` and ``mode``; return it as per-axis pairs."""
    ndim = data.ndim
    if ndim not in (4, 5):
        raise MXNetError(f"pad supports 4-d or 5-d data only, got shape {tuple(data.shape)}")
    flat = [int(w) for w in pad_width]
    if len(flat) != 2 * ndim:
        raise MXNetError(
            f"pad: pad_width needs 2 values per axis, {2 * ndim} for {ndim}-d data, got {len(flat)}"
        )
    if any(flat[:4]):
        raise MXNetError(
            f"pad: the first two axes (batch and channel) cannot be padded, got pad_width "
            f"{tuple(flat)}"
        )
    if any(w < 0 for w in flat):
        raise MXNetError(f"pad: pad_width cannot be negative, got {tuple(flat)}")
    pairs = tuple((flat[2 * i], flat[2 * i + 1]) for i in range(ndim))
    if mode == "reflect":
        for axis, (lo, hi) in enumerate(pairs):
            if max(lo, hi) >= data.shape[axis]:
                raise MXNetError(
                    f"pad: reflection padding must be smaller than the size of the axis; axis "
                    f"{axis} has size {data.shape[axis]} and padding {(lo, hi)}"
                )
    return pairs


def pad(
    data: ArrayT,
    mode: str,
    pad_width: Sequence[int],
    constant_value: float = 0.0,
    **kwargs: Any,
) -> ArrayT:
    """Pad the spatial axes of a 4-d or 5-d array.

    Parameters
    ----------
    data : NDArray
        Shape ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
    mode : {'constant', 'edge', 'reflect'}
        'constant' fills with ``constant_value``; 'edge' repeats the border values; 'reflect'
        mirrors the array about its border, without repeating the border value.
    pad_width : sequence of int
        ``(before, after)`` for every axis, flattened: ``2 * ndim`` values, the first four 0.
    constant_value : float, default 0

    Raises
    ------
    MXNetError
        For data that is not 4-d or 5-d, a ``pad_width`` of the wrong length, with padding on
        the first two axes or negative, reflection padding not smaller than its axis, or an
        unknown ``mode``.

    Examples
    --------
    >>> x = mx.nd.array([[[[1, 2, 3]]]])
    >>> mx.nd.pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 0, 0, 2, 1)).asnumpy()
    array([[[[3., 2., 1., 2., 3., 2.]]]], dtype=float32)
    """
    if mode not in _MODES:
        raise MXNetError(f"pad: unknown mode {mode!r}; expected one of {list(_MODES)}")
    widths = _widths(data, pad_width, mode)
    return apply(_Pad, (data,), widths=widths, mode=mode, value=float(constant_value))


Pad = pad
