"""The event handlers an :class:`~.estimator.Estimator` calls during ``fit`` and ``evaluate``.

Each handler inherits the mixins of the events it reacts to (:class:`TrainBegin`,
:class:`EpochBegin`, :class:`BatchBegin`, :class:`BatchEnd`, :class:`EpochEnd`,
:class:`TrainEnd`) and carries a ``priority``: lower runs first. The defaults order one batch's
end as gradient update (-2000), metric update and validation (-1000), user handlers (0), logging
(last, ``inf``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as _LossMetric
from ._checkpoint import CheckpointHandler
from ._mixins import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    EventHandler,
    TrainBegin,
    TrainEnd,
    _check_event_handlers,
)
from ._monitor import _monitor_op, _monitored, _worst
from .utils import _check_metrics

__all__ = [
    "TrainBegin",
    "TrainEnd",
    "EpochBegin",
    "EpochEnd",
    "BatchBegin",
    "BatchEnd",
    "StoppingHandler",
    "MetricHandler",
    "ValidationHandler",
    "LoggingHandler",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "GradientUpdateHandler",
]

# Re-exported for the estimator (and for code that reaches them here, as in MXNet).
_ = (EventHandler, _check_event_handlers)


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stop training once ``max_epoch`` epochs or ``max_batch`` batches are done.

    ``train_begin`` reads both limits from the estimator (``fit``'s ``epochs``/``batches``).

    Parameters
    ----------
    max_epoch : int, optional
        Epochs to train.
    max_batch : int, optional
        Batches to train.
    """

    def __init__(self, max_epoch: int | None = None, max_batch: int | None = None) -> None:
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Take the limits from ``estimator`` and reset the counters."""
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Count a batch; ``True`` once ``max_batch`` is reached."""
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Count an epoch; ``True`` once ``max_epoch`` is reached (or the batch limit was)."""
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Reset metrics at each epoch's start and update them with every batch's results.

    A :class:`mxrs.metric.Loss` is updated with the loss values, every other metric with
    ``(label, pred)``.

    Parameters
    ----------
    metrics : EvalMetric or list of EvalMetric
        Metrics to update.
    priority : float, default -1000
        Runs before the default handlers that read the metrics.
    """

    def __init__(self, metrics: Any, priority: float = -1000) -> None:
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset every metric."""
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Update every metric with the batch's ``pred``, ``label`` and ``loss`` keywords."""
        for metric in self.metrics:
            if isinstance(metric, _LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])
        return False


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Run an evaluation function every few epochs (and optionally batches) of training.

    Parameters
    ----------
    val_data : DataLoader
        Validation data.
    eval_fn : callable
        Called as ``eval_fn(val_data=, batch_axis=, event_handlers=)``; usually
        ``estimator.evaluate``.
    epoch_period : int or None, default 1
        Validate every this many epochs.
    batch_period : int or None, default None
        Validate every this many batches (never by default).
    priority : float, default -1000
        Runs before handlers that read the validation metrics.
    event_handlers : EventHandler or list of EventHandler, optional
        Passed on to ``eval_fn``.
    """

    def __init__(
        self,
        val_data: Any,
        eval_fn: Callable[..., Any],
        epoch_period: int | None = 1,
        batch_period: int | None = None,
        priority: float = -1000,
        event_handlers: Any = None,
    ) -> None:
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the counters."""
        self.current_batch = 0
        self.current_epoch = 0

    def _evaluate(self, estimator: Any) -> None:
        self.eval_fn(
            val_data=self.val_data,
            batch_axis=estimator.batch_axis,
            event_handlers=self.event_handlers,
        )

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Validate when the batch count reaches a multiple of ``batch_period``."""
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Validate when the epoch count reaches a multiple of ``epoch_period``."""
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)
        return False


