"""Executor groups whose parameters are arrays of another group: the buckets of a
``BucketingModule`` train one set of weights.

MXNet binds a bucket's module with ``shared_module=`` the default bucket's: every executor of
the new module reads and writes the very parameter, gradient and auxiliary arrays of the shared
module's executor on the same context. :class:`SharingExecutorGroup` does that, and keeps its
arrays when it binds again for new input shapes (``Module.reshape``), so that modules sharing
them stay in step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from .executor_group import DataParallelExecutorGroup

if TYPE_CHECKING:
    from ..context import Context
    from ..symbol.executor import Executor

__all__ = ["SharingExecutorGroup", "group_of"]


class SharingExecutorGroup(DataParallelExecutorGroup):
    """A :class:`DataParallelExecutorGroup` on the parameter arrays of ``shared_group`` (or,
    without one, on its own arrays across rebinding).

    Parameters
    ----------
    *args, **kwargs
        As for :class:`DataParallelExecutorGroup`.
    shared_group : DataParallelExecutorGroup or None
        The group whose arrays to use; it must have an executor per context of this one and
        every parameter of this one, of the same shape.
    """

    def __init__(self, *args: Any, shared_group: DataParallelExecutorGroup | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        self._shared_group = shared_group
        super().__init__(*args, **kwargs)
        if shared_group is not None and len(shared_group.execs) < len(self.execs):
            raise MXNetError(
                f"bind: the shared module runs on {len(shared_group.execs)} contexts, this one "
                f"on {len(self.execs)}"
            )

    def bind_exec(self, data_shapes: Any, label_shapes: Any) -> None:
        """(Re)bind for these input shapes, on the shared group's arrays (or on the arrays this
        group had before)."""
        shared = self._shared_group
        sources = list(shared.execs) if shared is not None else list(getattr(self, "execs", []))
        super().bind_exec(data_shapes, label_shapes)
        if not sources:
            return
        reqs = self._grad_reqs({d.name for d in self.data_shapes})
        self.execs = [
            self._rebind(ctx, exe, src, reqs)
            for ctx, exe, src in zip(self.contexts, self.execs, sources, strict=False)
        ]
        self._collect_arrays()

    def _rebind(self, ctx: Context, exe: Executor, src: Executor, reqs: dict[str, str]) -> Executor:
        """``exe`` bound again with ``src``'s parameter, gradient and auxiliary arrays (on a
        rebind of its own, only those whose shape stays)."""
        strict = self._shared_group is not None
        args, grads, aux = dict(exe.arg_dict), dict(exe.grad_dict), dict(exe.aux_dict)
        for name in self.param_names:
            if strict and name not in src.arg_dict:
                raise MXNetError(
                    f"bind: parameter {name!r} is not a parameter of the shared module; a "
                    "bucket's symbol may only use parameters of the default bucket's"
                )
            if _usable(name, src.arg_dict.get(name), args[name], strict):
                args[name] = src.arg_dict[name]
                if name in grads and name in src.grad_dict:
                    grads[name] = src.grad_dict[name]
        for name in self.aux_names:
            if _usable(name, src.aux_dict.get(name), aux[name], strict):
                aux[name] = src.aux_dict[name]
        arg_names = self.arg_names
        return self.symbol.bind(
            ctx,
            args=[args[n] for n in arg_names],
            args_grad=[grads.get(n) for n in arg_names],
            grad_req=[reqs[n] if n in grads else "null" for n in arg_names],
            aux_states=[aux[n] for n in self.aux_names],
        )


def group_of(shared_module: Any) -> DataParallelExecutorGroup:
    """The executor group of ``shared_module``, which must be a bound Module whose parameters
    are initialized."""
    group = getattr(shared_module, "_exec_group", None)
    if not isinstance(group, DataParallelExecutorGroup) or not shared_module.params_initialized:
        raise MXNetError(
            "bind: shared_module must be a Module that is bound and has its parameters "
            f"initialized (got {type(shared_module).__name__})"
        )
    return group


def _usable(name: str, shared: Any, own: Any, strict: bool) -> bool:
    """Whether array ``shared`` can stand for ``own``: of one shape (a mismatch with a shared
    module's is an error)."""
    if shared is None:
        return False
    if tuple(shared.shape) == tuple(own.shape):
        return True
    if strict:
        raise MXNetError(
            f"bind: parameter {name!r} has shape {tuple(own.shape)} here but "
            f"{tuple(shared.shape)} in the shared module"
        )
    return False
