"""Python optimizers on the parameter servers, as MXNet 1.9.1 runs them: pickled by a worker,
unpickled and run by each server.

An optimizer the servers run natively travels as its name and numbers
(:meth:`~mxrs.optimizer.Optimizer.to_spec`); any other (a ``@mx.optimizer.register``
subclass, ``mx.optimizer.Test``...) travels pickled: :func:`pickled` is the worker's side. A
server started from Python (``import mxrs`` in a process whose ``DMLC_ROLE`` is ``server``,
what ``mxrs-launch`` starts) builds a :class:`ServerOptimizer` from the bytes and runs it, as
MXNet's servers do: for each piece of a key it holds (a 1-D slice of a dense key, whole rows
of a row_sparse one) it keeps a state made by ``create_state_multi_precision`` and applies
``update_multi_precision`` to every round's summed gradient. The ``ps-server`` binary runs
without Python and refuses such an optimizer.

The optimizer's class must be importable on the servers under the name it was pickled with,
so it cannot live in the script being run (``__main__``); unpickling runs code, as it does in
MXNet: run servers and workers of one job only.
"""

from __future__ import annotations

import pickle
import sys
import traceback
from typing import Any

import numpy as np

from .. import optimizer as opt
from ..base import KVStoreError, MXNetError
from ..context import Context
from ..ndarray.ndarray import NDArray, _wrap
from ..ndarray.sparse import row_sparse_array
from ..optimizer.updater import _to_context, _to_host

__all__ = ["pickled", "ServerOptimizer"]

_CPU = Context("cpu", 0)
#: The spec name of a pickled optimizer (the servers' ``FOREIGN``), followed by ``:<class>``.
_SPEC_NAME = "python"


def _class_name(optimizer: object) -> str:
    klass = type(optimizer)
    return f"{klass.__module__}.{klass.__qualname__}"


