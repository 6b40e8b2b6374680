"""Data parallelism for a Module: one executor per context, each on its slice of every batch.

A batch is cut along its batch axis in proportion to ``work_load_list`` (MXNet's rule: each
share is ``round(load * batch / total)``, the last one takes what rounding left over). Every
context holds its own copy of the parameters; :class:`~mxrs.module.Module` keeps them equal by
applying the same summed gradient to each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu
from ..io import DataDesc
from ..ndarray import NDArray

if TYPE_CHECKING:
    from ..metric import EvalMetric
    from ..symbol import Symbol
    from ..symbol.executor import Executor

__all__ = ["DataParallelExecutorGroup", "split_input_slice"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """The slice of a batch of ``batch_size`` each context gets, by its share of the work.

    Raises
    ------
    MXNetError
        When a context would get no sample.
    """
    total = float(sum(work_load_list))
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for n in counts:
        begin = min(end, batch_size)
        end = min(begin + n, batch_size)
        if begin >= end:
            raise MXNetError(
                f"a batch of {batch_size} cannot be split by work_load_list {list(work_load_list)}:"
                " some contexts would get no sample"
            )
        slices.append(slice(begin, end))
    return slices


def _descs(shapes: Sequence[Any] | None) -> list[DataDesc]:
    """``shapes`` (DataDesc or (name, shape) pairs) as DataDesc."""
    if not shapes:
        return []
    return [s if isinstance(s, DataDesc) else DataDesc(*s) for s in shapes]


def _merge(parts: list[NDArray], axis: int) -> NDArray:
    """One array from the per-context slices (moved to the first one's context)."""
    if len(parts) == 1:
        return parts[0]
    ctx = parts[0].context
    return nd.concat(*[p.as_in_context(ctx) for p in parts], dim=axis)


class DataParallelExecutorGroup:
    """Executors of one symbol on several contexts, the batch cut between them.

    Parameters
    ----------
    symbol : Symbol
    contexts : list of Context
    workload : list of float
        Each context's share of a batch.
    data_shapes, label_shapes : list of DataDesc
    param_names : list of str
        The arguments that are parameters (neither data nor labels).
    for_training, inputs_need_grad : bool
    fixed_param_names : list of str or None
        Parameters that get no gradient.
    grad_req : str or dict of str to str
        'write', 'add' or 'null', for every parameter or by name.
    """

    def __init__(
        self,
        symbol: Symbol,
        contexts: list[Context],
        workload: list[float],
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None,
        param_names: list[str],
        for_training: bool,
        inputs_need_grad: bool,
        fixed_param_names: Sequence[str] | None = None,
        grad_req: str | dict[str, str] = "write",
    ) -> None:
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.param_names = param_names
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.fixed_param_names = list(fixed_param_names or [])
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self._grad_req_arg = grad_req
        self.execs: list[Executor] = []
        self.bind_exec(data_shapes, label_shapes)

    # ------------------------------------------------------------------ binding
    def _grad_reqs(self, data_names: set[str]) -> dict[str, str]:
        reqs = {}
        for name in self.arg_names:
            if not self.for_training:
                reqs[name] = "null"
            elif name in self.param_names:
                if name in self.fixed_param_names:
                    reqs[name] = "null"
                elif isinstance(self._grad_req_arg, dict):
                    reqs[name] = self._grad_req_arg.get(name, "write")
                else:
                    reqs[name] = self._grad_req_arg
            elif name in data_names:
                reqs[name] = "write" if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        return reqs

    def bind_exec(self, data_shapes: Sequence[Any], label_shapes: Sequence[Any] | None) -> None:
        """(Re)bind the executors for batches of these shapes; parameters and auxiliary states
        keep their values where executors existed."""
        self.data_shapes = _descs(data_shapes)
        self.label_shapes = _descs(label_shapes)
        batch_axes = [DataDesc.get_batch_axis(d.layout) for d in self.data_shapes]
        sizes = {d.shape[a] for d, a in zip(self.data_shapes, batch_axes, strict=True)}
        if len(sizes) != 1:
            raise MXNetError(f"all data must have the same batch size, got {self.data_shapes}")
        self.batch_size = sizes.pop()
        self.slices = split_input_slice(self.batch_size, self.workload)
        known = set(self.arg_names)
        inputs = [d for d in self.data_shapes + self.label_shapes if d.name in known]
        reqs = self._grad_reqs({d.name for d in self.data_shapes})
        old = self.execs
        self.execs = []
        for i, ctx in enumerate(self.contexts):
            shapes, types = {}, {}
            for d in inputs:
                axis = DataDesc.get_batch_axis(d.layout)
                shape = list(d.shape)
                shape[axis] = self.slices[i].stop - self.slices[i].start
                shapes[d.name] = tuple(shape)
                types[d.name] = np.dtype(d.dtype)
            exe = self.symbol.simple_bind(ctx, grad_req=reqs, type_dict=types, **shapes)
            if old:
                _keep_values(old[i], exe)
            self.execs.append(exe)
        self._collect_arrays()

    def _collect_arrays(self) -> None:
        execs = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[d.name]) for i, e in enumerate(execs)]
                            for d in self.data_shapes if d.name in execs[0].arg_dict]  # fmt: skip
        self.label_arrays = [[(self.slices[i], e.arg_dict[d.name]) for i, e in enumerate(execs)]
                             for d in self.label_shapes if d.name in execs[0].arg_dict]  # fmt: skip
        self._data_layouts = [DataDesc.get_batch_axis(d.layout) for d in self.data_shapes]
        self._label_layouts = [DataDesc.get_batch_axis(d.layout) for d in self.label_shapes]
        self.param_arrays = [[e.arg_dict[n] for e in execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict.get(n) for e in execs] for n in self.param_names]
        self.aux_arrays = [[e.aux_dict[n] for e in execs] for n in self.aux_names]
        data_names = [d.name for d in self.data_shapes]
        self.input_grad_arrays = (
            [[e.grad_dict[n] for e in execs] for n in data_names if n in execs[0].grad_dict]
            if self.inputs_need_grad
            else []
        )

    # ------------------------------------------------------------------ parameters
    def set_params(
        self, arg_params: dict[str, Any], aux_params: dict[str, Any], allow_extra: bool = False
    ) -> None:
        """Copy parameter values into every context's executor."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray]) -> None:
        """Write the parameters, averaged over the contexts, into the given arrays."""
        for names, blocks, dst in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):  # fmt: skip
            for name, block in zip(names, blocks, strict=True):
                if len(block) == 1:
                    value = block[0].as_in_context(cpu())
                else:
                    value = sum(w.as_in_context(cpu()) for w in block) / len(block)
                dst[name][:] = value.astype(dst[name].dtype)

    # ------------------------------------------------------------------ running
    def _load(self, sources: list[Any], targets: list[Any], axes: list[int]) -> None:
        for src, dst, axis in zip(sources, targets, axes, strict=False):
            if not isinstance(src, NDArray):
                src = nd.array(src)
            for sl, arr in dst:
                if len(dst) == 1 and src.shape == arr.shape:
                    part = src
                else:
                    part = nd.slice_axis(src, axis=axis, begin=sl.start, end=sl.stop)
                if part.shape != arr.shape:
                    raise MXNetError(
                        f"a batch array of shape {src.shape} does not fit the bound input of "
                        f"shape {arr.shape} (per context); bind again or reshape"
                    )
                arr[:] = part.as_in_context(arr.context)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Load the batch's data (and labels, if any) into the executors and run them."""
        self._load(list(data_batch.data), self.data_arrays, self._data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays and data_batch.label:
            self._load(list(data_batch.label), self.label_arrays, self._label_layouts)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads: Sequence[NDArray] | None = None) -> None:
        """Back-propagate on every context; ``out_grads`` are cut like the batch."""
        if not self.for_training:
            raise MXNetError("backward needs a module bound with for_training=True")
        for i, exe in enumerate(self.execs):
            grads = None
            if out_grads is not None:
                sl = self.slices[i]
                grads = [nd.slice_axis(g, axis=0, begin=sl.start, end=sl.stop)
                         .as_in_context(self.contexts[i]) for g in out_grads]  # fmt: skip
            exe.backward(out_grads=grads)

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        """The outputs: per output, one array (merged) or a list with one per context."""
        outs = [[exe.outputs[i] for exe in self.execs] for i in range(len(self.output_names))]
        return [_merge(o, 0) for o in outs] if merge_multi_context else outs

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        """The gradients of the data inputs (bound with ``inputs_need_grad``)."""
        if not self.inputs_need_grad:
            raise MXNetError("input gradients need a module bound with inputs_need_grad=True")
        grads = self.input_grad_arrays
        return [_merge(g, 0) for g in grads] if merge_multi_context else grads

    def update_metric(
        self, eval_metric: EvalMetric, labels: Sequence[Any], pre_sliced: bool
    ) -> None:
        """Update ``eval_metric`` with each context's outputs and its slice of ``labels``."""
        for i, exe in enumerate(self.execs):
            if pre_sliced:
                labels_i = list(labels[i])
            else:
                sl = self.slices[i]
                labels_i = [
                    lab[sl.start : sl.stop] if len(self.execs) > 1 else lab for lab in labels
                ]
            label_names = [d.name for d in self.label_shapes]
            label_dict = dict(zip(label_names, labels_i, strict=False))
            if len(label_dict) < len(labels_i):
                label_dict = {str(k): v for k, v in enumerate(labels_i)}
            eval_metric.update_dict(label_dict, dict(zip(self.output_names, exe.outputs,
                                                         strict=False)))  # fmt: skip

    def install_monitor(self, monitor: Any) -> None:
        """Let ``monitor`` watch every executor."""
        for exe in self.execs:
            monitor.install(exe)


def _keep_values(old: Executor, new: Executor) -> None:
    """Carry parameters and auxiliary states of the same shape into a rebound executor."""
    for src, dst in ((old.arg_dict, new.arg_dict), (old.aux_dict, new.aux_dict)):
        for name, arr in dst.items():
            prev = src.get(name)
            if prev is not None and prev.shape == arr.shape:
                arr[:] = prev
