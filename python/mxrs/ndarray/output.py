"""Output (loss) layers of the symbolic API: their forward is a prediction, their backward the
loss's gradient, whatever gradient reaches them (as MXNet's output operators).

``LinearRegressionOutput`` (squared loss), ``LogisticRegressionOutput`` (sigmoid + log loss),
``MAERegressionOutput`` (absolute loss) give ``grad_scale / m * d(out, label)`` with ``m`` the
number of outputs per example; ``MakeLoss`` turns any array into a loss whose gradient is
``grad_scale`` (normalised by the batch or by the valid entries).
"""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = [
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
    "MakeLoss",
    "make_loss",
]


class _Regression(Op):
    def forward(self, x, label, kind, grad_scale):
        if label.size != x.size:
            raise MXNetError(
                f"{kind}RegressionOutput: label shape {label.shape} does not match the data's "
                f"{x.shape}"
            )
        xp = self.xp
        y = 0.5 * (1 + xp.tanh(x * 0.5)) if kind == "Logistic" else x.copy()
        self.y, self.label, self.kind = y, label.reshape(x.shape), kind
        per_example = x.size // x.shape[0] if x.ndim and x.shape[0] else 1
        self.scale = grad_scale / per_example
        return y

    def backward(self, g):
        d = self.y - self.label
        if self.kind == "MAE":
            d = self.xp.sign(d)
        gx = (d * self.scale).astype(self.y.dtype, copy=False)
        return gx, (self.xp.zeros_like(self.label) if self.needs[1] else None)


def _regression(kind: str, data: ArrayT, label: ArrayT, grad_scale: float) -> ArrayT:
    return apply(_Regression, (data, label), kind=kind, grad_scale=float(grad_scale))


def LinearRegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """Identity forward; backward ``grad_scale / m * (data - label)`` (squared loss), with
    ``m`` the outputs per example; the incoming gradient is ignored."""
    return _regression("Linear", data, label, grad_scale)


def LogisticRegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """``sigmoid(data)`` forward; backward ``grad_scale / m * (sigmoid(data) - label)``."""
    return _regression("Logistic", data, label, grad_scale)


def MAERegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """Identity forward; backward ``grad_scale / m * sign(data - label)`` (absolute loss)."""
    return _regression("MAE", data, label, grad_scale)


class _MakeLoss(Op):
    def forward(self, x, grad_scale, valid_thresh, normalization):
        xp = self.xp
        if normalization == "batch":
            # MXNet divides by the size without the last axis (the batch for 2-D data)
            scale = grad_scale / max(x.size // x.shape[-1], 1) if x.ndim else grad_scale
        elif normalization == "valid":
            scale = grad_scale / max(int((x > valid_thresh).sum()), 1)
        elif normalization == "null":
            scale = grad_scale
        else:
            raise MXNetError(
                f"MakeLoss: normalization must be 'null', 'batch' or 'valid', not {normalization!r}"
            )
        self.grad = xp.full(x.shape, scale, x.dtype)
        return x.copy()

    def backward(self, g):
        return self.grad


def MakeLoss(
    data: ArrayT,
    grad_scale: float = 1.0,
    valid_thresh: float = 0.0,
    normalization: str = "null",
    **kwargs: Any,
) -> ArrayT:
    """Mark ``data`` as a loss: identity forward, backward ``grad_scale`` everywhere; with
    ``normalization='batch'`` divided by the number of rows (the size without the last axis),
    with ``'valid'`` by the number of entries above ``valid_thresh``. The incoming gradient is
    ignored."""
    return apply(
        _MakeLoss,
        (data,),
        grad_scale=float(grad_scale),
        valid_thresh=float(valid_thresh),
        normalization=normalization,
    )


make_loss = MakeLoss
