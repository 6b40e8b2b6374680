"""Arrays that a KVStore request is still reading or writing, and how its errors reach the user.

KVStore push and pull return at once; the arrays they read (a pushed gradient) or write (a
pulled weight) are *pending* until the request is done. A pending array's class is switched to
:class:`_PendingNDArray`, whose ``_data`` attribute waits for its requests before handing out
the raw array, so every operation, ``asnumpy`` included, waits exactly when it touches the array
and ordinary arrays pay nothing.

Requests are kept in the order they were made. :func:`check` (every KVStore call begins with
it) lets go of the arrays of requests that have completed, so a job that pushes fresh arrays
and never reads them holds only those still in flight; and :func:`track` waits for the oldest
requests while more than :data:`MAX_INFLIGHT_BYTES` are in flight, so a program that makes
requests faster than the servers answer them is slowed down instead of filling its memory.
A request that failed is never silent: its error is raised by the first of the next KVStore
call, :func:`settle_all` (``nd.waitall``), or a read of an array it touched; an array it was to
write raises at its first read even when the error was already reported elsewhere (its data was
never written). Errors still unreported
when the process exits are printed and make it exit with status 1 (see :mod:`.dist`).
Operators' errors of computation have failed arrays of their own, by the same device of a
switched class (:mod:`._failed`, :mod:`mxrs._failure`); ``nd.waitall`` consults both.
"""

from __future__ import annotations

import collections
import os
import weakref
from collections.abc import Sequence
from typing import Any

from .core.array import ArrayCore
from .ndarray import NDArray

_DATA = ArrayCore.__dict__["_data"]  # the slot descriptor behind NDArray._data

#: Most failed requests kept for reporting; further failures are only counted.
MAX_UNREPORTED = 64
#: Bytes of requests in flight (pushed values, pulled values) beyond which the oldest ones are
#: waited for before a new one is tracked (``MXRS_WORKER_INFLIGHT_BYTES``; a larger single
#: request still goes, alone).
MAX_INFLIGHT_BYTES = int(os.environ.get("MXRS_WORKER_INFLIGHT_BYTES") or 256 << 20)
#: In-flight requests after which the whole queue, not only its head, is swept for done ones.
_SCAN_FROM = 256


class _Request:
    """One KVStore request: its ticket, the arrays it covers, and how it ended."""

    __slots__ = ("ticket", "arrays", "nbytes", "done", "error", "reported")

    ticket: Any
    arrays: Sequence[NDArray]
    nbytes: int
    done: bool
    error: Exception | None
    reported: bool

    def __init__(self, ticket, nbytes):
        self.ticket = ticket
        self.arrays = ()  # every array it reads or writes
        self.nbytes = nbytes
        self.done = False
        self.error = None
        self.reported = False

    def ready(self):
        """bool: whether the request is done (finishing it if so); never blocks."""
        if not self.done and self.ticket.ready:
            self.finish()
        return self.done

    def finish(self):
        """Wait for the ticket (once) and record how it ended; returns the error or None."""
        if not self.done:
            try:
                self.ticket.wait()
            except Exception as e:  # noqa: BLE001  (kept, and raised where the user looks)
                self.error = e
                _unreported(self)
            self.done = True
            self.ticket = None
        return self.error


_INFLIGHT: collections.deque[_Request] = collections.deque()  # in the order they were made
# id(array) -> (array, [(request, finalize or None, writes), ...]) in request order; the array is
# held so its id stays unique.
_PENDING: dict[int, tuple[NDArray, list[tuple[_Request, Any, bool]]]] = {}
# id(array) -> (weakref to array, request): arrays a failed request was to write, not read since.
_FAILED: dict[int, tuple[weakref.ref[NDArray], _Request]] = {}
# failed requests whose error has not reached the user, oldest first
_UNREPORTED: list[_Request] = []
_more_failures = 0  # failures beyond MAX_UNREPORTED
_scan_at = _SCAN_FROM
_inflight_bytes = 0  # of the requests in _INFLIGHT


def _unreported(req):
    global _more_failures
    if len(_UNREPORTED) < MAX_UNREPORTED:
        _UNREPORTED.append(req)
    else:
        _more_failures += 1


def _reported(req):
    """Mark ``req``'s error as seen by the user; returns a fresh copy of it to raise."""
    if not req.reported:
        req.reported = True
        try:
            _UNREPORTED.remove(req)
        except ValueError:
            pass
    return _fresh(req.error)


def _fresh(error, more=0):
    """A new exception like ``error`` (so each raise has a traceback of its own)."""
    args = error.args
    if more and args and isinstance(args[0], str):
        args = (f"{args[0]} (and {more} more KVStore request(s) failed)", *args[1:])
    try:
        return type(error)(*args)
    except Exception:  # noqa: BLE001  (an exception type that cannot be rebuilt: raise it as is)
        return error


def _poison(arr, req):
    """``arr`` was to be written by failed ``req``: its first read raises ``req``'s error."""
    key = id(arr)

    def forget(_: object) -> None:
        _FAILED.pop(key, None)

    _FAILED[key] = (weakref.ref(arr, forget), req)


def _advance(arr, entry):
    """Finish the requests at the front of ``arr``'s list that are done, in order; returns the
    error met, if any. Makes ``arr`` plain once nothing is left (and it is not poisoned)."""
    reqs = entry[1]
    error = None
    while reqs and reqs[0][0].done:
        req, finalize, writes = reqs.pop(0)
        if req.error is None:
            if writes:
                _FAILED.pop(id(arr), None)  # written again: the earlier failure no longer shows
            if finalize is not None:
                try:
                    finalize(_DATA.__get__(arr))
                except Exception as e:  # noqa: BLE001  (a failed copy is a failed request)
                    req.error = e
                    _unreported(req)
                    _poison(arr, req)
                    error = error or req
        else:
            if writes:
                _poison(arr, req)
            error = error or req
    if not reqs:
        del _PENDING[id(arr)]
        if id(arr) not in _FAILED:
            arr.__class__ = NDArray
    return error


