"""Reducing gradients while backward runs: a Trainer's side of overlapping communication.

A Trainer with a distributed store arms each trained Parameter's arrays after a step: autograd
calls the array's hook the moment backward has stored that array's final gradient (see
:mod:`mxrs.autograd`). Once every context's array of a Parameter has reported, the Parameter is
ready; ready Parameters gather in a bucket, which is sent as one push-and-pull as soon as it holds
``bucket_bytes`` (0: every Parameter alone). ``step`` then sends what is left (the bucket's last
Parameters, and any Parameter whose gradient backward did not produce or that accumulates with
``grad_req='add'``) and only waits for what is still in flight.

The numbers are those of sending everything at ``step``: each key is pushed once per step
either way. A gradient written twice before one step (two backward passes through a Parameter
with ``grad_req='write'``) cannot be taken back once sent, so it is an error; so is changing a
gradient between backward and step, which the sent value would not show: a sent gradient
refuses in-place writes until the step. Programs that do
either train with overlap off (``Trainer(..., overlap=False)`` or ``MXRS_OVERLAP=0``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..base import MXNetError
from .parameter import Parameter

#: Bytes of gradients gathered before one push-and-pull (``MXRS_BUCKET_BYTES``).
DEFAULT_BUCKET_BYTES = 4 << 20


def overlap_from_env() -> bool:
    """bool: the default of ``Trainer(overlap=None)``: on unless ``MXRS_OVERLAP`` says off."""
    value = os.environ.get("MXRS_OVERLAP", "1").strip().lower()
    if value in ("1", "true", "on", "yes", ""):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise MXNetError(f"MXRS_OVERLAP must be 1 or 0 (on or off), got {value!r}")


def bucket_bytes_from_env() -> int:
    """int: ``MXRS_BUCKET_BYTES``, the bucket size (bytes; 0 sends each Parameter alone)."""
    raw = os.environ.get("MXRS_BUCKET_BYTES")
    if raw is None or not raw.strip():
        return DEFAULT_BUCKET_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise MXNetError(f"MXRS_BUCKET_BYTES must be a whole number of bytes >= 0, got {raw!r}")
    return value


class GradientStream:
    """Sends a Trainer's Parameters to its store as their gradients become final.

    Parameters
    ----------
    owner : object
        The Trainer: a Parameter whose current trainer is another one is left alone.
    send : callable
        ``send(indices)`` pushes (and pulls) the Parameters of those indices.
    bucket_bytes : int
        Gradient bytes gathered before a send.
    """

    def __init__(self, owner: Any, send: Callable[[list[int]], None], bucket_bytes: int) -> None:
        self._owner = owner
        self._send = send
        self._bucket_bytes = bucket_bytes
        self._arrays: dict[int, tuple[int, int, Parameter, Any]] = {}
        self._contexts = 0
        self._ready: dict[int, set[int]] = {}
        self._sent: set[int] = set()
        self._bucket: list[int] = []
        self._bucket_size = 0
        self._guarded: list[Any] = []

    def arm(self, params: Sequence[tuple[int, Parameter]], contexts: int) -> None:
        """Hook the arrays of ``params`` (index, Parameter) that backward overwrites."""
        self.disarm()
        self._contexts = contexts
        for i, p in params:
            if p.grad_req != "write" or not p._is_initialized():
                continue
            for pos, arr in enumerate(p.list_data()):
                arr._on_grad = self._on_grad
                self._arrays[id(arr)] = (i, pos, p, arr)

    def disarm(self) -> None:
        """Unhook every array; later backward passes send nothing early."""
        self._unguard()
        for _, _, _, arr in self._arrays.values():
            if getattr(arr, "_on_grad", None) == self._on_grad:
                del arr._on_grad
        self._arrays.clear()

    def _on_grad(self, arr: Any) -> None:
        slot = self._arrays.get(id(arr))
        if slot is None or slot[3] is not arr:
            return
        i, pos, param, _ = slot
        if param._trainer is not self._owner:
            return
        if i in self._sent:
            raise MXNetError(
                f"Trainer: backward wrote the gradient of Parameter '{param.name}' again after "
                "it was sent; with overlap on, a gradient is sent as soon as backward stores it, "
                "so each Parameter may go through backward once per step (train with "
                "Trainer(..., overlap=False) or MXRS_OVERLAP=0 for more)"
            )
        ready = self._ready.setdefault(i, set())
        ready.add(pos)
        if len(ready) < self._contexts:
            return
        del self._ready[i]
        self._bucket.append(i)
        self._bucket_size += arr._data.nbytes
        if self._bucket_size >= self._bucket_bytes:
            self.flush()

    def flush(self) -> None:
        """Send the bucket now."""
        if self._bucket:
            bucket, self._bucket, self._bucket_size = self._bucket, [], 0
            self._sent.update(bucket)
            self._send(bucket)
            self._guard(bucket)

    def _guard(self, indices: list[int]) -> None:
        """Refuse writes into the gradients just sent until the step: what was sent would not
        show them (``gluon.utils.clip_global_norm`` between backward and step, say)."""
        params = {i: p for i, _, p, _ in self._arrays.values()}
        for i in indices:
            param = params.get(i)
            if param is None or param._grad is None:
                continue
            reason = (
                f"Trainer: the gradient of Parameter '{param.name}' was already sent to the "
                "KVStore when this in-place write came; with overlap on, gradients are sent as "
                "soon as backward stores them, so a program that changes them between backward "
                "and step (clip_global_norm...) trains with Trainer(..., overlap=False) or "
                "MXRS_OVERLAP=0"
            )
            for g in param.list_grad():
                g._guard = reason
                self._guarded.append(g)

    def _unguard(self) -> None:
        for g in self._guarded:
            if getattr(g, "_guard", None) is not None:
                del g._guard
        self._guarded.clear()

    def sent(self) -> set[int]:
        """set of int: the Parameters sent since the last :meth:`next_step`."""
        return self._sent

    def next_step(self) -> None:
        """Start a new step: nothing is ready or sent (or guarded)."""
        self._unguard()
        self._ready.clear()
        self._sent = set()
        self._bucket, self._bucket_size = [], 0
