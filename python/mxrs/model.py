"""``mx.model``: checkpoints in MXNet's file format and ``FeedForward``, the older
fit/predict/score API.

``FeedForward`` trains a Symbol as MXNet's does (through :class:`mxrs.module.Module`, see
:mod:`mxrs.feedforward_symbol`), or a Gluon Block that maps a batch to outputs (class scores by
default): then the batch is cut across ``ctx`` evenly or in proportion to ``work_load_list``,
gradients are reduced through a KVStore and the optimizer is applied as in ``gluon.Trainer``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from . import autograd
from . import initializer as _init
from . import metric as _metric
from .base import MXNetError
from .checkpoint import load_checkpoint, load_params, save_checkpoint
from .context import Context, cpu
from .feedforward_symbol import SymbolModel
from .gluon import Block, Trainer
from .gluon.loss import SoftmaxCrossEntropyLoss
from .gluon.utils import split_and_load
from .io import DataBatch, DataIter, NDArrayIter
from .module import BatchEndParam
from .ndarray import NDArray
from .symbol import Symbol

__all__ = ["BatchEndParam", "FeedForward", "load_checkpoint", "load_params", "save_checkpoint"]

#: A callback, or a list of them, called with the arguments MXNet passes.
_Callbacks = Callable[..., Any] | list[Callable[..., Any]] | tuple[Callable[..., Any], ...] | None


class FeedForward:
    """A model trained with ``fit`` and used with ``predict`` / ``score``.

    Parameters
    ----------
    symbol : Symbol or gluon.Block
        The network: a Symbol ending in an output layer (``SoftmaxOutput``...), or a Block whose
        output is compared with the labels by ``loss``.
    ctx : Context or list of Context, default cpu()
        Devices the batch is cut across.
    num_epoch : int or None
        Epochs ``fit`` runs.
    optimizer : str or Optimizer, default 'sgd'
    epoch_size : int or None
        Batches per epoch (the data is not restarted between epochs); all of it by default.
    initializer : Initializer, default Uniform(0.01)
    numpy_batch_size : int, default 128
        Batch size when ``fit`` gets whole arrays.
    arg_params, aux_params : dict of str to NDArray, optional
        Initial values of a Symbol's parameters; after ``fit``, the trained ones.
    begin_epoch : int, default 0
    loss : gluon.loss.Loss or None
        For a Block: defaults to softmax cross-entropy on integer labels.
    **kwargs
        Optimizer hyper-parameters (``learning_rate``, ``momentum``, ``wd``...).
    """

    def __init__(
        self,
        symbol: Symbol | Block,
        ctx: Context | Sequence[Context] | None = None,
        num_epoch: int | None = None,
        epoch_size: int | None = None,
        optimizer: Any = "sgd",
        initializer: _init.Initializer | None = None,
        numpy_batch_size: int = 128,
        arg_params: dict[str, Any] | None = None,
        aux_params: dict[str, Any] | None = None,
        allow_extra_params: bool = False,
        begin_epoch: int = 0,
        loss: Block | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(symbol, Symbol | Block):
            kind = type(symbol).__name__
            raise MXNetError(f"FeedForward: symbol must be a Symbol or a gluon Block, got {kind}")
        self.symbol = symbol
        self._net = cast(Block, symbol)  # what the Block path runs
        ctx = cpu() if ctx is None else ctx
        self.ctx = [ctx] if isinstance(ctx, Context) else list(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = _init.Uniform(0.01) if initializer is None else initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self.kwargs = kwargs
        self._sym: SymbolModel | None = None
        if isinstance(symbol, Symbol):
            self._sym = SymbolModel(symbol, self.ctx, num_epoch, epoch_size, optimizer,
                                    self.initializer, numpy_batch_size, arg_params, aux_params,
                                    allow_extra_params, begin_epoch, kwargs)  # fmt: skip
            return
        self._loss = loss
        self._initialized = False
        if arg_params or aux_params:
            raise MXNetError(
                "FeedForward: arg_params/aux_params are for a Symbol; load a Block's weights "
                "with load_parameters"
            )

    @property
    def arg_params(self) -> dict[str, Any] | None:
        """A Symbol model's parameters (None for a Block, which holds its own)."""
        return None if self._sym is None else self._sym.arg_params

    @property
    def aux_params(self) -> dict[str, Any] | None:
        """A Symbol model's auxiliary states (None for a Block)."""
        return None if self._sym is None else self._sym.aux_params

    def save(self, prefix: str, epoch: int | None = None) -> None:
        """Write a Symbol model's checkpoint (epoch ``num_epoch`` by default)."""
        if self._sym is None:
            raise MXNetError("FeedForward.save: a Block saves itself with save_parameters")
        if epoch is None:
            if self.num_epoch is None:
                raise MXNetError("FeedForward.save: give the epoch (num_epoch is not set)")
            epoch = self.num_epoch
        self._sym.save(prefix, epoch)

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Any = None, **kwargs: Any) -> FeedForward:
        """A Symbol model from the checkpoint ``prefix-symbol.json`` / ``prefix-%04d.params``;
        ``kwargs`` as for the constructor."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)  # fmt: skip

    @staticmethod
    def create(symbol: Symbol | Block, X: Any, y: Any = None, ctx: Any = None,
               num_epoch: int | None = None, epoch_size: int | None = None,
               optimizer: Any = "sgd", initializer: Any = None, eval_data: Any = None,
               eval_metric: Any = "acc", epoch_end_callback: _Callbacks = None,
               batch_end_callback: _Callbacks = None, kvstore: Any = "local",
               logger: logging.Logger | None = None, work_load_list: Any = None,
               eval_end_callback: _Callbacks = None, eval_batch_end_callback: _Callbacks = None,
               **kwargs: Any) -> FeedForward:  # fmt: skip
        """Make a model and ``fit`` it in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)  # fmt: skip
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)  # fmt: skip
        return model

    # ------------------------------------------------------------------ helpers
    def _init(self) -> None:
        if not self._initialized:
            self._net.initialize(self.initializer, ctx=self.ctx)
            self._initialized = True

    def _batches(
        self, X: Any, y: Any, batch_size: int, shuffle: bool = False, trim_pad: bool = False
    ) -> Iterator[tuple[Any, Any]]:
        """Yield (data, label) numpy/NDArray batches from arrays, from a ``mx.io`` data iterator
        (reset first; with ``trim_pad`` a batch's padding samples are left out), or from an
        iterable of batches."""
        if isinstance(X, (np.ndarray, NDArray)):
            X = X.asnumpy() if isinstance(X, NDArray) else X
            if y is not None:
                y = y.asnumpy() if isinstance(y, NDArray) else np.asarray(y)
                if len(y) != len(X):
                    raise MXNetError(f"FeedForward: X has {len(X)} samples but y has {len(y)}")
            order = np.random.permutation(len(X)) if shuffle else np.arange(len(X))
            for s in range(0, len(X), batch_size):
                idx = order[s : s + batch_size]
                yield X[idx], None if y is None else y[idx]
            return
        if y is not None:
            raise MXNetError("FeedForward: y must be None when X is an iterable of batches")
        if isinstance(X, DataIter):
            X.reset()
        for batch in X:
            if isinstance(batch, DataBatch):
                if not batch.data:
                    raise MXNetError("FeedForward: a DataBatch without data")
                data = batch.data[0]
                label = batch.label[0] if batch.label else None
                keep = data.shape[0] - (batch.pad or 0) if trim_pad else data.shape[0]
                yield data[:keep], None if label is None else label[:keep]
            elif isinstance(batch, (list, tuple)):
                yield batch[0], (batch[1] if len(batch) > 1 else None)
            else:
                yield batch, None

    def _split(self, data: Any, work_load_list: Sequence[float] | None) -> list[NDArray]:
        if len(self.ctx) == 1:
            return split_and_load(data, self.ctx, even_split=False)
        return split_and_load(data, self.ctx, even_split=False, work_load_list=work_load_list)

    # ------------------------------------------------------------------ API
    def fit(
        self,
        X: Any,
        y: Any = None,
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: _Callbacks = None,
        batch_end_callback: _Callbacks = None,
        kvstore: Any = "local",
        logger: logging.Logger | None = None,
        work_load_list: Sequence[float] | None = None,
        monitor: Any = None,
        eval_end_callback: _Callbacks = None,
        eval_batch_end_callback: _Callbacks = None,
    ) -> FeedForward:
        """Train for ``num_epoch`` epochs.

        Parameters
        ----------
        X : numpy.ndarray, NDArray or iterable of (data, label) batches
        y : array-like or None
            Labels when ``X`` is an array.
        eval_data : (X, y) tuple, iterable of batches or None
            Scored after every epoch.
        eval_metric : str or EvalMetric, default 'acc'
        kvstore : str or KVStore, default 'local'
        work_load_list : list of numbers or None
            Relative share of each context in every batch (``[3, 1]`` cuts 8 into 6 and 2).
        batch_end_callback, epoch_end_callback : callable or list of callables
            Called with ``BatchEndParam`` / ``(epoch, symbol, arg_params, aux_params)``.

        Returns
        -------
        FeedForward
            ``self``.
        """
        if self._sym is not None:
            self._sym.fit(X, y, eval_data, eval_metric, epoch_end_callback, batch_end_callback,
                          kvstore, logger, work_load_list, monitor, eval_end_callback,
                          eval_batch_end_callback)  # fmt: skip
            return self
        if self.num_epoch is None:
            raise MXNetError("FeedForward.fit: num_epoch is not set")
        if work_load_list is not None and len(work_load_list) != len(self.ctx):
            raise MXNetError(
                f"FeedForward.fit: work_load_list has {len(work_load_list)} entries "
                f"for {len(self.ctx)} contexts"
            )
        log: Any = logger or logging  # the logging module itself by default, as in MXNet
        self._init()
        loss_fn = self._loss or SoftmaxCrossEntropyLoss()
        trainer = Trainer(
            self._net.collect_params(), self.optimizer, dict(self.kwargs), kvstore=kvstore
        )
        metric = _metric.create(eval_metric)
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            metric.reset()
            for nbatch, (data, label) in enumerate(
                self._batches(X, y, self.numpy_batch_size, shuffle=False)
            ):
                if self.epoch_size is not None and nbatch >= self.epoch_size:
                    break
                datas = self._split(data, work_load_list)
                labels = self._split(label, work_load_list)
                with autograd.record():
                    outs = [self._net(d) for d in datas]
                    losses = [loss_fn(o, lab) for o, lab in zip(outs, labels, strict=True)]
                autograd.backward(losses)
                trainer.step(sum(d.shape[0] for d in datas))
                metric.update(labels, outs)
                _call(batch_end_callback, BatchEndParam(epoch, nbatch, metric, locals()))
            for name, val in _pairs(metric):
                log.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            log.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            if eval_data is not None:
                ex, ey = eval_data if isinstance(eval_data, tuple) else (eval_data, None)
                for name, val in _pairs(self._score(ex, ey, eval_metric)):
                    log.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            _call(epoch_end_callback, epoch, self.symbol, None, None)
        return self

    def predict(
        self,
        X: Any,
        num_batch: int | None = None,
        return_data: bool = False,
        reuse_executor: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The network's outputs for ``X``, as one numpy array (rows in input order; a list
        of them for a Symbol with several outputs); with ``return_data`` also the inputs."""
        if self._sym is not None:
            return self._sym.predict(X, num_batch, return_data)
        self._init()
        outs: list[np.ndarray] = []
        datas: list[np.ndarray] = []
        batches = self._batches(X, None, self.numpy_batch_size, trim_pad=True)
        for n, (data, _) in enumerate(batches):
            if num_batch is not None and n >= num_batch:
                break
            parts = self._split(data, None)
            outs.extend(self._net(p).asnumpy() for p in parts)
            if return_data:
                datas.append(data.asnumpy() if isinstance(data, NDArray) else np.asarray(data))
        if not outs:
            raise MXNetError("FeedForward.predict: X holds no samples")
        pred = np.concatenate(outs)
        return (pred, np.concatenate(datas)) if return_data else pred

    def score(
        self,
        X: Any,
        y: Any = None,
        eval_metric: Any = "acc",
        num_batch: int | None = None,
        batch_end_callback: _Callbacks = None,
        reset: bool = True,
    ) -> Any:
        """Evaluate ``eval_metric`` over ``X`` (with labels ``y`` or in the batches).

        For a Symbol model the second positional argument may be the metric, as MXNet's
        ``score(X, eval_metric)``."""
        if self._sym is not None:
            if isinstance(y, str | _metric.EvalMetric):
                y, eval_metric = None, y
            data = X if y is None else NDArrayIter(X, y, min(len(X), self.numpy_batch_size))
            return self._sym.score(data, eval_metric, num_batch, batch_end_callback, reset)
        m = self._score(X, y, eval_metric, num_batch)
        return m.get()[1]

    def _score(
        self, X: Any, y: Any, eval_metric: Any, num_batch: int | None = None
    ) -> _metric.EvalMetric:
        self._init()
        m = _metric.create(eval_metric)
        batches = self._batches(X, y, self.numpy_batch_size, trim_pad=True)
        for n, (data, label) in enumerate(batches):
            if num_batch is not None and n >= num_batch:
                break
            if label is None:
                raise MXNetError("FeedForward.score: the data has no labels")
            parts = self._split(data, None)
            labels = self._split(label, None)
            m.update(labels, [self._net(p) for p in parts])
        return m


def _pairs(metric: _metric.EvalMetric) -> list[tuple[Any, Any]]:
    names, vals = metric.get()
    if isinstance(names, str):
        return [(names, vals)]
    return list(zip(names, cast(list, vals), strict=True))  # a list, as names is


def _call(callbacks: _Callbacks, *args: Any) -> None:
    if callbacks is None:
        return
    for cb in callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]:
        cb(*args)
