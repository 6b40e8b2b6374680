"""``CheckpointHandler``: periodic and best-so-far parameter/trainer-state files, and resume."""

from __future__ import annotations

import math
import os
import re
import warnings
from typing import Any

from ....base import MXNetError
from ....metric import EvalMetric
from ... import _symbolic
from ...block import HybridBlock
from ._mixins import BatchEnd, EpochEnd, TrainBegin
from ._monitor import _monitor_op, _monitored, _worst

__all__ = ["CheckpointHandler"]

_NAME_ERROR = (
    "Error parsing checkpoint file, please check your checkpoints have the format: "
    "{model_name}-epoch{epoch_number}batch{batch_number}.params, there should also be "
    "a .states file for each .params file"
)


def _hybrid_graph(net: object) -> Any:
    """The output symbol of a hybridized block that has run forward, else ``None``."""
    if not isinstance(net, HybridBlock):
        return None
    if not net._cached_graph and not net._active:
        return None
    try:
        return _symbolic.graph(net)[1]
    except MXNetError:
        return None


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save parameters and trainer states every few epochs or batches, and resume from them.

    Files are ``{model_prefix}-epoch{E}batch{B}.params`` / ``.states`` in ``model_dir``;
    ``{model_prefix}-best.*`` with ``save_best``; ``{model_prefix}-symbol.json`` after the first
    batch when the network is a hybridized block.

    Parameters
    ----------
    model_dir : str
        Folder for the files (created if missing).
    model_prefix : str, default 'model'
        Prefix of every file name.
    monitor : EvalMetric, optional
        Metric that decides the best model (needed with ``save_best``).
    verbose : int, default 0
        ``> 0`` logs every save.
    save_best : bool, default False
        Also keep the parameters with the best ``monitor`` value seen at a save.
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether a lower or higher ``monitor`` is better; ``'auto'`` uses higher for accuracy
        and F1, lower otherwise.
    epoch_period : int or None, default 1
        Save every this many epochs.
    batch_period : int or None, default None
        Save every this many batches.
    max_checkpoints : int, default 5
        How many periodic checkpoints to keep; older ones are deleted (the best one is not
        counted).
    resume_from_checkpoint : bool, default False
        At train begin, load the newest checkpoint in ``model_dir`` and train only the
        remaining epochs (or batches).

    Raises
    ------
    ValueError
        ``save_best`` without a metric as ``monitor``.
    """

    def __init__(
        self,
        model_dir: str,
        model_prefix: str = "model",
        monitor: EvalMetric | None = None,
        verbose: int = 0,
        save_best: bool = False,
        mode: str = "auto",
        epoch_period: int | None = 1,
        batch_period: int | None = None,
        max_checkpoints: int = 5,
        resume_from_checkpoint: bool = False,
    ) -> None:
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError(
                "To save best model only, please provide one of the metric objects from "
                "estimator.train_metrics and estimator.val_metrics as monitor."
            )
        os.makedirs(model_dir, exist_ok=True)
        self.monitor = monitor
        self.verbose = verbose
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.current_batch = 0
        self.current_epoch = 0
        self.trained_epoch = -1
        self.trained_batch = -1
        self.saved_checkpoints: list[str] = []
        if save_best:
            assert monitor is not None
            self.monitor_op = _monitor_op(monitor, mode, "CheckpointHandler")
            self.best = _worst(self.monitor_op)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the counters and, with ``resume_from_checkpoint``, load the newest checkpoint.

        Raises
        ------
        ValueError
            The saving period does not match how ``fit`` counts (epochs or batches), or the
            checkpoint found already reached the end of training.
        """
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = _worst(self.monitor_op)
        if self.resume_from_checkpoint:
            by_batch = bool(estimator.max_batch)
            if (by_batch and (not self.batch_period or self.epoch_period)) or (
                not by_batch and (not self.epoch_period or self.batch_period)
            ):
                raise ValueError(
                    "To use resume from checkpoint, you must only specify the same type of "
                    "period you used for training. For example, if you are training based on "
                    "number of epochs, you must save only based on epochs, and set "
                    "batch_period to None."
                )
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Save the symbol after the first batch, a checkpoint every ``batch_period`` batches."""
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Save a checkpoint every ``epoch_period`` epochs."""
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    def _save_checkpoint(self, estimator: Any) -> None:
        if self.resume_from_checkpoint:
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch
            if not estimator.max_epoch:
                batch += 1
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = f"{self.model_prefix}-epoch{epoch}batch{batch}"
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info(
                "[Epoch %d] CheckpointHandler: trained total %d batches, "
                "saving model at %s with prefix: %s",
                self.current_epoch,
                self.current_batch + 1,
                self.model_dir,
                prefix,
            )
        if self.save_best:
            self._save_best(estimator)

    def _save_best(self, estimator: Any) -> None:
        assert self.monitor is not None
        name, value = _monitored(self.monitor)
        if math.isnan(value):
            warnings.warn(
                f"Skipping save best because {name} is not updated, make sure you pass one of "
                "the metric objects estimator.train_metrics and estimator.val_metrics as "
                "monitor",
                RuntimeWarning,
                stacklevel=3,
            )
        elif self.monitor_op(value, self.best):
            prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, prefix)
            if self.verbose > 0:
                estimator.logger.info(
                    "[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, "
                    "updating best model at %s with prefix: %s",
                    self.current_epoch,
                    name,
                    self.best,
                    value,
                    self.model_dir,
                    prefix,
                )
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info(
                "[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, "
                "skipping updating best model",
                self.current_epoch,
                name,
                self.best,
            )

    def _save_symbol(self, estimator: Any) -> None:
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        graph = _hybrid_graph(estimator.net)
        if graph is not None:
            graph.save(symbol_file)
        else:
            estimator.logger.info(
                "Model architecture(symbol file) is not saved, please use HybridBlock to "
                "construct your model, and call net.hybridize() before passing to Estimator "
                "in order to save model architecture as %s.",
                symbol_file,
            )

    def _save_params_and_trainer(self, estimator: Any, prefix: str) -> None:
        estimator.net.save_parameters(os.path.join(self.model_dir, prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, prefix + ".states"))
        if "best" not in prefix:
            self.saved_checkpoints.append(prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            oldest = self.saved_checkpoints.pop(0)
            for fname in os.listdir(self.model_dir):
                if fname.startswith(oldest + "."):
                    os.remove(os.path.join(self.model_dir, fname))

    def _found_checkpoints(self) -> list[tuple[int, int, str]]:
        """``(epoch, batch, prefix)`` of every ``.params`` checkpoint file in ``model_dir``."""
        head = self.model_prefix + "-epoch"
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(head) and fname.endswith(".params")):
                continue
            match = re.fullmatch(r"(\d+)batch(\d+)", fname[len(head) : -len(".params")])
            if match is None:
                raise ValueError(_NAME_ERROR)
            found.append((int(match.group(1)), int(match.group(2)), fname[: -len(".params")]))
        return found

    def _resume_from_checkpoint(self, estimator: Any) -> None:
        found = self._found_checkpoints()
        self.saved_checkpoints = [prefix for _, _, prefix in sorted(found)]
        if not found:
            self.trained_epoch = self.trained_batch = -1
            if estimator.max_batch:
                what = f"{estimator.max_batch} batches"
            else:
                what = f"{estimator.max_epoch} epochs"
            estimator.logger.info(
                "CheckpointHandler: No checkpoint found, training from scratch for %s", what
            )
            return
        self.trained_epoch = max(e for e, _, _ in found)
        self.trained_batch = max(b for e, b, _ in found if e == self.trained_epoch)
        msg = (
            f"CheckpointHandler: Checkpoint resumed from epoch {self.trained_epoch} "
            f"batch {self.trained_batch}, continue to train for "
        )
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError(
                    f"Found checkpoint with maximum number of epoch {estimator.max_epoch} "
                    "reached, please specify resume_from_checkpoint=False (default value) if "
                    "you want to train from scratch."
                )
            estimator.max_epoch -= self.trained_epoch + 1
            msg += f"{estimator.max_epoch} epochs "
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError(
                    f"Found checkpoint with maximum number of batch {self.trained_batch} "
                    "reached, please specify resume_from_checkpoint=False (default value) if "
                    "you want to train from scratch."
                )
            estimator.max_batch -= self.trained_batch + 1
            msg += f"{estimator.max_batch} batches "
        prefix = f"{self.model_prefix}-epoch{self.trained_epoch}batch{self.trained_batch}"
        param_file = os.path.join(self.model_dir, prefix + ".params")
        states_file = os.path.join(self.model_dir, prefix + ".states")
        if not os.path.exists(states_file):
            raise ValueError(f"Failed to load checkpoint, {states_file} does not exist")
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(states_file)
        estimator.logger.warning(msg)
