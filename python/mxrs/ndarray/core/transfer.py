"""Moving array data between contexts: raw moves, and the recorded copy behind ``copyto``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

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
    """Copy array ``x`` to ``ctx`` as a recorded op (gradients flow back to ``x``'s context)."""
    op = _ToContext()
    sbe = x._ctx.backend
    op.xp, op.be, op.ctx = sbe.xp, sbe, x._ctx
    out = x._new(op.forward(x._data, x._ctx, ctx), ctx)
    if _state.recording and x._needs_grad():
        op.needs = (True,)
        op.inputs = (x,)
        out._node = op
    return out


def to_raw(source: Any, ctx: Context, dtype: DTypeLike | None = None) -> Any:
    """Return ``source`` (array_like or NDArray) as raw data of ``ctx``'s library and device.

    The element type is ``dtype``, else the source's for an NDArray, else float32; a scalar
    becomes a 1-element array.
    """
    be = ctx.backend
    if isinstance(source, ArrayCore):
        dt = source._data.dtype if dtype is None else np.dtype(dtype)
        return be.asarray(move_data(source._data, source._ctx, ctx), dt, ctx.device_id)
    data = be.asarray(source, np.dtype(np.float32 if dtype is None else dtype), ctx.device_id)
    return data.reshape(1) if data.ndim == 0 else data
