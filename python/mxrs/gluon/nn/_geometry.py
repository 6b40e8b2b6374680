"""The window arguments convolution and pooling layers share: sizes per spatial axis and the
layouts each accepts."""

from __future__ import annotations

from collections.abc import Sequence

from ...base import MXNetError

__all__ = ["_tuple", "_check_layout", "_CONV_LAYOUTS", "_POOL_LAYOUTS"]


def _tuple(value: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise MXNetError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


#: Layouts the layers accept, by number of spatial dimensions (channels-first one first).
_CONV_LAYOUTS = {1: ("NCW",), 2: ("NCHW",), 3: ("NCDHW",)}
_POOL_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _check_layout(block: str, layout: str, allowed: tuple[str, ...]) -> None:
    if layout not in allowed:
        why = ""
        if layout in ("NHWC", "NDHWC") and "NHWC" not in allowed and "NDHWC" not in allowed:
            why = " (channel-last convolution runs only on GPU in MXNet 1.9.1)"
        names = " and ".join(allowed)
        raise MXNetError(f"{block} supports layout {names}, not {layout!r}{why}")
