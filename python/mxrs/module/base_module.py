"""``BaseModule``: the training, scoring and prediction loops every module shares.

A module is bound to data shapes, has its parameters initialized and an optimizer set up, then
runs ``forward``/``backward``/``update`` per batch. :meth:`BaseModule.fit` does all of it over a
data iterator, with MXNet's log lines (``Epoch[0] Train-accuracy=...``, ``Time cost``,
``Validation-...``) and callbacks.
"""

from __future__ import annotations

import logging
import time
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import initializer as _init
from .. import metric as _metric
from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataBatch, DataIter
from ..ndarray import NDArray

__all__ = ["BaseModule", "BatchEndParam"]

#: What batch-end callbacks receive: the epoch, the batch number, the metric, the loop's locals.
BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])

_Callbacks = Callable[..., Any] | Sequence[Callable[..., Any]] | None


def _as_list(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, list | tuple) else [obj]


def _call_all(callbacks: _Callbacks, *args: Any) -> None:
    if callbacks is not None:
        for cb in _as_list(callbacks):
            cb(*args)


class BaseModule:
    """The loops of a module; subclasses provide binding, parameters and the per-batch steps.

    Attributes
    ----------
    binded, for_training, inputs_need_grad, params_initialized, optimizer_initialized : bool
    logger : logging.Logger or the logging module
    """

    def __init__(self, logger: Any = logging) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None

    # ------------------------------------------------------------------ per batch
    def forward_backward(self, data_batch: DataBatch) -> None:
        """A training forward then backward on ``data_batch``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch: DataBatch, sparse_row_id_fn: Any = None) -> None:
        """Get ready for ``data_batch`` (nothing to do for dense parameters)."""
        if sparse_row_id_fn is not None:
            raise MXNetError("prepare: sparse_row_id_fn needs row_sparse parameters")

    def _check_ready(self, what: str) -> None:
        if not (self.binded and self.params_initialized):
            raise MXNetError(f"{what}: bind the module and initialize its parameters first")

    # ------------------------------------------------------------------ evaluation
    def score(
        self,
        eval_data: DataIter,
        eval_metric: Any,
        num_batch: int | None = None,
        batch_end_callback: _Callbacks = None,
        score_end_callback: _Callbacks = None,
        reset: bool = True,
        epoch: int = 0,
        sparse_row_id_fn: Any = None,
    ) -> list[tuple[str, float]]:
        """Evaluate ``eval_metric`` over ``eval_data`` (at most ``num_batch`` batches).

        Returns
        -------
        list of (str, float)
            The metric's global name/value pairs.
        """
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            self._update_batch_metric(eval_metric, batch)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            done += 1
        _call_all(score_end_callback, BatchEndParam(epoch, done, eval_metric, locals()))
        return eval_metric.get_global_name_value()

    def _update_batch_metric(self, eval_metric: Any, batch: Any) -> None:
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def iter_predict(
        self,
        eval_data: DataIter,
        num_batch: int | None = None,
        reset: bool = True,
        sparse_row_id_fn: Any = None,
    ) -> Iterator[tuple[list[NDArray], int, DataBatch]]:
        """Yield ``(outputs, batch number, batch)`` for each batch, padding removed."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            yield [o[0 : o.shape[0] - pad] for o in self.get_outputs()], nbatch, batch

    def predict(
        self,
        eval_data: Any,
        num_batch: int | None = None,
        merge_batches: bool = True,
        reset: bool = True,
        always_output_list: bool = False,
        sparse_row_id_fn: Any = None,
    ) -> Any:
        """The outputs over ``eval_data`` (a DataIter, or one NDArray / numpy batch).

        Returns
        -------
        NDArray or list
            With ``merge_batches``, each output concatenated over the batches (one NDArray when
            the symbol has one output and ``always_output_list`` is False); otherwise a list per
            batch of its outputs.
        """
        self._check_ready("predict")
        if isinstance(eval_data, NDArray | np.ndarray):
            self.forward(DataBatch([nd.array(eval_data)]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            kind = type(eval_data).__name__
            raise MXNetError(f"predict: eval_data must be an NDArray or a DataIter, not {kind}")
        output_list = [
            [o.copy() for o in outs]
            for outs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)
        ]
        if not output_list or not merge_batches:
            return output_list
        n = len(output_list[0])
        if any(len(outs) != n for outs in output_list):
            raise MXNetError("predict: the batches have different numbers of outputs; "
                             "use merge_batches=False")  # fmt: skip
        merged = [nd.concat(*[outs[i] for outs in output_list], dim=0) for i in range(n)]
        return merged[0] if n == 1 and not always_output_list else merged

    # ------------------------------------------------------------------ training
    def fit(
        self,
        train_data: DataIter,
        eval_data: DataIter | None = None,
        eval_metric: Any = "acc",
        epoch_end_callback: _Callbacks = None,
        batch_end_callback: _Callbacks = None,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        eval_end_callback: _Callbacks = None,
        eval_batch_end_callback: _Callbacks = None,
        initializer: Any = None,
        arg_params: dict[str, NDArray] | None = None,
        aux_params: dict[str, NDArray] | None = None,
        allow_missing: bool = False,
        force_rebind: bool = False,
        force_init: bool = False,
        begin_epoch: int = 0,
        num_epoch: int | None = None,
        validation_metric: Any = None,
        monitor: Any = None,
        sparse_row_id_fn: Any = None,
    ) -> None:
        """Train: bind to ``train_data``'s shapes, initialize, set up the optimizer on
        ``kvstore``, then run epochs ``begin_epoch`` .. ``num_epoch - 1``.

        After each epoch the parameters are averaged over the contexts, ``epoch_end_callback``
        gets ``(epoch, symbol, arg_params, aux_params)`` and ``eval_data``, if given, is scored
        with ``validation_metric`` (``eval_metric`` by default).
        """
        if num_epoch is None:
            raise MXNetError("fit: please specify the number of epochs (num_epoch)")
        if initializer is None:
            initializer = _init.Uniform(0.01)
        data: Any = train_data  # every iterator has provide_data/_label, not the base class
        self.bind(
            data_shapes=data.provide_data,
            label_shapes=data.provide_label,
            for_training=True,
            force_rebind=force_rebind,
        )
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(
            initializer=initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
        )
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            name_values = self._fit_epoch(
                train_data, epoch, eval_metric, batch_end_callback, monitor, sparse_row_id_fn
            )
            for name, val in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg, aux = self.get_params()  # averaged over the contexts, then the same everywhere
            self.set_params(arg, aux)
            _call_all(epoch_end_callback, epoch, self.symbol, arg, aux)
            if eval_data is not None:
                res = self.score(
                    eval_data,
                    validation_metric,
                    score_end_callback=eval_end_callback,
                    batch_end_callback=eval_batch_end_callback,
                    epoch=epoch,
                )
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _fit_epoch(
        self,
        train_data: DataIter,
        epoch: int,
        eval_metric: Any,
        batch_end_callback: _Callbacks,
        monitor: Any,
        sparse_row_id_fn: Any,
    ) -> list[tuple[str, float]]:
        """One pass over ``train_data``; the next batch is fetched before the callbacks run."""
        batches = iter(train_data)
        try:
            next_batch = next(batches)
        except StopIteration:
            raise MXNetError(f"fit: the training data gave no batch in epoch {epoch}") from None
        nbatch, done = 0, False
        name_values: list[tuple[str, float]] = []
        while not done:
            batch = next_batch
            if monitor is not None:
                monitor.tic()
            self.forward_backward(batch)
            self.update()
            self._update_batch_metric(eval_metric, batch)
            try:
                next_batch = next(batches)
                self.prepare(next_batch, sparse_row_id_fn)
            except StopIteration:
                done = True
            if monitor is not None:
                monitor.toc_print()
            if done:
                name_values = eval_metric.get_global_name_value()
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            nbatch += 1
        return name_values

    # ------------------------------------------------------------------ for subclasses
    @property
    def symbol(self) -> Any:
        """The symbol the module runs."""
        return self._symbol

    def bind(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - abstract
        """Bind to input shapes (see :class:`Module`)."""
        raise NotImplementedError()

    def init_params(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - abstract
        """Initialize the parameters (see :class:`Module`)."""
        raise NotImplementedError()

    def set_params(
        self,
        arg_params: dict[str, Any],
        aux_params: dict[str, Any] | None,
        allow_missing: bool = False,
        force_init: bool = True,
        allow_extra: bool = False,
    ) -> None:
        """Assign parameter values (every parameter unless ``allow_missing``).

        Parameters
        ----------
        arg_params : dict of str to NDArray
            The parameter values, by name.
        aux_params : dict of str to NDArray or None
            The auxiliary-state values, by name.
        allow_missing : bool
            Whether values may be missing; without it this is :meth:`init_params` with no
            initializer.
        force_init : bool
            Whether to assign when the parameters are initialized already (else the call is
            ignored with a warning).
        allow_extra : bool
            Whether the dicts may name parameters the module does not have.
        """
        if not allow_missing:
            self.init_params(None, arg_params, aux_params, allow_missing, force_init, allow_extra)
            return
        if self.params_initialized and not force_init:
            self._warn_set_params_ignored()
            return
        self._assign_params(arg_params, aux_params, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _warn_set_params_ignored(self) -> None:
        """Say that :meth:`set_params` ignores its call (a subclass may warn otherwise)."""
        self.logger.warning("Parameters already initialized and force_init=False. "
                            "set_params call ignored.")  # fmt: skip

    def _assign_params(
        self, arg_params: dict[str, Any], aux_params: dict[str, Any] | None, **flags: bool
    ) -> None:  # pragma: no cover - abstract
        """Assign the values :meth:`set_params` was given, some maybe missing (``flags``: its
        ``force_init`` and ``allow_extra``)."""
        raise NotImplementedError()

    def _bound_already(self, force_rebind: bool) -> bool:
        """The start of ``bind``: unbind first with ``force_rebind``; True (after a warning)
        when still bound, as ``bind`` then does nothing."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return True
        return False

    def _reset_bind(self) -> None:  # pragma: no cover - abstract
        """Forget the binding."""
        raise NotImplementedError()

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:  # pragma: no cover
        """The parameters (see :class:`Module`)."""
        raise NotImplementedError()

    def init_optimizer(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - abstract
        """Set up the optimizer (see :class:`Module`)."""
        raise NotImplementedError()

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:  # pragma: no cover
        """Run the network on a batch (see :class:`Module`)."""
        raise NotImplementedError()

    def backward(self, out_grads: Any = None) -> None:  # pragma: no cover - abstract
        """Back-propagate (see :class:`Module`)."""
        raise NotImplementedError()

    def update(self) -> None:  # pragma: no cover - abstract
        """Apply the optimizer (see :class:`Module`)."""
        raise NotImplementedError()

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate the last outputs into ``eval_metric`` (see :class:`Module`)."""
        raise NotImplementedError()  # pragma: no cover - abstract

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:  # pragma: no cover
        """The last outputs (see :class:`Module`)."""
        raise NotImplementedError()

    def install_monitor(self, mon: Any) -> None:  # pragma: no cover - abstract
        """Install a monitor (see :class:`Module`)."""
        raise NotImplementedError()
