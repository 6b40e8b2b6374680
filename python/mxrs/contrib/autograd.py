"""``mx.contrib.autograd``: MXNet's first autograd API, kept for old code.

It is a thin layer over :mod:`mxrs.autograd`: one flag, "training", both records operations and
runs them in training mode (:func:`set_is_training`, :func:`train_section`,
:func:`test_section`); :func:`mark_variables` and :func:`backward` take lists; :func:`grad` and
:func:`grad_and_loss` turn a function of NDArrays into one returning its gradients.

Examples
--------
>>> x = mx.nd.array([1.0, 2.0])
>>> mx.contrib.autograd.grad(lambda x: x * x)(x)[0].asnumpy()
array([2., 4.], dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

from .. import autograd as _ag
from ..base import MXNetError
from ..ndarray import NDArray, zeros_like

__all__ = [
    "set_is_training",
    "TrainingStateScope",
    "train_section",
    "test_section",
    "mark_variables",
    "backward",
    "compute_gradient",
    "grad_and_loss",
    "grad",
]


def set_is_training(is_train: bool) -> bool:
    """Switch training mode and recording on or off together.

    Parameters
    ----------
    is_train : bool

    Returns
    -------
    bool
        Whether recording was on before.
    """
    _ag.set_training(bool(is_train))
    return _ag.set_recording(bool(is_train))


class TrainingStateScope:
    """A ``with`` scope that sets the training state (see :func:`set_is_training`) and
    restores it on exit.

    Parameters
    ----------
    enter_state : bool
        The state inside the scope.
    """

    def __init__(self, enter_state: bool) -> None:
        self._enter_state = bool(enter_state)
        self._prev: tuple[bool, bool] | None = None

    def __enter__(self) -> TrainingStateScope:
        self._prev = (_ag.is_recording(), _ag.is_training())
        set_is_training(self._enter_state)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        assert self._prev is not None  # set by __enter__
        _ag.set_recording(self._prev[0])
        _ag.set_training(self._prev[1])
        return False


def train_section() -> TrainingStateScope:
    """Return a scope that records operations and runs them in training mode.

    Examples
    --------
    >>> with train_section():
    ...     y = model(x)
    ...     backward([y])
    """
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Return a scope that neither records nor runs in training mode, e.g. for evaluation
    inside a :func:`train_section`."""
    return TrainingStateScope(False)


def _arrays(what: str, xs: Any, allow_none: bool = False) -> list[Any]:
    if not isinstance(xs, (list, tuple)):
        raise MXNetError(f"contrib.autograd: {what} must be a list or tuple of NDArrays")
    for x in xs:
        if not (isinstance(x, NDArray) or (allow_none and x is None)):
            raise MXNetError(f"contrib.autograd: {what} must hold NDArrays, not {type(x).__name__}")
    return list(xs)


def mark_variables(
    variables: Sequence[NDArray],
    gradients: Sequence[NDArray],
    grad_reqs: str | Sequence[str] = "write",
) -> None:
    """Mark arrays as variables whose gradients go into the given buffers.

    Parameters
    ----------
    variables : list of NDArray
    gradients : list of NDArray
        One buffer per variable, of its shape.
    grad_reqs : str or list of str, default 'write'
        'write', 'add' or 'null', for all variables or one each.

    Raises
    ------
    MXNetError
        When the lists differ in length or hold something other than NDArrays.
    """
    variables = _arrays("variables", variables)
    gradients = _arrays("gradients", gradients)
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError(
            f"contrib.autograd.mark_variables: {len(variables)} variables, "
            f"{len(gradients)} gradients and {len(reqs)} grad_reqs: the lengths must agree"
        )
    _ag.mark_variables(variables, gradients, reqs)


def backward(
    outputs: Sequence[NDArray],
    out_grads: Sequence[NDArray | None] | None = None,
    retain_graph: bool = False,
) -> None:
    """Compute the gradients of ``outputs`` with respect to the marked variables.

    Parameters
    ----------
    outputs : list of NDArray
    out_grads : list of NDArray or None, optional
        The gradient flowing into each output (None: ones); ones for all when omitted.
    retain_graph : bool, default False
        Keep the graph so it can be differentiated again.

    Raises
    ------
    MXNetError
        When ``outputs`` is not a list, ``out_grads`` has another length, or the graph is gone.
    """
    outputs = _arrays("outputs", outputs)
    if out_grads is not None:
        out_grads = _arrays("out_grads", out_grads, allow_none=True)
        if len(out_grads) != len(outputs):
            raise MXNetError(
                f"contrib.autograd.backward: {len(outputs)} outputs but {len(out_grads)} "
                "out_grads: outputs and out_grads must have the same length"
            )
    _ag.backward(outputs, out_grads, retain_graph=retain_graph)


def compute_gradient(outputs: Sequence[NDArray]) -> None:
    """Deprecated name of :func:`backward` (without output gradients)."""
    backward(outputs)


def grad_and_loss(
    func: Callable[..., Any], argnum: int | Sequence[int] | None = None
) -> Callable[..., tuple[list[NDArray], Any]]:
    """Turn ``func`` into a function returning the gradients of its arguments and its value.

    Parameters
    ----------
    func : callable
        A function of NDArrays returning an NDArray or a list of them (summed gradients).
    argnum : int or list of int, optional
        The positions of the arguments to differentiate; all of them by default.

    Returns
    -------
    callable
        ``f(*args) -> (gradients, outputs)``, one gradient per chosen argument.
    """

    @functools.wraps(func)
    def wrapped(*args: Any) -> tuple[list[NDArray], Any]:
        if argnum is None:
            chosen = list(range(len(args)))
        else:
            chosen = [argnum] if isinstance(argnum, int) else list(argnum)
        for i in chosen:
            if not isinstance(i, int) or not -len(args) <= i < len(args):
                raise MXNetError(
                    f"contrib.autograd.grad_and_loss: argnum {i!r} is not the position of one "
                    f"of the {len(args)} arguments"
                )
        variables = [args[i] for i in chosen]
        for i, x in zip(chosen, variables, strict=True):
            if not isinstance(x, NDArray):
                raise MXNetError(
                    f"contrib.autograd.grad_and_loss: argument {i} must be an NDArray, "
                    f"not {type(x).__name__}"
                )
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        backward([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(
    func: Callable[..., Any], argnum: int | Sequence[int] | None = None
) -> Callable[..., list[NDArray]]:
    """Turn ``func`` into a function returning the gradients of its arguments.

    Parameters
    ----------
    func : callable
        A function of NDArrays returning an NDArray or a list of them.
    argnum : int or list of int, optional
        The positions of the arguments to differentiate; all of them by default.

    Returns
    -------
    callable
        ``f(*args) -> gradients``, one per chosen argument.

    Examples
    --------
    >>> grad(lambda x: x ** 2)(mx.nd.array([1.0, 3.0]))[0].asnumpy()
    array([2., 6.], dtype=float32)
    """
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args: Any) -> list[NDArray]:
        return with_loss(*args)[0]

    return wrapped
