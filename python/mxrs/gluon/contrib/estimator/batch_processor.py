"""``BatchProcessor``: how an estimator trains and evaluates on one batch."""

from __future__ import annotations

from typing import Any

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """Runs the forward (and backward) pass of an :class:`Estimator` on one batch.

    Subclass it and override :meth:`fit_batch` or :meth:`evaluate_batch` to customize a step;
    pass the instance as ``Estimator(..., batch_processor=...)``.
    """

    def _get_data_and_label(
        self, batch: Any, ctx: list[Any], batch_axis: int = 0
    ) -> tuple[list[Any], list[Any]]:
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(
        self, estimator: Any, val_batch: Any, batch_axis: int = 0
    ) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        """Evaluate ``estimator.val_net`` and ``estimator.val_loss`` on one validation batch.

        Parameters
        ----------
        estimator : Estimator
            The estimator whose validation network and loss run.
        val_batch : tuple
            ``(data, label)`` from the validation data loader.
        batch_axis : int, default 0
            Axis along which the batch is split over the estimator's devices.

        Returns
        -------
        tuple of list
            ``(data, label, pred, loss)``, one entry per device.
        """
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(p, y) for p, y in zip(pred, label, strict=True)]
        return data, label, pred, loss

    def fit_batch(
        self, estimator: Any, train_batch: Any, batch_axis: int = 0
    ) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        """Run forward and backward of ``estimator.net`` and ``estimator.loss`` on one batch.

        The gradients are left in the parameters; the optimizer step is the job of
        :class:`GradientUpdateHandler`.

        Parameters
        ----------
        estimator : Estimator
            The estimator whose network and loss run.
        train_batch : tuple
            ``(data, label)`` from the training data loader.
        batch_axis : int, default 0
            Axis along which the batch is split over the estimator's devices.

        Returns
        -------
        tuple of list
            ``(data, label, pred, loss)``: the shards of data and label (from
            :func:`~mxrs.gluon.utils.split_and_load`), the predictions and the losses.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(p, y) for p, y in zip(pred, label, strict=True)]
        for value in loss:
            value.backward()
        return data, label, pred, loss
