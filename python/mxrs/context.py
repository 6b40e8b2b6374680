"""Device contexts: where an array lives and where its operations run.

``cpu(i)`` contexts hold NumPy arrays, ``gpu(i)`` contexts hold CuPy arrays on CUDA device ``i``.
CuPy is imported only when a GPU context is first used for data, so mxrs imports and runs on
machines without CuPy or a GPU. ``cpu(0)`` and ``cpu(1)`` are distinct contexts: arrays on them
cannot be mixed in one operation, which lets multi-device code be tested without GPUs.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, ClassVar, Literal

from ._backend import backend_for
from .base import MXNetError

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "gpu_memory_info"]


class _DefaultStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Context] = []
        # the thread's context outside any ``with`` block (``Context.default_ctx = ...``)
        self.base: Context | None = None


_default = _DefaultStack()

_DEFAULT_CTX_DEPRECATED = (
    "Context.default_ctx is deprecated, as in MXNet: read the context with "
    "mx.current_context(), and set one with `with ctx:` or test_utils.set_default_context"
)


class _ContextType(type):
    """Gives the Context class MXNet's (deprecated) ``Context.default_ctx``, read and set."""

    @property
    def default_ctx(cls) -> Context:
        """The current context, as :func:`current_context` gives it (deprecated in MXNet)."""
        warnings.warn(_DEFAULT_CTX_DEPRECATED, DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: Context) -> None:
        warnings.warn(_DEFAULT_CTX_DEPRECATED, DeprecationWarning, stacklevel=2)
        _default.base = Context(ctx)


class Context(metaclass=_ContextType):
    """A device on which arrays are stored and computed.

    Parameters
    ----------
    device_type : {'cpu', 'gpu', 'cpu_pinned', 'cpu_shared'} or Context
        The kind of device, or a context to copy.
    device_id : int, default 0
        The index of the device among those of its kind.

    Examples
    --------
    >>> ctx = Context('gpu', 1)
    >>> ctx
    gpu(1)
    >>> with mx.cpu(1):
    ...     a = mx.nd.zeros((2, 3))   # created on cpu(1)
    """

    __slots__ = ("device_typeid", "device_id", "_backend")

    device_typeid: int
    device_id: int
    _backend: Any  # the backend object, made on first use

    devtype2str: ClassVar[dict[int, str]] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict[str, int]] = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    def __init__(self, device_type: str | Context, device_id: int = 0) -> None:
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            try:
                self.device_typeid = Context.devstr2type[device_type]
            except KeyError:
                raise MXNetError(
                    f"unknown device type {device_type!r}; expected one of "
                    f"{sorted(Context.devstr2type)}"
                ) from None
            self.device_id = int(device_id)
        self._backend = None

    @property
    def device_type(self) -> str:
        """str: ``'cpu'``, ``'gpu'``, ``'cpu_pinned'`` or ``'cpu_shared'``."""
        return Context.devtype2str[self.device_typeid]

    def __hash__(self) -> int:
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Context)
            and self.device_typeid == other.device_typeid
            and self.device_id == other.device_id
        )

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"{Context.devtype2str[self.device_typeid]}({self.device_id})"

    __str__ = __repr__

    def __enter__(self) -> Context:
        _default.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _default.stack.pop()
        return False

    def empty_cache(self) -> None:
        """Release cached device memory back to the driver (a no-op on CPU)."""
        if self.device_typeid == 2:
            self.backend.empty_cache(self.device_id)

    @property
    def backend(self) -> Any:
        """The array-library backend (NumPy or CuPy) that runs operations on this context.

        Raises
        ------
        MXNetError
            For a GPU context when CuPy is not installed or the device does not exist.
        """
        be = self._backend
        if be is None:
            be = self._backend = backend_for(self)
        return be


def cpu(device_id: int = 0) -> Context:
    """Return the CPU context ``cpu(device_id)``.

    Parameters
    ----------
    device_id : int, default 0
        Distinct ids name distinct contexts, all backed by host memory.
    """
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Return the pinned-host-memory context (host memory; kept for API compatibility)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    """Return the GPU context ``gpu(device_id)``.

    Creating the context always works; creating arrays on it needs CuPy and a CUDA device.
    """
    return Context("gpu", device_id)


def current_context() -> Context:
    """Return the context of the innermost ``with ctx:`` block; outside any, the thread's
    default: ``cpu(0)`` unless ``Context.default_ctx`` was set."""
    stack = _default.stack
    if stack:
        return stack[-1]
    return _default.base if _default.base is not None else Context("cpu", 0)


def num_gpus() -> int:
    """Return the number of CUDA GPUs visible through CuPy, or 0 without CuPy or a driver."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no driver, no device: CuPy raises its own runtime errors
        return 0


def gpu_memory_info(device_id: int = 0) -> tuple[int, int]:
    """Return ``(free, total)`` bytes of GPU ``device_id``."""
    return gpu(device_id).backend.memory_info(device_id)
