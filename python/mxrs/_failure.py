"""Failed computations: an operator's error kept on its outputs until the program waits for them.

MXNet 1.9.1 runs operators asynchronously, so an error an operator meets while computing (as
opposed to the checks of its arguments, made at the call) is raised at the next wait on what it
computed: ``wait_to_read``, ``asnumpy``, ``nd.waitall()``. mxrs computes at the call; an
operator's computation signals such an error by raising :class:`ComputeError`, and the
dispatchers (``ndarray.core.op.apply``, in-place writes, the samplers, executors, the autograd
pass) do not let it reach the caller: they make the operator's outputs *failed* arrays instead.

- A failed array has its shape, dtype and context; reading its data raises the error.
- An operator reading a failed array does not raise: its outputs fail with the same
  :class:`Failure` (one per failed computation, shared by every array it reached, as MXNet
  shares one exception among them). So do an array it writes into and an array written into a
  failed one.
- The error is raised once: by the first read of any array holding it, or by ``nd.waitall()``
  (:func:`raise_unreported`), which raises the oldest error not reported yet and lets go of the
  others (its message counts them). After that the arrays read as zeros and nothing raises it
  again, as in MXNet.
- An error nobody saw by the time the process exits is printed to stderr, and the process exits
  with status 1 (MXNet would exit 0 and say nothing; here a failure is never silent).

Dispatchers catch :class:`ComputeError` around their work, which costs nothing while nothing
fails. Reading a failed array raises a copy of its error whose ``failure`` is set (marking it
reported); a dispatcher that catches one gives the failure back (:meth:`Failure.rearm`) and runs
its work again while failed arrays read as their placeholder data (:func:`propagate`), which
makes outputs of the right shapes and dtypes to fail. The arrays' side (the class a failed array
gets) is installed by ``mxrs.ndarray`` (:func:`install`); this module sits below autograd and the
array classes.
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .base import MXNetError

__all__ = [
    "ComputeError",
    "Failure",
    "caught",
    "collecting",
    "fail",
    "install",
    "propagate",
    "raise_unreported",
    "unreported",
]


class ComputeError(MXNetError):
    """An error an operator meets while computing its outputs, raised at the next wait on them.

    Raise it (or a subclass) from an operator's computation, never for a bad argument: the
    dispatcher running the operator makes its outputs failed arrays instead of raising it. An
    operator run by :func:`~mxrs.ndarray.core.op.apply` passes ``result``, the raw output(s)
    its ``forward`` would have returned (their values do not matter; zeros), so that the
    failed outputs have the right shapes and dtypes; without it the error is raised at once.

    Attributes
    ----------
    failure : Failure or None
        Set on the copy a read of a failed array raises: the failure it reports.
    result : raw array, tuple of raw arrays, or None
        Placeholder output(s), as given.
    """

    failure: Failure | None = None

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class Failure:
    """One failed computation: its error, shared by every array it reached.

    ``reported`` is True once the error was raised to the program (by a read or by
    ``waitall``); the arrays holding it then read as their placeholder data.
    """

    __slots__ = ("error", "reported", "listed")

    error: ComputeError
    reported: bool
    listed: bool  # whether it is in the list of failures not yet reported

    def __init__(self, error: ComputeError) -> None:
        error.result = None  # the placeholders are the failed arrays' data now
        error.__traceback__ = error.__context__ = error.__cause__ = None  # hold no frames
        self.error = error
        self.reported = False
        self.listed = False
        _unseen(self)

    @classmethod
    def of_new(cls, error: ComputeError) -> Failure:
        """The failure of ``error``, just raised by a computation; ``error`` itself is raised
        again when the computation ran on failed arrays' placeholders (see :func:`propagate`):
        it is then their doing, not an error of the program."""
        if _mode.collecting:
            raise error
        return cls(error)

    def surface(self) -> ComputeError:
        """Mark the error reported; return a fresh copy of it to raise (``failure`` set)."""
        self.reported = True
        err = _fresh(self.error)
        err.failure = self
        return err

    def rearm(self) -> None:
        """Take back :meth:`surface`: the copy was caught by a dispatcher, not the program."""
        self.reported = False
        if not self.listed:
            _unseen(self)


def _fresh(error: ComputeError, note: str = "") -> ComputeError:
    """A new exception like ``error`` (each raise has a traceback of its own)."""
    args = error.args
    if note and args and isinstance(args[0], str):
        args = (args[0] + note, *args[1:])
    try:
        return type(error)(*args)
    except Exception:  # noqa: BLE001  (a subclass taking other arguments: a plain ComputeError)
        return ComputeError(*args[:1])


class _Mode(threading.local):
    collecting = False  # rerunning a dispatcher's work: failed arrays read as their placeholders


_mode = _Mode()

# Failures since the last waitall, oldest first: every one not reported yet is here (reported
# ones are dropped now and then).
_LIST: list[Failure] = []
_prune_at = 64


def _unseen(f: Failure) -> None:
    global _prune_at
    if len(_LIST) >= _prune_at:
        keep = [g for g in _LIST if not g.reported]
        for g in _LIST:
            g.listed = not g.reported
        _LIST[:] = keep
        _prune_at = max(64, 2 * len(keep))
    _LIST.append(f)
    f.listed = True


def collecting() -> bool:
    """bool: whether a dispatcher is rerunning its work (failed arrays read as placeholders)."""
    return _mode.collecting


#: ``mark(array, failure) -> bool``: make ``array`` a failed array holding ``failure``; False
#: for an array that cannot be one (sparse, or with KVStore requests in flight). Installed by
#: ``mxrs.ndarray``.
_mark: Callable[[Any, Failure], bool] | None = None


def install(mark: Callable[[Any, Failure], bool]) -> None:
    """Set how an array becomes a failed one (``mxrs.ndarray`` does, at import)."""
    global _mark
    _mark = mark


def fail(arrays: Iterable[Any], failure: Failure) -> None:
    """Make ``arrays`` failed arrays holding ``failure``, and the recorded operations that made
    them fail their gradients (see :func:`_fail_node`).

    Raises
    ------
    ComputeError
        The failure's error, at once, when one of them cannot hold it.
    """
    assert _mark is not None, "mxrs.ndarray installs the failed arrays"
    for a in arrays:
        if not _mark(a, failure):
            raise failure.surface()
        node = a._node
        if node is not None:
            _fail_node(node, failure)


def _fail_node(node: Any, failure: Failure) -> None:
    """Make recorded operation ``node`` raise ``failure`` when a backward pass reaches it (and
    give no gradient once it was reported): its saved state is that of placeholders."""

    def backward(*out_grads: Any) -> tuple[None, ...]:
        if not failure.reported:
            raise failure.surface()
        return (None,) * len(node.inputs)

    node.backward = backward
    node.backward_graph = backward  # what a create_graph pass calls first


def caught(err: ComputeError) -> Failure:
    """The failure a dispatcher that caught ``err`` gives its outputs, when it knows their
    shapes without running its work again: the one a failed array's read reported (taken back),
    or a new one for an error the computation raised (see :meth:`Failure.of_new`)."""
    f = err.failure
    if f is None:
        return Failure.of_new(err)
    f.rearm()
    return f


def propagate(
    err: ComputeError, rerun: Callable[[], Any], into: Iterable[Any] | None = None
) -> Any:
    """Handle ``err``, caught by a dispatcher: fail the outputs of its work with that failure.

    Parameters
    ----------
    err : ComputeError
        Raised by a read of a failed array (``err.failure`` set); any other is raised again.
    rerun : callable
        The dispatcher's work, run again while failed arrays read as their placeholders; what
        it returns (an array, or a list or tuple of arrays) fails.
    into : iterable of arrays, optional
        The arrays that fail instead (those an in-place write wrote).

    Returns
    -------
    What ``rerun`` returned.

    Raises
    ------
    ComputeError
        ``err`` when it is no failed array's.
    Exception
        What the work raises on the placeholders (an argument error, as MXNet raises it at the
        call); the failure stays to be reported.
    """
    f = err.failure
    if f is None or _mode.collecting:
        raise err
    f.rearm()
    _mode.collecting = True
    try:
        out = rerun()
    finally:
        _mode.collecting = False
    if into is None:
        into = out if isinstance(out, list | tuple) else (out,)
    fail(into, f)
    return out


def raise_unreported() -> None:
    """What ``nd.waitall()`` does: raise the oldest error not reported yet (noting how many
    more there were), and mark every failure reported, as MXNet's waitall clears them all."""
    first = None
    more = 0
    for f in _LIST:
        if not f.reported:
            if first is None:
                first = f
            else:
                more += 1
            f.reported = True
        f.listed = False
    _LIST.clear()
    if first is not None:
        raise _fresh(first.error, f" (and {more} more computation(s) failed)" if more else "")


def unreported() -> list[str]:
    """list of str: the errors nobody has seen, marking them reported (for the exit report)."""
    out = []
    for f in _LIST:
        if not f.reported:
            out.append(f"{type(f.error).__name__}: {f.error}")
            f.reported = True
        f.listed = False
    _LIST.clear()
    return out


def _report_at_exit() -> None:
    """At exit: print the errors nobody saw and make the process exit with status 1."""
    lost = unreported()
    if not lost:
        return
    print("mxrs: computations failed and the program never read their errors:", file=sys.stderr)
    for line in lost:
        print(f"  {line}", file=sys.stderr)
    sys.stderr.flush()
    from . import _native

    _native.exit_with_status(1)


atexit.register(_report_at_exit)
