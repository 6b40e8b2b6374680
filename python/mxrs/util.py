"""Switches and helpers of MXNet 1.9.1's ``mx.util``: the NumPy shape semantics flag, the
NumPy-interface decorators, and the process environment.

NumPy shape semantics is a per-thread flag, off by default, that ``set_np_shape``,
``np_shape`` and ``use_np_shape`` turn on and ``is_np_shape`` reports. In MXNet it lets the
legacy arrays have scalar (``()``) and zero-size (``(2, 0)``) shapes, which MXNet otherwise
reads as "unknown". mxrs's arrays sit on NumPy and always accept those shapes, so the flag
changes no array operation: it is kept and reported so that code which sets, tests or scopes
it behaves as it does on MXNet.

The NumPy-compatible interface (``mx.np``, ``mx.npx``) is not supported yet. ``use_np`` and
``use_np_array`` still decorate functions and classes, so that modules using them import, but
a function they decorate raises ``MXNetError`` when it is called, and ``set_np`` refuses to turn
NumPy array semantics on.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from .base import MXNetError

__all__ = [
    "getenv",
    "is_np_array",
    "is_np_shape",
    "np_shape",
    "reset_np",
    "set_np",
    "set_np_shape",
    "setenv",
    "use_np",
    "use_np_array",
    "use_np_shape",
]

_T = TypeVar("_T")

_NP_UNSUPPORTED = (
    "the NumPy-compatible interface (mx.np, mx.npx) is not supported yet by mxrs: "
    "{} is decorated with {}, which needs it"
)


class _ThreadFlags(threading.local):
    """Per-thread semantics switches (each thread starts with both off)."""

    np_shape: bool = False


_FLAGS = _ThreadFlags()


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on or off for the calling thread.

    Parameters
    ----------
    active : bool
        Whether scalar (``()``) and zero-size shapes follow NumPy's meaning.

    Returns
    -------
    bool
        The state before the call.

    Notes
    -----
    mxrs's arrays accept scalar and zero-size shapes whether the flag is on or not; see the
    module docstring for what the flag does here.
    """
    prev = _FLAGS.np_shape
    _FLAGS.np_shape = bool(active)
    return prev


def is_np_shape() -> bool:
    """Whether NumPy shape semantics is on in the calling thread.

    Returns
    -------
    bool
        The flag that ``set_np_shape``, ``np_shape`` and ``use_np_shape`` set.
    """
    return _FLAGS.np_shape


class _NpShapeScope:
    """Sets the NumPy shape flag on entry and puts the previous value back on exit."""

    def __init__(self, active: bool | None) -> None:
        self._active = active
        self._prev: bool | None = None

    def __enter__(self) -> _NpShapeScope:
        if self._active is not None:
            self._prev = set_np_shape(self._active)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._active is not None and self._prev is not None:
            set_np_shape(self._prev)


def np_shape(active: bool = True) -> _NpShapeScope:
    """A ``with`` scope in which NumPy shape semantics is ``active``.

    Parameters
    ----------
    active : bool, default True
        The flag inside the scope; ``None`` leaves it unchanged.

    Returns
    -------
    context manager
        Restores the previous flag when the scope ends.

    Examples
    --------
    >>> import mxrs as mx
    >>> with mx.np_shape(True):
    ...     mx.is_np_shape()
    True
    """
    return _NpShapeScope(active)


def _wrap_class(cls: type, wrap: Callable[[Any], Any]) -> None:
    """Apply ``wrap`` to every function, method and property getter of ``cls`` in place."""

    def _is_member(obj: object) -> bool:
        return inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, property)

    for name, member in inspect.getmembers(cls, predicate=_is_member):
        if isinstance(member, property):
            getter = wrap(member.fget) if member.fget is not None else None
            setattr(cls, name, property(getter, member.fset, member.fdel, member.__doc__))
        else:
            setattr(cls, name, wrap(member))


