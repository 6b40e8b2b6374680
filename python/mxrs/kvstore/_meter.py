"""A store's counters behind ``KVStore.stats()``, and its requests' spans on the timeline.

A :class:`Meter` counts the keys a store pushes and pulls, their bytes, and the time its caller
spent blocked waiting for the servers. A distributed store hands each request's ticket to
:meth:`Meter.request`, which counts it and returns a :class:`Metered` ticket in its place: the
same ``wait()``, ``ready`` and ``nbytes``, with the wait timed. With a timeline
(:mod:`mxrs.timeline`) a metered ticket also records a ``push`` / ``pull`` span for each of its
keys once it is seen complete.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import timeline

if TYPE_CHECKING:
    from ..ndarray.ndarray import NDArray

__all__ = ["Meter", "Metered", "array_bytes"]

#: A request's entries (tuples whose first item is the key) and the host arrays sent or
#: received for them, one per entry, in order
_Side = tuple[Sequence[tuple[Any, ...]], Sequence[np.ndarray]]


def array_bytes(a: NDArray) -> int:
    """int: the bytes of ``a``'s values (a row_sparse array's stored rows; dense size else)."""
    rows = getattr(a, "_sp_vals", None)
    if rows is not None:
        return int(rows.nbytes)
    return math.prod(a.shape) * np.dtype(a.dtype).itemsize


class Meter:
    """What a store has sent and received since it was created (see ``KVStore.stats()``)."""

    __slots__ = ("pushes", "pulls", "push_bytes", "pull_bytes", "wait_ns")

    def __init__(self) -> None:
        self.pushes = 0
        self.pulls = 0
        self.push_bytes = 0
        self.pull_bytes = 0
        self.wait_ns = 0

    def stats(self) -> dict[str, int | float]:
        """The counters as ``KVStore.stats()`` returns them."""
        return {
            "pushes": self.pushes,
            "pulls": self.pulls,
            "push_bytes": self.push_bytes,
            "pull_bytes": self.pull_bytes,
            "wait_seconds": self.wait_ns / 1e9,
        }

    def local(self, pushed: Sequence[NDArray] = (), pulled: Sequence[NDArray] = ()) -> None:
        """Count one key of a single-process store: the arrays pushed into it, or written by a
        pull of it (nothing is waited for)."""
        if pushed:
            self.pushes += 1
            self.push_bytes += sum(array_bytes(a) for a in pushed)
        if pulled:
            self.pulls += 1
            self.pull_bytes += sum(array_bytes(a) for a in pulled)

    def request(
        self,
        ticket: Any,
        pushed: Sequence[tuple[Any, ...]] = (),
        push_arrays: Sequence[np.ndarray] = (),
        pulled: Sequence[tuple[Any, ...]] = (),
        pull_arrays: Sequence[np.ndarray] = (),
    ) -> Metered:
        """Count a request just made and return its ticket, metered.

        ``pushed`` and ``pulled`` are its entries, tuples whose first item is the key (such
        as ``(key, values)`` pairs), ``push_arrays`` and ``pull_arrays`` the host arrays sent
        and received for them, one per entry, in order.
        """
        self.pushes += len(push_arrays)
        self.pulls += len(pull_arrays)
        for a in push_arrays:
            self.push_bytes += a.nbytes
        for a in pull_arrays:
            self.pull_bytes += a.nbytes
        sides = ((pushed, push_arrays), (pulled, pull_arrays)) if timeline.active else None
        return Metered(ticket, self, sides)


class Metered:
    """A request's ticket whose waits count in its :class:`Meter`; ``wait()``, ``ready`` and
    ``nbytes`` as the ticket's own."""

    __slots__ = ("_ticket", "_meter", "_sides", "_start", "nbytes")

    def __init__(self, ticket: Any, meter: Meter, sides: tuple[_Side, _Side] | None) -> None:
        self._ticket = ticket
        self._meter = meter
        self._sides = sides  # what the timeline records at completion, or None
        self._start = timeline.now() if sides is not None else 0
        self.nbytes: int = ticket.nbytes

    @property
    def ready(self) -> bool:
        """bool: whether :meth:`wait` would return at once."""
        return bool(self._ticket.ready)

    def wait(self) -> None:
        """Wait for the request (raising its error, if it failed), timing the wait."""
        began = timeline.now()
        try:
            self._ticket.wait()
        finally:
            ended = timeline.now()
            self._meter.wait_ns += ended - began
            if self._sides is not None:
                self._record(ended, ended - began)

    def _record(self, ended: int, waited_ns: int) -> None:
        """Put each key's push and pull span on the timeline (once)."""
        assert self._sides is not None  # called only while spans are pending
        sides, self._sides = self._sides, None
        wait_us = waited_ns // 1000
        for name, (pairs, arrays) in zip(("push", "pull"), sides, strict=True):
            for entry, a in zip(pairs, arrays, strict=True):
                args = {"key": entry[0], "bytes": int(a.nbytes), "wait_us": wait_us}
                timeline.record(name, "kvstore", self._start, ended, args, timeline.KV_TID)
