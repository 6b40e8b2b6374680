"""``mx.model.FeedForward``: the older fit/predict/score API, over a Gluon Block.

MXNet's FeedForward trains a symbol; here ``symbol`` is a Gluon Block that maps a batch to
outputs (class scores by default). The batch is cut across ``ctx`` evenly or in proportion to
``work_load_list``, gradients are reduced through a KVStore and the optimizer is applied as in
``gluon.Trainer``.
"""

import logging
import time
from collections import namedtuple

import numpy as np

from . import autograd
from . import initializer as _init
from . import metric as _metric
from .base import MXNetError
from .context import Context, cpu
from .gluon import Block, Trainer
from .gluon.loss import SoftmaxCrossEntropyLoss
from .gluon.utils import split_and_load
from .ndarray import NDArray

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])


class FeedForward:
    """A model trained with ``fit`` and used with ``predict`` / ``score``.

    Parameters
    ----------
    symbol : gluon.Block
        The network; its output is compared with the labels by ``loss``.
    ctx : Context or list of Context, default cpu()
        Devices the batch is cut across.
    num_epoch : int or None
        Epochs ``fit`` runs.
    optimizer : str or Optimizer, default 'sgd'
    initializer : Initializer, default Uniform(0.01)
    numpy_batch_size : int, default 128
        Batch size when ``fit`` gets whole arrays.
    begin_epoch : int, default 0
    loss : gluon.loss.Loss or None
        Defaults to softmax cross-entropy on integer labels.
    **kwargs
        Optimizer hyper-parameters (``learning_rate``, ``momentum``, ``wd``...).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=None, numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, loss=None, **kwargs):
        if not isinstance(symbol, Block):
            raise MXNetError(f"FeedForward: symbol must be a gluon Block, got "
                             f"{type(symbol).__name__}")
        self.symbol = symbol
        ctx = cpu() if ctx is None else ctx
        self.ctx = [ctx] if isinstance(ctx, Context) else list(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = _init.Uniform(0.01) if initializer is None else initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self.kwargs = kwargs
        self._loss = loss
        self._initialized = False
        if arg_params or aux_params:
            raise MXNetError("FeedForward: arg_params/aux_params are not supported; load weights "
                             "into the Block with load_parameters")

    # ------------------------------------------------------------------ helpers
    def _init(self):
        if not self._initialized:
            self.symbol.initialize(self.initializer, ctx=self.ctx)
            self._initialized = True

    def _batches(self, X, y, batch_size, shuffle=False):
        """Yield (data, label) numpy/NDArray batches from arrays or from an iterable of batches."""
        if isinstance(X, (np.ndarray, NDArray)):
            X = X.asnumpy() if isinstance(X, NDArray) else X
            if y is not None:
                y = y.asnumpy() if isinstance(y, NDArray) else np.asarray(y)
                if len(y) != len(X):
                    raise MXNetError(f"FeedForward: X has {len(X)} samples but y has {len(y)}")
            order = np.random.permutation(len(X)) if shuffle else np.arange(len(X))
            for s in range(0, len(X), batch_size):
                idx = order[s:s + batch_size]
                yield X[idx], None if y is None else y[idx]
            return
        if y is not None:
            raise MXNetError("FeedForward: y must be None when X is an iterable of batches")
        for batch in X:
            if isinstance(batch, (list, tuple)):
                yield batch[0], (batch[1] if len(batch) > 1 else None)
            else:
                yield batch, None

    def _split(self, data, work_load_list):
        if len(self.ctx) == 1:
            return split_and_load(data, self.ctx, even_split=False)
        return split_and_load(data, self.ctx, even_split=False, work_load_list=work_load_list)

    # ------------------------------------------------------------------ API
    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=None, eval_batch_end_callback=None):
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
        if self.num_epoch is None:
            raise MXNetError("FeedForward.fit: num_epoch is not set")
        if work_load_list is not None and len(work_load_list) != len(self.ctx):
            raise MXNetError(f"FeedForward.fit: work_load_list has {len(work_load_list)} entries "
                             f"for {len(self.ctx)} contexts")
        logger = logger or logging
        self._init()
        loss_fn = self._loss or SoftmaxCrossEntropyLoss()
        trainer = Trainer(self.symbol.collect_params(), self.optimizer, dict(self.kwargs),
                          kvstore=kvstore)
        metric = _metric.create(eval_metric)
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            metric.reset()
            for nbatch, (data, label) in enumerate(self._batches(X, y, self.numpy_batch_size,
                                                                 shuffle=False)):
                if self.epoch_size is not None and nbatch >= self.epoch_size:
                    break
                datas = self._split(data, work_load_list)
                labels = self._split(label, work_load_list)
                with autograd.record():
                    outs = [self.symbol(d) for d in datas]
                    losses = [loss_fn(o, lab) for o, lab in zip(outs, labels, strict=True)]
                autograd.backward(losses)
                trainer.step(sum(d.shape[0] for d in datas))
                metric.update(labels, outs)
                _call(batch_end_callback, BatchEndParam(epoch, nbatch, metric, locals()))
            for name, val in _pairs(metric):
                logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            if eval_data is not None:
                ex, ey = eval_data if isinstance(eval_data, tuple) else (eval_data, None)
                for name, val in _pairs(self._score(ex, ey, eval_metric)):
                    logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            _call(epoch_end_callback, epoch, self.symbol, None, None)
        return self

    def predict(self, X, num_batch=None, return_data=False, reuse_executor=False):
        """The network's outputs for ``X``, as one numpy array (rows in input order)."""
        self._init()
        outs: list[np.ndarray] = []
        datas: list[np.ndarray] = []
        for n, (data, _) in enumerate(self._batches(X, None, self.numpy_batch_size)):
            if num_batch is not None and n >= num_batch:
                break
            parts = self._split(data, None)
            outs.extend(self.symbol(p).asnumpy() for p in parts)
            if return_data:
                datas.append(data.asnumpy() if isinstance(data, NDArray) else np.asarray(data))
        if not outs:
            raise MXNetError("FeedForward.predict: X holds no samples")
        pred = np.concatenate(outs)
        return (pred, np.concatenate(datas)) if return_data else pred

    def score(self, X, y=None, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """Evaluate ``eval_metric`` over ``X`` (with labels ``y`` or in the batches)."""
        m = self._score(X, y, eval_metric, num_batch)
        return m.get()[1]

    def _score(self, X, y, eval_metric, num_batch=None):
        self._init()
        m = _metric.create(eval_metric)
        for n, (data, label) in enumerate(self._batches(X, y, self.numpy_batch_size)):
            if num_batch is not None and n >= num_batch:
                break
            if label is None:
                raise MXNetError("FeedForward.score: the data has no labels")
            parts = self._split(data, None)
            labels = self._split(label, None)
            m.update(labels, [self.symbol(p) for p in parts])
        return m


def _pairs(metric):
    names, vals = metric.get()
    if isinstance(names, str):
        return [(names, vals)]
    return list(zip(names, vals, strict=True))


def _call(callbacks, *args):
    if callbacks is None:
        return
    for cb in callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]:
        cb(*args)
