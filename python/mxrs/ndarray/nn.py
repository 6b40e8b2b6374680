"""Neural-network layers that are not convolutions or normalisations: the softmax family
(softmin too), fused softmax cross-entropy, SoftmaxOutput, and Dropout.

Softmax and its cross-entropy are computed in one pass with the max subtracted, so they do not
overflow; the fused cross-entropy's backward is ``softmax - one_hot`` without forming the one-hot.
Dropout is active only in training mode (``autograd.record()`` or ``autograd.train_mode()``), or
always with ``mode='always'``. The normalisation layers (BatchNorm, LayerNorm...) are in
:mod:`.normalization`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels
from ..autograd import _state
from ..base import MXNetError
from . import unary
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index
from .core.rng import generator
from .reduce import sum as _sum
from .unary import _Identity

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = [
    "softmax",
    "log_softmax",
    "softmin",
    "softmax_cross_entropy",
    "softmax_ce_loss",
    "SoftmaxOutput",
    "SoftmaxActivation",
    "Dropout",
]


class _Softmax(Op):
    """Softmax along ``axis`` of ``x / temperature``, computed by a kernel provider."""

    log = False

    def forward(self, x, axis, temperature):
        k = kernels.select("log_softmax" if self.log else "softmax", self.be, x.dtype)
        y, self.grad = k.softmax(
            x, axis_index(axis, x.ndim), temperature, self.log, True in self.needs
        )
        return y

    def backward(self, g):
        return self.grad(g, self.needs)[0]


class _LogSoftmax(_Softmax):
    log = True


class _MaskedSoftmax(Op):
    """Softmax (or its logarithm) of each row's first ``length`` entries along ``axis``; the
    entries past them are 0 and get no gradient, as in MXNet's ``use_length``."""

    def forward(self, x, length, axis, temperature, log):
        xp = self.xp
        ax = axis_index(axis, x.ndim)
        rows = x.shape[:ax] + x.shape[ax + 1 :]
        if tuple(length.shape) != rows:
            raise MXNetError(
                f"softmax: length has shape {tuple(length.shape)}; with data of shape "
                f"{tuple(x.shape)} and axis={axis} it must be {rows}"
            )
        pos = xp.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)])
        mask = pos < xp.expand_dims(length.astype(np.int64), ax)
        z = xp.where(mask, x / temperature if temperature != 1.0 else x, -xp.inf)
        top = z.max(axis=ax, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0)  # a row of length 0: every entry masked
        z = z - top
        e = xp.exp(z)
        total = e.sum(axis=ax, keepdims=True)
        safe = xp.where(total > 0, total, 1)
        y = z - xp.log(safe) if log else e / safe
        y = xp.where(mask, y, 0).astype(x.dtype, copy=False)
        self.ax, self.t, self.log, self.y, self.mask = ax, temperature, log, y, mask
        return y

    def backward(self, g):
        xp, ax, y, mask = self.xp, self.ax, self.y, self.mask
        g = xp.where(mask, g, 0)
        if self.log:
            gx = g - xp.exp(y) * g.sum(axis=ax, keepdims=True)
        else:
            gx = y * (g - (g * y).sum(axis=ax, keepdims=True))
        gx = xp.where(mask, gx, 0)
        if self.t != 1.0:
            gx = gx / self.t
        return gx.astype(y.dtype, copy=False), None


def _softmax(
    data: ArrayT,
    length: ArrayT | None,
    axis: int,
    temperature: float | None,
    dtype: DTypeLike | None,
    use_length: bool,
    log: bool,
) -> ArrayT:
    name = "log_softmax" if log else "softmax"
    if dtype is not None and np.dtype(dtype) != data._data.dtype:
        data = unary.cast(data, dtype)
    t = float(temperature or 1.0)
    if use_length:
        if length is None:
            raise MXNetError(f"{name}: use_length=True needs the length input")
        return apply(_MaskedSoftmax, (data, length), axis=axis, temperature=t, log=log)
    return apply(_LogSoftmax if log else _Softmax, (data,), axis=axis, temperature=t)


def softmax(
    data: ArrayT,
    length: ArrayT | None = None,
    axis: int = -1,
    temperature: float | None = None,
    dtype: DTypeLike | None = None,
    use_length: bool = False,
    **kwargs: Any,
) -> ArrayT:
    """Softmax along ``axis``: ``exp(x/T) / sum(exp(x/T))``.

    Parameters
    ----------
    length : NDArray, optional
        With ``use_length``: how many leading entries along ``axis`` each row uses (integers,
        of ``data``'s shape without ``axis``); the entries past them are 0 and get no gradient.
    axis : int, default -1
    temperature : float, optional
        Divides the input first; 1 when None.
    dtype : {None, 'float16', 'float32', 'float64'}, optional
        The output dtype (the computation runs in it); ``data``'s when None.
    use_length : bool, default False
        Mask each row by ``length``.
    **kwargs
        Ignored (MXNet's ``name`` and ``out`` of generated operators).

    Raises
    ------
    MXNetError
        With ``use_length`` and no ``length``, or a ``length`` of the wrong shape.
    """
    return _softmax(data, length, axis, temperature, dtype, use_length, log=False)


