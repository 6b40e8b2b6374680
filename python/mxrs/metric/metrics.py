"""The metrics: accuracy, top-k accuracy, cross-entropy, regression errors, loss, custom."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy

from ..base import MXNetError
from ..ndarray import NDArray
from .base import (
    CustomMetric,
    EvalMetric,
    _host,
    _is_array,
    alias,
    check_label_shapes,
    register,
)

__all__ = [
    "Accuracy",
    "TopKAccuracy",
    "CrossEntropy",
    "NegativeLogLikelihood",
    "MAE",
    "MSE",
    "RMSE",
    "Loss",
    "np",
]


# ----------------------------------------------------------------- classification
@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions that equal the labels.

    Predictions with the labels' shape are class ids; otherwise the class is the argmax over
    ``axis`` (taken on the predictions' own device).

    Parameters
    ----------
    axis : int, default 1
        The class axis of the predictions.
    name : str, default 'accuracy'
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        axis: int = 1,
        name: str = "accuracy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name,
            axis=axis,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        """Count the correct predictions of each (label, prediction) pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            if pred.shape != label.shape:
                if isinstance(pred, NDArray):
                    xp = pred._ctx.backend.xp
                    with pred._ctx.backend.guard(pred._ctx.device_id):
                        pred = pred._ctx.backend.to_host(xp.argmax(pred._data, axis=self.axis))
                else:
                    pred = numpy.argmax(_host(pred), axis=self.axis)
            pred = _host(pred).astype("int32").ravel()
            label = _host(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of labels among the ``top_k`` highest-scored classes.

    Predictions are ``(batch, classes)`` scores; 1-D predictions are taken as class ids.

    Parameters
    ----------
    top_k : int, default 1
        How many of the best classes count (MXNet requires more than 1; 1 is accuracy here).
    name : str, default 'top_k_accuracy'
        ``'_<top_k>'`` is appended.
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        top_k: int = 1,
        name: str = "top_k_accuracy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name,
            top_k=top_k,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        if int(top_k) < 1:
            raise MXNetError(f"top_k must be at least 1, got {top_k}")
        self.top_k = int(top_k)
        self._base_name = self.name
        self.name += f"_{self.top_k}"

    def get_config(self) -> dict[str, Any]:
        """As :meth:`EvalMetric.get_config`, with the name given (before ``_<top_k>``)."""
        config = super().get_config()
        config["name"] = self._base_name
        return config

    def update(self, labels: Any, preds: Any) -> None:
        """Count the labels found among each prediction's ``top_k`` classes."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            scores = _host(pred).astype("float32")
            if scores.ndim > 2:
                raise MXNetError(
                    f"TopKAccuracy: predictions should be no more than 2 dims, "
                    f"got shape {scores.shape}"
                )
            label = _host(label).astype("int32")
            check_label_shapes(label, scores)
            if scores.ndim == 1:
                correct = int((scores.astype("int32") == label.ravel()).sum())
            else:
                k = min(self.top_k, scores.shape[1])
                top = numpy.argpartition(scores, -k, axis=1)[:, -k:]
                correct = int((top == label.reshape(-1, 1)).sum())
            self._add(correct, scores.shape[0])


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean cross-entropy ``-log(p[label] + eps)`` of predicted class probabilities.

    Parameters
    ----------
    eps : float, default 1e-12
        Added to each probability before the log.
    name : str, default 'cross-entropy'
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        eps: float = 1e-12,
        name: str = "cross-entropy",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name, eps=eps, output_names=output_names, label_names=label_names, has_global_stats=True
        )
        self.eps = eps

    def update(self, labels: Any, preds: Any) -> None:
        """Add ``-log(p[label] + eps)`` of each sample."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label, pred = _host(label).ravel(), _host(pred)
            n = pred.shape[0]
            if label.shape[0] != n:
                raise MXNetError(f"{self.name}: {label.shape[0]} labels for {n} predictions")
            prob = pred[numpy.arange(n, dtype=numpy.int64), label.astype(numpy.int64)]
            self._add(float((-numpy.log(prob + self.eps)).sum()), n)


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Mean negative log-likelihood of the labels: :class:`CrossEntropy` named ``'nll-loss'``."""

    def __init__(
        self,
        eps: float = 1e-12,
        name: str = "nll-loss",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


# ----------------------------------------------------------------- regression
class _PerBatch(EvalMetric):
    """A regression metric that adds one value per (label, prediction) pair.

    1-D labels and predictions become ``(n, 1)`` columns first, as in MXNet (so a 1-D label
    against ``(n, k)`` predictions broadcasts over the columns).
    """

    def __init__(
        self,
        name: str,
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def update(self, labels: Any, preds: Any) -> None:
        """Add this metric's value of each (label, prediction) pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label, pred = _host(label), _host(pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(float(self._value(label - pred)), 1)

    @staticmethod
    def _value(diff: Any) -> Any:
        """The metric's value for one batch of ``label - pred`` (subclasses implement this)."""
        raise NotImplementedError


@register
class MAE(_PerBatch):
    """Mean absolute error, averaged per batch (each pair adds one instance)."""

    def __init__(
        self,
        name: str = "mae",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(diff: Any) -> Any:
        return numpy.abs(diff).mean()


@register
class MSE(_PerBatch):
    """Mean squared error, averaged per batch (each pair adds one instance)."""

    def __init__(
        self,
        name: str = "mse",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(diff: Any) -> Any:
        return (diff**2.0).mean()


@register
class RMSE(_PerBatch):
    """Root mean squared error, averaged per batch (each pair adds one instance)."""

    def __init__(
        self,
        name: str = "rmse",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(diff: Any) -> Any:
        return numpy.sqrt((diff**2.0).mean())


@register
@alias("loss")
class Loss(EvalMetric):
    """The mean of loss values: ``update`` ignores labels and averages every element of preds."""

    def __init__(
        self,
        name: str = "loss",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def update(self, _: Any, preds: Any) -> None:
        """Add the sum and the count of the loss values in ``preds``."""
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            if isinstance(pred, NDArray):
                be = pred._ctx.backend
                with be.guard(pred._ctx.device_id):
                    total = float(be.xp.sum(pred._data))
            else:
                total = float(numpy.sum(_host(pred)))
            self._add(total, pred.size)


def np(
    numpy_feval: Callable[[Any, Any], Any],
    name: str | None = None,
    allow_extra_outputs: bool = False,
) -> CustomMetric:
    """Create a :class:`CustomMetric` from a function of NumPy ``(label, pred)``.

    Examples
    --------
    >>> def mean_abs(label, pred):
    ...     return abs(label - pred).mean()
    >>> metric = mx.metric.np(mean_abs)
    >>> metric.name
    'mean_abs'
    """

    def feval(label: Any, pred: Any) -> Any:
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
