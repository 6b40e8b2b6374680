"""Variable-length sequence ops: ``SequenceMask``, ``SequenceLast`` and ``SequenceReverse``.

``data`` is laid out ``(max_len, batch, ...)`` (``axis=0``) or ``(batch, max_len, ...)``
(``axis=1``); with ``use_sequence_length`` the 1-D ``sequence_length`` gives each batch entry's
length (truncated to an integer). Lengths become attributes of the op, so all three are linear
in ``data`` and pass no gradient to ``sequence_length`` (MXNet gives it zeros). A length outside
``[1, max_len]`` is clipped into it for ``SequenceLast`` (MXNet reads out of bounds there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply
from .unary import _Identity

__all__ = ["SequenceMask", "SequenceLast", "SequenceReverse"]


def _lengths(
    op: str, data: ArrayT, sequence_length: ArrayT | None, use: bool, axis: int, axes: tuple
) -> Any:
    """The raw lengths array (made int64 by the op), or None when not used."""
    if axis not in axes:
        raise MXNetError(f"{op}: axis must be {' or '.join(map(str, axes))}, not {axis}")
    if data.ndim < 2:
        raise MXNetError(
            f"{op}: data needs at least 2 dimensions (time and batch), not {data.ndim}"
        )
    if not use:
        return None
    if sequence_length is None:
        raise MXNetError(f"{op}: use_sequence_length=True needs sequence_length")
    batch = data.shape[1 - axis]
    if sequence_length.ndim != 1 or sequence_length.shape[0] != batch:
        raise MXNetError(
            f"{op}: sequence_length of shape {sequence_length.shape} does not match the batch of "
            f"{batch} in data of shape {data.shape}"
        )
    if sequence_length._ctx != data._ctx:
        raise MXNetError(f"{op}: sequence_length on {sequence_length._ctx} for data on {data._ctx}")
    return sequence_length._data


def _expand(m: Any, ndim: int) -> Any:
    return m.reshape(m.shape + (1,) * (ndim - m.ndim))


class _SeqMask(Op):
    def forward(self, x, lengths, axis, value):
        xp = self.xp
        lengths = lengths.astype(np.int64)
        steps = xp.arange(x.shape[axis])
        keep = steps[:, None] < lengths[None, :] if axis == 0 else steps[None, :] < lengths[:, None]
        self.keep = _expand(keep, x.ndim)
        return xp.where(self.keep, x, xp.asarray(value, dtype=x.dtype))

    def backward(self, g):
        return g * self.keep


def SequenceMask(
    data: ArrayT,
    sequence_length: ArrayT | None = None,
    use_sequence_length: bool = False,
    value: float = 0.0,
    axis: int = 0,
) -> ArrayT:
    """Set the steps past each sequence's length to ``value``.

    Parameters
    ----------
    data : NDArray
        ``(max_len, batch, ...)`` for ``axis=0``, ``(batch, max_len, ...)`` for ``axis=1``.
    sequence_length : NDArray, optional
        Shape ``(batch,)``; used only with ``use_sequence_length``.
    use_sequence_length : bool, default False
        Without it the data is returned unchanged (a copy).
    value : float, default 0
    axis : {0, 1}, default 0
        The time axis.
    """
    lengths = _lengths("SequenceMask", data, sequence_length, use_sequence_length, axis, (0, 1))
    if lengths is None:
        return apply(_Identity, (data,))
    return apply(_SeqMask, (data,), lengths=lengths, axis=axis, value=float(value))


class _SeqLast(Op):
    def forward(self, x, lengths, axis):
        xp = self.xp
        self.shape, self.dtype, self.axis = x.shape, x.dtype, axis
        steps, batch = x.shape[axis], x.shape[1 - axis]
        if lengths is None:
            last = xp.full((batch,), steps - 1, dtype=np.int64)
        else:
            last = xp.clip(lengths.astype(np.int64) - 1, 0, steps - 1)
        self.key = (
            (last, self.xp.arange(x.shape[1]))
            if axis == 0
            else (
                self.xp.arange(x.shape[0]),
                last,
            )
        )
        return x[self.key]

    def backward(self, g):
        dx = self.xp.zeros(self.shape, self.dtype)
        dx[self.key] = g
        return dx


def SequenceLast(
    data: ArrayT,
    sequence_length: ArrayT | None = None,
    use_sequence_length: bool = False,
    axis: int = 0,
) -> ArrayT:
    """Take each sequence's last step: the result drops the time axis ``axis``.

    Parameters as :func:`SequenceMask`; without ``use_sequence_length`` every sequence ends at
    the last step.
    """
    lengths = _lengths("SequenceLast", data, sequence_length, use_sequence_length, axis, (0, 1))
    return apply(_SeqLast, (data,), lengths=lengths, axis=axis)


class _SeqReverse(Op):
    def forward(self, x, lengths):
        xp = self.xp
        steps = xp.arange(x.shape[0])[:, None]
        if lengths is None:
            n = xp.full((1, x.shape[1]), x.shape[0], dtype=np.int64)
        else:
            n = xp.clip(lengths.astype(np.int64), 0, x.shape[0])[None, :]
        src = xp.where(steps < n, n - 1 - steps, steps)
        self.key = (src, xp.arange(x.shape[1])[None, :])
        return x[self.key]

    def backward(self, g):
        return g[self.key]  # reversing a prefix is its own inverse


def SequenceReverse(
    data: ArrayT,
    sequence_length: ArrayT | None = None,
    use_sequence_length: bool = False,
    axis: int = 0,
) -> ArrayT:
    """Reverse each sequence's first ``length`` steps along axis 0 (the steps past it stay).

    Parameters as :func:`SequenceMask`, but only ``axis=0`` is supported (as in MXNet).
    """
    lengths = _lengths("SequenceReverse", data, sequence_length, use_sequence_length, axis, (0,))
    return apply(_SeqReverse, (data,), lengths=lengths)
