"""Arrays that a KVStore request is still reading or writing.

KVStore push and pull return at once; the array they read (a pushed gradient) or write (a pulled
weight) is *pending* until the request's ticket is done. A pending array's class is switched to
:class:`_PendingNDArray`, whose ``_data`` attribute waits for the ticket before handing out the
raw array, so every operation, ``asnumpy`` included, waits exactly when it touches the array and
ordinary arrays pay nothing. Settling restores the plain class.
"""

from .ndarray import NDArray

_DATA = NDArray.__dict__["_data"]  # the slot descriptor behind NDArray._data

# id(array) -> (array, [(ticket, finalize or None), ...]); the array is held so its id stays unique.
_PENDING = {}


def _settle(arr):
    """Wait for every request on ``arr``, run their finalizers and make it a plain NDArray."""
    entry = _PENDING.pop(id(arr), None)
    arr.__class__ = NDArray
    if entry is None:
        return
    reqs = entry[1]
    if len(reqs) == 1 and reqs[0][1] is None:  # the common case: one request, nothing to copy
        reqs[0][0].wait()
        return
    first_error = None
    for ticket, finalize in entry[1]:
        try:
            ticket.wait()
            if finalize is not None:
                finalize(_DATA.__get__(arr))
        except Exception as e:  # noqa: BLE001  (every request must be waited for; raise the first)
            if first_error is None:
                first_error = e
    if first_error is not None:
        raise first_error


class _PendingNDArray(NDArray):
    """An NDArray with outstanding KVStore requests; touching its data waits for them."""

    __slots__ = ()

    @property
    def _data(self):
        _settle(self)
        return _DATA.__get__(self)

    @_data.setter
    def _data(self, value):
        _settle(self)
        _DATA.__set__(self, value)


def mark(arr, ticket, finalize=None):
    """Make ``arr`` wait for ``ticket`` (then call ``finalize(raw_data)``) before its data is used.

    Parameters
    ----------
    arr : NDArray
        The array the request reads or writes.
    ticket : object with ``wait()``
        The request; waiting on it again after it is done must return at once.
    finalize : callable or None
        Runs with the array's raw data once the ticket is done (e.g. copies a host buffer to a GPU).
    """
    entry = _PENDING.get(id(arr))
    if entry is None:
        _PENDING[id(arr)] = (arr, [(ticket, finalize)])
        arr.__class__ = _PendingNDArray
    else:
        entry[1].append((ticket, finalize))


def mark_all(arrs, ticket):
    """:func:`mark` each of ``arrs`` with ``ticket`` and no finalizer."""
    pending = _PENDING
    req = (ticket, None)
    for arr in arrs:
        entry = pending.get(id(arr))
        if entry is None:
            pending[id(arr)] = (arr, [req])
            arr.__class__ = _PendingNDArray
        else:
            entry[1].append(req)


def is_pending(arr):
    """bool: whether ``arr`` has requests not yet waited for."""
    return id(arr) in _PENDING


def settle_all():
    """Wait for every pending request of this process; raises the first error met.

    Each ticket is waited for once however many arrays it covers (a round of a thousand keys
    is one or two tickets), then every array is made plain and its finalizers run.
    """
    first_error = None
    while _PENDING:
        entries = list(_PENDING.values())
        _PENDING.clear()
        outcome = {}  # id(ticket) -> None or the error its wait raised
        for arr, reqs in entries:
            arr.__class__ = NDArray
            for ticket, finalize in reqs:
                key = id(ticket)  # the ticket is alive in ``entries`` while this runs
                if key not in outcome:
                    try:
                        ticket.wait()
                        outcome[key] = None
                    except Exception as e:  # noqa: BLE001  (wait for all; raise the first)
                        outcome[key] = e
                error = outcome[key]
                if error is None and finalize is not None:
                    try:
                        finalize(_DATA.__get__(arr))
                    except Exception as e:  # noqa: BLE001
                        error = e
                if error is not None and first_error is None:
                    first_error = error
    if first_error is not None:
        raise first_error