def log_softmax(
    data: ArrayT,
    axis: int = -1,
    temperature: float | None = None,
    dtype: DTypeLike | None = None,
    use_length: bool = False,
    length: ArrayT | None = None,
    **kwargs: Any,
) -> ArrayT:
    """Logarithm of :func:`softmax`, computed stably; the parameters are :func:`softmax`'s
    (``length`` by keyword: MXNet's ``log_softmax`` takes ``axis`` second)."""
    return _softmax(data, length, axis, temperature, dtype, use_length, log=True)


def SoftmaxActivation(data: ArrayT, mode: str = "instance") -> ArrayT:
    """Softmax over axis 1 ('channel') or over each flattened instance ('instance')."""
    if mode == "channel":
        return softmax(data, axis=1)
    return softmax(data.reshape((data.shape[0], -1)), axis=-1).reshape(data.shape)


def softmin(
    data: ArrayT,
    axis: int = -1,
    temperature: float | None = None,
    dtype: DTypeLike | None = None,
    use_length: bool = False,
) -> ArrayT:
    """Softmin along ``axis``: ``exp(-x/T) / sum(exp(-x/T))``, :func:`softmax` of ``-data``.

    Parameters
    ----------
    axis : int, default -1
    temperature : float, optional
        Divides the input first; 1 when None.
    dtype : {None, 'float16', 'float32', 'float64'}, optional
        The output dtype (the computation runs in it); ``data``'s when None.
    use_length : bool, default False
        Must be False: ``nd.softmin`` takes no length input (as in MXNet).
    """
    if use_length:
        raise MXNetError("softmin: use_length=True needs a length input, which nd.softmin lacks")
    if dtype is not None and np.dtype(dtype) != data._data.dtype:
        data = unary.cast(data, dtype)
    return softmax(unary.negative(data), axis=axis, temperature=temperature)


class _SoftmaxCE(Op):
    """Per-position cross-entropy of softmax(pred) against labels, reduced along ``axis``.

    Works in a layout with ``axis`` last; the gradient is moved back at the end.
    """

    def forward(self, pred, label, axis, sparse, from_logits, keepdims):
        xp = self.xp
        moved = axis != pred.ndim - 1
        if moved:
            pred = xp.moveaxis(pred, axis, -1)
            if not sparse:
                label = xp.moveaxis(label, axis, -1)
        self.axis, self.moved, self.sparse, self.keepdims = axis, moved, sparse, keepdims
        self.from_logits = from_logits
        logp = pred if from_logits else kernels.portable.log_softmax(xp, pred, -1)
        self.logp = logp
        n = logp.shape[-1]
        if sparse:
            idx = xp.clip(label.astype(np.int64).reshape(-1), 0, n - 1)
            self.flat = xp.arange(idx.size, dtype=np.int64) * n + idx
            loss = -logp.reshape(-1)[self.flat].reshape(logp.shape[:-1])
        else:
            self.label = label
            loss = -(logp * label).sum(axis=-1)
        return xp.expand_dims(loss, axis) if keepdims else loss

    def backward(self, g):
        xp = self.xp
        if self.keepdims:
            g = g.squeeze(self.axis)
        g = g[..., None]
        gl = None
        if self.sparse:
            if self.from_logits:
                gx = xp.zeros(self.logp.shape, self.logp.dtype)
            else:
                gx = xp.ascontiguousarray(xp.exp(self.logp))
            flat = gx.reshape(-1)
            flat[self.flat] -= 1
            gx *= g
        else:
            lab = self.label
            if self.from_logits:
                gx = -lab * g
            else:
                gx = (xp.exp(self.logp) * lab.sum(axis=-1, keepdims=True) - lab) * g
            if self.needs[1]:
                gl = -self.logp * g
                if self.moved:
                    gl = xp.moveaxis(gl, -1, self.axis)
        if self.moved:
            gx = xp.moveaxis(gx, -1, self.axis)
        return (gx if self.needs[0] else None), gl


