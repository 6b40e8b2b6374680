"""Pooling layers (1-, 2- and 3-D): max, average and global.

Strides default to the window size, as in MXNet's Gluon layers. Pooling layers take channel-last
layouts (``NWC``, ``NHWC``, ``NDHWC``) too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..block import HybridBlock
from ._geometry import _POOL_LAYOUTS, _check_layout, _tuple

if TYPE_CHECKING:
    from ...ndarray import NDArray

__all__ = [
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
]


class _Pooling(HybridBlock):
    """Pooling over channels-first data (the base of the pooling layers)."""

    def __init__(
        self,
        pool_size: tuple[int, ...],
        strides: int | Sequence[int] | None,
        padding: int | Sequence[int],
        ceil_mode: bool,
        global_pool: bool,
        pool_type: str,
        layout: str,
        count_include_pad: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        n = len(pool_size)
        _check_layout(type(self).__name__, layout, _POOL_LAYOUTS[n])
        if strides is None:
            strides = pool_size
        self._kwargs: dict[str, Any] = {
            "kernel": pool_size,
            "stride": _tuple(strides, n, "strides"),
            "pad": _tuple(padding, n, "padding"),
            "global_pool": global_pool,
            "pool_type": pool_type,
            "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid",
        }
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Pool ``x``."""
        return F.Pooling(x, **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return (
            f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, "
            f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
            f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
            f"layout={k['layout']})"
        )


class MaxPool1D(_Pooling):
    """1-D max pooling over ``(N, C, W)`` data; parameters as :class:`MaxPool2D`."""

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCW",
        ceil_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 1, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "max",
            layout,
            **kwargs,
        )


class MaxPool2D(_Pooling):
    """2-D max pooling over ``(N, C, H, W)`` data.

    Parameters
    ----------
    pool_size : int or tuple of 2 ints, default (2, 2)
    strides : int or tuple of 2 ints, optional
        Defaults to ``pool_size``.
    padding : int or tuple of 2 ints, default 0
    layout : str, default 'NCHW'
    ceil_mode : bool, default False
        Round the output size up ('full' convention) instead of down.
    """

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCHW",
        ceil_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 2, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "max",
            layout,
            **kwargs,
        )


class AvgPool1D(_Pooling):
    """1-D average pooling over ``(N, C, W)`` data; parameters as :class:`AvgPool2D`."""

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCW",
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 1, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "avg",
            layout,
            count_include_pad,
            **kwargs,
        )


class AvgPool2D(_Pooling):
    """2-D average pooling over ``(N, C, H, W)`` data.

    Parameters as :class:`MaxPool2D`, plus ``count_include_pad`` (default True): whether padded
    positions count in each window's divisor.
    """

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCHW",
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 2, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "avg",
            layout,
            count_include_pad,
            **kwargs,
        )


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        super().__init__((1,), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over each whole feature map: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        super().__init__((1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        super().__init__((1,), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over each whole feature map: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        super().__init__((1, 1), None, 0, True, True, "avg", layout, **kwargs)


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
