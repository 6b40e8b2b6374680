"""Training callbacks (``mx.callback``), with the behaviour and log lines of MXNet 1.9.1.

Epoch-end callbacks are called as ``callback(epoch, symbol, arg_params, aux_params)``:
:func:`do_checkpoint`, :func:`module_checkpoint`.

Batch-end callbacks are called with one object that has the attributes ``epoch``, ``nbatch``,
``eval_metric`` and ``locals`` (``mx.model.BatchEndParam``): :func:`log_train_metric`,
:class:`Speedometer`, :class:`ProgressBar`, :class:`LogValidationMetricsCallback`.

Messages go to the root logger at INFO level (``logging.info``), as MXNet's do, so
``logging.basicConfig(level=logging.INFO)`` shows them.

Examples
--------
>>> model.fit(train_iter, num_epoch=10,
...           batch_end_callback=mx.callback.Speedometer(batch_size=64, frequent=50),
...           epoch_end_callback=mx.callback.do_checkpoint("mlp", period=2))
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from . import checkpoint

__all__ = [
    "module_checkpoint",
    "do_checkpoint",
    "log_train_metric",
    "Speedometer",
    "ProgressBar",
    "LogValidationMetricsCallback",
]

EpochEndCallback = Callable[..., None]


def module_checkpoint(
    mod: Any, prefix: str, period: int = 1, save_optimizer_states: bool = False
) -> EpochEndCallback:
    """An epoch-end callback that calls ``mod.save_checkpoint`` every ``period`` epochs.

    Parameters
    ----------
    mod : object with ``save_checkpoint(prefix, epoch, save_optimizer_states)``
        The module to checkpoint.
    prefix : str
        Path prefix of the checkpoint files.
    period : int, default 1
        Epochs between checkpoints (values below 1 count as 1).
    save_optimizer_states : bool, default False
        Passed on to ``mod.save_checkpoint``.
    """
    every = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % every == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> EpochEndCallback:
    """An epoch-end callback that saves a checkpoint every ``period`` epochs.

    After epoch ``iter_no`` (counted from 0) with ``(iter_no + 1) % period == 0`` it writes
    ``prefix-symbol.json`` and ``prefix-%04d.params`` numbered ``iter_no + 1``, through
    :func:`mxrs.checkpoint.save_checkpoint`.

    Parameters
    ----------
    prefix : str
        Path prefix of the checkpoint files.
    period : int, default 1
        Epochs between checkpoints (values below 1 count as 1).

    Examples
    --------
    >>> cb = do_checkpoint("mlp", period=2)
    >>> cb(1, net, arg_params, aux_params)    # writes mlp-0002.params
    """
    every = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: Any, aux: Any) -> None:
        if (iter_no + 1) % every == 0:
            checkpoint.save_checkpoint(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable[[Any], None]:
    """A batch-end callback that logs the training metric every ``period`` batches.

    Logs ``Iter[EPOCH] Batch[NBATCH] Train-NAME=VALUE`` for each of the metric's values when
    ``nbatch % period == 0`` and the metric is not None.

    Parameters
    ----------
    period : int
        Batches between logs.
    auto_reset : bool, default False
        Reset the metric's local statistics (``reset_local``) after each log.
    """

    def _callback(param: Any) -> None:
        metric = param.eval_metric
        if param.nbatch % period != 0 or metric is None:
            return
        for name, value in metric.get_name_value():
            logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
        if auto_reset:
            metric.reset_local()

    return _callback


class Speedometer:
    """A batch-end callback that logs the training speed and the metric periodically.

    The first call (and the first call after ``nbatch`` goes down, a new epoch) starts the
    clock; then every ``frequent`` batches it logs the samples per second since the last log::

        Epoch[0] Batch [50-100]\\tSpeed: 1910.41 samples/sec\\taccuracy=0.200000

    (``Batch [0-100]`` with ``auto_reset=False``, as the metric then covers the whole epoch;
    ``Iter[0] Batch [100]\\tSpeed: ...`` without a metric.)

    Parameters
    ----------
    batch_size : int
        Samples per batch.
    frequent : int, default 50
        Batches between logs.
    auto_reset : bool, default True
        Reset the metric's local statistics after each log.
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True) -> None:
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param: Any) -> None:
        """Log the speed if this batch ends a period of ``frequent`` batches."""
        count = param.nbatch
        if count < self.last_count:  # a new epoch began
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        metric = param.eval_metric
        if metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        else:
            pairs = metric.get_name_value()
            values = [x for pair in pairs for x in pair]
            tail = "\t%s=%f" * len(pairs)
            if self.auto_reset:
                metric.reset_local()
                logging.info(
                    "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + tail,
                    param.epoch,
                    count - self.frequent,
                    count,
                    speed,
                    *values,
                )
            else:
                logging.info(
                    "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + tail,
                    param.epoch,
                    count,
                    speed,
                    *values,
                )
        self.tic = time.time()


class ProgressBar:
    """A batch-end callback that logs a bar of the share of the epoch's batches done.

    Logs ``[========--------] 50%\\r`` (``length`` characters between the brackets).

    Parameters
    ----------
    total : int
        Batches per epoch.
    length : int, default 80
        Width of the bar.
    """

    def __init__(self, total: int, length: int = 80) -> None:
        self.bar_len = length
        self.total = total

    def __call__(self, param: Any) -> None:
        """Log the bar for batch ``param.nbatch``."""
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        bar = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", bar, percents, "%")


class LogValidationMetricsCallback:
    """An end-of-evaluation callback that logs ``Epoch[EPOCH] Validation-NAME=VALUE`` for each
    of the metric's values (nothing without a metric)."""

    def __call__(self, param: Any) -> None:
        """Log the validation metric of ``param.eval_metric``."""
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
