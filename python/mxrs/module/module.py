"""``Module``: a Symbol trained data-parallel over contexts and KVStores, as MXNet 1.x's.

The parameters are the symbol's arguments that are neither data nor labels. Each context runs
its own executor on a slice of the batch; gradients are summed through a KVStore ('local',
'device' or any dist type) and the optimizer runs either on the store (``update_on_kvstore``:
the store's updater or the parameter servers) or here on every context with the summed
gradient. The choice follows MXNet: one context and no dist store needs no store; the servers
run the optimizer unless ``MXNET_UPDATE_ON_KVSTORE=0``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

from .. import checkpoint as _ckpt
from .. import initializer as _init
from .. import ndarray as nd
from .. import optimizer as _opt
from ..base import MXNetError
from ..context import Context, cpu
from ..io import DataDesc
from ..ndarray import NDArray
from ..symbol import Symbol
from .base_module import BaseModule
from .executor_group import DataParallelExecutorGroup
from .inputs import check_names, names_of, parse_descs
from .kvstore_update import create_kvstore, init_kvstore, update_locally, update_on_kvstore
from .shared_group import SharingExecutorGroup, group_of

__all__ = ["Module"]


class Module(BaseModule):
    """A symbol with its parameters, trained data-parallel (MXNet's ``mx.mod.Module``).

    Parameters
    ----------
    symbol : Symbol
    data_names : sequence of str, default ('data',)
    label_names : sequence of str or None, default ('softmax_label',)
    logger : logging.Logger, default the logging module
    context : Context or list of Context, default cpu()
    work_load_list : list of float or None
        Each context's share of a batch (equal by default).
    fixed_param_names : list of str or None
        Parameters that are not trained.
    state_names : list of str or None
        Arguments that are states set by the user (neither trained nor fed by batches).
    compression_params : dict or None
        Gradient compression for the KVStore (``{'type': '2bit', 'threshold': 0.5}``).
    """

    def __init__(
        self,
        symbol: Symbol,
        data_names: Sequence[str] | None = ("data",),
        label_names: Sequence[str] | None = ("softmax_label",),
        logger: Any = logging,
        context: Context | Sequence[Context] | None = None,
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
        compression_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(logger=logger)
        if not isinstance(symbol, Symbol):
            raise MXNetError(f"Module: symbol must be a Symbol, not {type(symbol).__name__}")
        context = cpu() if context is None else context
        self._context = [context] if isinstance(context, Context) else list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise MXNetError(
                f"Module: work_load_list has {len(work_load_list)} entries for "
                f"{len(self._context)} contexts"
            )
        self._work_load_list = list(work_load_list)
        self._symbol = symbol
        self._data_names = names_of(data_names)
        self._label_names = names_of(label_names)
        self._state_names = names_of(state_names)
        self._fixed_param_names = names_of(fixed_param_names)
        check_names(symbol, self._data_names, "data", True)
        check_names(symbol, self._label_names, "label", False)
        check_names(symbol, self._state_names, "state", True)
        check_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [a for a in symbol.list_arguments() if a not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._compression_params = compression_params
        self._arg_params: dict[str, NDArray] | None = None
        self._aux_params: dict[str, NDArray] | None = None
        self._params_dirty = False
        self._optimizer: Any = None
        self._kvstore: Any = None
        self._update_on_kvstore = False
        self._updater: Any = None
        self._preload_opt_states: str | None = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list[DataDesc] = []
        self._label_shapes: list[DataDesc] = []

    # ------------------------------------------------------------------ checkpoints
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False,
             **kwargs: Any) -> Module:  # fmt: skip
        """A module from the checkpoint ``prefix-symbol.json`` / ``prefix-%04d.params`` (and
        the optimizer states ``prefix-%04d.states`` when asked); ``kwargs`` go to Module."""
        sym, args, auxs = _ckpt.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:  # fmt: skip
        """Write the symbol and parameters (and optimizer states) in MXNet's file format."""
        arg, aux = self.get_params()
        _ckpt.save_checkpoint(prefix, epoch, self._symbol, arg, aux, remove_amp_cast)
        if save_optimizer_states:
            states = f"{prefix}-{epoch:04d}.states"
            self.save_optimizer_states(states)
            self.logger.info('Saved optimizer state to "%s"', states)

    def save_params(self, fname: str) -> None:
        """Write the parameters (``arg:``/``aux:`` names) to ``fname``."""
        _ckpt.save_params_file(fname, *self.get_params())

    def load_params(self, fname: str) -> None:
        """Read parameters written by :meth:`save_params` into the module."""
        self.set_params(*_ckpt.load_params_file(fname))

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self) -> list[str]:
        """The names of the data inputs."""
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        """The names of the label inputs."""
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        """The names of the outputs."""
        return self._output_names

    @property
    def data_shapes(self) -> list[DataDesc]:
        """The bound data shapes."""
        self._check_bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self) -> list[DataDesc]:
        """The bound label shapes."""
        self._check_bound("label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of each output for the bound batch."""
        self._check_bound("output_shapes")
        shapes = {d.name: d.shape for d in self._data_shapes + self._label_shapes
                  if d.name in self._symbol.list_arguments()}  # fmt: skip
        _, out, _ = self._symbol.infer_shape(**shapes)
        return list(zip(self._output_names, [tuple(s) for s in out], strict=True))

    def _check_bound(self, what: str) -> None:
        if not self.binded:
            raise MXNetError(f"{what}: the module is not bound; call bind() first")

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """The parameters and auxiliary states on the CPU, averaged over the contexts."""
        self._check_ready("get_params")
        if self._params_dirty:
            self._sync_params_from_devices()
        assert self._arg_params is not None and self._aux_params is not None
        return self._arg_params, self._aux_params

    def _sync_params_from_devices(self) -> None:
        assert self._exec_group is not None and self._arg_params is not None
        assert self._aux_params is not None
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    def init_params(
        self,
        initializer: Any = None,
        arg_params: dict[str, Any] | None = None,
        aux_params: dict[str, Any] | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Fill the parameters: from ``arg_params``/``aux_params`` where given, the rest by
        ``initializer`` (default ``Uniform(0.01)``; a Variable's own ``init`` attribute wins).

        Raises
        ------
        MXNetError
            When not bound, or a parameter is missing from ``arg_params`` without
            ``allow_missing``.
        """
        if self.params_initialized and not force_init:
            warnings.warn(
                "Parameters already initialized and force_init=False. init_params call ignored.",
                stacklevel=2,
            )
            return
        self._check_bound("init_params")
        if initializer is None and arg_params is None and aux_params is None:
            initializer = _init.Uniform(0.01)
        assert self._arg_params is not None and self._aux_params is not None
        attrs = self._symbol.attr_dict()

        def fill(name: str, arr: NDArray, given: dict[str, Any] | None) -> None:
            desc = _init.InitDesc(name, attrs.get(name))
            if given is not None and name in given:
                if given[name] is not arr:
                    arr[:] = nd.array(given[name]).astype(arr.dtype)
            elif given is not None and not allow_missing:
                raise MXNetError(f"init_params: {name!r} is not in the given parameters")
            elif initializer is not None:
                initializer(desc, arr)

        for name, arr in sorted(self._arg_params.items()):
            fill(name, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            fill(name, arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        assert self._exec_group is not None
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _warn_set_params_ignored(self) -> None:
        warnings.warn(
            "Parameters already initialized and force_init=False. set_params call ignored.",
            stacklevel=3,  # set_params's caller
        )

    def _assign_params(
        self, arg_params: dict[str, Any], aux_params: dict[str, Any] | None, **flags: bool
    ) -> None:
        self._check_bound("set_params")
        assert self._exec_group is not None
        self._exec_group.set_params(arg_params, aux_params or {}, allow_extra=flags["allow_extra"])

    # ------------------------------------------------------------------ binding
    def bind(
        self,
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Module | None = None,
        grad_req: str | dict[str, str] = "write",
    ) -> None:
        """Create the executors for batches of ``data_shapes`` (and ``label_shapes``): lists of
        DataDesc or ``(name, shape)``.

        With ``shared_module`` (a bound Module with initialized parameters, typically another
        bucket of a BucketingModule) the executors use that module's parameter, gradient and
        auxiliary arrays, and its optimizer once it has one.
        """
        if self._bound_already(force_rebind):
            return
        shared_group = None if shared_module is None else group_of(shared_module)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = parse_descs(self._data_names, data_shapes, "data")
        label_names = self._label_names if label_shapes else []
        self._label_shapes = parse_descs(label_names, label_shapes or None, "label")
        self._exec_group = SharingExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            self._fixed_param_names, grad_req, shared_group=shared_group,
        )  # fmt: skip
        self.binded = True
        if shared_module is not None:
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
            self.params_initialized = True
            if shared_module.optimizer_initialized:
                self.borrow_optimizer(shared_module)
        elif self.params_initialized:
            # parameters known before binding (Module.load, or a re-bind): onto the contexts
            assert self._arg_params is not None
            self._exec_group.set_params(self._arg_params, self._aux_params or {})
        else:
            group = self._exec_group
            self._arg_params = {
                n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                for n, b in zip(self._param_names, group.param_arrays, strict=True)
            }
            self._aux_params = {
                n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                for n, b in zip(self._aux_names, group.aux_arrays, strict=True)
            }

    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._data_shapes = []
        self._label_shapes = []

    def reshape(
        self, data_shapes: Sequence[Any], label_shapes: Sequence[Any] | None = None
    ) -> None:
        """Bind again for new input shapes, keeping the parameters."""
        self._check_bound("reshape")
        assert self._exec_group is not None
        self._data_shapes = parse_descs(self._data_names, data_shapes, "data")
        label_names = self._label_names if label_shapes else []
        self._label_shapes = parse_descs(label_names, label_shapes or None, "label")
        self._exec_group.bind_exec(self._data_shapes, self._label_shapes)

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Set up the optimizer and, where one is used, the KVStore (see the module docstring).

        A named optimizer gets ``rescale_grad = 1 / batch`` (the global batch over a dist_sync
        store's workers) and the symbol's ``lr_mult``/``wd_mult`` attributes.
        """
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        assert self._exec_group is not None and self._arg_params is not None
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore = create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv is not None and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        names = self._exec_group.param_names
        n_dev = len(self._context)
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * n_dev + k: n for k in range(n_dev) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = _opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        else:
            if not isinstance(optimizer, _opt.Optimizer):
                raise MXNetError(
                    f"init_optimizer: optimizer must be a name or an Optimizer, not "
                    f"{type(optimizer).__name__}"
                )
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    "Optimizer created manually outside Module but rescale_grad is not "
                    f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. "
                    f"{rescale_grad}). Is this intended?",
                    stacklevel=2,
                )
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
                optimizer.set_wd_mult({})
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kv.set_optimizer(optimizer)
            init_kvstore(kv, names, self._arg_params, self._exec_group.param_arrays,
                         update_on_kvstore)  # fmt: skip
        if not update_on_kvstore:
            self._updater = _opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: Module) -> None:
        """Use another module's optimizer, store and updater."""
        if not shared_module.optimizer_initialized:
            raise MXNetError("borrow_optimizer: the other module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer's states (from the store when it runs the optimizer)."""
        if not self.optimizer_initialized:
            raise MXNetError("save_optimizer_states: no optimizer; call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""
        if not self.optimizer_initialized:
            raise MXNetError("load_optimizer_states: no optimizer; call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # ------------------------------------------------------------------ per batch
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run the network on ``data_batch``; a batch of other shapes rebinds first."""
        self._check_ready("forward")
        assert self._exec_group is not None
        new_shapes = tuple(tuple(d.shape) for d in data_batch.data)
        if new_shapes != tuple(tuple(d.shape) for d in self._data_shapes):
            provided = getattr(data_batch, "provide_data", None)
            old = self._data_shapes
            data = provided or [
                DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(old, new_shapes, strict=True)
            ]
            labels = getattr(data_batch, "provide_label", None)
            if not labels and data_batch.label and self._label_shapes:
                pairs = zip(self._label_shapes, data_batch.label, strict=False)
                labels = [DataDesc(d.name, lab.shape, d.dtype, d.layout) for d, lab in pairs]
            self.reshape(data, labels or None)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Back-propagate the last training forward into the gradient arrays."""
        self._check_ready("backward")
        assert self._exec_group is not None
        if out_grads is not None and not isinstance(out_grads, list | tuple):
            out_grads = [out_grads]
        self._exec_group.backward(out_grads)

    def update(self) -> None:
        """Sum the gradients over contexts and workers and apply the optimizer."""
        self._check_ready("update")
        if not self.optimizer_initialized:
            raise MXNetError("update: no optimizer; call init_optimizer() first")
        assert self._exec_group is not None
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            update_on_kvstore(group.param_arrays, group.grad_arrays, group.param_names,
                              self._kvstore)  # fmt: skip
        else:
            update_locally(group.param_arrays, group.grad_arrays, group.param_names,
                           self._kvstore, self._updater, len(self._context))  # fmt: skip

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        """The outputs of the last forward (merged over the contexts by default)."""
        self._check_ready("get_outputs")
        assert self._exec_group is not None
        return self._exec_group.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        """The gradients of the data inputs (bound with ``inputs_need_grad=True``)."""
        self._check_ready("get_input_grads")
        assert self._exec_group is not None
        return self._exec_group.get_input_grads(merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate the last outputs and ``labels`` into ``eval_metric``."""
        assert self._exec_group is not None
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        """Let ``mon`` (``mx.mon.Monitor``) watch every executor."""
        self._check_bound("install_monitor")
        assert self._exec_group is not None
        self._exec_group.install_monitor(mon)
