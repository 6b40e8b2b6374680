"""The :class:`Updater`: an optimizer bound to per-parameter states, as a callable.

A KVStore or Trainer calls ``updater(index, grad, weight)`` for each parameter; the updater
creates that parameter's state on first use and keeps it in ``states``. ``get_states`` and
``set_states`` save and restore the states (and optionally the optimizer with its update
counts) as bytes, so training can stop and resume with the same numbers.

The bytes are a pickle of plain NumPy copies (sparse states: CPU copies, which pickle with their
storage type): they load without a GPU, as NDArrays on the CPU, and move to each weight's
context the next time that weight is updated. Like MXNet's, they are for files you wrote
yourself: unpickling runs code, so never load states from an untrusted source.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from ..context import Context
from ..ndarray import NDArray, array
from .optimizer import Optimizer

__all__ = ["Updater", "get_updater"]

_CPU = Context("cpu", 0)


def _to_host(state: Any) -> Any:
    """``state`` with every dense NDArray replaced by a NumPy copy and every sparse one by a
    copy on the CPU, which pickles with its storage type (tuples and lists kept)."""
    if isinstance(state, NDArray):
        return state.as_in_context(_CPU) if state._sparse else state.asnumpy()
    if isinstance(state, (tuple, list)):
        return type(state)(_to_host(s) for s in state)
    return state


def _to_context(state: Any, ctx: Context) -> Any:
    """``state`` with every array (NumPy or NDArray) made an NDArray on ``ctx``."""
    if isinstance(state, NDArray):
        if state._ctx == ctx:
            return state
        return state.copyto(ctx) if state._sparse else array(state, ctx=ctx, dtype=state.dtype)
    if isinstance(state, np.ndarray):
        return array(state, ctx=ctx, dtype=state.dtype)
    if isinstance(state, (tuple, list)):
        return type(state)(_to_context(s, ctx) for s in state)
    return state


class Updater:
    """Applies an optimizer to parameters by index, keeping each parameter's state.

    Parameters
    ----------
    optimizer : Optimizer

    Attributes
    ----------
    optimizer : Optimizer
    states : dict
        Each index's state, as ``optimizer.create_state`` returned it.
    states_synced : dict
        Whether each index's state is on its weight's context (False after ``set_states``).

    Examples
    --------
    >>> updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1))
    >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    >>> updater(0, g, w)
    >>> w.asnumpy()
    array([0.9, 0.9], dtype=float32)
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict[int | str, Any] = {}
        self.states_synced: dict[int | str, bool] = {}

    @overload
    def __call__(self, index: int | str, grad: NDArray, weight: NDArray) -> None: ...

    @overload
    def __call__(
        self, index: Sequence[int | str], grad: Sequence[NDArray], weight: Sequence[NDArray]
    ) -> None: ...

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` with ``grad``; lists of indices, gradients and weights work too."""
        if isinstance(index, (list, tuple)):
            for i, g, w in zip(index, grad, weight, strict=True):
                self(i, g, w)
            return
        opt = self.optimizer
        if isinstance(index, bytes):
            index = index.decode()
        opt._set_current_context(weight._ctx.device_id)
        states = self.states
        if index not in states:
            states[index] = opt.create_state_multi_precision(index, weight)
            self.states_synced[index] = True
        elif not self.states_synced[index]:
            states[index] = _to_context(states[index], weight._ctx)
            self.states_synced[index] = True
        opt.update_multi_precision(index, weight, grad, states[index])

    def sync_state_context(self, state: Any, context: Context) -> Any:
        """Return ``state`` with its arrays on ``context``."""
        return _to_context(state, context)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialise the states (and, with ``dump_optimizer``, the optimizer) to bytes.

        Parameters
        ----------
        dump_optimizer : bool, default False
            Also save the optimizer: its hyper-parameters, scheduler and update counts (not its
            ``param_dict``, which a trainer sets again).
        """
        states = {k: _to_host(v) for k, v in self.states.items()}
        return pickle.dumps((states, self.optimizer) if dump_optimizer else states)

    def set_states(self, states: bytes) -> None:
        """Restore what :meth:`get_states` wrote; with a saved optimizer, replace it too.

        Parameters
        ----------
        states : bytes
        """
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], Optimizer):
            loaded, self.optimizer = loaded
        # NDArrays on the CPU until each weight's next update moves them to its context.
        self.states = {k: _to_context(v, _CPU) for k, v in loaded.items()}
        self.states_synced = dict.fromkeys(self.states, False)


def get_updater(optimizer: Optimizer) -> Updater:
    """Return an :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)
