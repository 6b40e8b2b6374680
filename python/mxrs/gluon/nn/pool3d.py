"""3-D pooling layers over ``(N, C, D, H, W)`` data (or ``'NDHWC'``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .conv_layers import _Pooling, _tuple

__all__ = ["MaxPool3D", "AvgPool3D", "GlobalMaxPool3D", "GlobalAvgPool3D"]


class MaxPool3D(_Pooling):
    """3-D max pooling.

    Parameters
    ----------
    pool_size : int or tuple of 3 ints, default (2, 2, 2)
    strides : int or tuple of 3 ints, optional
        Defaults to ``pool_size``.
    padding : int or tuple of 3 ints, default 0
    ceil_mode : bool, default False
        Round the output size up ('full' convention) instead of down.
    layout : str, default 'NCDHW'
        Or ``'NDHWC'``.
    """

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        layout: str = "NCDHW",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 3, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "max",
            layout,
            **kwargs,
        )


class AvgPool3D(_Pooling):
    """3-D average pooling; parameters as :class:`MaxPool3D`, plus ``count_include_pad``
    (default True): whether padded positions count in each window's divisor."""

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        layout: str = "NCDHW",
        count_include_pad: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 3, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "avg",
            layout,
            count_include_pad,
            **kwargs,
        )


class GlobalMaxPool3D(_Pooling):
    """Max over each whole volume: ``(N, C, D, H, W)`` -> ``(N, C, 1, 1, 1)``."""

    def __init__(self, layout: str = "NCDHW", **kwargs: Any) -> None:
        super().__init__((1, 1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over each whole volume: ``(N, C, D, H, W)`` -> ``(N, C, 1, 1, 1)``."""

    def __init__(self, layout: str = "NCDHW", **kwargs: Any) -> None:
        super().__init__((1, 1, 1), None, 0, True, True, "avg", layout, **kwargs)
