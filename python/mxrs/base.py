"""Error hierarchy shared by every part of mxrs.

All errors mxrs raises on purpose derive from :class:`MXNetError`, a :class:`RuntimeError` as in
MXNet, so code written for MXNet 1.x that catches ``mx.base.MXNetError`` or ``RuntimeError`` keeps
working. The subclasses name the failure more precisely; the parameter-server bindings map each of
their error kinds to one of them. Also MXNet's small helpers of ``mx.base``: ``py_str`` and
``data_dir``.
"""

import os

__all__ = [
    "data_dir",
    "py_str",
    "MXNetError",
    "ContextError",
    "KVStoreError",
    "ShapeMismatchError",
    "NodeLostError",
    "AuthenticationError",
    "KernelError",
    "KernelUnsupportedError",
    "InvalidUsageError",
    "InvalidShapeError",
]


class MXNetError(RuntimeError):
    """Base class of every error raised by mxrs.

    A :class:`RuntimeError`, as in MXNet 1.x, so code that catches ``RuntimeError`` sees it.
    """


class ContextError(MXNetError):
    """Arrays of different contexts were mixed, or a context's device is unavailable."""


class KVStoreError(MXNetError):
    """A key-value store operation failed (unknown key, bad request, server error)."""


class ShapeMismatchError(KVStoreError):
    """A push or init whose shape or dtype differs from what the key holds."""


class NodeLostError(KVStoreError):
    """A worker, server or the scheduler stopped answering within the heartbeat timeout."""


class AuthenticationError(KVStoreError):
    """A connection could not prove it belongs to the job (wrong or missing secret)."""


class KernelError(MXNetError):
    """A compute kernel library (oneDNN) failed, or could not serve an operator's shape."""


class KernelUnsupportedError(KernelError):
    """The kernel library has no implementation for these shapes and attributes; mxrs then
    computes the operator with its NumPy kernels."""


class InvalidUsageError(MXNetError, AssertionError):
    """A call that the object's configuration rules out (for example ``Trainer.update`` when the
    store applies the optimizer). MXNet 1.x raises ``AssertionError`` for these, so this is one
    too."""


class InvalidShapeError(MXNetError, ValueError):
    """A shape an operation cannot take (for example a reshape to another size). MXNet 1.x
    raises ``ValueError`` for these, so this is one too."""


def py_str(x: bytes | str) -> str:
    """``x`` as text: bytes are decoded as UTF-8 (as MXNet's helper of the same name does)."""
    return x.decode("utf-8") if isinstance(x, bytes | bytearray) else str(x)


def data_dir() -> str:
    """Where mxrs keeps datasets and fetched files: ``$MXRS_HOME``, default ``~/.mxrs`` (as
    MXNet's ``data_dir`` reads ``$MXNET_HOME``, default ``~/.mxnet``)."""
    return os.path.expanduser(os.environ.get("MXRS_HOME") or os.path.join("~", ".mxrs"))
