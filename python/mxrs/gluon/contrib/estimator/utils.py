"""Private checks shared by the estimator and its handlers: metric lists and metric references."""

from __future__ import annotations

from typing import Any

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__: list[str] = []


def _check_metrics(metrics: Any) -> list[EvalMetric]:
    """Return ``metrics`` as a flat list of metrics (a composite is opened into its parts)."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(m, EvalMetric) for m in metrics):
        raise ValueError(
            "metrics must be a Metric or a list of Metric, "
            f"refer to mxnet.metric.EvalMetric: {metrics}"
        )
    return metrics


def _check_metric_known(handler: object, metric: Any, known: list[EvalMetric]) -> None:
    """Raise ValueError when ``metric`` is none of the estimator's own metric objects."""
    if not any(metric is k for k in known):
        raise ValueError(
            f"Event handler {type(handler).__name__} refers to a metric instance {metric} "
            "outside of the known training and validation metrics. Please use the metrics "
            "from estimator.train_metrics and estimator.val_metrics instead."
        )


def _check_handler_metric_ref(handler: object, known: list[EvalMetric]) -> None:
    """Check every metric a handler holds (attributes named ``*metric*``) is a known one."""
    for attribute in dir(handler):
        if "metric" not in attribute:
            continue
        reference = getattr(handler, attribute)
        if not reference or callable(reference):
            continue
        for metric in reference if isinstance(reference, list) else [reference]:
            _check_metric_known(handler, metric, known)


def _suggest_metric_for_loss(loss: object) -> EvalMetric | None:
    """The metric to add by default for ``loss``: accuracy for softmax cross-entropy."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
