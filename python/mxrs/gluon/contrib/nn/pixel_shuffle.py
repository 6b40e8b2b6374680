"""Pixel-shuffle upsampling (Shi et al., 2016) in one, two and three dimensions.

A layer with factors ``(f1, ..., fk)`` takes ``(N, f1*...*fk*C, D1, ..., Dk)`` to
``(N, C, D1*f1, ..., Dk*fk)``: the channels of each output channel's group are spread over
``f1 x ... x fk`` blocks of pixels, channel ``c*F + i`` landing at block offset ``i`` (row-major
over the factors). The layers hybridize: they are reshapes and one transpose.
"""

from __future__ import annotations

import math
from typing import Any

from .... import ndarray as nd
from ....base import MXNetError
from ...block import HybridBlock

__all__ = ["PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


def _factors(name: str, factor: Any, ndim: int) -> tuple[int, ...]:
    """``factor`` (an int or ``ndim`` ints) as ``ndim`` positive ints."""
    items = (factor,) * ndim if not isinstance(factor, (list, tuple)) else tuple(factor)
    if len(items) != ndim:
        raise MXNetError(f"{name}: factor must be an int or {ndim} ints, not {factor!r}")
    out = []
    for f in items:
        try:
            v = int(f)
        except (TypeError, ValueError):
            raise MXNetError(
                f"{name}: factor must be an int or {ndim} ints, not {factor!r}"
            ) from None
        if v < 1:
            raise MXNetError(f"{name}: every factor must be at least 1, not {factor!r}")
        out.append(v)
    return tuple(out)


class _PixelShuffle(HybridBlock):
    """The shuffle over the last ``_ndim`` axes, shared by the three layers."""

    _ndim = 0

    def __init__(self, factor: Any) -> None:
        super().__init__()
        self._factors = _factors(type(self).__name__, factor, self._ndim)

    def _check(self, x: Any) -> None:
        name, k, group = type(self).__name__, self._ndim, math.prod(self._factors)
        if x.ndim != k + 2:
            raise MXNetError(
                f"{name}: input must have {k + 2} dimensions (N, C, {'D, H, W'[2 - 3 * k :]}), "
                f"not shape {x.shape}"
            )
        if x.shape[1] % group:
            raise MXNetError(
                f"{name}: the {x.shape[1]} input channels are not a multiple of "
                f"the product of the factors {self._factors} ({group})"
            )

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Shuffle the channels of ``x`` into blocks of pixels."""
        if F is nd:
            self._check(x)
        k, fs = self._ndim, self._factors
        keep = (0,) * k
        # (N, C*F, D...) -> (N, C, F, D...) -> (N, C, f1, ..., fk, D...)
        x = F.reshape(x, (0, -4, -1, math.prod(fs), *keep))
        for i in range(k - 1):
            rest = math.prod(fs[i + 1 :])
            x = F.reshape(x, ((0,) * (2 + i)) + (-4, fs[i], rest) + keep)
        # (N, C, D1, f1, ..., Dk, fk), then merge each (Di, fi)
        axes = [0, 1]
        for i in range(k):
            axes += [2 + k + i, 2 + i]
        x = F.transpose(x, axes=tuple(axes))
        return F.reshape(x, (0, 0) + (-3,) * k)

    def __repr__(self) -> str:
        shown = self._factors[0] if self._ndim == 1 else self._factors
        return f"{type(self).__name__}({shown})"


class PixelShuffle1D(_PixelShuffle):
    """Upsample the ``W`` axis by moving channels into it: ``(N, f*C, W) -> (N, C, W*f)``.

    Parameters
    ----------
    factor : int or 1-tuple of int
        The upsampling factor.

    Examples
    --------
    >>> PixelShuffle1D(2)(mx.nd.zeros((1, 8, 3))).shape
    (1, 4, 6)
    """

    _ndim = 1


class PixelShuffle2D(_PixelShuffle):
    """Upsample ``H`` and ``W`` by moving channels into them:
    ``(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2)``.

    Parameters
    ----------
    factor : int or 2-tuple of int
        The upsampling factors of ``H`` and ``W`` (one int: both).

    Examples
    --------
    >>> PixelShuffle2D((2, 3))(mx.nd.zeros((1, 12, 3, 5))).shape
    (1, 2, 6, 15)
    """

    _ndim = 2


class PixelShuffle3D(_PixelShuffle):
    """Upsample ``D``, ``H`` and ``W`` by moving channels into them:
    ``(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3)``.

    Parameters
    ----------
    factor : int or 3-tuple of int
        The upsampling factors of ``D``, ``H`` and ``W`` (one int: all three).

    Examples
    --------
    >>> PixelShuffle3D((2, 3, 4))(mx.nd.zeros((1, 48, 3, 5, 7))).shape
    (1, 2, 6, 15, 28)
    """

    _ndim = 3
