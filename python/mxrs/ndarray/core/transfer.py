"""Moving array data between contexts: raw moves, and the recorded copy behind ``copyto``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._bfloat16 import BFLOAT16, check_backend
from ..._failure import ComputeError, propagate
from ...autograd import _state
from .array import ArrayCore, ArrayT
from .op import Op

if TYPE_CHECKING:
    from ..._typing import DTypeLike
    from ...context import Context

__all__ = ["move_data", "to_context", "to_raw"]


def move_data(data: Any, src: Context, dst: Context) -> Any:
    """Return raw ``data`` of context ``src`` as an array of ``dst``'s library and device.

    Between CPU contexts the data itself is returned (they share host memory); otherwise a copy.
    """
    sbe, dbe = src.backend, dst.backend
    if sbe is dbe and dbe.xp is np:
        return data
    check_backend(dbe.xp, data.dtype, f"copying to {dst}")
    host = sbe.to_host(data) if dbe is not sbe else data
    return dbe.asarray(host, data.dtype, dst.device_id)


class _ToContext(Op):
    def forward(self, x, src, dst):
        self.src, self.dst = src, dst
        out = move_data(x, src, dst)
        return out.copy() if out is x else out

    def backward(self, g):
        return move_data(g, self.dst, self.src)


def to_context(x: ArrayT, ctx: Context) -> ArrayT:
    """Copy array ``x`` to ``ctx`` as a recorded op (gradients flow back to ``x``'s context);
    the copy of a failed array fails with its failure."""
    op = _ToContext()
    sbe = x._ctx.backend
    op.xp, op.be, op.ctx = sbe.xp, sbe, x._ctx
    try:  # free while nothing fails
        data = x._data
    except ComputeError as err:
        return _copy_failed(err, x, ctx)
    out = x._new(op.forward(data, x._ctx, ctx), ctx)
    if _state.recording and x._needs_grad():
        op.needs = (True,)
        op.inputs = (x,)
        out._node = op
    return out


def _copy_failed(err: ComputeError, x: ArrayT, ctx: Context) -> ArrayT:
    """:func:`to_context` read a failed array: the copy fails with it."""
    return propagate(err, lambda: to_context(x, ctx))


def to_raw(source: Any, ctx: Context, dtype: DTypeLike | None = None) -> Any:
    """Return ``source`` (array_like or NDArray) as raw data of ``ctx``'s library and device.

    The element type is ``dtype``, else the source's for an NDArray, else float32; a scalar
    becomes a 1-element array. Values become bfloat16 through float32 (rounded to nearest
    even), as ``amp_cast`` of a float32 array makes them.

    Raises
    ------
    MXNetError
        For bfloat16 on a GPU context.
    """
    be = ctx.backend
    dt = None if dtype is None else np.dtype(dtype)
    check_backend(be.xp, dt, "creating an array")
    if isinstance(source, ArrayCore):
        dt = source._data.dtype if dt is None else dt
        data = move_data(source._data, source._ctx, ctx)
        if dt is BFLOAT16 and data.dtype is not BFLOAT16:
            return data.astype(np.float32).astype(BFLOAT16)
        return be.asarray(data, dt, ctx.device_id)
    if dt is BFLOAT16 and getattr(source, "dtype", None) is not BFLOAT16:
        data = be.asarray(source, np.dtype(np.float32), ctx.device_id).astype(BFLOAT16)
    else:
        data = be.asarray(source, np.dtype(np.float32) if dt is None else dt, ctx.device_id)
    return data.reshape(1) if data.ndim == 0 else data