def softmax_ce_loss(
    pred: ArrayT,
    label: ArrayT,
    axis: int = -1,
    sparse_label: bool = True,
    from_logits: bool = False,
    keepdims: bool = True,
) -> ArrayT:
    """Fused softmax cross-entropy per position (mxrs extension used by Gluon's loss).

    Computes ``-pick(log_softmax(pred, axis), label, axis)`` (sparse labels) or
    ``-sum(log_softmax(pred, axis) * label, axis)`` (dense labels) in one op whose backward is
    ``softmax(pred) - label`` scaled by the incoming gradient.

    Parameters
    ----------
    pred : NDArray
        Scores (or log-probabilities when ``from_logits``).
    label : NDArray
        Class indices shaped like ``pred`` without ``axis`` (sparse), or ``pred``'s shape.
    keepdims : bool, default True
        Keep ``axis`` with length 1 in the result.
    """
    return apply(
        _SoftmaxCE,
        (pred, label),
        axis=axis_index(axis, pred.ndim),
        sparse=sparse_label,
        from_logits=from_logits,
        keepdims=keepdims,
    )


def softmax_cross_entropy(data: ArrayT, label: ArrayT) -> ArrayT:
    """Total cross-entropy of ``softmax(data)`` against class indices ``label``, shape (1,).

    Examples
    --------
    >>> x = mx.nd.array([[1, 2, 3], [11, 7, 5]])
    >>> mx.nd.softmax_cross_entropy(x, mx.nd.array([2, 0])).asnumpy()
    array([0.42818713], dtype=float32)
    """
    return _sum(softmax_ce_loss(data, label, axis=-1, keepdims=False))


class _SoftmaxOutput(Op):
    def forward(self, x, label, grad_scale, ignore_label, use_ignore, normalization, multi):
        xp = self.xp
        axis = 1 if multi else -1
        z = xp.exp(x - x.max(axis=axis, keepdims=True))
        z /= z.sum(axis=axis, keepdims=True)
        self.y, self.label, self.axis = z, label, axis
        self.cfg = (grad_scale, ignore_label, use_ignore, normalization)
        return z

    def backward(self, g):
        xp, y, axis = self.xp, self.y, self.axis
        grad_scale, ignore_label, use_ignore, norm = self.cfg
        lab = self.label.astype(np.int64)
        if lab.ndim == y.ndim - 1:
            # as MXNet: a label outside [0, classes) (-1 padding...) matches no class
            inside = (lab >= 0) & (lab < y.shape[axis])
            rows = xp.eye(y.shape[axis], dtype=y.dtype)[xp.where(inside, lab, 0)]
            onehot = xp.moveaxis(rows * inside[..., None], -1, axis)
        else:
            onehot = self.label
        gx = y - onehot
        valid = None
        if use_ignore:
            valid = xp.expand_dims(lab != ignore_label, axis)
            gx *= valid
        if norm == "batch":
            gx /= y.shape[0]
        elif norm == "valid":
            count = float(valid.sum()) if valid is not None else lab.size
            gx /= max(count, 1.0)
        return gx * grad_scale, None


def SoftmaxOutput(
    data: ArrayT,
    label: ArrayT,
    grad_scale: float = 1.0,
    ignore_label: float = -1.0,
    multi_output: bool = False,
    use_ignore: bool = False,
    normalization: str = "null",
    **kwargs: Any,
) -> ArrayT:
    """Softmax forward whose backward is the cross-entropy gradient ``softmax - one_hot(label)``
    (scaled by ``grad_scale``, ignoring the incoming gradient, as MXNet's output layer)."""
    return apply(
        _SoftmaxOutput,
        (data, label),
        grad_scale=grad_scale,
        ignore_label=ignore_label,
        use_ignore=use_ignore,
        normalization=normalization,
        multi=multi_output,
    )


class _Dropout(Op):
    def forward(self, x, p, axes):
        shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        # the generator is taken here, inside the dispatcher: a device whose sampler failed
        # fails the dropout too (see core.rng.fail_device)
        keep = self.be.uniform(generator(self.ctx), 0.0, 1.0, shape, x.dtype) >= p
        mask = keep.astype(x.dtype)
        mask *= 1.0 / (1.0 - p)
        self.mask = mask
        return x * mask

    def backward(self, g):
        return g * self.mask


def Dropout(
    data: ArrayT, p: float = 0.5, mode: str = "training", axes: Sequence[int] = (), **kwargs: Any
) -> ArrayT:
    """Randomly zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Active only in training mode unless ``mode='always'``; otherwise returns a copy of ``data``.
    ``axes`` lists axes along which one mask value is shared.
    """
    if not (mode == "always" or _state.training) or p <= 0:
        return apply(_Identity, (data,))
    if p >= 1:
        return data * 0
    return apply(
        _Dropout,
        (data,),
        p=float(p),
        axes={axis_index(a, data.ndim) for a in axes},
    )


class SoftmaxMethods(ArrayCore):
    """The softmax family as NDArray methods."""

    __slots__ = ()
    softmax = as_method(softmax)
    log_softmax = as_method(log_softmax)
    softmin = as_method(softmin)
