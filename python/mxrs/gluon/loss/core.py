"""The ``Loss`` base class, its weighting, and the classic losses (L1, L2, cross-entropies,
KL divergence, Huber, hinge, logistic)."""

from __future__ import annotations

import numbers
from typing import Any, cast

from ...base import MXNetError
from ...ndarray import NDArray
from ..block import HybridBlock

__all__ = [
    "Loss",
    "L2Loss",
    "L1Loss",
    "SoftmaxCrossEntropyLoss",
    "SoftmaxCELoss",
    "SigmoidBinaryCrossEntropyLoss",
    "SigmoidBCELoss",
    "KLDivLoss",
    "HuberLoss",
    "HingeLoss",
    "SquaredHingeLoss",
    "LogisticLoss",
]


def _apply_weighting(
    F: Any, loss: NDArray, weight: float | None = None, sample_weight: NDArray | None = None
) -> NDArray:
    """Multiply ``loss`` by ``sample_weight`` (broadcast) and by the scalar ``weight``."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise MXNetError(f"weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F: Any, x: NDArray, y: NDArray) -> NDArray:
    """``x`` in ``y``'s shape (on Symbols, whose shapes are not known yet, a reshape_like node)."""
    return x.reshape(y.shape) if isinstance(x, NDArray) else F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class of losses.

    Parameters
    ----------
    weight : float or None
        Global scalar weight of the loss.
    batch_axis : int
        The axis holding the samples; the loss is averaged over all the others.
    """

    def __init__(self, weight: float | None, batch_axis: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def hybrid_forward(self, F: Any, x: NDArray, *args: Any, **kwargs: Any) -> NDArray:
        """Compute the loss (subclasses implement this)."""
        raise NotImplementedError


class L2Loss(Loss):
    r"""Squared error: ``0.5 * weight * (pred - label)**2``, averaged per sample.

    Parameters
    ----------
    weight : float, default 1.0
    batch_axis : int, default 0
    """

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, cast(float, self._weight) / 2, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L1Loss(Loss):
    r"""Absolute error: ``weight * |pred - label|``, averaged per sample.

    Parameters
    ----------
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(self, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SigmoidBinaryCrossEntropyLoss(Loss):
    r"""Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` with ``from_sigmoid``).

    From logits it uses the stable form ``max(x, 0) - x*z + log(1 + exp(-|x|))``; with
    ``pos_weight`` the positive term is weighted:
    ``x - x*z + (1 + z*(pos_weight - 1)) * (log(1 + exp(-|x|)) + max(-x, 0))``.

    Parameters
    ----------
    from_sigmoid : bool, default False
        ``pred`` already holds probabilities.
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(
        self,
        from_sigmoid: bool = False,
        weight: float | None = None,
        batch_axis: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(
        self,
        F: Any,
        pred: NDArray,
        label: NDArray,
        sample_weight: NDArray | None = None,
        pos_weight: NDArray | None = None,
    ) -> NDArray:
        """Return the per-sample loss; ``pos_weight`` broadcasts against ``label``."""
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1.0 - pred + eps) * (1.0 - label))
            else:
                loss = -(
                    F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                    + F.log(1.0 - pred + eps) * (1.0 - label)
                )
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    r"""Cross-entropy of ``softmax(pred)`` along ``axis`` against class indices or
    distributions: ``-log_softmax(pred)[label]`` (sparse) or ``-sum(label * log_softmax(pred))``.

    Computed in one fused op whose backward is ``softmax(pred) - label``.

    Parameters
    ----------
    axis : int, default -1
        The class axis.
    sparse_label : bool, default True
        Labels are class indices (else probability distributions shaped like ``pred``).
    from_logits : bool, default False
        ``pred`` already holds log-probabilities.
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(
        self,
        axis: int = -1,
        sparse_label: bool = True,
        from_logits: bool = False,
        weight: float | None = None,
        batch_axis: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        if not self._sparse_label:
            label = _reshape_like(F, label, pred)
        loss = F.softmax_ce_loss(
            pred,
            label,
            axis=self._axis,
            sparse_label=self._sparse_label,
            from_logits=self._from_logits,
            keepdims=True,
        )
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    r"""Kullback-Leibler divergence ``label * (log(label + 1e-12) - log_pred)``.

    Parameters
    ----------
    from_logits : bool, default True
        ``pred`` holds log-probabilities (else ``log_softmax`` is applied along ``axis``).
    axis : int, default -1
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(
        self,
        from_logits: bool = True,
        axis: int = -1,
        weight: float | None = None,
        batch_axis: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        if not self._from_logits:
            pred = F.log_softmax(pred, self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class HuberLoss(Loss):
    r"""Smoothed L1: ``|d| - rho/2`` where ``|d| > rho``, else ``d**2 / (2*rho)``.

    Parameters
    ----------
    rho : float, default 1
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(
        self, rho: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class HingeLoss(Loss):
    r"""Hinge loss ``max(0, margin - pred * label)`` for labels in {-1, 1}.

    Parameters
    ----------
    margin : float, default 1
    weight : float, optional
    batch_axis : int, default 0
    """

    def __init__(
        self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SquaredHingeLoss(Loss):
    r"""Squared hinge loss ``max(0, margin - pred * label)**2`` for labels in {-1, 1}."""

    def __init__(
        self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class LogisticLoss(Loss):
    r"""Logistic loss ``log(1 + exp(-pred * label))`` for labels in {-1, 1} ('signed') or
    {0, 1} ('binary').

    Parameters
    ----------
    weight : float, optional
    batch_axis : int, default 0
    label_format : {'signed', 'binary'}, default 'signed'
    """

    def __init__(
        self,
        weight: float | None = None,
        batch_axis: int = 0,
        label_format: str = "signed",
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise MXNetError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(
        self, F: Any, pred: NDArray, label: NDArray, sample_weight: NDArray | None = None
    ) -> NDArray:
        """Return the per-sample loss."""
        label = _reshape_like(F, label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)
