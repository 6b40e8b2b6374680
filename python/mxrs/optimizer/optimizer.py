"""The :class:`Optimizer` base class, the optimizer registry and the server spec.

An optimizer turns a gradient into a weight update. This module holds what every optimizer
shares, with MXNet 1.x's semantics:

- hyper-parameters common to all (``learning_rate``, ``wd``, ``rescale_grad``, ``clip_gradient``,
  ``lr_scheduler``, ``begin_num_update``, ``multi_precision``);
- per-parameter learning-rate and weight-decay multipliers, looked up by index through
  ``param_dict`` (Gluon ``Parameter`` objects), then ``set_lr_mult``/``set_wd_mult`` entries by
  index, then by name through ``param_idx2name``;
- the update counts: ``_index_update_count[index]`` (one table per device, as MXNet keeps so
  that multi-device training counts each step once) and ``num_update``, their maximum, which is
  what the learning-rate scheduler sees;
- the registry behind :func:`create` (``@register`` keys classes by lower-case name);
- :meth:`Optimizer.to_spec`, the name and numbers an optimizer travels to the parameter servers
  as (never a pickle), under the names the servers' native updaters take.

Subclasses implement ``create_state`` and ``_step``: :meth:`Optimizer.update` checks the arrays,
counts the update, computes the learning rate and weight decay for the index, and calls
``_step`` with the raw NumPy/CuPy arrays, the array module ``xp``, and the device made current.
Updates change ``weight`` in place and are never recorded by autograd; those involving sparse
arrays (lazy updates from ``row_sparse`` gradients included) run ``_step`` through ``_sparse``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy

from ..base import ContextError, MXNetError
from ..ndarray import NDArray
from . import _sparse

if TYPE_CHECKING:
    from ..lr_scheduler import LRScheduler

__all__ = ["Optimizer", "register", "create"]

_log = logging.getLogger(__name__)
_O = TypeVar("_O", bound="type[Optimizer]")


class Optimizer:
    """The base class of all optimizers.

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Multiplies every gradient before use; often ``1.0 / batch_size``.
    param_idx2name : dict of int to str, optional
        Names of the parameters by index. When given, parameters whose names end neither in
        ``_weight`` nor in ``_gamma`` get no weight decay (``wd_mult`` 0), as in MXNet.
    wd : float, default 0.0
        Weight decay (L2 regularisation) coefficient.
    clip_gradient : float, optional
        Clips the rescaled gradient into ``[-clip_gradient, clip_gradient]``. None (or a
        negative value) turns clipping off.
    learning_rate : float, optional
        The learning rate; 0.01 when neither it nor ``lr_scheduler`` is given. When both are
        given, it replaces the scheduler's ``base_lr``.
    lr_scheduler : LRScheduler, optional
        Computes the learning rate from ``num_update``.
    sym : object, optional
        Anything with MXNet's ``attr_dict()`` and ``list_arguments()`` (a Symbol), whose
        ``__lr_mult__``/``__wd_mult__`` attributes seed the multipliers.
    begin_num_update : int, default 0
        The update count each parameter starts from.
    multi_precision : bool, default False
        Update float16 weights through a float32 master copy (``update_multi_precision``).
    param_dict : dict of int to Parameter, optional
        Parameters by index; their ``lr_mult``/``wd_mult`` attributes take precedence.

    Examples
    --------
    >>> opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    >>> opt.update(0, w, g, opt.create_state(0, w))
    >>> w.asnumpy()
    array([0.9, 0.9], dtype=float32)
    """

    opt_registry: dict[str, type[Optimizer]] = {}
    #: The name the parameter servers run this optimizer under; None when they do not run it.
    _server_name: str | None = None

    def __init__(
        self,
        rescale_grad: float = 1.0,
        param_idx2name: dict[int, str] | None = None,
        wd: float = 0.0,
        clip_gradient: float | None = None,
        learning_rate: float | None = None,
        lr_scheduler: LRScheduler | None = None,
        sym: Any = None,
        begin_num_update: int = 0,
        multi_precision: bool = False,
        param_dict: dict[int, Any] | None = None,
    ) -> None:
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr: float | None = learning_rate  # None only when a scheduler gives the rate
        if lr_scheduler is not None and learning_rate is not None:
            if lr_scheduler.base_lr != learning_rate:
                _log.warning(
                    "learning rate from ``lr_scheduler`` has been overwritten by "
                    "``learning_rate`` in optimizer."
                )
                lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict[int | str, float] = {}
        self.wd_mult: dict[int | str, float] = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict[int, dict[int | str, int]] = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise MXNetError(
                "param_idx2name should be a dict of param indexes to names, got "
                f"{type(param_idx2name).__name__}"
            )
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ----------------------------------------------------------------- registry
    @staticmethod
    def register(klass: _O) -> _O:
        """Register optimizer class ``klass`` under its lower-case class name.

        Examples
        --------
        >>> @mx.optimizer.Optimizer.register
        ... class MyOptimizer(mx.optimizer.Optimizer):
        ...     pass
        >>> type(mx.optimizer.create('myoptimizer')).__name__
        'MyOptimizer'
        """
        if not isinstance(klass, type):
            raise MXNetError(f"register expects an Optimizer class, got {klass!r}")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(
                f"New optimizer {klass.__module__}.{klass.__name__} is overriding "
                f"existing optimizer {old.__module__}.{old.__name__}",
                stacklevel=2,
            )
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """Instantiate the optimizer registered as ``name`` (case-insensitive) with ``kwargs``.

        Raises
        ------
        MXNetError
            When no optimizer is registered under ``name``.
        """
        if not isinstance(name, str):
            raise MXNetError(f"optimizer name must be a str, got {type(name).__name__}")
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            known = ", ".join(sorted(Optimizer.opt_registry))
            raise MXNetError(f"Cannot find optimizer {name!r}; registered optimizers: {known}")
        return klass(**kwargs)

    # ----------------------------------------------------------------- learning rate
    @property
    def learning_rate(self) -> float:
        """float: the current learning rate (the scheduler's value at ``num_update`` if set)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return cast(float, self.lr)

    def set_learning_rate(self, lr: float) -> None:
        """Set a new learning rate.

        Raises
        ------
        UserWarning
            When an ``lr_scheduler`` is set: the scheduler owns the learning rate (MXNet 1.x
            raises this warning class as an exception, and so does mxrs).
        """
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of "
                "the optimizer only when the LRScheduler of the optimizer is "
                "undefined."
            )
        self.lr = lr

    def set_lr_mult(self, args_lr_mult: dict[int | str, float]) -> None:
        """Set learning-rate multipliers by parameter name or index.

        Replaces all earlier entries. Names refer to ``param_idx2name``/``sym``; indices to the
        ``index`` passed to :meth:`update`. Multipliers from ``param_dict`` take precedence.
        """
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict[int | str, float]) -> None:
        """Set weight-decay multipliers by parameter name or index.

        Replaces all earlier entries. As in MXNet, every name in ``param_idx2name`` that ends
        neither in ``_weight`` nor in ``_gamma`` (biases, BatchNorm's beta...) first gets 0.
        """
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def set_lr_scale(self, args_lrscale: Any) -> None:
        """Deprecated since MXNet 0.x: use :meth:`set_lr_mult`."""
        raise MXNetError("set_lr_scale is deprecated; use set_lr_mult")

    # ----------------------------------------------------------------- counts and lookups
    def _set_current_context(self, device_id: int) -> None:
        """Use the update counts of device ``device_id`` (one table per device, as MXNet)."""
        counts = self._all_index_update_counts.get(device_id)
        if counts is None:
            counts = self._all_index_update_counts[device_id] = {}
        self._index_update_count = counts

    def _update_count(self, index: int | str | Sequence[int | str]) -> None:
        """Count one update of ``index`` (or of each index in a list) and refresh num_update."""
        counts = self._index_update_count
        for idx in index if isinstance(index, (list, tuple)) else (index,):
            n = counts.get(idx, self.begin_num_update) + 1
            counts[idx] = n
            if n > self.num_update:
                self.num_update = n

    def _get_lr_mult(self, index: int | str) -> float:
        """The learning-rate multiplier of ``index`` (1.0 when none is set)."""
        if index in self.param_dict:
            return self.param_dict[index].lr_mult
        if index in self.lr_mult:
            return self.lr_mult[index]
        if index in self.idx2name:
            return self.lr_mult.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_wd_mult(self, index: int | str) -> float:
        """The weight-decay multiplier of ``index`` (1.0 when none is set)."""
        if index in self.param_dict:
            return self.param_dict[index].wd_mult
        if index in self.wd_mult:
            return self.wd_mult[index]
        if index in self.idx2name:
            return self.wd_mult.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lr(self, index: int | str) -> float:
        """The learning rate of ``index``: the current learning rate times its multiplier."""
        sched = self.lr_scheduler
        lr = cast(float, self.lr) if sched is None else sched(self.num_update)
        return lr * self._get_lr_mult(index)

    def _get_wd(self, index: int | str) -> float:
        """The weight decay of ``index``: ``wd`` times its multiplier."""
        return self.wd * self._get_wd_mult(index)

    # ----------------------------------------------------------------- states and updates
    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """Create the auxiliary state (momentum, moments...) for ``weight``; None if none.

        Parameters
        ----------
        index : int or str
            The parameter's unique index.
        weight : NDArray
            The parameter; states are created on its context with its dtype.
        """
        return None

    def create_state_multi_precision(self, index: int | str, weight: NDArray) -> Any:
        """The state for ``weight``: with ``multi_precision`` and a float16 weight, a float32
        master copy of the weight and the state created for that copy, ``(master, state)``
        (updates then run in float32); otherwise :meth:`create_state`'s."""
        if self._keeps_master(weight):
            master = weight.astype(numpy.float32)
            return (master, self.create_state(index, master))
        return self.create_state(index, weight)

    def _keeps_master(self, weight: NDArray) -> bool:
        return bool(self.multi_precision) and weight.dtype == numpy.float16

    def _update_master(
        self, index: int | str, weight: NDArray, grad: NDArray, master: NDArray, state: Any
    ) -> None:
        """Update the float32 ``master`` from ``grad``, then ``weight`` from it (lazily: rows)."""
        grad32 = grad.astype(numpy.float32)
        self.update(index, master, grad32, state)
        _sparse.copy_master(self, weight, master, grad32, state)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` in place from ``grad`` and ``state``.

        Parameters
        ----------
        index : int or str, or a list of them
            The parameter's unique index (selects multipliers and the update count). With a
            list, ``weight``, ``grad`` and ``state`` are lists of the same length too and each
            parameter is updated as on its own (MXNet's multi-tensor form).
        weight : NDArray
            The parameter, changed in place.
        grad : NDArray
            Its gradient, on the same context and of the same shape; never changed.
        state : any
            What :meth:`create_state` returned for this parameter.

        Raises
        ------
        ContextError
            When ``grad`` lives on another context than ``weight``.
        MXNetError
            When the shapes differ.

        Notes
        -----
        Sparse arrays follow MXNet 1.9.1 (see ``_sparse``): a ``row_sparse`` gradient changes
        only its rows with the optimizers that update lazily (SGD and Adam with
        ``lazy_update``, AdaGrad, FTRL on row_sparse weights), every row with the others.
        """
        if isinstance(index, (list, tuple)):
            for i, w1, g1, s1 in _zip_multi(index, weight, grad, state):
                self.update(i, w1, g1, s1)
            return
        lr, wd = self._begin_update(index, weight, grad)
        ctx = weight._ctx
        be = ctx.backend
        with be.guard(ctx.device_id):
            if weight._sparse or grad._sparse or _sparse.has_sparse(state):
                _sparse.update(self, be.xp, index, weight, grad, state, lr, wd)
            else:
                self._step(be.xp, index, weight._data, grad._data, state, lr, wd)

    def _begin_update(self, index: Any, weight: NDArray, grad: NDArray) -> tuple[float, float]:
        """Check ``grad`` against ``weight``, count the update and return ``(lr, wd)`` for it.

        Raises
        ------
        ContextError
            When ``grad`` lives on another context than ``weight``.
        MXNetError
            When the shapes differ.
        """
        ctx = weight._ctx
        if grad._ctx is not ctx and grad._ctx != ctx:
            raise ContextError(
                f"optimizer update of parameter {index!r}: the weight is on "
                f"{ctx} but its gradient on {grad._ctx}"
            )
        if tuple(grad.shape) != tuple(weight.shape):
            raise MXNetError(
                f"optimizer update of parameter {index!r}: gradient shape "
                f"{tuple(grad.shape)} does not match weight shape {tuple(weight.shape)}"
            )
        self._update_count(index)
        # Python floats, so that float32 arrays stay float32 (NumPy scalars would promote).
        return float(self._get_lr(index)), float(self._get_wd(index))

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` with a state from :meth:`create_state_multi_precision`: through
        its float32 master copy when it keeps one, else as :meth:`update`. Takes lists as
        :meth:`update` does."""
        if isinstance(index, (list, tuple)):
            for i, w1, g1, s1 in _zip_multi(index, weight, grad, state):
                self.update_multi_precision(i, w1, g1, s1)
        elif self._keeps_master(weight):
            master, inner = self._master_and_state(state)
            self._update_master(index, weight, grad, master, inner)
        else:
            self.update(index, weight, grad, state)

    def _master_and_state(self, state: Any) -> tuple[NDArray, Any]:
        """Split a multi-precision state into the master copy and the optimizer's own state."""
        master, inner = state
        return master, inner

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        """Apply one update to raw array ``w`` from raw gradient ``g``; see :meth:`update`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update")

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        """Whether a row_sparse gradient updates only its rows (MXNet's lazy update); no here."""
        return False

    def _lazy_step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        """:meth:`_step` on the row blocks of a lazy update (by default :meth:`_step` itself)."""
        self._step(xp, index, w, g, state, lr, wd)

    # ----------------------------------------------------------------- helpers for subclasses
    def _rescaled(self, xp: Any, g: Any, w: Any, wd: float = 0.0) -> Any:
        """A new array ``clip(rescale_grad * g + wd * w)``; ``wd=0`` skips the decay term.

        Clipping follows MXNet's fused kernels: only a positive ``clip_gradient`` clips.
        """
        t = xp.multiply(g, float(self.rescale_grad))
        if wd:
            t += xp.multiply(w, wd)
        c = self.clip_gradient
        if c is not None and c > 0:
            c = float(c)
            xp.clip(t, -c, c, out=t)
        return t

    # ----------------------------------------------------------------- server spec
    def to_spec(self) -> tuple[str, list[tuple[str, float]]]:
        """Describe this optimizer as the parameter servers' native updaters take it.

        Returns
        -------
        tuple of (str, list of (str, float))
            The servers' name for the optimizer and its hyper-parameters under MXNet's
            constructor names: the current learning rate (from the scheduler when set), ``wd``,
            ``rescale_grad``, ``clip_gradient`` (left out when None), ``begin_num_update``,
            ``multi_precision`` (0.0/1.0), then the optimizer's own (booleans as 0.0/1.0, unset
            optional values left out). Per-parameter multipliers are not included: see
            :meth:`_get_lr_mult` and :meth:`_get_wd_mult`.

        Raises
        ------
        MXNetError
            For an optimizer the servers do not run (custom ones, FTRL): use
            ``update_on_kvstore=False`` so that workers update.

        Examples
        --------
        >>> mx.optimizer.SGD(learning_rate=0.1, momentum=0.9).to_spec()[1][:2]
        [('learning_rate', 0.1), ('wd', 0.0)]
        """
        name = type(self).__dict__.get("_server_name")
        if name is None:
            raise MXNetError(
                f"optimizer {type(self).__name__} cannot run on the parameter "
                "servers; use update_on_kvstore=False to update on the workers"
            )
        params = [
            ("learning_rate", float(self.learning_rate)),
            ("wd", float(self.wd)),
            ("rescale_grad", float(self.rescale_grad)),
        ]
        if self.clip_gradient is not None:
            params.append(("clip_gradient", float(self.clip_gradient)))
        params.append(("begin_num_update", float(self.begin_num_update)))
        params.append(("multi_precision", 1.0 if self.multi_precision else 0.0))
        params.extend(self._spec_params())
        return name, params

    def _spec_params(self) -> list[tuple[str, float]]:
        """The optimizer's own hyper-parameters for :meth:`to_spec`."""
        return []

    # ----------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("param_dict", None)  # Parameters stay with the model; a trainer sets them
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Pickle keeps ``_index_update_count`` the same dict as its entry in
        # ``_all_index_update_counts``, so the restored counts stay shared.
        self.__dict__.update(state)
        self.param_dict = {}


#: ``_zeros_state(weight, stype='default')``: a zero state like ``weight`` of storage type
#: ``stype`` (MXNet keeps some states in the weight's storage type, others dense).
_zeros_state = _sparse.zeros_state


register = Optimizer.register
create = Optimizer.create_optimizer


def _zip_multi(index: Any, weight: Any, grad: Any, state: Any) -> Any:
    """The parameters of a multi-tensor update, one by one; the lists must be equally long."""
    n = len(index)
    for name, seq in (("weight", weight), ("grad", grad), ("state", state)):
        if not isinstance(seq, (list, tuple)) or len(seq) != n:
            got = f"{len(seq)} items" if isinstance(seq, (list, tuple)) else type(seq).__name__
            raise MXNetError(f"optimizer update: {n} indices need a list of {n} {name}s, got {got}")
    return zip(index, weight, grad, state, strict=True)