def use_np_shape(func: _T) -> _T:
    """Decorate a function or class to run with NumPy shape semantics on.

    Parameters
    ----------
    func : callable or class
        A function runs inside ``np_shape(True)``; for a class, each of its methods, static
        functions and property getters does.

    Returns
    -------
    callable or class
        The wrapped function, or the class itself with its members wrapped.

    Raises
    ------
    TypeError
        If ``func`` is neither a class nor callable.
    """
    if inspect.isclass(func):
        _wrap_class(func, use_np_shape)
        return func
    if not callable(func):
        raise TypeError(f"use_np_shape decorates classes and callables, not {type(func)}")

    @functools.wraps(func)
    def _with_np_shape(*args: Any, **kwargs: Any) -> Any:
        with np_shape(True):
            return func(*args, **kwargs)

    return _with_np_shape  # type: ignore[return-value]


def is_np_array() -> bool:
    """Whether NumPy array semantics (``mx.np`` arrays in Gluon) is on.

    Returns
    -------
    bool
        Always False: mxrs does not support the NumPy-compatible interface yet.
    """
    return False


def _np_unsupported(func: _T, decorator: str) -> _T:
    """Wrap ``func`` (or the members of a class) to raise ``MXNetError`` when called."""
    if inspect.isclass(func):
        _wrap_class(func, lambda member: _np_unsupported(member, decorator))
        return func
    if not callable(func):
        raise TypeError(f"{decorator} decorates classes and callables, not {type(func)}")
    name = getattr(func, "__qualname__", repr(func))

    @functools.wraps(func)
    def _needs_np(*args: Any, **kwargs: Any) -> Any:
        raise MXNetError(_NP_UNSUPPORTED.format(name, decorator))

    return _needs_np  # type: ignore[return-value]


def use_np_array(func: _T) -> _T:
    """Decorate a function or class that needs NumPy array semantics (``mx.np`` arrays).

    mxrs does not support the NumPy-compatible interface yet: decorating works, so modules that
    use the decorator import, but calling the decorated function (or a member of the decorated
    class) raises ``MXNetError``.

    Parameters
    ----------
    func : callable or class
        What to decorate.

    Returns
    -------
    callable or class
        A function that raises ``MXNetError``, or the class with such members.

    Raises
    ------
    TypeError
        If ``func`` is neither a class nor callable.
    """
    return _np_unsupported(func, "use_np_array")


def use_np(func: _T) -> _T:
    """Decorate a function or class that needs NumPy shape and array semantics.

    As with ``use_np_array``, decorating works but calling the result raises ``MXNetError``:
    mxrs does not support ``mx.np`` yet.

    Parameters
    ----------
    func : callable or class
        What to decorate.

    Returns
    -------
    callable or class
        A function that raises ``MXNetError``, or the class with such members.

    Raises
    ------
    TypeError
        If ``func`` is neither a class nor callable.
    """
    return _np_unsupported(func, "use_np")


def set_np(shape: bool = True, array: bool = True) -> None:
    """Set NumPy shape and array semantics together.

    Parameters
    ----------
    shape : bool, default True
        NumPy shape semantics, as ``set_np_shape`` sets it.
    array : bool, default True
        NumPy array semantics; only False is accepted, since mxrs has no ``mx.np``.

    Raises
    ------
    ValueError
        If ``array`` is on while ``shape`` is off (MXNet's rule).
    MXNetError
        If ``array`` is True.
    """
    if array and not shape:
        raise ValueError("NumPy array semantics needs NumPy shape semantics")
    if array:
        raise MXNetError(
            "NumPy array semantics (set_np(array=True)) needs the NumPy-compatible interface "
            "(mx.np), which mxrs does not support yet"
        )
    set_np_shape(shape)


def reset_np() -> None:
    """Turn NumPy shape and array semantics off."""
    set_np(shape=False, array=False)


def getenv(name: str) -> str | None:
    """Read an environment variable of this process.

    Parameters
    ----------
    name : str
        The variable.

    Returns
    -------
    str or None
        Its value, or None if it is not set.
    """
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set (or, with ``None``, remove) an environment variable of this process.

    Parameters
    ----------
    name : str
        The variable.
    value : str or None
        The new value; None unsets the variable.
    """
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