def _release(req):
    """Let go of the arrays of done request ``req`` (taken out of the queue)."""
    global _inflight_bytes
    _inflight_bytes -= req.nbytes
    req.nbytes = 0
    for arr in req.arrays:
        entry = _PENDING.get(id(arr))
        if entry is not None and entry[0] is arr:
            _advance(arr, entry)
    req.arrays = ()


def _settle(arr, overwrite=False):
    """Wait for every request on ``arr`` and make it plain; raise what the user must see.

    Raises the error of a failed request that was to write ``arr`` (once: its first read), or
    of one that read it and was not reported yet. With ``overwrite`` (its data is being
    replaced) only waits.
    """
    entry = _PENDING.get(id(arr))
    error = None
    if entry is not None:
        for req, _, _ in entry[1]:
            req.finish()
        error = _advance(arr, entry)
    failed = _FAILED.pop(id(arr), None)
    arr.__class__ = NDArray
    if overwrite:
        return
    if failed is not None:
        raise _reported(failed[1])
    if error is not None and not error.reported:
        raise _reported(error)


class _PendingNDArray(NDArray):
    """An NDArray with outstanding KVStore requests; touching its data waits for them."""

    __slots__ = ()

    @property
    def _data(self):
        _settle(self)
        return _DATA.__get__(self)

    @_data.setter
    def _data(self, value):
        _settle(self, overwrite=True)
        _DATA.__set__(self, value)


def track(ticket, reads=(), writes=()):
    """Make arrays wait for ``ticket`` before their data is used.

    First, while more than :data:`MAX_INFLIGHT_BYTES` of earlier requests and this one are in
    flight, waits for the oldest (the request itself is already on its way).

    Parameters
    ----------
    ticket : object with ``wait()``, ``ready`` and ``nbytes``
        The request. ``ready`` says, without blocking, whether ``wait()`` would return at once;
        waiting again after it is done must give the same outcome. ``nbytes`` is what it moves.
    reads : iterable of NDArray
        Arrays the request reads (pushed values): they must not change until it is done.
    writes : iterable of (NDArray, callable or None)
        Arrays the request writes, each with a finalizer run with its raw data once the ticket
        is done (e.g. copying a host buffer to a GPU), or None when the request writes it in
        place.
    """
    global _inflight_bytes
    nbytes = ticket.nbytes
    q = _INFLIGHT
    while q and _inflight_bytes + nbytes > MAX_INFLIGHT_BYTES:
        old = q.popleft()
        old.finish()
        _release(old)
    req = _Request(ticket, nbytes)
    # One shared entry for every array read, and one for every array written in place.
    read, in_place = (req, None, False), (req, None, True)
    arrays = list(reads)
    for arr in arrays:
        _add(arr, read)
    for arr, finalize in writes:
        _add(arr, in_place if finalize is None else (req, finalize, True))
        arrays.append(arr)
    req.arrays = arrays
    _inflight_bytes += nbytes
    q.append(req)


def _add(arr, entry):
    """Append ``entry`` to ``arr``'s requests, making it pending if it was not."""
    known = _PENDING.get(id(arr))
    if known is None:
        _PENDING[id(arr)] = (arr, [entry])
        arr.__class__ = _PendingNDArray
    else:
        known[1].append(entry)


def sweep():
    """Let go of the arrays of every request that has completed (never blocks)."""
    global _scan_at
    q = _INFLIGHT
    while q and q[0].ready():
        _release(q.popleft())
    if len(q) >= _scan_at:  # something old is slow: look behind it too, now and then
        waiting: collections.deque[_Request] = collections.deque()
        for req in q:
            if req.ready():
                _release(req)
            else:
                waiting.append(req)
        q.clear()
        q.extend(waiting)
        _scan_at = max(_SCAN_FROM, 2 * len(q))


def raise_unreported():
    """Raise the oldest failure nobody has seen yet (noting how many more there were)."""
    global _more_failures
    if not _UNREPORTED:
        return
    first, more = _UNREPORTED[0], len(_UNREPORTED) - 1 + _more_failures
    for req in _UNREPORTED:
        req.reported = True
    _UNREPORTED.clear()
    _more_failures = 0
    raise _fresh(first.error, more)


def check():
    """What every KVStore call does first: sweep, then raise a failure not yet reported."""
    sweep()
    raise_unreported()


def settle_all():
    """Wait for every request of this process; raises the oldest failure not yet reported.

    Each ticket is waited for once however many arrays it covers (a round of a thousand keys is
    one or two tickets), in the order the requests were made.
    """
    while _INFLIGHT:
        req = _INFLIGHT.popleft()
        req.finish()
        _release(req)
    raise_unreported()


def unreported():
    """list of str: the messages of failures nobody has seen, marking them seen (for exit)."""
    global _more_failures
    out = [f"{type(r.error).__name__}: {r.error}" for r in _UNREPORTED]
    if _more_failures:
        out.append(f"... and {_more_failures} more failed KVStore request(s)")
    for req in _UNREPORTED:
        req.reported = True
    _UNREPORTED.clear()
    _more_failures = 0
    return out


def is_pending(arr):
    """bool: whether ``arr`` has requests not yet let go of, or a failure not yet read."""
    return id(arr) in _PENDING or id(arr) in _FAILED
