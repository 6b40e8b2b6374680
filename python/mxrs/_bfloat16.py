"""bfloat16, MXNet's type flag 12, as a NumPy dtype (the ``ml_dtypes`` package's).

A bfloat16 NDArray holds a NumPy array of :data:`BFLOAT16` on a CPU context. Operators that have
no bfloat16 arithmetic of their own run in float32 (:func:`forward_in_float32`): their bfloat16
inputs are widened, and their float32 results (and their inputs' gradients) are rounded back to
bfloat16 to nearest even, as MXNet's oneDNN kernels write bfloat16.

Two roundings exist because MXNet 1.9.1 has two: ``amp_cast`` (and creating an array of
bfloat16 values) rounds to nearest even; ``Cast``/``astype`` on a CPU keep the high 16 bits of
the float32 value (:func:`truncate`), which is what mshadow's conversion does.

Importing this module registers the name ``'bfloat16'`` with NumPy (``np.dtype('bfloat16')``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from .base import MXNetError

__all__ = [
    "BFLOAT16",
    "is_bfloat16",
    "to_bfloat16",
    "truncate",
    "check_backend",
    "forward_in_float32",
]

#: NumPy's bfloat16 dtype (the one ``ml_dtypes`` defines; ``np.dtype('bfloat16')`` is it).
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)


def is_bfloat16(dtype: Any) -> bool:
    """bool: whether ``dtype`` (a dtype, a scalar type or a name) is bfloat16."""
    if dtype is BFLOAT16 or dtype is ml_dtypes.bfloat16:
        return True
    try:
        return np.dtype(dtype) == BFLOAT16
    except TypeError:
        return False


def to_bfloat16(x: Any) -> Any:
    """Round array ``x`` to bfloat16, to nearest even (NaN stays NaN, overflow gives inf)."""
    return x.astype(BFLOAT16)


def truncate(x: Any) -> Any:
    """``x`` as bfloat16 by keeping the high 16 bits of each float32 value (MXNet's CPU
    ``Cast``): rounding toward zero; NaN stays NaN and infinities stay infinite."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        bits[nan] |= np.uint16(0x0040)  # a quiet NaN whatever low mantissa bits it had
    return bits.view(BFLOAT16)


def check_backend(xp: Any, dtype: Any, where: str) -> None:
    """Refuse bfloat16 arrays on a device whose array library has no bfloat16 (CuPy).

    Raises
    ------
    MXNetError
        When ``dtype`` is bfloat16 and ``xp`` is not NumPy.
    """
    if xp is not np and is_bfloat16(dtype):
        raise MXNetError(
            f"{where}: bfloat16 arrays are supported on CPU contexts only in mxrs (CuPy has no "
            "bfloat16 dtype); use float16 on GPUs"
        )


def _narrow(x: Any) -> Any:
    return x.astype(BFLOAT16) if getattr(x, "dtype", None) is _F32 else x


def _widen(x: Any) -> Any:
    return x.astype(_F32) if getattr(x, "dtype", None) is BFLOAT16 else x


def forward_in_float32(op: Any, raw: list[Any], attrs: dict[str, Any]) -> Any:
    """Run primitive op ``op`` on raw arrays ``raw`` (some bfloat16) in float32.

    The bfloat16 inputs are widened to float32. When the first input (an op's data) is
    bfloat16, the op's float32 results are rounded back to bfloat16; other results (integers,
    booleans, or the float32 results of an op whose data is float32) stay as computed. The op's
    ``backward`` is replaced on the instance by one that widens the outputs' gradients and
    rounds each bfloat16 input's gradient back to bfloat16.
    """
    low = tuple(r.dtype is BFLOAT16 for r in raw)
    out = op.forward(*[_widen(r) if b else r for r, b in zip(raw, low, strict=True)], **attrs)
    if low[0]:
        out = tuple(_narrow(o) for o in out) if type(out) is tuple else _narrow(out)
    op.backward = _backward_in_float32(op.backward, low)
    return out


def _backward_in_float32(backward: Callable[..., Any], low: tuple[bool, ...]) -> Any:
    def run(*out_grads: Any) -> Any:
        grads = backward(*[_widen(g) for g in out_grads])
        if isinstance(grads, tuple | list):
            back = [_narrow(g) if b else g for g, b in zip(grads, low, strict=False)]
            return type(grads)(back) if isinstance(grads, tuple) else back
        return _narrow(grads) if low[0] else grads

    return run