def _metric_text(metrics: list[EvalMetric]) -> str:
    """``'name: 0.1234, name2: 0.5678'`` for the current values of ``metrics``."""
    return ", ".join("{}: {:.4f}".format(*metric.get()) for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Log the optimizer, learning rate, timings and metric values to ``estimator.logger``.

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        ``'epoch'`` logs at each epoch's start and end; an integer ``k`` also logs every
        ``k``-th batch.
    metrics : EvalMetric or list of EvalMetric, optional
        Metrics whose values are logged.
    priority : float, default inf
        Runs last, when every other handler has updated its state.

    Raises
    ------
    ValueError
        ``log_interval`` neither an integer nor ``'epoch'``.
    """

    def __init__(
        self, log_interval: int | str = "epoch", metrics: Any = None, priority: float = math.inf
    ) -> None:
        if log_interval != "epoch" and (
            not isinstance(log_interval, int) or isinstance(log_interval, bool)
        ):
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.log_interval = log_interval
        self.priority = priority
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the optimizer, learning rate and length of training; reset the counters."""
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info(
            "Training begin: using optimizer %s with current learning rate %.4f ",
            type(trainer.optimizer).__name__,
            trainer.learning_rate,
        )
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the total time, the epoch count and the final metric values."""
        elapsed = time.time() - self.train_start
        msg = f"Train finished using total {int(elapsed)}s with {self.current_epoch} epochs. "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Start the batch timer (integer ``log_interval`` only)."""
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Every ``log_interval`` batches, log the samples seen, time and metric values."""
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            msg = (
                f"[Epoch {self.current_epoch}][Batch {self.batch_index}]"
                f"[Samples {self.processed_samples}] "
            )
            if self.batch_index % self.log_interval == 0:
                msg += f"time/interval: {self.log_interval_time:.3f}s "
                self.log_interval_time = 0.0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1
        return False

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the epoch's start (training metrics) or ``Validation Begin`` (otherwise)."""
        self.epoch_start = time.time()
        if any("training" in str(metric.name) for metric in self.metrics):
            estimator.logger.info(
                "[Epoch %d] Begin, current learning rate: %.4f",
                self.current_epoch,
                estimator.trainer.learning_rate,
            )
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Log the epoch's time and metric values."""
        elapsed = time.time() - self.epoch_start
        msg = f"[Epoch {self.current_epoch}] Finished in {elapsed:.3f}s, "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0
        return False


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stop training when a monitored metric stops improving.

    Parameters
    ----------
    monitor : EvalMetric
        The metric to watch (one of ``estimator.train_metrics`` or ``val_metrics``).
    min_delta : float, default 0
        Smallest change that counts as an improvement.
    patience : int, default 0
        Epochs without improvement to wait before stopping.
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether lower or higher is better; ``'auto'`` uses higher for accuracy and F1, lower
        otherwise (and warns which).
    baseline : float, optional
        Value to beat from the start.

    Raises
    ------
    ValueError
        ``monitor`` is not a metric, or is a composite one.
    """

    def __init__(
        self,
        monitor: EvalMetric,
        min_delta: float = 0,
        patience: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
    ) -> None:
        if not isinstance(monitor, EvalMetric):
            raise ValueError(
                "Please provide one of the metric objects from estimator.train_metrics and "
                "estimator.val_metrics as monitor."
            )
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError(
                "CompositeEvalMetric is not supported for EarlyStoppingHandler, "
                "please specify a simple metric instead."
            )
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.monitor_op = _monitor_op(monitor, mode, "EarlyStopping")
        self.min_delta = min_delta if self.monitor_op(1, 0) else -min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = _worst(self.monitor_op)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the waiting count and the best value (to ``baseline`` when given)."""
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = self.baseline if self.baseline is not None else _worst(self.monitor_op)

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Compare the monitored value with the best; ``True`` once patience runs out."""
        name, value = _monitored(self.monitor)
        if math.isnan(value):
            warnings.warn(
                f"{name} is not updated, make sure you pass one of the metric objects from "
                "estimator.train_metrics and estimator.val_metrics as monitor.",
                RuntimeWarning,
                stacklevel=2,
            )
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the epoch training stopped at, if it stopped early."""
        if self.stopped_epoch > 0:
            estimator.logger.info(
                "[Epoch %d] EarlyStoppingHanlder: early stopping due to %s not improving",
                self.stopped_epoch,
                self.monitor.get()[0],
            )


class GradientUpdateHandler(BatchEnd):
    """Apply the gradients with ``estimator.trainer.step`` at the end of every batch.

    The batch size passed to ``step`` is the total first dimension of the batch's losses.

    Parameters
    ----------
    priority : float, default -2000
        Runs before every other default handler.
    """

    def __init__(self, priority: float = -2000) -> None:
        self.priority = priority

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Call ``estimator.trainer.step`` with the batch size."""
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(value.shape[0] for value in losses))
        return False
