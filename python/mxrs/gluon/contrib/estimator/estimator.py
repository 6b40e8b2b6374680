"""``Estimator``: a training loop over gluon DataLoaders, driven by event handlers."""

from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import Any

from ....context import Context, cpu, gpu, num_gpus
from ....metric import EvalMetric
from ....metric import Loss as _LossMetric
from ...data import DataLoader
from ...loss import Loss as _GluonLoss
from ...trainer import Trainer
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
from .batch_processor import BatchProcessor
from .event_handler import (
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    ValidationHandler,
)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]

_NOT_A_LOADER = (
    "Estimator only support input as Gluon DataLoader. Alternatively, you can transform your "
    "DataIter or any NDArray into Gluon DataLoader. Refer to gluon.data.DataLoader"
)


class Estimator:
    """Train and evaluate a gluon network with handlers for metrics, logging and checkpoints.

    Parameters
    ----------
    net : gluon.Block
        The network to train; initialized here (with ``initializer``) unless it already is.
    loss : gluon.loss.Loss
        Training loss.
    train_metrics : EvalMetric or list of EvalMetric, optional
        Training metrics. Without any, accuracy (for softmax cross-entropy) and the mean loss
        are used. Their names get the prefix ``'training '``.
    val_metrics : EvalMetric or list of EvalMetric, optional
        Validation metrics; copies of the training metrics by default. Their names get the
        prefix ``'validation '``.
    initializer : Initializer, optional
        How to initialize ``net`` if it is not yet initialized (warns if it is).
    trainer : gluon.Trainer, optional
        Applies the optimizer; SGD with learning rate 0.001 by default (with a warning).
    context : Context or list of Context, optional
        Devices to train on; ``gpu(0)`` when there is a GPU, else ``cpu()``.
    val_net : gluon.Block, optional
        Network for validation (``net`` by default), typically sharing ``net``'s parameters.
    val_loss : gluon.loss.Loss, optional
        Validation loss (``loss`` by default).
    batch_processor : BatchProcessor, optional
        Supplies ``fit_batch`` and ``evaluate_batch``.

    Raises
    ------
    ValueError
        A wrong type for ``loss``, a metric, ``context``, ``trainer`` or ``batch_processor``.
    AssertionError
        A GPU in ``context`` that this machine does not have (as MXNet raises it).
    """

    logger: logging.Logger
    """The logger of this estimator and its handlers: ``INFO`` and above go to ``sys.stdout``
    (as it was when the estimator was made)."""

    def __init__(
        self,
        net: Any,
        loss: Any,
        train_metrics: Any = None,
        val_metrics: Any = None,
        initializer: Any = None,
        trainer: Any = None,
        context: Any = None,
        val_net: Any = None,
        val_loss: Any = None,
        batch_processor: Any = None,
    ) -> None:
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: int | None = None
        self.max_batch: int | None = None
        self.batch_axis = 0

    @property
    def device(self) -> list[Context]:
        """The devices the estimator trains on (the same list as ``context``)."""
        return self.context

    @property
    def train_metrics(self) -> list[EvalMetric]:
        """The training metrics (names prefixed ``'training '``)."""
        return self._train_metrics

    @property
    def val_metrics(self) -> list[EvalMetric]:
        """The validation metrics (names prefixed ``'validation '``)."""
        return self._val_metrics

    @staticmethod
    def _check_loss(loss: Any) -> Any:
        if not isinstance(loss, _GluonLoss):
            raise ValueError(f"loss must be a Loss, refer to gluon.loss.Loss:{loss}")
        return loss

    @staticmethod
    def _check_context(context: Any) -> list[Context]:
        gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if len(gpus) > 1:
                warnings.warn(
                    "You have multiple GPUs, gpu(0) will be used by default. To utilize all "
                    "your GPUs, specify context as a list of gpus, e.g. "
                    "context=[mx.gpu(0), mx.gpu(1)] ",
                    stacklevel=3,
                )
            return [gpus[0]] if gpus else [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ValueError(
                "context must be a Context or a list of Context, for example mx.cpu() or "
                f"[mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:{context}"
            )
        for ctx in context:
            if ctx.device_type != "cpu" and ctx not in gpus:
                raise AssertionError(
                    f"{ctx} is not available, please make sure your context is in one of: "
                    + ", ".join(["mx.cpu()"] + [str(g) for g in gpus])
                )
        return list(context)

    @staticmethod
    def _check_batch_processor(batch_processor: Any) -> Any:
        if batch_processor is None:
            return BatchProcessor()
        fit = getattr(batch_processor, "fit_batch", None)
        evaluate = getattr(batch_processor, "evaluate_batch", None)
        if not callable(fit) or not callable(evaluate):
            raise ValueError(
                "Customized Batch Processor must contain fit_batch() and evaluate_batch() methods"
            )
        return batch_processor

    def _is_initialized(self) -> bool:
        params = self.net.collect_params()
        for name in params:
            try:
                params[name].list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer: Any) -> None:
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn(
                "Network already fully initialized, skipping initialization. You don't need to "
                "pass initializer if you already initialized your net. You can use "
                "net.initialize(init=your_initializer, force_reinit=True) to force "
                "re-initialize.",
                stacklevel=3,
            )

    def _check_trainer(self, trainer: Any) -> Trainer:
        if not trainer:
            warnings.warn(
                "No trainer specified, default SGD optimizer with learning rate 0.001 is used.",
                stacklevel=3,
            )
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(
                f"Trainer must be a Gluon Trainer instance, refer to gluon.Trainer:{trainer}"
            )
        return trainer

    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested is not None:
                self._train_metrics = [suggested]
            self._train_metrics.append(_LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            metric.name = "training " + str(metric.name)

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            name = str(metric.name)
            if "training" in name:
                metric.name = name.replace("training", "validation")
            else:
                metric.name = "validation " + name

    def evaluate(self, val_data: Any, batch_axis: int = 0, event_handlers: Any = None) -> None:
        """Run the validation network over ``val_data`` and update the validation metrics.

        A :class:`MetricHandler` and a :class:`LoggingHandler` on ``val_metrics`` are added
        unless ``event_handlers`` has handlers of those types.

        Parameters
        ----------
        val_data : DataLoader
            Validation data, batches of ``(data, label)``.
        batch_axis : int, default 0
            Axis along which each batch is split over the devices.
        event_handlers : EventHandler or list of EventHandler, optional
            Handlers for the epoch and batch events of this pass.

        Raises
        ------
        ValueError
            ``val_data`` is not a DataLoader, or a handler holds a metric that is not one of
            ``val_metrics``.
        """
        if not isinstance(val_data, DataLoader):
            raise ValueError(_NOT_A_LOADER)
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(
        self,
        train_data: Any,
        val_data: Any = None,
        epochs: int | None = None,
        event_handlers: Any = None,
        batches: int | None = None,
        batch_axis: int = 0,
    ) -> None:
        """Train for ``epochs`` epochs or ``batches`` batches (exactly one of them).

        Besides ``event_handlers``, a :class:`StoppingHandler`, a
        :class:`GradientUpdateHandler`, a :class:`MetricHandler` and a :class:`LoggingHandler`
        (on ``train_metrics``) and, with ``val_data``, a :class:`ValidationHandler` are added
        unless handlers of those types are given.

        Parameters
        ----------
        train_data : DataLoader
            Training data, batches of ``(data, label)``.
        val_data : DataLoader, optional
            Validation data, evaluated at every epoch's end.
        epochs : int, optional
            Epochs to train.
        event_handlers : EventHandler or list of EventHandler, optional
            Extra handlers.
        batches : int, optional
            Batches to train.
        batch_axis : int, default 0
            Axis along which each batch is split over the devices.

        Raises
        ------
        ValueError
            ``train_data`` is not a DataLoader, not exactly one of ``epochs`` and ``batches``
            is given, or a handler holds a metric that is not the estimator's.
        """
        if not isinstance(train_data, DataLoader):
            raise ValueError(_NOT_A_LOADER)
        if (not epochs) == (not batches):
            raise ValueError(
                "Fit only support exactly one type of iteration, train by number of epochs or "
                "number of batches. Please specify one and only one of: epochs or batches."
            )
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = (
            self._categorize_handlers(handlers)
        )
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stops = [
                    h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                    for h in batch_end
                ]
                if any(stops):
                    break
            if any([h.epoch_end(self) for h in epoch_end]):
                break
        for handler in train_end:
            handler.train_end(self)

    def _prepare_default_handlers(self, val_data: Any, event_handlers: Any) -> list[Any]:
        handlers = _check_event_handlers(event_handlers)
        added: list[EventHandler] = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if val_data and not any(isinstance(h, ValidationHandler) for h in handlers):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        return self._merge(handlers, added, self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers: Any) -> list[Any]:
        handlers = _check_event_handlers(event_handlers)
        added: list[EventHandler] = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        return self._merge(handlers, added, list(self.val_metrics))

    @staticmethod
    def _merge(
        handlers: list[EventHandler], added: list[EventHandler], known: list[EvalMetric]
    ) -> list[Any]:
        """User handlers then defaults, sorted by priority (stable); when both kinds are
        present, every handler's metrics must be among ``known``."""
        mixing = bool(handlers) and bool(added)
        handlers = handlers + added
        if mixing:
            for handler in handlers:
                _check_handler_metric_ref(handler, known)
        return sorted(handlers, key=lambda h: getattr(h, "priority", 0))

    @staticmethod
    def _categorize_handlers(handlers: list[Any]) -> tuple[list[Any], ...]:
        """Split handlers by the events they take: train begin, epoch begin, batch begin,
        batch end, epoch end, train end (a handler is in every list whose mixin it has)."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in handlers if isinstance(h, kind)] for kind in kinds)
