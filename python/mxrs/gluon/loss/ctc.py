"""Connectionist Temporal Classification loss (``gluon.loss.CTCLoss``) over ``F.CTCLoss``.

The blank is the last class (``C - 1``); labels are class indices ``0 .. C - 2``, padded with
``-1`` when no ``label_lengths`` are given.

Examples
--------
>>> loss = gluon.loss.CTCLoss()
>>> loss(mx.nd.ones((2, 20, 4)), mx.nd.array([[1, 0, -1, -1], [2, 1, 1, -1]])).shape
(2,)
"""

from __future__ import annotations

from typing import Any

from ...base import MXNetError
from ...ndarray import NDArray
from .core import Loss, _apply_weighting

__all__ = ["CTCLoss"]


class CTCLoss(Loss):
    r"""Connectionist Temporal Classification loss: ``-log p(label | pred)`` per sample, summed
    over all alignments of the label to the ``softmax``-normalised activations.

    The last class of ``pred`` is the blank; labels hold class indices ``0 .. C-2``, padded with
    ``-1`` (or cut by ``label_lengths``).

    Parameters
    ----------
    layout : {'NTC', 'TNC'}, default 'NTC'
        Layout of ``pred``: batch, time and class axes.
    label_layout : {'NT', 'TN'}, default 'NT'
        Layout of ``label``; its batch axis is the loss's ``batch_axis``.
    weight : float, optional
        Global scalar weight of the loss.

    Notes
    -----
    Inputs: ``pred``, ``label``, ``pred_lengths`` (optional, ``(N,)``: steps used per sample),
    ``label_lengths`` (optional, ``(N,)``), ``sample_weight`` (optional). Output: ``(N,)``.
    """

    def __init__(
        self,
        layout: str = "NTC",
        label_layout: str = "NT",
        weight: float | None = None,
        **kwargs: Any,
    ) -> None:
        if layout not in ("NTC", "TNC"):
            raise MXNetError(f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        if label_layout not in ("NT", "TN"):
            raise MXNetError(
                f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}"
            )
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(
        self,
        F: Any,
        pred: NDArray,
        label: NDArray,
        pred_lengths: NDArray | None = None,
        label_lengths: NDArray | None = None,
        sample_weight: NDArray | None = None,
    ) -> NDArray:
        """Return the per-sample loss, shape ``(N,)``."""
        if isinstance(pred, NDArray):
            self._check(pred, label)
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        loss = F.CTCLoss(
            pred,
            label,
            pred_lengths,
            label_lengths,
            use_data_lengths=pred_lengths is not None,
            use_label_lengths=label_lengths is not None,
            blank_label="last",
        )
        return _apply_weighting(F, loss, self._weight, sample_weight)

    def _check(self, pred: NDArray, label: NDArray) -> None:
        if pred.ndim != 3:
            raise MXNetError(f"CTCLoss: pred must be 3-D ({self._layout}), got shape {pred.shape}")
        if label.ndim != 2:
            raise MXNetError(
                f"CTCLoss: label must be 2-D ({self._label_layout}), got shape {label.shape}"
            )
        n_pred = pred.shape[self._layout.find("N")]
        n_label = label.shape[self._batch_axis]
        if n_pred != n_label:
            raise MXNetError(f"CTCLoss: pred holds {n_pred} samples but label {n_label}")
