"""``BucketingModule``: one Module per bucket key (a sequence length...), all training one set
of parameters, as MXNet 1.9.1's.

``sym_gen(key)`` gives each bucket's ``(symbol, data_names, label_names)``. The default
bucket's module is bound first and owns the parameters; every other bucket's module is bound,
when a batch of its key first comes, with ``shared_module=`` the default one, so its executors
use the default module's parameter, gradient and auxiliary arrays and its optimizer and store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import checkpoint as _ckpt
from .. import initializer as _init
from .. import ndarray as nd
from .. import symbol as _sym
from ..base import MXNetError
from ..context import Context
from ..io import DataBatch, DataDesc
from ..name import NameManager
from ..ndarray import NDArray
from ..symbol import Symbol
from .base_module import BaseModule
from .inputs import check_names, names_of
from .module import Module

__all__ = ["BucketingModule"]

SymGen = Callable[[Any], tuple[Symbol, Sequence[str] | None, Sequence[str] | None]]


class BucketingModule(BaseModule):
    """Modules for inputs of varying shapes (one per bucket key) that share their parameters.

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``.
    default_bucket_key : any
        The key of the bucket bound first (usually the largest); its module owns the
        parameters.
    logger : logging.Logger, default the logging module
    context : Context or list of Context, default cpu()
    work_load_list : list of float or None
    fixed_param_names : list of str or None
    state_names : list of str or None
    group2ctxs : accepted for MXNet compatibility
    compression_params : dict or None
        Gradient compression of the KVStore.

    Raises
    ------
    MXNetError
        Without ``sym_gen`` or ``default_bucket_key``, or when ``sym_gen`` fails for the
        default key or its names are not the symbol's.
    """

    def __init__(
        self,
        sym_gen: SymGen,
        default_bucket_key: Any = None,
        logger: Any = logging,
        context: Context | Sequence[Context] | None = None,
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
        compression_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(logger=logger)
        if sym_gen is None or not callable(sym_gen):
            raise MXNetError("BucketingModule: sym_gen must be a function of the bucket key")
        if default_bucket_key is None:
            raise MXNetError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = names_of(fixed_param_names)
        self._state_names = names_of(state_names)
        check_names(symbol, data_names, "data", True)
        check_names(symbol, label_names, "label", False)
        check_names(symbol, self._state_names, "state", True)
        check_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets: dict[Any, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key: Any = None
        self._params_dirty = False
        self._monitor: Any = None
        self._grad_req: Any = None

    # ------------------------------------------------------------------ buckets
    def _call_sym_gen(self, bucket_key: Any) -> tuple[Symbol, list[str], list[str]]:
        """``sym_gen(bucket_key)`` with fresh automatic names, checked."""
        try:
            with NameManager():
                made = self._sym_gen(bucket_key)
        except MXNetError:
            raise
        except Exception as e:
            raise MXNetError(
                f"BucketingModule: sym_gen failed for bucket key {bucket_key!r}: "
                f"{type(e).__name__}: {e}"
            ) from e
        if not (isinstance(made, tuple | list) and len(made) == 3 and isinstance(made[0], Symbol)):
            raise MXNetError(
                f"BucketingModule: sym_gen({bucket_key!r}) must return (symbol, data_names, "
                f"label_names), not {made!r}"
            )
        return made[0], names_of(made[1]), names_of(made[2])

    def _new_module(self, symbol: Symbol, data_names: list[str], label_names: list[str]) -> Module:
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)  # fmt: skip

    def _module(self, what: str) -> Module:
        if self._curr_module is None:
            raise MXNetError(f"{what}: the module is not bound; call bind() first")
        return self._curr_module

    def _check_bound(self, what: str) -> Module:
        if not self.binded:
            raise MXNetError(f"{what}: the module is not bound; call bind() first")
        return self._module(what)

    @property
    def default_bucket_key(self) -> Any:
        """The key of the bucket whose module owns the parameters."""
        return self._default_bucket_key

    @property
    def curr_bucket_key(self) -> Any:
        """The key of the bucket in use."""
        return self._curr_bucket_key

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self) -> list[str]:
        """The data names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._module("data_names").data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self) -> list[str]:
        """The output names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._module("output_names").output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self) -> list[DataDesc]:
        """The current bucket's data shapes."""
        return self._check_bound("data_shapes").data_shapes

    @property
    def label_shapes(self) -> list[DataDesc]:
        """The current bucket's label shapes."""
        return self._check_bound("label_shapes").label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """The current bucket's output shapes."""
        return self._check_bound("output_shapes").output_shapes

    @property
    def symbol(self) -> Symbol:
        """The current bucket's symbol."""
        return self._check_bound("symbol").symbol

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """The parameters (shared by every bucket) and auxiliary states, on the CPU."""
        if not self.params_initialized:
            raise MXNetError("get_params: the parameters are not initialized")
        module = self._module("get_params")
        if not module.binded:  # loaded, not bound yet
            assert module._arg_params is not None and module._aux_params is not None
            return module._arg_params, module._aux_params
        module._params_dirty = self._params_dirty or module._params_dirty
        params = module.get_params()
        self._params_dirty = False
        return params

    def init_params(
        self,
        initializer: Any = None,
        arg_params: dict[str, Any] | None = None,
        aux_params: dict[str, Any] | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Initialize the parameters (see :meth:`Module.init_params`; default
        ``Uniform(0.01)``)."""
        if self.params_initialized and not force_init:
            return
        module = self._check_bound("init_params")
        if initializer is None and arg_params is None and aux_params is None:
            initializer = _init.Uniform(0.01)
        module.init_params(initializer=initializer, arg_params=arg_params,
                           aux_params=aux_params, allow_missing=allow_missing,
                           force_init=force_init, allow_extra=allow_extra)  # fmt: skip
        self._params_dirty = False
        self.params_initialized = True

    def _assign_params(
        self, arg_params: dict[str, Any], aux_params: dict[str, Any] | None, **flags: bool
    ) -> None:
        module = self._check_bound("set_params")
        module.set_params(arg_params, aux_params, allow_missing=True, **flags)

    # ------------------------------------------------------------------ binding
    def bind(
        self,
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Any = None,
        grad_req: str | dict[str, str] = "write",
    ) -> None:
        """Bind the default bucket's module for ``data_shapes``/``label_shapes`` (the default
        bucket's); other buckets are bound by :meth:`switch_bucket`.

        Raises
        ------
        MXNetError
            With a ``shared_module`` (not supported for bucketing modules), or when the
            default bucket's module cannot be bound for these shapes.
        """
        saved = self.get_params() if self.params_initialized else None
        if self._bound_already(force_rebind):
            return
        if shared_module is not None:
            raise MXNetError("bind: shared_module is not supported for a BucketingModule")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(key))
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, grad_req=grad_req)  # fmt: skip
        self._curr_module = module
        self._curr_bucket_key = key
        self._buckets[key] = module
        self.binded = True
        if saved is not None:
            self.set_params(*saved)

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def switch_bucket(
        self, bucket_key: Any, data_shapes: Sequence[Any] | None,
        label_shapes: Sequence[Any] | None = None,
    ) -> None:  # fmt: skip
        """Make ``bucket_key``'s module the current one, creating (``sym_gen``) and binding it,
        on the default bucket's parameters, the first time.

        Raises
        ------
        MXNetError
            When not bound, for a batch without a bucket key, or when the bucket's module cannot
            be made or bound for these shapes (the message names the bucket).
        """
        current = self._check_bound("switch_bucket")
        if bucket_key is None:
            raise MXNetError("switch_bucket: the batch has no bucket_key")
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(bucket_key))
            self._buckets[bucket_key] = module
        if not module.binded:
            if data_shapes is None:
                raise MXNetError(f"switch_bucket: bucket {bucket_key!r} is new; give its shapes")
            try:
                module.bind(data_shapes, label_shapes, current.for_training,
                            current.inputs_need_grad, force_rebind=False,
                            shared_module=self._buckets[self._default_bucket_key],
                            grad_req=self._grad_req)  # fmt: skip
            except MXNetError as e:
                del self._buckets[bucket_key]
                raise MXNetError(
                    f"switch_bucket: cannot bind bucket {bucket_key!r} for data shapes "
                    f"{list(data_shapes)} and label shapes {label_shapes}: {e}"
                ) from None
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Set up the optimizer on the current module (see :meth:`Module.init_optimizer`); the
        other buckets use the same optimizer and store."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        module = self._module("init_optimizer")
        module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for other in self._buckets.values():
            if other is not module:
                other.borrow_optimizer(module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ per batch
    def prepare(self, data_batch: DataBatch, sparse_row_id_fn: Any = None) -> None:
        """Bind the module of the batch's bucket if needed, then come back to the current one."""
        self._check_ready("prepare")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)  # fmt: skip
        self._module("prepare").prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Switch to the batch's bucket (``data_batch.bucket_key``) and run it."""
        self._check_ready("forward")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)  # fmt: skip
        self._module("forward").forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Back-propagate the current bucket's last forward."""
        self._check_ready("backward")
        self._module("backward").backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply the optimizer to the (shared) parameters with the current bucket's gradients."""
        self._check_ready("update")
        if not self.optimizer_initialized:
            raise MXNetError("update: no optimizer; call init_optimizer() first")
        self._params_dirty = True
        self._module("update").update()

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        """The current bucket's last outputs."""
        self._check_ready("get_outputs")
        return self._module("get_outputs").get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        """The gradients of the current bucket's data inputs (``inputs_need_grad``)."""
        self._check_ready("get_input_grads")
        module = self._module("get_input_grads")
        return module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate the current bucket's last outputs into ``eval_metric``."""
        self._check_ready("update_metric")
        self._module("update_metric").update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        """Let ``mon`` watch every bucket's executors (those bound later too)."""
        self._check_bound("install_monitor")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # ------------------------------------------------------------------ checkpoints
    def save_params(self, fname: str) -> None:
        """Write the parameters (``arg:``/``aux:`` names) to ``fname``."""
        _ckpt.save_params_file(fname, *self.get_params())

    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write ``prefix-%04d.params``, each bound bucket's ``prefix-KEY-symbol.json`` and the
        bucket keys, ``prefix.buckets`` (an int32 array), as MXNet does (integer keys)."""
        if not self._buckets:
            raise MXNetError("save_checkpoint: an empty BucketingModule cannot be saved")
        if not all(isinstance(k, int | np.integer) for k in self._buckets):
            raise MXNetError(
                "save_checkpoint: bucket keys must be integers to be saved, not "
                f"{list(self._buckets)}"
            )
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key, module in self._buckets.items():
            module.symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: SymGen | None = None,
             default_bucket_key: Any = None, **kwargs: Any) -> BucketingModule:  # fmt: skip
        """A BucketingModule from :meth:`save_checkpoint`'s files; ``sym_gen`` (the one used
        when saving) gives the data and label names, ``kwargs`` go to the constructor.

        Raises
        ------
        MXNetError
            Without ``sym_gen`` or ``default_bucket_key``, or for missing files.
        """
        if sym_gen is None:
            raise MXNetError("BucketingModule.load: sym_gen is required")
        if default_bucket_key is None:
            raise MXNetError("BucketingModule.load: default_bucket_key is required")
        saved = nd.load(f"{prefix}.buckets")
        first = saved[0] if isinstance(saved, list) else next(iter(saved.values()))
        keys = [int(k) for k in first.asnumpy().astype("int32").reshape(-1)]
        symbols = {k: _sym.load(f"{prefix}-{k}-symbol.json") for k in keys}
        arg, aux = _ckpt.load_params(prefix, epoch)
        return BucketingModule._from_symbols(symbols, sym_gen, default_bucket_key, arg, aux,
                                             kwargs)  # fmt: skip

    @staticmethod
    def load_dict(sym_dict: dict[Any, Symbol] | None = None, sym_gen: SymGen | None = None,
                  default_bucket_key: Any = None, arg_params: dict[str, Any] | None = None,
                  aux_params: dict[str, Any] | None = None,
                  **kwargs: Any) -> BucketingModule:  # fmt: skip
        """A BucketingModule from symbols by bucket key and their shared parameters.

        Raises
        ------
        MXNetError
            When an argument is missing.
        """
        for what, value in (("sym_dict", sym_dict), ("sym_gen", sym_gen),
                            ("arg_params", arg_params), ("aux_params", aux_params),
                            ("default_bucket_key", default_bucket_key)):  # fmt: skip
            if value is None:
                raise MXNetError(f"BucketingModule.load_dict: {what} is required")
        assert sym_dict is not None and sym_gen is not None
        assert arg_params is not None and aux_params is not None
        return BucketingModule._from_symbols(sym_dict, sym_gen, default_bucket_key, arg_params,
                                             aux_params, kwargs)  # fmt: skip

    @staticmethod
    def _from_symbols(symbols: dict[Any, Symbol], sym_gen: SymGen, default_key: Any,
                      arg: dict[str, Any], aux: dict[str, Any],
                      kwargs: dict[str, Any]) -> BucketingModule:  # fmt: skip
        if default_key not in symbols:
            raise MXNetError(
                f"BucketingModule: default bucket key {default_key!r} is not among the saved "
                f"buckets {sorted(symbols)}"
            )
        mod = BucketingModule(sym_gen, default_key, **kwargs)
        for key, symbol in symbols.items():
            _, data_names, label_names = mod._call_sym_gen(key)
            mod._buckets[key] = mod._new_module(symbol, data_names, label_names)
        default = mod._buckets[default_key]
        default._arg_params = dict(arg)
        default._aux_params = dict(aux)
        default.params_initialized = True
        mod._curr_module = default
        mod.params_initialized = True
        return mod
