"""``gluon.Trainer``: applies an optimizer to a set of Parameters, through a KVStore when asked."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from .. import _report, timeline
from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import InvalidUsageError, MXNetError
from ..context import Context
from ..ndarray import _pending
from ._overlap import GradientStream, bucket_bytes_from_env, overlap_from_env
from ._trainer_kv import arrays, choose_store, init_keys, is_sparse, push_sparse, store_method
from .parameter import Parameter
from .parameter_dict import ParameterDict


class Trainer:
    """Applies an optimizer to Parameters, reducing gradients across devices and workers.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        What to train (``net.collect_params()``).
    optimizer : str or Optimizer
        The optimizer's registered name (``'sgd'``) or an instance.
    optimizer_params : dict or None
        Keyword arguments for creating the optimizer (``{'learning_rate': 0.1}``).
    kvstore : str or KVStore or None, default 'device'
        How gradients are reduced: 'device' / 'local' across this process's devices (no store is
        used for one device), 'dist_sync' / 'dist_device_sync' / 'dist_async' across workers.
    compression_params : dict or None
        Gradient compression, as ``KVStore.set_gradient_compression`` takes it (``{'type':
        '2bit', 'threshold': 0.5}``, ``{'type': 'fp16'}``, ``{'type': 'bf16'}``); set on the
        store when the Trainer sets it up, as MXNet does (so it does nothing when no store is
        used).
    update_on_kvstore : bool or None
        Whether the store applies the optimizer (on the servers for dist stores). None picks as
        MXNet does: True when a store is used, except for 'local' stores holding an array above
        16M elements; 'dist_async' requires True. With sparse Parameters MXNet's rules for them
        apply (see ``_trainer_kv``): a row_sparse weight always updates on a store, made even
        for one device; dense weights with sparse gradients update on the workers unless the
        store is distributed.
    overlap : bool or None
        With a distributed store, send each Parameter's gradient while backward still runs, as
        soon as it is final (in buckets of ``MXRS_BUCKET_BYTES``, 4 MiB by default), so that
        ``step`` only waits for what is in flight; with ``update_on_kvstore`` the new weights
        arrive while the next forward starts. None: on, unless ``MXRS_OVERLAP=0``. The numbers
        are the same either way; a program that changes gradients between backward and
        ``step``, or runs backward twice through a Parameter per step, needs it off. Sparse
        Parameters are always sent at ``step``.

    Notes
    -----
    ``step(batch_size)`` rescales gradients by ``1 / batch_size``, the batch on this worker.
    With ``update_on_kvstore`` and a distributed store the servers keep the scale of the first
    step, as in MXNet 1.9.1: a later step with another batch size warns (``UserWarning``, which
    MXNet raises) and trains on with the first scale.
    """

    def __init__(
        self,
        params: ParameterDict | dict[str, Parameter] | Sequence[Parameter],
        optimizer: str | opt.Optimizer,
        optimizer_params: dict[str, Any] | None = None,
        kvstore: str | kvs.KVStoreBase | None = "device",
        compression_params: dict[str, Any] | None = None,
        update_on_kvstore: bool | None = None,
        overlap: bool | None = None,
    ) -> None:
        self._params = _param_list(params)
        self._param2idx: dict[str, int] = {}
        for i, p in enumerate(self._params):
            self._param2idx[p.name] = i
            p._set_trainer(self)
        # MXNet's flags; the store's set-up follows them (see _trainer_kv)
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        self._contains_sparse_grad = any(p._grad_stype != "default" for p in self._params)
        self._contexts: list[Context] | None = None
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        # False until a step fixed the servers' gradient scale (the store may be set up before
        # the first step: load_states, resume_step)
        self._scale_fixed = False
        self._compression_params = compression_params  # given to the store it creates
        self._kvstore: kvs.KVStoreBase | None = None  # set (or left None) by _init_kvstore
        self._update_on_kvstore: bool | None = None
        self._distributed = False
        self._kv_initialized = False
        self._params_to_init = list(self._params)
        # Parameters set_data changed after a distributed store took their values
        self._set_after_servers: set[str] = set()
        self._steps = 0
        self._server_lr: float | None = None
        self._lr_sent = False  # the lr of the current step went to the servers
        self._overlap = overlap_from_env() if overlap is None else bool(overlap)
        self._stream = GradientStream(self, self._send_early, bucket_bytes_from_env())

    # ------------------------------------------------------------------ set-up
    def _init_optimizer(
        self, optimizer: str | opt.Optimizer, optimizer_params: dict[str, Any]
    ) -> None:
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise MXNetError(
                    "Trainer: optimizer_params must be empty when optimizer is an "
                    "Optimizer instance (set them on the instance)"
                )
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters: list[opt.Updater] | None = None  # one per context, by _init_kvstore

    def _check_contexts(self) -> list[Context]:
        contexts = None
        for p in self._params:
            ctx = p.list_ctx()
            if contexts is not None and contexts != ctx:
                raise MXNetError(
                    f"Trainer: all Parameters must live on the same contexts; "
                    f"{p.name} is on {ctx}, others on {contexts}"
                )
            contexts = ctx
        return contexts or []

    def _init_kvstore(self) -> None:
        """Create the store and decide update_on_kvstore, as MXNet's rules say."""
        self._contexts = self._check_contexts()
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        config = self._kvstore_params
        asked = config["update_on_kvstore"]
        kv, update_on_kv = choose_store(
            self._params,
            len(self._contexts),
            config["kvstore"],
            None if asked is None else bool(asked),
        )
        if kv is not None:
            self._distributed = "dist" in kv.type
            if self._compression_params:
                store_method(kv, "set_gradient_compression")(self._compression_params)
            if update_on_kv:
                kv.set_optimizer(self._optimizer)
                self._server_lr = self._optimizer.learning_rate
            if getattr(kv, "rejoined", False) and not update_on_kv:
                raise MXNetError(
                    "Trainer: this worker was restarted into a running job, where only the "
                    "servers hold the weights; it can rejoin only with update_on_kvstore=True "
                    "(the workers' own optimizer states were lost with the process it replaces)"
                )
        # None without a store, as in MXNet
        self._kvstore, self._update_on_kvstore = kv, (None if kv is None else update_on_kv)
        self._kv_initialized = True

    def _ensure_store(self) -> None:
        """Set up the store on first use and put newly initialised Parameters into it."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def _init_params(self) -> None:
        """Put initialised Parameters into the store; every worker starts from rank 0's values."""
        waiting: list[Parameter] = []
        ready: list[Parameter] = []
        for p in self._params_to_init:
            (ready if p._is_initialized() else waiting).append(p)
        if self._kvstore is not None and ready:
            keyed = [(self._param2idx[p.name], p) for p in ready]
            init_keys(self._kvstore, keyed, bool(self._update_on_kvstore), self._distributed)
        self._params_to_init = waiting

    def _data_changed(self, parameter: Parameter) -> None:
        """``parameter.set_data`` was called: where the store holds the weights
        (``update_on_kvstore``) and already holds this one, it is made again at the next step
        from the Parameters' values, as MXNet's Trainer does. The servers of a distributed
        store cannot take a new value: the new weights are this worker's to use (to evaluate
        a model loaded after training), and the next step, which would train on the servers'
        old values, is an error."""
        if (
            self._kv_initialized
            and self._update_on_kvstore
            and parameter not in self._params_to_init
        ):
            if self._kvstore is not None and self._distributed:
                self._set_after_servers.add(parameter.name)
                return
            self._reset_kvstore()

    def _check_servers_current(self) -> None:
        if self._set_after_servers:
            names = ", ".join(sorted(self._set_after_servers))
            raise MXNetError(
                f"Trainer: set_data (or load_parameters) changed Parameters {names} after the "
                "distributed KVStore took their values; the servers keep the values they have, "
                "so training on would ignore the new ones. Set or load weights before the first "
                "step"
            )

    def _row_sparse_pull(
        self, parameter: Parameter, out: Any, row_id: Any, full_idx: bool = False
    ) -> None:
        """Fill ``out`` (a row_sparse array, or a list of them) with rows ``row_id`` of
        ``parameter``'s value in the store (``Parameter.row_sparse_data``); with ``full_idx``
        (every row, to save it), a local store pulls the whole value instead."""
        self._ensure_store()
        kv = self._kvstore
        assert kv is not None  # a sparse weight always has a store
        idx = self._param2idx[parameter.name]
        if full_idx and not self._distributed:
            store_method(kv, "pull")(idx, out=out, priority=-idx, ignore_sparse=False)
        else:
            store_method(kv, "row_sparse_pull")(idx, out=out, priority=-idx, row_ids=row_id)

    def resume_step(self) -> int:
        """The number of steps taken so far: in a worker restarted by ``mxrs-launch
        --max-restarts``, those the job had taken for its rank, so that the script resumes its
        data where the lost process stopped (mxrs).

        In a restarted worker it sets up the store and puts the initialised Parameters into it
        now, instead of at the first step (its ``init`` keeps the job's values and pulls them);
        later steps count on from there, and so does a learning-rate schedule. Elsewhere it
        only creates a distributed store given by name (joining the job), nothing more.
        """
        kv = self._kvstore if self._kv_initialized else self._kvstore_params["kvstore"]
        if isinstance(kv, str) and "dist" in kv:
            kv = self._kvstore_params["kvstore"] = kvs.create(kv)
        if not isinstance(kv, kvs.DistKVStore) or not kv.rejoined or self._steps:
            return self._steps
        self._ensure_store()
        trained = [i for i, p in self._trained() if p not in self._params_to_init]
        if trained:
            self._steps = min(kv.rounds(i) for i in trained)
            kv.resume_at(self._steps)
        return self._steps

    def _reset_kvstore(self) -> None:
        """Forget the (single-process) store so the next step sets it up again (after
        ``Parameter.set_data``; a distributed store's servers keep their values instead, see
        :meth:`_data_changed`)."""
        self._stream.disarm()
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = False
        self._update_on_kvstore = None
        self._scale_fixed = False
        self._params_to_init = list(self._params)

    # ------------------------------------------------------------------ properties
    @property
    def optimizer(self) -> opt.Optimizer:
        """Optimizer: the optimizer this trainer applies."""
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        """float: the optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate, on the servers too when they run the optimizer."""
        self._optimizer.set_learning_rate(lr)
        if self._update_on_kvstore and self._distributed:
            self._send_server_lr(lr)

    # ------------------------------------------------------------------ training
    # With a timeline, a step ends once its requests are complete (see mxrs.timeline).
    @timeline.traced("step", "step", after=_pending.settle_all)
    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """One optimisation step: reduce gradients, then update every Parameter.

        Parameters
        ----------
        batch_size : int
            Gradients are scaled by ``1 / batch_size`` (the batch on this worker).
        ignore_stale_grad : bool, default False
            Skip Parameters whose gradient no backward pass wrote since the last step, instead
            of raising.

        Raises
        ------
        UserWarning
            For a stale gradient, unless ``ignore_stale_grad`` (MXNet raises the same class).
        """
        self._check_servers_current()
        self._prepare(batch_size)
        self._check_stale(ignore_stale_grad)
        self._reduce(update=True)
        if not self._update_on_kvstore:
            self._local_update(ignore_stale_grad)
        else:
            self._consume_fresh()
        self._steps += 1
        self._arm()
        _report.record_step(batch_size)

    @timeline.traced("allreduce_grads", "step", after=_pending.settle_all)
    def allreduce_grads(self) -> None:
        """Sum the gradients over devices and workers, in place (``update_on_kvstore=False``)."""
        self._check_servers_current()
        self._ensure_store()
        if self._update_on_kvstore:
            raise InvalidUsageError(
                "Trainer.allreduce_grads() needs update_on_kvstore=False: the store "
                "applies the optimizer while reducing"
            )
        self._reduce(update=False)

    @timeline.traced("update", "step")
    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Apply the optimizer to reduced gradients (after :meth:`allreduce_grads`)."""
        self._ensure_store()
        if self._update_on_kvstore:
            raise InvalidUsageError(
                "Trainer.update() needs update_on_kvstore=False: the store applies the optimizer"
            )
        self._prepare(batch_size)
        self._check_stale(ignore_stale_grad)
        self._local_update(ignore_stale_grad)
        self._steps += 1
        self._arm()
        _report.record_step(batch_size)

    def _prepare(self, batch_size: int) -> None:
        scale = self._scale / batch_size
        if self._update_on_kvstore and self._distributed and not self._scale_fixed:
            # The store was set up before the first step: the servers learn the scale now.
            assert self._kvstore is not None  # update_on_kvstore is True only with a store
            self._optimizer.rescale_grad = scale
            store_method(self._kvstore, "set_optimizer_params")(rescale_grad=scale)
        elif self._update_on_kvstore and self._distributed:
            if self._optimizer.rescale_grad != scale:  # the servers keep the first step's
                warnings.warn(
                    "Possible change in the `batch_size` from previous `step` detected. "
                    "Optimizer gradient normalizing factor will not change w.r.t new "
                    "batch_size when update_on_kvstore=True and when distributed kvstore is "
                    "used.",
                    UserWarning,
                    stacklevel=3,
                )
        else:
            self._optimizer.rescale_grad = scale
        self._ensure_store()
        self._scale_fixed = True

    def _sync_server_lr(self) -> None:
        """Before this step's first push: send the servers the lr the scheduler gives it."""
        if self._lr_sent or not (self._update_on_kvstore and self._distributed):
            return
        self._lr_sent = True
        o = self._optimizer
        if o.lr_scheduler is not None:
            lr = o.lr_scheduler(o.begin_num_update + self._steps + 1)
            if lr != self._server_lr:
                self._send_server_lr(lr)

    def _send_server_lr(self, lr: float) -> None:
        """Change the servers' lr once this worker's pulls are done: by then every worker's
        pushes of the previous step have arrived and were applied with the old one."""
        assert self._kvstore is not None  # update_on_kvstore is True only with a store
        _pending.settle_all()
        store_method(self._kvstore, "set_optimizer_params")(learning_rate=float(lr))
        self._server_lr = lr

    def _trained(self) -> list[tuple[int, Parameter]]:
        return [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]

    def _check_stale(self, ignore_stale_grad: bool) -> None:
        if ignore_stale_grad:
            return
        for _, p in self._trained():
            for data in arrays(p):
                if not data._fresh_grad:
                    raise UserWarning(
                        f"Gradient of Parameter `{p.name}` on context {data.context} has not been "
                        "updated by backward since last `step`. This could mean a bug in your "
                        "model that made it only use a subset of the Parameters (Blocks) for this "
                        "iteration. If you are intentionally only using a subset, call step with "
                        "ignore_stale_grad=True to suppress this warning and skip updating of "
                        "Parameters with stale gradient"
                    )

    def _reduce(self, update: bool) -> None:
        """Push every gradient not yet sent during backward, and pull what each key gives back:
        reduced gradients, or updated weights with ``update`` on a store that runs the
        optimizer."""
        if self._kvstore is None:
            return
        self._stream.flush()
        sent = self._stream.sent()
        rest = [(i, p) for i, p in self._trained() if i not in sent]
        dense = [i for i, p in rest if not is_sparse(p)]
        if dense:
            self._push(dense, update)
        sparse = [(i, p) for i, p in rest if is_sparse(p)]
        if sparse:
            self._sync_server_lr()
            on_kv = bool(update and self._update_on_kvstore)
            push_sparse(self._kvstore, sparse, on_kv, self._distributed)
        self._stream.next_step()
        self._lr_sent = False

    def _send_early(self, keys: list[int]) -> None:
        """Push Parameters whose gradients backward has just finished (see :meth:`_arm`)."""
        self._push(keys, update=True)

    def _push(self, keys: list[int], update: bool) -> None:
        """One batched pushpull of ``keys``: gradients in, reduced gradients or (with
        ``update`` when the store runs the optimizer) updated weights out; the first layers,
        which the next forward needs first, have the highest priority. A store written on
        ``KVStoreBase`` alone gets one pushpull per key, as MXNet's Trainer calls it."""
        kv = self._kvstore
        assert kv is not None  # only called with a store
        self._sync_server_lr()
        params = self._params
        on_store = update and self._update_on_kvstore
        if not isinstance(kv, kvs.KVStore):
            for i in keys:
                out = params[i].list_data() if on_store else None
                kv.pushpull(i, params[i].list_grad(), out=out, priority=-i)
            return
        grads = [params[i].list_grad() for i in keys]
        priority = -min(keys)
        if on_store:
            outs = [params[i].list_data() for i in keys]
            kv.pushpull(keys, grads, out=outs, priority=priority)
        else:
            kv.pushpull(keys, grads, priority=priority)

    def _arm(self) -> None:
        """After a step: with overlap on a distributed store, have the next backward send
        each Parameter's gradient as soon as it is final."""
        if self._overlap and self._distributed and self._contexts:
            dense = [(i, p) for i, p in self._trained() if not is_sparse(p)]
            self._stream.arm(dense, len(self._contexts))

    def _consume_fresh(self) -> None:
        for _, p in self._trained():
            for data in arrays(p):
                data._fresh_grad = False

    def _local_update(self, ignore_stale_grad: bool) -> None:
        assert self._updaters is not None  # made by _init_kvstore
        scaler = getattr(self, "_amp_loss_scaler", None)  # set by amp.init_trainer
        if scaler is not None and scaler.has_overflow(self._params):
            return  # AMP skips a step whose gradients overflowed
        for i, p in self._trained():
            for updater, arr, grad in zip(
                self._updaters, p.list_data(), p.list_grad(), strict=True
            ):
                if ignore_stale_grad and not arr._fresh_grad:
                    continue
                updater(i, grad, arr)
                arr._fresh_grad = False

    # ------------------------------------------------------------------ states
    def save_states(self, fname: str | os.PathLike[str]) -> None:
        """Save the optimizer's states (from the servers when they run it) to ``fname``."""
        self._ensure_store()
        assert self._updaters is not None  # made by _init_kvstore
        if self._update_on_kvstore:
            assert self._kvstore is not None  # update_on_kvstore is True only with a store
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as f:
                f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str | os.PathLike[str]) -> None:
        """Load optimizer states written by :meth:`save_states`."""
        self._ensure_store()
        assert self._updaters is not None  # made by _init_kvstore
        if self._update_on_kvstore:
            assert self._kvstore is not None  # update_on_kvstore is True only with a store
            self._kvstore.load_optimizer_states(fname)
            if not self._distributed and isinstance(self._kvstore, kvs.KVStore):
                updater = self._kvstore._updater
                assert updater is not None  # set_optimizer made it (update_on_kvstore)
                self._optimizer = updater.optimizer
        else:
            with open(fname, "rb") as f:
                blob = f.read()
            for u in self._updaters:
                u.set_states(blob)
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))


def _param_list(params: Any) -> list[Parameter]:
    if isinstance(params, (dict, ParameterDict)):
        params = list(params.values())
    if not isinstance(params, (list, tuple)):
        raise MXNetError(
            f"Trainer: params must be a ParameterDict, dict or list of Parameters, "
            f"got {type(params).__name__}"
        )
    out, seen = [], set()
    for p in params:
        if not isinstance(p, Parameter):
            raise MXNetError(f"Trainer: params must hold Parameters, got {type(p).__name__}")
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out