def pickled(optimizer: opt.Optimizer) -> tuple[str, bytes]:
    """The spec name and bytes a worker sends for an optimizer the servers run in Python.

    Returns
    -------
    tuple of (str, bytes)
        ``python:<module>.<class>`` and the pickled optimizer.

    Raises
    ------
    KVStoreError
        When the optimizer cannot be pickled, or its class is defined in the script being run
        (``__main__``), where the servers cannot import it.
    """
    name = _class_name(optimizer)
    advice = "or train with update_on_kvstore=False to update on the workers"
    if type(optimizer).__module__ == "__main__":
        raise KVStoreError(
            f"the servers cannot run optimizer {type(optimizer).__qualname__}: its class is "
            "defined in the script being run (__main__), which the server processes cannot "
            f"import; define it in a module both workers and servers import, {advice}"
        )
    try:
        blob = pickle.dumps(optimizer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001  (whatever pickling raises is reported)
        raise KVStoreError(
            f"the servers cannot run optimizer {name}: it cannot be pickled to be sent to "
            f"them ({type(e).__name__}: {e}); make it picklable, {advice}"
        ) from e
    return f"{_SPEC_NAME}:{name}", blob


class ServerOptimizer:
    """A pickled optimizer run by a server, with a state per piece of a key.

    Parameters
    ----------
    blob : bytes
        What :func:`pickled` made.

    Raises
    ------
    MXNetError
        When the bytes cannot be unpickled here (the class is not importable on the server),
        or do not hold an optimizer.
    """

    def __init__(self, blob: bytes) -> None:
        try:
            optimizer = pickle.loads(blob)
        except Exception as e:  # noqa: BLE001  (whatever unpickling raises is reported)
            raise MXNetError(
                f"the server cannot unpickle the optimizer ({type(e).__name__}: {e}); its "
                "class must be importable on the servers (define it in a module on their "
                "PYTHONPATH), or train with update_on_kvstore=False"
            ) from e
        for method in ("create_state_multi_precision", "update_multi_precision"):
            if not callable(getattr(optimizer, method, None)):
                raise MXNetError(
                    f"the server got a {_class_name(optimizer)}, which has no {method}: not "
                    "an optimizer"
                )
        self.optimizer = optimizer
        #: ``module.Class`` of the optimizer, for messages.
        self.name = _class_name(optimizer)
        self._states: dict[tuple[int, int], Any] = {}
        # Each piece's update count: a server may hold two pieces of one key (a backup's copy
        # it took over), which must not count each other's updates.
        self._counts: dict[tuple[int, int], int] = {}
        self._reported = False  # whether a failed update's traceback was printed

    def _state(self, key: int, offset: int, weight: NDArray) -> Any:
        state = self._states.get((key, offset), _MISSING)
        if state is _MISSING:
            state = self.optimizer.create_state_multi_precision(key, weight)
            self._states[(key, offset)] = state
        return state

    def _counts_of(self) -> dict[Any, int] | None:
        """The optimizer's update counts by index (None for one that keeps none)."""
        counts = getattr(self.optimizer, "_index_update_count", None)
        return counts if isinstance(counts, dict) else None

    def _run(self, what: str, key: int, weight: NDArray, grad: NDArray, offset: int) -> None:
        counts = self._counts_of()
        if counts is not None:  # the optimizer counts this piece's updates
            count = self._counts.get((key, offset))
            if count is None:
                counts.pop(key, None)
            else:
                counts[key] = count
        try:
            state = self._state(key, offset, weight)
            self.optimizer.update_multi_precision(key, weight, grad, state)
        except Exception as e:  # noqa: BLE001  (reported to the workers as the update's error)
            if not self._reported:
                # The workers get the message; the server's log gets where it came from.
                self._reported = True
                traceback.print_exc(file=sys.stderr)
            raise MXNetError(f"{self.name}.{what} raised {type(e).__name__}: {e}") from e
        finally:
            # What the update counted stays counted, failed or not (as without pieces).
            if counts is not None and key in counts:
                self._counts[(key, offset)] = counts[key]

    def update(self, key: int, offset: int, weight: np.ndarray, grad: np.ndarray) -> None:
        """Update ``weight`` (the piece at element ``offset`` of ``key``, 1-D) in place with
        the round's summed gradient ``grad``."""
        w, g = _wrap(weight, _CPU), _wrap(grad, _CPU)
        self._run("update_multi_precision", key, w, g, offset)
        if w._data is not weight:
            np.copyto(weight, w._data)

    def update_rows(
        self,
        key: int,
        offset: int,
        weight: np.ndarray,
        row_len: int,
        rows: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """Update ``weight`` (whole rows of ``row_len`` elements of a row_sparse key, flat) in
        place with a round that carried rows ``rows`` (indices into the piece) of gradient
        ``values`` (flat, one row each): the optimizer gets both as 2-D row_sparse arrays, as
        MXNet's servers give them."""
        dense = weight.reshape(-1, row_len)
        shape = dense.shape
        w = row_sparse_array((dense, np.arange(shape[0])), shape=shape, ctx=_CPU)
        g = row_sparse_array((values.reshape(-1, row_len), rows), shape=shape, ctx=_CPU)
        try:
            self._run("update_multi_precision", key, w, g, offset)
        except MXNetError as e:
            raise MXNetError(
                f"{e} (on a row_sparse gradient of key {key}; an optimizer that cannot take "
                "row_sparse gradients needs update_on_kvstore=False)"
            ) from e
        np.copyto(dense, w.asnumpy())

    def set_params(
        self, params: list[tuple[str, float]], key_mults: list[tuple[int, float, float]]
    ) -> None:
        """Change ``learning_rate`` and ``rescale_grad`` (what ``set_optimizer_params``
        changes) and per-key multipliers ``(key, lr_mult, wd_mult)``.

        Raises
        ------
        MXNetError
            For another hyper-parameter; nothing changes then.
        """
        unknown = [n for n, _ in params if n not in ("learning_rate", "rescale_grad")]
        if unknown:
            raise MXNetError(
                f"cannot change {', '.join(unknown)} of optimizer {self.name} on the servers; "
                "only learning_rate and rescale_grad"
            )
        o = self.optimizer
        for name, value in params:
            if name == "learning_rate":
                o.set_learning_rate(value)
            else:
                o.rescale_grad = value
        for key, lr_mult, wd_mult in key_mults:
            o.lr_mult[key] = lr_mult
            o.wd_mult[key] = wd_mult

    def save_state(self, key: int, offset: int) -> bytes | None:
        """The state of the piece at ``offset`` of ``key`` and the key's update count, pickled;
        None before its first update."""
        if (key, offset) not in self._states:
            return None
        state = _to_host(self._states[(key, offset)])
        count = self._counts.get((key, offset))
        return pickle.dumps((state, count), protocol=pickle.HIGHEST_PROTOCOL)

    def load_states(self, pieces: list[tuple[int, int, bytes]]) -> None:
        """Replace the states of the pieces ``(key, offset, bytes)`` (bytes of
        :meth:`save_state`); all are unpickled before any is installed.

        Raises
        ------
        MXNetError
            When some bytes are not a state saved by this class.
        """
        loaded = []
        for key, offset, blob in pieces:
            try:
                state, count = pickle.loads(blob)
            except Exception as e:  # noqa: BLE001  (reported with the key)
                raise MXNetError(
                    f"the saved optimizer state of key {key} is not one a server saved for a "
                    f"Python optimizer ({type(e).__name__}: {e})"
                ) from e
            loaded.append((key, offset, state, count))
        o = self.optimizer
        for key, offset, state, count in loaded:
            self._states[(key, offset)] = _to_context(state, _CPU)
            if count is None:
                self._counts.pop((key, offset), None)
            else:
                self._counts[(key, offset)] = count
                if isinstance(getattr(o, "num_update", None), int):
                    o.num_update = max(o.num_update, count)


_MISSING = object()
