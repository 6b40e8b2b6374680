"""The casts automatic mixed precision inserts: ``amp_cast`` and ``amp_multicast``.

Both touch only the floating types AMP works with (float32, float16, bfloat16): an input of
another type passes through unchanged, as in MXNet 1.9.1. Their gradients are cast back to
each input's own type. Casting to bfloat16 rounds to nearest even (``Cast`` instead drops the
low bits; see :func:`mxrs.nd.cast`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._bfloat16 import BFLOAT16, check_backend
from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = ["amp_cast", "amp_multicast"]

#: The types AMP casts between (MXNet's kFloat32, kFloat16, kBfloat16).
_AMP_TYPES = (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16)


def _is_amp_type(dtype: np.dtype) -> bool:
    return any(dtype == t for t in _AMP_TYPES)


class _AmpCast(Op):
    """A cast of each input to its own target type (None: unchanged); the gradients are cast
    back to the inputs' types."""

    bfloat16 = True
    keeps_inputs = False

    def forward(self, *arrays, targets):
        self.src = [a.dtype for a in arrays]
        with np.errstate(over="ignore"):  # a value too large for float16 becomes inf
            outs = tuple(
                a.copy() if t is None or t == a.dtype else a.astype(t)
                for a, t in zip(arrays, targets, strict=True)
            )
        return outs if len(outs) > 1 else outs[0]

    def backward(self, *out_grads):
        with np.errstate(over="ignore"):
            grads = tuple(
                None if g is None or not need else g.astype(s, copy=False)
                for g, s, need in zip(out_grads, self.src, self.needs, strict=True)
            )
        return grads if len(grads) > 1 else grads[0]


def amp_cast(data: ArrayT, dtype: DTypeLike) -> ArrayT:
    """Cast ``data`` to ``dtype`` when it is float32, float16 or bfloat16; other types pass
    through unchanged (a copy), as MXNet's AMP cast does.

    Parameters
    ----------
    data : NDArray
    dtype : str or numpy.dtype
        The target type, e.g. ``'float16'`` or ``'bfloat16'``.

    Raises
    ------
    MXNetError
        For bfloat16 on a GPU context.
    """
    dt = np.dtype(dtype)
    check_backend(data._ctx.backend.xp, dt, "amp_cast")
    target = dt if _is_amp_type(np.dtype(data.dtype)) else None
    return apply(_AmpCast, (data,), targets=(target,))


def _widest(dtypes: list[np.dtype], cast_narrow: bool) -> np.dtype:
    """MXNet's common type of ``amp_multicast``: float32 if any input is float32 (else the
    first input's type); with ``cast_narrow``, float16 or bfloat16 if any input is one (the
    last such input decides), else float32."""
    f32, f16 = np.dtype(np.float32), np.dtype(np.float16)
    common = f32 if cast_narrow else dtypes[0]
    for d in dtypes:
        if not cast_narrow and d == f32:
            common = f32
        elif cast_narrow and (d == f16 or d == BFLOAT16):
            common = d
    return common


def amp_multicast(
    *data: ArrayT, num_outputs: int | None = None, cast_narrow: bool = False
) -> list[ArrayT]:
    """Cast the float32, float16 and bfloat16 arrays among ``data`` to their common type (the
    widest, or with ``cast_narrow`` the narrowest); others pass through unchanged.

    Parameters
    ----------
    *data : NDArray
    num_outputs : int
        How many arrays ``data`` holds (MXNet's required count).
    cast_narrow : bool, default False
        Cast to float16/bfloat16 when one of them is among the inputs, instead of float32.

    Returns
    -------
    list of NDArray
        One array per input, in order.

    Raises
    ------
    MXNetError
        When ``num_outputs`` is missing or is not the number of arrays given.
    """
    if num_outputs is None or int(num_outputs) != len(data) or not data:
        raise MXNetError(
            f"amp_multicast: num_outputs ({num_outputs}) must be given and equal the number of "
            f"arrays ({len(data)})"
        )
    dtypes = [np.dtype(a.dtype) for a in data]
    common = _widest(dtypes, bool(cast_narrow))
    targets = tuple(common if _is_amp_type(d) else None for d in dtypes)
    out = apply(_AmpCast, data, targets=targets)
    return out if isinstance(out, list) else [out]
