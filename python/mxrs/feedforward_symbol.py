"""``FeedForward`` on a Symbol, as MXNet's: arrays or iterators in, a :class:`~mxrs.module.Module`
underneath.

Arrays become ``NDArrayIter`` batches of ``numpy_batch_size`` (shuffled for training, the last
batch rolled over into the next epoch, as MXNet does); ``epoch_size`` ends an epoch after that
many batches without restarting the data. ``arg_params``/``aux_params`` hold the trained values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import checkpoint as _ckpt
from . import initializer as _init
from . import metric as _metric
from .base import MXNetError
from .context import Context
from .io import DataIter, NDArrayIter, ResizeIter
from .module import Module
from .ndarray import NDArray
from .symbol import Symbol

__all__ = ["SymbolModel"]


def _as_iter(X: Any, y: Any, batch_size: int, is_train: bool) -> Any:
    if isinstance(X, DataIter):
        if y is not None:
            raise MXNetError("FeedForward: y must be None when X is a DataIter")
        return X
    if not isinstance(X, np.ndarray | NDArray):
        raise MXNetError(f"FeedForward: X must be a numpy array, an NDArray or a DataIter, not "
                         f"{type(X).__name__}")  # fmt: skip
    n = X.shape[0]
    if y is None:
        if is_train:
            raise MXNetError("FeedForward: y must be given when X is an array")
        y = np.zeros(n, dtype=np.float32)
    if y.shape[0] != n:
        raise MXNetError(f"FeedForward: X has {n} samples but y has {y.shape[0]}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.reshape(-1)
    if y.ndim != 1:
        raise MXNetError(f"FeedForward: labels must be 1-D (or N x 1), got shape {y.shape}")
    if is_train:
        return NDArrayIter(X, y, min(n, batch_size), shuffle=True, last_batch_handle="roll_over")
    return NDArrayIter(X, y, min(n, batch_size), shuffle=False)


class SymbolModel:
    """The state and loops of a FeedForward built on a Symbol (used by ``mx.model.FeedForward``)."""

    def __init__(
        self,
        symbol: Symbol,
        ctx: list[Context],
        num_epoch: int | None,
        epoch_size: int | None,
        optimizer: Any,
        initializer: Any,
        numpy_batch_size: int,
        arg_params: dict[str, Any] | None,
        aux_params: dict[str, Any] | None,
        allow_extra_params: bool,
        begin_epoch: int,
        kwargs: dict[str, Any],
    ) -> None:
        self.symbol = symbol
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.begin_epoch = begin_epoch
        self.kwargs = kwargs
        self._pred_mod: Module | None = None

    def _module(self, data: Any, work_load_list: Sequence[float] | None, logger: Any) -> Module:
        return Module(
            self.symbol,
            data_names=[d.name for d in data.provide_data],
            label_names=[d.name for d in data.provide_label],
            context=self.ctx,
            work_load_list=work_load_list,
            logger=logger,
        )

    def fit(self, X: Any, y: Any, eval_data: Any, eval_metric: Any, epoch_end_callback: Any,
            batch_end_callback: Any, kvstore: Any, logger: Any, work_load_list: Any,
            monitor: Any, eval_end_callback: Any,
            eval_batch_end_callback: Any) -> None:  # fmt: skip
        """See :meth:`mxrs.model.FeedForward.fit`."""
        if self.num_epoch is None:
            raise MXNetError("FeedForward.fit: num_epoch is not set")
        data = _as_iter(X, y, self.numpy_batch_size, is_train=True)
        if isinstance(eval_data, tuple | list) and len(eval_data) == 2:
            eval_data = _as_iter(eval_data[0], eval_data[1], self.numpy_batch_size, True)
        train = data if self.epoch_size is None else ResizeIter(data, self.epoch_size, False)
        mod = self._module(data, work_load_list, logger or logging)
        mod.fit(
            train,
            eval_data=eval_data,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=batch_end_callback,
            kvstore=kvstore,
            optimizer=self.optimizer,
            optimizer_params=self.kwargs,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
            initializer=self.initializer or _init.Uniform(0.01),
            arg_params=self.arg_params,
            aux_params=self.aux_params,
            allow_missing=True,
            begin_epoch=self.begin_epoch,
            num_epoch=self.num_epoch,
            monitor=monitor,
        )
        self.arg_params, self.aux_params = mod.get_params()
        self._pred_mod = None

    def _predictor(self, data: Any) -> Module:
        if self.arg_params is None:
            raise MXNetError("FeedForward: the model has no parameters; fit or load it first")
        shapes = [tuple(d.shape) for d in data.provide_data]
        mod = self._pred_mod
        if mod is None or [tuple(d.shape) for d in mod.data_shapes] != shapes:
            mod = self._module(data, None, logging)
            mod.bind(data.provide_data, data.provide_label, for_training=False)
            mod.set_params(self.arg_params, self.aux_params or {},
                           allow_extra=self.allow_extra_params)  # fmt: skip
            self._pred_mod = mod
        return mod

    def predict(self, X: Any, num_batch: int | None, return_data: bool) -> Any:
        """See :meth:`mxrs.model.FeedForward.predict`."""
        data = _as_iter(X, None, self.numpy_batch_size, is_train=False)
        mod = self._predictor(data)
        outs: list[list[np.ndarray]] = []
        datas: list[list[np.ndarray]] = []
        for out, _, batch in mod.iter_predict(data, num_batch=num_batch):
            outs.append([o.asnumpy() for o in out])
            if return_data:
                arrays = list(batch.data or [])
                keep = arrays[0].shape[0] - (batch.pad or 0)
                datas.append([d[:keep].asnumpy() for d in arrays])
        if not outs:
            raise MXNetError("FeedForward.predict: X holds no samples")
        merged = [np.concatenate([o[i] for o in outs]) for i in range(len(outs[0]))]
        result: Any = merged[0] if len(merged) == 1 else merged
        if return_data:
            d = [np.concatenate([b[i] for b in datas]) for i in range(len(datas[0]))]
            return result, (d[0] if len(d) == 1 else d)
        return result

    def score(self, X: Any, eval_metric: Any, num_batch: int | None, batch_end_callback: Any,
              reset: bool) -> Any:  # fmt: skip
        """See :meth:`mxrs.model.FeedForward.score`."""
        data = _as_iter(X, None, self.numpy_batch_size, is_train=False)
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        self._predictor(data).score(data, eval_metric, num_batch, batch_end_callback, reset=reset)
        return eval_metric.get()[1]

    def save(self, prefix: str, epoch: int) -> None:
        """Write the checkpoint ``prefix-symbol.json`` / ``prefix-%04d.params``."""
        if self.arg_params is None:
            raise MXNetError("FeedForward.save: the model has no parameters; fit it first")
        _ckpt.save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params or {})
